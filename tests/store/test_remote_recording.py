"""Recording through a SPARQL server: the kernel, the recorder and the query pack, and many writers.

The audit fixture (four sessions: ReAct, Plan-and-Execute, Reflexion, an
error; completions, policy denials, memory, terminations, seals) is recorded
through real ``invoke`` calls into the remote store. Its dump is loaded into
an embedded store, and every query of the pack, with each of its parameters,
must answer the same on both.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.known_store import Fixture, build

from trails.audit.querypack import Query, load_pack
from trails.store import Literal, Solutions, Store, open_store, to_python
from trails.store.sparql import SparqlStore
from trails.store.terms import XSD

pytestmark = pytest.mark.remote

MIDDLE = datetime(2025, 3, 2, 12, 0, tzinfo=UTC)
FALLBACK = {
    "capability": "search",
    "status": "ok",
    "decision": "deny",
    "model": "claude-sonnet",
    "below": "0.95",
    "principal": "did:local:alice",  # a principal id (string parameters)
    "all": True,
    "control": "session-sealed",  # a control id (the built-in set)
}


def _required_value(name: str, fx: Fixture) -> Any:
    if name in ("session", "graph"):
        return fx.sessions["A"]
    if name in ("entity",):
        return fx.memory
    if name in ("invocation", "activity"):
        return next(iter(fx.invocations.values()))
    raise AssertionError(f"no test value for the required parameter {name!r}")


def _value(query: Query, name: str, fx: Fixture, store: Store) -> Any:
    """A value of parameter ``name`` that occurs in the data, when one can be found."""
    param = query.params[name]
    if not param.optional:
        return _required_value(name, fx)
    if param.type == "datetime":
        return MIDDLE
    if name in ("session", "graph"):
        return fx.sessions["C"]
    required = {n: _required_value(n, fx) for n, p in query.params.items() if not p.optional}
    result = query.run(store, **required)
    if isinstance(result, Solutions) and name in result.variables:
        found = [v for v in result.column(name) if v is not None]
        if found:
            return found[0]
    if name in FALLBACK:
        return FALLBACK[name]
    if param.type == "iri":
        return fx.sessions["A"]
    raise AssertionError(f"no test value for {query.name} parameter {name!r}")


def _rounded(term: Any) -> Any:
    """Doubles summed in another order differ in the last bits: compare them to 9 digits."""
    if isinstance(term, Literal) and term.datatype in (XSD + "double", XSD + "float"):
        return Literal(f"{float(term.value):.9g}", term.datatype)
    return term


def _answer(store: Store, query: Query, values: dict[str, Any]) -> tuple[Any, ...]:
    result = query.run(store, **values)
    if isinstance(result, Solutions):
        return (tuple(result.variables), Counter(tuple(map(_rounded, r)) for r in result.rows))
    if isinstance(result, list):
        return ("triples", Counter(result))
    return ("boolean", result)


def test_the_query_pack_answers_the_same_on_both_backends(
    remote_store: SparqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    fx = build(remote_store, monkeypatch)  # recorded through invoke, the recorder and the sealer
    embedded = open_store("memory:")
    try:
        embedded.load(remote_store.dump(format="nquads") or b"", format="nquads")
        assert embedded.graphs() == remote_store.graphs()
        pack = load_pack()
        assert len(pack) >= 3
        answered = 0
        for name, query in sorted(pack.items()):
            required = {
                n: _required_value(n, fx) for n, p in query.params.items() if not p.optional
            }
            cases = [required]
            optional = [n for n, p in query.params.items() if p.optional]
            every = dict(required)
            for param in optional:
                value = _value(query, param, fx, embedded)
                cases.append({**required, param: value})
                every[param] = value
            if optional:
                cases.append(every)
            for values in cases:
                on_remote, on_embedded = (
                    _answer(remote_store, query, values),
                    _answer(embedded, query, values),
                )
                assert on_remote == on_embedded, f"{name} with {values}"
                answered += bool(on_embedded[1])
        assert answered >= len(pack)  # most cases have rows: the comparison is not vacuous
        sessions = pack["sessions"].run(remote_store)
        assert isinstance(sessions, Solutions) and len(sessions) == 4
    finally:
        embedded.close()


CHILD = textwrap.dedent(
    """
    import sys
    from trails.kernel import Context, capability, invoke
    from trails.prov import Recorder
    from trails.store import open_store

    url, worker, sessions = sys.argv[1], sys.argv[2], int(sys.argv[3])

    @capability(id="demo.echo")
    def echo(text: str) -> str:
        return text

    store = open_store(url)
    recorder = Recorder(store)
    for n in range(sessions):
        with Context.open(f"did:local:worker-{worker}", recorder=recorder) as ctx:
            invoke("demo.echo", {"text": f"{worker}-{n}-a"}, ctx=ctx)
            invoke("demo.echo", {"text": f"{worker}-{n}-b"}, ctx=ctx)
    store.close()
    """
)

COUNTS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT (COUNT(DISTINCT ?session) AS ?sessions) (COUNT(DISTINCT ?ended) AS ?ended)
       (COUNT(DISTINCT ?call) AS ?calls) WHERE {
  GRAPH ?session {
    ?session a trails:Session .
    OPTIONAL { ?session prov:endedAtTime ?t BIND(?session AS ?ended) }
    OPTIONAL { ?call a trails:CapabilityInvocation ; trails:inSession ?session }
  }
}
"""


def test_several_processes_recording_through_one_server_lose_nothing(
    remote_store: SparqlStore, oxigraph_server: str
) -> None:
    workers, sessions = 4, 8
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, oxigraph_server, str(w), str(sessions)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for w in range(workers)
    ]
    for child in children:
        _out, err = child.communicate(timeout=240)
        assert child.returncode == 0, err.decode()
    result = remote_store.query(COUNTS)
    assert isinstance(result, Solutions)
    expected = workers * sessions
    assert [to_python(v) for v in result.rows[0]] == [expected, expected, 2 * expected]
    texts = remote_store.query(
        "SELECT ?v WHERE { GRAPH ?g { ?e <http://www.w3.org/ns/prov#value> ?v } }"
    )
    assert isinstance(texts, Solutions)
    values = {str(v.value) for (v,) in texts.rows if v is not None}  # type: ignore[union-attr]
    for w in range(workers):
        for n in range(sessions):
            assert any(f"{w}-{n}-a" in v for v in values) and any(f"{w}-{n}-b" in v for v in values)
