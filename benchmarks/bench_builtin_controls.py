"""The built-in controls' cost: at a session's end against recording it, and over many sessions.

- **session**: every session-scoped control of the built-in set (``builtin_controls()``)
  evaluated over one recorded ReAct session (a policy with a review its approver answers,
  a screened output, a failed call: 6 model turns, 5 calls), against recording that
  session with the real runtime (scripted model, real store). CPU seconds of this process,
  paired rounds; the ratio is the figure.
- **store**: the store-scoped controls of the built-in set over ``N/4`` and ``N`` sessions
  (default ``N`` = 10,000). The sessions are copies of a few recorded ones (each graph and
  content graph copied with every UUID in it minted anew, plus a stand-in seal naming the
  copy in a ledger graph, so the seal check has seals to find), with interrupted payments,
  erasures and a retention run among the originals so every control has rows to find.
  Reported: CPU seconds per session at both sizes (a control linear in the store keeps it
  flat: the growth ratio is about 1), and against a baseline query that reads one triple
  per session (its ``trails:Session`` typing in its graph).

Run: ``python benchmarks/bench_builtin_controls.py [--sessions N]``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_section

from trails.agent import Session
from trails.agent.planners import react
from trails.compliance.erasure import erase
from trails.compliance.holds import place_hold
from trails.compliance.retention import RetentionPolicy, apply
from trails.controls import builtin_controls, evaluate_session, evaluate_store
from trails.evidence.seal import install_sealer
from trails.kernel import capability
from trails.kernel.policy import Approval, RulePolicy
from trails.llm import LLMClient
from trails.prov import Recorder
from trails.prov.content import content_graph
from trails.store import IRI, Solutions, Store, open_store
from trails.store.terms import Literal, Quad

ALICE, CAROL, DPO = "did:web:alice.example", "did:web:carol.example", "did:web:dpo.example"
TOOLS = ["bench.send", "bench.fetch", "bench.lookup", "bench.flaky"]
CUT_SHORT: set[int] = set()


@capability(id="bench.send", side_effects=True, high_risk=True)
def send(to: str) -> str:
    return "sent"


@capability(id="bench.fetch", screen_output=True)
def fetch() -> str:
    return "Opening hours: 9 to 5."


@capability(id="bench.lookup", granted_to=[ALICE])
def lookup(key: str) -> str:
    return f"value of {key}"


@capability(id="bench.flaky")
def flaky() -> str:
    raise ValueError("the disk is full")


@capability(id="bench.pay", side_effects=True)
def pay(amount: int) -> str:
    if amount in CUT_SHORT:
        raise KeyboardInterrupt
    return "paid"


def turn(action: str, args: dict[str, Any] | None = None, **extra: Any) -> str:
    payload = {"thought": f"use {action}", "action": action, "action_input": args or {}}
    return "```json\n" + json.dumps(payload | extra) + "\n```"


SCRIPT = [
    turn("bench.send", {"to": "ops@example.com"}),
    turn("bench.fetch"),
    turn("bench.lookup", {"key": "a"}),
    turn("bench.lookup", {"key": "b"}),
    turn("bench.flaky"),
    turn("finish", final_answer="done"),
]


def approver(spec: Any, args: dict[str, Any], reason: str) -> Approval:
    return Approval(True, reviewer=CAROL)


def react_session(recorder: Recorder) -> str:
    session = Session(
        principal=ALICE,
        recorder=recorder,
        policy=RulePolicy(review=["bench.send"], allow=["bench.*"], name="office"),
        approver=approver,
        screen_output=lambda capability_id, output: None,
    )
    react.run("Do the round.", llm=LLMClient.mock(SCRIPT), session=session, tools=TOOLS)
    session.close()
    return str(session.iri)


def pay_session(recorder: Recorder, amount: int, *, interrupt: bool = False) -> str:
    if interrupt:
        CUT_SHORT.add(amount)
    session = Session(principal=ALICE, recorder=recorder)
    script = [turn("bench.pay", {"amount": amount}), turn("finish", final_answer="paid")]
    try:
        react.run("Pay.", llm=LLMClient.mock(script), session=session, tools=["bench.pay"])
    except KeyboardInterrupt:
        pass
    finally:
        CUT_SHORT.discard(amount)
    session.close()
    return str(session.iri)


def cpu(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def session_figures(rounds: int = 15) -> tuple[float, float, float, list[float], list[float]]:
    """Median CPU seconds of recording a session, of evaluating the session-scoped built-in
    controls over it with the engine's default time limit (the controls handed together to
    a worker thread that can be given up on) and without one, in alternating order, and the
    rounds' ratios (evaluation / recording) of both."""
    store = open_store("memory:")
    recorder = Recorder(store)
    install_sealer(recorder)
    controls = [c for c in builtin_controls() if c.scope == "session"]
    for _ in range(3):  # warm up: imports, query caches
        evaluate_session(store, react_session(recorder), controls)
    records: list[float] = []
    limited: list[float] = []
    unlimited: list[float] = []
    for _ in range(rounds):
        made: list[str] = []
        records.append(cpu(lambda made=made: made.append(react_session(recorder))))  # type: ignore[misc]
        both = [
            (limited, lambda made=made: evaluate_session(store, made[0], controls)),
            (unlimited, lambda made=made: evaluate_session(store, made[0], controls, timeout=None)),
        ]
        # the first evaluation of a new session pays what the second finds cached: alternate
        for into, run in both if len(records) % 2 else both[::-1]:
            into.append(cpu(run))  # type: ignore[arg-type]
    store.close()
    return (
        statistics.median(records),
        statistics.median(limited),
        statistics.median(unlimited),
        sorted(a / r for a, r in zip(limited, records, strict=True)),
        sorted(a / r for a, r in zip(unlimited, records, strict=True)),
    )


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def sample_store() -> tuple[Store, list[str]]:
    """A store of recorded sessions of every kind the store-scoped controls read."""
    store = open_store("memory:")
    recorder = Recorder(store)
    install_sealer(recorder)
    sessions = [react_session(recorder), pay_session(recorder, 1)]
    sessions.append(pay_session(recorder, 2, interrupt=True))
    sessions.append(pay_session(recorder, 3, interrupt=True))
    sessions.append(pay_session(recorder, 3))
    erased = pay_session(recorder, 4)
    erase(recorder, session=erased, reason="request 1", by=DPO)
    held, removed = pay_session(recorder, 5), pay_session(recorder, 6)
    place_hold(recorder, held, reason="case 5", by=DPO)
    apply(
        recorder,
        RetentionPolicy.from_table({"content_days": 1}),
        by=DPO,
        reason="content past a day",
        now=datetime.now(UTC) + timedelta(days=3),
    )
    return store, [*sessions, erased, held, removed]


def graph_quads(store: Store, graph: IRI) -> list[Quad]:
    result = store.query("SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }", {"g": graph})
    assert isinstance(result, Solutions)
    return [Quad(r["s"], r["p"], r["o"], graph) for r in result]  # type: ignore[arg-type]


def renamed(quads: list[Quad]) -> list[Quad]:
    """The quads with every UUID in an IRI or a string minted anew (the same one each time)."""
    fresh: dict[str, str] = {}

    def new(match: re.Match[str]) -> str:
        return fresh.setdefault(match.group(0), str(uuid.uuid4()))

    def term(t: Any) -> Any:
        if isinstance(t, IRI):
            return IRI.trusted(_UUID.sub(new, str(t)))
        if isinstance(t, Literal) and _UUID.search(t.value):
            return Literal(_UUID.sub(new, t.value), t.datatype, t.language)
        return t

    return [Quad(term(q.subject), q.predicate, term(q.object), term(q.graph)) for q in quads]


SEALED_GRAPH = IRI("https://w3id.org/trails/ns#sealedGraph")


def grow(store: Store, samples: list[str], target: int, have: int) -> int:
    """Copy the sample sessions until the store holds ``target`` sessions; each copy gets a
    stand-in seal in a ledger graph of its own (the seal check reads only that triple)."""
    templates = [graph_quads(store, IRI(s)) + graph_quads(store, content_graph(s)) for s in samples]
    ledger = IRI("urn:bench:ledger")
    batch: list[Quad] = []
    while have < target:
        quads = renamed(templates[have % len(templates)])
        session = next(q.graph for q in quads if not str(q.graph).endswith(":content"))
        batch.extend(quads)
        batch.append(Quad(IRI.trusted(f"urn:bench:seal:{have}"), SEALED_GRAPH, session, ledger))
        have += 1
        if len(batch) > 50_000:
            store.write(batch)
            batch = []
    if batch:
        store.write(batch)
    return have


BASELINE = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session WHERE { GRAPH ?session { ?session a trails:Session } }"""


def store_figures(n: int) -> list[tuple[int, float, float, dict[str, float]]]:
    """For n/4 and n sessions: CPU seconds of all store-scoped controls, of the baseline,
    and of each control alone (the best of three rounds each)."""
    store, samples = sample_store()
    controls = [c for c in builtin_controls() if c.scope == "store"]
    have = len(samples)
    rows = []
    for size in (n // 4, n):
        have = grow(store, samples, size, have)
        evaluate_store(store, controls, timeout=None)  # warm up
        t_all = min(cpu(lambda: evaluate_store(store, controls, timeout=None)) for _ in range(3))
        t_base = min(cpu(lambda: list(store.query(BASELINE))) for _ in range(3))  # type: ignore[arg-type]
        each = {
            c.id: min(cpu(lambda c=c: evaluate_store(store, [c], timeout=None)) for _ in range(3))
            for c in controls
        }
        rows.append((size, t_all, t_base, each))
    store.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    args = parser.parse_args()
    t_record, t_limited, t_unlimited, limited, unlimited = session_figures()
    n_session = sum(c.scope == "session" for c in builtin_controls())
    lines = [
        "## Built-in controls",
        "",
        "`python benchmarks/bench_builtin_controls.py` (CPU seconds of this process).",
        "",
        f"At a session's end: the {n_session} session-scoped built-in controls over one recorded "
        f"ReAct session (6 model turns, 5 calls, {t_record * 1000:.1f} ms to record) take "
        f"{t_unlimited * 1000:.1f} ms run as queries, **{statistics.median(unlimited):.0%}** of "
        f"the recording (rounds {unlimited[0]:.0%}–{unlimited[-1]:.0%}); with the engine's "
        f"default time limit (the controls handed together to one worker thread, alternating "
        f"with the plain run) {t_limited * 1000:.1f} ms, "
        f"{statistics.median(limited):.0%} (rounds {limited[0]:.0%}–{limited[-1]:.0%}). "
        "This session holds what every one of these controls looks for (a review, a "
        "screened output, a failed call), so every query runs: the worst case. A plain "
        "ReAct session, where the look-ups spare the queries that can find nothing, and "
        "the sealed write of the findings are measured in the next section.",
        "",
        "Over the store (copies of recorded sessions, each with a seal):",
        "",
        "| sessions | store-scoped controls (s) | per session (µs) | baseline: one triple per "
        "session (s) | controls / baseline |",
        "|---:|---:|---:|---:|---:|",
    ]
    rows = store_figures(args.sessions)
    for size, t_all, t_base, _ in rows:
        lines.append(
            f"| {size:,} | {t_all:.3f} | {t_all / size * 1e6:.1f} | {t_base:.3f} | "
            f"{t_all / t_base:.1f}× |"
        )
    (small, t_small, _, each_small), (big, t_big, _, each_big) = rows
    growth = (t_big / big) / (t_small / small)
    lines += [
        "",
        f"Per-session cost from {small:,} to {big:,} sessions: **×{growth:.2f}** (1 is linear).",
        "",
        "| control | " + f"{small:,} sessions (s) | {big:,} sessions (s) |",
        "|---|---:|---:|",
    ]
    for cid in each_big:
        lines.append(f"| {cid} | {each_small[cid]:.3f} | {each_big[cid]:.3f} |")
    text = "\n".join(lines)
    print(text)
    write_section("builtin-controls", text)


if __name__ == "__main__":
    main()
