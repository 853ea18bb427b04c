"""Recorded sessions for the persistence and replay tests.

Each builder runs a real planner over a real store with a scripted
``LLMClient.mock``; together they cover each planner, unicode, long
contents, failed invocations and budget terminations.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from trails.agent import Session
from trails.kernel import capability
from trails.llm import LLMClient, Message, Response
from trails.store import Store

LONG = "ß∂ƒ©˙∆˚¬…æ " * 2_000  # 22,000 characters of non-ASCII text
CARD = {"id": "https://agents.example/card/helper", "name": "Hélper ✓"}


def turn(action: str, action_input: dict[str, Any] | None = None, **extra: Any) -> str:
    """A well-formed ReAct reply."""
    payload: dict[str, Any] = {"thought": extra.pop("thought", f"use {action}"), "action": action}
    payload["action_input"] = action_input or {}
    payload.update(extra)
    return "```json\n" + json.dumps(payload, ensure_ascii=False) + "\n```"


def plan(*steps: dict[str, Any]) -> str:
    """A well-formed Plan-and-Execute reply."""
    return "```json\n" + json.dumps({"plan": list(steps)}, ensure_ascii=False) + "\n```"


def verdict(value: str, critique: str = "") -> str:
    """A well-formed Reflexion critic reply."""
    return "```json\n" + json.dumps({"verdict": value, "critique": critique}) + "\n```"


def routed(agent: list[str], critic: list[str]) -> Callable[[list[Message]], str]:
    """A mock script answering the agent and the Reflexion critic from separate queues."""

    def route(msgs: list[Message]) -> str:
        system = next((m.content for m in msgs if m.role == "system"), "")
        return (critic if "Reflexion critic" in system else agent).pop(0)

    return route


class Tools:
    """The capabilities the recorded sessions use; ``calls`` records what ran."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.weather = "☀ 23 °C"

    def register(self) -> None:
        @capability(id="kb.lookup", description="Look a term up in the knowledge base.")
        def lookup(term: str) -> dict[str, Any]:
            self.calls.append(("kb.lookup", term))
            return {"term": term, "definition": f"définition de {term} — 定义", "long": LONG}

        @capability(id="kb.fail", description="A lookup that always fails.")
        def fail(term: str) -> str:
            self.calls.append(("kb.fail", term))
            raise ValueError(f"no entry for {term!r}")

        @capability(id="weather.now", description="The weather now in a city.")
        def weather(city: str) -> str:
            self.calls.append(("weather.now", city))
            return f"{city}: {self.weather}"


def react_session(store: Store) -> Session:
    """ReAct: a lookup (unicode, long result), a failed call, then finish."""
    client = LLMClient.mock(
        [
            turn("kb.lookup", {"term": "naïve"}, thought="Look it up — ünïcödé"),
            turn("kb.fail", {"term": "x"}),
            turn("finish", final_answer="naïve: définition ✓"),
        ]
    )
    session = Session.new(
        strategy="react",
        principal="did:example:ålice",
        budget={"usd": 2.5, "tokens": 500_000},
        agent_card=CARD,
        store=store,
        llm=client,
    )
    session.run("Define naïve — 定义", max_steps=6)
    return session


def plan_session(store: Store) -> Session:
    """Plan-and-Execute: a plan whose second step fails, a replan, then finish."""
    client = LLMClient.mock(
        [
            plan(
                {"action": "weather.now", "action_input": {"city": "Zürich"}, "rationale": "look"},
                {"action": "kb.fail", "action_input": {"term": "föhn"}, "rationale": "define"},
                {"action": "finish", "action_input": {}, "final_answer": "never"},
            ),
            plan(
                {"action": "kb.lookup", "action_input": {"term": "föhn"}, "rationale": "again"},
                {"action": "finish", "action_input": {}, "final_answer": "Zürich ☀, föhn defined"},
            ),
        ]
    )
    session = Session.new(strategy="plan_and_execute", principal="did:example:bob", store=store)
    session.run("Weather and föhn", llm=client)
    return session


def reflexion_session(store: Store) -> Session:
    """Reflexion: a first attempt the critic rejects, a second it accepts."""
    client = LLMClient.mock(
        routed(
            [
                turn("weather.now", {"city": "Oslo"}),
                turn("finish", final_answer="cold"),
                turn("weather.now", {"city": "Oslo"}),
                turn("finish", final_answer="Oslo: ☀ 23 °C"),
            ],
            [verdict("retry", "quote the tool — «exactly»"), verdict("accept")],
        )
    )
    session = Session.new(strategy="reflexion", principal="did:example:carol", store=store)
    session.run("Weather in Oslo", llm=client)
    return session


def budget_session(store: Store) -> Session:
    """ReAct stopped by its cost budget after the second turn."""
    priced = Response(text="", model="mock", input_tokens=10, output_tokens=10, usd=0.3)
    client = LLMClient.mock(
        [
            Response(**{**priced.__dict__, "text": turn("kb.lookup", {"term": "a"})}),
            Response(**{**priced.__dict__, "text": turn("kb.lookup", {"term": "b"})}),
            Response(**{**priced.__dict__, "text": turn("finish", final_answer="never")}),
        ]
    )
    session = Session.new(
        strategy="react", principal="did:example:dan", budget={"usd": 0.5}, store=store
    )
    result = session.run("Spend", llm=client)
    assert result.stopped == "max_cost"
    return session


BUILDERS: dict[str, Callable[[Store], Session]] = {
    "react": react_session,
    "plan_and_execute": plan_session,
    "reflexion": reflexion_session,
    "budget": budget_session,
}


def quads(store: Store) -> list[str]:
    """Every quad of the store, as sorted N-Quads lines."""
    data = store.dump(format="nquads")
    assert data is not None
    return sorted(data.decode().splitlines())
