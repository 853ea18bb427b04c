"""``trails serve`` never takes a directory store's writer lock, whichever process starts first.

Real processes: ``trails serve`` on a recorded store, and writers as a user runs them
(an agent recording, ``trails hold add``, ``trails erase``). Started first, serve
reads snapshots and every writer writes while it runs (what they write appears on the
console a snapshot later); started after a writer, it serves as well. A writer refused
because another process holds the store names that process: its id and command
(``trails serve`` itself, when a ``write = true`` token makes it a writer).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.console.conftest import ROOT, TOKENS, TRAILS, environment, serving

from trails.server.auth import hash_token, token_entry

HOLDER = """
import sys, time
from trails.store import open_store
store = open_store(sys.argv[1])
print("holding", flush=True)
sys.stdin.readline()  # until the test says so
store.close()
"""


def record(store: Path) -> dict[str, str]:
    """Record the three outcome sessions into ``store`` (an agent, as a process of its own)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.catalogue.record_outcomes", str(store)],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return {line.split()[0]: line.split()[1] for line in done.stdout.splitlines() if line}


def trails(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TRAILS, "--store", "store", *args],
        cwd=home,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def sessions_on_console(url: str) -> set[str]:
    with httpx.Client(base_url=url, timeout=60) as client:
        assert client.post("/console/login", data={"token": TOKENS["auditor"]}).status_code == 303
        page = client.get("/console/").text
    return set(re.findall(r"session\?s=urn%3Atrails%3Asession%3A([0-9a-f-]{36})", page))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    record(tmp_path / "store")
    (tmp_path / "tokens.toml").write_text(
        token_entry(TOKENS["auditor"], "did:example:auditor", ["*"], audit=True)
    )
    return tmp_path


@pytest.fixture
def holder(home: Path) -> Iterator[subprocess.Popen[str]]:
    """A process holding the store open as a writer, until the test lets it go."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home / "store")],
        cwd=home,
        env=environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "holding"
    try:
        yield process
    finally:
        if process.poll() is None:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(60)


def test_serve_first_then_an_agent_a_hold_and_an_erasure_write(home: Path) -> None:
    with serving(home) as url:
        before = sessions_on_console(url)
        assert len(before) == 3
        # an agent records while the console serves the store
        added = record(home / "store")
        held = trails(home, "hold", "add", "did:local:bob", "--reason", "case 7")
        assert held.returncode == 0, held.stderr
        erased = trails(home, "erase", "--session", added["ok"], "--reason", "asked")
        assert erased.returncode == 0, erased.stderr
        # the console shows what the agent recorded, a snapshot later (bounded wait)
        news = {s.rsplit(":", 1)[1] for s in added.values()}
        for _ in range(60):
            if news <= sessions_on_console(url):
                break
            time.sleep(0.5)
        assert sessions_on_console(url) == before | news
        listed = trails(home, "hold", "list", "--format", "json")
        assert listed.returncode == 0 and "case 7" in listed.stdout


def test_a_writer_first_then_serve_and_the_lock_error_names_the_writer(
    home: Path, holder: subprocess.Popen[str]
) -> None:
    with serving(home) as url:
        assert len(sessions_on_console(url)) == 3
        refused = trails(home, "hold", "add", "did:local:alice", "--reason", "case 7")
        assert refused.returncode != 0 and "Traceback" not in refused.stderr
        assert f"process {holder.pid} (" in refused.stderr  # the holder, by id and command
        assert "--store store serve" not in refused.stderr  # not the server: it holds nothing
        # the writer leaves: serve held nothing, so the next writer gets the store
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(60)
        held = trails(home, "hold", "add", "did:local:bob", "--reason", "case 7")
        assert held.returncode == 0, held.stderr


def test_serve_with_a_write_token_holds_the_store_and_is_named(home: Path) -> None:
    (home / "tokens.toml").write_text(
        token_entry(TOKENS["auditor"], "did:example:auditor", ["*"], audit=True)
        + f'[[token]]\nprincipal = "did:example:platform"\nsha256 = "{hash_token("w" * 32)}"\n'
        'graphs = ["*"]\nwrite = true\n'
    )
    with serving(home):
        refused = trails(home, "hold", "add", "did:local:alice", "--reason", "case 7")
        assert refused.returncode != 0 and "Traceback" not in refused.stderr
        assert re.search(r"process [0-9]+ \(trails serve\)", refused.stderr)
