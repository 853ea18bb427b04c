"""Parts the seed 002 row tests (rows 002-054 to 002-106) share: an observer that keeps what
it hears, seed 002's tools, a session and a small answer model.

Capabilities registered here land in the process registry, which the test fixtures restore
after every test.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic

from trails import capability
from trails.agent import Session
from trails.kernel import ObserverBase, ObserverEvent

__all__ = ["SELECTOOLS", "Count", "Seen", "alice", "office_tools"]

SELECTOOLS = "docs/agent.md#coming-from-selectools"


class Seen(ObserverBase):
    """Keeps every event it hears."""

    def __init__(self) -> None:
        self.events: list[ObserverEvent] = []

    def on_event(self, event: ObserverEvent) -> None:
        self.events.append(event)

    def of(self, kind: str) -> list[ObserverEvent]:
        return [e for e in self.events if e.kind == kind]


def office_tools() -> dict[str, list[Any]]:
    """Register seed 002's tools (search, send_email, delete, divide, present_question).

    The test fixtures restore the registry after each test; the dict records the calls.
    """
    calls: dict[str, list[Any]] = {"search": [], "send": [], "delete": []}

    @capability(id="search_web", description="Search the web.")
    def search_web(q: str) -> str:
        calls["search"].append(q)
        return f"results for {q}"

    @capability(id="send_email", description="Send an email.", side_effects=True)
    def send_email(to: str) -> str:
        calls["send"].append(to)
        return f"sent to {to}"

    @capability(id="delete_db", description="Delete a database.", side_effects=True)
    def delete_db(name: str) -> str:
        calls["delete"].append(name)
        return f"deleted {name}"

    @capability(id="divide", description="Divide a by b.")
    def divide(a: float, b: float) -> str:
        if b == 0:
            raise ValueError("Cannot divide by zero")
        return str(a / b)

    @capability(id="present_question", description="Show a question card.", terminal=True)
    def present_question(question_id: int) -> str:
        return json.dumps({"action": "present_question", "id": question_id})

    return calls


def alice(**options: Any) -> Session:
    """A session of did:local:alice."""
    return Session(principal="did:local:alice", **options)


class Count(pydantic.BaseModel):
    n: int
