"""Export and import: session graphs out in standard formats, and back in without loss.

An export is a selection of named graphs (``sessions``, ``since``/``until``
by session start, or ``all_graphs`` for the whole dataset, ledger and memory
included) written in one format:

- ``nquads`` and ``trig`` are streamed graph by graph (the store serialises
  each graph; trails adds the graph name), with a progress callback; they are
  the lossless formats: export -> import -> export gives the same quads;
- ``turtle`` holds one graph only; ``jsonld`` holds the dataset with its graphs,
  in expanded form: every IRI in full, every literal with its datatype and
  lexical form, so any JSON-LD 1.1 processor reads back the same quads;
- ``provn`` and ``provjson`` (one bundle per session) are for PROV tools that do
  not read RDF; they are for reading, not import. ``trails.audit.provn`` writes
  them from the quads, as the ``prov`` package reads PROV-O; a graph it does not
  map exactly goes through the ``prov`` package (one conversion per session).
  No prefix is named like the scheme of an IRI in the export (``agent`` becomes
  ``agent1`` next to ``agent:bob``), since the ``prov`` package would read
  ``agent:bob`` as a qualified name; an IRI whose scheme is one of its own
  prefixes (``prov:``, ``xsd:``) is refused with ``ExportError``.

Two rules from the ``[audit]`` configuration apply on the way out:

- **Redaction**: ``[[audit.redact]]`` tables name entity classes
  (``types = ["trails:Prompt"]``) and/or capabilities
  (``capabilities = ["send_email"]``: the inputs and outputs of their
  invocations and policy decisions) whose ``prov:value`` (in the session's
  content graph, exported with it) is dropped
  (``action = "drop"``) or replaced by ``sha256:<hex>`` (``action = "hash"``).
  A redacted entity carries ``trails:redaction``. Redacted graphs no longer
  match their seals, on purpose.
- **Assurance levels** (ADR-0013): a session whose ``trails:assuranceLevel`` is
  listed in ``[audit] no_cross_domain`` (default ``["L1"]``) may only be
  exported within its own ``trails:domain``: the exporter's domain
  (``--domain``, else ``[audit] domain``) must equal it. Otherwise the whole
  export is refused with ``ExportRefused`` naming the sessions.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from trails.audit.export_graphs import (
    ExportStats,
    Progress,
    _stream,
    with_prefixes,
)
from trails.audit.export_prov import export_prov
from trails.audit.files import write_file
from trails.audit.jsonld import jsonld_to_nquads
from trails.audit.querypack import get_query
from trails.config import Settings, load_settings
from trails.errors import ConfigError, ExportError, ExportRefused, RDFSyntaxError
from trails.prov.content import content_graph, is_content_graph
from trails.prov.iri import Minter
from trails.prov.token_trace import is_token_graph
from trails.prov.vocab import NAMESPACES
from trails.store import Literal, Solutions, Store, open_store
from trails.store.terms import IRI, Term

__all__ = [
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "ExportStats",
    "Redaction",
    "RedactionRule",
    "check_assurance",
    "export",
    "guess_format",
    "import_file",
    "select_graphs",
    "with_prefixes",
]

EXPORT_FORMATS = ("trig", "nquads", "turtle", "jsonld", "provn", "provjson")
IMPORT_FORMATS = ("trig", "nquads", "turtle", "ntriples", "jsonld")
_EXTENSIONS = {
    ".trig": "trig",
    ".nq": "nquads",
    ".nquads": "nquads",
    ".ttl": "turtle",
    ".turtle": "turtle",
    ".nt": "ntriples",
    ".jsonld": "jsonld",
    ".provn": "provn",
    ".json": "provjson",
    ".provjson": "provjson",
}


@dataclass(frozen=True)
class RedactionRule:
    """Entities whose value a rule hides: by class and/or by capability."""

    action: str
    types: tuple[IRI, ...] = ()
    capabilities: tuple[str, ...] = ()


@dataclass(frozen=True)
class Redaction:
    """The redaction rules of an export (empty: nothing is redacted)."""

    rules: tuple[RedactionRule, ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Redaction:
        """Read ``[[audit.redact]]`` tables.

        Args:
            settings: the settings (default: ``load_settings()``).

        Returns:
            The rules.

        Raises:
            ConfigError: a rule with an unknown action, class or shape.
        """
        settings = settings or load_settings()
        raw = settings.section("audit").get("redact", [])
        if isinstance(raw, dict):
            raw = [raw]
        if not isinstance(raw, list):
            raise ConfigError("[audit] redact must be a list of tables ([[audit.redact]])")
        rules = []
        for i, table in enumerate(raw):
            where = f"[[audit.redact]] #{i + 1}"
            if not isinstance(table, dict):
                raise ConfigError(f"{where} must be a table")
            action = table.get("action", "hash")
            if action not in ("drop", "hash"):
                raise ConfigError(f"{where}: action must be 'drop' or 'hash', not {action!r}")
            types = tuple(_expand(t, where) for t in table.get("types", []))
            caps = tuple(str(c) for c in table.get("capabilities", []))
            if not types and not caps:
                raise ConfigError(f"{where} names no types and no capabilities")
            rules.append(RedactionRule(action, types, caps))
        return cls(tuple(rules))

    def hidden(self, store: Store, graph: IRI) -> dict[IRI, str]:
        """The entities of ``graph`` whose value these rules hide, and how (drop / hash)."""
        content = content_graph(graph)
        targets = _redaction_targets(store, self, {graph, content})
        return {**targets.get(graph, {}), **targets.get(content, {})}


def _expand(name: Any, where: str) -> IRI:
    text = str(name)
    prefix, sep, local = text.partition(":")
    if sep and prefix in NAMESPACES and not local.startswith("//"):
        return IRI.trusted(NAMESPACES[prefix] + local)
    try:
        return IRI(text)
    except ValueError:
        raise ConfigError(
            f"{where}: {text!r} is not a class (write trails:Prompt or an IRI)"
        ) from None


_SESSION_META = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?level ?domain WHERE {
  GRAPH ?g { ?g a trails:Session . OPTIONAL { ?g trails:assuranceLevel ?level }
             OPTIONAL { ?g trails:domain ?domain } }
}
"""

_BY_TYPE = """
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT ?g ?e ?v $type WHERE { GRAPH ?s { ?e a $type } GRAPH ?g { ?e prov:value ?v } }
"""

_BY_CAPABILITY = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?e ?v $capability WHERE {
  GRAPH ?s {
    { ?a prov:qualifiedAssociation/prov:hadPlan/trails:capabilityId $capability }
    UNION { ?a a trails:PolicyDecision ; trails:capabilityId $capability }
    { ?a prov:used ?e } UNION { ?e prov:wasGeneratedBy ?a }
  }
  GRAPH ?g { ?e prov:value ?v }
}
"""

_GRAPH_EXISTS = "ASK { GRAPH $g { ?s ?p ?o } }"

_REGISTER = "graph:open-sessions"
"""How the register of the sessions a running recorder has open ends (``<base>graph:...``,
``trails.evidence.recovery``): left out of ``--all``, as imported into another store it
would have that store's recovery end sessions it never held."""


def select_graphs(
    store: Store,
    *,
    sessions: Sequence[str] = (),
    all_graphs: bool = False,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
) -> list[IRI]:
    """The named graphs an export covers.

    Args:
        store: the store.
        sessions: session IRIs (each must name a graph in the store).
        all_graphs: every named graph (sessions, ledger, memory ...) but the register of
            open sessions (bookkeeping of a running recorder, not evidence).
        since: sessions started at or after this time.
        until: sessions started before this time.

    Returns:
        Graph IRIs, sorted, without duplicates.

    Raises:
        ExportError: nothing selected, or a named session is not in the store.
    """
    chosen = [bool(sessions), all_graphs, since is not None or until is not None]
    if sum(chosen) != 1:
        raise ExportError("choose what to export: --session IRI ..., --all, or --since/--until")
    if all_graphs:  # the register of open sessions is live state, not evidence
        # nor is a token trace (ADR-0018: never exported cross-boundary)
        graphs = {g for g in store.graphs() if not g.endswith(_REGISTER) and not is_token_graph(g)}
    elif sessions:
        graphs = set()
        for s in sessions:
            try:
                iri = IRI(s)
            except ValueError:
                raise ExportError(f"{s!r} is not a session IRI") from None
            if not store.query(_GRAPH_EXISTS, {"g": iri}):
                raise ExportError(f"no session graph {s} in this store")
            graphs.add(iri)
    else:
        result = get_query("sessions").run(store, since=since, until=until)
        assert isinstance(result, Solutions)
        graphs = {IRI.trusted(str(r["session"])) for r in result}
    if not graphs:
        raise ExportError("the selection is empty: no graph to export")
    if not all_graphs:  # each graph's content travels with it (its content graph, if any)
        contents = (content_graph(g) for g in list(graphs))
        graphs |= {c for c in contents if store.query(_GRAPH_EXISTS, {"g": c})}
    return sorted(graphs)


def check_assurance(
    store: Store, graphs: Iterable[IRI], *, domain: str | None, forbidden: Iterable[str]
) -> None:
    """Refuse sessions whose assurance level forbids export outside their domain.

    Args:
        store: the store.
        graphs: the graphs about to be exported.
        domain: the exporter's domain (None: unknown, so outside every domain).
        forbidden: assurance levels that may not leave their domain.

    Raises:
        ExportRefused: at least one session may not be exported to ``domain``.
    """
    levels = set(forbidden)
    if not levels:
        return
    wanted = set(graphs)
    refused = []
    for row in _rows_in(store, _SESSION_META, {}, wanted):
        g = IRI.trusted(str(row["g"]))
        level = row.get("level")
        if g not in wanted or not isinstance(level, Literal) or level.value not in levels:
            continue
        own = row.get("domain")
        own_domain = own.value if isinstance(own, Literal) else None
        if own_domain is None or own_domain != domain:
            refused.append(f"{g} (assurance {level.value}, domain {own_domain or 'unset'})")
    if refused:
        where = f"domain {domain!r}" if domain else "no domain (set --domain or [audit] domain)"
        raise ExportRefused(
            f"export refused: assurance level forbids cross-domain export (ADR-0013) of "
            f"{len(refused)} session(s) to {where}: {'; '.join(sorted(refused))}. "
            f"Export them from within their own domain, or leave them out."
        )


_PER_GRAPH = 64
"""Up to this many graphs, a question is asked of each graph (bound ``?g``), so its cost follows
the selection, not the store; above it, once of the whole store."""


def _rows_in(
    store: Store, text: str, params: dict[str, Term], graphs: set[IRI]
) -> Iterator[dict[str, Term]]:
    """The rows of ``text`` (which projects ``?g``) whose ``?g`` is one of ``graphs``."""
    bindings = (
        [{**params, "g": g} for g in sorted(graphs)] if len(graphs) <= _PER_GRAPH else [params]
    )
    for values in bindings:
        result = store.query(text, values)
        assert isinstance(result, Solutions)
        for row in result:
            if IRI.trusted(str(row["g"])) in graphs:
                yield row


def _redaction_targets(
    store: Store, redaction: Redaction, graphs: set[IRI]
) -> dict[IRI, dict[IRI, str]]:
    """graph -> entity -> action, for entities with a value that a rule hides."""
    targets: dict[IRI, dict[IRI, str]] = {}
    for rule in redaction.rules:
        queries: list[tuple[str, dict[str, Term]]] = [(_BY_TYPE, {"type": t}) for t in rule.types]
        queries += [(_BY_CAPABILITY, {"capability": Literal(c)}) for c in rule.capabilities]
        for text, params in queries:
            for row in _rows_in(store, text, params, graphs):
                g = IRI.trusted(str(row["g"]))
                if g in graphs:
                    entity = IRI.trusted(str(row["e"]))
                    current = targets.setdefault(g, {}).get(entity)
                    # "drop" wins over "hash" when rules overlap
                    if current != "drop":
                        targets[g][entity] = rule.action
    return targets


def export(
    store: Store,
    out: BinaryIO,
    graphs: list[IRI],
    *,
    format: str = "trig",
    redaction: Redaction | None = None,
    minter: Minter | None = None,
    progress: Progress | None = None,
) -> ExportStats:
    """Write ``graphs`` of ``store`` to ``out`` in ``format``, redacting as the rules say.

    Check ``check_assurance`` first; this function writes what it is given.

    Args:
        store: the store.
        out: a binary stream.
        graphs: the graphs (from ``select_graphs``).
        format: one of ``EXPORT_FORMATS``.
        redaction: rules to apply (None: nothing redacted).
        minter: for the instance prefixes of TriG / PROV-N (default ``urn:trails:``).
        progress: called after each graph of a streamed format.

    Returns:
        What was written.

    Raises:
        ExportError: an unknown format, or ``turtle`` for more than one graph.
        StoreError: the store could not be read.
    """
    if format not in EXPORT_FORMATS:
        raise ExportError(
            f"unknown export format {format!r}; use one of {', '.join(EXPORT_FORMATS)}"
        )
    if format == "turtle" and len(graphs) != 1:
        raise ExportError(
            f"turtle holds one graph and {len(graphs)} are selected: use trig or nquads"
        )
    minter = minter or Minter()
    stats = ExportStats(format=format)
    # each graph's content travels with it: its content graph (in Turtle, merged into it)
    wanted = set(graphs)
    more = (content_graph(g) for g in graphs if not is_content_graph(g))
    graphs = [
        *graphs,
        *(c for c in more if c not in wanted and store.query(_GRAPH_EXISTS, {"g": c})),
    ]
    targets = _redaction_targets(store, redaction, set(graphs)) if redaction else {}
    if format == "nquads":
        _stream(store, graphs, out, format, targets=targets, stats=stats, progress=progress)
        return stats
    if format == "trig":
        _stream(
            store,
            graphs,
            out,
            format,
            targets=targets,
            stats=stats,
            progress=progress,
            minter=minter,
        )
        return stats
    if format == "jsonld":
        _stream(store, graphs, out, format, targets=targets, stats=stats, progress=progress)
        return stats
    if format == "turtle":
        buffer = io.BytesIO()
        _stream(store, graphs, buffer, "nquads", targets=targets, stats=stats, progress=progress)
        scratch = open_store("memory:")
        try:
            scratch.load(buffer.getvalue(), format="nquads")
            if len(graphs) > 1:  # the content, in the one graph Turtle holds
                content = scratch.dump(format="ntriples", graph=graphs[1]) or b""
                scratch.load(content, format="ntriples", graph=graphs[0])
            scratch.dump(out, format="turtle", graph=graphs[0])
        finally:
            scratch.close()
        return stats
    export_prov(
        store, graphs, out, format, targets=targets, stats=stats, progress=progress, minter=minter
    )
    return stats


def export_to_path(write: Callable[[BinaryIO], ExportStats], path: Path) -> ExportStats:
    """Run ``write`` into ``path`` safely (``trails.audit.files``): a new file under a random
    name beside it, never through a link planted there, moved onto ``path`` when whole, so a
    failure leaves no half file.

    Args:
        write: writes the export to the stream it is given.
        path: the final file.

    Returns:
        What ``write`` returned.

    Raises:
        ExportError: the path cannot be written.
    """
    return write_file(path, write, what="the export")


def guess_format(path: str | Path) -> str:
    """The RDF format a file name suggests (``.trig``, ``.nq``, ``.ttl``, ``.jsonld`` ...).

    Args:
        path: the file name.

    Returns:
        A format name.

    Raises:
        ExportError: the extension says nothing.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in _EXTENSIONS:
        raise ExportError(
            f"cannot tell the format of {path} from its extension; say --format "
            f"{' | '.join(IMPORT_FORMATS)}"
        )
    return _EXTENSIONS[suffix]


def import_file(
    store: Store, path: str | Path, *, format: str | None = None, graph: str | None = None
) -> tuple[int, int]:
    """Load an export into ``store``, all or nothing.

    The file is parsed completely into a scratch store first, so a malformed
    file loads nothing and the store keeps what it held.

    Args:
        store: where to load.
        path: the file.
        format: one of ``IMPORT_FORMATS`` (default: from the extension).
        graph: the graph for a triples format (turtle, ntriples).

    Returns:
        ``(graphs, quads)`` loaded.

    Raises:
        ExportError: unreadable file, a format that cannot be imported, or a
            triples format without ``graph``.
        RDFSyntaxError: the file does not parse; nothing was loaded.
    """
    path = Path(path)
    fmt = format or guess_format(path)
    if fmt in ("provn", "provjson"):
        raise ExportError(
            f"{fmt} exports are for PROV tools and cannot be imported losslessly; "
            "import a trig, nquads or jsonld export"
        )
    if fmt not in IMPORT_FORMATS:
        raise ExportError(f"cannot import {fmt!r}; use one of {', '.join(IMPORT_FORMATS)}")
    target: IRI | None = None
    if fmt in ("turtle", "ntriples"):
        if graph is None:
            raise ExportError(f"{fmt} holds triples: say which graph to load them into (--graph)")
        try:
            target = IRI(graph)
        except ValueError:
            raise ExportError(f"{graph!r} is not a graph IRI") from None
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ExportError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if fmt == "jsonld":
        try:
            data, fmt = jsonld_to_nquads(data), "nquads"
        except RDFSyntaxError as exc:
            raise RDFSyntaxError(
                f"{path} is not valid jsonld, nothing was imported: {exc}"
            ) from exc
    scratch = open_store("memory:")
    try:
        try:
            scratch.load(data, format=fmt, graph=target)
        except RDFSyntaxError as exc:
            raise RDFSyntaxError(f"{path} is not valid {fmt}, nothing was imported: {exc}") from exc
        counted = scratch.query("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")
        assert isinstance(counted, Solutions)
        quads = int(counted.rows[0][0].value) if counted.rows and counted.rows[0][0] else 0  # type: ignore[union-attr]
        graphs = len(scratch.graphs())
    finally:
        scratch.close()
    store.load(data, format=fmt, graph=target)
    return graphs, quads
