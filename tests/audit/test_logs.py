"""``trails logs``: a recorded session read back as a conversation, in order, as text or JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trails.audit.logs import Entry, Log, render_text


def _trails(*args: str, store: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trails.cli", "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("logs") / "store"
    done = _trails("demo", store=store)
    assert done.returncode == 0, done.stderr
    return store


def test_the_newest_session_as_a_conversation(demo_store: Path) -> None:
    shown = _trails("logs", "--json", store=demo_store)
    assert shown.returncode == 0, shown.stderr
    (log,) = json.loads(shown.stdout)
    assert log["goals"] and log["status"] == "ok"
    kinds = [e["kind"] for e in log["entries"]]
    assert "completion" in kinds and "call" in kinds
    started = [e["started"] for e in log["entries"]]
    assert started == sorted(started)  # in the order they happened
    completion = next(e for e in log["entries"] if e["kind"] == "completion")
    assert completion["values"]["prompt"] and completion["values"]["answer"]
    call = next(e for e in log["entries"] if e["kind"] == "call")
    assert set(call["values"]) >= {"input", "output"}
    assert json.loads(call["values"]["input"]) is not None  # a call's input is its JSON

    text = _trails("logs", store=demo_store)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"# {log['session']}")
    assert "## call " in text.stdout and "  input:" in text.stdout
    assert log["goals"][0].split()[0] in text.stdout


def test_a_session_named_and_a_count(demo_store: Path) -> None:
    every = json.loads(_trails("logs", "-n", "50", "--json", store=demo_store).stdout)
    assert len(every) >= 1
    one = _trails("logs", every[-1]["session"], "--json", store=demo_store)
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)[0]["session"] == every[-1]["session"]
    missing = _trails("logs", "urn:trails:session:nosuch", store=demo_store)
    assert missing.returncode != 0
    assert "no session" in missing.stderr and "Traceback" not in missing.stderr


def test_text_fits_the_width_and_shows_the_prompts_last_lines() -> None:
    prompt = "\n".join(f"line {i} " + "x" * 150 for i in range(20))
    log = Log(
        session="urn:trails:session:1",
        principal="did:example:alice",
        started="2026-11-27T10:00:00Z",
        status="ok",
        goals=["find urgent notes"],
        answers=["two notes"],
        entries=[
            Entry(
                "completion",
                "claude",
                "2026-11-27T10:00:01Z",
                "ok",
                "urn:a",
                {"prompt": prompt, "answer": "ok"},
            )
        ],
    )
    text = render_text([log], width=60, prompt_lines=3)
    assert all(len(line) <= 60 for line in text.splitlines())
    assert "line 19" in text and "line 17" in text and "line 16" not in text
    assert "final answer" in text and "two notes" in text
