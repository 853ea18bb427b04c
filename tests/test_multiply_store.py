"""The multiplied scale stores: copies of recorded sessions with new IRIs and real seals.

The figures at 100,000 sessions and more come from stores the multiplier makes out
of a recorded sample (``benchmarks/_multiply_store.py``). They are only worth
something if such a store is what a recording of that many sessions would leave:
these tests record a tiny sample through the recorder, multiply it, and check it
as a user would (the real ``trails verify``, full and quick, exiting 0), that it
conforms to the shapes, that no IRI of a copy is one of the sample's, that the
catalogue and its daily totals agree with the graphs, that the sample is left as it
was, and that an edit to a copy is found: the seals are real, not copied.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _multiply_store as multiply
import _scale_store as scale

from trails.prov.vocab import RDFS
from trails.store import Solutions, open_store
from trails.store.terms import IRI, Literal, Quad
from trails.testing import assert_conforms

TRAILS = str(Path(sys.executable).with_name("trails"))

# one session of each kind: failing capability, step limit, memory learn and recall,
# left open (recovered as interrupted), persisted for replay
KINDS = [7, 11, 21, 23, 24]
SESSIONS = 50

_GRAPHS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?s WHERE { GRAPH ?g { ?g a trails:Session . ?s ?p ?o } }
"""

_ENTRIES = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session ?started WHERE {
  GRAPH ?c { ?e trails:summaryOf ?session ; trails:sessionStarted ?started ; trails:sealed true }
}
"""

_COST = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT (SUM(?usd) AS ?total) WHERE { GRAPH ?c { ?e trails:summaryOf ?s ; trails:totalCostUSD ?usd } }
"""


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    return subprocess.run([TRAILS, *argv], capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, object]]:
    """A sample of one session of each kind, recorded, and a store of 50 made from it."""
    root = tmp_path_factory.mktemp("multiply")
    scale.build(root / "sample", len(KINDS), indices=KINDS)
    folder = root / "cached"  # laid out as the cache keeps it: store/ and its manifest
    manifest = multiply.build(root / "sample", folder / "store", SESSIONS, progress=print)
    (folder / scale.COMPLETE).write_text(json.dumps(manifest))
    return root / "sample", folder / "store", manifest


def _value(term: object) -> str:
    assert isinstance(term, Literal)
    return term.value


def _quads(path: Path) -> int:
    store = open_store(path)
    try:
        rows = store.query("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")
        assert isinstance(rows, Solutions)
        return int(str(next(iter(rows))["n"].value))  # type: ignore[union-attr]
    finally:
        store.close()


def test_trails_verify_full_and_quick_say_ok_on_a_multiplied_store(
    built: tuple[Path, Path, dict[str, object]], tmp_path: Path
) -> None:
    _, multiplied, manifest = built
    assert manifest["sessions"] == SESSIONS and manifest["copies"] == SESSIONS - len(KINDS)
    from bench_scale import snapshot

    full = snapshot(multiplied, tmp_path / "full")  # verify records a checkpoint: a copy each
    done = _run("verify", "--store", str(full))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"OK. {SESSIONS} sealed graph(s) recomputed" in done.stdout
    quick = snapshot(multiplied, tmp_path / "quick")
    done = _run("verify", "--quick", "--store", str(quick))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "quick, since the checkpoint" in done.stdout  # started from the multiplier's checkpoint
    assert f"{SESSIONS} seal(s) in" in done.stdout


def test_an_edit_to_a_copy_is_found_by_verify(
    built: tuple[Path, Path, dict[str, object]], tmp_path: Path
) -> None:
    _, multiplied, manifest = built
    from bench_scale import snapshot

    copy = snapshot(multiplied, tmp_path / "edited")
    store = open_store(copy)
    try:
        graph = IRI(str(manifest["middle"]))  # a copy, the middle one
        store.write([Quad(graph, RDFS.comment, Literal("edited after its seal"), graph)])
    finally:
        store.close()
    done = _run("verify", "--store", str(copy))
    assert done.returncode == 1, done.stdout + done.stderr
    assert str(manifest["middle"]) in done.stdout


def test_copies_are_new_sessions_that_conform_spread_over_the_sample_days(
    built: tuple[Path, Path, dict[str, object]],
) -> None:
    sample, multiplied, _ = built
    store = open_store(sample)
    try:
        rows = store.query(_GRAPHS)
        assert isinstance(rows, Solutions)
        sample_subjects = {str(r["s"]) for r in rows}
    finally:
        store.close()
    store = open_store(multiplied)
    try:
        assert_conforms(store)
        rows = store.query(_GRAPHS)
        assert isinstance(rows, Solutions)
        by_graph: dict[str, set[str]] = {}
        for r in rows:
            by_graph.setdefault(str(r["g"]), set()).add(str(r["s"]))
        assert len(by_graph) == SESSIONS
        copies = [g for g in by_graph if g not in sample_subjects]
        assert len(copies) == SESSIONS - len(KINDS)
        seen: set[str] = set()
        for g in copies:  # no subject of a copy is the sample's or another copy's
            own = {s for s in by_graph[g] if s.startswith("urn:trails:session:") or "activity" in s}
            assert not own & sample_subjects and not own & seen
            seen |= own
        entries = store.query(_ENTRIES)
        assert isinstance(entries, Solutions)
        starts = {str(r["session"]): datetime.fromisoformat(_value(r["started"])) for r in entries}
        assert set(starts) == set(by_graph)  # one sealed entry for each session
        sample_starts = sorted(t for s, t in starts.items() if s not in copies)
        copy_starts = sorted(t for s, t in starts.items() if s in copies)
        assert sample_starts[0] <= copy_starts[0] and copy_starts[-1] <= sample_starts[-1]
        assert len({t.date() for t in copy_starts}) > 2 * len(KINDS)  # spread, not bunched
    finally:
        store.close()


def test_the_sample_is_left_as_it_was_and_the_cost_questions_agree(
    built: tuple[Path, Path, dict[str, object]],
) -> None:
    sample, multiplied, _ = built
    before = _quads(sample)
    assert before > 0 and _quads(multiplied) > 5 * before  # the sample was only read
    done = _run("query", "cost-by-model", "-f", "json", "--store", str(multiplied))
    assert done.returncode == 0, done.stderr
    bindings = json.loads(done.stdout)["results"]["bindings"]
    by_model = sum(float(b["costUSD"]["value"]) for b in bindings)
    store = open_store(multiplied)
    try:
        total = store.query(_COST)
        assert isinstance(total, Solutions)
        entries = float(str(next(iter(total))["total"].value))  # type: ignore[union-attr]
    finally:
        store.close()
    assert entries > 0 and abs(by_model - entries) < 1e-6 * entries


def test_folder_names_and_the_lookup_of_complete_stores(tmp_path: Path) -> None:
    name = multiply.folder_name(100_000, "sessions-10000-v0.1.0-mix2-abc")
    assert name == "multiplied-100000-from-sessions-10000-v0.1.0-mix2-abc"
    (tmp_path / name / "store").mkdir(parents=True)
    assert multiply.multiplied_stores(100_000, tmp_path) == []  # not complete
    (tmp_path / name / scale.COMPLETE).write_text("{}")
    assert multiply.multiplied_stores(100_000, tmp_path) == [tmp_path / name]
    assert scale.prune(tmp_path) == []  # the scale store's prune leaves multiplied stores alone


def test_a_store_smaller_than_its_sample_is_refused(tmp_path: Path) -> None:
    scale.build(tmp_path / "sample", 2, indices=[0, 1])
    with pytest.raises(ValueError, match="fewer than the sample"):
        multiply.build(tmp_path / "sample", tmp_path / "multiplied", 1)


def test_the_scale_benchmark_measures_a_given_store_and_its_quick_verification(
    built: tuple[Path, Path, dict[str, object]], tmp_path: Path
) -> None:
    import argparse

    import bench_scale

    _, multiplied, _ = built
    parser = argparse.ArgumentParser()
    given = bench_scale.parse_given(parser, [f"{SESSIONS}={multiplied.parent}"])
    assert given == {SESSIONS: multiplied.parent}
    with pytest.raises(SystemExit):
        bench_scale.parse_given(parser, [f"{SESSIONS}={tmp_path}"])  # no store there
    path, manifest = bench_scale.given_store(multiplied.parent)
    assert path == multiplied and manifest["sessions"] == SESSIONS and manifest["key"] == "cached"
    quick = next(c for c in bench_scale.OPTIONAL if c.key == "verify_quick")
    assert quick.key not in {c.key for c in bench_scale.COMMANDS}  # recorded stores: no checkpoint
    fresh = bench_scale.snapshot(multiplied, tmp_path / "run")
    seconds = bench_scale.run_once(quick, fresh, manifest, tmp_path)
    assert seconds > 0
    # it recorded three sessions, and its quick verification checkpointed them
    done = _run("verify", "--quick", "--store", str(fresh))
    assert done.returncode == 0 and "0 sealed graph(s) recomputed" in done.stdout, done.stdout


def test_the_sessions_page_benchmark_reads_a_given_store(
    built: tuple[Path, Path, dict[str, object]], capsys: pytest.CaptureFixture[str]
) -> None:
    import bench_sessions_page

    _, multiplied, _ = built
    folder = str(multiplied.parent)
    assert bench_sessions_page.main(["--rounds", "1", "--store", f"{SESSIONS}={folder}"]) == 0
    out = capsys.readouterr().out
    assert "| recorded, walk |" in out and "| recorded, sorted |" in out
    assert sorted(p.name for p in multiplied.parent.iterdir()) == ["complete", "store"]


def test_a_stopped_build_is_finished_with_the_copies_it_loaded(
    built: tuple[Path, Path, dict[str, object]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sample, _, _ = built
    monkeypatch.setattr(multiply, "BATCH_QUADS", 2000)  # a batch every few copies
    said: list[str] = []

    def stop_midway(text: str) -> None:
        said.append(text)
        if "copies in" in text and len(said) > 8:
            raise KeyboardInterrupt  # as Ctrl-C stops a long build

    target = tmp_path / "stopped" / "store"
    with pytest.raises(KeyboardInterrupt):
        multiply.build(sample, target, 200, progress=stop_midway)
    manifest = multiply.finish(target, progress=print)
    copies = int(str(manifest["copies"]))
    assert 0 < copies < 195 and manifest["sessions"] == len(KINDS) + copies
    assert manifest["planned_sessions"] == 200
    done = _run("verify", "--store", str(target))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"OK. {len(KINDS) + copies} sealed graph(s) recomputed" in done.stdout


@pytest.mark.parametrize("ties", [False, True], ids=["sub-second", "whole-second ties"])
def test_a_density_starts_the_copies_close_together(
    built: tuple[Path, Path, dict[str, object]], tmp_path: Path, ties: bool
) -> None:
    """``--per-second 10 [--ties]``: the copies start ten to a second after the sample."""
    from collections import Counter

    from trails.audit.querypack import get_query
    from trails.audit.sessions_page import paged, sessions_page
    from trails.store.terms import to_python

    sample, _, _ = built
    density = multiply.Density(10, ties=ties)
    manifest = multiply.build(
        sample, tmp_path / "store", 35, progress=print, checkpoint=False, density=density
    )
    assert manifest["density"] == [10, ties]
    store = open_store(str(tmp_path / "store"))
    try:
        rows = store.query(_ENTRIES)
        assert isinstance(rows, Solutions)
        starts = sorted(to_python(r["started"]) for r in rows)
        copies = starts[len(KINDS) :]
        assert len(copies) == 30
        seconds = Counter(s.replace(microsecond=0) for s in copies)
        assert all(s.microsecond == 0 for s in copies) == ties
        assert sorted(seconds.values()) == ([10, 10, 10] if ties else sorted(seconds.values()))
        assert max(seconds.values()) >= 9
        assert copies[0] > starts[len(KINDS) - 1]  # after the sample's newest session
        whole = store.query(paged(get_query("sessions").text_for({}), 25))
        assert isinstance(whole, Solutions)
        got = sessions_page(store, {}, 25).rows
        assert got == whole.rows
    finally:
        store.close()
