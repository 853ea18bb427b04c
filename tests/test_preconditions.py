"""Preconditions of a capability: listed to planners and in the manifest, checked before a call.

A callable precondition that does not hold refuses the call (recorded ``refused``, the
handler never runs) and keeps the capability out of a planner's catalogue; words are
shown to the model and to other agents.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from trails import capability, invoke
from trails.agent import Session
from trails.agent.loop.tools import discover_tools
from trails.agent.planners import react
from trails.errors import PreconditionFailed, UserError
from trails.kernel import Context
from trails.llm import LLMClient
from trails.store import Store
from trails.store.terms import Literal

STATUS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?id ?status ?error WHERE {
  GRAPH ?g { ?call trails:capability/trails:capabilityId ?id ; trails:status ?status }
  OPTIONAL { GRAPH ?h { ?call trails:errorMessage ?error } }
}
"""


@pytest.fixture
def door() -> dict[str, Any]:
    """A door that is open or shut, and capabilities that need it open."""
    state: dict[str, Any] = {"open": False, "ran": 0}

    def door_is_open() -> bool:
        """the door is open"""
        return bool(state["open"])

    @capability(
        id="door.walk",
        description="Walk through the door.",
        side_effects=True,
        cost_estimate={"usd": 0.5},
        preconditions=["the walker is awake", door_is_open],
    )
    def walk() -> str:
        state["ran"] += 1
        return "through"

    @capability(id="door.look", description="Look at the door.", cost_estimate={"usd": 0.01})
    def look() -> str:
        return "a door"

    return state


def test_a_precondition_that_does_not_hold_refuses_the_call_and_records_it(
    door: dict[str, Any], ctx: Context, store: Store
) -> None:
    with pytest.raises(PreconditionFailed, match="precondition not met: the door is open"):
        invoke("door.walk", {}, ctx=ctx)
    assert door["ran"] == 0  # the handler never ran
    door["open"] = True
    assert invoke("door.walk", {}, ctx=ctx) == "through"
    rows = store.query(STATUS, {"id": Literal("door.walk")})
    outcomes = sorted((r["status"].value, r.get("error") is not None) for r in rows)  # type: ignore[union-attr]
    assert outcomes == [("ok", False), ("refused", True)]
    refused = next(r for r in rows if r["status"].value == "refused")  # type: ignore[union-attr]
    assert "the door is open" in refused["error"].value  # type: ignore[union-attr]


def test_a_precondition_that_raises_does_not_hold(ctx: Context) -> None:
    def ledger_reachable() -> bool:
        raise OSError("no route to ledger")

    @capability(id="ledger.post", preconditions=[ledger_reachable])
    def post() -> str:
        return "posted"

    with pytest.raises(
        PreconditionFailed, match=r"ledger_reachable \(OSError: no route to ledger\)"
    ):
        invoke("ledger.post", {}, ctx=ctx)


def test_preconditions_must_be_words_or_callables() -> None:
    with pytest.raises(UserError, match="must be a list"):
        capability(id="x.y", preconditions="open")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="a string or a callable"):
        capability(id="x.y", preconditions=[42])  # type: ignore[list-item]
    with pytest.raises(UserError, match="is empty"):
        capability(id="x.y", preconditions=["  "])


def test_a_capability_whose_precondition_fails_is_not_offered(door: dict[str, Any]) -> None:
    assert [cid for cid, _ in discover_tools(["door.walk", "door.look"])] == ["door.look"]
    door["open"] = True
    offered = dict(discover_tools(["door.walk", "door.look"]))
    assert offered["door.walk"]["preconditions"] == ["the walker is awake", "the door is open"]


def test_the_planner_prompt_lists_cost_side_effects_and_preconditions(
    door: dict[str, Any], store: Store
) -> None:
    door["open"] = True
    finish = {"thought": "done", "action": "finish", "action_input": {}, "final_answer": "ok"}
    llm = LLMClient.mock(response=["```json\n" + json.dumps(finish) + "\n```"])
    with Session(principal="did:local:alice", store=store) as session:
        react.run("Go through.", llm=llm, session=session, tools=["door.walk", "door.look"])
    prompt = "\n".join(str(m.content) for m in llm.requests[0].messages)
    assert (
        "- door.walk: Walk through the door. [side effects: changes the world; estimated cost "
        "usd 0.5; preconditions: the walker is awake; the door is open]" in prompt
    )
    assert "- door.look: Look at the door. [estimated cost usd 0.01]" in prompt
