"""The query pack loader: header, parameter checks, typed binding, and every pack query parses."""

from __future__ import annotations

from pathlib import Path

import pytest

from trails.audit import get_query, load_pack, parse_query
from trails.errors import QueryParameterError, UnknownQuery
from trails.store import Literal, Store, literal, open_store


def test_header_is_read() -> None:
    q = parse_query(
        "# title: T\n# description: one\n# description: two\n"
        "# param: who iri optional -- the agent\nSELECT $who WHERE { ?s ?p $who }",
        name="t",
    )
    assert (q.title, q.description, q.form) == ("T", "one two", "SELECT")
    assert q.params["who"].optional and q.params["who"].description == "the agent"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# param: x string\nSELECT ?s WHERE { ?s ?p ?o }", "declared but not used"),
        ("SELECT $x WHERE { ?s ?p $x }", "used but not declared"),
        ("# param: x string\nSELECT ?s WHERE { ?s ?p $x }", "project"),
        ("# param: x float\nSELECT $x WHERE { ?s ?p $x }", "bad parameter declaration"),
    ],
)
def test_bad_queries_fail_at_load_naming_the_file(text: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "broken.rq"
    path.write_text(text)
    from trails.audit import load_query

    with pytest.raises(QueryParameterError, match=message) as info:
        load_query(path)
    assert "broken.rq" in str(info.value)


def test_dollar_signs_in_strings_iris_and_comments_are_not_parameters() -> None:
    q = parse_query('SELECT ?s WHERE { ?s <urn:$x> "$y" } # $z', name="t")
    assert q.params == {}


def test_binding_converts_declared_types_and_rejects_bad_values() -> None:
    q = parse_query(
        "# param: n integer\n# param: when datetime optional\n# param: ok boolean optional\n"
        "SELECT $n $when $ok WHERE { ?s ?p $n FILTER(!BOUND($when) || BOUND($ok)) }",
        name="typed",
    )
    bound = q.bind({"n": "42", "when": "2026-01-02T03:04:05Z", "ok": "true"})
    assert bound["n"] == literal(42) and bound["ok"] == literal(True)
    with pytest.raises(QueryParameterError, match="expects integer"):
        q.bind({"n": "forty"})
    with pytest.raises(QueryParameterError, match="needs parameter 'n'"):
        q.bind({})
    with pytest.raises(QueryParameterError, match="no parameter nope"):
        q.bind({"n": 1, "nope": 2})


def test_unknown_query_lists_the_pack() -> None:
    with pytest.raises(UnknownQuery, match="sessions"):
        get_query("no-such-query")


def test_every_pack_query_parses_and_runs_on_an_empty_store() -> None:
    pack = load_pack()
    assert {"sessions", "session-timeline", "invocations-by-capability"} <= set(pack)
    empty: Store = open_store("memory:")
    for name, query in pack.items():
        assert query.title and query.description, name
        values = {
            p.name: (
                "urn:x:y"
                if p.type == "iri"
                else "1"
                if p.type in ("integer", "decimal")
                else "2026-01-01T00:00:00Z"
                if p.type == "datetime"
                else "2026-01-01"
                if p.type == "date"
                else "true"
                if p.type == "boolean"
                else "x"
            )
            for p in query.params.values()
            if not p.optional
        }
        query.run(empty, **values)  # raises on a syntax error


def test_hostile_parameter_values_are_bound_not_spliced(store: Store) -> None:
    q = parse_query("# param: s string\nSELECT $s WHERE { GRAPH ?g { ?x ?p $s } }", name="t")
    from trails.store import IRI, Quad

    store.write([Quad(IRI("urn:a"), IRI("urn:p"), Literal('"} ; DROP ALL #'), IRI("urn:g"))])
    assert len(q.run(store, s='"} ; DROP ALL #')) == 1  # type: ignore[arg-type]
    assert len(q.run(store, s="} UNION { ?x ?p ?o")) == 0  # type: ignore[arg-type]
    assert store.graphs() == ["urn:g"]


def test_get_query_serves_from_memory_until_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "q.rq"
    path.write_text("# title: One\nSELECT ?s WHERE { ?s ?p ?o }\n")
    first = get_query("q", tmp_path)
    assert get_query("q", tmp_path) is first  # cached
    path.write_text("# title: Two, longer\nSELECT ?s WHERE { ?s ?p ?o }\n")
    assert get_query("q", tmp_path).title == "Two, longer"
    path.unlink()
    with pytest.raises(UnknownQuery):
        get_query("q", tmp_path)


def test_a_query_asked_again_binds_the_same_and_each_answer_is_its_own() -> None:
    q = parse_query("# param: n integer\nSELECT $n WHERE { ?s ?p $n }", name="again")
    for _ in range(3):  # each answer is the caller's: changing it changes no later one
        answer = q.bind({"n": "42"})
        assert answer == {"n": literal(42)}
        answer["n"] = literal(7)
    assert q.bind({"n": "43"}) == {"n": literal(43)}
    for _ in range(2):  # a bad value is refused every time it is given
        with pytest.raises(QueryParameterError, match="expects integer"):
            q.bind({"n": "forty"})


def test_values_that_compare_equal_but_are_not_text_are_bound_each_time() -> None:
    q = parse_query("# param: n integer\nSELECT $n WHERE { ?s ?p $n }", name="typed-again")
    assert q.bind({"n": 1}) == {"n": literal(1)}
    with pytest.raises(QueryParameterError, match="boolean is not an integer"):
        q.bind({"n": True})  # True == 1, but it is not an integer


def test_a_shipped_pack_query_is_rechecked_once_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from trails.audit import querypack

    clock = [1000.0]
    monkeypatch.setattr(querypack, "find_pack_dir", lambda: tmp_path)
    monkeypatch.setattr(querypack, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(querypack, "_by_name", {})
    monkeypatch.setattr(querypack, "_shipped_fresh", {})
    path = tmp_path / "shipped.rq"
    path.write_text("# title: One\nSELECT ?s WHERE { ?s ?p ?o }\n")
    assert get_query("shipped").title == "One"
    assert get_query("shipped").title == "One"  # checked unchanged: fresh for a while
    path.write_text("# title: Two, longer\nSELECT ?s WHERE { ?s ?p ?o }\n")
    clock[0] += querypack.SHIPPED_RECHECK_S / 2
    assert get_query("shipped").title == "One"
    clock[0] += querypack.SHIPPED_RECHECK_S
    assert get_query("shipped").title == "Two, longer"
    path.unlink()
    clock[0] += querypack.SHIPPED_RECHECK_S * 2
    with pytest.raises(UnknownQuery):
        get_query("shipped")
