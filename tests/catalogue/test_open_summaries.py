"""Summaries of sessions without an end are typed ``trails:OpenSessionSummary``, exactly while
the session has not ended: from the write that starts it to the write that ends it, through
recovery, a rebuild, and a rollup that types a catalogue written before the type existed.

Known values from the audit fixture (``tests/known_store.py``): A, B and C ended, D never did.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.known_store import ALICE, Fixture

from trails.catalogue.entries import (
    catalogue_iri,
    entry_iri,
    open_mark,
    rebuild,
)
from trails.catalogue.totals import keep_up, rollup
from trails.context import Context
from trails.evidence.recovery import recover
from trails.prov.iri import Minter
from trails.prov.vocab import T
from trails.store import Solutions, Store
from trails.store.terms import IRI, Quad, literal
from trails.testing import assert_conforms

CATALOGUE = catalogue_iri(Minter())
_OPEN = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?entry WHERE { GRAPH ?g { ?entry a trails:OpenSessionSummary } }"""
_MARK = "ASK { GRAPH $g { $g <https://w3id.org/trails/ns#openSummariesTyped> true } }"


def _open(store: Store) -> set[str]:
    rows = store.query(_OPEN)
    assert isinstance(rows, Solutions)
    return {str(r[0]) for r in rows.rows}


def _entry(fx: Fixture, key: str) -> str:
    return str(entry_iri(fx.sessions[key]))


def _untype(store: Store) -> None:
    """The catalogue as a trails from before the type wrote it: no type, no mark."""
    store.write(
        [],
        remove=[
            *(open_mark(IRI.trusted(e), CATALOGUE) for e in _open(store)),
            Quad(CATALOGUE, T.openSummariesTyped, literal(True), CATALOGUE),
        ],
    )
    assert _open(store) == set() and not store.query(_MARK, {"g": CATALOGUE})


def test_only_the_session_that_never_ended_is_typed_open(fx: Fixture) -> None:
    assert _open(fx.store) == {_entry(fx, "D")}
    assert_conforms(fx.store, CATALOGUE)


def test_a_session_is_open_from_the_write_that_starts_it_to_the_one_that_ends_it(
    fx: Fixture,
) -> None:
    ctx = Context.open(ALICE, recorder=fx.recorder)
    entry = str(entry_iri(ctx.session))
    assert entry in _open(fx.store)
    assert_conforms(fx.store, CATALOGUE)
    ctx.close()
    assert entry not in _open(fx.store)
    assert _open(fx.store) == {_entry(fx, "D")}
    assert_conforms(fx.store, CATALOGUE)


def test_recovery_ends_the_session_and_its_open_type(fx: Fixture) -> None:
    assert recover(fx.recorder, older_than=timedelta(0)).interrupted == [fx.sessions["D"]]
    assert _open(fx.store) == set()
    assert_conforms(fx.store, CATALOGUE)


def test_a_rebuild_types_the_summaries_without_an_end_and_marks_the_catalogue(
    fx: Fixture,
) -> None:
    _untype(fx.store)
    fx.store.clear(CATALOGUE)
    rebuild(fx.store)
    assert _open(fx.store) == {_entry(fx, "D")}
    assert fx.store.query(_MARK, {"g": CATALOGUE})
    assert_conforms(fx.store, CATALOGUE)


def test_a_rollup_types_a_catalogue_from_before_the_type_once(fx: Fixture) -> None:
    _untype(fx.store)
    assert rollup(fx.store).typed == 1
    assert _open(fx.store) == {_entry(fx, "D")}
    assert fx.store.query(_MARK, {"g": CATALOGUE})
    # marked: the next rollup does not look again (a summary untyped by hand stays so)
    fx.store.write([], remove=[open_mark(IRI.trusted(_entry(fx, "D")), CATALOGUE)])
    assert rollup(fx.store).typed == 0 and _open(fx.store) == set()


def test_a_session_that_ended_while_the_rollup_typed_is_not_left_open(fx: Fixture) -> None:
    # what a session ending between the rollup's read and its write leaves: the end removed
    # a type that was not there yet, then the rollup typed the ended summary open
    _untype(fx.store)
    fx.store.write([open_mark(IRI.trusted(_entry(fx, "A")), CATALOGUE)])
    assert rollup(fx.store).typed == 1  # D; A's type taken off again
    assert _open(fx.store) == {_entry(fx, "D")}
    assert_conforms(fx.store, CATALOGUE)


def test_a_session_end_types_a_catalogue_from_before_the_type_when_a_day_is_over(
    fx: Fixture,
) -> None:
    _untype(fx.store)
    # two days on, a day the fixture's sessions ended on is over and not totalled yet
    result = keep_up(fx.store, now=datetime.now(UTC) + timedelta(days=2))
    assert result is not None and result.typed == 1 and result.totalled
    assert _open(fx.store) == {_entry(fx, "D")}
    assert fx.store.query(_MARK, {"g": CATALOGUE})
