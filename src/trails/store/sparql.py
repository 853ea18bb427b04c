"""The remote store: any SPARQL 1.1 server, over HTTP.

One embedded store is one process's. When several processes or machines
record into one place, they write through a SPARQL server instead
(``TRAILS_STORE=http://host:7878``). This module implements the ``Store``
contract over the SPARQL 1.1 Protocol (query, update) and the Graph Store
HTTP Protocol, with one pooled httpx client per store.

How the contract maps onto the wire:

- ``write`` is one SPARQL Update request, so one transaction on servers that
  run a request atomically (Oxigraph does; see docs/remote-store.md for
  others). Additions alone are an ``INSERT DATA``; additions with removals are
  a single ``DELETE {...} INSERT {...} WHERE {}`` operation, so even servers
  that commit each operation of a request separately apply it whole. Every
  quad is written inside an explicit ``GRAPH`` block: servers disagree on what
  the default graph is, so trails never relies on it.
- ``query`` sends the query (POST ``application/sparql-query``, or an HTML
  form for servers that want one, or when the dataset is long) with
  ``default-graph-uri`` / ``named-graph-uri`` for a restricted dataset.
  ``union_default_graph`` is Oxigraph server's ``union-default-graph``
  parameter; on other servers it lists every graph as a ``default-graph-uri``
  (correct, but one extra query and a long request). ``auto`` picks by the
  server's ``Server`` header. SELECT and ASK come back as
  SPARQL JSON, CONSTRUCT and DESCRIBE as N-Triples. Parameters are bound in
  the text by ``trails.store._sparql_bind``, from validated terms only.
- ``dump`` / ``load`` use the Graph Store HTTP Protocol (``GET`` / ``POST``
  on the store URL); without one, a query and an ``INSERT DATA`` do the same.
- Connection failures and 502/503/504 are retried with exponential backoff;
  a 4xx never is. Every failure becomes a trails error: a 400 on a query is a
  ``QuerySyntaxError`` with the server's message, a 400 on a load an
  ``RDFSyntaxError``, anything else a ``RemoteStoreError`` carrying the HTTP
  status and what the server said.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit, urlunsplit

import httpx
import pyoxigraph as ox

from trails.config import Settings
from trails.errors import (
    ConfigError,
    QueryError,
    QueryParameterError,
    QuerySyntaxError,
    RDFSyntaxError,
    RemoteStoreError,
    StoreError,
)
from trails.store._sparql_bind import bind_params, quad_ntriples, query_form, term_n3
from trails.store.base import (
    DATASET_FORMATS,
    DEFAULT_BASE_IRI,
    RESULT_FORMATS,
    QueryResult,
    ResultBuffer,
    Solutions,
    Store,
)
from trails.store.terms import IRI, XSD, BNode, Literal, Quad, Term, Triple, check_term
from trails.text import check_text

__all__ = ["NO_GRAPH", "RDF_MEDIA_TYPES", "RESULT_MEDIA_TYPES", "SERVER_GRAPHS", "SparqlStore"]

RESULT_MEDIA_TYPES = {
    "json": "application/sparql-results+json",
    "xml": "application/sparql-results+xml",
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
}
RDF_MEDIA_TYPES = {
    "trig": "application/trig",
    "nquads": "application/n-quads",
    "turtle": "text/turtle",
    "ntriples": "application/n-triples",
    "rdfxml": "application/rdf+xml",
    "jsonld": "application/ld+json",
}
_OX_FORMATS = {
    "trig": ox.RdfFormat.TRIG,
    "nquads": ox.RdfFormat.N_QUADS,
    "turtle": ox.RdfFormat.TURTLE,
    "ntriples": ox.RdfFormat.N_TRIPLES,
    "rdfxml": ox.RdfFormat.RDF_XML,
    "jsonld": ox.RdfFormat.JSON_LD,
}
#: graphs a server keeps of its own, by the start of its ``Server`` header (lower-cased):
#: a fresh Virtuoso 7 holds its quad-map metadata, the LDP vocabulary and a service
#: description. More are named by ``server_graphs`` (``[store]``/``TRAILS_STORE_SERVER_GRAPHS``).
SERVER_GRAPHS: dict[str, tuple[str, ...]] = {
    "virtuoso": (
        "http://www.openlinksw.com/schemas/virtrdf#",
        "http://www.w3.org/ns/ldp#",
        "http://localuriqaserver/sparql",
    ),
}
# A graph trails never writes: names "no graph" where the protocol cannot say "none".
NO_GRAPH = IRI("urn:trails:store:no-graph")

_XSD_STRING = XSD + "string"
_RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_RETRY_STATUS = frozenset({502, 503, 504})
_TRANSIENT = (
    httpx.NetworkError,
    httpx.RemoteProtocolError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
)
_OWN_BASE = re.compile(r"\bBASE\s*<", re.IGNORECASE)
_POSITION = re.compile(r"(?:error at |line )(\d+)(?::(\d+))?")
_TRUE = frozenset({"1", "true", "yes", "on"})
_UNION_MODES = ("auto", "param", "list")
# A dataset longer than this goes in a form body, not the URL (servers limit URL length).
_LONG_DATASET = 64


def _safe(url: str) -> str:
    """``url`` without user:password, for messages."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _from_ox(term: Any) -> Term:
    if isinstance(term, ox.NamedNode):
        return IRI.trusted(term.value)
    if isinstance(term, ox.BlankNode):
        return BNode(term.value)
    if isinstance(term, ox.Literal):
        return Literal(term.value, term.datatype.value, term.language)
    raise StoreError(f"unsupported term in a server answer: {term!r}")


def _from_json(binding: Mapping[str, Any]) -> Term:
    kind, value = binding.get("type"), binding.get("value")
    if kind == "uri":
        return IRI.trusted(str(value))
    if kind in ("literal", "typed-literal"):
        language = binding.get("xml:lang") or binding.get("lang")
        if language:
            return Literal(str(value), _RDF_LANG_STRING, str(language))
        return Literal(str(value), str(binding.get("datatype", _XSD_STRING)))
    if kind == "bnode":
        return BNode(str(value))
    raise StoreError(f"unsupported term in SPARQL JSON results: {dict(binding)!r}")


def _graph_blocks(quads: Iterable[Quad], *, what: str) -> str:
    """``GRAPH <g> { ... }`` blocks for ``quads``, grouped by graph in first-seen order."""
    by_graph: dict[str, list[str]] = {}
    for quad in quads:
        graph = quad[3]
        if isinstance(graph, BNode | Literal) or not isinstance(graph, str):
            raise ValueError(f"{what}: the graph must be an IRI, not {graph!r}")
        if what == "remove" and (isinstance(quad[0], BNode) or isinstance(quad[2], BNode)):
            raise ValueError(
                "remove: a SPARQL server cannot address a stored blank node, "
                "so quads with blank nodes cannot be removed one by one"
            )
        by_graph.setdefault(graph, []).append(quad_ntriples(quad))
    return " ".join(
        f"GRAPH {term_n3(IRI.trusted(g))} {{ {' '.join(lines)} }}" for g, lines in by_graph.items()
    )


class SparqlStore(Store):
    """A ``Store`` over a SPARQL 1.1 server.

    Args:
        query_url: the SPARQL query endpoint.
        update_url: the SPARQL update endpoint; ``None`` makes the store read-only.
        gsp_url: the Graph Store HTTP Protocol endpoint; ``None`` moves ``dump`` /
            ``load`` onto queries and updates instead.
        auth: ``(user, password)`` for HTTP basic auth, or any ``httpx.Auth``.
        token: a bearer token (instead of ``auth``).
        timeout: seconds for each request (connect, read, write).
        retries: extra attempts after a connection error or a 502/503/504.
        backoff: seconds before the first retry, doubled for each further one.
        form_post: send queries and updates as HTML forms (servers that do not
            take ``application/sparql-query`` bodies, like Virtuoso 7).
        headers: extra headers for every request.
        union_default_graph: how ``union_default_graph=True`` reaches the server:
            ``param`` sends Oxigraph server's ``union-default-graph`` parameter,
            ``list`` lists every graph as a ``default-graph-uri`` (any server),
            ``auto`` uses ``param`` when the server says it is Oxigraph.
        base_iri: the base relative IRIs in queries resolve against: every query
            goes out with a ``BASE`` declaration of it, so the server never
            resolves one against its own address.
        server_graphs: graphs the server keeps of its own (besides those of
            ``SERVER_GRAPHS`` for its kind): ``own_graphs`` names them, so that
            verification does not call them foreign.

    Raises:
        ConfigError: both ``auth`` and ``token``, a URL that is not http(s), or
            an unknown ``union_default_graph`` mode.
    """

    def __init__(
        self,
        query_url: str,
        update_url: str | None = None,
        gsp_url: str | None = None,
        *,
        auth: tuple[str, str] | httpx.Auth | None = None,
        token: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.1,
        form_post: bool = False,
        headers: Mapping[str, str] | None = None,
        union_default_graph: str = "auto",
        base_iri: str = DEFAULT_BASE_IRI,
        server_graphs: Iterable[str] = (),
    ) -> None:
        try:
            self._base = f"BASE {term_n3(IRI(base_iri))}\n"
        except ValueError:
            raise ConfigError(f"base_iri must be an absolute IRI, not {base_iri!r}") from None
        self.base_iri = base_iri
        for url in (query_url, update_url, gsp_url):
            if url is not None and not url.startswith(("http://", "https://")):
                raise ConfigError(f"a SPARQL store URL must be http(s)://..., not {_safe(url)!r}")
        if auth is not None and token:
            raise ConfigError("give the SPARQL store basic auth or a bearer token, not both")
        if union_default_graph not in _UNION_MODES:
            raise ConfigError(
                f"union_default_graph must be one of {', '.join(_UNION_MODES)}, "
                f"not {union_default_graph!r}"
            )
        self.union_default_graph = union_default_graph
        self._server: str | None = None  # the query endpoint's Server header, once seen
        self.server_graphs = frozenset(_graph_list(list(server_graphs)))
        self.query_url = query_url
        self.update_url = update_url
        self.gsp_url = gsp_url
        self.retries = max(0, retries)
        self.backoff = backoff
        self.form_post = form_post
        all_headers = {"User-Agent": "trails-sparql-store"}
        all_headers.update(headers or {})
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        self._client: httpx.Client | None = httpx.Client(
            auth=auth,
            headers=all_headers,
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=16),
            follow_redirects=False,
        )

    @classmethod
    def from_settings(
        cls, url: str, settings: Settings, environ: Mapping[str, str] | None = None
    ) -> SparqlStore:
        """A store for ``TRAILS_STORE=http(s)://...``, with options from the environment or ``[store]``.

        ``url`` is the server's base (``<base>/query``, ``<base>/update`` and
        ``<base>/store``, Oxigraph server's layout) or its query endpoint
        (``.../query``: the others sit beside it; ``.../sparql``: one endpoint
        for queries and updates, no Graph Store protocol). Each can be set:
        ``TRAILS_STORE_QUERY_URL`` / ``query_url``, ``TRAILS_STORE_UPDATE_URL`` /
        ``update_url``, ``TRAILS_STORE_GSP_URL`` / ``gsp_url`` (``none`` to turn
        the protocol off, or the updates: a read-only store); auth by
        ``TRAILS_STORE_TOKEN`` / ``token`` (bearer) or ``TRAILS_STORE_USER`` +
        ``TRAILS_STORE_PASSWORD`` / ``user`` + ``password`` (basic); and
        ``TRAILS_STORE_TIMEOUT``, ``TRAILS_STORE_RETRIES``, ``TRAILS_STORE_FORM_POST``,
        ``TRAILS_STORE_UNION_DEFAULT_GRAPH`` / ``union_default_graph`` (``auto``,
        ``param`` or ``list``).

        Args:
            url: the ``TRAILS_STORE`` value.
            settings: resolved settings; their ``[store]`` table is read.
            environ: the environment (default ``os.environ``); it wins over the file.

        Returns:
            An open ``SparqlStore``.

        Raises:
            ConfigError: an option has a bad value.
        """
        env = os.environ if environ is None else environ
        table = settings.section("store")

        def option(key: str) -> str | None:
            var = "TRAILS_STORE_" + key.upper()
            if env.get(var):
                return env[var]
            value = table.get(key)
            return None if value is None else str(value)

        base = url.rstrip("/")
        head, _, last = base.rpartition("/")
        if last == "query":
            defaults = (base, f"{head}/update", f"{head}/store")
        elif last == "sparql":
            defaults = (base, base, "")
        else:
            defaults = (f"{base}/query", f"{base}/update", f"{base}/store")

        def endpoint(key: str, default: str) -> str | None:
            value = option(key)
            value = default if value is None else value
            return None if value.lower() in ("", "none") else value

        query_url = endpoint("query_url", defaults[0])
        if query_url is None:
            raise ConfigError("the SPARQL store needs a query URL (TRAILS_STORE_QUERY_URL)")
        user, password, token = option("user"), option("password"), option("token")
        if user and token:
            raise ConfigError("set TRAILS_STORE_USER/PASSWORD or TRAILS_STORE_TOKEN, not both")
        try:
            timeout = float(option("timeout") or 30.0)
            retries = int(option("retries") or 3)
        except ValueError as exc:
            raise ConfigError(f"bad SPARQL store timeout or retries: {exc}") from exc
        return cls(
            query_url,
            endpoint("update_url", defaults[1]),
            endpoint("gsp_url", defaults[2]),
            auth=(user, password or "") if user else None,
            token=token,
            timeout=timeout,
            retries=retries,
            form_post=(option("form_post") or "").lower() in _TRUE,
            union_default_graph=(option("union_default_graph") or "auto").lower(),
            base_iri=settings.base_iri,
            server_graphs=_graph_list(
                env.get("TRAILS_STORE_SERVER_GRAPHS") or table.get("server_graphs")
            ),
        )

    def __repr__(self) -> str:
        return f"SparqlStore({_safe(self.query_url)})"

    # -- HTTP ------------------------------------------------------------------

    @property
    def client(self) -> httpx.Client:
        """The pooled httpx client (raises ``StoreError`` once the store is closed)."""
        if self._client is None:
            raise StoreError(f"{self!r} is closed")
        return self._client

    def _send(
        self, what: str, method: str, url: str, *, kind: str = "", stream: bool = False, **kw: Any
    ) -> httpx.Response:
        """One request with retries; ``stream``: the body is left unread (the caller closes)."""
        client = self.client
        attempt = 0
        while True:
            try:
                response = client.send(client.build_request(method, url, **kw), stream=stream)
                if stream and response.status_code >= 400:
                    try:
                        response.read()
                    finally:
                        response.close()
            except _TRANSIENT as exc:
                if attempt >= self.retries:
                    raise RemoteStoreError(
                        f"{what} failed: cannot reach {_safe(url)} after {attempt + 1} "
                        f"attempt(s): {type(exc).__name__}: {exc}",
                        url=_safe(url),
                    ) from exc
            except httpx.HTTPError as exc:
                raise RemoteStoreError(
                    f"{what} failed on {_safe(url)}: {type(exc).__name__}: {exc}", url=_safe(url)
                ) from exc
            else:
                if response.status_code < 400:
                    if self._server is None and url == self.query_url:
                        self._server = response.headers.get("server", "")
                    return response
                if response.status_code not in _RETRY_STATUS or attempt >= self.retries:
                    raise self._error(what, url, response, kind)
            time.sleep(self.backoff * (2**attempt))
            attempt += 1

    def _error(self, what: str, url: str, response: httpx.Response, kind: str) -> Exception:
        status = response.status_code
        message = response.text.strip()[:2000] or response.reason_phrase
        where = f"HTTP {status} from {_safe(url)}"
        if status == 400 and kind in ("query", "based query"):
            if kind == "based query":  # the BASE line was added before the caller's text
                message = _unshifted(message)
            match = _POSITION.search(message)
            return QuerySyntaxError(
                f"{message} ({where})",
                source="query",
                line=int(match.group(1)) if match else None,
                column=int(match.group(2)) if match and match.group(2) else None,
            )
        if status == 400 and kind == "load":
            return RDFSyntaxError(f"cannot parse the data, nothing loaded: {message} ({where})")
        return RemoteStoreError(
            f"{what} failed: {where}: {message}",
            status=status,
            server_message=message,
            url=_safe(url),
        )

    def union_mode(self) -> str:
        """How a union default graph is asked for: ``param`` or ``list`` (``auto`` resolved).

        ``auto`` looks at the query endpoint's ``Server`` header (an ``ASK {}``
        when no answer has been seen yet): Oxigraph takes the parameter.
        """
        if self.union_default_graph != "auto":
            return self.union_default_graph
        return "param" if self.server().lower().startswith("oxigraph") else "list"

    def server(self) -> str:
        """The query endpoint's ``Server`` header (an ``ASK {}`` when no answer has been seen)."""
        if self._server is None:
            accept = {"Accept": RESULT_MEDIA_TYPES["json"]}
            if self.form_post:  # some servers never answer a direct POST body
                self._send(
                    "probe", "POST", self.query_url, kind="query", data={"query": "ASK {}"},
                    headers=accept,
                )  # fmt: skip
            else:
                self._send(
                    "probe", "POST", self.query_url, kind="query", content=b"ASK {}",
                    headers={"Content-Type": "application/sparql-query", **accept},
                )  # fmt: skip
        return self._server or ""

    def own_graphs(self) -> frozenset[str]:
        """The graphs the server keeps of its own, not trails': ``SERVER_GRAPHS`` for the
        server's kind (by its ``Server`` header) and those given as ``server_graphs``."""
        software = self.server().lower()
        fixed = {
            g for kind, graphs in SERVER_GRAPHS.items() if software.startswith(kind) for g in graphs
        }
        return frozenset(fixed) | self.server_graphs

    def _dataset(
        self,
        default_graph: Sequence[IRI] | None,
        named_graphs: Sequence[IRI] | None,
        union_default_graph: bool = False,
    ) -> list[tuple[str, str]]:
        """Protocol parameters giving the embedded store's dataset semantics."""
        if union_default_graph:
            if default_graph is not None or named_graphs is not None:
                raise StoreError(
                    "union_default_graph replaces the dataset: it cannot be combined with "
                    "default_graph or named_graphs"
                )
            if self.union_mode() == "param":
                return [("union-default-graph", "")]
            every = self.graphs()  # any server: the union, spelled out
            return self._dataset(every, every)
        if default_graph is None and named_graphs is None:
            return []
        if named_graphs is None:  # a chosen default graph, every named graph still visible
            named_graphs = self.graphs()
        pairs: list[tuple[str, str]] = [
            ("default-graph-uri", g) for g in (default_graph or [NO_GRAPH])
        ]
        pairs += [("named-graph-uri", g) for g in (named_graphs or [NO_GRAPH])]
        for _, graph in pairs:
            term_n3(IRI.trusted(graph))  # a graph name goes on the wire: validate it
        return pairs

    def _query(
        self,
        sparql: str,
        params: Mapping[str, Term] | None,
        accept: str,
        *,
        default_graph: Sequence[IRI] | None,
        named_graphs: Sequence[IRI] | None,
        union_default_graph: bool = False,
        stream: bool = False,
    ) -> httpx.Response:
        check_text(sparql, "the query text", QueryError)
        for name, term in (params or {}).items():
            check_term(term, f"query parameter {name!r}", QueryParameterError)
        # the base goes on a line of its own before the query; positions in syntax
        # errors are shifted back. A query with a BASE of its own is sent as it is
        # (servers such as Virtuoso take one BASE only).
        text = bind_params(sparql, params)
        based = _OWN_BASE.search(text) is None
        if based:
            text = self._base + text
        try:
            dataset = self._dataset(default_graph, named_graphs, union_default_graph)
        except ValueError as exc:
            raise StoreError(f"bad graph name in the query dataset: {exc}") from exc
        headers = {"Accept": accept}
        if self.form_post or len(dataset) > _LONG_DATASET:
            return self._send(
                "query", "POST", self.query_url, kind="based query" if based else "query",
                data={"query": text, **_multi(dataset)}, headers=headers, stream=stream,
            )  # fmt: skip
        headers["Content-Type"] = "application/sparql-query; charset=utf-8"
        return self._send(
            "query", "POST", self.query_url, kind="based query" if based else "query",
            params=dataset, content=text.encode("utf-8"), headers=headers, stream=stream,
        )  # fmt: skip

    def _update(self, what: str, text: str) -> None:
        if self.update_url is None:
            raise StoreError(f"{self!r} is read-only (no update URL): cannot {what}")
        body = text.encode("utf-8")
        if self.form_post:
            self._send(what, "POST", self.update_url, data={"update": text})
        else:
            headers = {"Content-Type": "application/sparql-update; charset=utf-8"}
            self._send(what, "POST", self.update_url, content=body, headers=headers)

    # -- writing ---------------------------------------------------------------

    def write(self, quads: Iterable[Quad], *, remove: Iterable[Quad] = ()) -> None:
        self.client  # noqa: B018 - a closed store fails before anything else
        try:
            added = _graph_blocks(quads, what="write")
            removed = _graph_blocks(remove, what="remove")
            if not removed:
                text = _insert(added) if added else ""
            else:
                text = f"DELETE {{ {removed} }} INSERT {{ {added} }} WHERE {{}}"
            text.encode("utf-8")
        except (ValueError, TypeError, AttributeError, IndexError) as exc:
            raise StoreError(f"invalid quad, nothing written: {exc}") from exc
        if text:
            self._update("write", text)

    # -- reading ---------------------------------------------------------------

    def query(
        self,
        sparql: str,
        params: Mapping[str, Term] | None = None,
        *,
        default_graph: Sequence[IRI] | None = None,
        named_graphs: Sequence[IRI] | None = None,
        union_default_graph: bool = False,
    ) -> QueryResult:
        form = query_form(sparql)
        triples = form in ("CONSTRUCT", "DESCRIBE")
        response = self._query(
            sparql,
            params,
            RDF_MEDIA_TYPES["ntriples"] if triples else RESULT_MEDIA_TYPES["json"],
            default_graph=default_graph,
            named_graphs=named_graphs,
            union_default_graph=union_default_graph,
        )
        if triples:
            return self._triples(response)
        try:
            data = response.json()
            if "boolean" in data:
                return bool(data["boolean"])
            names = [str(v) for v in data["head"]["vars"]]
            bindings = data["results"]["bindings"]
            if names == ["__ASK_RETVAL"] and form == "ASK":  # Virtuoso answers ASK as a table
                return bool(bindings) and str(bindings[0]["__ASK_RETVAL"]["value"]) not in ("0", "")
            rows = [tuple(_from_json(b[n]) if n in b else None for n in names) for b in bindings]
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise StoreError(
                f"{_safe(self.query_url)} sent unreadable SPARQL JSON results: {exc}"
            ) from exc
        return Solutions(names, rows)

    def _triples(self, response: httpx.Response) -> list[Triple]:
        try:
            parsed = ox.parse(response.content, format=ox.RdfFormat.N_TRIPLES)
            return [
                Triple(_from_ox(q.subject), _from_ox(q.predicate), _from_ox(q.object))  # type: ignore[arg-type]
                for q in parsed
            ]
        except SyntaxError as exc:
            raise StoreError(f"{_safe(self.query_url)} sent unreadable N-Triples: {exc}") from exc

    def query_to(
        self,
        sparql: str,
        params: Mapping[str, Term] | None = None,
        *,
        format: str = "json",
        default_graph: Sequence[IRI] | None = None,
        named_graphs: Sequence[IRI] | None = None,
        union_default_graph: bool = False,
        max_bytes: int | None = None,
    ) -> bytes:
        if query_form(sparql) in ("CONSTRUCT", "DESCRIBE"):
            name = "turtle" if format in RESULT_FORMATS else format
            if name not in RDF_MEDIA_TYPES:
                raise StoreError(
                    f"unknown RDF format {format!r}; use one of {', '.join(sorted(RDF_MEDIA_TYPES))}"
                )
            accept = RDF_MEDIA_TYPES[name]
        elif format in RESULT_MEDIA_TYPES:
            accept = RESULT_MEDIA_TYPES[format]
        else:
            raise StoreError(
                f"unknown results format {format!r}; use one of {', '.join(sorted(RESULT_FORMATS))}"
            )
        # with a limit, read the answer as the server streams it; closing the connection
        # at the limit stops the download (and a streaming server's evaluation)
        response = self._query(
            sparql,
            params,
            accept,
            default_graph=default_graph,
            named_graphs=named_graphs,
            union_default_graph=union_default_graph,
            stream=max_bytes is not None,
        )
        if max_bytes is None:
            return response.content
        buffer = ResultBuffer(max_bytes)
        try:
            for chunk in response.iter_bytes():
                buffer.write(chunk)
        except httpx.HTTPError as exc:
            raise RemoteStoreError(
                f"query failed on {_safe(self.query_url)} while reading the answer: "
                f"{type(exc).__name__}: {exc}",
                url=_safe(self.query_url),
            ) from exc
        finally:
            response.close()
        return buffer.getvalue()

    def graphs(self) -> list[IRI]:
        result = self.query("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
        assert isinstance(result, Solutions)
        return sorted(IRI.trusted(g) for (g,) in result.rows if isinstance(g, IRI))

    def clear(self, graph: IRI) -> None:
        try:
            name = term_n3(graph)
        except (ValueError, TypeError) as exc:
            raise StoreError(f"cannot clear {graph!r}: {exc}") from exc
        self._update("clear", f"DROP SILENT GRAPH {name}")

    # -- moving data -----------------------------------------------------------

    def dump(
        self,
        output: BinaryIO | Path | None = None,
        *,
        format: str = "trig",
        graph: IRI | None = None,
    ) -> bytes | None:
        self.client  # noqa: B018 - a closed store fails before anything else
        if format not in RDF_MEDIA_TYPES:
            raise StoreError(
                f"unknown RDF format {format!r}; use one of {', '.join(sorted(RDF_MEDIA_TYPES))}"
            )
        if graph is None and format not in DATASET_FORMATS:
            raise StoreError(f"{format} holds one graph: name it, or dump as trig / nquads")
        if graph is not None:
            try:
                term_n3(graph)
            except (ValueError, TypeError) as exc:
                raise StoreError(f"cannot dump {graph!r}: {exc}") from exc
        if self.gsp_url is not None:
            params = {"graph": str(graph)} if graph is not None else {}
            headers = {"Accept": RDF_MEDIA_TYPES[format]}
            data = self._send("dump", "GET", self.gsp_url, params=params, headers=headers).content
        else:
            data = self._dump_by_query(format, graph)
        if output is None:
            return data
        if isinstance(output, Path):
            output.write_bytes(data)
        else:
            output.write(data)
        return None

    def _dump_by_query(self, format: str, graph: IRI | None) -> bytes:
        if graph is not None:
            where = f"GRAPH {term_n3(graph)} {{ ?s ?p ?o }}"
            result = self.query(f"SELECT ?s ?p ?o WHERE {{ {where} }}")
        else:
            result = self.query("SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
        assert isinstance(result, Solutions)
        lines = "".join(
            " ".join(term_n3(t) for t in row if t is not None) + " .\n" for row in result.rows
        )
        source = ox.RdfFormat.N_QUADS if graph is None else ox.RdfFormat.N_TRIPLES
        if (graph is None and format == "nquads") or (graph is not None and format == "ntriples"):
            return lines.encode("utf-8")
        quads = ox.parse(lines.encode("utf-8"), format=source)
        return ox.serialize(quads, format=_OX_FORMATS[format]) or b""

    def load(
        self, data: bytes | BinaryIO | Path, *, format: str = "trig", graph: IRI | None = None
    ) -> None:
        self.client  # noqa: B018 - a closed store fails before anything else
        if format not in RDF_MEDIA_TYPES:
            raise StoreError(
                f"unknown RDF format {format!r}; use one of {', '.join(sorted(RDF_MEDIA_TYPES))}"
            )
        if graph is None and format not in DATASET_FORMATS:
            raise StoreError(f"{format} holds triples: say which graph to load them into")
        try:
            if isinstance(data, Path):
                body = data.read_bytes()
            else:
                body = data if isinstance(data, bytes) else data.read()
            if graph is not None:
                term_n3(graph)
        except OSError as exc:
            raise StoreError(f"cannot read the data to load: {exc}") from exc
        except (ValueError, TypeError) as exc:
            raise StoreError(f"cannot load into {graph!r}: {exc}") from exc
        if self.update_url is None and self.gsp_url is None:
            raise StoreError(f"{self!r} is read-only: cannot load")
        if self.gsp_url is not None and not (graph is not None and format in DATASET_FORMATS):
            params = {"graph": str(graph)} if graph is not None else {}
            headers = {"Content-Type": RDF_MEDIA_TYPES[format]}
            self._send("load", "POST", self.gsp_url, kind="load", params=params, content=body, headers=headers)  # fmt: skip
            return
        self._load_by_update(body, format, graph)

    def _load_by_update(self, body: bytes, format: str, graph: IRI | None) -> None:
        try:
            options: dict[str, Any] = {"format": _OX_FORMATS[format]}
            parsed = list(ox.parse(body, **options))
        except SyntaxError as exc:
            raise RDFSyntaxError(f"cannot parse {format}, nothing loaded: {exc}") from exc
        blocks: dict[str, list[str]] = {}
        for q in parsed:
            name = str(q.graph_name)
            if isinstance(q.graph_name, ox.DefaultGraph):
                name = f"<{graph}>" if graph is not None else ""
            blocks.setdefault(name, []).append(f"{q.subject} {q.predicate} {q.object} .")
        text = " ".join(
            f"GRAPH {g} {{ {' '.join(lines)} }}" if g else " ".join(lines)
            for g, lines in blocks.items()
        )
        if text:
            self._update("load", _insert(text))

    def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            client.close()


def _graph_list(value: object) -> list[str]:
    """``server_graphs`` as configured: a TOML list, or IRIs separated by spaces or commas."""
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).replace(",", " ").split()
    try:
        return [str(IRI(str(g))) for g in items]
    except ValueError as exc:
        raise ConfigError(f"server_graphs must list graph IRIs: {exc}") from None


def _unshifted(message: str) -> str:
    """A server's syntax error with its line numbers as in the caller's text (before ``BASE``)."""
    return _POSITION.sub(
        lambda m: m.group(0).replace(m.group(1), str(max(int(m.group(1)) - 1, 1)), 1), message
    )


def _multi(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in pairs:
        out.setdefault(key, []).append(value)
    return out


def _insert(blocks: str) -> str:
    """One operation adding ``blocks``: ``INSERT DATA``, or ``INSERT {...} WHERE {}`` for blank nodes.

    SPARQL 1.1 allows blank nodes in ``INSERT DATA``, but some servers (Virtuoso)
    refuse them there; as a template each label is still one new blank node.
    trails itself writes no blank nodes; imported data may hold them.
    """
    if "_:" in blocks:
        return f"INSERT {{ {blocks} }} WHERE {{}}"
    return f"INSERT DATA {{ {blocks} }}"
