"""The embedded store: atomic writes, bound parameters, locking, dump/load, error mapping."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trails.errors import (
    QueryParameterError,
    QuerySyntaxError,
    RDFSyntaxError,
    StoreError,
    StoreLockedError,
)
from trails.store import IRI, Literal, Quad, Solutions, Store, literal, open_store, to_python
from trails.store.oxigraph import OxigraphStore

G = IRI("urn:test:g")
P = IRI("urn:test:p")


def q(s: str, o: object, g: IRI = G) -> Quad:
    return Quad(IRI(s), P, o if isinstance(o, (IRI, Literal)) else literal(o), g)  # type: ignore[arg-type]


def test_store_satisfies_protocol() -> None:
    assert isinstance(OxigraphStore(None), Store)


def test_write_and_select_with_bound_parameter(store: Store) -> None:
    store.write([q("urn:a", "one"), q("urn:b", "two")])
    rows = store.query("SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"s": IRI("urn:a")})
    assert isinstance(rows, Solutions)
    assert [(r["s"], to_python(r["o"])) for r in rows] == [("urn:a", "one")]


def test_ask_and_construct(store: Store) -> None:
    store.write([q("urn:a", 1)])
    assert store.query("ASK { GRAPH ?g { ?s ?p 1 } }") is True
    triples = store.query("CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }")
    assert isinstance(triples, list) and triples[0].subject == "urn:a"


@pytest.mark.parametrize(
    "hostile",
    [
        'x" } ; DROP ALL ; SELECT * WHERE { "',
        "x' } DELETE WHERE { ?s ?p ?o } #",
        "} ; DROP ALL",
        "{ ?s ?p ?o }",
        '"""\n;\\',
    ],
)
def test_injection_through_parameters_is_bound_as_a_value(store: Store, hostile: str) -> None:
    store.write([q("urn:a", "safe"), q("urn:b", hostile)])
    rows = store.query("SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"o": Literal(hostile)})
    assert [r["s"] for r in rows] == ["urn:b"]  # type: ignore[union-attr]
    assert len(store.query("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }")) == 2  # type: ignore[arg-type]


def test_iri_with_spaces_is_rejected_before_reaching_the_store() -> None:
    with pytest.raises(ValueError):
        IRI("urn:a b> } ; DROP ALL ; <urn:x")


def test_failed_write_leaves_nothing(store: Store) -> None:
    good = q("urn:a", "kept?")
    bad = Quad(IRI("urn:b"), P, Literal("x", "not a datatype iri"), G)
    with pytest.raises(StoreError):
        store.write([good, bad])
    assert store.graphs() == []


def test_changes_count_what_changed_the_store_not_what_read_it() -> None:
    store = OxigraphStore(None)  # what a cache of the store compares (the sealer's pointer)
    assert store.changes == 0
    store.write([q("urn:a", 1)])
    store.write([q("urn:b", 2)], remove=[q("urn:a", 1)])
    assert store.changes == 2
    store.query("SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } }")
    store.dump(format="nquads")
    assert store.changes == 2
    with pytest.raises(StoreError):
        store.write([Quad(IRI("urn:c"), P, Literal("x", "not a datatype iri"), G)])
    assert store.changes == 2  # refused before the backend: nothing changed
    store.load(b"<urn:c> <urn:p> <urn:o> <urn:g> .\n", format="nquads")
    store.clear(G)
    assert store.changes == 4


def test_write_and_remove_in_one_transaction(store: Store) -> None:
    old, new = q("urn:a", "old"), q("urn:a", "new")
    store.write([old])
    store.write([new], remove=[old])
    values = [to_python(r["o"]) for r in store.query("SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }")]  # type: ignore[union-attr]
    assert values == ["new"]


def test_syntax_error_carries_line_and_column(store: Store) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        store.query("SELECT ?s\nWHERE { ?s ?p }")
    assert info.value.line == 2 and info.value.column is not None


def test_unprojected_parameter_is_a_clear_error(store: Store) -> None:
    with pytest.raises(QueryParameterError, match="projection"):
        store.query("SELECT ?s WHERE { ?s ?p ?o }", {"o": Literal("x")})


def test_dataset_restriction_hides_other_graphs(store: Store) -> None:
    other = IRI("urn:test:other")
    store.write([q("urn:a", 1), q("urn:b", 2, other)])
    rows = store.query("SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } }", named_graphs=[G])
    assert [r["s"] for r in rows] == ["urn:a"]  # type: ignore[union-attr]
    rows = store.query("SELECT ?s WHERE { ?s ?p ?o }", default_graph=[other])
    assert [r["s"] for r in rows] == ["urn:b"]  # type: ignore[union-attr]


def test_query_to_serialises_results(store: Store) -> None:
    store.write([q("urn:a", "v")])
    csv = store.query_to("SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } }", format="csv")
    assert csv.splitlines() == [b"s", b"urn:a"]
    ttl = store.query_to("CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }", format="turtle")
    assert b"urn:a" in ttl


def test_dump_load_round_trip_and_clear(store: Store) -> None:
    store.write([q("urn:a", "é ünïcode ✓"), q("urn:b", 3)])
    data = store.dump(format="trig")
    assert isinstance(data, bytes)
    other = open_store("memory:")
    other.load(data, format="trig")
    assert sorted(other.dump(format="nquads").splitlines()) == sorted(  # type: ignore[union-attr]
        store.dump(format="nquads").splitlines()  # type: ignore[union-attr]
    )
    other.clear(G)
    assert other.graphs() == []


def test_malformed_load_loads_nothing(store: Store) -> None:
    data = b"<urn:a> <urn:p> <urn:o> <urn:g> .\n<urn:b> <urn:p> broken <urn:g> .\n"
    with pytest.raises(RDFSyntaxError):
        store.load(data, format="nquads")
    assert store.graphs() == []


def test_closed_store_raises_store_error() -> None:
    s = open_store("memory:")
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.graphs()


def test_unknown_format_is_a_clear_error(store: Store) -> None:
    with pytest.raises(StoreError, match="unknown RDF format"):
        store.dump(format="yaml")


def test_reopen_after_close_keeps_data(tmp_path: Path) -> None:
    s = OxigraphStore(tmp_path / "db")
    s.write([q("urn:a", "persisted")])
    s.close()
    again = OxigraphStore(tmp_path / "db")
    assert len(again.query("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }")) == 1  # type: ignore[arg-type]
    again.close()


def test_second_open_in_same_process_is_refused(tmp_path: Path) -> None:
    first = OxigraphStore(tmp_path / "db")
    with pytest.raises(StoreLockedError, match="SPARQL server"):
        OxigraphStore(tmp_path / "db")
    first.close()


def test_open_locked_by_another_process_is_refused_with_advice(tmp_path: Path) -> None:
    held = OxigraphStore(tmp_path / "db")
    code = (
        "import sys\n"
        "from trails.errors import StoreLockedError\n"
        "from trails.store.oxigraph import OxigraphStore\n"
        f"try:\n    OxigraphStore({str(tmp_path / 'db')!r})\n"
        "except StoreLockedError as e:\n    print(e); sys.exit(3)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    held.close()
    assert result.returncode == 3, result.stderr
    assert "single-writer" in result.stdout and "TRAILS_STORE=http" in result.stdout


@given(st.text())
def test_any_unicode_literal_round_trips(text: str) -> None:
    s = open_store("memory:")
    s.write([q("urn:a", text)])
    rows = list(s.query("SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }"))  # type: ignore[arg-type]
    assert to_python(rows[0]["o"]) == text
    assert s.query("ASK { GRAPH ?g { ?s ?p ?o } }", {"o": Literal(text)}) is True
