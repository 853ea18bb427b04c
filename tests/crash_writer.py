"""A writer for the crash harness: records planner sessions until it is killed.

Run as a *zygote*: it imports trails once, then for each ``go STORE EFFECTS SEED``
line on stdin forks a writer and prints its pid, so a trial starts in milliseconds;
``wait PID`` reaps a killed writer and prints its exit status. A writer opens the
embedded store at STORE and records sessions for ever with a scripted model:
ReAct and Plan-and-Execute runs calling a pure capability (``notes.search``) and
one with side effects (``payments.send``), sessions closed with ``with``, reused
for two runs, or just dropped. ``payments.send`` appends its activity IRI to
EFFECTS as its effect (what a payment would do to the world): after a crash,
every line there must be a call on record.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from typing import Any

from trails import capability
from trails.agent import Session
from trails.agent.planners import plan_and_execute, react
from trails.llm import LLMClient, Message
from trails.store import set_default_store
from trails.store.oxigraph import OxigraphStore


def fenced(data: dict[str, Any]) -> str:
    return "```json\n" + json.dumps(data) + "\n```"


SEARCH = fenced({"thought": "look", "action": "notes.search", "action_input": {"tag": "due"}})
PAY = fenced({"thought": "pay", "action": "payments.send", "action_input": {"amount": 120}})
FINISH = fenced({"thought": "done", "action": "finish", "action_input": {}, "final_answer": "ok"})
PLAN = fenced(
    {
        "plan": [
            {"action": "notes.search", "action_input": {"tag": "due"}, "rationale": "find"},
            {"action": "payments.send", "action_input": {"amount": 7}, "rationale": "pay"},
            {"action": "finish", "action_input": {}, "final_answer": "paid"},
        ]
    }
)


def react_script(messages: list[Message]) -> str:
    seen = sum(1 for m in messages if m.role == "user" and m.content.startswith("Observation"))
    return (SEARCH, PAY, FINISH)[min(seen, 2)]


def write(store_dir: str, effects_path: str, seed: int) -> None:
    rng = random.Random(seed)
    effects = os.open(effects_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    @capability(id="notes.search", description="Search notes by tag.")
    def search(tag: str) -> dict[str, Any]:
        return {"hits": ["n1", "n2"]}

    @capability(id="payments.send", description="Send a payment.", side_effects=True)
    def send(ctx: Any, amount: int) -> dict[str, Any]:
        os.write(effects, f"{ctx.parent}\n".encode())  # the effect happens ...
        time.sleep(rng.random() * 0.004)  # ... and takes a while
        return {"paid": amount}

    set_default_store(OxigraphStore(store_dir))
    react_llm = LLMClient.mock(response=react_script)
    plan_llm = LLMClient.mock(response=lambda _m: PLAN)
    while True:
        shape = rng.randrange(4)
        if shape == 0:
            with Session(principal="did:local:alice") as sess:
                react.run("Pay the due invoice.", llm=react_llm, session=sess)
        elif shape == 1:
            plan_and_execute.run(
                "Pay it.", llm=plan_llm, session=Session(principal="did:local:bob")
            )
        elif shape == 2:
            sess = Session(principal="did:local:alice", llm=react_llm)
            sess.run("first")
            plan_and_execute.run("second", llm=plan_llm, session=sess)
            sess.close()
        else:
            Session.new(strategy="react", principal="did:local:carol", llm=react_llm).run("go")


def zygote() -> None:
    for line in sys.stdin:
        command, *args = line.split()
        if command == "go":
            pid = os.fork()
            if pid == 0:
                try:
                    write(args[0], args[1], int(args[2]))
                finally:
                    os._exit(1)
            print(pid, flush=True)
        elif command == "wait":
            _, status = os.waitpid(int(args[0]), 0)
            print(os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    zygote()
