"""The seed's own examples, run as written in a fresh process, leave evidence that verifies.

Each example of the agent runtime guide (``tests/data/seeds/000_faa676b9f37455eb.txt``:
Quickstart, Plan-and-Execute, Reflexion) is cut out of the seed text, not rewritten,
and run by a new interpreter recording into an on-disk store. None of them closes its
session; when the interpreter exits, every session must have ended and been sealed:
``trails verify`` exits 0 and ``trails sessions`` shows an end time for each.
The Quickstart talks to Ollama; a loopback fake of ``/api/chat`` answers it
(``OLLAMA_HOST``, which the ollama CLI reads too, points it there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.llm.llm_fakes import FakeServer, Reply, ollama_chat

from trails.audit.querypack import get_query
from trails.store import Solutions, to_python
from trails.store.oxigraph import OxigraphStore

SEED = Path(__file__).parents[1] / "data" / "seeds" / "000_faa676b9f37455eb.txt"

# (first line, the prefix of the last line) of each example in the seed
EXAMPLES = {
    "quickstart": (
        "from trails import capability\nfrom trails.agent import Session\n"
        "from trails.agent.planners import react",
        "print(result.answer",
    ),
    "plan_and_execute": ("import json\nfrom trails import capability", "result = plan_and_execute"),
    "reflexion": (
        "from trails.agent import Session\nfrom trails.agent.planners import reflexion",
        "result = reflexion.run(",
    ),
}


def example(name: str) -> str:
    """The example's code, exactly as the seed prints it."""
    text = SEED.read_text(encoding="utf-8")
    first, last = EXAMPLES[name]
    start = text.index(first)
    lines = text[start:].splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith(last))
    code = "\n".join(lines[: end + 1]) + "\n"
    compile(code, name, "exec")
    return code


FINISH = (
    '```json\n{"thought": "done", "action": "finish", "action_input": {}, '
    '"final_answer": "2 urgent notes"}\n```'
)


@pytest.fixture
def ollama() -> Iterator[FakeServer]:
    server = FakeServer()
    server.enqueue(*[Reply(json=ollama_chat(FINISH)) for _ in range(4)])
    yield server
    server.close()


def trails_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trails.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_seed_example_leaves_ended_sealed_sessions(
    name: str, tmp_path: Path, ollama: FakeServer
) -> None:
    store_dir = tmp_path / "store"
    env = {
        **os.environ,
        "TRAILS_STORE": str(store_dir),
        "TRAILS_FORBID_REAL_MODELS": "1",
        "OLLAMA_HOST": ollama.url,
    }
    run = subprocess.run(
        [sys.executable, "-c", example(name)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    if name == "quickstart":
        assert run.stdout == "2 urgent notes in 1 steps\n"
        assert [r.path for r in ollama.requests] == ["/api/chat"]

    verified = trails_cli("verify", "--json", env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    report = json.loads(verified.stdout)
    assert report["ok"] and report["open_sessions"] == []

    listed = trails_cli("sessions", "--format", "json", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)["results"]["bindings"]
    assert len(rows) == report["graphs_checked"] >= 1
    assert all(r["ended"]["value"] and r["endStatus"]["value"] == "ok" for r in rows)

    store = OxigraphStore(store_dir)
    try:
        result = get_query("sessions").run(store)
        assert isinstance(result, Solutions)
        assert all(to_python(r.get("ended")) is not None for r in result)
    finally:
        store.close()
