"""``arun`` on every planner: the same loop as ``run``, the same recorded graph.

Each planner's loop is one generator driven by ``run`` (sync) and ``arun``
(asyncio). A scripted session run both ways must record the same graph shape:
the same number of nodes of each ``rdf:type``, of each predicate, and the same
completion -> invocation links, compared by SPARQL over two stores. Then:
``Session.arun``, async capabilities dispatched from ``arun``, and 16
concurrent ``arun`` tasks on one store with nothing lost or torn.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from trails.agent import PlanResult, Session
from trails.agent.planners import (
    behaviour_tree,
    plan_and_execute,
    plan_execute_reflect,
    react,
    reflexion,
)
from trails.kernel import capability
from trails.llm import LLMClient, ToolCall
from trails.prov.vocab import NAMESPACES
from trails.store import Solutions, Store, open_store, to_python
from trails.testing import assert_conforms

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())


def step(action: str, action_input: dict[str, Any] | None = None, **extra: Any) -> str:
    payload = {"thought": f"use {action}", "action": action, "action_input": action_input or {}}
    payload.update(extra)
    return "```json\n" + json.dumps(payload) + "\n```"


def fenced(value: Any) -> str:
    return "```json\n" + json.dumps(value) + "\n```"


SEARCH = step("notes.search", {"tag": "urgent"})
SCRIPTS: dict[str, tuple[Any, list[str], dict[str, Any]]] = {
    "react": (react, [SEARCH, step("finish", final_answer="n1, n2")], {}),
    "plan_and_execute": (
        plan_and_execute,
        [
            fenced(
                {
                    "plan": [
                        {"action": "notes.search", "action_input": {"tag": "urgent"}},
                        {"action": "finish", "action_input": {}, "final_answer": "n1, n2"},
                    ]
                }
            )
        ],
        {},
    ),
    "reflexion": (
        reflexion,
        [
            SEARCH,
            step("finish", final_answer="n1"),
            fenced({"verdict": "retry", "critique": "both notes"}),
            step("finish", final_answer="n1, n2"),
            fenced({"verdict": "accept", "critique": ""}),
        ],
        {},
    ),
    "plan_execute_reflect": (
        plan_execute_reflect,
        [
            fenced({"steps": ["search urgent notes"], "result": ""}),
            SEARCH,
            step("finish", final_answer="n1, n2"),
            fenced({"steps": [], "result": "n1, n2"}),
        ],
        {},
    ),
    "behaviour_tree": (
        behaviour_tree,
        [
            fenced(
                {
                    "type": "sequence",
                    "children": [
                        {"type": "action", "action": "notes.search", "action_input": {"tag": "x"}},
                        {"type": "agent", "goal": "name the urgent notes"},
                    ],
                }
            ),
            SEARCH,
            step("finish", final_answer="n1, n2"),
        ],
        {},
    ),
}


@pytest.fixture
def notes() -> list[str]:
    calls: list[str] = []

    @capability(id="notes.search", description="Search notes by tag.")
    def search(tag: str) -> dict[str, Any]:
        calls.append(tag)
        return {"hits": ["n1", "n2"]}

    return calls


def _summary(result: PlanResult) -> tuple[Any, ...]:
    return (
        result.stopped,
        result.answer,
        result.error,
        [(s.action, s.action_input, s.observation) for s in result.steps],
    )


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_arun_records_the_same_graph_shape_as_run(
    store: Store, notes: list[str], name: str, shape: Callable[[Store], Any]
) -> None:
    planner, script, options = SCRIPTS[name]
    goal = "Find urgent notes."
    sync_session = Session(principal="did:local:alice", store=store)
    sync = planner.run(goal, llm=LLMClient.mock(list(script)), session=sync_session, **options)
    sync_session.close()

    other = open_store("memory:")
    try:
        async_session = Session(principal="did:local:alice", store=other)
        result = asyncio.run(
            planner.arun(goal, llm=LLMClient.mock(list(script)), session=async_session, **options)
        )
        async_session.close()
        assert sync.stopped == "goal_achieved", sync
        assert _summary(result) == _summary(sync)
        assert result.strategy == name and result.activity_iri != sync.activity_iri
        expected, got = shape(store), shape(other)
        assert got == expected
        assert expected["links"]["notes.search"] >= 1  # each invocation linked to its completion
        assert_conforms(other)
    finally:
        other.close()


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_arun_keeps_runs_signature(name: str) -> None:
    import inspect

    planner = SCRIPTS[name][0]
    run, arun = inspect.signature(planner.run), inspect.signature(planner.arun)
    assert list(arun.parameters) == list(run.parameters)
    assert "output_type" in run.parameters and "max_steps" in run.parameters
    assert inspect.iscoroutinefunction(planner.arun)
    assert planner.run.__name__ == "run" and planner.arun.__name__ == "arun"


def test_arun_rejects_bad_arguments_before_recording(store: Store) -> None:
    from trails.errors import UserError

    session = Session(principal="did:local:alice")
    with pytest.raises(UserError, match="max_steps"):
        asyncio.run(react.arun("g", llm=LLMClient.mock("x"), session=session, max_steps=0))
    assert not session.opened


def test_session_arun_uses_the_sessions_strategy(store: Store, notes: list[str]) -> None:
    _, script, _ = SCRIPTS["plan_and_execute"]
    session = Session(
        principal="did:local:alice", strategy="plan_and_execute", llm=LLMClient.mock(script)
    )
    result = asyncio.run(session.arun("Find urgent notes."))
    session.close()
    assert result.strategy == "plan_and_execute"
    assert result.stopped == "goal_achieved" and result.answer == "n1, n2"
    assert notes == ["urgent"]


def test_session_arun_falls_back_like_run(store: Store) -> None:
    session = Session(
        principal="did:local:alice",
        strategy="plan_and_execute",
        fallback="react",
        llm=LLMClient.mock(["no plan", "still no plan", step("finish", final_answer="ok")]),
    )
    result = asyncio.run(session.arun("Answer."))
    session.close()
    assert result.strategy == "react" and result.answer == "ok"


def _by_reply(messages: list[Any]) -> str:
    """A scripted model for concurrent runs: search first, then finish with the goal."""
    goal = next(m.content for m in messages if m.role == "user" and m.content.startswith("Goal:"))
    if messages[-1].content.startswith("Observation:"):
        return step("finish", final_answer=f"done: {goal[6:]}")
    return SEARCH


def test_async_capability_runs_on_the_callers_loop(store: Store) -> None:
    loops: list[Any] = []

    @capability(id="notes.search", description="Search notes by tag.")
    async def search(tag: str) -> dict[str, Any]:
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return {"hits": [tag]}

    async def main() -> tuple[PlanResult, Any]:
        session = Session(principal="did:local:alice")
        result = await react.arun("g1", llm=LLMClient.mock(_by_reply), session=session)
        session.close()
        return result, asyncio.get_running_loop()

    result, loop = asyncio.run(main())
    assert result.stopped == "goal_achieved" and result.answer == "done: g1"
    assert result.steps[0].observation == {"hits": ["urgent"]}
    assert loops == [loop]


COMPLETE_RUNS = (
    PREFIXES
    + """
SELECT ?session (COUNT(DISTINCT ?run) AS ?runs) (COUNT(DISTINCT ?c) AS ?completions)
       (COUNT(DISTINCT ?inv) AS ?invocations) (SAMPLE(?answer) AS ?a) WHERE {
  GRAPH ?session {
    ?run a trails:ReActPlan ; prov:endedAtTime ?end ; trails:answerSha256 ?answerDigest ;
         trails:stopReason "goal_achieved" .
    {
      ?c a trails:LLMCompletion ; prov:wasInformedBy ?run ; trails:status "ok" ;
         prov:endedAtTime ?cend .
      ?out prov:wasGeneratedBy ?c .
    } UNION {
      ?inv a trails:CapabilityInvocation ; prov:wasInformedBy ?chose ; trails:status "ok" .
      ?chose a trails:LLMCompletion ; prov:wasInformedBy ?run .
      ?o prov:wasGeneratedBy ?inv .
    }
  }
  GRAPH ?content { ?run trails:answer ?answer }  # the answer text is content
} GROUP BY ?session
"""
)


def test_sixteen_concurrent_aruns_on_one_store_lose_and_tear_nothing(store: Store) -> None:
    calls: list[str] = []

    @capability(id="notes.search", description="Search notes by tag.")
    async def search(tag: str) -> dict[str, Any]:
        await asyncio.sleep(0.001)  # every task yields here, so the runs interleave
        calls.append(tag)
        return {"hits": ["n1"]}

    client = LLMClient.mock(_by_reply)

    async def one(i: int) -> tuple[str, PlanResult]:
        session = Session(principal=f"did:local:user{i}")
        result = await react.arun(f"goal {i}", llm=client, session=session)
        session.close()
        assert session.iri is not None
        return session.iri, result

    async def main() -> list[tuple[str, PlanResult]]:
        return list(await asyncio.gather(*(one(i) for i in range(16))))

    done = asyncio.run(main())
    assert len(calls) == 16
    assert [r.answer for _, r in done] == [f"done: goal {i}" for i in range(16)]
    result = store.query(COMPLETE_RUNS)
    assert isinstance(result, Solutions)
    rows = {str(row["session"]): row for row in result}
    assert set(rows) == {iri for iri, _ in done}  # 0 lost
    for iri, run in done:
        row = rows[iri]
        counts = [to_python(row[k]) for k in ("runs", "completions", "invocations")]
        assert counts == [1, 2, 1], (iri, counts)
        assert to_python(row["a"]) == run.answer  # each run's own answer: 0 torn
    assert_conforms(store)


def test_async_observers_of_an_arun_run_on_its_loop(store: Store, notes: list[str]) -> None:
    """Completions of an async run are written off the loop; async observers stay on it."""
    seen: list[tuple[str, Any]] = []

    class Watch:
        async def on_event(self, event: Any) -> None:
            seen.append((event.kind, asyncio.get_running_loop()))

    async def main() -> Any:
        session = Session(principal="did:local:alice")
        script = [SEARCH, step("finish", final_answer="n1, n2")]
        await react.arun("g", llm=LLMClient.mock(script), session=session, observers=[Watch()])
        session.close()
        await asyncio.sleep(0.01)  # let the scheduled observer coroutines run
        return asyncio.get_running_loop()

    loop = asyncio.run(main())
    kinds = [kind for kind, _ in seen]
    assert kinds.count("llm_end") == 2 and "run_end" in kinds
    assert {where for _, where in seen} == {loop}


TOOL_CALL_IDS = (
    PREFIXES
    + """
SELECT ?id ?cap WHERE { GRAPH ?g {
  ?inv a trails:CapabilityInvocation ; trails:toolCallId ?id ; prov:wasInformedBy ?c ;
       trails:capability ?p .
  ?c a trails:LLMCompletion ; trails:toolCallId ?id .
  ?p trails:capabilityId ?cap .
} } ORDER BY ?id
"""
)


def _tool_call_links(store: Store) -> list[tuple[str, str]]:
    rows = store.query(TOOL_CALL_IDS)
    assert isinstance(rows, Solutions)
    return [(str(to_python(r["id"])), str(to_python(r["cap"]))) for r in rows]


TWO_CALLS = [ToolCall("call_a", "notes.search", {"tag": "a"}), ToolCall("call_b", "notes.search", {"tag": "b"})]  # fmt: skip
NATIVE: dict[str, tuple[Any, list[Any], dict[str, Any]]] = {
    "react": (react, [TWO_CALLS, "n1, n2 under both tags."], {}),
    "plan_execute_reflect": (
        plan_execute_reflect,
        [
            fenced({"steps": ["search notes tagged a and b"], "result": ""}),
            TWO_CALLS,
            "n1, n2 under both tags.",
            fenced({"steps": [], "result": "n1, n2 under both tags."}),
        ],
        {"executor_message_history_limit": 0},
    ),
}


@pytest.mark.parametrize("name", list(NATIVE))
def test_native_arun_with_two_calls_in_one_turn_records_the_same_graph_shape_as_run(
    store: Store, notes: list[str], shape: Callable[[Store], Any], name: str
) -> None:
    planner, script, extra = NATIVE[name]
    goal = "Find notes tagged a and b."
    options = {"tools": ["notes.search"], "tool_calling": "native", "max_parallel_tools": 2}
    options.update(extra)
    sync_session = Session(principal="did:local:alice", store=store)
    sync = planner.run(goal, llm=LLMClient.mock(list(script)), session=sync_session, **options)
    sync_session.close()

    other = open_store("memory:")
    try:
        async_session = Session(principal="did:local:alice", store=other)
        result = asyncio.run(
            planner.arun(goal, llm=LLMClient.mock(list(script)), session=async_session, **options)
        )
        async_session.close()
        assert sync.stopped == "goal_achieved", sync
        assert sync.answer == "n1, n2 under both tags."
        assert _summary(result) == _summary(sync)
        assert sorted(notes) == ["a", "a", "b", "b"]  # two calls per run, both runs
        assert shape(other) == shape(store)
        assert shape(other)["links"]["notes.search"] == 2  # both linked to the asking completion
        expected = [("call_a", "notes.search"), ("call_b", "notes.search")]
        assert _tool_call_links(store) == _tool_call_links(other) == expected
        assert_conforms(other)
    finally:
        other.close()


def test_behaviour_tree_parallel_node_under_arun_runs_children_concurrently(
    store: Store, shape: Callable[[Store], Any]
) -> None:
    started: list[str] = []
    both = threading.Barrier(2, timeout=30)  # each child waits for the other: concurrency

    @capability(id="notes.wait", description="Wait for the sibling, then answer.")
    async def wait(tag: str) -> str:
        started.append(tag)
        await asyncio.to_thread(both.wait)
        return f"done {tag}"

    tree = {
        "type": "parallel",
        "children": [
            {"type": "action", "action": "notes.wait", "action_input": {"tag": "first"}},
            {"type": "action", "action": "notes.wait", "action_input": {"tag": "second"}},
        ],
    }
    session = Session(principal="did:local:alice", store=store)
    result = asyncio.run(
        behaviour_tree.arun("Both.", llm=LLMClient.mock([]), session=session, tree=tree)
    )
    session.close()
    assert result.stopped == "goal_achieved", result
    assert sorted(started) == ["first", "second"]
    assert [s.observation for s in result.steps] == ["done first", "done second"]  # child order

    both.reset()
    other = open_store("memory:")
    try:
        sync_session = Session(principal="did:local:alice", store=other)
        sync = behaviour_tree.run("Both.", llm=LLMClient.mock([]), session=sync_session, tree=tree)
        sync_session.close()
        assert _summary(sync) == _summary(result)
        assert shape(other) == shape(store)
    finally:
        other.close()
