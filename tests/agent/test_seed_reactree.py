"""Seed 004 (reactree): per-node tools and instruction, spent tools leave the prompt,
custom node types, stages, the adaptive iteration loop and the node count.

Each test is written from the seed's text and reads what happened back from the
store with SPARQL (node outcomes, refused calls, recorded prompts).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import behaviour_tree
from trails.agent.planners.behaviour_tree import (
    Action,
    AgentNode,
    Sequence,
    Stage,
    TreeConfig,
    register_node_type,
    unregister_node_type,
)
from trails.errors import UserError
from trails.llm import LLMClient, Message
from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Solutions, Store, to_python
from trails.testing import assert_conforms

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

NODES = (
    PREFIXES
    + """
SELECT ?run ?id ?kind ?outcome WHERE {
  GRAPH ?g {
    ?node a trails:TreeNode ; trails:inRun ?run ; trails:nodeId ?id ;
          trails:nodeKind ?kind ; trails:nodeOutcome ?outcome ; prov:startedAtTime ?t .
  }
} ORDER BY ?t ?id
"""
)

CALLS = (
    PREFIXES
    + """
SELECT ?run ?capability ?status ?error WHERE {
  GRAPH ?g {
    ?inv a trails:CapabilityInvocation ; trails:status ?status ; trails:stepIndex ?step ;
         prov:wasInformedBy ?by ; trails:capability/trails:capabilityId ?capability .
    ?by prov:wasInformedBy ?run .
    OPTIONAL { ?inv trails:errorMessage ?error }
    OPTIONAL { GRAPH ?cg { ?inv trails:errorMessage ?error } }
  }
} ORDER BY ?step
"""
)

PROMPTS = (
    PREFIXES
    + """
SELECT ?run ?value WHERE {
  GRAPH ?g {
    ?a a trails:LLMCompletion ; prov:wasInformedBy ?run ; prov:used ?p ; trails:stepIndex ?s .
    ?p a trails:Prompt .
  }
  GRAPH ?cg { ?p prov:value ?value }
} ORDER BY ?s
"""
)


def rows(store: Store, query: str, run: str) -> list[dict[str, Any]]:
    result = store.query(query, {"run": IRI(run)})
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items()} for row in result]


def systems(store: Store, run: str) -> list[str]:
    """The recorded system prompt of each of the run's turns, in order."""
    out = []
    for row in rows(store, PROMPTS, run):
        messages = json.loads(row["value"])["messages"]
        out.append(next(m["content"] for m in messages if m["role"] == "system"))
    return out


def test_an_agent_node_has_its_own_tools_and_instruction(
    store: Store, notes: dict[str, list[Any]], reply: Any
) -> None:
    client = LLMClient.mock(
        response=[
            reply("notes.tag", {"note": "n1", "label": "x"}),  # not this node's tool
            reply("notes.search", {"tag": "urgent"}),
            reply("finish", final_answer="n1, n2"),
        ]
    )
    result = behaviour_tree.run(
        "Find urgent notes.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tree=AgentNode(
            "List urgent notes.",
            tools=("notes.search",),
            instruction="Only read; never change a note.",
        ),
    )
    assert result.stopped == "goal_achieved" and result.answer == "n1, n2"
    assert notes["tag"] == []  # the refused call never ran
    calls = rows(store, CALLS, result.activity_iri)
    assert [(c["capability"], c["status"]) for c in calls] == [
        ("notes.tag", "refused"),
        ("notes.search", "ok"),
    ]
    assert "not among node 1's tools" in calls[0]["error"]
    system = systems(store, result.activity_iri)[0]
    assert "Instruction: Only read; never change a note." in system
    assert "- notes.search" in system and "- notes.tag" not in system
    assert_conforms(store)


def test_node_tools_the_run_does_not_offer_are_refused_up_front(
    store: Store, notes: dict[str, list[Any]]
) -> None:
    with pytest.raises(UserError, match=r"notes\.delete"):
        behaviour_tree.run(
            "Go.",
            llm=LLMClient.mock(response=[]),
            session=Session(principal="d:a"),
            tree={"type": "agent", "goal": "x", "tools": ["notes.delete"]},
        )
    with pytest.raises(UserError, match="'tools' must be a list"):
        behaviour_tree.run(
            "Go.",
            llm=LLMClient.mock(response=[]),
            session=Session(principal="d:a"),
            tree={"type": "agent", "goal": "x", "tools": "notes.search"},
        )


def test_an_exhausted_tool_leaves_the_same_nodes_prompt(
    store: Store, notes: dict[str, list[Any]], reply: Any
) -> None:
    client = LLMClient.mock(
        response=[reply("notes.search", {"tag": "urgent"}), reply("finish", final_answer="ok")]
    )
    result = behaviour_tree.run(
        "Go.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tree=AgentNode("Search once, then answer."),
        tool_budgets={"notes.search": 1},
    )
    assert result.stopped == "goal_achieved"
    first, second = systems(store, result.activity_iri)
    assert "- notes.search" in first and "Budget exhausted" not in first
    assert "- notes.search" not in second
    assert "Budget exhausted (do not call): notes.search" in second


@pytest.fixture
def retry_type() -> Iterator[None]:
    """A custom control flow, "retry": its child up to ``times`` times (a fallback)."""
    register_node_type(
        "retry",
        lambda spec: {"type": "fallback", "children": [spec["child"]] * int(spec["times"])},
    )
    yield
    unregister_node_type("retry")


def test_a_custom_node_type_is_a_composition_recorded_like_any_other(
    store: Store, notes: dict[str, list[Any]], retry_type: None
) -> None:
    attempts: list[int] = []
    from trails import capability

    @capability(id="flaky.fetch", description="Fails twice, then works.")
    def fetch() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError("try again")
        return "fetched"

    result = behaviour_tree.run(
        "Fetch it.",
        llm=LLMClient.mock(response=[]),
        session=Session(principal="did:local:alice"),
        tree={"type": "retry", "times": 3, "child": {"type": "action", "action": "flaky.fetch"}},
    )
    assert result.stopped == "goal_achieved" and result.answer == "fetched"
    nodes = rows(store, NODES, result.activity_iri)
    assert sorted((n["id"], n["kind"], n["outcome"]) for n in nodes) == [
        ("1", "fallback", "success"),
        ("1.1", "action", "failure"),
        ("1.2", "action", "failure"),
        ("1.3", "action", "success"),
    ]
    with pytest.raises(UserError, match="already exists"):
        register_node_type("sequence", lambda spec: spec)
    with pytest.raises(UserError, match="node type 'retry' failed"):
        behaviour_tree.run(
            "x", llm=LLMClient.mock(response=[]), session=Session(principal="d:a"),
            tree={"type": "retry", "child": {"type": "action", "action": "flaky.fetch"}},
        )  # fmt: skip


def test_stages_run_in_order_each_under_its_instruction(
    store: Store, notes: dict[str, list[Any]], reply: Any
) -> None:
    client = LLMClient.mock(
        response=[
            reply("notes.search", {"tag": "urgent"}),
            reply("finish", final_answer="found n1, n2"),
            reply("finish", final_answer="2 urgent notes: n1, n2"),
        ]
    )
    session = Session(principal="did:local:alice")
    result = behaviour_tree.run(
        "Report the urgent notes.",
        llm=client,
        session=session,
        tree_config=TreeConfig(
            stages=(
                Stage("research", "Gather the facts with the tools."),
                Stage("report", "Write the answer from the research."),
            )
        ),
    )
    assert result.stopped == "goal_achieved" and result.answer == "2 urgent notes: n1, n2"
    research, _, report = systems(store, result.activity_iri)
    assert "You are the research stage. Gather the facts" in research
    assert "You are the report stage." in report and "found n1, n2" in report
    kinds = [(n["id"], n["kind"]) for n in rows(store, NODES, result.activity_iri)]
    assert sorted(kinds) == [("1", "sequence_early_exit"), ("1.1", "agent"), ("1.2", "agent")]
    assert session.metadata["node_count"] == 3


def test_the_adaptive_loop_ticks_again_until_a_pass_calls_no_tool(
    store: Store, notes: dict[str, list[Any]], reply: Any
) -> None:
    replies = [
        reply("notes.search", {"tag": "urgent"}),
        reply("finish", final_answer="pass 1"),
        reply("notes.search", {"tag": "later"}),
        reply("finish", final_answer="pass 2"),
        reply("finish", final_answer="nothing left"),
        reply("finish", final_answer="never asked"),
    ]

    def answer(_m: list[Message]) -> str:
        return replies.pop(0)

    result = behaviour_tree.run(
        "Work until done.",
        llm=LLMClient.mock(response=answer),
        session=Session(principal="did:local:alice"),
        tree=AgentNode("Do the next thing."),
        tree_config=TreeConfig(max_iterations=5),
        max_steps=20,
    )
    assert result.stopped == "goal_achieved" and result.answer == "nothing left"
    assert len(replies) == 1  # the third pass called no tool: the loop stopped there
    assert notes["search"] == ["urgent", "later"]
    roots = [n for n in rows(store, NODES, result.activity_iri) if n["id"] == "1"]
    assert [n["outcome"] for n in roots] == ["success", "success", "success"]
    # each pass sees where the loop is
    third = systems(store, result.activity_iri)[-1]
    assert "iteration: 2 of 5 done: pass 2" in third


def test_max_iterations_is_checked() -> None:
    with pytest.raises(UserError, match="max_iterations"):
        TreeConfig(max_iterations=0)
    with pytest.raises(UserError, match="Stage"):
        TreeConfig(stages=({"name": "x"},))  # type: ignore[arg-type]


def test_an_action_tree_without_agent_nodes_still_counts_its_nodes(
    store: Store, notes: dict[str, list[Any]]
) -> None:
    session = Session(principal="did:local:alice")
    behaviour_tree.run(
        "Go.",
        llm=LLMClient.mock(response=[]),
        session=session,
        tree=Sequence(
            Action("notes.search", {"tag": "urgent"}), Action("notes.search", {"tag": "x"})
        ),
    )
    assert session.metadata["node_count"] == 3
