"""Retention on a store whose sessions span two years (timestamps set by the test): the plan,
its application recorded and sealed, holds skipped and named, the six-month floor, verify
afterwards, and removed values gone from the embedded store's files."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from trails.audit.querypack import get_query
from trails.cli import main
from trails.compliance.holds import place_hold
from trails.compliance.retention import RetentionPolicy, apply, plan
from trails.errors import ConfigError
from trails.evidence import verify
from trails.evidence.seal import install_sealer
from trails.prov import (
    LLMCompleted,
    PlanRunEnded,
    PlanRunStarted,
    Recorder,
    SessionEnded,
    SessionStarted,
)
from trails.store import IRI, Store, open_store

ALICE, BOB, CAROL = "did:local:alice", "did:local:bob", "did:local:carol"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
POLICY = {
    "content_days": 180,
    "structure_days": 365,
    "principals": {CAROL: {"content_days": 30}},
    "planners": {"reflexion": {"structure_days": 400}},
}


def _principal(n: int) -> str:
    return BOB if n in (4, 13) else CAROL if n in (20, 23) else ALICE


def record_two_years(recorder: Recorder) -> list[IRI]:
    """24 sessions, one on the 15th of each month from January 2024 to December 2025; each
    has a run (``reflexion`` for session 11, else ``react``) and one completion whose prompt
    and text are unique to it (``prompt-secret-NN``, ``completion-secret-NN``)."""
    sessions = []
    for n in range(24):
        started = datetime(2024 + n // 12, n % 12 + 1, 15, 10, 0, tzinfo=UTC)
        tick = iter(started + timedelta(seconds=s) for s in range(10))
        principal = _principal(n)
        session = recorder.minter.session(f"s{n:02d}")
        recorder.record(SessionStarted(session=session, principal=principal, started=next(tick)))
        run = recorder.minter.activity()
        recorder.record(
            PlanRunStarted(
                session=session,
                activity=run,
                parent=session,
                principal=principal,
                strategy="reflexion" if n == 11 else "react",
                goal=f"goal-structure-{n:02d}",
                started=next(tick),
            )
        )
        recorder.record(
            LLMCompleted(
                session=session,
                activity=recorder.minter.activity(),
                parent=run,
                principal=principal,
                provider="anthropic",
                model="claude-haiku",
                started=next(tick),
                ended=next(tick),
                messages=[{"role": "user", "content": f"prompt-secret-{n:02d}"}],
                request_hash=f"h{n}",
                text=f"completion-secret-{n:02d}",
                input_tokens=3,
                output_tokens=2,
                usd=0.001,
                step=0,
            )
        )
        recorder.record(
            PlanRunEnded(
                session=session, activity=run, ended=next(tick), stop_reason="goal_achieved"
            )
        )
        recorder.record(SessionEnded(session=session, ended=next(tick)))
        sessions.append(session)
    return sessions


@pytest.fixture
def two_years(store: Store) -> tuple[Recorder, list[IRI]]:
    recorder = Recorder(store)
    install_sealer(recorder)
    sessions = record_two_years(recorder)
    place_hold(recorder, sessions[5], reason="case 5", by="did:local:dpo")
    place_hold(recorder, BOB, reason="regulator letter 4", by="did:local:dpo")
    return recorder, sessions


STRUCTURE = [0, 1, 2, 3, 6, 7, 8, 9, 10]
CONTENT = [11, 12, 14, 15, 16, 17, 20]


def test_plan_lists_content_and_structure_past_their_periods_and_names_holds(
    two_years: tuple[Recorder, list[IRI]],
) -> None:
    recorder, sessions = two_years
    the_plan = plan(recorder.store, recorder.minter, RetentionPolicy.from_table(POLICY), now=NOW)
    found = [(sessions.index(IRI(r.session)), r.what) for r in the_plan.removals]
    # structure past 365 days; session 11 ran reflexion (400 days): only its content goes;
    # content past 180 days, and carol's past 30 (session 20); 4, 5 and 13 are held
    assert found == sorted(
        [(n, "structure") for n in STRUCTURE] + [(n, "content") for n in CONTENT]
    )
    by_n = {sessions.index(IRI(r.session)): r for r in the_plan.removals}
    assert by_n[0].principal == ALICE and by_n[0].started == "2024-01-15T10:00:00+00:00"
    assert "over structure_days = 365 of [retention]" in by_n[0].why
    assert 'content_days = 30 of [retention.principals."did:local:carol"]' in by_n[20].why
    assert "over content_days = 180 of [retention]" in by_n[11].why
    skipped = {sessions.index(IRI(s.removal.session)): s for s in the_plan.skipped}
    assert sorted(skipped) == [4, 5, 13]
    assert skipped[5].removal.what == "structure" and "'case 5'" in skipped[5].describe()
    assert skipped[13].removal.what == "content"
    assert f"principal {BOB} ('regulator letter 4'" in skipped[4].describe()
    # nothing was removed by planning
    assert len(recorder.store.graphs()) >= 24


def test_apply_removes_records_and_seals_and_verify_names_the_removals(
    two_years: tuple[Recorder, list[IRI]],
) -> None:
    recorder, sessions = two_years
    store = recorder.store
    result = apply(
        recorder,
        RetentionPolicy.from_table(POLICY),
        by="did:local:dpo",
        reason="quarterly retention",
        now=NOW,
    )
    assert result.run is not None and len(result.removed) == len(STRUCTURE) + len(CONTENT)
    assert result.content_values == 3 * len(CONTENT)  # the goal, prompt and completion of each
    graphs = set(store.graphs())
    for n in STRUCTURE:
        assert sessions[n] not in graphs
    # the catalogue (trails sessions) lists what the store still holds
    listed = {str(r["session"]) for r in get_query("sessions").run(store)}  # type: ignore[union-attr]
    assert listed.isdisjoint(str(sessions[n]) for n in STRUCTURE)
    assert {str(sessions[n]) for n in CONTENT} <= listed
    dump = store.dump(format="nquads").decode()
    for n in CONTENT:
        assert sessions[n] in graphs
        assert f"completion-secret-{n:02d}" not in dump and f"prompt-secret-{n:02d}" not in dump
        assert f"goal-structure-{n:02d}" not in dump  # a goal is content too
        assert store.query(
            "ASK { GRAPH $g { $g a <https://w3id.org/trails/ns#Session> } }", {"g": sessions[n]}
        )  # the structure stays
    for n in (4, 5, 13, 18, 19, 21, 22, 23):  # held or within their periods
        assert f"completion-secret-{n:02d}" in dump
    # the digests of the removed content stay
    digests = store.query(
        "SELECT (COUNT(?d) AS ?n) $g WHERE { GRAPH $g { ?e <https://w3id.org/trails/ns#sha256> ?d } }"
        " GROUP BY $g",
        {"g": sessions[12]},
    )
    assert int(digests.rows[0][0].value) >= 2  # type: ignore[union-attr]

    report = verify(store)
    assert report.ok, report.findings
    removed = {(sessions.index(IRI(r.graph)), r.part) for r in report.removed}
    assert removed == {(n, "structure") for n in STRUCTURE} | {(n, "content") for n in CONTENT}
    first = next(r for r in report.removed if r.graph == sessions[0])
    assert (first.by, first.why, first.run) == ("did:local:dpo", "quarterly retention", result.run)
    assert "structure_days = 365" in first.rule and "removed by retention" in str(first)
    one = verify(store, session=sessions[0])
    assert one.ok and [r.part for r in one.removed] == ["structure"]

    # the pack query lists the run, from plain PROV
    rows = list(get_query("retention-runs").run(store))
    assert len(rows) == len(STRUCTURE) + len(CONTENT)
    assert {r["ranBy"].value for r in rows} == {"did:local:dpo"}  # type: ignore[union-attr]

    # a second run finds nothing more (the held stay held)
    again = plan(store, recorder.minter, RetentionPolicy.from_table(POLICY), now=NOW)
    assert again.removals == [] and len(again.skipped) == 3

    # removing a graph without a retention run is still tampering
    store.clear(sessions[18])
    assert [f.kind for f in verify(store).findings] == ["missing"]


@pytest.mark.allow_nonconforming  # the test edits the sealed retention record on purpose
def test_an_edited_retention_record_is_tampering(
    two_years: tuple[Recorder, list[IRI]],
) -> None:
    recorder, sessions = two_years
    store = recorder.store
    result = apply(recorder, RetentionPolicy.from_table({"structure_days": 700}), by=ALICE, now=NOW)
    assert [sessions.index(IRI(r.session)) for r in result.removed] == [0]
    assert verify(store).ok
    # someone edits the seal hash the run recorded, to cover a graph removed by hand
    (row,) = store.query(
        "SELECT ?e ?h $g WHERE { GRAPH $g { ?e <https://w3id.org/trails/ns#removedSealHash> ?h } }",
        {"g": IRI(str(result.graph))},
    ).rows  # type: ignore[union-attr]
    from trails.store import Literal, Quad

    predicate = IRI("https://w3id.org/trails/ns#removedSealHash")
    graph = IRI(str(result.graph))
    store.write(
        [Quad(row[0], predicate, Literal("0" * 64), graph)],  # type: ignore[arg-type]
        remove=[Quad(row[0], predicate, row[1], graph)],  # type: ignore[arg-type]
    )
    findings = {(f.kind, f.subject) for f in verify(store).findings}
    assert findings == {("altered", result.graph), ("missing", sessions[0])}


@pytest.mark.parametrize("days", [0, 90, 182])
def test_a_structure_period_under_six_months_is_refused_without_the_override(days: int) -> None:
    with pytest.raises(ConfigError, match=r"Art\. 19\(1\).*i-know-this-breaks-article-19"):
        RetentionPolicy.from_table({"structure_days": days})
    with pytest.raises(ConfigError, match=r"\[retention.principals.'did:x'\] structure_days"):
        RetentionPolicy.from_table({"principals": {"did:x": {"structure_days": days}}})
    assert RetentionPolicy.from_table({"structure_days": days}, allow_short_structure=True)
    table = {"structure_days": days, "allow_short_structure": True}
    assert RetentionPolicy.from_table(table).default.structure_days == days
    assert RetentionPolicy.from_table({"structure_days": 183}).default.structure_days == 183


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"content_days": -1}, "whole number of days"),
        ({"content_days": "90"}, "whole number of days"),
        ({"structure_days": True}, "whole number of days"),
        ({"allow_short_structure": "yes"}, "true or false"),
        ({"principals": {"did:x": 3}}, "must be a table"),
        ({"planners": {"react": {"content": 3}}}, "unknown keys"),
    ],
)
def test_bad_retention_settings_are_named(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RetentionPolicy.from_table(table)


def test_no_period_set_removes_nothing(two_years: tuple[Recorder, list[IRI]]) -> None:
    recorder, _ = two_years
    result = apply(recorder, RetentionPolicy.from_table({}), by=ALICE, now=NOW)
    assert result.run is None and result.removed == [] and result.plan.skipped == []


def _toml(tmp_path: Path, text: str) -> None:
    (tmp_path / "trails.toml").write_text(text)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_the_cli_plans_applies_and_verify_passes_on_the_embedded_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = tmp_path / "store"
    store = open_store(str(where))
    recorder = Recorder(store)
    install_sealer(recorder)
    sessions = record_two_years(recorder)
    place_hold(recorder, sessions[5], reason="case 5", by="did:local:dpo")
    store.close()
    _toml(
        tmp_path,
        "[retention]\ncontent_days = 180\nstructure_days = 365\n"
        '[retention.principals."did:local:carol"]\ncontent_days = 30\n',
    )

    status, out, err = run(
        capsys, "retention", "plan", "--store", str(where), "--now", "2026-01-01"
    )
    assert status == 0, err
    header = out.splitlines()[0].split()
    assert header == ["session", "started", "principal", "what", "why"]
    assert f"{sessions[0]}  2024-01-15T10:00:00+00:00  {ALICE}  structure" in out
    assert "kept" in out and "'case 5'" in out and "(18 to remove, 1 held)" in out
    status, out, _ = run(
        capsys, "retention", "plan", "--store", str(where), "--now", "2026-01-01", "-f", "json"
    )
    planned = json.loads(out)
    assert len(planned["remove"]) == 18 and planned["held"][0]["holds"][0]["reason"] == "case 5"

    status, out, err = run(
        capsys,
        "retention", "apply", "--store", str(where), "--now", "2026-01-01",
        "--reason", "yearly clean-up", "--by", "did:local:dpo",
    )  # fmt: skip
    assert status == 0, err
    assert f"skipped {sessions[5]} (structure)" in out and "store compacted" in out
    # neither removed content nor removed structure survives in the store's files
    files = [p for p in tmp_path.rglob("*") if p.is_file() and "trails.toml" not in p.name]
    for path in files:
        data = path.read_bytes()
        for n in (0, 3, 12, 20):
            assert f"completion-secret-{n:02d}".encode() not in data, (path, n)
            assert f"prompt-secret-{n:02d}".encode() not in data, (path, n)
        assert b"goal-structure-00" not in data
    status, out, err = run(capsys, "verify", "--store", str(where))
    assert status == 0, out + err
    assert (
        out.count("REMOVED") == 18
        and "yearly clean-up" in out
        and out.rstrip().split("\n")[-1].startswith("OK")
    )
    status, out, _ = run(capsys, "verify", "--store", str(where), "--json")
    assert status == 0 and len(json.loads(out)["removed_by_retention"]) == 18


def test_the_cli_refuses_a_short_structure_period_unless_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], store: Store
) -> None:
    _toml(tmp_path, "[retention]\nstructure_days = 30\n")
    status, _, err = run(capsys, "retention", "plan")
    assert status == 2 and "Art. 19(1)" in err and "--i-know-this-breaks-article-19" in err
    status, out, err = run(capsys, "retention", "plan", "--i-know-this-breaks-article-19")
    assert status == 0, err
    assert "(0 to remove, 0 held)" in out
    _toml(tmp_path, "")
    status, out, _ = run(capsys, "retention", "plan")
    assert status == 0 and "no retention period is set" in out
    status, out, _ = run(capsys, "retention", "apply")
    assert status == 0 and "nothing is past its retention period" in out


def test_retention_on_the_embedded_and_the_remote_store(any_store: Store) -> None:
    """The same plan, removals and verify through a SPARQL server (no compaction there:
    the server's files are its own)."""
    recorder = Recorder(any_store)
    install_sealer(recorder)
    sessions = record_two_years(recorder)
    place_hold(recorder, sessions[5], reason="case 5", by="did:local:dpo")
    result = apply(recorder, RetentionPolicy.from_table(POLICY), by=ALICE, now=NOW)
    assert len(result.removed) == len(STRUCTURE) + len(CONTENT) + 2  # 4 and 13 are not held
    assert result.compacted == hasattr(any_store, "compact")
    graphs = set(any_store.graphs())
    assert sessions[5] in graphs and not {sessions[n] for n in STRUCTURE} & graphs
    report = verify(any_store)
    assert report.ok, report.findings
    assert len(report.removed) == len(result.removed)


def test_a_retention_run_is_recorded_and_sealed_in_one_write(
    two_years: tuple[Recorder, list[IRI]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kill between the record and its seal would leave an unsealed run: there is none."""
    recorder, _ = two_years
    store = recorder.store
    writes: list[list[Any]] = []
    write = store.write

    def kept(quads: Any, *args: Any, **kwargs: Any) -> Any:
        quads = list(quads)
        writes.append(quads)
        return write(quads, *args, **kwargs)

    monkeypatch.setattr(store, "write", kept)
    result = apply(recorder, RetentionPolicy.from_table(POLICY), by="did:local:dpo", now=NOW)
    assert result.graph is not None
    [run_write] = [w for w in writes if any(str(q[3]) == result.graph for q in w)]
    sealed = [q for q in run_write if str(q[1]).endswith("#sealedGraph")]
    assert [str(q[2]) for q in sealed] == [result.graph]  # its seal, in the same write
    monkeypatch.undo()
    assert verify(store).ok
