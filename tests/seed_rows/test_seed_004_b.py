"""Seed 004 (reactree behaviour trees), rows 027-049, row by row: validators, reflection,
dry runs, MCP, hooks and audit events, checkpoints, memory, plans and orchestration. Each
test grades one row of ``tests/seed_rows/rows.json`` as the seed's text describes it, and
reads the evidence back from the store with SPARQL (bound parameters) where the action
should leave some (the scene and the reads are in ``_seed_004``).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import sys
import threading
from typing import Any

import pytest
from tests.seed_rows._seed_004 import (
    ANALYZE,
    APPLY,
    CALLS,
    DECISIONS,
    PLAN_DOCUMENT,
    PREFIXES,
    REACTREE,
    RUN,
    SAID,
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
from trails.agent import Session
from trails.agent.loop import run as run_loop
from trails.agent.planners import behaviour_tree
from trails.agent.planners.behaviour_tree import (
    Action,
    AgentNode,
    Attachment,
    Fallback,
    Parallel,
    Sequence,
    TreeConfig,
)
from trails.audit.querypack import get_query
from trails.kernel import RulePolicy
from trails.llm import LLMClient, ModelServerError
from trails.memory import NoOpEpisodicMemory, StoreEpisodicMemory, WorkingMemory
from trails.memory.episodic import Episode, EpisodicMemory
from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Solutions, Store, to_python


@pytest.fixture
def tf() -> dict[str, int]:
    """The seed's terraform capabilities; the dict counts their calls."""
    return register_tf()


# -- toggles: validators, reflection, dry runs, MCP, hooks -------------------------------------


@pytest.mark.seed_row("004-027")
def test_an_action_validator_prunes_a_call_and_records_it(store: Store, tf: dict[str, int]) -> None:
    result = behaviour_tree.run(
        "x",
        llm=no_model(),
        session=alice(),
        tree=APPLY,
        validate_action=lambda cap, args: "blocked" if cap == "tf.apply" else None,
    )
    assert result.stopped == "error" and tf["apply"] == 0
    assert result.steps[0].observation == "error: refused: blocked"
    [decision] = rows(store, DECISIONS, session=session_of(store, result.activity_iri))
    assert (decision["capability"], decision["decision"], decision["reason"]) == (
        "tf.apply", "deny", "blocked",
    )  # fmt: skip


@pytest.mark.seed_row("004-028")
def test_a_deterministic_validator_blocks_its_tools(store: Store, tf: dict[str, int]) -> None:
    from trails.agent.planners.behaviour_tree import (
        DeterministicValidator,
        NewDeterministicValidator,
    )
    from trails.errors import ValidationError

    validator = NewDeterministicValidator(["tf.apply"])
    assert (
        validator.BlockedTools == ("tf.apply",) and validator.validate("tf.verify", b"{}") is None
    )
    with pytest.raises(ValidationError, match="blocked"):
        validator.validate("tf.apply", b"{}")
    session = alice()
    result = behaviour_tree.run(
        "x", llm=no_model(), session=session, tree=Fallback(APPLY, VERIFY),
        validate_action=DeterministicValidator(["tf.apply"]),
    )  # fmt: skip
    assert (result.stopped, result.answer) == ("goal_achieved", "verified") and tf["apply"] == 0
    decisions = rows(store, DECISIONS, session=session_of(store, result.activity_iri))
    assert ("tf.apply", "deny") in [(d["capability"], d["decision"]) for d in decisions]


def test_blocked_tools_are_also_a_rule_policy(store: Store, tf: dict[str, int]) -> None:
    session = Session(
        principal="did:local:alice", policy=RulePolicy(deny=["tf.apply"], allow=["*"])
    )
    result = behaviour_tree.run("x", llm=no_model(), session=session, tree=Fallback(APPLY, VERIFY))
    assert (result.stopped, result.answer) == ("goal_achieved", "verified")
    assert tf["apply"] == 0
    decisions = rows(store, DECISIONS, session=session_of(store, result.activity_iri))
    assert ("tf.apply", "deny") in [(d["capability"], d["decision"]) for d in decisions]


@pytest.mark.seed_row("004-029")
def test_reflection_before_an_action_is_recorded_and_may_veto(
    store: Store, tf: dict[str, int]
) -> None:
    reflector = LLMClient.mock(
        response=[json.dumps({"veto": False, "reason": "analysis serves the goal"}),
                  json.dumps({"veto": True, "reason": "apply is not asked for"})]
    )  # fmt: skip
    result = behaviour_tree.run(
        "Analyze",
        llm=no_model(),
        session=alice(),
        tree=Sequence(ANALYZE, APPLY),
        reflect_before_action=reflector,
    )
    assert tf["analyze"] == 1 and tf["apply"] == 0 and result.stopped == "error"
    said = [r["text"] for r in rows(store, SAID, run=str(result.activity_iri))]
    assert any("analysis serves the goal" in text for text in said)  # a proceeding reflection
    [veto] = rows(store, DECISIONS, session=session_of(store, result.activity_iri))
    assert (veto["capability"], veto["decision"]) == ("tf.apply", "deny")
    assert "apply is not asked for" in veto["reason"]


@pytest.mark.seed_row("004-030")
def test_a_reflector_whose_provider_fails_ends_the_run_and_runs_nothing(
    store: Store, tf: dict[str, int]
) -> None:
    reflector = LLMClient.mock([ModelServerError("reflector down", provider="mock", status=503)])
    result = behaviour_tree.run(
        "Apply", llm=no_model(), session=alice(), tree=APPLY, reflect_before_action=reflector
    )
    assert (result.stopped, result.error) == ("error", "reflector down")
    assert tf["apply"] == 0
    assert [r["stop"] for r in rows(store, RUN, run=str(result.activity_iri))] == ["error"]


@pytest.mark.seed_row("004-031", differs=REACTREE)
def test_a_dry_run_executes_nothing_and_the_pack_lists_what_would_run(
    store: Store, tf: dict[str, int]
) -> None:
    session = alice()
    result = behaviour_tree.run(
        "x", llm=no_model(), session=session, tree=Sequence(APPLY, ANALYZE), dry_run=True
    )
    assert result.stopped == "goal_achieved" and tf["apply"] == tf["analyze"] == 0
    planned = get_query("dry-runs").run(store, session=session.iri)
    assert [to_python(r["capability"]) for r in planned] == ["tf.apply", "tf.analyze"]


@pytest.mark.seed_row("004-032", differs=REACTREE)  # no EnableMCPServerAccess toggle
def test_mcp_server_tools_are_mounted_as_capabilities(store: Store) -> None:
    from trails.mcp import mount, unmount

    clock = mount([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])
    try:
        assert "mcp-time.convert_time" in clock.tools
        convert = Action(
            "mcp-time.convert_time",
            {"source_timezone": "Europe/Paris", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        )
        result = behaviour_tree.run("When?", llm=no_model(), session=alice(), tree=convert)
    finally:
        unmount("mcp-time")
    assert result.stopped == "goal_achieved" and "Asia/Tokyo" in str(result.answer)
    calls = rows(store, CALLS, session=session_of(store, result.activity_iri))
    assert [(c["capability"], c["status"]) for c in calls] == [("mcp-time.convert_time", "ok")]


@pytest.mark.seed_row("004-033", differs=REACTREE)
def test_hooks_are_observers_of_runs_steps_reflections_refusals_and_dry_runs(
    store: Store, tf: dict[str, int]
) -> None:
    heard = Heard()
    reflector = LLMClient.mock(response=[json.dumps({"veto": False, "reason": "fine"})])
    behaviour_tree.run(
        "x",
        llm=no_model(),
        session=alice(),
        tree=Sequence(ANALYZE, APPLY),
        reflect_before_action=reflector,
        validate_action=lambda cap, args: "blocked" if cap == "tf.apply" else None,
        observers=[heard],
    )
    behaviour_tree.run("x", llm=no_model(), session=alice(), tree=VERIFY, dry_run=True,
                       observers=[heard])  # fmt: skip
    for kind in ("run_start", "llm_end", "tool_end", "policy_decision", "step_end",
                 "tool_dry_run", "node_end", "run_end"):  # fmt: skip
        assert kind in heard.kinds, kind
    # an adaptive-loop iteration ends with its root's node_end
    looping = Heard()
    client = LLMClient.mock(response=[turn("tf.analyze"), finish("1"), finish("2")])
    behaviour_tree.run("x", llm=client, session=alice(), tree=AgentNode("Next."),
                       tree_config=TreeConfig(max_iterations=3), observers=[looping])  # fmt: skip
    assert [(n, i) for n, _, i in looping.nodes()] == [("1", 1), ("1", 2)]


@pytest.mark.seed_row("004-034")
def test_iterations_rejections_reflections_dry_runs_and_plans_are_evidence(
    store: Store, tf: dict[str, int]
) -> None:
    session = alice()
    reflector = LLMClient.mock(response=[json.dumps({"veto": False, "reason": "go on"})] * 4)
    client = LLMClient.mock(response=[turn("tf.analyze"), finish("1"), turn("tf.apply"),
                                      finish("2"), finish("3")])  # fmt: skip
    looped = behaviour_tree.run(
        "x",
        llm=client,
        session=session,
        tree=AgentNode("Next."),
        tree_config=TreeConfig(max_iterations=3),
        reflect_before_action=reflector,
        validate_action=lambda cap, args: "critic says no" if cap == "tf.apply" else None,
    )
    run = str(looped.activity_iri)
    assert len([n for n in nodes(store, run) if n[0] == "1"]) == 3  # one root per iteration
    decisions = rows(store, DECISIONS, session=session.iri)
    assert [(d["capability"], d["reason"]) for d in decisions] == [("tf.apply", "critic says no")]
    assert any("go on" in r["text"] for r in rows(store, SAID, run=run))  # reflections
    assert len(rows(store, PLAN_DOCUMENT, run=run)) == 1  # the plan executed
    dry = behaviour_tree.run("x", llm=no_model(), session=session, tree=VERIFY, dry_run=True)
    assert ("tf.verify", "dry_run") in [
        (c["capability"], c["status"]) for c in rows(store, CALLS, session=session.iri)
    ]
    assert dry.stopped == "goal_achieved"


RESUME = """
import json, os, signal, sys
from trails import capability
from trails.agent import Session
from trails.agent.planners import behaviour_tree as bt
from trails.agent.planners.behaviour_tree import Action, Checkpointer, Sequence
from trails.llm import LLMClient

log, kill = sys.argv[1], sys.argv[2] == "kill"

def called(name):
    with open(log, "a") as f:
        f.write(name + "\\n")

@capability(id="tf.analyze", description="Analyze.")
def analyze() -> str:
    called("analyze")
    return "analyzed main.tf"

@capability(id="tf.fix", description="Fix.")
def fix() -> str:
    called("fix")
    if kill:
        os.kill(os.getpid(), signal.SIGKILL)  # the process dies mid-run
    return "fixed"

@capability(id="tf.verify", description="Verify.")
def verify() -> str:
    called("verify")
    return "verified"

tree = None if not kill else Sequence(Action("tf.analyze"), Action("tf.fix"), Action("tf.verify"))
result = bt.run("Deploy", llm=LLMClient.mock(response=[]), session=Session(principal="did:local:alice"),
                tree=tree, checkpointer=Checkpointer("deploy-1"))
print(json.dumps([result.stopped, result.answer, str(result.activity_iri)]))
"""


@pytest.mark.seed_row("004-035")
def test_a_tree_killed_mid_run_is_resumed_by_a_new_process_from_its_checkpoint(
    tmp_path: Any,
) -> None:
    import os
    import subprocess

    from trails.agent.planners.behaviour_tree import tree_state
    from trails.store.oxigraph import OxigraphStore

    log, env = tmp_path / "calls", {**os.environ, "TRAILS_STORE": str(tmp_path / "store")}
    script = tmp_path / "resume.py"
    script.write_text(RESUME)
    killed = subprocess.run(
        [sys.executable, str(script), str(log), "kill"], env=env, capture_output=True, text=True
    )
    assert killed.returncode != 0 and killed.stdout == ""  # SIGKILL: no answer, no cleanup
    disk = OxigraphStore(tmp_path / "store")
    try:  # what the store says of the dead run: node 1.2 was running
        at_kill = tree_state("deploy-1", principal="did:local:alice", store=disk)
    finally:
        disk.close()
    assert at_kill["reactree_node_status"] == "Running"
    assert at_kill["reactree_working_memory"] == {"1.1": "success: analyzed main.tf"}
    resumed = subprocess.run(
        [sys.executable, str(script), str(log), "resume"], env=env, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    stopped, answer, run = json.loads(resumed.stdout)
    assert (stopped, answer) == ("goal_achieved", "verified")
    # analyze ran once, before the kill: the new process restored it, tree and all
    assert log.read_text().split() == ["analyze", "fix", "fix", "verify"]
    disk = OxigraphStore(tmp_path / "store")
    try:
        state = tree_state("deploy-1", principal="did:local:alice", store=disk)
        used = disk.query(
            PREFIXES
            + """SELECT ?run ?cp ?seq WHERE { GRAPH ?g { ?run prov:used ?cp }
              GRAPH ?h { ?cp a trails:TreeCheckpoint ; trails:checkpointSeq ?seq } }""",
            {"run": IRI(run)},
        )
        assert isinstance(used, Solutions)
        # 1.1 running, 1.1 ended, 1.2 running: the process died in 1.2
        assert [to_python(r["seq"]) for r in used] == [3]
        assert tree_state("deploy-1", principal="did:local:bob", store=disk) == {}
    finally:
        disk.close()
    assert {k: state[k] for k in list(state)[:4]} == {
        "reactree_goal": "Deploy",
        "reactree_node_status": "Success",
        "reactree_output": "verified",
        "reactree_working_memory": {
            "1.1": "success: analyzed main.tf",
            "1.2": "success: fixed",
            "1.3": "success: verified",
        },
    }


# -- memory ----------------------------------------------------------------------------------


@pytest.mark.seed_row("004-036")
def test_working_memory_is_a_thread_safe_scratchpad_with_a_snapshot() -> None:
    scratch = WorkingMemory()

    def write(i: int) -> None:
        for j in range(200):
            scratch.set(f"{i}.{j}", j)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = scratch.snapshot()
    assert len(snap) == 800 and snap["3.199"] == 199
    scratch.set("3.199", "later")
    assert snap["3.199"] == 199  # a copy: later writes do not change it


@pytest.mark.seed_row("004-037")
def test_episodic_memory_has_a_no_op_and_a_store_backed_implementation(
    store: Store, ctx: Any
) -> None:
    assert isinstance(NoOpEpisodicMemory(), EpisodicMemory)
    assert NoOpEpisodicMemory().retrieve("anything") == []
    kept = StoreEpisodicMemory(ctx)
    assert isinstance(kept, EpisodicMemory)
    kept.store(Episode("Fix lint errors", ("tf.fix",), "success", "fixed"))
    [found] = kept.retrieve("lint errors")
    assert (found.goal, found.result) == ("Fix lint errors", "fixed")
    memories = store.query(PREFIXES + "SELECT ?m WHERE { GRAPH ?g { ?m a trails:Memory } }")
    assert isinstance(memories, Solutions) and len(list(memories)) == 1


ACTIVITIES = (
    PREFIXES
    + """
SELECT ?session ?cls WHERE { GRAPH ?session { ?a a ?cls . } }
"""
)


@pytest.mark.seed_row("004-038")
def test_agent_nodes_retrieve_past_episodes_and_keep_their_own(
    store: Store, ctx: Any, tf: dict[str, int]
) -> None:
    episodic = StoreEpisodicMemory(ctx)
    first = LLMClient.mock(response=[turn("tf.analyze"), finish("analyzed")])
    behaviour_tree.run("x", llm=first, session=alice(), tree=AgentNode("Analyze main.tf"),
                       episodic=episodic)  # fmt: skip
    second = LLMClient.mock(response=[finish("again")])
    behaviour_tree.run("x", llm=second, session=alice(), tree=AgentNode("Analyze main.tf again"),
                       episodic=episodic)  # fmt: skip
    prompt = second.requests[0].messages[0].content
    assert "Past episodes of similar sub-goals:" in prompt and "Goal: Analyze main.tf" in prompt
    assert len(episodic.retrieve("Analyze main.tf", k=5)) == 2
    classes = {str(r["cls"]) for r in rows(store, ACTIVITIES, session=str(ctx.session))}
    assert {NAMESPACES["trails"] + "MemoryLearn", NAMESPACES["trails"] + "MemoryRecall"} <= classes


@pytest.mark.seed_row("004-039")
def test_each_request_may_bring_its_own_memories(store: Store, tf: dict[str, int]) -> None:
    a, b = WorkingMemory(), WorkingMemory()
    behaviour_tree.run("x", llm=no_model(), session=alice(), tree=ANALYZE, working_memory=a)
    behaviour_tree.run("x", llm=no_model(), session=alice(), tree=VERIFY, working_memory=b)
    assert a.snapshot() == {"1": "success: analyzed main.tf"}
    assert b.snapshot() == {"1": "success: verified"}


# -- plans, orchestration ----------------------------------------------------------------------


@pytest.mark.seed_row("004-040")
def test_execute_plan_runs_named_steps_and_answers_outputs_by_name(
    store: Store, tf: dict[str, int]
) -> None:
    from trails.agent.planners.behaviour_tree import NodeStatus
    from trails.agent.planners.orchestrator import ExecutePlan, Plan, PlanStep

    plan = Plan(flow="sequence", steps=[
        PlanStep(name="analyze", goal="Analyze main.tf", tools=["tf.analyze"]),
        PlanStep(name="verify", goal="Verify it", tools=["tf.verify"], task_type="mock-small"),
    ])  # fmt: skip
    client = LLMClient.mock(response=[turn("tf.analyze"), finish("analysis"), finish("ok")])
    done = ExecutePlan(plan, llm=client, session=alice())
    assert done.status == NodeStatus.Success and str(done.status) == "Success"
    assert done.outputs == {"analyze": "analysis", "verify": "ok"}
    assert done.result is not None and tf["analyze"] == 1
    [doc] = rows(store, PLAN_DOCUMENT, run=str(done.result.activity_iri))
    recorded = json.loads(doc["value"])
    assert [c["instruction"] for c in recorded["children"]] == [
        "You are step 'analyze' of the plan.",
        "You are step 'verify' of the plan.",
    ]


def test_a_plan_of_steps_is_a_dict_tree_and_outputs_are_by_node_id(
    store: Store, tf: dict[str, int]
) -> None:
    plan = {
        "type": "sequence",
        "children": [
            {"type": "agent", "goal": "Analyze main.tf", "tools": ["tf.analyze"]},
            {"type": "agent", "goal": "Verify it", "tools": ["tf.verify"], "model": "mock-small"},
        ],
    }
    outputs = WorkingMemory()
    client = LLMClient.mock(response=[turn("tf.analyze"), finish("analysis"), finish("ok")])
    result = behaviour_tree.run("Plan", llm=client, session=alice(), tree=plan,
                                working_memory=outputs)  # fmt: skip
    assert (result.stopped, result.answer) == ("goal_achieved", "ok")
    assert outputs.snapshot() == {"1.1": "success: analysis", "1.2": "success: ok"}


@pytest.mark.seed_row("004-041")
def test_the_control_flow_types_are_sequence_fallback_parallel(
    store: Store, tf: dict[str, int]
) -> None:
    for flow, expected in (("sequence", "error"), ("fallback", "goal_achieved"),
                           ("parallel", "goal_achieved")):  # fmt: skip
        tree = {"type": flow, "children": [{"type": "action", "action": a}
                                           for a in ("tf.fix", "tf.verify", "tf.analyze")]}  # fmt: skip
        result = behaviour_tree.run("x", llm=no_model(), session=alice(), tree=tree)
        assert result.stopped == expected, flow
        assert ("1", flow, "failure" if expected == "error" else "success") in nodes(
            store, result.activity_iri
        )


@pytest.mark.seed_row("004-042")
def test_orchestrator_timeout_defaults_to_three_minutes_for_the_whole_plan(
    store: Store, tf: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from trails.agent.planners.orchestrator import (
        ExecutePlan,
        OrchestratorConfig,
        Plan,
        PlanStep,
    )

    moments = itertools.count(0, 100)  # each reading of the clock is 100 s later
    monkeypatch.setattr(run_loop, "monotonic", lambda: float(next(moments)))
    plan = Plan(steps=[PlanStep(name=n, goal=f"Step {n}") for n in ("a", "b", "c", "d")])
    client = LLMClient.mock(response=[finish(f"did {n}") for n in "abcd"])
    late = ExecutePlan(plan, llm=client, session=alice(), config=OrchestratorConfig())
    assert late.result is not None and late.result.stopped == "max_wall_time"
    assert str(late.status) == "Failure" and 0 < len(late.outputs) < 4  # stopped past 180 s
    [found] = rows(store, RUN, run=str(late.result.activity_iri))
    assert found["stop"] == "max_wall_time"


def test_the_whole_plans_deadline_is_max_wall_time_s(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert inspect.signature(behaviour_tree.run).parameters["max_wall_time_s"].default is None
    moments = itertools.count(0, 100)  # each reading of the clock is 100 s later
    monkeypatch.setattr(run_loop, "monotonic", lambda: float(next(moments)))

    @capability(id="tf.slow", description="Slow.")
    def slow() -> str:
        return "slow"

    slow_leaf = Action("tf.slow")
    result = behaviour_tree.run(
        "x",
        llm=no_model(),
        session=alice(),
        tree=Sequence(slow_leaf, slow_leaf, slow_leaf),
        max_wall_time_s=150.0,
    )
    assert result.stopped == "max_wall_time" and len(result.steps) < 3
    assert [r["stop"] for r in rows(store, RUN, run=str(result.activity_iri))] == ["max_wall_time"]


@pytest.mark.seed_row("004-043")
def test_the_model_spawns_a_sub_agent_with_a_tool_subset_and_its_own_budget(
    store: Store, tf: dict[str, int]
) -> None:
    from trails.agent.planners.create_agent import register_create_agent

    assert register_create_agent() == "create_agent"
    spawn = {
        "agent_name": "analyst",
        "goal": "Analyze main.tf",
        "tool_names": ["tf.analyze"],
        "max_llm_calls": 3,
        "max_tool_iterations": 2,
    }
    client = LLMClient.mock(
        response=[turn("create_agent", spawn),  # the parent's turn
                  turn("tf.analyze"), finish("analyzed"),  # the sub-agent's two turns
                  finish("sub-agent said: analyzed")]
    )  # fmt: skip
    result = behaviour_tree.run(
        "x", llm=client, session=alice(), tree=AgentNode("Delegate."),
        tools=["create_agent", "tf.analyze", "tf.fix"],
    )  # fmt: skip
    assert result.answer == "sub-agent said: analyzed" and tf["analyze"] == 1
    assert result.steps[0].observation == {"output": "analyzed", "status": "success"}
    sub_prompt = client.requests[1].messages[0].content
    assert "tf.analyze" in sub_prompt and "tf.fix" not in sub_prompt  # the subset
    assert "create_agent" not in sub_prompt
    children = store.query(
        PREFIXES
        + """SELECT ?run ?child ?stop ?name ?who WHERE { GRAPH ?g {
          ?inv a trails:CapabilityInvocation ; prov:wasInformedBy+ ?run ;
               trails:capability/trails:capabilityId "create_agent" .
          ?child a trails:BehaviourTreePlan ; prov:wasInformedBy+ ?inv ; trails:stopReason ?stop ;
                 trails:agentName ?name ; prov:wasAssociatedWith ?agent .
          ?agent a prov:SoftwareAgent ; prov:actedOnBehalfOf/trails:principalId ?who
        } }""",
        {"run": IRI(str(result.activity_iri))},
    )
    assert isinstance(children, Solutions)
    assert [
        (to_python(r["stop"]), to_python(r["name"]), to_python(r["who"])) for r in children
    ] == [("goal_achieved", "analyst", "did:local:alice")]
    # its own budget: one LLM call allowed, so the sub-agent stops at max_steps
    client = LLMClient.mock(
        response=[turn("create_agent", spawn | {"max_llm_calls": 1}), turn("tf.analyze"),
                  finish("sub-agent ran out")]
    )  # fmt: skip
    short = behaviour_tree.run(
        "x", llm=client, session=alice(), tree=AgentNode("Delegate."),
        tools=["create_agent", "tf.analyze"],  # a sub-agent gets only its parent's tools
    )  # fmt: skip
    assert short.steps[0].observation["status"] == "failure"
    assert short.answer == "sub-agent ran out"


@pytest.mark.seed_row("004-044")
def test_plan_step_tools_go_through_approval_and_the_audit(
    store: Store, tf: dict[str, int]
) -> None:
    asked: list[str] = []

    def approver(spec: Any, args: dict[str, Any], reason: str) -> bool:
        asked.append(spec.id)
        return False

    session = Session(
        principal="did:local:alice",
        policy=RulePolicy(allow=["tf.analyze"], review=["tf.apply"]),
        approver=approver,
    )
    result = behaviour_tree.run("x", llm=no_model(), session=session, tree=Sequence(ANALYZE, APPLY))
    assert result.stopped == "error" and asked == ["tf.apply"]
    assert tf["analyze"] == 1 and tf["apply"] == 0
    decisions = rows(store, DECISIONS, session=session.iri)
    assert [(d["capability"], d["decision"]) for d in decisions] == [
        ("tf.analyze", "allow"), ("tf.apply", "deny"),
    ]  # fmt: skip


@pytest.mark.seed_row("004-045")
def test_a_run_streams_its_events(store: Store, tf: dict[str, int]) -> None:
    kinds = [
        getattr(e, "kind", None)
        for e in behaviour_tree.stream("x", llm=no_model(), session=alice(), tree=ANALYZE)
    ]
    assert kinds[0] == "run_start" and "run_end" in kinds
    assert kinds.index("tool_start") < kinds.index("tool_end") < kinds.index("step_end")


@pytest.mark.seed_row("004-046")
def test_image_attachments_reach_the_model_as_images(store: Store) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(32))
    client = LLMClient.mock([finish("one bucket")])
    result = behaviour_tree.run(
        "Review the attached plan.",
        llm=client,
        session=alice(),
        tree=AgentNode("count the resources"),
        tools=[],
        attachments=[Attachment("main.tf", 'resource "aws_s3_bucket" "logs" {}\n', "text/plain"),
                     Attachment("diagram.png", png, "image/png")],
    )  # fmt: skip
    prompt = client.requests[0].messages[0].content
    assert "aws_s3_bucket" in prompt and "diagram.png" in prompt
    used = store.query(
        PREFIXES
        + """SELECT ?run ?type WHERE { GRAPH ?g {
          ?run prov:used ?a . ?a a trails:Attachment ; trails:mediaType ?type } } ORDER BY ?type""",
        {"run": IRI(str(result.activity_iri))},
    )
    assert isinstance(used, Solutions)
    assert [to_python(r["type"]) for r in used] == ["image/png", "text/plain"]
    # the seed: image attachments are passed as multimodal content to the LLM
    [user] = [m for m in client.requests[0].messages if m.role == "user"]
    [image] = user.images
    assert (image.media_type, image.data) == ("image/png", png)
    # and the completion that sent it used the run's image attachment
    sent = store.query(
        PREFIXES
        + """SELECT ?run ?type WHERE { GRAPH ?g {
          ?c a trails:LLMCompletion ; prov:wasInformedBy+ ?run ; prov:used ?a .
          ?run prov:used ?a . ?a a trails:Attachment ; trails:mediaType ?type } }""",
        {"run": IRI(str(result.activity_iri))},
    )
    assert isinstance(sent, Solutions)
    assert [to_python(r["type"]) for r in sent] == ["image/png"]


@pytest.mark.seed_row("004-047")
def test_arun_runs_parallel_children_as_tasks(store: Store) -> None:
    both = threading.Barrier(2, timeout=30)  # each child waits for the other

    @capability(id="tf.wait", description="Wait for the sibling.")
    async def wait(tag: str) -> str:
        await asyncio.to_thread(both.wait)
        return f"done {tag}"

    tree = Parallel(Action("tf.wait", {"tag": "a"}), Action("tf.wait", {"tag": "b"}))
    result = asyncio.run(behaviour_tree.arun("x", llm=no_model(), session=alice(), tree=tree))
    assert result.stopped == "goal_achieved"
    assert [s.observation for s in result.steps] == ["done a", "done b"]


@pytest.mark.seed_row("004-048")
def test_a_terminal_capability_ends_the_tree(store: Store, tf: dict[str, int]) -> None:
    result = behaviour_tree.run(
        "x", llm=no_model(), session=alice(), tree=Sequence(Action("tf.done"), VERIFY)
    )
    assert (result.stopped, result.answer, result.terminated_by) == (
        "goal_achieved", "all done", "tf.done",
    )  # fmt: skip
    assert tf["verify"] == 0


@pytest.mark.seed_row("004-049")
def test_max_steps_bounds_a_runaway_tree(store: Store, tf: dict[str, int]) -> None:
    client = LLMClient.mock(response=[turn("tf.analyze")] * 20)
    result = behaviour_tree.run(
        "x", llm=client, session=alice(), tree=AgentNode("Loop.", max_turns=10), max_steps=3
    )
    # max_steps counts LLM turns and dispatches: turn, dispatch, turn, then the cap
    assert result.stopped == "max_steps" and len(client.requests) == 2 and tf["analyze"] == 1
    assert [r["stop"] for r in rows(store, RUN, run=str(result.activity_iri))] == ["max_steps"]
