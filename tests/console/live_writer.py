"""Record a session step by step into a directory store, in a process of its own.

Run as ``python -m tests.console.live_writer STORE STEPS [GATE]``: it starts a
session as did:local:alice (printing its IRI), then records ``STEPS`` calls of a
small capability, one at a time; with a ``GATE`` folder it waits, before call
``n``, for the file ``GATE/go-n`` (so a test decides when each step happens, and
sees it arrive), and before ending the session for ``GATE/go-end``. Every wait
is bounded. The console's live tests serve the same store meanwhile.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from trails.agent import Session
from trails.kernel import capability, invoke
from trails.store import open_store

__all__ = ["main"]

WAIT = 120.0


@capability(id="live.step", description="One step of the live writer.")
def step(n: int) -> dict[str, int]:
    return {"n": n, "square": n * n}


def _wait(gate: Path | None, name: str) -> None:
    if gate is None:
        return
    deadline = time.monotonic() + WAIT
    while not (gate / name).exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"no {name} within {WAIT:g} s")
        time.sleep(0.05)


def main(folder: str, steps: int, gate: Path | None) -> None:
    """Record the session, a step at a time."""
    store = open_store(folder, base_iri="urn:trails:")
    try:
        with Session(principal="did:local:alice", store=store) as session:
            ctx = session.context
            print(ctx.session, flush=True)
            for n in range(steps):
                _wait(gate, f"go-{n}")
                invoke("live.step", {"n": n}, ctx=ctx)
                print(f"step {n}", flush=True)
            _wait(gate, "go-end")
    finally:
        store.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) > 3 else None)
