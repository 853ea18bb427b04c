"""The W3C SPARQL 1.1 query-evaluation tests, through the ``Store`` protocol on every backend.

The folders vendored in ``tests/data/w3c/sparql11/`` (aggregates, bind,
bindings, cast, construct, exists, functions, grouping, negation,
project-expression, property-path, subquery; W3C test suite licence in
``tests/data/w3c/LICENSE.md``) are read from their manifests. Each
``mf:QueryEvaluationTest`` runs on the embedded store, on ``oxigraph serve``
and on Virtuoso (``any_store``), and its answer is compared with raw
pyoxigraph's answer to the same query over the same data, the baseline:

- unbound: the query as written, its data loaded into a graph used as the
  default graph (``default_graph=``), ``qt:graphData`` into named graphs;
- bound: for a SELECT, the first projected variable bound to an IRI or a
  literal in the baseline's first row is passed as a parameter, and the
  answer compared with pyoxigraph's own pre-binding (``substitutions``).

Blank nodes are compared by position only (each is written ``_:``); for
SAMPLE, only the columns and the row count. Known engine failures are strict
xfails with the reason (``ENGINE_BUGS``; Virtuoso's are listed in
``tests/data/w3c/virtuoso-xfails.tsv``); one whose answer varies from run to
run says ``unstable:`` and is not strict.
docs/conformance.md reports the counts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
import rdflib

from servers import BACKENDS, wipe
from trails.errors import QueryParameterError, TrailsError
from trails.store import IRI, BNode, Literal, Solutions, Store, open_store
from trails.store.sparql import SparqlStore

ROOT = Path(__file__).parent.parent / "data" / "w3c" / "sparql11"
BASE = "http://www.w3.org/2009/sparql/docs/tests/data-sparql11/"
MF = rdflib.Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
QT = rdflib.Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-query#")
DEFAULT = "urn:w3c:default"


def _local(folder: Path, iri: object) -> Path:
    return folder / str(iri).rsplit("/", 1)[-1]


def _cases() -> list[tuple[str, Path, list[Path], list[Path]]]:
    cases = []
    for folder in sorted(p for p in ROOT.iterdir() if p.is_dir()):
        manifest = rdflib.Graph()
        manifest.parse(folder / "manifest.ttl", publicID=f"{BASE}{folder.name}/manifest.ttl")
        for test in manifest.subjects(rdflib.RDF.type, MF.QueryEvaluationTest):
            action = manifest.value(test, MF.action)
            query = manifest.value(action, QT.query)
            if query is None:
                continue
            data = [_local(folder, d) for d in manifest.objects(action, QT.data)]
            named = [_local(folder, d) for d in manifest.objects(action, QT.graphData)]
            name = f"{folder.name}/{str(test).rsplit('#', 1)[-1]}"
            cases.append((name, _local(folder, query), data, named))
    return sorted(cases)


CASES = _cases()

# test -> reason, for the backends named; a pass is reported (strict).
_PREBINDING = (
    "baseline bug: pyoxigraph's pre-binding binds the parameter on the right of a MINUS that "
    "never mentions it; trails answers as SPARQL says (docs/remote-store.md)"
)


def _virtuoso_failures() -> dict[tuple[str, str, bool | None], str]:
    known: dict[tuple[str, str, bool | None], str] = {}
    for line in (ROOT.parent / "virtuoso-xfails.tsv").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, run, reason = line.split("\t")
            known[(name, "virtuoso", run == "bound")] = reason
    return known


ENGINE_BUGS: dict[tuple[str, str, bool | None], str] = {
    **_virtuoso_failures(),
    ("negation/full-minuend", "*", True): _PREBINDING,
    # Virtuoso's own MINUS bug (no shared variable: every row removed) gives the rows of
    # pyoxigraph's pre-binding bug, so this run matches the baseline
    ("negation/full-minuend", "virtuoso", True): "",
    ("negation/partial-minuend", "*", True): _PREBINDING,
}


def _ntriples(path: Path) -> bytes:
    graph = rdflib.Graph()
    fmt = "xml" if path.suffix == ".rdf" else "turtle"
    graph.parse(path, format=fmt, publicID=f"{BASE}{path.parent.name}/{path.name}")
    return graph.serialize(format="nt", encoding="utf-8")


def _graph_name(path: Path) -> str:
    return f"{BASE}{path.parent.name}/{path.name}"


def _query_text(path: Path) -> str:
    return f"BASE <{BASE}{path.parent.name}/{path.name}>\n" + path.read_text(encoding="utf-8")


def _norm(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, BNode | ox.BlankNode):
        return "_:"
    if isinstance(value, Literal):
        return repr((value.value, value.datatype, value.language))
    if isinstance(value, ox.Literal):
        lang = value.language
        return repr((value.value, value.datatype.value, lang))
    if isinstance(value, ox.NamedNode):
        return value.value
    return str(value)


def _baseline(
    sparql: str, data: list[bytes], named: dict[str, bytes], params: dict[str, Any]
) -> Any:
    raw = ox.Store()
    for chunk in data:
        raw.load(input=chunk, format=ox.RdfFormat.N_TRIPLES, to_graph=ox.NamedNode(DEFAULT))
    for name, chunk in named.items():
        raw.load(input=chunk, format=ox.RdfFormat.N_TRIPLES, to_graph=ox.NamedNode(name))
    kw: dict[str, Any] = {
        "default_graph": [ox.NamedNode(DEFAULT)],
        "named_graphs": [ox.NamedNode(n) for n in named],
    }
    if params:
        kw["substitutions"] = {ox.Variable(k): v for k, v in params.items()}
    try:
        result = raw.query(sparql, **kw)  # type: ignore[arg-type]
        if isinstance(result, ox.QueryBoolean):
            return bool(result)
        if isinstance(result, ox.QuerySolutions):
            names = [v.value for v in result.variables]
            rows = sorted(tuple(_norm(s[n]) for n in names) for s in result)
            return names, rows
        return sorted(
            " ".join(_norm(x) for x in (t.subject, t.predicate, t.object)) for t in result
        )
    except (SyntaxError, RuntimeError, ValueError, OSError) as exc:
        return ("error", type(exc).__name__)


def _answer(
    store: Store, sparql: str, default: str, named: list[str], params: dict[str, Any] | None
) -> Any:
    try:
        result = store.query(
            sparql, params, default_graph=[IRI(default)], named_graphs=[IRI(n) for n in named]
        )
    except QueryParameterError:
        return ("refused",)
    except TrailsError as exc:
        return ("error", type(exc).__name__)
    if isinstance(result, bool):
        return result
    if isinstance(result, Solutions):
        return result.variables, sorted(tuple(_norm(v) for v in row) for row in result.rows)
    return sorted(" ".join(_norm(x) for x in t) for t in result)


def _to_trails(term: Any) -> Any:
    if isinstance(term, ox.NamedNode):
        return IRI(term.value)
    return Literal(term.value, term.datatype.value, term.language)


def _bound_parameter(sparql: str, data: list[bytes], named: dict[str, bytes]) -> tuple[str, Any]:
    raw = ox.Store()
    for chunk in data:
        raw.load(input=chunk, format=ox.RdfFormat.N_TRIPLES, to_graph=ox.NamedNode(DEFAULT))
    for name, chunk in named.items():
        raw.load(input=chunk, format=ox.RdfFormat.N_TRIPLES, to_graph=ox.NamedNode(name))
    try:
        result = raw.query(
            sparql,
            default_graph=[ox.NamedNode(DEFAULT)],
            named_graphs=[ox.NamedNode(n) for n in named],
        )
    except (SyntaxError, RuntimeError, ValueError, OSError):
        return "", None
    if not isinstance(result, ox.QuerySolutions):
        return "", None
    names = [v.value for v in result.variables]
    rows = list(result)
    # deterministic: solution order (and blank node labels) may change from run to run
    for name in sorted(names, key=lambda n: (_assigned(sparql, n), names.index(n))):
        values = sorted(
            (str(r[name]), r[name]) for r in rows if isinstance(r[name], ox.NamedNode | ox.Literal)
        )
        if values:
            return name, values[0][1]
    return "", None


def _assigned(sparql: str, name: str) -> bool:
    return re.search(rf"\bAS\s*[?$]{re.escape(name)}\b", sparql, re.IGNORECASE) is not None


@pytest.fixture(scope="module", params=BACKENDS)
def w3c_store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """One store per backend holding every test's data: its own default graph, shared files."""
    backend = request.param
    if backend == "embedded":
        store: Store = open_store("memory:")
        clean: Callable[[], object] = lambda: None  # noqa: E731
    elif backend == "remote":
        url = request.getfixturevalue("oxigraph_server")
        wipe(url)
        store = open_store(url)
        clean = lambda: wipe(url)  # noqa: E731
    else:
        server = request.getfixturevalue("virtuoso_server")
        server.wipe()
        store = SparqlStore(server.url, server.url, None, form_post=True)
        clean = server.wipe
    loaded: set[str] = set()
    for name, _, data, named in CASES:
        for path in data:
            store.load(_ntriples(path), format="ntriples", graph=IRI(_default(name)))
        for path in named:
            if _graph_name(path) not in loaded:
                loaded.add(_graph_name(path))
                store.load(_ntriples(path), format="ntriples", graph=IRI(_graph_name(path)))
    try:
        yield store
    finally:
        store.close()
        clean()


def _default(name: str) -> str:
    return f"urn:w3c:default:{name}"


@pytest.mark.parametrize("bound", [False, True], ids=["unbound", "bound"])
@pytest.mark.parametrize(("name", "query", "data", "named"), CASES, ids=[c[0] for c in CASES])
def test_w3c_query_evaluation(
    w3c_store: Store,
    request: pytest.FixtureRequest,
    name: str,
    query: Path,
    data: list[Path],
    named: list[Path],
    bound: bool,
) -> None:
    backend = request.node.callspec.params["w3c_store"]
    for key in ((name, backend, bound), (name, "*", bound), (name, backend, None)):
        if key not in ENGINE_BUGS:
            continue
        reason = ENGINE_BUGS[key]  # "" : this backend passes although others do not
        if reason:
            strict = not reason.startswith("unstable:")  # a known failure that comes and goes
            request.applymarker(pytest.mark.xfail(strict=strict, reason=reason))
        break
    sparql = _query_text(query)
    triples = [_ntriples(p) for p in data]
    graphs = {_graph_name(p): _ntriples(p) for p in named}
    params: dict[str, Any] = {}
    if bound:
        variable, value = _bound_parameter(sparql, triples, graphs)
        if not variable:  # nothing to bind: the unbound run covers this test
            return
        params = {variable: value}
    expected = _baseline(sparql, triples, graphs, params)
    got = _answer(
        w3c_store,
        sparql,
        _default(name),
        list(graphs),
        {k: _to_trails(v) for k, v in params.items()} or None,
    )
    if params and _assigned(sparql, next(iter(params))):
        assert got == ("refused",), "a parameter the query assigns itself is refused"
        return
    if isinstance(expected, tuple) and expected and expected[0] == "error":
        assert isinstance(got, tuple), f"pyoxigraph fails ({expected[1]}), trails answers {got!r}"
        return
    if "SAMPLE" in sparql.upper() and isinstance(expected, tuple):
        # SAMPLE may pick any value of its group: the columns and the row count must agree
        assert isinstance(got, tuple) and got[0] == expected[0] and len(got[1]) == len(expected[1])
        return
    assert got == expected
