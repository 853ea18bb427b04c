"""Recovery: interrupted is a state, not silence.

A process that dies leaves its session open and maybe activities that started and
never ended. Each is simulated here exactly as a killed process leaves the store: the
events it had written, and nothing else (the crash harness does it with real
SIGKILLs). Recovery ends such sessions as interrupted, marks their started
activities, seals them (and sessions that ended unsealed), and the pack, ``trails
sessions``, ``trails recover`` and ``verify`` name them. On the embedded store it runs
by itself when the next recorder is configured over the store, from the register of
open sessions configured recorders keep (so it reads only what was left open); on a
server it is explicit and by age, so live writers keep their sessions.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.servers import BACKENDS, backend_store

from trails.audit.querypack import get_query
from trails.audit.report import render_report
from trails.catalogue.entries import rebuild
from trails.cli import main
from trails.errors import UserError
from trails.evidence.recovery import (
    interrupted_sessions,
    recover,
    recover_registered,
    register_iri,
    register_open_sessions,
)
from trails.evidence.verify import verify
from trails.kernel import Context
from trails.prov import Recorder
from trails.prov.events import (
    CapabilityStarted,
    PlanRunStarted,
    SessionEnded,
    SessionStarted,
    Terminated,
)
from trails.store import IRI, Solutions, Store, open_store, to_python
from trails.store.oxigraph import OxigraphStore
from trails.testing import assert_conforms, assert_prov_readable

ALICE = "did:local:alice"
T = "https://w3id.org/trails/ns#"


def NOW() -> datetime:
    return datetime.now(UTC)


def rows(store: Store, name: str, **values: object) -> list[dict[str, Any]]:
    result = get_query(name).run(store, **values)
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in r.items()} for r in result]


def crashed_writer(recorder: Recorder, at: datetime) -> dict[str, IRI]:
    """What a killed process leaves: a session with a run, a side-effecting call that
    started, a run stopped by a budget whose end was not written; a session that ended
    but was never sealed; a session closed and sealed normally."""
    m = recorder.minter
    s, run, run2, call = m.session(), m.activity(), m.activity(), m.activity()
    recorder.record(SessionStarted(session=s, principal=ALICE, started=at))
    for activity, seconds in ((run, 1), (run2, 2)):
        recorder.record(
            PlanRunStarted(
                session=s,
                activity=activity,
                parent=None,
                principal=ALICE,
                strategy="react",
                goal="pay the invoice",
                started=at + timedelta(seconds=seconds),
            )
        )
    recorder.record(
        Terminated(
            session=s,
            activity=run2,
            kind="budget",
            reason="max_cost",
            limit=1.0,
            observed=1.5,
            at=at + timedelta(seconds=3),
        )
    )
    recorder.record(
        CapabilityStarted(
            session=s,
            activity=call,
            parent=run,
            principal=ALICE,
            capability_id="payments.send",
            started=at + timedelta(seconds=4),
            inputs={"amount": 120},
        )
    )
    unsealed = m.session()
    recorder.record(SessionStarted(session=unsealed, principal=ALICE, started=at))
    recorder.record(SessionEnded(session=unsealed, ended=at + timedelta(seconds=1)))
    return {"open": s, "run": run, "run2": run2, "call": call, "unsealed": unsealed}


def test_next_recorder_on_the_embedded_store_recovers_it(tmp_path: Path) -> None:
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
    first = OxigraphStore(tmp_path / "db")
    with Context.open(ALICE, recorder=Recorder.from_settings(store=first)) as ctx:
        closed = ctx.session  # a normal, sealed session before the crash
    crashed = Recorder(first)
    register_open_sessions(crashed)  # it keeps the register but has no sealer: as if killed
    made = crashed_writer(crashed, at)  # before sealing
    first.close()

    store = OxigraphStore(tmp_path / "db")  # the next process takes the lock
    try:
        recorder = Recorder.from_settings(store=store)  # recovers, once
        live = Context.open(ALICE, recorder=recorder)  # this process's own session
        assert recover(recorder).interrupted == []  # nothing left; the live one is too recent
        report = verify(store)
        assert report.ok, report.findings
        assert report.open_sessions == [live.session]
        assert interrupted_sessions(store) == [made["open"]]
        sessions = {r["session"]: r for r in rows(store, "sessions")}
        assert sessions[made["open"]]["endStatus"] == "interrupted"
        # ended at the last moment the session is known alive: the call's start
        assert sessions[made["open"]]["ended"] == at + timedelta(seconds=4)
        assert sessions[made["unsealed"]]["endStatus"] == "ok"
        assert sessions[closed]["endStatus"] == "ok"
        assert "ended" not in sessions[live.session]

        found = rows(store, "interrupted")
        assert [(r["activity"], str(r["type"]).removeprefix(T)) for r in found] == [
            (made["open"], "Session"),
            (made["run"], "PlanRun"),
            (made["run2"], "PlanRun"),
            (made["call"], "CapabilityInvocation"),
        ]
        call = found[-1]
        assert call["capability"] == "payments.send" and call["sideEffects"] is True
        assert call["lastRecord"] == at + timedelta(seconds=4)
        assert "stopped before ending it" in call["reason"]
        assert call["detected"] > call["lastRecord"]
        assert rows(store, "interrupted", session=made["unsealed"]) == []
        later = datetime.now(UTC) + timedelta(hours=1)
        assert rows(store, "interrupted", since=later) == []
        assert len(rows(store, "interrupted", until=later)) == 4
        assert rows(store, "interrupted", until=at) == []

        kinds = {
            (r["run"], str(r["kind"]).removeprefix(T))
            for r in rows(store, "terminations", session=made["open"])
        }
        assert kinds == {
            (made["open"], "Interruption"),
            (made["run"], "Interruption"),
            (made["run2"], "BudgetBreach"),  # its own termination is kept
            (made["call"], "Interruption"),
        }
        html = render_report(store, made["open"])
        assert "interrupted" in html and "Interruption" in html  # status, termination
        assert str(at + timedelta(seconds=4))[:19] in html  # the end time
        live.close()
        assert verify(store).ok
        assert_conforms(store)
        assert_prov_readable(store)
    finally:
        store.close()


def test_server_recovery_is_by_age_and_spares_live_writers(store: Store) -> None:
    recorder = Recorder.from_settings(store=store)
    old = datetime.now(UTC) - timedelta(hours=3)
    made = crashed_writer(recorder, old)
    live = Context.open(ALICE, recorder=recorder)  # recorded in just now
    with pytest.raises(UserError, match="older_than"):
        recover(recorder)  # a memory or remote store proves nothing about its writers
    with pytest.raises(UserError):
        recover(recorder, older_than=timedelta(seconds=-1))
    report = recover(recorder, older_than=timedelta(hours=1))
    assert report.interrupted == [made["open"]]
    assert sorted(report.activities) == sorted([made["run"], made["run2"], made["call"]])
    assert report.skipped == [live.session]
    assert report.sealed == []  # the sealer sealed the unsealed-looking one when it ended
    again = recover(recorder, older_than=timedelta(hours=1))
    assert again.interrupted == [] and again.skipped == [live.session]
    live.close()
    assert verify(store).ok


def test_ended_but_unsealed_sessions_are_sealed(store: Store) -> None:
    old = datetime.now(UTC) - timedelta(hours=3)
    made = crashed_writer(Recorder(store), old)  # nothing sealed at all: no ledger yet
    report = recover(Recorder(store), older_than=timedelta(hours=1))
    assert report.sealed == [made["unsealed"]]
    assert report.interrupted == [made["open"]]
    result = verify(store)
    assert result.ok and result.graphs_checked == 2


def test_trails_recover_on_an_embedded_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db"
    disk = OxigraphStore(db)
    made = crashed_writer(Recorder(disk), datetime.now(UTC) - timedelta(minutes=1))
    disk.close()
    assert main(["--store", str(db), "recover"]) == 0
    out = capsys.readouterr().out
    assert f"INTERRUPTED {made['open']}" in out
    assert f"SEALED      {made['unsealed']}" in out
    assert (
        "1 session(s) ended as interrupted and sealed (3 activities cut short), "
        "1 that had ended unsealed now sealed, 0 left open, 0 erasure(s) finished"
    ) in out
    assert main(["--store", str(db), "recover", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "interrupted": [],
        "activities": [],
        "sealed": [],
        "skipped": [],
        "erasures": [],
    }
    assert main(["--store", str(db), "verify"]) == 0
    assert main(["--store", str(db), "sessions"]) == 0
    assert "interrupted" in capsys.readouterr().out


@pytest.mark.parametrize("age", ["soon", "-5m", "5 minutes", ""])
def test_trails_recover_refuses_bad_ages(age: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", "memory:", "recover", f"--older-than={age}"]) == 2
    assert "--older-than" in capsys.readouterr().err


def test_trails_recover_on_a_shared_store_needs_an_age(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--store", "memory:", "recover"]) == 2
    assert "older-than" in capsys.readouterr().err


@pytest.mark.remote
def test_trails_recover_on_a_sparql_server(
    remote_store: Store, oxigraph_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    made = crashed_writer(Recorder(remote_store), datetime.now(UTC) - timedelta(hours=2))
    live = Context.open(ALICE, recorder=Recorder.from_settings(store=remote_store))
    assert main(["--store", oxigraph_server, "recover", "--older-than", "1h", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["interrupted"] == [made["open"]]
    assert report["sealed"] == [made["unsealed"]]
    assert report["skipped"] == [live.session]
    live.close()
    assert main(["--store", oxigraph_server, "verify"]) == 0
    assert interrupted_sessions(open_store(oxigraph_server)) == [made["open"]]


def test_automatic_recovery_can_be_turned_off(tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text("[audit]\nrecover = false\n")  # the cwd's settings
    disk = OxigraphStore(tmp_path / "db")
    crashed = Recorder(disk)
    register_open_sessions(crashed)
    made = crashed_writer(crashed, datetime.now(UTC) - timedelta(minutes=1))
    disk.close()
    store = OxigraphStore(tmp_path / "db")
    try:
        Recorder.from_settings(store=store)
        assert interrupted_sessions(store) == []
        rebuild(store)  # the crashed writer recorded without the sealer: no catalogue entries
        assert {r["session"]: "ended" in r for r in rows(store, "sessions")}[made["open"]] is False
        assert recover(Recorder(store)).interrupted == [made["open"]]  # on demand still works
    finally:
        store.close()


def _listed(store: Store, recorder: Recorder) -> set[str]:
    result = store.query(
        "SELECT ?s $g WHERE { GRAPH $g { $g ?p ?s } }", {"g": register_iri(recorder)}
    )
    assert isinstance(result, Solutions)
    return {str(row["s"]) for row in result}


def test_recovery_on_open_reads_only_the_sessions_left_open(tmp_path: Path) -> None:
    first = OxigraphStore(tmp_path / "db")
    recorder = Recorder.from_settings(store=first)
    for _ in range(30):  # ended and sealed: each leaves the register in the write that ends it
        with Context.open(ALICE, recorder=recorder):
            pass
    left = Context.open(ALICE, recorder=recorder)
    assert _listed(first, recorder) == {str(left.session)}
    bare = crashed_writer(Recorder(first), datetime.now(UTC) - timedelta(minutes=2))
    first.close()
    left.lifecycle = None  # the process "died": nothing ends it

    store = OxigraphStore(tmp_path / "db")
    try:
        reads: list[str] = []
        query = store.query

        def counting(sparql: str, *args: Any, **kwargs: Any) -> Any:
            reads.append(sparql)
            return query(sparql, *args, **kwargs)

        store.query = counting  # type: ignore[method-assign]
        again = Recorder.from_settings(store=store)
        store.query = query  # type: ignore[method-assign]
        assert interrupted_sessions(store) == [left.session]  # the listed one, not the bare one
        assert _listed(store, again) == set()
        # a handful of reads about the one listed session: none scans the 30 others
        # (and one look at the catalogue's days that are over, for their cost totals)
        assert len(reads) <= 7 and not any("GRAPH ?session" in r for r in reads), reads
        # a bare recorder lists nothing: the explicit, store-wide recovery finds it
        assert recover(again).interrupted == [bare["open"]]
        assert recover_registered(again).interrupted == []
        assert verify(store).ok
    finally:
        store.close()


def test_memory_stores_are_never_recovered_automatically(store: Store) -> None:
    made = crashed_writer(Recorder(store), datetime.now(UTC) - timedelta(days=1))
    Recorder.from_settings(store=store)
    assert interrupted_sessions(store) == []
    recover(Recorder.from_settings(store=store), older_than=timedelta(hours=1))
    assert interrupted_sessions(store) == [made["open"]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_recovery_by_age_on_every_backend(request: pytest.FixtureRequest, backend: str) -> None:
    for store in backend_store(request, backend):
        recorder = Recorder.from_settings(store=store)
        made = crashed_writer(recorder, datetime.now(UTC) - timedelta(hours=3))
        recorder.record(  # an open session written to recently: a live writer's
            SessionStarted(session=recorder.minter.session(), principal=ALICE, started=NOW())
        )
        report = recover(recorder, older_than=timedelta(hours=1))
        assert report.interrupted == [made["open"]] and len(report.skipped) == 1
        assert sorted(report.activities) == sorted([made["run"], made["run2"], made["call"]])
        assert interrupted_sessions(store) == [made["open"]]
        assert [str(r["type"]).removeprefix(T) for r in rows(store, "interrupted")] == [
            "Session",
            "PlanRun",
            "PlanRun",
            "CapabilityInvocation",
        ]
        later = NOW() + timedelta(hours=1)
        assert rows(store, "interrupted", since=later) == []
        assert len(rows(store, "interrupted", until=later)) == 4
        assert rows(store, "interrupted", until=NOW() - timedelta(hours=1)) == []
        result = verify(store)
        assert result.ok, result.findings
        recorder.record(SessionEnded(session=report.skipped[0], ended=NOW()))
