"""Planner batches, streamed runs and structured answers (``output_type=``).

- ``batch`` / ``abatch``: each goal its own session and run, results in order,
  a failing goal returned as its exception without cancelling the others,
  progress reported after each run;
- ``stream`` / ``astream``: the run's observer events as they happen, model
  tokens included, ending with ``run_end`` carrying the ``PlanResult``; the
  recorded graph is the one ``run`` records;
- ``output_type=``: the final answer validated into the given model, after a
  retry recorded as an ``invalid`` completion, or a clear recorded error.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from typing import Any

import pydantic
import pytest

from trails.agent import PlanResult, Session
from trails.agent.planners import plan_and_execute, react
from trails.errors import UserError
from trails.kernel import ObserverEvent, capability
from trails.llm import LLMClient, ToolCall
from trails.prov.vocab import NAMESPACES
from trails.store import Solutions, Store, open_store, to_python
from trails.testing import assert_conforms

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())


def step(action: str, action_input: dict[str, Any] | None = None, **extra: Any) -> str:
    payload = {"thought": f"use {action}", "action": action, "action_input": action_input or {}}
    payload.update(extra)
    return "```json\n" + json.dumps(payload) + "\n```"


SEARCH = step("notes.search", {"tag": "urgent"})


@pytest.fixture
def notes() -> list[str]:
    calls: list[str] = []

    @capability(id="notes.search", description="Search notes by tag.")
    def search(tag: str) -> dict[str, Any]:
        calls.append(tag)
        return {"hits": ["n1", "n2"]}

    return calls


def by_goal(messages: list[Any]) -> str:
    """Search, then finish naming the goal; a goal saying ``boom`` breaks the model."""
    goal = next(m.content for m in messages if m.role == "user" and m.content.startswith("Goal:"))
    if "boom" in goal:
        raise RuntimeError(f"the model broke on {goal!r}")
    if messages[-1].content.startswith("Observation:"):
        return step("finish", final_answer=f"answer to {goal[6:]}")
    return SEARCH


SESSIONS = (
    PREFIXES
    + """
SELECT ?session ?status WHERE { GRAPH ?session {
  ?session a trails:Session ; trails:status ?status ; prov:endedAtTime ?end .
} }
"""
)


def _ended_sessions(store: Store) -> list[str]:
    result = store.query(SESSIONS)
    assert isinstance(result, Solutions)
    return sorted(str(to_python(row["status"])) for row in result)


GOALS = ["g0", "", "boom g2", "g3", "g4"]


def _check_batch(results: list[Any], progress: list[tuple[int, int]], store: Store) -> None:
    assert len(results) == len(GOALS)
    assert isinstance(results[1], UserError) and "goal" in str(results[1])  # raised: a result
    assert isinstance(results[2], PlanResult) and results[2].stopped == "error"
    assert "boom g2" in str(results[2].error)
    for i in (0, 3, 4):
        result = results[i]
        assert isinstance(result, PlanResult), result
        assert result.stopped == "goal_achieved" and result.answer == f"answer to {GOALS[i]}"
    ok = [r for r in results if isinstance(r, PlanResult)]
    assert len({r.activity_iri for r in ok}) == 4
    assert sorted(progress) == [(i, len(GOALS)) for i in range(1, len(GOALS) + 1)]
    # each run its own session, each closed (the bad goal was refused before one opened)
    assert _ended_sessions(store) == ["ok", "ok", "ok", "ok"]
    assert_conforms(store)


def test_batch_runs_each_goal_in_its_own_session(store: Store, notes: list[str]) -> None:
    progress: list[tuple[int, int]] = []
    results = react.batch(
        GOALS,
        llm=LLMClient.mock(by_goal),
        max_concurrency=2,
        on_progress=lambda done, total: progress.append((done, total)),
        principal="did:local:alice",
        max_steps=4,
    )
    _check_batch(results, progress, store)
    assert len(notes) == 3


def test_abatch_runs_each_goal_in_its_own_session(store: Store, notes: list[str]) -> None:
    progress: list[tuple[int, int]] = []
    results = asyncio.run(
        react.abatch(
            GOALS,
            llm=LLMClient.mock(by_goal),
            max_concurrency=3,
            on_progress=lambda done, total: progress.append((done, total)),
            principal="did:local:alice",
        )
    )
    _check_batch(results, progress, store)


def test_batch_sessions_take_session_options(store: Store, notes: list[str]) -> None:
    other = open_store("memory:")
    try:
        results = plan_and_execute.batch(
            ["g0"],
            llm=LLMClient.mock(
                '```json\n{"plan": [{"action": "finish", "action_input": {}, '
                '"final_answer": "done"}]}\n```'
            ),
            principal="did:local:bob",
            session_options={"store": other},
        )
        assert isinstance(results[0], PlanResult) and results[0].answer == "done"
        assert _ended_sessions(other) == ["ok"] and _ended_sessions(store) == []
    finally:
        other.close()


def test_batch_rejects_bad_input(store: Store) -> None:
    with pytest.raises(UserError, match="max_concurrency"):
        react.batch(["g"], llm=LLMClient.mock("x"), max_concurrency=0)
    with pytest.raises(UserError, match="list of goal"):
        react.batch("one goal", llm=LLMClient.mock("x"))
    assert react.batch([], llm=LLMClient.mock("x")) == []


def _squeeze(kinds: Iterable[str]) -> list[str]:
    out: list[str] = []
    for kind in kinds:
        if not (kind == "token" and out and out[-1] == "token"):
            out.append(kind)
    return out


EXPECTED = [
    "run_start",
    "llm_start", "token", "llm_end",
    "tool_start", "tool_end", "step_end",
    "llm_start", "token", "llm_end", "step_end",
    "run_end",
]  # fmt: skip


def _check_stream(events: list[ObserverEvent], store: Store) -> None:
    assert _squeeze(e.kind for e in events) == EXPECTED
    result = events[-1].data["result"]
    assert isinstance(result, PlanResult)
    assert result.stopped == "goal_achieved" and result.answer == "n1, n2"
    assert {e.run_id for e in events} == {result.activity_iri}
    # the tokens are the model's replies, piece by piece, each tied to its completion
    first = events.index(next(e for e in events if e.kind == "llm_end"))
    tokens = [e for e in events[:first] if e.kind == "token"]
    assert "".join(e.data["text"] for e in tokens) == SEARCH
    assert {e.call_id for e in tokens} == {events[1].call_id} == {events[first].call_id}
    steps = [e.data["step"] for e in events if e.kind == "step_end"]
    assert steps == result.steps
    tool_end = next(e for e in events if e.kind == "tool_end")
    assert steps[0].activity_iri == tool_end.call_id
    assert_conforms(store)


def test_stream_yields_the_runs_events(store: Store, notes: list[str]) -> None:
    session = Session(principal="did:local:alice")
    client = LLMClient.mock([SEARCH, step("finish", final_answer="n1, n2")])
    seen: list[str] = []

    class Watch:
        def on_event(self, event: ObserverEvent) -> None:
            seen.append(event.kind)

    events = list(
        react.stream("Find urgent notes.", llm=client, session=session, observers=Watch())
    )
    session.close()
    _check_stream(events, store)
    assert seen == [e.kind for e in events]  # observers get the same events, tokens included


def test_astream_yields_the_runs_events(store: Store, notes: list[str]) -> None:
    async def main() -> list[ObserverEvent]:
        session = Session(principal="did:local:alice")
        client = LLMClient.mock([SEARCH, step("finish", final_answer="n1, n2")])
        events = [e async for e in react.astream("Find urgent notes.", llm=client, session=session)]
        session.close()
        return events

    _check_stream(asyncio.run(main()), store)


def test_a_streamed_run_records_what_run_records(
    store: Store, notes: list[str], shape: Callable[[Store], Any]
) -> None:
    script = [SEARCH, step("finish", final_answer="n1, n2")]
    session = Session(principal="did:local:alice")
    list(react.stream("Find urgent notes.", llm=LLMClient.mock(list(script)), session=session))
    session.close()
    other = open_store("memory:")
    try:
        again = Session(principal="did:local:alice", store=other)
        react.run("Find urgent notes.", llm=LLMClient.mock(list(script)), session=again)
        again.close()
        assert shape(store) == shape(other)
    finally:
        other.close()


@pytest.mark.parametrize("driver", ["stream", "astream"])
def test_a_streamed_native_run_streams_its_answer_and_records_what_run_records(
    store: Store, notes: list[str], shape: Callable[[Store], Any], driver: str
) -> None:
    calls = [ToolCall("call_a", "notes.search", {"tag": "a"}), ToolCall("call_b", "notes.search", {"tag": "b"})]  # fmt: skip
    script: list[Any] = [calls, "n1 and n2, under both tags."]
    options = {"tools": ["notes.search"], "tool_calling": "native"}
    session = Session(principal="did:local:alice")
    if driver == "stream":
        events = list(
            react.stream("Tags a, b?", llm=LLMClient.mock(list(script)), session=session, **options)
        )
    else:

        async def main() -> list[ObserverEvent]:
            pieces = react.astream(
                "Tags a, b?", llm=LLMClient.mock(list(script)), session=session, **options
            )
            return [e async for e in pieces]

        events = asyncio.run(main())
    session.close()
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert kinds.count("tool_end") == 2 and kinds.count("step_end") == 3
    result = events[-1].data["result"]
    assert result.stopped == "goal_achieved" and result.answer == "n1 and n2, under both tags."
    last = max(i for i, k in enumerate(kinds) if k == "llm_start")
    tokens = [e.data["text"] for e in events[last:] if e.kind == "token"]
    assert "".join(tokens) == result.answer  # the answer turn streamed piece by piece
    assert [e.data["step"] for e in events if e.kind == "step_end"] == result.steps
    other = open_store("memory:")
    try:
        again = Session(principal="did:local:alice", store=other)
        react.run("Tags a, b?", llm=LLMClient.mock(list(script)), session=again, **options)
        again.close()
        assert shape(store) == shape(other)
    finally:
        other.close()


RUN_END = (
    PREFIXES
    + """
SELECT ?stop ?error WHERE { GRAPH ?g {
  ?run a trails:ReActPlan ; trails:stopReason ?stop .
  OPTIONAL { GRAPH ?errorMessageGraph1 { ?run trails:errorMessage ?error } }
} }
"""
)


def test_leaving_a_stream_early_ends_the_run(store: Store, notes: list[str]) -> None:
    session = Session(principal="did:local:alice")
    client = LLMClient.mock([SEARCH, step("finish", final_answer="n1, n2")])
    events = react.stream("Find urgent notes.", llm=client, session=session)
    for event in events:
        if event.kind == "token":
            break
    events.close()  # type: ignore[attr-defined]
    session.close()
    rows = list(store.query(RUN_END))  # type: ignore[arg-type]
    assert [str(to_python(r["stop"])) for r in rows] == ["error"]
    assert "GeneratorExit" in str(to_python(rows[0]["error"]))
    assert_conforms(store)


class Notes(pydantic.BaseModel):
    count: int
    ids: list[str]


COMPLETIONS = (
    PREFIXES
    + """
SELECT ?status (COUNT(?c) AS ?n) WHERE { GRAPH ?g {
  ?c a trails:LLMCompletion ; trails:status ?status .
} } GROUP BY ?status
"""
)

TERMINATION = (
    PREFIXES
    + """
SELECT ?reason WHERE { GRAPH ?g { ?run a trails:ReActPlan ; trails:wasTerminatedBy ?t .
  ?t trails:reason ?reason } }
"""
)

ANSWER = (
    PREFIXES + "SELECT ?answer WHERE { GRAPH ?g { ?run a trails:ReActPlan } "
    "GRAPH ?content { ?run trails:answer ?answer } }"
)


def _statuses(store: Store) -> dict[str, int]:
    result = store.query(COMPLETIONS)
    assert isinstance(result, Solutions)
    return {str(to_python(r["status"])): int(to_python(r["n"])) for r in result}


def test_output_type_is_valid_after_a_retry(store: Store, notes: list[str]) -> None:
    client = LLMClient.mock(
        [
            SEARCH,
            step("finish", final_answer="two notes, n1 and n2"),
            '{"count": "two", "ids": ["n1", "n2"]}',  # fails validation: recorded invalid
            '{"count": 2, "ids": ["n1", "n2"]}',
        ]
    )
    session = Session(principal="did:local:alice")
    result = react.run("Find urgent notes.", llm=client, session=session, output_type=Notes)
    session.close()
    assert result.stopped == "goal_achieved"
    assert result.answer == Notes(count=2, ids=["n1", "n2"])
    assert [s.action for s in result.steps] == ["notes.search", "finish"]
    assert _statuses(store) == {"ok": 3, "invalid": 1}
    answer = next(iter(store.query(ANSWER)))  # type: ignore[call-overload]
    assert json.loads(str(to_python(answer["answer"]))) == {"count": 2, "ids": ["n1", "n2"]}
    # the answer turn was shown the run's answer and what it observed
    prompt = client.requests[2].messages[-1].content
    assert "two notes, n1 and n2" in prompt and "n1" in prompt
    assert_conforms(store)


def test_output_type_as_a_json_schema_with_arun(store: Store) -> None:
    schema = {
        "title": "Verdict",
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
    }
    client = LLMClient.mock([step("finish", final_answer="yes"), '```json\n{"ok": true}\n```'])
    session = Session(principal="did:local:alice")
    result = asyncio.run(react.arun("Is it fine?", llm=client, session=session, output_type=schema))
    session.close()
    assert result.stopped == "goal_achieved" and result.answer == {"ok": True}


def test_output_type_exhausted_retries_end_with_a_recorded_error(
    store: Store, notes: list[str]
) -> None:
    client = LLMClient.mock(
        [step("finish", final_answer="two"), "two notes", '{"count": "two", "ids": []}']
    )
    session = Session(principal="did:local:alice")
    result = react.run(
        "Count urgent notes.", llm=client, session=session, output_type=Notes, output_retries=1
    )
    session.close()
    assert result.stopped == "error"
    assert result.answer == "two"  # the text answer the run had reached
    assert result.error is not None
    assert "'Notes' in 2 attempt(s)" in result.error and "count" in result.error
    assert _statuses(store) == {"ok": 1, "invalid": 2}
    reasons = [str(to_python(r["reason"])) for r in store.query(TERMINATION)]  # type: ignore[union-attr]
    assert reasons == [result.error]
    assert_conforms(store)


def test_output_type_is_checked_before_anything_is_recorded(store: Store) -> None:
    session = Session(principal="did:local:alice")
    with pytest.raises(UserError, match="response_format"):
        react.run("g", llm=LLMClient.mock("x"), session=session, output_type=int)
    with pytest.raises(UserError, match="output_retries"):
        react.run(
            "g", llm=LLMClient.mock("x"), session=session, output_type=Notes, output_retries=-1
        )
    assert not session.opened
