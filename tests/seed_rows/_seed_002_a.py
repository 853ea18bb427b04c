"""Helpers for the seed 002 rows 001-053 tests: the seed's example tools, an observer that
keeps what it hears, and SPARQL reads of what a run recorded (every value bound)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.seed_rows._helpers import IRI, rows

from trails.agent import Session
from trails.kernel import ObserverBase, capability
from trails.kernel.observe import ObserverEvent
from trails.llm import LLMClient
from trails.store import Store

__all__ = [
    "RETRIES",
    "STOP",
    "Seen",
    "alice",
    "observations",
    "register_tools",
    "statuses",
]


class Seen(ObserverBase):
    """Keeps every event it hears."""

    def __init__(self) -> None:
        self.events: list[ObserverEvent] = []

    def on_event(self, event: ObserverEvent) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def of(self, kind: str) -> list[ObserverEvent]:
        return [e for e in self.events if e.kind == kind]


def register_tools() -> list[str]:
    """Register the seed's example tools (each test's registry is restored after it)."""

    @capability(id="search", description="Search the web for information.")
    def search(query: str) -> str:
        return f"results for {query}"

    @capability(id="calc", description="Add two integers.")
    def calc(a: int, b: int) -> int:
        return a + b

    @capability(id="divide", description="Divide a by b.")
    def divide(a: float, b: float) -> float:
        if b == 0:
            raise ValueError("Cannot divide by zero")
        return a / b

    @capability(id="slow_tool", description="Takes its time.")
    def slow_tool() -> str:
        time.sleep(2)
        return "late"

    @capability(id="fetch_data", description="Fetch data from an API.")
    async def fetch_data(url: str) -> str:
        await asyncio.sleep(0)
        return f"data from {url}"

    return ["search", "calc", "divide", "slow_tool", "fetch_data"]


def alice(**kwargs: Any) -> Session:
    """A session of the seed's user, with ``kwargs``."""
    return Session(principal="did:local:alice", **kwargs)


def observations(llm: LLMClient, call: int) -> str:
    """Everything the model was shown at its ``call``-th request (0-based), as one text."""
    return "\n".join(m.content for m in llm.requests[call].messages)


def statuses(store: Store, session: Session) -> list[dict[str, Any]]:
    """The capability calls of ``session`` in step order: id, status and error message."""
    return rows(
        store,
        """SELECT ?session ?id ?status ?error WHERE { GRAPH ?session {
             ?inv a trails:CapabilityInvocation ; trails:status ?status ;
                  trails:capability ?cap ; trails:stepIndex ?step .
             ?cap trails:capabilityId ?id .
             OPTIONAL { GRAPH ?eg { ?inv trails:errorMessage ?error } } } } ORDER BY ?step""",
        session=IRI(session.iri),
    )


STOP = """SELECT ?session ?run ?stop ?cls WHERE { GRAPH ?session {
            ?run a trails:PlanRun ; trails:inSession ?session ; trails:stopReason ?stop .
            OPTIONAL { ?run trails:wasTerminatedBy ?t . ?t a ?cls .
                       FILTER (?cls != trails:Termination && ?cls != prov:Entity) } } }"""


RETRIES = """SELECT ?session ?retries ?status WHERE { GRAPH ?session {
               ?c a trails:LLMCompletion ; trails:retries ?retries ; trails:status ?status } }"""
