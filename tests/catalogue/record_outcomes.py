"""Record one session per outcome into a directory store, in a process of its own.

Run as ``python -m tests.catalogue.record_outcomes DIR``: a ReAct run whose provider
failed ("provider down", the mock's scripted error: the session itself ends ``ok``), one
that reached its goal, and one stopped by its step limit. Prints ``key session`` lines.
"""

from __future__ import annotations

import sys

from trails.agent import Session
from trails.agent.planners import react
from trails.llm import LLMClient, ModelServerError
from trails.store import open_store

__all__ = ["FINISH", "PRINCIPAL", "main"]

FINISH = '{"thought": "done", "action": "finish", "final_answer": "It is 4."}'

PRINCIPAL = "did:local:alice"


def main(folder: str) -> None:
    """Record the three sessions into the store at ``folder``."""
    store = open_store(folder, base_iri="urn:trails:")
    runs = {
        "failed": (
            LLMClient.mock(
                response=[ModelServerError("provider down", provider="mock", status=503)]
            ),
            5,
        ),
        "ok": (LLMClient.mock(response=[FINISH]), 5),
        "stopped": (LLMClient.mock(response=["[1]", "[1]"]), 1),
    }
    for key, (client, steps) in runs.items():
        session = Session(principal=PRINCIPAL, store=store)
        result = react.run("What is 2 + 2?", llm=client, session=session, max_steps=steps)
        session.close()
        print(key, session.iri, result.stopped)
    store.close()


if __name__ == "__main__":
    main(sys.argv[1])
