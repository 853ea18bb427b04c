"""Stores of many real sessions for the scale benchmark, built through the recorder and cached.

Every session is recorded the way a user's program records it: a ``Session``
running the ReAct planner over a scripted model (``LLMClient.mock`` answering
with token counts and a price, so completions carry cost), capability
invocations (one with side effects, so write-ahead), ``memory.learn`` and
``memory.recall`` through ``invoke``, each session ended and sealed by the
default sealer in the write that ends it. The mix is fixed by the session's
index (``plan_for``): most sessions finish, some fail a capability, some stop at
the step limit, one in ten is persisted for replay, and a few are left open as
a killed process leaves them: the store is then closed and reopened, and the
recovery every recorder runs on open ends them as interrupted and seals them.

The sessions are spread over time as a regulator's store holds months of them:
the session at position ``i`` of ``n`` is recorded at a simulated time,
uniformly over the ``SPREAD_DAYS`` days that end when the build starts
(``simulated_time``), by ``time_machine.travel(..., tick=True)`` around it (it
patches ``datetime.now`` and ``time.time`` in C, so every timestamp the session,
its seal and its catalogue entry carry is of that day). The recovery of the
sessions left open runs at the real time, after the build.

One process records, in order, on the embedded store (parallel writers would
need a SPARQL server: not the store measured). A built store is kept under
``cache_root()`` (``TRAILS_BENCH_CACHE``, else ``~/.cache/trails-bench``), in a
folder named by ``cache_key``: the size, trails' version and a digest of what
decides the shape of the recorded graphs (the ontology, the shapes, the
sources of ``prov/``, ``evidence/seal.py``, the planner...) and ``MIX_VERSION``,
the version of the session mix this file records. A change to any of them
builds a new store; the old one is left for ``--prune``. ``reuse_any_digest``
takes the newest complete store of the size and mix whatever the digest and
trails' version (code that records faster without changing what it records);
each manifest says which key and git commit built it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "trails"

#: what decides the shape of a recorded graph: a change here means a new cache entry
SHAPE_SOURCES: tuple[Path, ...] = (
    ROOT / "ontologies" / "trails.ttl",
    ROOT / "ontologies" / "shapes.ttl",
    SRC / "prov",
    SRC / "evidence" / "seal.py",
    SRC / "evidence" / "ledger.py",
    SRC / "catalogue" / "entries.py",
    SRC / "agent" / "planners" / "react.py",
    SRC / "agent" / "persistence.py",
    SRC / "agent" / "projection.py",
    SRC / "llm" / "client.py",
    SRC / "memory",
)

#: the version of the session mix below (``plan_for``, ``script_for``): bump it when they change
MIX_VERSION = 2  # 2: sessions spread over SPREAD_DAYS days

#: the sessions of a store start over this many days, ending when the build starts
SPREAD_DAYS = 200

MODELS = (
    ("claude-sonnet", 0.003, 0.015),
    ("claude-haiku", 0.0008, 0.004),
    ("gpt-4o", 0.0025, 0.01),
)
PRINCIPALS = 50
COMPLETE = "complete"  # marker file: the build finished
STARTED_BY = "started-by"  # the commit that began the build (a resumed one may finish with another)


def cache_root() -> Path:
    """Where built stores are kept (``TRAILS_BENCH_CACHE``, else ``~/.cache/trails-bench``)."""
    import os

    env = os.environ.get("TRAILS_BENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "trails-bench"


def shape_digest(sources: tuple[Path, ...] = SHAPE_SOURCES) -> str:
    """A digest of every file under ``sources`` (names and bytes, in a stable order)."""
    h = hashlib.sha256()
    for source in sources:
        files = sorted(source.rglob("*.py")) if source.is_dir() else [source]
        for f in files:
            if f.exists():
                h.update(str(f.relative_to(ROOT) if f.is_relative_to(ROOT) else f.name).encode())
                h.update(b"\0")
                h.update(f.read_bytes())
                h.update(b"\0")
    return h.hexdigest()[:12]


def git_commit(root: Path = ROOT) -> str:
    """The commit of the sources at ``root`` (``+dirty`` with local changes; ``unknown`` if none)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def simulated_time(position: int, sessions: int, end: datetime) -> datetime:
    """When the session at ``position`` of ``sessions`` starts: uniformly over the days before ``end``.

    Deterministic for a given ``end``, increasing with ``position`` (so the ledger
    follows the calendar), ``SPREAD_DAYS`` days before ``end`` for the first.
    """
    span = SPREAD_DAYS * 86_400
    return end - timedelta(seconds=span) + timedelta(seconds=position * span / max(sessions, 1))


def cache_key(sessions: int, *, version: str | None = None, digest: str | None = None) -> str:
    """The cache folder name of a store of ``sessions`` sessions for this trails."""
    if version is None:
        from trails import __version__ as version
    return f"sessions-{sessions}-v{version}-mix{MIX_VERSION}-{digest or shape_digest()}"


@dataclass(frozen=True)
class Plan:
    """What one generated session does (all decided by its index)."""

    index: int
    principal: str
    model: tuple[str, float, float]
    tools: tuple[str, ...]
    """Capability calls in order (``bench.search``, ``bench.send``, ``bench.flaky``, memory)."""
    outcome: str
    """``finish``, ``step_limit`` or ``interrupted`` (left open, recovered on reopen)."""
    persist: bool


def plan_for(index: int) -> Plan:
    """The session recorded at ``index`` (deterministic, so stores of each size agree)."""
    tools = ["bench.search", "bench.search", "bench.send"]
    if index % 3 == 0:
        tools.insert(1, "memory.learn")
    if index % 5 == 1:
        tools.append("memory.recall")
    if index % 20 == 7:
        tools.append("bench.flaky")  # fails: a failed invocation the agent sees and recovers from
    outcome = "finish"
    if index % 25 == 11:
        outcome = "step_limit"
    elif index % 50 == 23:
        outcome = "interrupted"
    return Plan(
        index=index,
        principal=f"did:example:user{index % PRINCIPALS}",
        model=MODELS[index % len(MODELS)],
        tools=tuple(tools),
        outcome=outcome,
        persist=index % 10 == 4 and outcome != "interrupted",
    )


def _turn(action: str, action_input: dict[str, object], **extra: object) -> str:
    payload = {"thought": f"next: {action}", "action": action, "action_input": action_input}
    payload.update(extra)
    return "```json\n" + json.dumps(payload) + "\n```"


def _args(tool: str, index: int, step: int) -> dict[str, object]:
    if tool == "memory.learn":
        return {
            "content": f"customer {index % 997} prefers invoices in format {index % 7}",
            "scope": "shared",
            "topic": "billing",
        }
    if tool == "memory.recall":
        return {"context": f"invoice format for customer {index % 997}", "scope": "shared", "k": 3}
    if tool == "bench.send":
        return {"to": f"user{index % PRINCIPALS}@example.org", "body": f"report {index}"}
    return {"query": f"order {index}-{step}", "limit": 5}


def script_for(plan: Plan) -> list[object]:
    """The scripted model's answers: one completion per tool call, then the final answer."""
    from trails.llm.types import Response

    name, p_in, p_out = plan.model
    answers: list[object] = []
    for step, tool in enumerate(plan.tools):
        text = _turn(tool, _args(tool, plan.index, step))
        tin, tout = 400 + 120 * step + plan.index % 50, 60 + step
        usd = round(tin / 1000 * p_in + tout / 1000 * p_out, 6)
        answers.append(
            Response(text=text, model=name, input_tokens=tin, output_tokens=tout, usd=usd)
        )
    final = _turn("finish", {}, final_answer=f"done with request {plan.index}")
    answers.append(Response(text=final, model=name, input_tokens=900, output_tokens=40, usd=0.004))
    return answers


def register_capabilities() -> None:
    """The capabilities generated sessions call (idempotent)."""
    from trails.kernel import capability

    @capability(id="bench.search", description="Search orders.")
    def search(query: str, limit: int = 5) -> dict[str, object]:
        return {"query": query, "hits": [f"{query}/{i}" for i in range(min(limit, 3))]}

    @capability(id="bench.send", description="Send a message.", side_effects=True)
    def send(to: str, body: str) -> dict[str, object]:
        return {"sent": True, "to": to, "chars": len(body)}

    @capability(id="bench.flaky", description="A service that is down.")
    def flaky() -> dict[str, object]:
        raise ConnectionError("upstream unavailable")


def record_session(recorder: object, plan: Plan) -> tuple[str, object | None]:
    """Record one session of ``plan`` through ``recorder``.

    Returns:
        The session IRI, and the ``Session`` when it was left open
        (``interrupted``: the caller keeps it alive until the store is closed, so
        it stays open as a killed process leaves it).
    """
    from trails.agent import Session
    from trails.llm import LLMClient

    llm = LLMClient.mock(script_for(plan), model=plan.model[0])
    session = Session.new(strategy="react", principal=plan.principal, recorder=recorder)
    steps = len(plan.tools) + 1
    if plan.outcome == "step_limit":
        steps = max(1, len(plan.tools) - 1)
    result = session.run(f"handle request {plan.index}", llm=llm, max_steps=steps)
    iri = str(session.iri)
    if plan.outcome == "interrupted":
        return iri, session  # left open: the caller drops it only once the store is closed
    assert result.stopped in ("goal_achieved", "max_steps"), (plan, result.stopped, result.error)
    if plan.persist:
        session.persist()
    session.close()
    return iri, None


def build(
    path: Path,
    sessions: int,
    *,
    progress: Callable[[int, float], None] | None = None,
    indices: list[int] | None = None,
    resume: bool = False,
) -> dict[str, object]:
    """Record ``sessions`` sessions into a new on-disk store at ``path``; returns its manifest.

    ``indices`` picks the plans to record instead (tests: a few of each kind).
    With ``resume``, ``path`` holds the store of a build that was stopped: the
    sessions it started are counted in the catalogue (one entry each, written
    when a session starts) and recording goes on from the next one, at the
    times the first build would have used (its end recovered from its first
    session's start). Opening it runs the recovery every recorder runs, which
    ends what the stopped process left open as interrupted: the sessions it
    kept open on purpose, and the one it was recording when it stopped.
    """
    import time_machine

    from trails.config import load_settings
    from trails.kernel.cost import default_tracker
    from trails.prov import Recorder
    from trails.store import open_store

    register_capabilities()
    settings = load_settings()
    tracker = default_tracker()
    end = datetime.now(UTC).replace(microsecond=0)
    start = time.perf_counter()
    store = open_store(path, settings=settings)
    recorder = Recorder.from_settings(settings, store=store)
    left_open: list[object] = []
    iris: list[str] = []
    persisted: list[str] = []
    chosen = indices if indices is not None else list(range(sessions))
    every = 1000 if len(chosen) >= 10_000 else 250
    first = 0
    if resume:
        first, end = _resume_point(store)
    for n, i in enumerate(chosen):
        if n < first:
            continue
        plan = plan_for(i)
        # the process's cost tracker keeps every spend it booked, and each run sums them all
        # on entry: emptied between sessions, or the build slows with each one (quadratic)
        tracker.reset()
        with time_machine.travel(simulated_time(n, len(chosen), end), tick=True):
            iri, open_session = record_session(recorder, plan)
        iris.append(iri)
        if open_session is not None:
            left_open.append(open_session)
        if plan.persist:
            persisted.append(iri)
        if progress is not None and (n + 1) % every == 0:
            progress(n + 1, time.perf_counter() - start)
    recorded = time.perf_counter() - start
    store.close()
    left_open.clear()
    # the next program that records here recovers what the "killed" process left open
    store = open_store(path, settings=settings)
    Recorder.from_settings(settings, store=store)
    store.close()
    if first:  # a resumed build: the sessions in start order, as it recorded them
        store = open_store(path, settings=settings)
        iris = _in_start_order(store)
        store.close()
        persisted = [
            iris[i]
            for i in chosen
            if plan_for(i).persist and i != first - 1 and i < len(iris)  # not the one cut short
        ]
    manifest: dict[str, object] = {
        "sessions": len(chosen),
        "interrupted": sum(plan_for(i).outcome == "interrupted" for i in chosen),
        "record_s": round(recorded, 1),
        "build_s": round(time.perf_counter() - start, 1),
        "middle": iris[len(iris) // 2],
        "persisted": persisted[len(persisted) // 2] if persisted else None,
        "spread": [
            simulated_time(0, len(chosen), end).isoformat(),
            simulated_time(len(chosen) - 1, len(chosen), end).isoformat(),
        ],
        "commit": git_commit(),
    }
    if first:
        manifest["resumed_at"] = first
    return manifest


_STARTED = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session ?started WHERE {
  GRAPH ?catalogue { ?entry trails:summaryOf ?session ; trails:sessionStarted ?started }
}
"""


def _in_start_order(store: object) -> list[str]:
    """Every catalogued session, oldest start first (the order a build recorded them)."""
    from trails.store import Solutions, to_python

    rows = store.query(_STARTED)  # type: ignore[attr-defined]
    assert isinstance(rows, Solutions)
    return [str(r["session"]) for r in sorted(rows, key=lambda r: to_python(r["started"]))]


def _resume_point(store: object) -> tuple[int, datetime]:
    """Where a stopped build goes on: how many sessions it started, and the end of its
    spread (its first session started ``SPREAD_DAYS`` days before it)."""
    from trails.store import Solutions, to_python

    rows = store.query(_STARTED)  # type: ignore[attr-defined]
    assert isinstance(rows, Solutions)
    starts = [to_python(r["started"]) for r in rows]
    if not starts:
        return 0, datetime.now(UTC).replace(microsecond=0)
    first = min(starts)
    end = (first + timedelta(days=SPREAD_DAYS)).replace(microsecond=0)
    return len(starts), end


def _builds(sessions: int, root: Path | None) -> list[Path]:
    """The cache folders of ``sessions`` sessions of this mix, any version and digest."""
    base = root or cache_root()
    if not base.is_dir():
        return []
    return list(base.glob(f"sessions-{sessions}-v*-mix{MIX_VERSION}-*"))


def complete_stores(sessions: int, root: Path | None = None) -> list[Path]:
    """Complete cached stores of ``sessions`` sessions of this mix, any version and digest, newest first."""
    found = [f for f in _builds(sessions, root) if (f / COMPLETE).is_file()]
    return sorted(found, key=lambda f: (f / COMPLETE).stat().st_mtime, reverse=True)


def stopped_builds(sessions: int, root: Path | None = None) -> list[Path]:
    """Builds of ``sessions`` sessions of this mix that stopped before the end, newest first."""
    found = [
        f for f in _builds(sessions, root) if not (f / COMPLETE).exists() and (f / "store").is_dir()
    ]
    return sorted(found, key=lambda f: (f / "store").stat().st_mtime, reverse=True)


def _loaded(folder: Path) -> tuple[Path, dict[str, object]]:
    manifest: dict[str, object] = json.loads((folder / COMPLETE).read_text())
    manifest["key"] = folder.name
    manifest.setdefault("commit", "unknown")
    return folder / "store", manifest


def cached_store(
    sessions: int,
    *,
    root: Path | None = None,
    log: Callable[[str], None] | None = None,
    reuse_any_digest: bool = False,
) -> tuple[Path, dict[str, object]]:
    """The store of ``sessions`` sessions, built on first use; returns its path and manifest.

    With ``reuse_any_digest``, a complete store of this size and mix built by
    other sources (another digest or version) is used when this one's is missing:
    the newest. The manifest's ``key`` and ``commit`` say which built it.
    """
    say = log or (lambda text: print(text, file=sys.stderr, flush=True))
    folder = (root or cache_root()) / cache_key(sessions)
    store_path = folder / "store"
    manifest_path = folder / COMPLETE
    if manifest_path.exists():
        return _loaded(folder)
    if reuse_any_digest:
        stores = complete_stores(sessions, root)
        if stores:
            path, manifest = _loaded(stores[0])
            say(
                f"reusing {stores[0].name} (built from commit {manifest['commit']}; "
                f"these sources would key {folder.name})"
            )
            return path, manifest
    resume = False
    if reuse_any_digest and not folder.exists():  # a stopped build of other sources goes on
        stopped = stopped_builds(sessions, root)
        if stopped:
            folder, store_path, manifest_path = (
                stopped[0],
                stopped[0] / "store",
                stopped[0] / COMPLETE,
            )
            say(f"resuming the stopped build {folder.name} with these sources")
            resume = True
    if folder.exists() and not resume:
        resume = (folder / "store").is_dir()
        if resume:
            say(f"resuming the stopped build {folder.name}")
    if not resume:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / STARTED_BY).write_text(git_commit())
        say(f"building {sessions:,} sessions into {folder} (cached for later runs)")
    last = [0, 0.0]

    def progress(n: int, seconds: float) -> None:
        recent = (n - last[0]) / max(seconds - last[1], 1e-9)
        last[:] = [n, seconds]
        say(f"  {n:,} sessions in {seconds:.0f} s ({n / seconds:.1f}/s; last {recent:.1f}/s)")

    manifest = build(store_path, sessions, progress=progress, resume=resume)
    if (folder / STARTED_BY).is_file():
        manifest["started_by"] = (folder / STARTED_BY).read_text().strip()
    manifest["key"] = folder.name
    manifest_path.write_text(json.dumps(manifest, indent=1))
    return _loaded(folder)


def prune(root: Path | None = None, keep: tuple[str, ...] = ()) -> list[Path]:
    """Remove cached stores whose key is not in ``keep``; returns what was removed."""
    base = root or cache_root()
    removed = []
    if base.is_dir():
        for folder in sorted(base.iterdir()):
            if folder.is_dir() and folder.name.startswith("sessions-") and folder.name not in keep:
                shutil.rmtree(folder)
                removed.append(folder)
    return removed
