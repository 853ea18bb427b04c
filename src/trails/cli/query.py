"""``trails query``: run a pack query, a SPARQL file or inline SPARQL against the store."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from trails.audit.access import reading
from trails.audit.querypack import load_pack, resolve
from trails.audit.render import table
from trails.cli.common import session_arg
from trails.errors import QueryParameterError, QueryRefused, QuerySyntaxError, UserError
from trails.store.base import DEFAULT_BASE_IRI

__all__ = ["parse_params", "register", "run"]

SELECT_FORMATS = ("table", "json", "xml", "csv", "tsv")
GRAPH_FORMATS = ("turtle", "trig", "ntriples", "nquads", "jsonld", "rdfxml")

# an update's first word after the prologue (PREFIX / BASE declarations and comments)
_UPDATE = re.compile(
    r"^(?:\s|#[^\n]*\n|(?:PREFIX\s+[\w.-]*:\s*|BASE\s+)<[^>]*>)*"
    r"(INSERT|DELETE|LOAD|CLEAR|CREATE|DROP|COPY|MOVE|ADD|WITH)\b",
    re.IGNORECASE,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``query`` command."""
    p = subparsers.add_parser(
        "query",
        help="run a query of the pack, a SPARQL file, or inline SPARQL",
        description="Run a regulator pack query by name, a .rq file, or SPARQL text. "
        "Parameters are bound as typed RDF terms, never pasted into the query.",
    )
    p.add_argument(
        "query", nargs="?", help="pack name, path to a .rq file, or SPARQL text (read-only)"
    )
    p.add_argument(
        "--param", "-p", action="append", default=[], metavar="NAME=VALUE", help="bind a parameter"
    )
    p.add_argument(
        "--format",
        "-f",
        choices=SELECT_FORMATS + GRAPH_FORMATS,
        help="table (default), json, xml, csv, tsv; turtle (default) or trig ... for CONSTRUCT",
    )
    p.add_argument("--list", action="store_true", help="list the pack's queries and parameters")
    p.set_defaults(func=run)


def parse_params(pairs: list[str]) -> dict[str, str]:
    """``["a=1", "b=x=y"]`` -> ``{"a": "1", "b": "x=y"}``.

    Args:
        pairs: the ``--param`` values.

    Returns:
        Names to raw string values.

    Raises:
        QueryParameterError: a pair without ``=``, an empty name, or a name given twice.
    """
    values: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip().lstrip("$?")
        if not sep or not name:
            raise QueryParameterError(f"--param expects NAME=VALUE, got {pair!r}")
        if name in values:
            raise QueryParameterError(f"--param {name} given twice")
        values[name] = value
    return values


def _list() -> int:
    for name, q in load_pack().items():
        print(f"{name}  ({q.form}) {q.title}")
        if q.description:
            print(f"    {q.description}")
        for p in q.params.values():
            flag = "optional" if p.optional else "required"
            print(f"    --param {p.name}=<{p.type}>  {flag}  {p.description}".rstrip())
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the command; see ``register``."""
    if args.list:
        return _list()
    if not args.query:
        raise UserError("name a query (trails query --list shows the pack), a file, or SPARQL")
    try:
        query = resolve(args.query)
    except QuerySyntaxError:
        if _is_update(args.query):
            raise UserError(
                "trails query is read-only: this is a SPARQL update (INSERT, DELETE, LOAD ...); "
                "trails records through the runtime, and never changes the record by query"
            ) from None
        raise
    values = parse_params(args.param)
    for name in ("session", "graph"):  # a session by its UUID, as trails sessions shows it
        if name in values and name in query.params and query.params[name].type == "iri":
            values[name] = session_arg(values[name])
    bound = query.bind(values)
    graph_result = query.form in ("CONSTRUCT", "DESCRIBE")
    fmt = args.format or ("turtle" if graph_result else "table")
    if graph_result and fmt not in GRAPH_FORMATS:
        raise UserError(f"{query.name} is a {query.form}: use --format {' | '.join(GRAPH_FORMATS)}")
    if not graph_result and fmt not in SELECT_FORMATS:
        raise UserError(
            f"{query.name} is a {query.form}: use --format {' | '.join(SELECT_FORMATS)}"
        )
    text = query.text_for(bound)
    with reading(args.store) as store:
        union = _union_default(text, str(getattr(store, "base_iri", DEFAULT_BASE_IRI)))
        if fmt == "table":
            result = store.query(text, bound, union_default_graph=union)
            print(table(result, hide=set(query.params) - set(bound)))
            return 0
        data = store.query_to(text, bound, format=fmt, union_default_graph=union)
    if fmt in ("turtle", "trig") and data.strip():
        data = _with_prefixes(data, fmt)
    out = sys.stdout.buffer
    out.write(data)
    if data and not data.endswith(b"\n"):
        out.write(b"\n")
    out.flush()
    return 0


def _union_default(text: str, base_iri: str) -> bool:
    """Whether the default graph is the union of the graphs, as at the endpoint.

    It is, unless the query names its own dataset (``FROM`` / ``FROM NAMED``):
    then those graphs are the dataset, as SPARQL says.
    """
    if re.search(r"from", text, re.IGNORECASE) is None:  # no dataset clause without it
        return True
    from trails.server.sparql import analyse

    try:
        info = analyse(text, base_iri)
    except QueryRefused:
        return False  # the store reports what is wrong with the query
    return info.default_graphs is None and info.named_graphs is None


def _is_update(spec: str) -> bool:
    text = spec
    if "\n" not in spec and len(spec) < 4096 and Path(spec).is_file():
        try:
            text = Path(spec).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    return _UPDATE.match(text) is not None


def _with_prefixes(data: bytes, fmt: str) -> bytes:
    """Turtle / TriG that declares the usual prefixes and writes IRIs with them."""
    import rdflib

    from trails.prov.vocab import NAMESPACES

    graph: rdflib.Graph = rdflib.Dataset() if fmt == "trig" else rdflib.Graph()
    graph.parse(data=data, format=fmt)
    for prefix, namespace in NAMESPACES.items():
        graph.bind(prefix, rdflib.Namespace(namespace), override=True, replace=True)
    return graph.serialize(format=fmt, encoding="utf-8")
