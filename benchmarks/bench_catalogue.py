"""The session catalogue and per-session reads at 1k and 10k sessions, as ratios to 1k.

Stores are recorded through the recorder, every session ended and sealed by
the default sealer (most as their events: a ReAct run, three completions, two
capability calls; one in a hundred a real ``Session`` run, persisted for replay), on disk, and cached between runs under
``TRAILS_BENCH_CACHE`` (else ``~/.cache/trails-bench``) in a folder named by
the size and a digest of the sources that shape the recorded graphs.

Each figure is the median of several in-process runs on a freshly opened store
(the store is opened once per size; the process's own start-up is not timed):

- ``trails sessions``: the first page (20, newest first) from the catalogue;
- ``cost-by-model`` / ``cost-by-principal``: the pack queries, from the catalogue: first
  with no daily totals (every entry read), then after ``trails catalogue rollup``
  (``rollup``, timed once: the days that are over summed, as a daily job leaves them);
- ``report``: ``render_report`` of one session (its verify included);
- ``export --session``: ``select_graphs`` + ``check_assurance`` + ``export`` of one session to TriG;
- replay: ``Session.replay`` of one persisted session.

Targets (issue 19): per-session work flat as the store grows (within 1.5x of
1k), ``trails sessions`` first page within 1.5x of 1k. Usage:
``python benchmarks/bench_catalogue.py [--sizes 1000,10000]``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _report import machine, write_section

ROOT = Path(__file__).resolve().parent.parent
SHAPE = (
    ROOT / "src" / "trails" / "prov",
    ROOT / "src" / "trails" / "evidence" / "seal.py",
    ROOT / "src" / "trails" / "catalogue" / "entries.py",
    ROOT / "src" / "trails" / "evidence" / "ledger.py",
    ROOT / "src" / "trails" / "agent",
    ROOT / "ontologies" / "trails.ttl",
)


REPLAYABLE_EVERY = 100
"""One session in this many is a real ``Session`` run, persisted for replay; the rest are events."""


def _digest() -> str:
    h = hashlib.sha256()
    for source in SHAPE:
        for f in sorted(source.rglob("*.py")) if source.is_dir() else [source]:
            h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:12]


def _cache(size: int) -> Path:
    root = Path(os.environ.get("TRAILS_BENCH_CACHE") or Path.home() / ".cache" / "trails-bench")
    return root / f"catalogue-{size}-{_digest()}"


def _turn(action: str, action_input: dict[str, object], **extra: object) -> str:
    payload = {"thought": f"next: {action}", "action": action, "action_input": action_input}
    payload.update(extra)
    return "```json\n" + json.dumps(payload) + "\n```"


def _capabilities() -> None:
    from trails.kernel import capability

    @capability(id="bench.search", description="Search orders.")
    def search(query: str) -> dict[str, object]:
        return {"query": query, "hits": [f"{query}/{i}" for i in range(3)]}

    @capability(id="bench.send", description="Send a message.", side_effects=True)
    def send(to: str, body: str) -> dict[str, object]:
        return {"sent": True, "to": to, "chars": len(body)}


def _record_run(recorder: Any, index: int) -> str:
    """A real ReAct ``Session`` over a scripted model, persisted for replay."""
    from trails.agent import Session
    from trails.llm import LLMClient
    from trails.llm.types import Response

    model = ("claude-sonnet", "claude-haiku", "gpt-4o")[index % 3]
    turns = [
        _turn("bench.search", {"query": f"order {index}"}),
        _turn("bench.send", {"to": f"user{index % 50}", "body": f"report {index}"}),
        _turn("finish", {}, final_answer=f"done {index}"),
    ]
    script = [
        Response(text=t, model=model, input_tokens=400 + i, output_tokens=60, usd=0.002)
        for i, t in enumerate(turns)
    ]
    session = Session.new(
        strategy="react", principal=f"did:example:user{index % 50}", recorder=recorder
    )
    session.run(f"handle request {index}", llm=LLMClient.mock(script, model=model), max_steps=4)
    session.persist()
    session.close()
    return str(session.iri)


def _record_events(recorder: Any, index: int) -> str:
    """A session as its events: a ReAct run, three completions, two capability calls."""
    from trails.prov import (
        CapabilityInvoked,
        LLMCompleted,
        PlanRunEnded,
        PlanRunStarted,
        SessionEnded,
        SessionStarted,
    )

    minter = recorder.minter
    session = str(minter.session())
    principal = f"did:example:user{index % 50}"
    model = ("claude-sonnet", "claude-haiku", "gpt-4o")[index % 3]
    t = datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=index)
    tick = timedelta(milliseconds=50)
    recorder.record(SessionStarted(session=session, principal=principal, started=t))
    run = str(minter.activity())
    recorder.record(
        PlanRunStarted(
            session=session,
            activity=run,
            parent=None,
            principal=principal,
            strategy="react",
            goal=f"handle request {index}",
            started=t + tick,
        )
    )
    for step in range(3):
        at = t + tick * (2 + 3 * step)
        recorder.record(
            LLMCompleted(
                session=session,
                activity=str(minter.activity()),
                parent=run,
                principal=principal,
                provider="anthropic" if index % 3 < 2 else "openai",
                model=model,
                started=at,
                ended=at + tick,
                messages=[{"role": "user", "content": f"request {index} step {step}"}],
                request_hash=f"h{index}-{step}",
                text=_turn("bench.search", {"query": f"order {index}-{step}"}),
                input_tokens=400 + 120 * step + index % 50,
                output_tokens=60 + step,
                usd=None if index % 7 == 3 and step == 2 else 0.002 + 0.001 * step,
                step=step,
            )
        )
        if step < 2:
            recorder.record(
                CapabilityInvoked(
                    session=session,
                    activity=str(minter.activity()),
                    parent=run,
                    principal=principal,
                    capability_id="bench.search",
                    description="Search orders.",
                    started=at + tick * 2,
                    ended=at + tick * 3,
                    status="ok",
                    inputs={"query": f"order {index}-{step}"},
                    output={"hits": [f"order {index}-{step}/{i}" for i in range(3)]},
                    step=step,
                )
            )
    end = t + tick * 12
    recorder.record(
        PlanRunEnded(
            session=session, activity=run, ended=end, stop_reason="goal_achieved", answer="done"
        )
    )
    recorder.record(SessionEnded(session=session, ended=end + tick, status="ok"))
    return session


def build(size: int) -> Path:
    """The cached store of ``size`` sessions (recorded now when missing)."""
    from trails.evidence.seal import install_sealer
    from trails.prov.recorder import Recorder
    from trails.store import open_store

    path = _cache(size)
    if (path / "complete").exists():
        return path
    shutil.rmtree(path, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    _capabilities()
    store = open_store(str(path / "store"))
    recorder = Recorder(store)
    install_sealer(recorder)
    started = time.perf_counter()
    sessions = []
    for i in range(size):
        record = _record_run if i % REPLAYABLE_EVERY == 4 else _record_events
        sessions.append(record(recorder, i))
        if i % 1000 == 999:
            print(f"  {i + 1} sessions, {time.perf_counter() - started:.0f} s", flush=True)
    store.close()
    (path / "sessions.json").write_text(json.dumps(sessions))
    (path / "complete").write_text("")
    return path


def _median(fn: Callable[[], object], rounds: int) -> float:
    fn()  # warm: the first read of a fresh store pays for its caches once
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(path: Path, rounds: int) -> dict[str, float]:
    """Median seconds of each command on the store at ``path``."""
    from trails.agent import Session
    from trails.audit.export import check_assurance, export, select_graphs
    from trails.audit.querypack import get_query
    from trails.audit.report import render_report
    from trails.catalogue.totals import rollup
    from trails.cli.sessions import paged
    from trails.store import open_store

    sessions = json.loads((path / "sessions.json").read_text())
    persisted = sessions[4]  # index 4 is a real run, persisted
    one = sessions[len(sessions) // 2]
    work = Path(tempfile.mkdtemp(prefix="trails-bench-catalogue-"))
    shutil.copytree(path / "store", work / "store")  # rollup writes: the cache stays as built
    store = open_store(str(work / "store"))
    try:
        page = get_query("sessions")
        page_text = paged(page.text_for({}), 20)
        cost = get_query("cost-by-model")
        by_principal = get_query("cost-by-principal")

        def sessions_page() -> None:
            assert len(store.query(page_text)) == 20  # type: ignore[arg-type]

        def export_one() -> None:
            graphs = select_graphs(store, sessions=[one])
            check_assurance(store, graphs, domain=None, forbidden=())
            export(store, io.BytesIO(), graphs, format="trig")

        before = {
            "cost-by-model, no daily totals": _median(lambda: cost.run(store), rounds),
            "cost-by-principal, no daily totals": _median(lambda: by_principal.run(store), rounds),
        }
        start = time.perf_counter()
        rollup(store)
        totalled = time.perf_counter() - start
        return {
            "trails sessions (first page)": _median(sessions_page, rounds),
            **before,
            "rollup (once: every day that is over)": totalled,
            "cost-by-model, daily totals": _median(lambda: cost.run(store), rounds),
            "cost-by-principal, daily totals": _median(lambda: by_principal.run(store), rounds),
            "report SESSION": _median(lambda: render_report(store, one), rounds),
            "export --session": _median(export_one, rounds),
            "Session.replay": _median(lambda: Session.replay(persisted, store=store), rounds),
        }
    finally:
        store.close()
        shutil.rmtree(work, ignore_errors=True)


NOTES = """\
The event sessions started a minute apart from 2025-01-01 (1k: one day, 10k: seven); the real
runs (one in 100) were recorded today. After `rollup`, a cost query reads one running total per
agent and the entries of the days not totalled: today's, which holds the real runs (10 at 1k,
100 at 10k), so those rows grow with today's sessions, by design, not with the store. The
issue's targets for them are absolute (<= 1 s at 100k sessions, as a command); the scale
benchmark (`bench_scale.py`) measures them as users run them. `trails sessions` reads one index
range over the catalogue's start times for its page (a top-k, O(sessions) with a small
constant: a few ms here); as a command it is measured flat in the scale benchmark.
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="store sizes, comma separated")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    figures: dict[int, dict[str, float]] = {}
    for size in sizes:
        print(f"== {size} sessions", flush=True)
        figures[size] = measure(build(size), args.rounds)
        for name, seconds in figures[size].items():
            print(f"  {name}: {seconds * 1000:.1f} ms", flush=True)
    base = figures[sizes[0]]
    head = " | ".join(f"{s:,} sessions" for s in sizes)
    lines = [
        f"| command | {head} | ratio {sizes[-1]:,} / {sizes[0]:,} | target |",
        "|---|" + "---:|" * len(sizes) + "---:|---|",
    ]
    for name in base:
        cells = " | ".join(f"{figures[s][name] * 1000:.1f} ms" for s in sizes)
        ratio = figures[sizes[-1]][name] / base[name]
        if name.startswith(("rollup", "cost-by-model, no", "cost-by-principal, no")):
            target = "context"
        elif name.startswith("cost-by"):
            target = "context: grows with today's sessions (see below)"
        else:
            target = "≤ 1.5x"
        lines.append(f"| {name} | {cells} | {ratio:.2f}x | {target} |")
    markdown = (
        "## Catalogue and per-session reads (`bench_catalogue.py`)\n\n"
        "Stores recorded through the recorder and sealed by the default sealer (sessions as "
        "their events: a ReAct run, three completions, two capability calls; one in "
        f"{REPLAYABLE_EVERY} a real `Session` run, persisted for replay), on disk; medians of in-process "
        f"runs on the opened store. {machine()}. Run: "
        f"`python benchmarks/bench_catalogue.py --sizes {args.sizes}`.\n\n"
        + "\n".join(lines)
        + "\n\n"
        + NOTES
    )
    write_section("catalogue", markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
