"""The offline mock completes a run: ``LLMClient.mock()``, ``TRAILS_LLM=mock``, ``--llm mock:M``.

Seed 000's Quickstart says "Pick any provider — same API" and lists
``LLMClient.mock(...)`` for tests. A mock given no script is the model a user
trying trails offline gets: it calls no capability and finishes every planner's
run at once with ``mock answer to: <goal> (offline mock: no capability called)``,
recorded like any answer. Each test reads the run back from the store.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import (
    behaviour_tree,
    plan_and_execute,
    plan_execute_reflect,
    react,
    reflexion,
)
from trails.kernel import capability
from trails.llm import LLMClient, Message, Request, ToolSpec
from trails.prov.vocab import NAMESPACES
from trails.store import Solutions, Store

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())
ANSWER = "mock answer to: Find urgent notes. (offline mock: no capability called)"
INVOCATIONS = PREFIXES + "SELECT ?inv WHERE { GRAPH ?g { ?inv a trails:CapabilityInvocation } }"

PLANNERS = {
    "react": react.run,
    "plan_and_execute": plan_and_execute.run,
    "reflexion": reflexion.run,
    "plan_execute_reflect": plan_execute_reflect.run,
    "behaviour_tree": behaviour_tree.run,
}

QUICKSTART = """
from trails import capability
from trails.agent import Session
from trails.agent.planners import react
from trails.llm import LLMClient

@capability(id="notes.search", description="Search notes by tag.")
def search(ctx, tag: str) -> dict:
    return {"hits": ["n1", "n2"]}

client = LLMClient.mock()

sess = Session(principal="did:local:alice")
result = react.run("Find urgent notes.", llm=client, session=sess)
print(result.answer, "in", len(result.steps), "steps")
"""


@pytest.fixture
def search() -> None:
    @capability(id="notes.search", description="Search notes by tag.")
    def _search(ctx: Any, tag: str) -> dict[str, Any]:
        return {"hits": ["n1", "n2"]}


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    return {**env, "TRAILS_STORE": "memory:", "HOME": str(tmp_path), **extra}


@pytest.mark.parametrize("name", sorted(PLANNERS))
def test_every_planner_finishes_on_the_offline_mock(
    name: str, search: None, store: Store, prov: Any
) -> None:
    client = LLMClient.mock()
    result = PLANNERS[name](
        "Find urgent notes.", llm=client, session=Session(principal="did:local:alice")
    )
    assert (result.stopped, result.answer, result.error) == ("goal_achieved", ANSWER, None)
    run = prov.run(result.activity_iri)
    assert (run["stop"], run["answer"]) == ("goal_achieved", ANSWER)
    rows = store.query(INVOCATIONS)
    assert isinstance(rows, Solutions) and list(rows) == []  # it called nothing, as it says


def test_the_seed_quickstart_on_the_offline_mock_prints_the_answer(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", QUICKSTART],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{ANSWER} in 1 steps"


def test_trails_llm_mock_is_the_offline_model_for_a_session_run(tmp_path: Path) -> None:
    code = (
        "from trails import Session\n"
        "r = Session(principal='did:local:alice').run('What is on the list?')\n"
        "print(r.stopped, '|', r.answer)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=_env(tmp_path, TRAILS_LLM="mock"),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "goal_achieved | mock answer to: What is on the list? (offline mock: no capability called)"
    )


def test_trails_demo_with_a_named_mock_completes(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "trails"), "demo", "--llm", "mock:offline"],
        cwd=tmp_path,
        env=_env(tmp_path, TRAILS_STORE=str(tmp_path / "store")),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "stopped  goal_achieved after 1 steps" in done.stdout
    assert "answer   mock answer to: Find the urgent notes" in done.stdout
    assert "offline (0 calls" not in done.stdout  # the model use table lists the mock
    assert "offline:" in done.stdout


def test_a_chat_or_a_native_tools_request_gets_plain_text(store: Store) -> None:
    client = LLMClient.mock()
    assert client.complete("What is 2+2?").text == (
        "mock answer to: What is 2+2? (offline mock: no capability called)"
    )
    request = Request(
        messages=(Message("system", "Reply in JSON."), Message("user", "Goal: Tag n1.")),
        model="mock",
        tools=(ToolSpec(name="notes_tag", description="Tag a note.", parameters={}),),
    )
    reply = client.adapter.complete(request)
    assert reply.text == "mock answer to: Tag n1. (offline mock: no capability called)"
    assert reply.tool_calls == ()
