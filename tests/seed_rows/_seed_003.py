"""Helpers for the seed 003 (Plan-Execute-Reflect) row tests: the seed's ``index.sample``
capability, a scripted model that answers the planner and the executor from two queues, a
loopback provider, an observer, and SPARQL reads of what a run recorded (every value bound as
a parameter)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.seed_rows._helpers import IRI, rows

from trails.agent import Session
from trails.kernel import ObserverBase, capability
from trails.llm import LLMClient, Message
from trails.store import Store

__all__ = [
    "PER",
    "SAMPLE",
    "Lifecycle",
    "Provider",
    "alice",
    "executor_requests",
    "executor_runs",
    "invocations",
    "is_executor",
    "model",
    "planner_requests",
    "planner_turns",
    "recorded_systems",
    "reflection",
    "register_index",
    "run_facts",
]

PER = "docs/agent.md#coming-from-plan-execute-reflect"


def register_index() -> list[str]:
    """Register ``index.sample`` (the seed's step example); the list holds the indexes sampled."""
    sampled: list[str] = []

    @capability(id="index.sample", description="Sample documents from an index.")
    def sample(index: str) -> dict[str, Any]:
        sampled.append(index)
        return {"docs": [f"{index}-doc1", f"{index}-doc2"]}

    return sampled


def alice() -> Session:
    return Session(principal="did:local:alice")


def reflection(steps: list[str], result: str = "") -> str:
    """A planner reply: the steps still to run, or the final result."""
    return json.dumps({"steps": steps, "result": result})


def is_executor(msgs: list[Message]) -> bool:
    return any(m.role == "user" and m.content.startswith("Goal: ") for m in msgs)


def model(planner: list[str] | str, executor: list[str] | str = "") -> LLMClient:
    """A scripted model: planner turns and executor turns from two queues (the last repeats)."""
    queues = {
        "planner": planner if isinstance(planner, list) else [planner],
        "executor": executor if isinstance(executor, list) else [executor],
    }

    def route(msgs: list[Message]) -> str:
        queue = queues["executor" if is_executor(msgs) else "planner"]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return LLMClient.mock(response=route)


def planner_requests(client: LLMClient) -> list[Any]:
    return [r for r in client.adapter.requests if not is_executor(list(r.messages))]


def executor_requests(client: LLMClient) -> list[Any]:
    return [r for r in client.adapter.requests if is_executor(list(r.messages))]


def run_facts(store: Store, run: str | None) -> dict[str, Any]:
    """A run's class, stop reason, answer and termination (class, limit, observed)."""
    [found] = rows(
        store,
        """SELECT ?run ?cls ?stop ?answer ?term ?limit ?observed WHERE { GRAPH ?g {
             ?run a trails:PlanRun, ?cls ; trails:stopReason ?stop .
             FILTER (?cls != trails:PlanRun && ?cls != prov:Activity)
             OPTIONAL { ?run trails:wasTerminatedBy ?t . ?t a ?term
                        FILTER (?term != trails:Termination && ?term != prov:Entity)
                        OPTIONAL { ?t trails:limit ?limit } OPTIONAL { ?t trails:observed ?observed } }
             OPTIONAL { GRAPH ?c { ?run trails:answer ?answer } } } }""",
        run=IRI(str(run)),
    )
    return found


def planner_turns(store: Store, run: str | None) -> list[dict[str, Any]]:
    """The run's planner completions, in order, each with the plan document it generated."""
    found = rows(
        store,
        """SELECT ?run ?completion ?step ?plan ?value WHERE { GRAPH ?g {
             ?completion a trails:LLMCompletion ; prov:wasInformedBy ?run ; trails:stepIndex ?step .
             OPTIONAL { ?plan a trails:PlanDocument ; prov:wasGeneratedBy ?completion .
                        GRAPH ?c { ?plan prov:value ?value } } } } ORDER BY ?step""",
        run=IRI(str(run)),
    )
    return found


def executor_runs(store: Store, run: str | None) -> list[dict[str, Any]]:
    """The executor passes of a run: ReAct runs informed by one of its planner completions."""
    return rows(
        store,
        """SELECT ?run ?pass ?completion ?goal WHERE { GRAPH ?g {
             ?completion a trails:LLMCompletion ; prov:wasInformedBy ?run ; trails:stepIndex ?i .
             ?pass a trails:ReActPlan ; prov:wasInformedBy ?completion .
             GRAPH ?c { ?pass trails:goal ?goal } } } ORDER BY ?i""",
        run=IRI(str(run)),
    )


def invocations(store: Store, graph: str | None) -> list[dict[str, Any]]:
    """Every capability call of a session graph: which capability, its status, its run."""
    return rows(
        store,
        """SELECT ?g ?capability ?status ?pass WHERE { GRAPH ?g {
             ?inv a trails:CapabilityInvocation ; trails:status ?status ;
                  trails:capability/trails:capabilityId ?capability ; prov:startedAtTime ?t ;
                  prov:wasInformedBy/prov:wasInformedBy ?pass } } ORDER BY ?t""",
        g=IRI(str(graph)),
    )


def recorded_systems(store: Store, graph: str | None) -> list[str]:
    """The system prompt of every recorded completion of a session graph, in order."""
    found = rows(
        store,
        """SELECT ?g ?value WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; prov:used ?p ;
             prov:startedAtTime ?t . ?p a trails:Prompt } GRAPH ?cg { ?p prov:value ?value } }
           ORDER BY ?t""",
        g=IRI(str(graph)),
    )
    messages = [json.loads(row["value"])["messages"] for row in found]
    return [next(m["content"] for m in turn if m["role"] == "system") for turn in messages]


SAMPLE = "Sample documents from index: 'my-index'"


class Provider:
    """A loopback model server answering the planner in one provider's response shape."""

    def __init__(self, shape: str, text: str) -> None:
        body = (
            {"model": "m", "message": {"role": "assistant", "content": text}, "done": True,
             "done_reason": "stop", "prompt_eval_count": 5, "eval_count": 3}
            if shape == "ollama"
            else {"id": "c1", "object": "chat.completion", "model": "m",
                  "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": text}}],
                  "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}
        )  # fmt: skip
        payload = json.dumps(body).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *_args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


class Lifecycle(ObserverBase):
    """Keeps the kind of every event of a run."""

    def __init__(self) -> None:
        self.kinds: list[str] = []

    def on_event(self, event: Any) -> None:
        self.kinds.append(event.kind)
