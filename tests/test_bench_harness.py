"""The logic of the benchmark harness: scale stores, their cache, run_all and the scale table.

The scale benchmark's figures are only as good as its stores: these tests build a
tiny one with one session of each kind the mix records and check it is what the
benchmark claims (real sessions, sealed, conforming to the shapes, the open one
recovered as interrupted, the persisted one replayable), that the cache is keyed by
what shapes a recorded graph, and the pure parts of run_all and bench_scale. No
timing is asserted here: speed is measured by the benchmarks themselves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _report
import _scale_store as scale
import bench_react_cpu
import bench_scale
import run_all

from trails.agent import Session
from trails.evidence.recovery import interrupted_sessions
from trails.evidence.verify import verify
from trails.store import Solutions, open_store
from trails.testing import assert_conforms

# one session of each kind: failing capability, step limit, memory learn and recall,
# left open (recovered as interrupted), persisted for replay
KINDS = [7, 11, 21, 23, 24]


def test_the_mix_has_every_kind_in_the_stated_proportions() -> None:
    plans = [scale.plan_for(i) for i in range(1000)]
    assert sum(p.outcome == "interrupted" for p in plans) == 20
    assert sum(p.outcome == "step_limit" for p in plans) == 40
    assert sum("bench.flaky" in p.tools for p in plans) == 50
    assert sum(p.persist for p in plans) == 100
    assert sum("memory.learn" in p.tools for p in plans) == 334
    assert len({p.principal for p in plans}) == scale.PRINCIPALS
    assert [scale.plan_for(i) for i in KINDS] == [plans[i] for i in KINDS]  # deterministic
    assert {scale.plan_for(i).outcome for i in KINDS} == {"finish", "step_limit", "interrupted"}
    for plan in plans[:60]:  # one priced completion per tool call, then the answer
        script = scale.script_for(plan)
        assert len(script) == len(plan.tools) + 1
        assert all(r.usd and r.input_tokens > 0 for r in script)  # type: ignore[attr-defined]


def test_the_cache_key_follows_size_version_mix_and_sources(tmp_path: Path) -> None:
    key = scale.cache_key(1000, version="1.0", digest="abc")
    assert key == f"sessions-1000-v1.0-mix{scale.MIX_VERSION}-abc"
    assert scale.cache_key(10_000, version="1.0", digest="abc") != key
    assert scale.cache_key(1000, version="1.1", digest="abc") != key
    assert scale.cache_key(1000).startswith("sessions-1000-v")  # this trails, these sources

    ontology = tmp_path / "onto.ttl"
    package = tmp_path / "prov"
    package.mkdir()
    ontology.write_text("a")
    (package / "builder.py").write_text("x = 1")
    (package / "notes.txt").write_text("not a source")
    sources = (ontology, package)
    first = scale.shape_digest(sources)
    assert scale.shape_digest(sources) == first
    (package / "notes.txt").write_text("changed, but not a source")
    assert scale.shape_digest(sources) == first
    (package / "builder.py").write_text("x = 2")
    assert scale.shape_digest(sources) != first
    (package / "builder.py").write_text("x = 1")
    assert scale.shape_digest(sources) == first
    (package / "events.py").write_text("")
    assert scale.shape_digest(sources) != first


def test_cached_store_builds_once_and_resumes_a_stopped_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[tuple[Path, bool]] = []

    def fake_build(
        path: Path, sessions: int, resume: bool = False, **_: object
    ) -> dict[str, object]:
        built.append((path, resume))
        path.mkdir(parents=True, exist_ok=resume)
        (path / "data").write_text("x")
        return {"sessions": sessions}

    monkeypatch.setattr(scale, "build", fake_build)
    monkeypatch.setattr(scale, "git_commit", lambda: "c0ffee")
    path, manifest = scale.cached_store(3, root=tmp_path, log=lambda _: None)
    assert path.parent.name == scale.cache_key(3)
    assert manifest == {
        "sessions": 3, "key": scale.cache_key(3), "commit": "unknown", "started_by": "c0ffee"
    }  # fmt: skip
    assert scale.cached_store(3, root=tmp_path, log=lambda _: None) == (path, manifest)
    assert built == [(path, False)]
    (path.parent / scale.COMPLETE).unlink()  # a build that stopped half way
    (path / "kept").write_text("what the stopped build recorded")
    scale.cached_store(3, root=tmp_path, log=lambda _: None)
    assert built[1] == (path, True) and (path / "kept").exists()  # it goes on, not over
    other = tmp_path / "sessions-3-v0.0.0-mix0-old"
    other.mkdir()
    assert scale.prune(tmp_path, keep=(path.parent.name,)) == [other]
    assert path.exists()


def test_a_stopped_build_goes_on_from_the_next_session(tmp_path: Path) -> None:
    """A build stopped after six sessions is resumed to eight: the six are kept, two more are
    recorded after them in time, and the store verifies."""
    from trails.evidence.verify import verify
    from trails.store import open_store

    path = tmp_path / "store"
    scale.build(path, 6)
    manifest = scale.build(path, 8, resume=True)
    assert manifest["resumed_at"] == 6
    store = open_store(path)
    try:
        order = scale._in_start_order(store)
        assert len(order) == len(set(order)) == 8
        assert verify(store).ok
    finally:
        store.close()
    assert manifest["middle"] == order[4]


def test_reuse_any_digest_takes_the_newest_complete_store_of_the_size_and_mix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_build(path: Path, sessions: int, **_: object) -> dict[str, object]:
        path.mkdir(parents=True)
        return {"sessions": sessions, "commit": "new"}

    def stored(key: str, commit: str, mtime: float, complete: bool = True) -> Path:
        folder = tmp_path / key
        (folder / "store").mkdir(parents=True)
        if complete:
            (folder / scale.COMPLETE).write_text(json.dumps({"sessions": 3, "commit": commit}))
            os.utime(folder / scale.COMPLETE, (mtime, mtime))
        return folder

    monkeypatch.setattr(scale, "build", fake_build)
    mix = scale.MIX_VERSION
    stored(f"sessions-3-v0.1.0-mix{mix}-older", "c1", 1_000)
    newer = stored(f"sessions-3-v0.1.0-mix{mix}-newer", "c2", 2_000)
    stored(f"sessions-3-v0.1.0-mix{mix}-halfway", "c3", 3_000, complete=False)
    stored(f"sessions-3-v0.1.0-mix{mix - 1}-oldmix", "c4", 4_000)  # another mix: never
    stored(f"sessions-30-v0.1.0-mix{mix}-bigger", "c5", 5_000)  # another size: never
    said: list[str] = []
    path, manifest = scale.cached_store(3, root=tmp_path, log=said.append, reuse_any_digest=True)
    assert path == newer / "store"
    assert manifest["key"] == newer.name and manifest["commit"] == "c2"
    assert newer.name in said[0] and "c2" in said[0] and scale.cache_key(3) in said[0]
    # without the flag, these sources build their own store; then that one is used
    path, manifest = scale.cached_store(3, root=tmp_path, log=said.append)
    assert path.parent.name == scale.cache_key(3) and manifest["commit"] == "new"
    later = (path.parent / scale.COMPLETE).stat().st_mtime + 1_000
    os.utime(newer / scale.COMPLETE, (later, later))  # even when another key is newer on disk
    path, _ = scale.cached_store(3, root=tmp_path, log=said.append, reuse_any_digest=True)
    assert path.parent.name == scale.cache_key(3)
    assert scale.complete_stores(3, tmp_path)[0] == newer


def test_sessions_are_spread_over_the_days_before_the_build() -> None:
    end = datetime(2026, 11, 1, tzinfo=UTC)
    times = [scale.simulated_time(i, 1000, end) for i in range(1000)]
    assert times == sorted(times) and times[0] == end - timedelta(days=scale.SPREAD_DAYS)
    assert times[-1] < end and end - times[-1] < timedelta(days=1)
    days = {(t - times[0]).days for t in times}
    assert days == set(range(scale.SPREAD_DAYS))  # every day of the span holds sessions
    assert scale.simulated_time(500, 1000, end) == end - timedelta(days=scale.SPREAD_DAYS / 2)


def test_a_tiny_store_holds_real_sealed_conforming_sessions(tmp_path: Path) -> None:
    before = datetime.now(UTC)
    manifest = scale.build(tmp_path / "store", len(KINDS), indices=KINDS)
    assert manifest["sessions"] == 5 and manifest["interrupted"] == 1
    first, last = (datetime.fromisoformat(str(t)) for t in manifest["spread"])  # type: ignore[union-attr]
    assert first < before - timedelta(days=scale.SPREAD_DAYS - 1) and last < before - timedelta(
        days=30
    )
    store = open_store(tmp_path / "store")
    try:
        report = verify(store)
        assert report.ok, report.findings
        assert report.seals >= 5  # every session sealed, the interrupted one by recovery
        assert len(interrupted_sessions(store)) == 1
        assert_conforms(store)
        rows = store.query(
            "PREFIX trails: <https://w3id.org/trails/ns#>\n"
            "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?g a trails:Session . ?s ?p ?o } }"
            " GROUP BY ?g"
        )
        assert isinstance(rows, Solutions)
        sizes = [int(str(r["n"].value)) for r in rows]  # type: ignore[union-attr]
        assert len(sizes) == 5
        assert 150 <= sum(sizes) / len(sizes) <= 600, sizes  # about 300 quads a session
        costs = store.query(
            "PREFIX trails: <https://w3id.org/trails/ns#>\n"
            "SELECT (COUNT(?c) AS ?n) WHERE { GRAPH ?g { ?c a trails:LLMCompletion } }"
        )
        assert isinstance(costs, Solutions)
        assert int(str(next(iter(costs))["n"].value)) >= 15  # type: ignore[union-attr]
        # each session, its end and its seal carry its simulated day, spread over the span
        timed = store.query(
            "PREFIX prov: <http://www.w3.org/ns/prov#>\n"
            "PREFIX trails: <https://w3id.org/trails/ns#>\n"
            "SELECT ?start ?end ?sealed WHERE { GRAPH ?g { ?g a trails:Session ;"
            " prov:startedAtTime ?start ; prov:endedAtTime ?end } "
            "GRAPH ?ledger { ?seal trails:sealedGraph ?g ; prov:generatedAtTime ?sealed } }"
            " ORDER BY ?start"
        )
        assert isinstance(timed, Solutions)
        spans = [
            [datetime.fromisoformat(str(r[v].value)) for v in ("start", "end", "sealed")]  # type: ignore[union-attr]
            for r in timed
        ]
        assert len(spans) == 5 and spans[0][0] == first and spans[-1][0] == last
        assert len({start.date() for start, _, _ in spans}) == 5  # 40 days apart
        for start, end, _ in spans:
            assert start <= end < start + timedelta(minutes=5)
        # sealed as it ended; the one left open by recovery, after the build
        late = [
            sealed for start, end, sealed in spans if not end <= sealed < end + timedelta(minutes=5)
        ]
        assert len(late) == 1 and late[0] >= before
        replayed = Session.replay(str(manifest["persisted"]), store=store)
        assert replayed.read_only
        assert len(replayed.invocations) == len(scale.plan_for(KINDS[-1]).tools)
    finally:
        store.close()


def test_run_all_finds_oxigraph_next_to_the_interpreter_and_passes_arguments() -> None:
    path = run_all.child_path("/usr/bin:/bin", interpreter="/venv/bin/python")
    assert path.split(":") == ["/usr/bin", "/bin", "/venv/bin"]
    assert run_all.child_path("/venv/bin:/bin", interpreter="/venv/bin/python") == "/venv/bin:/bin"
    assert run_all.split_args(["scale", "--", "--sizes", "1000"]) == (
        ["scale"],
        ["--sizes", "1000"],
    )
    assert run_all.split_args(["audit"]) == (["audit"], [])
    assert run_all.main(["no-such-benchmark"]) == 2


def test_run_all_skips_the_endpoint_benchmark_without_an_oxigraph_binary(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[list[str]] = []

    class Done:
        returncode = 0

    monkeypatch.setattr(run_all.shutil, "which", lambda *a, **k: None)
    monkeypatch.setattr(run_all.subprocess, "run", lambda argv, **k: ran.append(argv) or Done())
    assert run_all.main(["endpoint", "import", "react_cpu"]) == 0
    out = capsys.readouterr().out
    assert "bench_endpoint.py skipped: no `oxigraph` binary" in out
    assert "bench_react_cpu.py skipped: no `valgrind` binary" in out
    assert [Path(a[1]).name for a in ran] == ["bench_import.py"]


def test_paired_takes_the_ratio_round_by_round_and_alternates_which_goes_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A clock that only the timed calls move: a costs 1.1 units and b 1.0, times the load
    # of its call. The machine drifts (each round slower than the last), a meets a spike
    # in round 1 and b in round 3: round by round the ratio is 1.1 but in those two, while
    # the ratio of the two medians (4.4 / 3) would say 1.47.
    loads = iter([1, 1, 2, 20, 3, 3, 40, 4, 5, 5])  # calls in the order they are made
    clock = [0.0]
    order: list[str] = []

    def timed(name: str, cost: float) -> Callable[[], None]:
        def call() -> None:
            order.append(name)
            clock[0] += cost * next(loads)

        return call

    monkeypatch.setattr(_report.time, "perf_counter", lambda: clock[0])
    t_a, t_b, ratio, ratios = _report.paired(timed("a", 1.1), timed("b", 1.0), rounds=5, number=1)
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a", "a", "b"]
    assert ratio == pytest.approx(1.1)
    assert ratios == pytest.approx([0.11, 1.1, 1.1, 1.1, 11])
    assert (t_a, t_b) == (pytest.approx(4.4), pytest.approx(3.0))


def test_the_instruction_count_of_a_run_is_the_difference_past_the_warm_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a process costs 1,000 to start, 5 warm-up runs and each counted run 300
    monkeypatch.setattr(bench_react_cpu, "instructions", lambda mode, runs: 1000 + 300 * runs)
    assert bench_react_cpu.per_run("sealed", 20) == 300
    counts = {"sealed": 50e6, "unsealed": 34e6, "unrecorded": 13e6, "raw": 6e6}
    md = bench_react_cpu.render(counts, 20)
    assert "| the run itself (planner, LLM client, capability calls) | 13.00 | 26% |" in md
    assert "| recording: events' quads, conversion for pyoxigraph | 21.00 | 42% |" in md
    assert "| the sealer: session hash, catalogue entry, bookkeeping | 16.00 | 32% |" in md
    assert "| **a sealed run, all of it** | **50.00** | 100% |" in md
    assert "| raw: the same writes built as pyoxigraph quads | 6.00 | 12% |" in md
    assert "| what trails runs beyond raw (sealed run less raw) | 44.00 | 88% |" in md
    assert f"the target is 45 M ({50 - 45:.2f} M to go)" in md


def test_a_sealed_run_above_the_ceiling_is_a_regression(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    counts = {"sealed": 50e6, "unsealed": 34e6, "unrecorded": 13e6, "raw": 6e6}
    assert bench_react_cpu.over_ceiling(counts, 50e6) is None  # at the ceiling: fine
    why = bench_react_cpu.over_ceiling(counts, 49.5e6)
    assert why is not None and "50.00 M" in why and "by 0.50 M" in why
    assert bench_react_cpu.CEILING >= bench_react_cpu.TARGET
    md = bench_react_cpu.render({**counts, "sealed": 44e6}, 20, 49.5e6)
    assert "may cost at most **49.50 M**" in md and "the target is 45 M (met)" in md

    # the script itself exits 1 above the ceiling, after writing its section
    monkeypatch.setattr(bench_react_cpu, "per_run", lambda mode, runs: counts[mode])
    written: list[str] = []
    monkeypatch.setattr(bench_react_cpu, "write_section", lambda name, md: written.append(name))
    monkeypatch.setattr(sys, "argv", ["bench_react_cpu.py", "--runs", "1", "--ceiling", "49.5"])
    assert bench_react_cpu.main() == 1
    assert written == ["react-cpu"]
    assert "FAILED: a sealed ReAct run costs 50.00 M" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["bench_react_cpu.py", "--runs", "1", "--ceiling", "50"])
    assert bench_react_cpu.main() == 0


def test_no_doc_prints_the_section_and_leaves_the_page_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    counts = {"sealed": 50e6, "unsealed": 34e6, "unrecorded": 13e6, "raw": 6e6}
    monkeypatch.setattr(bench_react_cpu, "per_run", lambda mode, runs: counts[mode])
    written: list[str] = []
    monkeypatch.setattr(bench_react_cpu, "write_section", lambda name, md: written.append(name))
    argv = ["bench_react_cpu.py", "--runs", "1", "--ceiling", "49.5", "--no-doc"]
    monkeypatch.setattr(sys, "argv", argv)
    assert bench_react_cpu.main() == 1  # the ceiling still holds
    assert written == []
    captured = capsys.readouterr()
    assert "| **a sealed run, all of it** | **50.00** | 100% |" in captured.out
    assert "FAILED: a sealed ReAct run costs 50.00 M" in captured.err


@pytest.mark.parametrize("mode", bench_react_cpu.MODES)
def test_each_counted_configuration_runs(mode: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, bench_react_cpu.__file__, "--child", mode, "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing recorded to disk


def test_the_scale_table_gives_ratios_to_the_smallest_store_and_verdicts() -> None:
    sizes = [1000, 10_000]
    medians = {c.key: {1000: 0.5, 10_000: 0.6} for c in bench_scale.COMMANDS}
    medians["report"] = {1000: 1.0, 10_000: 2.0}
    medians["cost_by_model"] = {1000: 0.8, 10_000: 1.2}
    medians["cost_by_principal"] = {1000: 0.7, 10_000: 0.9}
    medians["verify_all"] = {1000: 10.0, 10_000: 100.0}
    manifests: dict[int, dict[str, object]] = {
        1000: {"sessions": 1000},
        10_000: {"sessions": 10_000},
    }
    text = bench_scale.table(sizes, medians, manifests)
    lines = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines()}
    assert "| 1.20x | <= 1.5x: met |" in lines["`trails query session-timeline` (one session)"]
    assert "| 2.00x | <= 1.5x: **missed** |" in lines["`trails report SESSION`"]
    assert "<= 1 s: **missed**" in lines["`trails query cost-by-model`"]
    assert "<= 1 s: met" in lines["`trails query cost-by-principal`"]
    assert "100/s" in lines["`trails verify` (all)"]
    assert text.splitlines()[0].startswith("| command | 1,000 | 10,000 | 10x store / 1,000 |")
    assert json.dumps(manifests)  # what the report is made from stays plain data


def _sessions(path: Path) -> int:
    store = open_store(path)
    try:
        rows = store.query(
            "PREFIX trails: <https://w3id.org/trails/ns#>\n"
            "SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { GRAPH ?g { ?g a trails:Session } }"
        )
        assert isinstance(rows, Solutions)
        return int(str(next(iter(rows))["n"].value))  # type: ignore[union-attr]
    finally:
        store.close()


def test_a_snapshot_shares_table_files_and_what_it_writes_stays_in_it(tmp_path: Path) -> None:
    scale.build(tmp_path / "store", 2, indices=[0, 1])
    copy = bench_scale.snapshot(tmp_path / "store", tmp_path / "copy")
    built = tmp_path / "store"
    tables = sorted(str(f.relative_to(built)) for f in built.rglob("*.sst"))
    assert tables and sorted(str(f.relative_to(copy)) for f in copy.rglob("*.sst")) == tables
    for name in tables:  # linked, not copied
        assert (copy / name).stat().st_ino == (built / name).stat().st_ino
    assert _sessions(copy) == 2
    from trails.config import load_settings
    from trails.prov import Recorder

    store = open_store(copy)
    try:  # a session recorded in the copy, then the copy compacted (its files rewritten)
        scale.record_session(
            Recorder.from_settings(load_settings(), store=store), scale.plan_for(2)
        )
        store.compact()
    finally:
        store.close()
    assert _sessions(copy) == 3
    assert _sessions(tmp_path / "store") == 2  # the original is as it was
    assert verify(open_store(tmp_path / "store")).ok


def test_reading_commands_share_a_copy_and_writing_ones_get_a_fresh_one_each_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stores = {}
    for n in (10, 20):  # stand-ins for built stores: table files and a log
        stores[n] = tmp_path / f"built-{n}"
        stores[n].mkdir()
        (stores[n] / "000001.sst").write_text(f"{n} sessions")
        (stores[n] / "000002.log").write_text("")
    manifests = {
        n: {"sessions": n, "record_s": 1.0, "key": f"sessions-{n}-x", "commit": "abc"}
        for n in stores
    }
    monkeypatch.setattr(scale, "cached_store", lambda n, **_: (stores[n], dict(manifests[n])))
    monkeypatch.setenv("TRAILS_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(bench_scale, "has_rollup", lambda: True)
    seen: list[tuple[str, int, str, list[str]]] = []

    def fake_run(command: bench_scale.Command, store: Path, manifest: dict, out: Path) -> float:
        n = int(manifest["sessions"])
        assert (store / "000001.sst").read_text() == f"{n} sessions"
        seen.append((command.key, n, str(store), sorted(f.name for f in store.iterdir())))
        (store / f"written-by-{command.key}").write_text("")  # what a command leaves behind
        return 0.1 * n

    monkeypatch.setattr(bench_scale, "run_once", fake_run)
    medians, out = bench_scale.measure([10, 20], 3, verify_all_max=10)
    assert not list((tmp_path / "cache").iterdir())  # working copies removed
    assert all(not (s / "written-by-rollup").exists() for s in stores.values())  # cache intact
    assert [(k, n) for k, n, _, _ in seen[:2]] == [("rollup", 10), ("rollup", 20)]
    reads = {
        n: {p for k, m, p, _ in seen if m == n and k in ("timeline", "sessions")} for n in stores
    }
    assert all(len(paths) == 1 for paths in reads.values())  # one copy per size
    for key, n, path, files in seen:
        if key in ("first_session", "verify_all"):
            assert path not in reads[n]
            assert "written-by-rollup" in files  # copied after the daily rollup
            assert not [
                f for f in files if f in ("written-by-first_session", "written-by-verify_all")
            ]
    assert sum(k == "first_session" for k, *_ in seen) == 6  # 3 runs x 2 sizes
    assert [(k, n) for k, n, *_ in seen if k == "verify_all"] == [("verify_all", 10)]
    assert medians["verify_all"] == {10: 1.0} and medians["rollup"] == {10: 1.0, 20: 2.0}
    assert out[20]["key"] == "sessions-20-x"
    text = bench_scale.table([10, 20], medians, out, (*bench_scale.COMMANDS, bench_scale.ROLLUP))
    lines = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines()}
    assert (
        "| 1.000 s | not run | - | context: 10/s sessions verified |"
        in lines["`trails verify` (all)"]
    )
    assert "daily totals computed, as a daily job would" in lines[bench_scale.ROLLUP.label]
    doc = bench_scale.report([10, 20], 3, medians, out, load=(1.0, 2.0))
    assert "`sessions-20-x` built from commit `abc`" in doc and "rollup` ran once" in doc


def test_heavy_commands_run_once_on_large_stores_and_not_above_the_limit() -> None:
    verify_all = next(c for c in bench_scale.COMMANDS if c.key == "verify_all")
    timeline = bench_scale.COMMANDS[0]
    assert bench_scale.runs_of(verify_all, 10_000, 5, None) == 2
    assert bench_scale.runs_of(verify_all, 100_000, 5, None) == 1
    assert bench_scale.runs_of(verify_all, 100_000, 5, 10_000) == 0
    assert bench_scale.runs_of(timeline, 100_000, 5, 10_000) == 5
    medians = {c.key: {1000: 1.0} for c in bench_scale.COMMANDS}
    text = bench_scale.table([1000], medians, {1000: {"sessions": 1000}})
    assert "rollup" not in text  # no rollup figures, no row
