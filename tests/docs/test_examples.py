"""The seeds' examples in ``examples/`` run as written, each in a fresh process, then verify.

Each example runs with ``python examples/NAME.py`` in an empty directory (so it
records into ``./.trails/store`` there), then ``trails verify`` checks the store
it left. Examples that name a real model (the Quickstart's
``LLMClient.ollama(...)``, ADR-0018's configured default client) reach the
scripted model server through the providers' own environment switches
(``scripted_models.model_env``); nothing else can be reached. ADR-0018's example
gets a scripted trajectory so its capabilities, and the model call inside one of
them, really run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_models import ScriptedModels

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TRAILS = Path(sys.executable).parent / "trails"


def _react(action: str, args: dict[str, object] | None = None, answer: str | None = None) -> str:
    body: dict[str, object] = {"thought": "next", "action": action, "action_input": args or {}}
    if answer is not None:
        body["final_answer"] = answer
    return "```json\n" + json.dumps(body) + "\n```"


# example -> (scripted model replies, a line its output must contain)
EXPECTED: dict[str, tuple[list[str], str]] = {
    "quickstart.py": ([], "done (an answer from the scripted test model) in 1 steps"),
    "plan_and_execute.py": ([], "2 urgent notes. goal_achieved ['notes.search', 'finish']"),
    "reflexion.py": ([], "ok goal_achieved"),
    "persistent_memory.py": (
        [],
        "The SPARQL proxy rejects SERVICE queries learned by did:local:alice",
    ),
    "best_so_far.py": ([], 'max_cost {"hits": ["n1", "n2"], "tag": "urgent"}'),
    "adr_0018_worked_example.py": (
        [
            _react("evidence.fetch", {"doc_id": "SKU-7-10Q"}),
            _react("evidence.summarize", {"text": "Q1 filing: SKU-7 recall notice."}),
            "SKU-7 was recalled in Q1; a corrective action plan is filed.",  # ctx.llm, ollama
            _react("finish", answer="One filing: SKU-7 recalled, corrective plan filed."),
        ],
        "One filing: SKU-7 recalled, corrective plan filed.",
    ),
}


# Examples whose ``Session`` is never closed: its session ends (and is sealed, so
# ``trails verify`` has a ledger to check) only once sessions end at process exit
# (issue 12). Strict: when that lands these pass, and this set must be emptied.
# With the ledger merged, ``trails verify`` passes on every example's store: emptied.
OPEN_AT_EXIT: set[str] = set()


class VerifyFailed(AssertionError):
    """``trails verify`` failed on the store an example left (the example itself ran)."""


def _marks(name: str) -> object:
    if name in OPEN_AT_EXIT:
        reason = "sessions left open end at exit only with issue 12 (trails verify: no ledger)"
        xfail = pytest.mark.xfail(strict=True, raises=VerifyFailed, reason=reason)
        return pytest.param(name, marks=xfail)
    return name


def test_every_example_is_tested() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.slow
@pytest.mark.parametrize("name", [_marks(n) for n in sorted(EXPECTED)])
def test_example_runs_in_a_fresh_process_then_verifies(
    name: str, tmp_path: Path, fresh_env: dict[str, str], models: ScriptedModels
) -> None:
    replies, expected = EXPECTED[name]
    models.enqueue(*replies)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=tmp_path,
        env=fresh_env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout, done.stdout
    assert models.queue == []  # every scripted reply was asked for
    verify = subprocess.run(
        [str(TRAILS), "verify"], cwd=tmp_path, env=fresh_env, capture_output=True, text=True
    )
    if verify.returncode != 0 or "OK" not in verify.stdout:
        raise VerifyFailed(verify.stdout + verify.stderr)


def test_the_worked_example_routes_the_summary_to_its_own_provider(
    tmp_path: Path, fresh_env: dict[str, str], models: ScriptedModels
) -> None:
    """The planner's turns go to the default client (Anthropic), the summary to Ollama."""
    models.enqueue(*EXPECTED["adr_0018_worked_example.py"][0])
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "adr_0018_worked_example.py")],
        cwd=tmp_path,
        env=fresh_env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    paths = [(path, body["model"]) for path, body in models.requests]
    assert paths == [
        ("/v1/messages", "claude-haiku-4-5"),
        ("/v1/messages", "claude-haiku-4-5"),
        ("/api/chat", "llama3.1:8b"),
        ("/v1/messages", "claude-haiku-4-5"),
    ]
