"""Behaviour tree: TreeConfig limits, the early-exit sequence and a model per agent node."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.governance.conftest import turn

from trails.agent import Session
from trails.agent.planners import behaviour_tree
from trails.agent.planners.behaviour_tree import TreeConfig, build_tree
from trails.errors import UserError
from trails.kernel import capability
from trails.llm import LLMClient
from trails.store import Store


def agent(goal: str, **extra: Any) -> dict[str, Any]:
    return {"type": "agent", "goal": goal, **extra}


def test_tree_config_limits_depth_nodes_and_decisions() -> None:
    deep = {"type": "sequence", "children": [{"type": "sequence", "children": [agent("x")]}]}
    build_tree(deep, config=TreeConfig(max_depth=3))
    with pytest.raises(UserError, match="deeper than 2 levels"):
        build_tree(deep, config=TreeConfig(max_depth=2))
    with pytest.raises(UserError, match="more than 2 nodes"):
        build_tree(deep, config=TreeConfig(max_total_nodes=2))
    seed = TreeConfig.seed_defaults()
    assert (seed.max_depth, seed.max_decisions_per_node, seed.max_total_nodes) == (3, 10, 20)
    with pytest.raises(UserError, match="max_depth"):
        TreeConfig(max_depth=0)
    with pytest.raises(UserError, match="'model'"):
        build_tree(agent("x", model=""))


def test_max_decisions_per_node_caps_an_agent_node(store: Store) -> None:
    @capability(id="look")
    def look() -> str:
        return "nothing"

    model = LLMClient.mock(response=turn("look"))  # never finishes
    session = Session(principal="did:local:alice")
    result = behaviour_tree.run(
        "Find it.",
        llm=model,
        session=session,
        tree=agent("look around", max_turns=9),
        tree_config=TreeConfig(max_decisions_per_node=2),
        max_steps=50,
    )
    session.close()
    assert result.stopped == "error"
    assert len(model.requests) == 2  # the node's own 9 turns are capped at 2


def test_an_early_exit_sequence_skips_stages_once_the_task_is_done(store: Store) -> None:
    ran: list[str] = []

    @capability(id="stage", side_effects=True)
    def stage(name: str) -> str:
        ran.append(name)
        return f"{name} done"

    tree = {
        "type": "sequence_early_exit",
        "children": [
            agent("gather"),  # uses a tool, so the sequence goes on
            agent("answer"),  # finishes without a tool: the task is complete
            {"type": "action", "action": "stage", "action_input": {"name": "publish"}},
        ],
    }
    model = LLMClient.mock(
        response=[
            turn("stage", {"name": "gather"}),
            turn("finish", final_answer="gathered"),
            turn("finish", final_answer="42"),
        ]
    )
    session = Session(principal="did:local:alice")
    result = behaviour_tree.run("Answer.", llm=model, session=session, tree=tree)
    session.close()
    assert (result.stopped, result.answer) == ("goal_achieved", "42")
    assert ran == ["gather"]  # publish was skipped
    # the same tree as a plain sequence runs every stage
    model = LLMClient.mock(
        response=[
            turn("stage", {"name": "gather"}),
            turn("finish", final_answer="gathered"),
            turn("finish", final_answer="42"),
        ]
    )
    plain = dict(tree, type="sequence")
    again = Session(principal="did:local:alice")
    behaviour_tree.run("Answer.", llm=model, session=again, tree=plain)
    again.close()
    assert ran == ["gather", "gather", "publish"]


def test_each_agent_node_may_use_its_own_model(store: Store) -> None:
    model = LLMClient.mock(response=turn("finish", final_answer="ok"))
    tree = {
        "type": "sequence",
        "children": [agent("triage", model="small-model"), agent("decide")],
    }
    session = Session(principal="did:local:alice")
    result = behaviour_tree.run("Do it.", llm=model, session=session, tree=tree)
    session.close()
    assert result.stopped == "goal_achieved"
    assert [r.model for r in model.requests] == ["small-model", "mock"]
    plans = session.metadata["plans"][0]
    assert plans["children"][0]["model"] == "small-model"


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_an_agent_node_may_name_a_model_of_another_provider(
    store: Store, monkeypatch: pytest.MonkeyPatch, driver: str
) -> None:
    """A node's ``{"provider", "model"}`` goes to the client configured for that provider
    (a real Ollama client over HTTP to a loopback fake), recorded in the run's graph."""
    from tests.llm.llm_fakes import FakeServer, Reply, ollama_chat

    from trails.llm import configured
    from trails.prov.vocab import NAMESPACES
    from trails.store import Solutions, to_python

    server = FakeServer()
    configured.reset()
    try:
        server.enqueue(
            Reply(json=ollama_chat(turn("finish", final_answer="triaged"), model="qwen3:0.6b"))
        )
        monkeypatch.setenv("TRAILS_LLM_OLLAMA", f"ollama:any@{server.url}")
        model = LLMClient.mock(response=turn("finish", final_answer="decided"))
        small = {"provider": "ollama", "model": "qwen3:0.6b"}
        tree = {"type": "sequence", "children": [agent("triage", model=small), agent("decide")]}
        session = Session(principal="did:local:alice")
        if driver == "run":
            result = behaviour_tree.run("Do it.", llm=model, session=session, tree=tree)
        else:  # the other provider's client is awaited (its acomplete) on this loop
            result = asyncio.run(
                behaviour_tree.arun("Do it.", llm=model, session=session, tree=tree)
            )
        session.close()
    finally:
        configured.reset()
        server.close()
    assert result.stopped == "goal_achieved"
    assert [r.body["model"] for r in server.requests] == ["qwen3:0.6b"]
    assert [r.model for r in model.requests] == ["mock"]  # only the second node
    assert session.metadata["plans"][0]["children"][0]["model"] == small
    prefixes = "".join(f"PREFIX {n}: <{i}>\n" for n, i in NAMESPACES.items())
    rows = store.query(
        prefixes + "SELECT ?provider ?model WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; "
        "prov:wasAssociatedWith ?m . ?m a trails:Model ; trails:provider ?provider ; "
        "trails:modelId ?model } } ORDER BY ?provider",
    )
    assert isinstance(rows, Solutions)
    got = [(to_python(r["provider"]), to_python(r["model"])) for r in rows]
    assert got == [("mock", "mock"), ("ollama", "qwen3:0.6b")]


def test_a_node_model_must_be_a_name_or_a_provider_and_model() -> None:
    for bad in ({"provider": "ollama"}, {"provider": "", "model": "m"}, 3):
        with pytest.raises(UserError, match="'model' must be"):
            build_tree(agent("x", model=bad))
