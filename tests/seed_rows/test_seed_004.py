"""Seed 004 (reactree behaviour trees), rows 001-026, row by row: control flow, node
outcomes, shared state, agent nodes and the tree's config. Each test grades one row of
``tests/seed_rows/rows.json`` as the seed's text describes it, and reads the evidence back
from the store with SPARQL (bound parameters) where the action should leave some.

The seed's terraform example is the running scene (``_seed_004``): ``tf.analyze`` works,
``tf.fix`` fails, ``tf.verify`` works, ``tf.apply`` changes the world, ``tf.done`` ends a run.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from tests.seed_rows._seed_004 import (
    ANALYZE,
    CALLS,
    COMPLETIONS,
    DECISIONS,
    FIX,
    PLAN_DOCUMENT,
    PREFIXES,
    REACTREE,
    RUN,
    VERIFY,
    Heard,
    alice,
    finish,
    no_model,
    nodes,
    register_tf,
    rows,
    session_of,
    turn,
)

from trails import capability
from trails.agent.planners import behaviour_tree
from trails.agent.planners.behaviour_tree import (
    Action,
    AgentNode,
    Fallback,
    Parallel,
    Sequence,
    SequenceWithEarlyExit,
    Stage,
    TreeConfig,
    register_node_type,
    unregister_node_type,
)
from trails.errors import UserError
from trails.llm import LLMClient
from trails.memory import NoOpEpisodicMemory, StoreEpisodicMemory, WorkingMemory
from trails.memory.episodic import Episode
from trails.store import Store


@pytest.fixture
def tf() -> dict[str, int]:
    """The seed's terraform capabilities; the dict counts their calls."""
    return register_tf()


# -- control flow --------------------------------------------------------------------------


@pytest.mark.seed_row("004-001")
def test_sequence_is_and_fails_fast(store: Store, tf: dict[str, int]) -> None:
    result = behaviour_tree.run(
        "Fix all lint errors", llm=no_model(), session=alice(), tree=Sequence(ANALYZE, FIX, VERIFY)
    )
    assert result.stopped == "error"
    assert result.error == (
        "the behaviour tree failed: its root sequence failed (last failing leaf: node 1.2)"
    )
    assert tf == {"analyze": 1, "fix": 1, "verify": 0, "apply": 0}
    assert nodes(store, result.activity_iri) == [
        ("1", "sequence", "failure"),
        ("1.1", "action", "success"),
        ("1.2", "action", "failure"),
        ("1.3", "action", "skipped"),
    ]


@pytest.mark.seed_row("004-002")
def test_fallback_is_or_and_ends_at_the_first_success(store: Store, tf: dict[str, int]) -> None:
    result = behaviour_tree.run(
        "Fix it", llm=no_model(), session=alice(), tree=Fallback(FIX, ANALYZE, VERIFY)
    )
    assert (result.stopped, result.answer) == ("goal_achieved", "analyzed main.tf")
    assert tf["verify"] == 0
    assert nodes(store, result.activity_iri) == [
        ("1", "fallback", "success"),
        ("1.1", "action", "failure"),
        ("1.2", "action", "success"),
        ("1.3", "action", "skipped"),
    ]


@pytest.mark.seed_row("004-003")
def test_fallback_whose_children_all_fail_fails(store: Store, tf: dict[str, int]) -> None:
    result = behaviour_tree.run("Fix it", llm=no_model(), session=alice(), tree=Fallback(FIX, FIX))
    assert result.stopped == "error" and tf["fix"] == 2
    assert result.error == (
        "the behaviour tree failed: its root fallback failed (last failing leaf: node 1.2)"
    )
    assert [r["stop"] for r in rows(store, RUN, run=str(result.activity_iri))] == ["error"]
    assert ("1", "fallback", "failure") in nodes(store, result.activity_iri)


VOTE = (
    PREFIXES
    + """
SELECT ?run ?for ?against ?needed WHERE { GRAPH ?g {
  ?n trails:inRun ?run ; trails:nodeKind "parallel" ; trails:voteSuccesses ?for ;
     trails:voteFailures ?against ; trails:voteThreshold ?needed .
} }
"""
)


@pytest.mark.seed_row("004-004")
def test_parallel_is_a_majority_vote_recorded_with_its_tally(
    store: Store, tf: dict[str, int]
) -> None:
    won = behaviour_tree.run(
        "Check", llm=no_model(), session=alice(), tree=Parallel(VERIFY, FIX, VERIFY)
    )
    assert (won.stopped, won.answer) == ("goal_achieved", "verified")
    assert rows(store, VOTE, run=str(won.activity_iri)) == [{"for": 2, "against": 1, "needed": 2}]
    lost = behaviour_tree.run("Check", llm=no_model(), session=alice(), tree=Parallel(VERIFY, FIX))
    assert lost.stopped == "error"  # 1 of 2 is no majority
    assert rows(store, VOTE, run=str(lost.activity_iri)) == [{"for": 1, "against": 1, "needed": 2}]


@pytest.mark.seed_row("004-005")
def test_parallel_children_run_concurrently(store: Store) -> None:
    meet = threading.Barrier(3, timeout=30)  # only children running at once all get past it

    @capability(id="tf.wait", description="Wait for the siblings.")
    def wait() -> str:
        meet.wait()
        return "met"

    leaf = Action("tf.wait")
    result = behaviour_tree.run(
        "Fan out", llm=no_model(), session=alice(), tree=Parallel(leaf, leaf, leaf)
    )
    assert result.stopped == "goal_achieved"
    assert [s.observation for s in result.steps] == ["met", "met", "met"]


@pytest.mark.seed_row("004-006")
def test_sequence_with_early_exit_skips_stages_after_one_without_tool_calls(
    store: Store, tf: dict[str, int]
) -> None:
    client = LLMClient.mock(response=[finish("2"), finish("never")])
    result = behaviour_tree.run(
        "How many files?",
        llm=client,
        session=alice(),
        tree=SequenceWithEarlyExit(AgentNode("Answer if you can."), AgentNode("Act.")),
    )
    assert (result.stopped, result.answer) == ("goal_achieved", "2")
    assert len(client.requests) == 1
    assert nodes(store, result.activity_iri) == [
        ("1", "sequence_early_exit", "success"),
        ("1.1", "agent", "success"),
        ("1.2", "agent", "skipped"),
    ]


@pytest.mark.seed_row("004-007")
def test_node_status_is_running_then_success_or_failure(store: Store, tf: dict[str, int]) -> None:
    from trails.agent.planners.behaviour_tree import Checkpointer, tree_state

    seen: list[str] = []

    @capability(id="tf.peek", description="Read the tree's state while this leaf runs.")
    def peek() -> str:
        seen.append(tree_state("peek-1", principal="did:local:alice")["reactree_node_status"])
        return "peeked"

    behaviour_tree.run("Peek", llm=no_model(), session=alice(), tree=Sequence(ANALYZE, Action("tf.peek")),
                       checkpointer=Checkpointer("peek-1"))  # fmt: skip
    assert seen == ["Running"]  # the store says the leaf is running while it runs
    assert tree_state("peek-1", principal="did:local:alice")["reactree_node_status"] == "Success"
    result = behaviour_tree.run(
        "Go", llm=no_model(), session=alice(), tree=Sequence(ANALYZE, ANALYZE, ANALYZE), max_steps=1
    )
    assert result.stopped == "max_steps"
    outcomes = {outcome for _, _, outcome in nodes(store, result.activity_iri)}
    assert outcomes <= {"success", "failure", "skipped", "stopped"}
    assert "stopped" in outcomes and "success" in outcomes
    from trails.agent.planners.behaviour_tree import NodeStatus

    assert [str(s) for s in NodeStatus] == ["Running", "Success", "Failure"]
    assert NodeStatus("success") is NodeStatus.Success and NodeStatus.Failure.String() == "Failure"


TRACE = (
    PREFIXES
    + """
SELECT ?run ?id ?outcome ?capability WHERE { GRAPH ?g {
  ?root trails:inRun ?run ; trails:nodeId "1" ; prov:wasInformedBy+ ?node .
  ?node a trails:TreeNode ; trails:nodeId ?id ; trails:nodeOutcome ?outcome ;
        prov:wasInformedBy ?inv .
  ?inv a trails:CapabilityInvocation ; trails:capability/trails:capabilityId ?capability .
} } ORDER BY ?id
"""
)


@pytest.mark.seed_row("004-008")
def test_node_outcomes_trace_the_success_and_failure_paths(
    store: Store, tf: dict[str, int]
) -> None:
    heard = Heard()
    result = behaviour_tree.run(
        "Fix",
        llm=no_model(),
        session=alice(),
        tree=Sequence(Fallback(FIX, ANALYZE), VERIFY),
        observers=[heard],
    )
    assert result.stopped == "goal_achieved"
    # live: each node's status as an event, in the order the nodes ended
    assert heard.nodes() == [
        ("1.1.1", "failure", 1),
        ("1.1.2", "success", 1),
        ("1.1", "success", 1),
        ("1.2", "success", 1),
        ("1", "success", 1),
    ]
    # from the root down through prov:wasInformedBy to the call each leaf made
    assert rows(store, TRACE, run=str(result.activity_iri)) == [
        {"id": "1.1.1", "outcome": "failure", "capability": "tf.fix"},
        {"id": "1.1.2", "outcome": "success", "capability": "tf.analyze"},
        {"id": "1.2", "outcome": "success", "capability": "tf.verify"},
    ]


# -- shared state ----------------------------------------------------------------------------


@pytest.mark.seed_row("004-009")
def test_shared_state_keys_are_in_working_memory_the_prompt_and_the_store(
    store: Store, tf: dict[str, int]
) -> None:
    from trails.agent.planners.behaviour_tree import Checkpointer, StateKeyGoal, tree_state

    scratch = WorkingMemory()
    client = LLMClient.mock(response=[finish("ok")])
    result = behaviour_tree.run(
        "Review",
        llm=client,
        session=alice(),
        tree=Sequence(ANALYZE, AgentNode("Say if the analysis looks fine.")),
        working_memory=scratch,
        checkpointer=Checkpointer("review-1"),
    )
    # the seed's state keys, read back from the store (the newest checkpoint of the run)
    state = tree_state("review-1", principal="did:local:alice")
    assert {k: state[k] for k in list(state)[:4]} == {
        StateKeyGoal: "Review",
        "reactree_node_status": "Success",
        "reactree_output": "ok",
        "reactree_working_memory": {"1.1": "success: analyzed main.tf", "1.2": "success: ok"},
    }
    assert result.answer == "ok"
    assert scratch.snapshot() == {"1.1": "success: analyzed main.tf", "1.2": "success: ok"}
    prompt = client.requests[0].messages
    text = "\n".join(m.content for m in prompt)
    assert "Say if the analysis looks fine." in text  # the node's goal
    assert "1.1" in text and "success: analyzed main.tf" in text  # the shared observations


@pytest.mark.seed_row("004-010")
def test_stage_iteration_and_tool_count_state_keys_are_saved_with_each_leaf(
    store: Store, tf: dict[str, int]
) -> None:
    from trails.agent.planners.behaviour_tree import Checkpointer, tree_state

    client = LLMClient.mock(
        response=[turn("tf.analyze"), finish("pass 1"), finish("nothing left"), finish("never")]
    )
    behaviour_tree.run(
        "Work until done", llm=client, session=alice(), tree=AgentNode("Do the next thing."),
        tree_config=TreeConfig(max_iterations=3), tool_budgets={"tf.analyze": 1},
        checkpointer=Checkpointer("stages-1"),
    )  # fmt: skip
    state = tree_state("stages-1", principal="did:local:alice")
    assert state["reactree_task_completed"] is True  # the last pass called no tool
    assert state["reactree_previous_stage_output"] == "nothing left"
    assert state["reactree_iteration_context"] == "1 of 3 done: pass 1"
    assert state["reactree_iteration_count"] == 1  # 0-indexed: the second pass
    assert state["reactree_tool_call_counts"] == {"tf.analyze": 1}


def test_stage_outputs_iterations_and_tool_counts_are_in_working_memory(
    store: Store, tf: dict[str, int]
) -> None:
    client = LLMClient.mock(
        response=[turn("tf.analyze"), finish("pass 1"), finish("nothing left"), finish("never")]
    )
    result = behaviour_tree.run(
        "Work until done",
        llm=client,
        session=alice(),
        tree=AgentNode("Do the next thing."),
        tree_config=TreeConfig(max_iterations=3),
        tool_budgets={"tf.analyze": 1},
    )
    assert (result.stopped, result.answer) == ("goal_achieved", "nothing left")
    second = client.requests[2].messages[0].content
    assert "iteration: 1 of 3 done: pass 1" in second  # iteration context and count
    assert "Budget exhausted (do not call): tf.analyze" in second  # per-tool call counts
    assert len(client.requests) == 3  # the pass without a tool call completed the task


@pytest.mark.seed_row("004-011", differs=REACTREE)
def test_a_custom_topology_is_a_json_tree_recorded_as_the_plan(
    store: Store, tf: dict[str, int]
) -> None:
    tree = {
        "type": "sequence",
        "children": [
            {"type": "action", "action": "tf.analyze"},
            {"type": "fallback", "children": [{"type": "action", "action": "tf.fix"},
                                              {"type": "action", "action": "tf.verify"}]},
        ],
    }  # fmt: skip
    result = behaviour_tree.run("Fix all lint errors", llm=no_model(), session=alice(), tree=tree)
    assert (result.stopped, result.answer) == ("goal_achieved", "verified")
    [doc] = rows(store, PLAN_DOCUMENT, run=str(result.activity_iri))
    recorded = json.loads(doc["value"])
    assert recorded["type"] == "sequence" and len(recorded["children"]) == 2


# -- agent nodes -----------------------------------------------------------------------------


@pytest.mark.seed_row("004-012")
def test_an_agent_node_works_on_its_goal_with_memory_and_writes_back(
    store: Store, ctx: Any, tf: dict[str, int]
) -> None:
    episodic = StoreEpisodicMemory(ctx)
    episodic.store(Episode("Review the analysis", ("tf.analyze",), "success", "looked fine"))
    scratch = WorkingMemory()
    client = LLMClient.mock(response=[turn("tf.verify"), finish("looks fine")])
    result = behaviour_tree.run(
        "Review",
        llm=client,
        session=alice(),
        tree=Sequence(ANALYZE, AgentNode("Review the analysis")),
        working_memory=scratch,
        episodic=episodic,
    )
    assert (result.stopped, result.answer) == ("goal_achieved", "looks fine")
    first = "\n".join(m.content for m in client.requests[0].messages)
    assert "Review the analysis" in first
    assert "success: analyzed main.tf" in first  # working memory
    assert "Past episodes of similar sub-goals:" in first and "looked fine" in first  # episodic
    assert scratch.get("1.2") == "success: looks fine"
    assert tf["verify"] == 1


@pytest.mark.seed_row("004-013")
def test_an_agent_node_ends_with_success_or_failure_and_an_output(
    store: Store, tf: dict[str, int]
) -> None:
    done = behaviour_tree.run(
        "x", llm=LLMClient.mock([finish("yes")]), session=alice(), tree=AgentNode("Try.")
    )
    assert (done.stopped, done.answer) == ("goal_achieved", "yes")
    failed = behaviour_tree.run(
        "x",
        llm=LLMClient.mock([turn("fail", {"reason": "not possible"})]),
        session=alice(),
        tree=AgentNode("Try."),
    )
    assert (failed.stopped, failed.answer) == ("error", "not possible")
    assert nodes(store, failed.activity_iri) == [("1", "agent", "failure")]


@pytest.mark.seed_row("004-014", differs=REACTREE)
def test_agent_node_fields_are_goal_turns_model_tools_instruction(
    store: Store, tf: dict[str, int]
) -> None:
    # Goal, MaxDecisions, TaskType, Tools, SystemInstruction
    fields = {"goal", "max_turns", "model", "tools", "instruction"}
    assert fields <= set(inspect.signature(AgentNode).parameters)
    client = LLMClient.mock(response=[turn("tf.apply"), finish("read only")])
    result = behaviour_tree.run(
        "Review",
        llm=client,
        session=alice(),
        tree=AgentNode("Look.", max_turns=2, tools=("tf.analyze",), instruction="Never apply."),
    )
    assert result.answer == "read only" and tf["apply"] == 0  # tf.apply is not the node's tool
    system = client.requests[0].messages[0].content
    assert "Never apply." in system and "- tf.analyze" in system and "- tf.apply" not in system
    calls = rows(store, CALLS, session=session_of(store, result.activity_iri))
    assert [(c["capability"], c["status"]) for c in calls] == [("tf.apply", "refused")]


@pytest.mark.seed_row("004-015")
def test_an_agent_node_may_use_a_cheaper_model(store: Store, tf: dict[str, int]) -> None:
    client = LLMClient.mock(response=[finish("ok"), finish("done")])
    result = behaviour_tree.run(
        "x",
        llm=client,
        session=alice(),
        tree=Sequence(AgentNode("Small job.", model="mock-small"), AgentNode("Big job.")),
    )
    assert result.stopped == "goal_achieved"
    models = [r["model"] for r in rows(store, COMPLETIONS, run=str(result.activity_iri))]
    assert models[0] == "mock-small" and models[1] != "mock-small"


@pytest.fixture
def node_types() -> Iterator[None]:
    """A custom agent node type ("reviewer") and a custom control flow ("retry")."""
    register_node_type(
        "reviewer",
        lambda spec: {"type": "agent", "goal": f"Review {spec['what']}", "tools": ["tf.analyze"],
                      "instruction": "Only read."},
    )  # fmt: skip
    register_node_type(
        "retry", lambda spec: {"type": "fallback", "children": [spec["child"]] * spec["times"]}
    )
    yield
    unregister_node_type("reviewer")
    unregister_node_type("retry")


@pytest.mark.seed_row("004-016", differs=REACTREE)
def test_a_new_agent_node_type_is_a_registered_composition(
    store: Store, tf: dict[str, int], node_types: None
) -> None:
    client = LLMClient.mock(response=[finish("fine")])
    result = behaviour_tree.run(
        "x", llm=client, session=alice(), tree={"type": "reviewer", "what": "main.tf"}
    )
    assert result.answer == "fine"
    assert "Only read." in client.requests[0].messages[0].content
    assert nodes(store, result.activity_iri) == [("1", "agent", "success")]
    with pytest.raises(UserError, match="must be a node or a JSON object"):
        behaviour_tree.run("x", llm=no_model(), session=alice(), tree=Sequence(print))  # type: ignore[arg-type]


@pytest.mark.seed_row("004-017", differs=REACTREE)
def test_a_new_control_flow_is_a_registered_composition(
    store: Store, tf: dict[str, int], node_types: None
) -> None:
    result = behaviour_tree.run(
        "x",
        llm=no_model(),
        session=alice(),
        tree={"type": "sequence", "children": [
            {"type": "retry", "times": 2, "child": {"type": "action", "action": "tf.fix"}},
            {"type": "action", "action": "tf.verify"}]},
    )  # fmt: skip
    assert result.stopped == "error" and tf == {"analyze": 0, "fix": 2, "verify": 0, "apply": 0}
    assert ("1.1", "fallback", "failure") in nodes(store, result.activity_iri)


# -- the executor and its config -------------------------------------------------------------


@pytest.mark.seed_row("004-018")
def test_the_tree_executor_is_behaviour_tree_run(store: Store, tf: dict[str, int]) -> None:
    scratch, session = WorkingMemory(), alice()
    result = behaviour_tree.run(
        "Analyze the Terraform configuration and suggest improvements",
        llm=no_model(),
        session=session,
        tree=Sequence(ANALYZE, VERIFY),
        tools=["tf.analyze", "tf.verify"],
        working_memory=scratch,
        episodic=NoOpEpisodicMemory(),
    )
    assert (result.stopped, result.answer) == ("goal_achieved", "verified")  # Status, Output
    assert session.metadata["node_count"] == 3  # NodeCount
    assert len(nodes(store, result.activity_iri)) == 3


@pytest.mark.seed_row("004-019", differs=REACTREE)
def test_without_a_tree_the_model_decomposes_the_goal_or_stages_run(
    store: Store, tf: dict[str, int]
) -> None:
    tree = {"type": "agent", "goal": "Answer."}
    client = LLMClient.mock(response=["```json\n" + json.dumps(tree) + "\n```", finish("done")])
    result = behaviour_tree.run("Answer.", llm=client, session=alice())
    assert (result.stopped, result.answer) == ("goal_achieved", "done")
    assert len(client.requests) == 2  # the decomposing turn, then the single agent node
    [doc] = rows(store, PLAN_DOCUMENT, run=str(result.activity_iri))
    assert json.loads(doc["value"])["type"] == "agent"
    staged = LLMClient.mock(response=[finish("done")])
    result = behaviour_tree.run(
        "Answer.",
        llm=staged,
        session=alice(),
        tree_config=TreeConfig(stages=(Stage("answer", "Answer directly."),)),
    )
    assert result.answer == "done" and len(staged.requests) == 1  # no decomposing turn


@pytest.mark.seed_row("004-020")
def test_max_depth_refuses_a_deeper_tree(tf: dict[str, int]) -> None:
    with pytest.raises(UserError, match="deeper than 2 levels"):
        behaviour_tree.run(
            "x",
            llm=no_model(),
            session=alice(),
            tree=Sequence(Sequence(ANALYZE)),
            tree_config=TreeConfig(max_depth=2),
        )


@pytest.mark.seed_row("004-021")
def test_max_decisions_per_node_caps_an_agent_nodes_llm_calls(
    store: Store, tf: dict[str, int]
) -> None:
    client = LLMClient.mock(response=[turn("tf.analyze")] * 5)
    result = behaviour_tree.run(
        "x",
        llm=client,
        session=alice(),
        tree=AgentNode("Loop."),
        tree_config=TreeConfig(max_decisions_per_node=3),
    )
    assert result.stopped == "error" and len(client.requests) == 3
    assert len(rows(store, COMPLETIONS, run=str(result.activity_iri))) == 3


@pytest.mark.seed_row("004-022")
def test_max_total_nodes_refuses_a_bigger_tree(tf: dict[str, int]) -> None:
    with pytest.raises(UserError, match="more than 3 nodes"):
        behaviour_tree.run(
            "x",
            llm=no_model(),
            session=alice(),
            tree=Sequence(ANALYZE, ANALYZE, ANALYZE),
            tree_config=TreeConfig(max_total_nodes=3),
        )


@pytest.mark.seed_row("004-023")
def test_the_seeds_default_config_is_seed_defaults() -> None:
    from trails.agent.planners.behaviour_tree import DefaultTreeConfig

    seed = DefaultTreeConfig()  # the seed's name, the seed's values
    assert (seed.max_depth, seed.max_decisions_per_node, seed.max_total_nodes) == (3, 10, 20)
    assert seed == TreeConfig.seed_defaults()
    ours = TreeConfig()
    assert (ours.max_depth, ours.max_decisions_per_node, ours.max_total_nodes) == (8, 5, 64)


@pytest.mark.seed_row("004-024")
def test_stages_run_in_order_with_their_name_instruction_and_model(
    store: Store, tf: dict[str, int]
) -> None:
    client = LLMClient.mock(response=[turn("tf.analyze"), finish("found"), finish("report")])
    session = alice()
    result = behaviour_tree.run(
        "Improve main.tf",
        llm=client,
        session=session,
        tree_config=TreeConfig(stages=(
            Stage("Understanding", "Read relevant files first.", model="mock-small"),
            Stage("Reporting", "Write the answer."),
        )),
    )  # fmt: skip
    assert (result.stopped, result.answer) == ("goal_achieved", "report")
    assert "You are the Understanding stage. Read relevant files first." in (
        client.requests[0].messages[0].content
    )
    assert "found" in client.requests[2].messages[0].content  # the earlier stage's output
    models = [r["model"] for r in rows(store, COMPLETIONS, run=str(result.activity_iri))]
    assert models[:2] == ["mock-small", "mock-small"] and models[2] != "mock-small"


@pytest.mark.seed_row("004-025")
def test_max_iterations_loops_until_a_pass_calls_no_tool_or_the_cap(
    store: Store, tf: dict[str, int]
) -> None:
    client = LLMClient.mock(response=[turn("tf.analyze"), finish("more")] * 3)
    result = behaviour_tree.run(
        "x",
        llm=client,
        session=alice(),
        tree=AgentNode("Next."),
        tree_config=TreeConfig(max_iterations=2),
    )
    assert result.stopped == "goal_achieved" and tf["analyze"] == 2  # the cap: 2 passes
    roots = [n for n in nodes(store, result.activity_iri) if n[0] == "1"]
    assert len(roots) == 2


@pytest.mark.seed_row("004-026")
def test_an_exhausted_tool_leaves_the_list_with_a_hint(store: Store, tf: dict[str, int]) -> None:
    client = LLMClient.mock(response=[turn("tf.analyze"), turn("tf.analyze"), finish("ok")])
    result = behaviour_tree.run(
        "x", llm=client, session=alice(), tree=AgentNode("Go."), tool_budgets={"tf.analyze": 1}
    )
    assert result.answer == "ok" and tf["analyze"] == 1
    assert "- tf.analyze" in client.requests[0].messages[0].content
    later = client.requests[1].messages[0].content
    assert "- tf.analyze" not in later and "Budget exhausted (do not call): tf.analyze" in later
    refused = rows(store, DECISIONS, session=session_of(store, result.activity_iri))
    assert [(r["capability"], r["decision"]) for r in refused] == [("tf.analyze", "deny")]
