"""Behaviour tree: sequence, fallback and parallel semantics, trees given or model-built."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trails import capability
from trails.agent import PlanningStrategy, Session
from trails.agent.loop import run as run_loop
from trails.agent.planners import STOP_REASONS, STRATEGIES, behaviour_tree
from trails.agent.planners.behaviour_tree import (
    Action,
    AgentNode,
    Fallback,
    Parallel,
    Sequence,
    build_tree,
    parse_tree_reply,
    tree_to_dict,
)
from trails.errors import ReplyParseError, UserError
from trails.llm import LLMClient, Message, ModelRateLimitError, Response
from trails.memory import WorkingMemory
from trails.prov.vocab import NAMESPACES, T
from trails.store import IRI, Solutions, Store, to_python
from trails.testing import assert_conforms, assert_prov_readable

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

#: Every invocation of a run, informed by the run itself or by one of its completions.
INVOCATIONS = (
    PREFIXES
    + """
SELECT ?run ?step ?action ?input ?status ?by ?byCompletion WHERE {
  GRAPH ?g {
    ?inv a trails:CapabilityInvocation ;
         prov:wasInformedBy ?by ;
         trails:stepIndex ?step ;
         trails:status ?status ;
         trails:capability ?cap ;
         prov:used ?in .
    ?cap trails:capabilityId ?action .
    ?in a trails:CapabilityInput . GRAPH ?cg { ?in prov:value ?input }
    BIND (EXISTS { ?by a trails:LLMCompletion ; prov:wasInformedBy ?run } AS ?byCompletion)
    FILTER (?by = ?run || ?byCompletion)
  }
} ORDER BY ?step
"""
)

#: The tree a run recorded and the activity that generated it.
TREE = (
    PREFIXES
    + """
SELECT ?run ?doc ?value ?by WHERE {
  GRAPH ?g {
    ?doc a trails:PlanDocument ; prov:wasGeneratedBy ?by .
    GRAPH ?cg { ?doc prov:value ?value }
    FILTER (?by = ?run || EXISTS { ?by prov:wasInformedBy ?run })
  }
}
"""
)


def _rows(store: Store, query: str, run: str) -> list[dict[str, Any]]:
    result = store.query(query, {"run": IRI(run)})
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items() if k != "run"} for row in result]


def invocations(store: Store, run: str) -> list[dict[str, Any]]:
    rows = _rows(store, INVOCATIONS, run)
    for row in rows:
        row["input"] = json.loads(row["input"])
    return rows


def recorded_tree(store: Store, run: str) -> dict[str, Any]:
    rows = _rows(store, TREE, run)
    assert len(rows) == 1, rows
    return rows[0] | {"value": json.loads(rows[0]["value"])}


def no_model() -> LLMClient:
    """A client every given-tree test passes: it must not be called."""
    return LLMClient.mock(response=[])


def fenced(value: Any) -> str:
    return "```json\n" + json.dumps(value) + "\n```"


SEARCH = Action("notes.search", {"tag": "urgent"})
MISSING = Action("notes.missing")
TAG = Action("notes.tag", {"note": "n1", "label": "seen"})
HITS = json.dumps({"hits": ["n1", "n2"]})


@pytest.fixture
def broken() -> list[int]:
    """Register ``notes.broken``, a handler that always raises; the list counts its calls."""
    calls: list[int] = []

    @capability(id="notes.broken", description="Always fails.")
    def fail() -> str:
        calls.append(1)
        raise RuntimeError("disk on fire")

    return calls


# -- control-node semantics, on given trees --------------------------------------------


def test_sequence_runs_in_order_and_answers_with_the_last_child(
    store: Store, notes: dict[str, list[Any]], prov: Any
) -> None:
    client = no_model()
    session = Session(principal="did:local:alice")
    result = behaviour_tree.run(
        "Search, then tag.", llm=client, session=session, tree=Sequence(SEARCH, TAG)
    )
    assert result.stopped == "goal_achieved" and result.answer == "tagged n1 seen"
    assert result.strategy == "behaviour_tree"
    assert client.adapter.calls == 0
    assert notes == {"search": ["urgent"], "tag": [("n1", "seen")]}
    assert [(s.thought, s.action, s.observation) for s in result.steps] == [
        ("behaviour tree node 1.1", "notes.search", {"hits": ["n1", "n2"]}),
        ("behaviour tree node 1.2", "notes.tag", "tagged n1 seen"),
    ]
    run = prov.run(result.activity_iri)
    assert run["cls"] == T.BehaviourTreePlan and run["stop"] == "goal_achieved"
    assert run["answer"] == "tagged n1 seen" and run["parent"] == session.iri
    assert prov.termination(result.activity_iri) is None
    assert_conforms(store)


def test_sequence_stops_at_the_first_failing_child(
    store: Store, notes: dict[str, list[Any]], prov: Any
) -> None:
    result = behaviour_tree.run(
        "Search, break, tag.",
        llm=no_model(),
        session=Session(principal="did:local:alice"),
        tree=Sequence(SEARCH, MISSING, TAG),
    )
    assert result.stopped == "error"
    assert result.error == (
        "the behaviour tree failed: its root sequence failed (last failing leaf: node 1.2)"
    )
    assert notes["tag"] == []  # never reached
    assert [s.action for s in result.steps] == ["notes.search", "notes.missing"]
    assert result.answer is not None and result.answer.startswith("error: unknown capability")
    term = prov.termination(result.activity_iri)
    assert term["cls"] == T.Error and "node 1.2" in term["reason"]


def test_fallback_succeeds_at_the_first_succeeding_child(
    store: Store, notes: dict[str, list[Any]], broken: list[int]
) -> None:
    result = behaviour_tree.run(
        "Find something.",
        llm=no_model(),
        session=Session(principal="did:local:alice"),
        tree=Fallback(Action("notes.broken"), SEARCH, TAG),
    )
    assert result.stopped == "goal_achieved" and result.answer == HITS
    assert broken == [1] and notes["search"] == ["urgent"] and notes["tag"] == []
    assert result.steps[0].observation.startswith("error: ")
    assert "disk on fire" in result.steps[0].observation


def test_a_failing_fallback_chain_tries_every_child_then_fails(
    store: Store, notes: dict[str, list[Any]], broken: list[int], prov: Any
) -> None:
    give_up = fenced({"thought": "no tool fits", "action": "fail", "action_input": {"reason": "x"}})
    client = LLMClient.mock(response=[give_up])
    result = behaviour_tree.run(
        "Find something.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tree=Fallback(MISSING, Action("notes.broken"), AgentNode("Think of another way.")),
    )
    assert result.stopped == "error"
    assert "root fallback failed (last failing leaf: node 1.3)" in (result.error or "")
    assert [s.action for s in result.steps] == ["notes.missing", "notes.broken", "fail"]
    assert broken == [1] and client.adapter.calls == 1
    assert result.answer == "x"
    # the failing handler ran; the unknown id ran nothing and is on record as refused
    rows = invocations(store, result.activity_iri)
    assert [(r["step"], r["action"], r["status"], r["byCompletion"]) for r in rows] == [
        (0, "notes.missing", "refused", False),
        (1, "notes.broken", "error", False),
    ]
    assert prov.run(result.activity_iri)["stop"] == "error"
    assert prov.termination(result.activity_iri)["cls"] == T.Error
    assert_conforms(store)


def test_parallel_runs_every_child_and_succeeds_on_a_majority(
    store: Store, notes: dict[str, list[Any]]
) -> None:
    session = Session(principal="did:local:alice")
    result = behaviour_tree.run(
        "Vote.", llm=no_model(), session=session, tree=Parallel(SEARCH, MISSING, TAG)
    )
    assert result.stopped == "goal_achieved"
    assert result.answer == "tagged n1 seen"  # the last succeeding child
    assert [s.action for s in result.steps] == ["notes.search", "notes.missing", "notes.tag"]

    # one of two is no majority: every child still runs, and the parallel fails
    result = behaviour_tree.run(
        "Vote.", llm=no_model(), session=session, tree=Parallel(SEARCH, MISSING)
    )
    assert result.stopped == "error" and "root parallel failed" in (result.error or "")
    assert [s.action for s in result.steps] == ["notes.search", "notes.missing"]
    assert notes["search"] == ["urgent", "urgent"]


def test_nested_tree_given_as_a_dict_and_recorded_by_the_run(
    store: Store, notes: dict[str, list[Any]], prov: Any
) -> None:
    tree = {
        "type": "sequence",
        "children": [
            {"type": "fallback", "children": [{"type": "action", "action": "notes.missing"},
                                              {"type": "action", "action": "notes.search",
                                               "action_input": {"tag": "urgent"}}]},
            {"type": "action", "action": "notes.tag",
             "action_input": {"note": "n2", "label": "done"}},
        ],
    }  # fmt: skip
    memory = WorkingMemory()
    session = Session(principal="did:local:alice")
    result = behaviour_tree.run(
        "Find and tag.", llm=no_model(), session=session, tree=tree, working_memory=memory
    )
    assert result.stopped == "goal_achieved" and result.answer == "tagged n2 done"
    # leaf results in the working memory, by node id
    assert dict(memory.snapshot()) == {
        "1.1.1": memory.get("1.1.1"),
        "1.1.2": f"success: {HITS}",
        "1.2": "success: tagged n2 done",
    }
    assert memory.get("1.1.1").startswith("failure: error: unknown capability")
    # the tree, with node ids, is a PlanDocument generated by the run itself
    doc = recorded_tree(store, result.activity_iri)
    assert doc["by"] == result.activity_iri
    assert doc["value"]["children"][0]["children"][1] == {
        "id": "1.1.2",
        "type": "action",
        "action": "notes.search",
        "action_input": {"tag": "urgent"},
    }
    assert session.metadata["plans"] == [doc["value"]]
    # given action leaves are informed by the run, one step index per dispatch
    rows = invocations(store, result.activity_iri)
    # (the unknown id ran nothing: it is on record as a refused call)
    assert [(r["step"], r["action"], r["input"], r["by"]) for r in rows] == [
        (0, "notes.missing", {}, result.activity_iri),
        (1, "notes.search", {"tag": "urgent"}, result.activity_iri),
        (2, "notes.tag", {"note": "n2", "label": "done"}, result.activity_iri),
    ]
    assert [s.activity_iri for s in result.steps] == [
        str(r["inv"]) for r in _inv_iris(store, result.activity_iri)
    ]
    assert_conforms(store)
    assert_prov_readable(store, activities={result.activity_iri, session.iri})


def _inv_iris(store: Store, run: str) -> list[dict[str, Any]]:
    query = (
        PREFIXES + "SELECT ?run ?inv WHERE { GRAPH ?g { ?inv a trails:CapabilityInvocation ; "
        "prov:wasInformedBy ?run ; trails:stepIndex ?step } } ORDER BY ?step"
    )
    return _rows(store, query, run)


# -- model-built trees and agent nodes ---------------------------------------------------


def route(tree_replies: list[str], agent_replies: list[str]) -> Any:
    def answer(messages: list[Message]) -> str:
        if "planner of a behaviour-tree agent" in messages[0].content:
            return tree_replies.pop(0)
        return agent_replies.pop(0)

    return answer


def test_model_built_tree_with_an_agent_node(
    store: Store, notes: dict[str, list[Any]], reply: Any, prov: Any
) -> None:
    tree = {
        "type": "sequence",
        "children": [
            {"type": "action", "action": "notes.search", "action_input": {"tag": "urgent"}},
            {"type": "agent", "goal": "Tag the first hit as seen."},
        ],
    }
    client = LLMClient.mock(
        response=route(
            [fenced(tree)],
            [
                reply("notes.tag", {"note": "n1", "label": "seen"}),
                reply("finish", final_answer="n1 tagged"),
            ],
        )
    )
    session = Session(principal="did:local:alice")
    result = behaviour_tree.run("Tag the first urgent note.", llm=client, session=session)

    assert result.stopped == "goal_achieved" and result.answer == "n1 tagged"
    assert [(s.action, s.observation) for s in result.steps] == [
        ("notes.search", {"hits": ["n1", "n2"]}),
        ("notes.tag", "tagged n1 seen"),
        ("finish", None),
    ]
    # the agent node saw its sub-goal, the tools and the working memory
    agent_prompt = client.adapter.requests[1].messages[0].content
    assert "Your sub-goal: Tag the first hit as seen." in agent_prompt
    assert "- notes.tag: Tag a note." in agent_prompt
    assert f"1.1: success: {HITS}" in agent_prompt
    # completions and dispatches share one step sequence
    turns = prov.completions(result.activity_iri)
    assert [c["step"] for c in turns] == [0, 2, 4]
    decompose, tag_turn, finish_turn = (c["completion"] for c in turns)
    rows = invocations(store, result.activity_iri)
    assert [(r["step"], r["action"], r["status"], r["by"]) for r in rows] == [
        (1, "notes.search", "ok", decompose),  # a leaf of the tree: chosen by the planner turn
        (3, "notes.tag", "ok", tag_turn),  # chosen by the agent turn
    ]
    assert result.steps[2].activity_iri == finish_turn
    doc = recorded_tree(store, result.activity_iri)
    assert doc["by"] == decompose
    assert doc["value"]["children"][1] == {
        "id": "1.2",
        "type": "agent",
        "goal": "Tag the first hit as seen.",
    }
    assert [e.content for e in session.history if e.role == "user"] == [
        "Goal: Tag the first urgent note."
    ]
    assert_conforms(store)
    assert_prov_readable(store, activities={result.activity_iri, decompose, tag_turn})


def test_malformed_tree_gets_one_nudge(store: Store, notes: dict[str, list[Any]]) -> None:
    bad_then_good = [
        fenced({"type": "sequence", "children": []}),
        fenced({"tree": {"type": "action", "action": "notes.search", "action_input": {}}}),
    ]
    client = LLMClient.mock(response=route(bad_then_good, []))
    result = behaviour_tree.run("Go.", llm=client, session=Session(principal="d:a"))
    assert result.stopped == "error"  # the search without a tag is invalid: the leaf fails
    assert client.adapter.calls == 2
    nudge = client.adapter.requests[1].messages[-1].content
    assert "a sequence needs at least one child" in nudge

    client = LLMClient.mock(response=route(["no tree", '{"type": "loop"}'], []))
    result = behaviour_tree.run("Go.", llm=client, session=Session(principal="d:a"))
    assert result.stopped == "error"
    assert result.error is not None and result.error.startswith("malformed tree after a retry")
    assert "'type' must be one of" in result.error


def test_agent_node_turn_cap_and_malformed_replies(
    store: Store, notes: dict[str, list[Any]], reply: Any
) -> None:
    search = reply("notes.search", {"tag": "urgent"})
    # a node that never finishes fails after its turns; the fallback moves on
    client = LLMClient.mock(response=[search, search, reply("finish", final_answer="ok")])
    result = behaviour_tree.run(
        "Go.",
        llm=client,
        session=Session(principal="d:a"),
        tree=Fallback(AgentNode("Loop.", max_turns=2), AgentNode("Finish.")),
    )
    assert result.stopped == "goal_achieved" and result.answer == "ok"
    assert [s.action for s in result.steps] == ["notes.search", "notes.search", "finish"]

    # two malformed agent replies in a row stop the run
    client = LLMClient.mock(response=['{"junk": ', '```json\n{"more junk"\n```'])
    result = behaviour_tree.run(
        "Go.", llm=client, session=Session(principal="d:a"), tree=AgentNode("Do.")
    )
    assert result.stopped == "error"
    assert (result.error or "").startswith("malformed reply after a retry")


# -- limits ------------------------------------------------------------------------------


def test_max_steps_counts_turns_and_dispatches(
    store: Store, notes: dict[str, list[Any]], reply: Any, prov: Any
) -> None:
    tree = fenced({"type": "agent", "goal": "Search forever."})
    client = LLMClient.mock(response=route([tree], [reply("notes.search", {"tag": "u"})] * 9))
    result = behaviour_tree.run(
        "Go.", llm=client, session=Session(principal="d:a"), max_steps=5, agent_max_turns=9
    )
    # decompose (0), turn (1), dispatch (2), turn (3), dispatch (4): the 6th step is refused
    assert result.stopped == "max_steps"
    assert client.adapter.calls == 3 and notes["search"] == ["u", "u"]
    assert result.answer == json.dumps({"hits": []})
    term = prov.termination(result.activity_iri)
    assert term["cls"] == T.StepLimit and term["limit"] == 5 and term["observed"] == 5
    assert_conforms(store)


def _priced(text: str, *, usd: float = 0.0, tokens: int = 0) -> Response:
    return Response(text=text, model="mock", usd=usd, input_tokens=tokens)


TERMINATION_CLASS = {
    "max_steps": T.StepLimit,
    "max_cost": T.BudgetBreach,
    "max_tokens": T.BudgetBreach,
    "max_wall_time": T.BudgetBreach,
    "error": T.Error,
}


@pytest.mark.parametrize("stop", STOP_REASONS)
def test_every_stop_reason_is_reached_and_recorded(
    store: Store, notes: dict[str, list[Any]], reply: Any, prov: Any, stop: str
) -> None:
    tree = fenced({"type": "agent", "goal": "Search."})
    agent = reply("finish", final_answer="done") if stop == "goal_achieved" else None
    search = reply("notes.search", {"tag": "urgent"})

    def answer(messages: list[Message]) -> Response:
        if "planner of a behaviour-tree agent" in messages[0].content:
            return _priced(tree, usd=0.1, tokens=10)
        return _priced(agent or search, usd=0.1, tokens=10)

    script: Any = answer
    if stop == "error":
        script = [_priced(tree), _priced(search), ModelRateLimitError("slow down")]
    kwargs: dict[str, Any] = {
        "max_steps": 3 if stop == "max_steps" else 10,
        "max_cost_usd": 0.05 if stop == "max_cost" else None,
        "max_tokens": 5 if stop == "max_tokens" else None,
        "max_wall_time_s": 0.0 if stop == "max_wall_time" else None,
    }
    client = LLMClient.mock(response=script)
    result = behaviour_tree.run(
        "Find urgent notes.", llm=client, session=Session(principal="d:a"), **kwargs
    )
    assert result.stopped == stop, result
    assert (result.error is not None) == (stop == "error")
    assert prov.run(result.activity_iri)["stop"] == stop
    term = prov.termination(result.activity_iri)
    if stop == "goal_achieved":
        assert term is None and result.answer == "done"
    else:
        assert term is not None and term["cls"] == TERMINATION_CLASS[stop]
    # budgets are sampled before each step: the breach is seen before the next call
    expected_calls = {"max_cost": 1, "max_tokens": 1, "max_wall_time": 0, "max_steps": 2}
    if stop in expected_calls:
        assert client.adapter.calls == expected_calls[stop]
    if stop == "error":
        assert "slow down" in (result.error or "")
    assert_conforms(store)


def test_budgets_are_checked_before_each_dispatch_of_a_given_tree(
    store: Store, notes: dict[str, list[Any]], monkeypatch: pytest.MonkeyPatch, prov: Any
) -> None:
    clock = {"now": 10.0}
    monkeypatch.setattr(run_loop, "monotonic", lambda: clock["now"])

    @capability(id="notes.slow", description="Takes a while.")
    def slow() -> str:
        clock["now"] += 0.6
        return "slept"

    result = behaviour_tree.run(
        "Go.",
        llm=no_model(),
        session=Session(principal="d:a"),
        tree=Sequence(Action("notes.slow"), Action("notes.slow"), SEARCH),
        max_wall_time_s=1.0,
    )
    assert result.stopped == "max_wall_time" and result.answer == "slept"
    assert [s.action for s in result.steps] == ["notes.slow", "notes.slow"]
    assert notes["search"] == []
    term = prov.termination(result.activity_iri)
    assert term["limit"] == 1.0 and term["observed"] == pytest.approx(1.2)


def test_tool_budgets_and_action_validator(
    store: Store, notes: dict[str, list[Any]], reply: Any
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def no_done_labels(action: str, action_input: dict[str, Any]) -> str | None:
        seen.append((action, action_input))
        return "label 'done' is reserved" if action_input.get("label") == "done" else None

    result = behaviour_tree.run(
        "Go.",
        llm=no_model(),
        session=Session(principal="d:a"),
        tree=Parallel(
            SEARCH, SEARCH, Action("notes.tag", {"note": "n1", "label": "done"}), TAG, SEARCH
        ),
        tool_budgets={"notes.search": 1},
        validate_action=no_done_labels,
    )
    observations = [s.observation for s in result.steps]
    assert observations[1] == "error: tool budget of 'notes.search' exhausted (1 calls)"
    assert observations[2] == "error: refused: label 'done' is reserved"
    assert observations[4] == observations[1]
    assert notes == {"search": ["urgent"], "tag": [("n1", "seen")]}
    assert result.stopped == "error"  # 2 of 5 succeeded: no majority
    assert [a for a, _ in seen] == ["notes.search", "notes.tag", "notes.tag"]

    # an agent node no longer sees a tool whose budget is spent
    client = LLMClient.mock(response=[reply("finish", final_answer="ok")])
    behaviour_tree.run(
        "Go.",
        llm=client,
        session=Session(principal="d:a"),
        tree=Sequence(SEARCH, AgentNode("Next.")),
        tool_budgets={"notes.search": 1},
    )
    prompt = client.adapter.requests[0].messages[0].content
    assert "- notes.tag" in prompt and "- notes.search" not in prompt


# -- arguments, parsing, registration ----------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"tree": {"type": "sequence", "children": []}}, "at least one child"),
        ({"tree": {"type": "action"}}, "'action' must be a non-empty string"),
        ({"tree": {"type": "agent", "goal": "x", "max_turns": 0}}, "max_turns"),
        ({"tree": Sequence(SEARCH, "not a node")}, "tree node 1.2"),  # type: ignore[arg-type]
        ({"agent_max_turns": 0}, "agent_max_turns"),
        ({"tool_budgets": {"notes.search": -1}}, "tool_budgets"),
        ({"validate_action": "yes"}, "validate_action"),
        ({"working_memory": {}}, "working_memory"),
        ({"episodic": object()}, "episodic"),
        ({"max_steps": 0}, "max_steps"),
    ],
)
def test_bad_arguments_are_named_and_record_nothing(
    store: Store, kwargs: dict[str, Any], needle: str
) -> None:
    with pytest.raises(UserError, match=needle):
        behaviour_tree.run("Goal.", llm=no_model(), session=Session(principal="d:a"), **kwargs)
    assert store.graphs() == []


def test_tree_reading_and_limits() -> None:
    tree = Sequence(SEARCH, Fallback(AgentNode("a", max_turns=2), MISSING))
    as_dict = tree_to_dict(tree)
    assert as_dict["children"][1]["children"][0] == {
        "id": "1.2.1",
        "type": "agent",
        "goal": "a",
        "max_turns": 2,
    }
    assert build_tree(as_dict) == tree
    assert parse_tree_reply("Here:\n" + fenced({"tree": as_dict})) == tree
    deep: dict[str, Any] = {"type": "action", "action": "x"}
    for _ in range(8):
        deep = {"type": "sequence", "children": [deep]}
    with pytest.raises(ReplyParseError, match="deeper than 8"):
        parse_tree_reply(fenced(deep))
    wide = {"type": "parallel", "children": [{"type": "action", "action": "x"}] * 64}
    with pytest.raises(UserError, match="more than 64 nodes"):
        build_tree(wide)
    with pytest.raises(ReplyParseError, match="no JSON tree"):
        parse_tree_reply('{"steps": []}')


def test_registered_as_a_strategy() -> None:
    assert STRATEGIES["behaviour_tree"] is behaviour_tree
    assert isinstance(behaviour_tree, PlanningStrategy)
    assert Session.new(strategy="behaviour-tree", principal="d:a").strategy == "behaviour_tree"


def test_session_run_and_caller_ctx(
    store: Store, ctx: Any, notes: dict[str, list[Any]], reply: Any, prov: Any
) -> None:
    from trails.kernel import default_tracker

    # Session.run picks the planner by name and passes the tree through
    session = Session.new(strategy="behaviour_tree", principal="did:local:alice")
    result = session.run(
        "Search.",
        llm=no_model(),
        tree={"type": "action", "action": "notes.search", "action_input": {"tag": "urgent"}},
    )
    assert result.strategy == "behaviour_tree" and result.answer == HITS
    assert [r.capability for r in session.invocations] == ["notes.search"]

    # with ctx=, the run is a child of the caller and its model calls are booked for it
    parent = ctx.recorder.minter.activity()
    other = Session(principal="did:local:bob")
    client = LLMClient.mock(response=[reply("finish", final_answer="ok")])
    result = behaviour_tree.run(
        "Think.", llm=client, session=other, ctx=ctx.child(parent=parent), tree=AgentNode("Think.")
    )
    assert result.stopped == "goal_achieved" and result.answer == "ok"
    run = prov.run(result.activity_iri)
    assert run["parent"] == parent and run["principal"] == "did:local:alice"
    assert not other.opened
    assert {e.principal for e in default_tracker().envelopes()} == {"did:local:alice"}


def test_agent_nodes_keep_and_find_episodes(
    store: Store, ctx: Any, notes: dict[str, list[Any]], reply: Any
) -> None:
    from trails.memory import StoreEpisodicMemory

    episodic = StoreEpisodicMemory(ctx)
    first = LLMClient.mock(
        response=[
            reply("notes.tag", {"note": "n1", "label": "seen"}),
            reply("finish", final_answer="n1 tagged"),
        ]
    )
    result = behaviour_tree.run(
        "Tag.",
        llm=first,
        session=Session(principal="did:local:alice"),
        tree=AgentNode("Tag the urgent note n1 as seen."),
        episodic=episodic,
    )
    assert result.stopped == "goal_achieved"
    assert "Past episodes" not in first.adapter.requests[0].messages[0].content
    [kept] = episodic.retrieve("Tag the urgent note n1", k=3)
    assert (kept.goal, kept.steps, kept.outcome, kept.result) == (
        "Tag the urgent note n1 as seen.",
        ('notes.tag {"label": "seen", "note": "n1"}',),
        "success",
        "n1 tagged",
    )

    # the next similar sub-goal sees the episode in its prompt; a failure is kept too
    second = LLMClient.mock(response=[reply("fail", {"reason": "n2 is locked"})])
    result = behaviour_tree.run(
        "Tag.",
        llm=second,
        session=Session(principal="did:local:alice"),
        tree=AgentNode("Tag the urgent note n2 as seen."),
        episodic=episodic,
    )
    prompt = second.adapter.requests[0].messages[0].content
    assert "Past episodes of similar sub-goals:" in prompt
    assert "Goal: Tag the urgent note n1 as seen.\nOutcome: success" in prompt
    assert result.stopped == "error" and result.answer == "n2 is locked"
    failures = episodic.retrieve("Tag the urgent note n2", outcome="failure")
    assert [(e.goal, e.result) for e in failures] == [
        ("Tag the urgent note n2 as seen.", "n2 is locked")
    ]
    assert_conforms(store)
