"""Helpers for the seed 000 row tests: the seed's capabilities, scripted turns for each
planner, and SPARQL reads of what a run recorded (every value bound as a parameter)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.seed_rows._helpers import IRI, rows

from trails.agent import Session
from trails.kernel import capability
from trails.llm import Message, Response
from trails.store import Store

__all__ = [
    "Clock",
    "alice",
    "done",
    "fenced",
    "of_type",
    "plan",
    "priced",
    "recorded_params",
    "recorded_prompts",
    "register_notes",
    "routed",
    "run_row",
    "step",
    "verdict",
]


def register_notes() -> dict[str, list[Any]]:
    """Register ``notes.search`` (the seed's), ``notes.tag`` and ``notes.fail``; the dict
    holds their calls (the test's registry is restored after it)."""
    calls: dict[str, list[Any]] = {"search": [], "tag": [], "fail": []}

    @capability(id="notes.search", description="Search notes by tag.")
    def search(ctx: Any, tag: str) -> dict[str, Any]:
        calls["search"].append(tag)
        return {"hits": ["n1", "n2"]}

    @capability(id="notes.tag", description="Tag a note.", annotations={"tags": "read-write"})
    def tag(note: str, label: str) -> str:
        calls["tag"].append((note, label))
        return f"tagged {note} {label}"

    @capability(id="notes.fail", description="Always fails.")
    def fail() -> str:
        calls["fail"].append(True)
        raise ValueError("disk on fire")

    return calls


def alice() -> Session:
    return Session(principal="did:local:alice")


def fenced(payload: Any) -> str:
    return "```json\n" + json.dumps(payload) + "\n```"


def plan(*steps: dict[str, Any]) -> str:
    """A fenced Plan-and-Execute plan."""
    return fenced({"plan": list(steps)})


def step(action: str, **action_input: Any) -> dict[str, Any]:
    return {"action": action, "action_input": action_input, "rationale": f"run {action}"}


def done(answer: str) -> dict[str, Any]:
    return {"action": "finish", "action_input": {}, "final_answer": answer}


def verdict(kind: str, critique: str = "") -> str:
    return fenced({"verdict": kind, "critique": critique})


def routed(inner: Any, critic: Any) -> Callable[[list[Message]], Any]:
    """The seed's router: the critic's system prompt names the Reflexion critic.

    ``inner`` / ``critic``: a fixed reply or a list used in order (the last one repeats).
    """
    queues = {
        "inner": list(inner) if isinstance(inner, list) else [inner],
        "critic": list(critic) if isinstance(critic, list) else [critic],
    }

    def route(msgs: list[Message]) -> Any:
        system = next((m.content for m in msgs if m.role == "system"), "")
        queue = queues["critic" if "Reflexion critic" in system else "inner"]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return route


def run_row(store: Store, run: str | None) -> dict[str, Any]:
    """A plan run's stop reason, answer, goal and the class of its termination."""
    [row] = rows(
        store,
        """SELECT ?run ?stop ?answer ?goal ?term WHERE { GRAPH ?g {
             ?run trails:stopReason ?stop .
             OPTIONAL { ?run trails:wasTerminatedBy ?t . ?t a ?term
                        FILTER (?term != trails:Termination && ?term != prov:Entity) }
             OPTIONAL { GRAPH ?c1 { ?run trails:answer ?answer } }
             OPTIONAL { GRAPH ?c2 { ?run trails:goal ?goal } } } }""",
        run=IRI(str(run)),
    )
    return row


def of_type(store: Store, graph: str | None, cls: IRI) -> list[str]:
    """The subjects of one type in a session's graph."""
    found = rows(
        store, "SELECT ?g ?cls ?s WHERE { GRAPH ?g { ?s a ?cls } }", g=IRI(str(graph)), cls=cls
    )
    return [row["s"] for row in found]


def recorded_params(store: Store, graph: str | None) -> list[dict[str, Any]]:
    """The ``params`` of every recorded prompt of a session graph."""
    found = rows(
        store,
        """SELECT ?g ?value WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; prov:used ?p .
             ?p a trails:Prompt } GRAPH ?cg { ?p prov:value ?value } }""",
        g=IRI(str(graph)),
    )
    return [json.loads(row["value"])["params"] for row in found]


def recorded_prompts(store: Store, graph: str | None) -> list[str]:
    """Every message text of every recorded prompt of a session graph."""
    found = rows(
        store,
        """SELECT ?g ?value WHERE { GRAPH ?g { ?p a trails:Prompt } GRAPH ?cg { ?p prov:value ?value } }""",
        g=IRI(str(graph)),
    )
    return [m["content"] for row in found for m in json.loads(row["value"])["messages"]]


def priced(text: str, *, usd: float = 0.0, tokens: int = 0) -> Response:
    return Response(text=text, model="mock", usd=usd, input_tokens=tokens)


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now
