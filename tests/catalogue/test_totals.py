"""Daily cost totals: the cost queries read them for days that are over, and they never go stale.

The audit fixture's sessions end on four days of March 2025. The cost queries
must give the answers the full session graphs give in every state of the
catalogue: as recorded (no totals), after ``rollup`` (totals), after a write
that changes a totalled day (its totals removed in that write), in a catalogue
begun before days existed (undated) and after that catalogue is rolled up.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from tests.known_store import ALICE, BOB, Fixture, late_completion

from trails.catalogue.entries import catalogue_iri, dated_mark, day_iri, entry_iri
from trails.catalogue.totals import rollup
from trails.prov import Recorder
from trails.prov.iri import Minter
from trails.prov.vocab import T
from trails.store import Store
from trails.store.terms import IRI, Quad, to_python

from .test_catalogue import _cli, _full, _rows, _same

CATALOGUE = catalogue_iri(Minter())
DAYS = (date(2025, 3, 1), date(2025, 3, 2), date(2025, 3, 3))
LATER = datetime(2025, 4, 1, tzinfo=UTC)  # every day recorded is over


@dataclass
class Days:
    store: Store
    recorder: Recorder
    sessions: dict[str, str]


def _run(recorder: Recorder, principal: str, model: str, usd: float | None, tag: str) -> str:
    from trails.agent import Session
    from trails.llm import LLMClient
    from trails.llm.types import Response

    finish = '```json\n{"thought": "done", "action": "finish", "action_input": {}, "final_answer": "ok"}\n```'
    llm = LLMClient.mock(
        [Response(text=finish, model=model, input_tokens=100, output_tokens=10, usd=usd)],
        model=model,
    )
    session = Session.new(strategy="react", principal=principal, recorder=recorder)
    session.run(f"task {tag}", llm=llm, max_steps=2)
    session.close()
    return str(session.iri)


@pytest.fixture
def days(store: Store) -> Days:
    """Sessions ended on three days of March 2025: two models, two principals, one unpriced."""
    import time_machine

    from trails.config import load_settings

    recorder = Recorder.from_settings(load_settings(), store=store)
    sessions: dict[str, str] = {}
    for n, day in enumerate(DAYS):
        with time_machine.travel(datetime(day.year, day.month, day.day, 10, tzinfo=UTC), tick=True):
            sessions[f"a{n}"] = _run(recorder, ALICE, "claude-haiku", 0.01 * (n + 1), f"a{n}")
            sessions[f"b{n}"] = _run(recorder, BOB, "gpt-4o", 0.5 if n else None, f"b{n}")
    return Days(store, recorder, sessions)


def _agree(store: Store) -> None:
    for name in ("cost-by-model", "cost-by-principal"):
        _same(_rows(store, name), _full(store, name))
    _same(
        _rows(store, "cost-by-principal", principal=ALICE),
        _full(store, "cost-by-principal", principal=ALICE),
    )
    when = {"since": "2025-03-02T00:00:00Z", "until": "2025-03-04T00:00:00Z"}
    for name in ("cost-by-model", "cost-by-principal"):
        _same(_rows(store, name, **when), _full(store, name, **when))


def _totalled(store: Store) -> set[str]:
    rows = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> "
        "SELECT ?day $g WHERE { GRAPH $g { ?d trails:totalledAt ?at ; trails:day ?day } }",
        {"g": CATALOGUE},
    )
    return {str(r["day"].value) for r in rows}  # type: ignore[union-attr]


def _totals(store: Store) -> int:
    rows = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> "
        "SELECT ?t $g WHERE { GRAPH $g { ?t a trails:DailyTotal } }",
        {"g": CATALOGUE},
    )
    return len(rows)  # type: ignore[arg-type]


def _days(store: Store) -> set[str]:
    rows = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> "
        "SELECT ?day $g WHERE { GRAPH $g { ?e trails:endedOn ?d . ?d trails:day ?day } }",
        {"g": CATALOGUE},
    )
    return {str(r["day"].value) for r in rows}  # type: ignore[union-attr]


def test_every_ended_entry_points_to_its_day(days: Days) -> None:
    assert _days(days.store) == {"2025-03-01", "2025-03-02", "2025-03-03"}
    mark = "ASK { GRAPH $g { $g <https://w3id.org/trails/ns#entriesDated> true } }"
    assert days.store.query(mark, {"g": CATALOGUE})  # the first session end looked
    _agree(days.store)


def test_sessions_that_end_keep_the_totals_of_the_days_that_are_over(days: Days) -> None:
    # no rollup ran: the sessions that ended on 2 and 3 March totalled the days before theirs
    assert _totalled(days.store) == {"2025-03-01", "2025-03-02"}
    assert _running(days.store) == date(2025, 3, 2)  # one row per agent over both days
    _agree(days.store)  # and the answers read from them equal the full graphs'
    result = rollup(days.store, now=datetime(2025, 3, 3, 12, tzinfo=UTC))
    assert result.totalled == []  # nothing left to do
    assert result.open_days == [date(2025, 3, 3)]  # not over: still read from its entries
    assert result.running_through == date(2025, 3, 2)
    again = rollup(days.store, now=LATER)
    assert [d.isoformat() for d in again.totalled] == ["2025-03-03"]
    assert again.running_through == date(2025, 3, 3)
    assert rollup(days.store, now=LATER).totalled == []  # a totalled day is left as it is
    _agree(days.store)
    # the running totals are what the query reads: changing one changes the answer
    [cost] = [
        q
        for q in days.store.query(
            "PREFIX trails: <https://w3id.org/trails/ns#> "
            "SELECT ?t ?usd $g $a WHERE { GRAPH $g { ?t a trails:RunningTotal ;"
            " trails:totalCostUSD ?usd ; trails:totalAgent $a } }",
            {"g": CATALOGUE, "a": Minter().agent(BOB)},
        )
    ]
    before = {r["principal"]: r["costUSD"] for r in _rows(days.store, "cost-by-principal")}
    days.store.write(
        [Quad(IRI.trusted(str(cost["t"])), T.totalCostUSD, _double(100.0), CATALOGUE)],
        remove=[Quad(IRI.trusted(str(cost["t"])), T.totalCostUSD, cost["usd"], CATALOGUE)],
    )
    after = {r["principal"]: r["costUSD"] for r in _rows(days.store, "cost-by-principal")}
    assert float(after[BOB]) == pytest.approx(float(before[BOB]) - float(cost["usd"].value) + 100.0)


def _double(value: float) -> Any:
    from trails.store.terms import literal

    return literal(value)


def test_a_late_write_removes_the_totals_of_its_day(fx: Fixture) -> None:
    rollup(fx.store, now=datetime.now(UTC) + timedelta(days=2))
    assert _totalled(fx.store) == _days(fx.store) != set()
    ended = {str(d) for d in _entry_days(fx.store, fx.sessions["B"])}
    fx.recorder.record(late_completion(fx, "B", BOB))
    # B's day lost its totals in the write that changed B's entry; the others kept theirs
    gone = {str(day_iri(CATALOGUE, date.fromisoformat(d))) for d in _days(fx.store)} - {
        str(day_iri(CATALOGUE, date.fromisoformat(d))) for d in _totalled(fx.store)
    }
    assert gone == ended
    assert _running(fx.store) is None  # they covered that day: removed in the same write
    _agree(fx.store)
    assert len(rollup(fx.store, now=datetime.now(UTC) + timedelta(days=2)).totalled) == 1
    assert _running(fx.store) == datetime.now(UTC).date()
    _agree(fx.store)


def _running(store: Store) -> date | None:
    from trails.catalogue.days import running_quads

    through, quads = running_quads(store, CATALOGUE)
    assert (through is None) == (not quads)
    return through


def _entry_days(store: Store, session: str) -> list[Any]:
    rows = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> "
        "SELECT ?d $g $e WHERE { GRAPH $g { $e trails:endedOn ?d } }",
        {"g": CATALOGUE, "e": entry_iri(session)},
    )
    return [r["d"] for r in rows]  # type: ignore[union-attr]


def test_recovery_ending_a_session_on_a_totalled_day_removes_its_totals(fx: Fixture) -> None:
    from trails.catalogue.entries import day_quads
    from trails.evidence.recovery import recover
    from trails.store.terms import literal

    # D never ended; recovery ends it at the fixture clock's time, on 2025-03-04, a day that
    # a rollup with a clock running ahead has already totalled (as empty)
    ahead = date(2025, 3, 4)
    fx.store.write(
        [
            *day_quads(CATALOGUE, ahead),
            Quad(day_iri(CATALOGUE, ahead), T.totalledAt, literal(LATER), CATALOGUE),
        ]
    )
    assert ahead.isoformat() in _totalled(fx.store)
    report = recover(fx.recorder, older_than=timedelta(0))
    assert fx.sessions["D"] in report.interrupted
    assert [str(d) for d in _entry_days(fx.store, fx.sessions["D"])] == [
        str(day_iri(CATALOGUE, ahead))
    ]
    # its totals (empty) went in the write that ended D; the sealer, seeing a day over with
    # no totals, totalled it again right after, D included
    at = fx.store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> "
        "SELECT ?at $g $d WHERE { GRAPH $g { $d trails:totalledAt ?at } }",
        {"g": CATALOGUE, "d": day_iri(CATALOGUE, ahead)},
    )
    assert [to_python(r["at"]) for r in at] != [LATER]  # type: ignore[union-attr]
    _agree(fx.store)


def test_an_undated_catalogue_is_read_whole_until_rollup_dates_it(days: Days) -> None:
    links = [
        Quad(IRI.trusted(str(r["e"])), T.endedOn, r["d"], CATALOGUE)  # type: ignore[arg-type]
        for r in days.store.query(  # type: ignore[union-attr]
            "PREFIX trails: <https://w3id.org/trails/ns#> "
            "SELECT ?e ?d $g WHERE { GRAPH $g { ?e trails:endedOn ?d } }",
            {"g": CATALOGUE},
        )
    ]
    assert links
    totals = [
        Quad(IRI.trusted(str(r["s"])), IRI.trusted(str(r["p"])), r["o"], CATALOGUE)  # type: ignore[arg-type]
        for r in days.store.query(  # type: ignore[union-attr]
            "PREFIX trails: <https://w3id.org/trails/ns#> "
            "SELECT ?s ?p ?o $g WHERE { GRAPH $g { { ?s trails:totalledAt|trails:runningThrough ?o"
            " BIND(IF(EXISTS { ?s trails:totalledAt ?o }, trails:totalledAt,"
            " trails:runningThrough) AS ?p) } UNION"
            " { ?s a ?c ; ?p ?o VALUES ?c { trails:DailyTotal trails:RunningTotal } } } }",
            {"g": CATALOGUE},
        )
    ]
    counts = [
        Quad(IRI.trusted(str(r["s"])), IRI.trusted(str(r["p"])), r["o"], CATALOGUE)  # type: ignore[arg-type]
        for r in days.store.query(  # type: ignore[union-attr]
            "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?s ?p ?o $g WHERE { GRAPH $g {"
            " ?s ?p ?o VALUES ?p { trails:sessionCount trails:runningSessions } } }",
            {"g": CATALOGUE},
        )
    ]
    assert counts  # the days' session counts, kept with their totals
    # as a catalogue before days: no days, no totals
    days.store.write([], remove=[*links, *totals, *counts, dated_mark(CATALOGUE)])
    assert _totalled(days.store) == set() and _running(days.store) is None
    assert _days(days.store) == set()
    _agree(days.store)
    result = rollup(days.store, now=LATER)
    assert result.dated == len(links)
    assert _days(days.store) == {"2025-03-01", "2025-03-02", "2025-03-03"}
    assert _totalled(days.store) == _days(days.store)
    _agree(days.store)


def test_retention_removing_a_session_removes_its_days_totals(days: Days) -> None:
    from trails.compliance.retention import _remove_structure

    rollup(days.store, now=LATER)
    ended = {str(d) for d in _entry_days(days.store, days.sessions["a1"])}
    assert ended
    _remove_structure(days.store, [days.sessions["a1"]], CATALOGUE)
    left = {str(day_iri(CATALOGUE, date.fromisoformat(d))) for d in _totalled(days.store)}
    assert not ended & left and len(left) == 2
    _agree(days.store)


def test_rollup_command(days: Days, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    status, out, _ = _cli(capsys, "catalogue", "rollup", "--json")
    assert status == 0
    done = json.loads(out)
    # the days before the last sessions' were totalled as those sessions ended
    assert done["totalled"] == ["2025-03-03"] and done["dated"] == 0
    assert _totals(days.store) > 0
    status, out, _ = _cli(capsys, "catalogue", "rollup")
    assert status == 0 and out.startswith("0 days totalled")
    _agree(days.store)
