"""A session's outcome is part of its catalogue entry, and every listing says it.

A ReAct run whose provider failed ("provider down") ends its session ``ok``: the
session itself ended cleanly. Its outcome is ``failed``, and ``trails sessions``
(table, CSV, ``--status``), the pack's ``sessions`` query, ``trails logs``, the
report and the cost figures say so; an entry written before outcomes were reads the
same; a session that never ended is ``open`` and one recovery ended ``interrupted``.
The store is recorded by a process of its own and read by the real ``trails``.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from tests.known_store import ALICE, Fixture

from trails.catalogue.entries import (
    catalogue_iri,
    entry_iri,
    existing_entry,
    session_outcome,
    summarise,
)
from trails.context import Context
from trails.evidence.recovery import recover
from trails.prov.iri import Minter
from trails.prov.vocab import T
from trails.store import Solutions, Store, open_store
from trails.store.terms import IRI
from trails.testing import assert_conforms

ROOT = Path(__file__).resolve().parents[2]
TRAILS = str(Path(sys.executable).with_name("trails"))
CATALOGUE = catalogue_iri(Minter())


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    env.pop("COLUMNS", None)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path, "TRAILS_FORBID_REAL_MODELS": "1"}


def trails(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TRAILS, *args], cwd=cwd, env=environment(), capture_output=True, text=True, check=False
    )


def table_rows(done: subprocess.CompletedProcess[str]) -> list[dict[str, str]]:
    assert done.returncode == 0, done.stderr
    return list(csv.DictReader(io.StringIO(done.stdout)))


def record(folder: Path) -> dict[str, str]:
    """The three sessions (failed, ok, stopped) recorded into ``folder``; by key."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.catalogue.record_outcomes", str(folder)],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = [line.split() for line in done.stdout.splitlines() if line.strip()]
    assert [(key, stop) for key, _, stop in found] == [
        ("failed", "error"),
        ("ok", "goal_achieved"),
        ("stopped", "max_steps"),
    ]
    return {key: session for key, session, _ in found}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    home = tmp_path_factory.mktemp("outcomes")
    return home, record(home / "store")


def outcomes(home: Path, *args: str) -> dict[str, tuple[str, str]]:
    """``trails sessions`` as CSV: each session's (outcome, reason)."""
    found = table_rows(trails("--store", "store", "sessions", "-f", "csv", *args, cwd=home))
    return {r["session"]: (r["outcome"], r["outcomeReason"]) for r in found}


def test_a_run_whose_provider_failed_is_failed_in_trails_sessions(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    home, s = recorded
    said = outcomes(home)
    assert {k: said[v][0] for k, v in s.items()} == {
        "failed": "failed",
        "ok": "ok",
        "stopped": "stopped",
    }
    assert said[s["failed"]][1] == "a run stopped: error: provider down"
    assert said[s["stopped"]][1] == "a run stopped at a limit: max_steps"
    # the session itself ended ok: the other formats still say so, apart from the outcome
    csv_rows = table_rows(trails("--store", "store", "sessions", "-f", "csv", cwd=home))
    assert {r["session"]: r["endStatus"] for r in csv_rows}[s["failed"]] == "ok"
    # the table: the outcome beside the session, no "ok" for the failed one
    shown = trails("--store", "store", "sessions", cwd=home)
    assert shown.returncode == 0, shown.stderr
    line = next(x for x in shown.stdout.splitlines() if x.startswith(s["failed"]))
    assert line.split()[:2] == [s["failed"], "failed"] and " ok " not in line
    assert shown.stdout.splitlines()[0].split()[:2] == ["session", "outcome"]


@pytest.mark.parametrize(
    ("status", "keys"),
    [
        ("error", ["failed"]),
        ("failed", ["failed"]),
        ("ok", ["ok"]),
        ("stopped", ["stopped"]),
        ("interrupted", []),
        ("open", []),
    ],
)
def test_status_filters_by_outcome(
    recorded: tuple[Path, dict[str, str]], status: str, keys: list[str]
) -> None:
    home, s = recorded
    assert sorted(outcomes(home, "--status", status)) == sorted(s[k] for k in keys)
    # the pack's own query (what the endpoint and `trails query` run) filters the same way
    done = trails(
        "--store",
        "store",
        "query",
        "sessions",
        "--param",
        f"status={status}",
        "-f",
        "csv",
        cwd=home,
    )
    assert sorted(r["session"] for r in table_rows(done)) == sorted(s[k] for k in keys)
    assert all(
        r["outcome"] == ("failed" if status == "error" else status) for r in table_rows(done)
    )


def test_trails_logs_and_the_report_say_failed(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    home, s = recorded
    logs = trails("--store", "store", "logs", s["failed"], cwd=home)
    assert logs.returncode == 0, logs.stderr
    first = logs.stdout.splitlines()[0]
    assert first.split()[:3] == ["#", s["failed"], "failed"]
    assert "failed: a run stopped: error: provider down" in logs.stdout
    ok = trails("--store", "store", "logs", s["ok"], cwd=home)
    assert ok.stdout.splitlines()[0].split()[:3] == ["#", s["ok"], "ok"]
    out = tmp_path / "report.html"
    done = trails("--store", "store", "report", s["failed"], "--out", str(out), cwd=home)
    assert done.returncode == 0, done.stderr
    assert '<span class="badge s-failed">failed</span>' in out.read_text()


def test_a_failed_completion_is_failed_not_unpriced(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    home, s = recorded
    by_model = table_rows(
        trails("--store", "store", "query", "cost-by-model", "-f", "csv", cwd=home)
    )
    # two completions priced by the mock (0 USD); the failed one has no price to miss
    assert [(r["modelId"], r["completions"], r["unpriced"]) for r in by_model] == [
        ("mock", "3", "0")
    ]
    days = table_rows(
        trails("--store", "store", "query", "operations-by-day", "-f", "csv", cwd=home)
    )
    assert [(r["failures"], r["unpriced"]) for r in days] == [("1", "0")]
    out = tmp_path / "report.html"
    trails("--store", "store", "report", s["failed"], "--out", str(out), cwd=home)
    # the cost table: one failed completion, none unpriced
    assert '<td class="num">1</td><td class="num">0</td>' in out.read_text()


def test_the_entries_conform_and_read_as_prov(recorded: tuple[Path, dict[str, str]]) -> None:
    from trails.testing import assert_prov_constraints, assert_prov_readable, shacl_report

    home, _ = recorded
    store = open_store(str(home / "store"), read_only=True)
    try:
        conforms, report = shacl_report(store)
        assert conforms, report
        assert_prov_readable(store)
        assert_prov_constraints(store)
    finally:
        store.close()


def test_an_entry_written_before_outcomes_reads_the_same(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    home, s = recorded
    shutil.copytree(home / "store", tmp_path / "store")
    store = open_store(str(tmp_path / "store"))
    try:
        found = store.query(
            "SELECT ?s ?p ?o $g $a $b WHERE { GRAPH $g { ?s ?p ?o FILTER(?p IN ($a, $b)) } }",
            {"g": CATALOGUE, "a": T.sessionOutcome, "b": T.outcomeReason},
        )
        assert isinstance(found, Solutions) and len(found.rows) == 6
        from trails.store.terms import Quad

        store.write([], remove=[Quad(*row[:3], CATALOGUE) for row in found.rows])  # type: ignore[misc]
        # and counted the failed completion unpriced, as trails did then
        failed = IRI(s["failed"])
        rows = store.query("SELECT ?s ?p ?o $g WHERE { GRAPH $g { ?s ?p ?o } }", {"g": failed})
        assert isinstance(rows, Solutions)
        then = summarise(
            failed, [r[:3] for r in rows.rows], CATALOGUE, is_sealed=True, before_outcomes=True
        )
        now = [
            q for q in existing_entry(store, failed, CATALOGUE) if q.predicate == T.unpricedCount
        ]
        old = [q for q in then if q.predicate == T.unpricedCount]
        assert sorted(map(str, now)) != sorted(map(str, old))
        store.write(old, remove=now)
    finally:
        store.close()
    checked = trails("verify", "--store", "store", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr  # no finding: not tampered
    said = outcomes(tmp_path)
    assert {k: said[v][0] for k, v in s.items()} == {
        "failed": "failed",
        "ok": "ok",
        "stopped": "stopped",
    }
    assert sorted(outcomes(tmp_path, "--status", "error")) == [s["failed"]]
    logs = trails("--store", "store", "logs", s["failed"], cwd=tmp_path)
    assert logs.stdout.splitlines()[0].split()[2] == "failed"


def test_open_until_it_ends_and_interrupted_when_recovery_ends_it(fx: Fixture) -> None:
    def stored(session: str) -> list[str]:
        found = fx.store.query(
            "SELECT ?o $e WHERE { GRAPH ?c { $e <https://w3id.org/trails/ns#sessionOutcome> ?o } }",
            {"e": entry_iri(IRI(session))},
        )
        assert isinstance(found, Solutions)
        return [str(r[0].value) for r in found.rows]  # type: ignore[union-attr]

    assert stored(fx.sessions["D"]) == ["open"]  # never ended
    ctx = Context.open(ALICE, recorder=fx.recorder)
    assert stored(str(ctx.session)) == ["open"]
    assert_conforms(fx.store, CATALOGUE)
    ctx.close()
    assert stored(str(ctx.session)) == ["ok"]
    assert session_outcome(fx.store, IRI(str(ctx.session)))[0] == "ok"
    recover(fx.recorder, older_than=timedelta(0))
    assert stored(fx.sessions["D"]) == ["interrupted"]
    assert session_outcome(fx.store, IRI(fx.sessions["D"])) == (
        "interrupted",
        "the session was cut short before it ended",
    )
    assert_conforms(fx.store, CATALOGUE)


def test_a_store_without_entries_gives_the_outcome_from_the_graph(store: Store) -> None:
    from trails.agent import Session
    from trails.agent.planners import react
    from trails.llm import LLMClient, ModelServerError

    session = Session(principal=ALICE, store=store)
    client = LLMClient.mock(
        response=[ModelServerError("provider down", provider="mock", status=503)]
    )
    react.run("Go.", llm=client, session=session)
    session.close()
    store.clear(CATALOGUE)  # as with [audit] seal = false: no entry at all
    assert session_outcome(store, IRI(str(session.iri))) == (
        "failed",
        "a run stopped: error: provider down",
    )


FAILING = """
from trails import capability


@capability(id="notes.fail", description="a call that always fails")
def fail(text: str) -> str:
    raise RuntimeError("the notes service is down")
"""


def test_a_session_whose_only_mcp_call_failed_is_failed(tmp_path: Path) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    (tmp_path / "failcaps.py").write_text(FAILING)
    params = StdioServerParameters(
        command=TRAILS,
        args=["--store", "store", "mcp", "serve", "--import", "failcaps", "--principal", ALICE],
        cwd=str(tmp_path),
        env=environment(),
    )

    async def call() -> bool:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("notes.fail", {"text": "x"})
                return bool(result.is_error)

    assert anyio.run(call)
    [(session, (outcome, reason))] = outcomes(tmp_path).items()
    assert outcome == "failed" and "1 call(s) failed" in reason and "notes.fail" in reason
    assert list(outcomes(tmp_path, "--status", "failed")) == [session]
    assert outcomes(tmp_path, "--status", "ok") == {}
    logs = trails("--store", "store", "logs", session, cwd=tmp_path)
    assert logs.stdout.splitlines()[0].split()[:3] == ["#", session, "failed"]


def test_a_run_a_fallback_recovered_is_ok_and_one_it_did_not_is_failed(store: Store) -> None:
    from trails.agent import Session
    from trails.llm import LLMClient, ModelServerError

    def fallen(second: object) -> str:
        model = LLMClient.mock(
            response=[ModelServerError("planner model down", provider="mock", status=503), second]
        )
        session = Session.new(
            strategy="plan_and_execute", fallback="react", principal=ALICE, llm=model
        )
        session.run("What is 2 + 2?")
        session.close()
        return str(session.iri)

    recovered = fallen('{"thought": "done", "action": "finish", "final_answer": "It is 4."}')
    assert session_outcome(store, IRI(recovered)) == (
        "ok",
        "the session ended ok and its runs reached their goal",
    )
    lost = fallen(ModelServerError("react model down too", provider="mock", status=503))
    outcome, reason = session_outcome(store, IRI(lost))
    assert outcome == "failed" and "react model down too" in reason
