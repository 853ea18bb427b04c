"""A streamed behaviour tree streams the model turns of its ``parallel`` children too.

The children of a ``parallel`` node run concurrently (worker threads under
``stream``, tasks under ``astream``); their model turns are streamed like any
other turn of a streamed run: each piece a ``token`` event naming its own
completion (``call_id``, the ``llm_start`` of that turn), yielded while the
children still run, not once the node has finished. The recorded graph is the
one ``run`` records.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from trails.agent import PlanResult, Session
from trails.agent.planners import behaviour_tree
from trails.kernel import ObserverEvent, capability
from trails.llm import LLMClient, Message
from trails.prov import T
from trails.store import Store, open_store, to_python
from trails.testing import assert_conforms


def finish(answer: str) -> str:
    payload = {"thought": "done", "action": "finish", "action_input": {}, "final_answer": answer}
    return "```json\n" + json.dumps(payload) + "\n```"


def by_subgoal(messages: list[Message]) -> str:
    """Each agent node finishes at once, answering its own sub-goal."""
    sub = next(m.content for m in messages if m.content.startswith("Sub-goal: "))
    return finish(f"{sub[10:]} found")


TREE = {
    "type": "parallel",
    "children": [
        {"type": "agent", "goal": "north"},
        {"type": "agent", "goal": "south"},
        {"type": "action", "action": "probe.tokens", "action_input": {}},
    ],
}


@pytest.fixture
def seen() -> threading.Event:
    """Set by the consumer at its first token; the third child waits for it."""
    event = threading.Event()

    @capability(id="probe.tokens", description="Answer once the stream has shown a token.")
    def probe() -> str:
        # runs beside the two agent children: the stream must yield their tokens
        # while this child still runs, or this wait ends unanswered
        return "tokens seen while running" if event.wait(timeout=20) else "no token yet"

    return event


def _events(driver: str, session: Session, seen: threading.Event) -> list[ObserverEvent]:
    client = LLMClient.mock(by_subgoal)
    events: list[ObserverEvent] = []

    def take(event: ObserverEvent) -> None:
        events.append(event)
        if event.kind == "token":
            seen.set()

    if driver == "stream":
        for event in behaviour_tree.stream("Scout.", llm=client, session=session, tree=TREE):
            take(event)
    else:

        async def main() -> None:
            pieces = behaviour_tree.astream("Scout.", llm=client, session=session, tree=TREE)
            async for event in pieces:
                take(event)

        asyncio.run(main())
    return events


@pytest.mark.parametrize("driver", ["stream", "astream"])
def test_parallel_children_stream_their_tokens_as_they_run(
    store: Store, seen: threading.Event, shape: Callable[[Store], Any], driver: str
) -> None:
    session = Session(principal="did:local:alice", store=store)
    events = _events(driver, session, seen)
    session.close()

    result = events[-1].data["result"]
    assert isinstance(result, PlanResult) and result.stopped == "goal_achieved", result
    assert [s.observation for s in result.steps][-1] == "tokens seen while running"

    starts = {e.call_id for e in events if e.kind == "llm_start"}
    ends = {e.call_id: i for i, e in enumerate(events) if e.kind == "llm_end"}
    assert len(starts) == 2  # one turn per agent child
    tokens: dict[str | None, list[str]] = defaultdict(list)
    for i, event in enumerate(events):
        if event.kind == "token":
            assert event.call_id in starts  # each piece names its own completion
            assert i < ends[event.call_id]  # and comes before that turn ended
            tokens[event.call_id].append(event.data["text"])
    assert sorted("".join(pieces) for pieces in tokens.values()) == [
        finish("north found"),
        finish("south found"),
    ]
    assert_conforms(store)

    other = open_store("memory:")
    try:
        seen.set()  # nothing streams under run: let the probe answer at once
        again = Session(principal="did:local:alice", store=other)
        ran = behaviour_tree.run("Scout.", llm=LLMClient.mock(by_subgoal), session=again, tree=TREE)
        again.close()
        assert ran.stopped == "goal_achieved"
        assert shape(other) == shape(store)
    finally:
        other.close()


RUN_END = f"""
SELECT ?stop WHERE {{ GRAPH ?g {{ ?run a {T.BehaviourTreePlan.n3()} ; {T.stopReason.n3()} ?stop }} }}
"""


@pytest.mark.parametrize("driver", ["stream", "astream"])
def test_leaving_a_stream_inside_a_parallel_node_ends_the_run_after_its_children(
    store: Store, seen: threading.Event, driver: str
) -> None:
    session = Session(principal="did:local:alice", store=store)
    client = LLMClient.mock(by_subgoal)
    if driver == "stream":
        events = behaviour_tree.stream("Scout.", llm=client, session=session, tree=TREE)
        for event in events:
            if event.kind == "token":
                seen.set()
                break
        events.close()  # type: ignore[attr-defined]
    else:

        async def main() -> None:
            pieces = behaviour_tree.astream("Scout.", llm=client, session=session, tree=TREE)
            async for event in pieces:
                if event.kind == "token":
                    seen.set()
                    break
            await pieces.aclose()  # type: ignore[attr-defined]

        asyncio.run(main())
    session.close()
    rows = list(store.query(RUN_END))  # type: ignore[arg-type]
    assert [str(to_python(r["stop"])) for r in rows] == ["error"]  # the run ended, as an error
    assert_conforms(store)  # every child's completion and invocation recorded whole
