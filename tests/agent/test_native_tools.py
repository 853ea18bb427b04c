"""Native tool calls in the planners: parallel calls, their order and parent, timeouts.

The scripted mock asks for tool calls (``ToolCall`` script entries). Several
calls of one turn must run at the same time (a barrier only opens when they
all wait on it), each recorded as its own invocation informed by the one
completion that asked and carrying its call id, with the results fed back in
the order asked. A ``parallel_safe=False`` capability runs alone; a call past
``tool_timeout_s`` is recorded as failed and the model sees the error.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.loop.parallel import adispatch_many, groups
from trails.agent.loop.run import PlanRun, activity_of
from trails.agent.planners import (
    behaviour_tree,
    plan_and_execute,
    plan_execute_reflect,
    react,
    reflexion,
)
from trails.agent.planners.behaviour_tree import Action, Parallel
from trails.errors import UserError
from trails.kernel import capability, get_capability
from trails.llm import LLMClient, Message, ToolCall
from trails.prov.vocab import NAMESPACES
from trails.store import Solutions, Store, to_python
from trails.testing import assert_conforms

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

#: every wait below is a deadlock guard, never a speed check
GUARD_S = 30.0

_state: dict[str, Any] = {}
_lock = threading.Lock()


def _enter(name: str) -> None:
    with _lock:
        _state["active"] = _state.get("active", 0) + 1
        _state["peak"] = max(_state.get("peak", 0), _state["active"])
        _state.setdefault("log", []).append(f"start {name}")


def _leave(name: str) -> None:
    with _lock:
        _state["active"] -= 1
        _state["log"].append(f"end {name}")


@pytest.fixture(autouse=True)
def fresh_state() -> Iterator[None]:
    _state.clear()
    _state["release"] = threading.Event()
    yield
    _state["release"].set()  # let a timed-out handler's thread end


@capability(id="n15.meet", description="Wait until the others arrive, then echo.")
def n15_meet(tag: str) -> str:
    _enter(tag)
    try:
        _state["barrier"].wait()
    finally:
        _leave(tag)
    return f"met {tag}"


@capability(id="n15.count", description="Echo, counting how many run at once.")
def n15_count(tag: str) -> str:
    _enter(tag)
    _state["release"].wait(0.05)  # a moment for siblings to overlap (never a check)
    _leave(tag)
    return f"counted {tag}"


@capability(id="n15.solo", description="Must not run beside another call.", parallel_safe=False)
def n15_solo(tag: str) -> str:
    _enter(tag)
    with _lock:
        _state["solo_saw"] = _state["active"]
    _leave(tag)
    return f"alone {tag}"


@capability(id="n15.hang", description="Waits until released.")
def n15_hang() -> str:
    _state["release"].wait(GUARD_S)
    return "late"


@capability(id="n15.hang_own", description="Waits; its own limit is short.", timeout_s=0.05)
def n15_hang_own() -> str:
    _state["release"].wait(GUARD_S)
    return "late"


@capability(id="n15.ahang", description="An async handler that waits.")
async def n15_ahang(tag: str) -> str:
    _enter(tag)
    try:
        await asyncio.wait_for(_state["aevent"].wait(), GUARD_S)
    finally:
        _leave(tag)
    return f"async {tag}"


INVOCATIONS = (
    PREFIXES
    + """
SELECT ?inv ?id ?completion ?step ?status ?error ?cap WHERE {
  GRAPH ?g {
    ?inv a trails:CapabilityInvocation ; trails:toolCallId ?id ; trails:status ?status ;
         prov:wasInformedBy ?completion ; trails:stepIndex ?step ;
         trails:capability/trails:capabilityId ?cap .
    ?completion a trails:LLMCompletion ; trails:toolCallId ?id .
    OPTIONAL { GRAPH ?errorMessageGraph1 { ?inv trails:errorMessage ?error } }
  }
} ORDER BY ?id
"""
)


def invocations(store: Store) -> list[dict[str, Any]]:
    rows = store.query(INVOCATIONS)
    assert isinstance(rows, Solutions)
    return [{k: to_python(v) for k, v in row.items()} for row in rows]


def calls(name: str, *tags: str) -> list[ToolCall]:
    return [ToolCall(f"c{i}", name, {"tag": t}) for i, t in enumerate(tags, 1)]


def run_react(driver: str, goal: str, **options: Any) -> Any:
    """``react.run``, or the same run under ``react.arun`` (the calls as asyncio tasks)."""
    if driver == "run":
        return react.run(goal, **options)
    return asyncio.run(react.arun(goal, **options))


@pytest.mark.parametrize("driver", ["run", "arun"])
@pytest.mark.seed_row("002-068")
def test_one_turns_calls_run_concurrently_recorded_under_one_completion(
    store: Store, driver: str
) -> None:
    _state["barrier"] = threading.Barrier(3, timeout=GUARD_S)
    client = LLMClient.mock([calls("n15.meet", "a", "b", "c"), "all met"])
    session = Session(principal="did:local:alice")
    result = run_react(
        driver, "Meet.", llm=client, session=session, tools=["n15.meet"], tool_calling="native"
    )
    # the barrier of three opened: all three ran at once
    assert result.stopped == "goal_achieved" and result.answer == "all met"
    assert _state["peak"] == 3
    assert [s.observation for s in result.steps] == ["met a", "met b", "met c", None]
    # results went back in request order, after the assistant turn that asked
    sent = client.requests[1].messages
    assert [m.role for m in sent[-4:]] == ["assistant", "tool", "tool", "tool"]
    assert [c.id for c in sent[-4].tool_calls] == ["c1", "c2", "c3"]
    assert [(m.tool_call_id, m.content) for m in sent[-3:]] == [
        ("c1", "met a"),
        ("c2", "met b"),
        ("c3", "met c"),
    ]
    # each call its own invocation, informed by the same completion, carrying its id
    rows = invocations(store)
    assert [r["id"] for r in rows] == ["c1", "c2", "c3"]
    assert len({str(r["completion"]) for r in rows}) == 1
    assert {r["status"] for r in rows} == {"ok"} and {r["step"] for r in rows} == {0}
    # the trajectory names each call's own invocation, in request order
    by_id = {str(r["id"]): str(r["inv"]) for r in rows}
    assert [s.activity_iri for s in result.steps[:3]] == [by_id["c1"], by_id["c2"], by_id["c3"]]
    # and the session history holds the turn as text
    texts = [e.content for e in session.history]
    assert 'call n15.meet {"tag": "a"}' in texts[-5]
    assert texts[-4:-1] == ["Observation: met a", "Observation: met b", "Observation: met c"]
    assert texts[-1] == "all met"
    assert_conforms(store)


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_max_parallel_tools_bounds_the_calls_running_at_once(store: Store, driver: str) -> None:
    _state["barrier"] = threading.Barrier(2, timeout=GUARD_S)  # pairs meet
    client = LLMClient.mock([calls("n15.meet", "a", "b", "c", "d"), "done"])
    result = run_react(
        driver,
        "Meet.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tools=["n15.meet"],
        tool_calling="native",
        max_parallel_tools=2,
    )
    assert result.stopped == "goal_achieved"
    assert _state["peak"] == 2
    assert [s.observation for s in result.steps[:4]] == ["met a", "met b", "met c", "met d"]


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_capability_not_parallel_safe_runs_alone(store: Store, driver: str) -> None:
    script = [
        ToolCall("c1", "n15.count", {"tag": "a"}),
        ToolCall("c2", "n15.count", {"tag": "b"}),
        ToolCall("c3", "n15.solo", {"tag": "s"}),
        ToolCall("c4", "n15.count", {"tag": "c"}),
    ]
    assert groups(script) == [[0, 1], [2], [3]]
    assert get_capability("n15.solo").manifest()["parallel_safe"] is False
    assert get_capability("n15.count").manifest()["parallel_safe"] is True
    client = LLMClient.mock([script, "done"])
    result = run_react(
        driver,
        "Count.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tools=["n15.count", "n15.solo"],
        tool_calling="native",
    )
    assert [s.observation for s in result.steps[:4]] == [
        "counted a",
        "counted b",
        "alone s",
        "counted c",
    ]
    assert _state["solo_saw"] == 1  # nothing else was running
    log = _state["log"]
    assert log.index("start s") > max(log.index("end a"), log.index("end b"))
    assert log.index("start c") > log.index("end s")
    assert [r["id"] for r in invocations(store)] == ["c1", "c2", "c3", "c4"]
    with pytest.raises(UserError, match="parallel_safe must be True or False"):
        capability(id="n15.bad", parallel_safe="no")  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["native", "json"])
def test_a_call_past_tool_timeout_s_is_recorded_failed_and_shown_to_the_model(
    store: Store, mode: str
) -> None:
    if mode == "native":
        script: list[Any] = [ToolCall("c1", "n15.hang", {}), "gave up"]
    else:
        script = ['{"thought": "t", "action": "n15.hang", "action_input": {}}',
                  '{"thought": "t", "action": "finish", "action_input": {}, '
                  '"final_answer": "gave up"}']  # fmt: skip
    client = LLMClient.mock(script)
    result = react.run(
        "Wait.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tools=["n15.hang"],
        tool_calling=mode,
        tool_timeout_s=0.05,
    )
    assert result.stopped == "goal_achieved" and result.answer == "gave up"
    seen = client.requests[1].messages[-1]
    assert "timed out after 0.05 s" in seen.content
    if mode == "native":
        assert seen.role == "tool" and seen.tool_call_id == "c1"
        assert seen.content.startswith("error:")
    else:
        assert seen.content.startswith("Observation: error:")
    [step] = [s for s in result.steps if s.action == "n15.hang"]
    rows = store.query(
        PREFIXES
        + """SELECT ?status ?error WHERE { GRAPH ?g {
             ?inv a trails:CapabilityInvocation ; trails:status ?status }
             GRAPH ?cg { ?inv trails:errorMessage ?error } }"""
    )
    assert isinstance(rows, Solutions)
    [(status, error)] = [(to_python(r["status"]), to_python(r["error"])) for r in rows]
    assert status == "error" and "timed out after 0.05 s" in str(error)
    assert step.activity_iri is not None
    assert_conforms(store)


def test_the_smaller_of_tool_timeout_s_and_a_capabilitys_own_applies(store: Store) -> None:
    client = LLMClient.mock([[ToolCall("c1", "n15.hang_own", {})], "ok"])
    result = react.run(
        "Wait.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tools=["n15.hang_own"],
        tool_calling="native",
        tool_timeout_s=60,
    )
    assert "timed out after 0.05 s" in str(result.steps[0].observation)
    [row] = invocations(store)
    assert row["status"] == "error" and "timed out after 0.05 s" in str(row["error"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tool_calling": "xml"}, 'tool_calling= must be "json" or "native"'),
        ({"max_parallel_tools": 0}, "max_parallel_tools must be an int >= 1"),
        ({"max_parallel_tools": True}, "max_parallel_tools must be an int >= 1"),
        ({"tool_timeout_s": -1}, "tool_timeout_s must be None or a positive number"),
    ],
)
def test_bad_tool_calling_keywords_are_user_errors(
    store: Store, kwargs: dict[str, Any], match: str
) -> None:
    session = Session(principal="did:local:alice")
    for planner in (react, plan_execute_reflect):
        with pytest.raises(UserError, match=match):
            planner.run("x", llm=LLMClient.mock("x"), session=session, **kwargs)


def test_plan_execute_reflect_executor_uses_native_calls(store: Store) -> None:
    _state["barrier"] = threading.Barrier(2, timeout=GUARD_S)
    client = LLMClient.mock(
        [
            '{"steps": ["meet a and b"], "result": ""}',  # the planner (JSON, the seed's)
            calls("n15.meet", "a", "b"),  # the executor: native calls
            "a and b met",
            '{"steps": [], "result": "a and b met"}',
        ]
    )
    result = plan_execute_reflect.run(
        "Meet a and b.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tools=["n15.meet"],
        tool_calling="native",
    )
    assert result.stopped == "goal_achieved" and result.answer == "a and b met"
    assert result.steps[0].observation == "a and b met"
    assert client.requests[0].tools == ()  # the planner turn offers no tools
    assert [t.name for t in client.requests[1].tools] == ["n15.meet"]
    assert [m.role for m in client.requests[2].messages[-3:]] == ["assistant", "tool", "tool"]
    rows = invocations(store)
    assert [r["id"] for r in rows] == ["c1", "c2"] and _state["peak"] == 2
    assert_conforms(store)


def test_async_dispatch_runs_calls_as_tasks_in_request_order(store: Store) -> None:
    session = Session(principal="did:local:alice")
    client = LLMClient.mock([calls("n15.ahang", "x", "y", "z")])
    plan = PlanRun("react", "Wait.", llm=client, session=session, ctx=None, tools=None)
    plan.start()
    asked = plan.complete([Message("user", "go")], step=0, max_tokens=64, temperature=0.0)

    async def main() -> list[Any]:
        _state["aevent"] = asyncio.Event()

        async def release() -> None:
            while _state.get("peak", 0) < 3:
                await asyncio.sleep(0.001)
            _state["aevent"].set()

        opener = asyncio.create_task(release())
        outcomes = await adispatch_many(
            plan,
            asked.tool_calls,
            informed_by=activity_of(asked),
            step=0,
            max_parallel=4,
        )
        await opener
        return outcomes

    outcomes = asyncio.run(asyncio.wait_for(main(), GUARD_S))
    assert [o[0] for o in outcomes] == ["async x", "async y", "async z"]
    assert _state["peak"] == 3
    assert [r.status for r in session.invocations] == ["ok", "ok", "ok"]
    assert [o[1] for o in outcomes] == [
        str(next(r.activity for r in session.invocations if r.args == {"tag": t})) for t in "xyz"
    ]
    plan.finish("goal_achieved", answer="done")
    assert [r["id"] for r in invocations(store)] == ["c1", "c2", "c3"]
    assert_conforms(store)


def test_behaviour_tree_parallel_children_run_concurrently(store: Store) -> None:
    _state["barrier"] = threading.Barrier(3, timeout=GUARD_S)
    tree = Parallel(*(Action("n15.meet", {"tag": t}) for t in "abc"))
    result = behaviour_tree.run(
        "Meet.", llm=LLMClient.mock("unused"), session=Session(principal="did:local:alice"),
        tree=tree,
    )  # fmt: skip
    assert result.stopped == "goal_achieved" and result.answer == "met c"
    assert _state["peak"] == 3
    assert [s.observation for s in result.steps] == ["met a", "met b", "met c"]
    assert_conforms(store)


@capability(id="n15.write", description="Pretend to change the world.", side_effects=True)
def n15_write(tag: str) -> str:
    return f"wrote {tag}"


WHOLE = (
    PREFIXES
    + """
SELECT ?inv (COUNT(DISTINCT ?start) AS ?starts) (COUNT(DISTINCT ?end) AS ?ends)
       (COUNT(DISTINCT ?status) AS ?statuses) (COUNT(DISTINCT ?out) AS ?outs)
       (COUNT(DISTINCT ?in) AS ?ins) (SAMPLE(?id) AS ?call) (SAMPLE(?value) AS ?result)
WHERE {
  GRAPH ?g {
    ?inv a trails:CapabilityInvocation ; trails:toolCallId ?id ; prov:startedAtTime ?start ;
         prov:used ?in .
    OPTIONAL { ?inv prov:endedAtTime ?end }
    OPTIONAL { ?inv trails:status ?status }
    OPTIONAL { ?out a trails:CapabilityOutput ; prov:wasGeneratedBy ?inv }
  }
  OPTIONAL { GRAPH ?content { ?out prov:value ?value } }
} GROUP BY ?inv
"""
)


def test_concurrent_invocations_are_each_written_whole(store: Store) -> None:
    """Written ahead and at the end from eight threads at once: nothing torn, nothing lost."""
    turn = [ToolCall(f"w{i:02}", "n15.write", {"tag": str(i)}) for i in range(24)]
    result = react.run(
        "Write.",
        llm=LLMClient.mock([turn, "done"]),
        session=Session(principal="did:local:alice"),
        tools=["n15.write"],
        tool_calling="native",
        max_parallel_tools=8,
    )
    assert [s.observation for s in result.steps[:24]] == [f"wrote {i}" for i in range(24)]
    rows = store.query(WHOLE)
    assert isinstance(rows, Solutions)
    found = {str(to_python(r["call"])): r for r in rows}
    assert sorted(found) == [c.id for c in turn]
    for call, row in found.items():
        counts = [to_python(row[k]) for k in ("starts", "ends", "statuses", "outs", "ins")]
        assert counts == [1, 1, 1, 1, 1], (call, counts)
        assert to_python(row["result"]) == f'"wrote {int(call[1:])}"'
    assert_conforms(store)


HANG = '{"thought": "t", "action": "n15.hang", "action_input": {}}'
FINISH = '{"thought": "t", "action": "finish", "action_input": {}, "final_answer": "gave up"}'
PLAN_HANG = (
    '```json\n{"plan": [{"action": "n15.hang", "action_input": {}, "rationale": "r"},'
    ' {"action": "finish", "final_answer": "never"}]}\n```'
)
PER_STEP = '{"steps": ["wait"], "result": ""}'
PER_DONE = '{"steps": [], "result": "gave up"}'
PLAN_GIVE_UP = '```json\n{"plan": [{"action": "finish", "final_answer": "gave up"}]}\n```'


@pytest.mark.parametrize(
    ("planner", "script", "extra"),
    [
        (react, [HANG, FINISH], {}),
        (plan_execute_reflect, [PER_STEP, HANG, FINISH, PER_DONE], {}),
        (plan_and_execute, [PLAN_HANG, PLAN_GIVE_UP], {}),
        (reflexion, [HANG, FINISH, '{"verdict": "accept", "critique": "ok"}'], {}),
        (behaviour_tree, ["unused"], {"tree": Action("n15.hang", {})}),
    ],
    ids=["react", "plan_execute_reflect", "plan_and_execute", "reflexion", "behaviour_tree"],
)
@pytest.mark.parametrize("driver", ["run", "arun"])
def test_every_planner_takes_tool_timeout_s(
    store: Store, planner: Any, script: list[str], extra: dict[str, Any], driver: str
) -> None:
    options = {
        "llm": LLMClient.mock(script),
        "session": Session(principal="did:local:alice"),
        "tools": ["n15.hang"],
        "tool_timeout_s": 0.05,
        **extra,
    }
    if driver == "run":
        result = planner.run("Wait.", **options)
    else:  # the same loop driven on an event loop: the cap holds there too
        result = asyncio.run(planner.arun("Wait.", **options))
    rows = store.query(
        PREFIXES
        + """SELECT ?status ?error WHERE { GRAPH ?g {
             ?inv a trails:CapabilityInvocation ; trails:status ?status }
             GRAPH ?cg { ?inv trails:errorMessage ?error } }"""
    )
    assert isinstance(rows, Solutions)
    [(status, error)] = [(to_python(r["status"]), to_python(r["error"])) for r in rows]
    assert status == "error" and "timed out after 0.05 s" in str(error)
    if planner is behaviour_tree:  # the action leaf failed: so did the tree
        assert result.stopped == "error" and "timed out" in str(result.answer)
    else:
        assert result.answer == "gave up"
    with pytest.raises(UserError, match="tool_timeout_s must be None or a positive number"):
        planner.run("x", llm=LLMClient.mock("x"), session=Session(principal="d:a"),
                    tool_timeout_s=0, **extra)  # fmt: skip


def test_a_native_run_replays_from_its_recording(store: Store) -> None:
    """The offered tools are part of the replayed request, the recorded calls come back."""
    from trails.testing.replay import ReplayLLM, recorded_completions

    turn = [ToolCall(f"r{i}", "n15.count", {"tag": t}) for i, t in enumerate("abc")]
    first = Session(principal="did:local:alice")
    live = react.run(
        "Count.",
        llm=LLMClient.mock([turn, "counted"]),
        session=first,
        tools=["n15.count"],
        tool_calling="native",
    )
    iri = str(first.context.session)
    [asked, _] = recorded_completions(store, iri)
    assert asked.tool_calls == tuple(turn)
    again = react.run(
        "Count.",
        llm=ReplayLLM.from_session(iri, store=store),
        session=Session(principal="did:local:alice"),
        tools=["n15.count"],
        tool_calling="native",
    )
    assert again.stopped == "goal_achieved" and again.answer == live.answer == "counted"
    assert [(s.action, s.observation) for s in again.steps] == [
        (s.action, s.observation) for s in live.steps
    ]


def test_a_one_child_parallel_keeps_the_steps_after_it(store: Store) -> None:
    tree = {
        "type": "sequence",
        "children": [
            {"type": "parallel", "children": [{"type": "action", "action": "n15.count",
                                               "action_input": {"tag": "a"}}]},
            {"type": "action", "action": "n15.count", "action_input": {"tag": "b"}},
        ],
    }  # fmt: skip
    result = behaviour_tree.run(
        "Count.", llm=LLMClient.mock("unused"), session=Session(principal="did:local:alice"),
        tree=tree,
    )  # fmt: skip
    assert [s.observation for s in result.steps] == ["counted a", "counted b"]


@pytest.mark.allow_nonconforming
def test_the_shapes_catch_an_invocation_linked_to_a_completion_that_did_not_ask(
    store: Store,
) -> None:
    from trails.kernel import invoke
    from trails.store import IRI
    from trails.testing import shacl_report

    session = Session(principal="did:local:alice")
    ctx = session.context
    asked = LLMClient.mock([[ToolCall("real", "n15.count", {"tag": "a"})]]).complete("go", ctx=ctx)
    parent = IRI(str(asked.activity_iri))
    invoke("n15.count", {"tag": "a"}, ctx=ctx.child(parent=parent, tool_call_id="real"))
    assert shacl_report(store)[0]
    invoke("n15.count", {"tag": "b"}, ctx=ctx.child(parent=parent, tool_call_id="made-up"))
    conforms, text = shacl_report(store)
    assert not conforms
    assert "tool call made-up is informed by a completion that did not ask for it" in text
