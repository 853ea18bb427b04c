"""A program that is stopped inside a capability call, for the interruption crash tests.

``python interrupted_child.py STORE CAPABILITY HOW`` records into the embedded
store at STORE and calls CAPABILITY (``payments.send``, with side effects, or
``notes.search``, pure), whose handler prints ``started <call IRI>`` and then
waits for a signal. HOW says how the call is made:

- ``react``: a ReAct run in ``with Session(...)``, the model scripted to call it;
- ``bare``: ``invoke`` on the process default session, which nobody closes;
- ``sigterm``: as ``bare``, with the program's own SIGTERM handler, which exits
  (``sys.exit(143)``) as programs commonly do.

The test sends SIGINT, SIGTERM or SIGKILL once the line is printed.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any

from trails import capability, invoke
from trails.agent import Session
from trails.agent.planners import react
from trails.llm import LLMClient, Message
from trails.store import set_default_store
from trails.store.oxigraph import OxigraphStore


def wait_for_signal(ctx: Any) -> None:
    print(f"started {ctx.parent}", flush=True)
    while True:  # the signal ends this
        time.sleep(0.05)


@capability(id="payments.send", description="Send a payment.", side_effects=True)
def send(ctx: Any, amount: int) -> dict[str, Any]:
    wait_for_signal(ctx)
    return {"paid": amount}


@capability(id="notes.search", description="Search notes by tag.")
def search(ctx: Any, tag: str) -> dict[str, Any]:
    wait_for_signal(ctx)
    return {"hits": []}


ARGS: dict[str, dict[str, Any]] = {"payments.send": {"amount": 120}, "notes.search": {"tag": "due"}}


def main(store_dir: str, capability_id: str, how: str) -> None:
    set_default_store(OxigraphStore(store_dir))
    if how == "react":
        call = {"thought": "go", "action": capability_id, "action_input": ARGS[capability_id]}
        text = "```json\n" + json.dumps(call) + "\n```"

        def script(messages: list[Message]) -> str:
            return text

        with Session(principal="did:local:alice") as sess:
            react.run("Pay the due invoice.", llm=LLMClient.mock(response=script), session=sess)
        return
    if how == "sigterm":
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    invoke(capability_id, ARGS[capability_id])


if __name__ == "__main__":
    main(*sys.argv[1:4])
