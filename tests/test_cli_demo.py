"""``trails demo`` and the CLI shell: real runs, in-process and as a console script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trails.cli import main
from trails.demo import run_demo
from trails.store import Store, open_store
from trails.testing import assert_conforms, assert_prov_readable


def test_demo_runs_react_and_audits_by_sparql(store: Store) -> None:
    result = run_demo(store)
    assert result.stopped == "goal_achieved" and result.steps == 4
    assert [d["capability"] for d in result.decisions] == [
        "notes.search",
        "notes.read",
        "notes.tag",
    ]
    assert [d["sideEffects"] for d in result.decisions] == [False, False, True]
    assert {d["principal"] for d in result.decisions} == {"did:local:alice"}
    [cost] = result.cost
    assert cost["model"] == "mock:scripted-demo" and cost["calls"] == 4
    labels = [label for label, _ in result.timeline]
    assert labels[0] == "react run" and labels.count("invoke notes.tag") == 1
    assert_conforms(store)
    assert_prov_readable(store)


def test_demo_on_a_disk_store_prints_an_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_dir = tmp_path / "store"
    assert main(["--store", str(store_dir), "demo"]) == 0
    out = capsys.readouterr().out
    assert "session  urn:trails:session:" in out
    assert "notes.tag" in out and "did:local:alice" in out
    with open_store(store_dir) as store:
        graphs = store.graphs()
    assert [
        g for g in graphs if g.startswith("urn:trails:session:")
    ] and "urn:trails:graph:ledger" in graphs
    # the session was sealed when it ended: verification finds nothing altered
    assert main(["--store", str(store_dir), "verify"]) == 0


def test_the_demo_session_replays_as_a_regression_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_dir = str(tmp_path / "store")
    assert main(["--store", store_dir, "demo"]) == 0
    session = next(
        line.split()[1]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("session")
    )
    assert main(["--store", store_dir, "replay", session]) == 0
    assert "notes.tag" in capsys.readouterr().out
    # a fresh process replays it with the recorded completions and live capabilities
    result = subprocess.run(
        [str(Path(sys.executable).parent / "trails"), "--store", store_dir, "replay", session,
         "--rerun", "--import", "trails.demo"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "identical" in result.stdout


def test_demo_console_script_uses_the_default_store(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    result = subprocess.run(
        [str(Path(sys.executable).parent / "trails"), "demo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / ".trails" / "store").is_dir()
    assert "What happened, in order" in result.stdout


def test_locked_store_is_a_clear_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    held = open_store(tmp_path / "store")
    try:
        assert main(["--store", str(tmp_path / "store"), "demo"]) == 1
    finally:
        held.close()
    assert "SPARQL server" in capsys.readouterr().err


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: trails" in capsys.readouterr().out
