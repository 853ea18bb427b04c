"""Stores of many sessions made from a recorded sample: copies with new IRIs and real seals.

Recording 100,000 sessions through the recorder takes hours (``_scale_store``:
about 5 sessions a second on a shared machine). A store of that size for the
scale figures is made here from a store recorded that way (the *sample*, a
cached ``_scale_store`` store): the sample is copied (table files hard-linked,
the cached original is never written), and each further session is one of the
sample's sessions again, its graph and its content graph as recorded, with

- every session-scoped IRI minted anew: each UUID in an IRI of the session's graphs
  (the session, its runs, completions, invocations, their inputs and outputs, the
  content graph's name) and in the labels and ids that repeat them gets a fresh one,
  the same in every place it occurs; what sessions share (principals, models,
  capabilities, the memory entries a recall read) keeps its IRI;
- its times moved: every ``xsd:dateTime`` shifted by one offset, so the copy starts at
  its place in the spread (the copies are spread evenly over the days the sample spans,
  between its sessions) and keeps its own durations; or, with a density
  (``--per-second R``), the copies start ``R`` to a second after the sample's newest
  session, ``1/R`` s apart, or (``--ties``) ``R`` at each whole second, as a fleet of
  agents starting close together leaves them;
- a real seal: the canonical hash of the new graph computed by trails' own code
  (``trails.evidence.canonical``, version 2), in a seal chain of its own (one
  writer, ``Sealed`` events turned into quads by a ``Recorder``), its first seal
  anchored on the sample's newest seals, the ledger's pointer moved to its head;
- a real catalogue entry: ``start_quads`` and ``summarise`` of ``trails.catalogue``
  on the new graph, as the sealer writes them.

The quads are written with pyoxigraph's bulk loader in large batches. Then the daily
cost totals of the sample's days are removed (new entries joined those days) and
``trails.catalogue.totals.rollup`` totals every day that is over, and a checkpoint is
recorded (``trails.evidence.checkpoint.record_checkpoint``: the newest seal of each
chain, with the transparency log extended over every seal): the checkpoint a full
verification would write, so ``trails verify --quick`` starts from it. The seals are
made by the code that makes them when recording, and ``trails verify`` (full) on a
multiplied store says OK (the tests run it on small ones).

What is not multiplied: the memory graphs and the memory index (the sample's, kept
as they are: a copy's ``memory.learn`` names a memory entry only its sample session
wrote), and the access log (none in the sample).

Built stores are cached next to ``_scale_store``'s (``cache_root()``), in a folder
``multiplied-<N>-from-<sample key>`` with the manifest in ``complete`` (how it was
built: the sample, the seed, the times, the commit). Run:
``python benchmarks/_multiply_store.py --sessions 100000 [--sample 10000]
[--per-second 10 [--ties]]``. A build
stopped part way (killed between two batches) is completed with ``--finish``: the
copies it loaded become a store of that many sessions (spread over the oldest part of
the planned days only; its manifest says so).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _scale_store

__all__ = ["Density", "build", "cached_multiplied", "folder_name", "main", "multiplied_stores"]

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
PREFIX = "multiplied-"
#: quads written per call of the bulk loader
BATCH_QUADS = 2_000_000
SESSION_PREFIX = "urn:trails:session:"
XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"
#: literals that repeat a session-scoped id (the session's label, a persisted session's id)
ID_PREDICATES = (
    "http://www.w3.org/2000/01/rdf-schema#label",
    "https://w3id.org/trails/ns#sessionId",
)

_SAMPLE = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session ?started ?principal ?pid $catalogue WHERE {
  GRAPH $catalogue {
    ?entry trails:summaryOf ?session ; trails:sessionStarted ?started ;
           prov:wasAttributedTo ?principal .
    OPTIONAL { ?principal trails:principalId ?pid }
  }
}
"""

_MEMORY_ENTRIES = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT DISTINCT ?m WHERE { GRAPH ?g { ?m a trails:Memory } }
"""

_DAYS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT DISTINCT ?day $catalogue WHERE { GRAPH $catalogue { ?day a trails:CatalogueDay } }
"""


def folder_name(sessions: int, sample_key: str, density: Density | None = None) -> str:
    """The cache folder of a store of ``sessions`` multiplied from the sample ``sample_key``
    (at ``density``, when the copies start close together)."""
    return f"{PREFIX}{sessions}{'' if density is None else density.suffix}-from-{sample_key}"


@dataclass(frozen=True)
class Density:
    """How close together the copies start: ``per_second`` to a second, after the sample's
    newest session; ``ties``: each second's starts at the whole second (equal starts)."""

    per_second: float
    ties: bool = False

    @property
    def suffix(self) -> str:
        return f"-{self.per_second:g}ps" + ("-ties" if self.ties else "")

    def start(self, after: datetime, k: int) -> datetime:
        """The start of the ``k``-th copy (from 0)."""
        if self.ties:
            whole = after.replace(microsecond=0) + timedelta(seconds=1 + int(k // self.per_second))
            return whole
        return after + timedelta(seconds=(k + 1) / self.per_second)


def multiplied_stores(sessions: int, root: Path | None = None) -> list[Path]:
    """Complete multiplied stores of ``sessions`` sessions (any sample), newest first."""
    base = root or _scale_store.cache_root()
    if not base.is_dir():
        return []
    found = [
        f for f in base.glob(f"{PREFIX}{sessions}-from-*") if (f / _scale_store.COMPLETE).is_file()
    ]
    return sorted(found, key=lambda f: (f / _scale_store.COMPLETE).stat().st_mtime, reverse=True)


class _Copier:
    """Re-mints one sample session into copies (terms converted once, then substituted)."""

    def __init__(self, keep: set[str]) -> None:
        self.keep = keep  # UUIDs that sessions share (memory entries): never re-minted

    def copy(
        self,
        rows: list[tuple[Any, Any, Any, Any]],
        delta: timedelta,
        rng: random.Random,
    ) -> list[tuple[Any, Any, Any, Any]]:
        """The sample's rows (trails terms) with fresh session-scoped UUIDs and moved times."""
        from trails.store.terms import IRI, Literal, literal

        minted: dict[str, str] = {}

        def fresh(match: re.Match[str]) -> str:
            old = match.group(0)
            if old in self.keep:
                return old
            new = minted.get(old)
            if new is None:
                new = minted[old] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            return new

        done: dict[Any, Any] = {}

        def term(t: Any, predicate: Any = None) -> Any:
            out = done.get(t)
            if out is not None:
                return out
            if isinstance(t, IRI):
                out = IRI.trusted(UUID.sub(fresh, t)) if UUID.search(t) else t
            elif isinstance(t, Literal):
                if t.datatype == XSD_DATETIME:
                    out = literal(datetime.fromisoformat(t.value) + delta)
                elif str(predicate) in ID_PREDICATES and UUID.search(t.value):
                    out = Literal(UUID.sub(fresh, t.value), t.datatype, t.language)
                else:
                    out = t
            else:
                out = t
            done[t] = out
            return out

        return [(term(s), term(p), term(o, p), term(g)) for s, p, o, g in rows]


def _sample_rows(raw: Any) -> dict[str, list[tuple[Any, Any, Any, Any]]]:
    """The quads of every session graph and content graph of the sample, as trails terms,
    by graph: read in one pass before anything is written (reads of a store that the bulk
    loader is writing into go through every new table file), each term converted once."""
    from trails.store.oxigraph import _from_ox

    terms: dict[Any, Any] = {}

    def term(t: Any) -> Any:
        out = terms.get(t)
        if out is None:
            out = terms[t] = _from_ox(t)
        return out

    by_graph: dict[str, list[tuple[Any, Any, Any, Any]]] = {}
    for q in raw.quads_for_pattern(None, None, None, None):
        name = q.graph_name
        if not str(getattr(name, "value", "")).startswith(SESSION_PREFIX):
            continue
        by_graph.setdefault(name.value, []).append(
            (term(q.subject), term(q.predicate), term(q.object), term(name))
        )
    return by_graph


def _plan(sample: int, extra: int) -> Iterator[tuple[int, int]]:
    """``(k, j)``: the ``k``-th new session is a copy of the sample's ``j``-th (by start):
    blocks of copies, so each copy starts near its sample session."""
    for k in range(extra):
        yield k, k * sample // extra


def build(
    sample_store: Path,
    target: Path,
    sessions: int,
    *,
    seed: int = 36,
    progress: Callable[[str], None] | None = None,
    checkpoint: bool = True,
    density: Density | None = None,
) -> dict[str, object]:
    """Make a store of ``sessions`` sessions at ``target`` from the recorded store at
    ``sample_store`` (copied first; never written); returns the manifest. ``density``:
    the copies start that close together after the sample (else spread over its days).

    Raises:
        ValueError: ``sessions`` is smaller than the sample.
    """
    from bench_scale import snapshot

    from trails.catalogue.entries import catalogue_iri, start_quads, summarise
    from trails.evidence.canonical import canonical_lines, digest_lines
    from trails.evidence.ledger import (
        GENESIS,
        Sealed,
        SealRecord,
        chain_iri,
        ledger_iri,
        read_seals,
        seal_iri,
    )
    from trails.prov.recorder import Recorder
    from trails.prov.vocab import PROV, T
    from trails.store.base import Solutions
    from trails.store.oxigraph import OxigraphStore, _convert_quads
    from trails.store.terms import IRI, Literal, Quad, literal

    say = progress or (lambda text: print(text, file=sys.stderr, flush=True))
    start = time.perf_counter()
    snapshot(sample_store, target)
    store = OxigraphStore(target)
    raw = store.raw
    recorder = Recorder(store)
    minter = recorder.minter
    ledger, catalogue = ledger_iri(minter), catalogue_iri(minter)

    rows = store.query(_SAMPLE, {"catalogue": catalogue})
    assert isinstance(rows, Solutions)
    samples = sorted(
        (
            (
                datetime.fromisoformat(r["started"].value),
                str(r["session"]),
                r["principal"],
                r.get("pid"),
            )
            for r in rows
        ),
        key=lambda t: t[0],
    )
    sample_n = len(samples)
    if sessions < sample_n:
        raise ValueError(f"--sessions {sessions} is fewer than the sample's {sample_n}")
    memory = store.query(_MEMORY_ENTRIES)
    assert isinstance(memory, Solutions)
    keep = {m for r in memory for m in UUID.findall(str(r["m"]))}
    seals_before = read_seals(store, ledger)
    pointers = store.query(
        "SELECT ?s ?h $ledger WHERE { GRAPH $ledger { $ledger <https://w3id.org/trails/ns#latestSeal> ?s . "
        "OPTIONAL { ?s <https://w3id.org/trails/ns#sealHash> ?h } } }",
        {"ledger": ledger},
    )
    assert isinstance(pointers, Solutions)
    hints = {
        IRI.trusted(str(r["s"])): (r["h"].value if r.get("h") is not None else "") for r in pointers
    }

    extra = sessions - sample_n
    first_start, last_start = samples[0][0], samples[-1][0]
    span = (last_start - first_start).total_seconds()
    rng = random.Random(seed)
    writer = f"multiplied{seed}x{uuid.UUID(int=rng.getrandbits(128)).hex[:16]}"
    chain = chain_iri(ledger, writer)
    plan = {"sessions": sessions, "sample_sessions": sample_n, "copies": sessions - sample_n}
    plan_path(target).write_text(json.dumps({**plan, "seed": seed, "writer": writer}))
    copier = _Copier(keep)
    previous: IRI | None = None
    previous_hash = GENESIS
    previous_at: datetime | None = None
    batch: list[Quad] = []
    quads_written = 0
    middle = None
    loaded_j, sample_rows = -1, []
    sample_graphs = _sample_rows(raw)
    say(f"  the sample read in {time.perf_counter() - start:.0f} s")
    every = max(1, extra // 20)
    for k, j in _plan(sample_n, extra):
        if j != loaded_j:
            session = samples[j][1]
            sample_rows = sample_graphs.pop(session, []) + sample_graphs.pop(
                session + ":content", []
            )
            loaded_j = j
        old_start, _, principal, pid = samples[j]
        if density is None:
            new_start = first_start + timedelta(seconds=(k + 0.5) * span / max(extra, 1))
        else:
            new_start = density.start(last_start, k)
        rows_k = copier.copy(sample_rows, new_start - old_start, rng)
        graph = next(g for s, p, o, g in rows_k if p == PROV.startedAtTime and s == g)
        in_graph = [(s, p, o) for s, p, o, g in rows_k if g == graph]
        graph_hash, count = digest_lines(set(canonical_lines(in_graph, graph, version=2)))
        started = next(o for s, p, o in in_graph if s == graph and p == PROV.startedAtTime)
        ended = next((o for s, p, o in in_graph if s == graph and p == PROV.endedAtTime), started)
        at = datetime.fromisoformat(ended.value) if isinstance(ended, Literal) else new_start
        if previous_at is not None and at < previous_at:
            at = previous_at
        sequence = k + 1
        seal = seal_iri(ledger, writer, sequence)
        anchors = (
            tuple(sorted((str(h), hh) for h, hh in hints.items() if hh)) if sequence == 1 else ()
        )
        record = SealRecord(
            iri=seal,
            sequence=sequence,
            graph=graph,
            graph_hash=graph_hash,
            quad_count=count,
            at=literal(at).value,
            previous_hash=previous_hash,
            seal_hash="",
            previous=previous,
            chain=chain,
            anchor_hashes=[hh for _, hh in anchors],
        )
        seal_hash = record.recomputed_hash()
        event = Sealed(
            session=graph,
            ledger=ledger,
            seal=seal,
            chain=chain,
            writer=writer,
            sequence=sequence,
            graph_hash=graph_hash,
            quad_count=count,
            at=at,
            previous=previous,
            previous_hash=previous_hash,
            anchors=anchors,
            seal_hash=seal_hash,
        )
        batch.extend(Quad(s, p, o, g) for s, p, o, g in rows_k)
        batch.extend(recorder.quads(event))
        label = f"session {minter.session_id(graph)}"
        summary = summarise(graph, in_graph, catalogue, is_sealed=True)
        ended = any(q.predicate == T.sessionEnded for q in summary)  # its end removed the type
        entry = set(
            start_quads(
                graph,
                principal,
                started,
                label=label,
                catalogue=catalogue,
                principal_id=pid,
                ended=ended,
            )
        )
        entry.update(summary)
        batch.extend(entry)
        previous, previous_hash, previous_at = seal, seal_hash, at
        if k == extra // 2:
            middle = str(graph)
        if len(batch) >= BATCH_QUADS:
            raw.bulk_extend(_convert_quads(batch))
            quads_written += len(batch)
            batch = []
        if (k + 1) % every == 0:
            seconds = time.perf_counter() - start
            say(f"  {k + 1:,} of {extra:,} copies in {seconds:.0f} s ({(k + 1) / seconds:.0f}/s)")
    if batch:
        raw.bulk_extend(_convert_quads(batch))
        quads_written += len(batch)
    loaded = time.perf_counter() - start
    say(f"  {extra:,} copies, {quads_written:,} quads loaded in {loaded:.0f} s")
    manifest = _complete(
        store, seals_before, hints, chain, previous, previous_hash, extra, checkpoint, say
    )
    plan_path(target).unlink(missing_ok=True)  # complete: nothing left to finish
    built = time.perf_counter() - start
    say(f"  built in {built:.0f} s")
    return {
        "sessions": sessions,
        "sample_sessions": sample_n,
        "copies": extra,
        "seed": seed,
        "writer": writer,
        "quads_loaded": quads_written,
        "load_s": round(loaded, 1),
        **manifest,
        "build_s": round(built, 1),
        "middle": middle or samples[len(samples) // 2][1],
        "spread": [first_start.isoformat(), last_start.isoformat()],
        "density": None if density is None else [density.per_second, density.ties],
        "checkpoint": checkpoint,
        "commit": _scale_store.git_commit(),
    }


def _complete(
    store: Any,
    seals_before: list[Any],
    hints: dict[Any, str],
    chain: Any,
    head: Any,
    head_hash: str,
    copies: int,
    checkpoint: bool,
    say: Callable[[str], None],
) -> dict[str, object]:
    """After the copies are loaded: the ledger's pointer moved to the new chain's head (its
    first seal anchors the old ones), the daily totals recomputed, the checkpoint recorded."""
    from trails.catalogue.days import day_totals
    from trails.catalogue.entries import catalogue_iri
    from trails.catalogue.totals import rollup
    from trails.evidence.checkpoint import FULL, read_checkpoint, record_checkpoint
    from trails.evidence.ledger import ledger_iri
    from trails.prov.recorder import Recorder
    from trails.prov.vocab import T
    from trails.store.base import Solutions
    from trails.store.terms import IRI, Quad

    start = time.perf_counter()
    recorder = Recorder(store)
    minter = recorder.minter
    ledger, catalogue = ledger_iri(minter), catalogue_iri(minter)
    if head is not None:
        store.write(
            [Quad(ledger, T.latestSeal, head, ledger)],
            remove=[Quad(ledger, T.latestSeal, h, ledger) for h in hints],
        )
    # the sample's days got new entries: their totals go, and every day over is totalled again
    days = store.query(_DAYS, {"catalogue": catalogue})
    assert isinstance(days, Solutions)
    stale = day_totals(store, catalogue, [IRI.trusted(str(r["day"])) for r in days])
    if stale:
        store.write([], remove=stale)
    totals = rollup(store, minter)
    rolled = time.perf_counter() - start
    say(f"  {len(totals.totalled)} days totalled in {rolled:.0f} s")
    if checkpoint:
        tips: dict[str, tuple[IRI, str]] = {}
        newest: dict[str, int] = {}
        for s in seals_before:
            key = str(s.chain or s.iri)
            if s.sequence > newest.get(key, -1):
                newest[key], tips[key] = s.sequence, (s.iri, s.seal_hash)
        if head is not None:
            tips[str(chain)] = (head, head_hash)
        record_checkpoint(
            recorder,
            mode=FULL,
            seals=len(seals_before) + copies,
            graphs=len({s.graph for s in seals_before}) + copies,
            verified=sorted(tips.values()),
            previous=read_checkpoint(store, ledger),
        )
    store.close()
    return {"rollup_s": round(rolled, 1), "finish_s": round(time.perf_counter() - start, 1)}


def plan_path(target: Path) -> Path:
    """Where a build notes what it set out to make (read by ``finish``)."""
    return target.with_name(target.name + ".plan.json")


def finish(target: Path, *, progress: Callable[[str], None] | None = None) -> dict[str, object]:
    """Complete a build that was stopped (Ctrl-C) while it loaded copies: the copies loaded
    so far (each batch holds whole copies, their seals and entries) become the store, and
    the steps after the loading run (pointer, totals, checkpoint). Its manifest says so.

    Raises:
        ValueError: the folder holds no stopped build, or its chain has a gap.
    """
    from trails.evidence.ledger import chain_iri, ledger_iri, read_seals
    from trails.prov.iri import Minter
    from trails.store.base import Solutions
    from trails.store.oxigraph import OxigraphStore

    say = progress or (lambda text: print(text, file=sys.stderr, flush=True))
    plan = json.loads(plan_path(target).read_text())
    store = OxigraphStore(target)
    ledger = ledger_iri(Minter())
    chain = chain_iri(ledger, plan["writer"])
    seals = read_seals(store, ledger)
    mine = sorted((s for s in seals if s.chain == chain), key=lambda s: s.sequence)
    before = [s for s in seals if s.chain != chain]
    if not mine or [s.sequence for s in mine] != list(range(1, len(mine) + 1)):
        store.close()
        raise ValueError(f"{target}: no copies, or a gap in the chain {chain}")
    pointers = store.query(
        "SELECT ?s ?h $ledger WHERE { GRAPH $ledger { $ledger "
        "<https://w3id.org/trails/ns#latestSeal> ?s . "
        "OPTIONAL { ?s <https://w3id.org/trails/ns#sealHash> ?h } } }",
        {"ledger": ledger},
    )
    assert isinstance(pointers, Solutions)
    hints = {r["s"]: "" for r in pointers}
    head = mine[-1]
    say(f"  finishing with {len(mine):,} copies loaded (of {plan['copies']:,} planned)")
    done = _complete(store, before, hints, chain, head.iri, head.seal_hash, len(mine), True, say)
    sessions = int(plan["sample_sessions"]) + len(mine)
    return {
        **plan,
        **done,
        "sessions": sessions,
        "copies": len(mine),
        "planned_sessions": plan["sessions"],
        "stopped": "the build was stopped after these copies and finished by --finish "
        "(the copies spread over the oldest part of the planned days only)",
        "middle": str(mine[len(mine) // 2].graph),
        "commit": _scale_store.git_commit(),
    }


def cached_multiplied(
    sessions: int,
    *,
    sample: int = 1000,
    root: Path | None = None,
    log: Callable[[str], None] | None = None,
    density: Density | None = None,
) -> tuple[Path, dict[str, object]]:
    """The multiplied store of ``sessions`` sessions (from the newest complete sample store
    of ``sample`` sessions), built on first use; returns its store path and manifest."""
    say = log or (lambda text: print(text, file=sys.stderr, flush=True))
    samples = _scale_store.complete_stores(sample, root)
    if not samples:
        raise SystemExit(f"no complete cached store of {sample:,} sessions to multiply")
    sample_folder = samples[0]
    folder = (root or _scale_store.cache_root()) / folder_name(
        sessions, sample_folder.name, density
    )
    if not (folder / _scale_store.COMPLETE).is_file():
        if folder.exists():
            say(f"removing the stopped build {folder.name}")
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        say(f"multiplying {sample_folder.name} to {sessions:,} sessions into {folder}")
        manifest = build(
            sample_folder / "store", folder / "store", sessions, progress=say, density=density
        )
        sample_manifest = json.loads((sample_folder / _scale_store.COMPLETE).read_text())
        manifest["sample"] = sample_folder.name
        manifest["persisted"] = sample_manifest.get("persisted")
        manifest["key"] = folder.name
        (folder / _scale_store.COMPLETE).write_text(json.dumps(manifest, indent=1))
    manifest = json.loads((folder / _scale_store.COMPLETE).read_text())
    manifest["key"] = folder.name
    return folder / "store", manifest


def finish_cached(sessions: int, sample: int, out: Path | None) -> int:
    """``--finish``: complete a stopped build, in the cache (its folder then holds the
    store of as many sessions as it loaded, under that size's name) or at ``out``."""
    if out is not None:
        print(json.dumps(finish(out), indent=1))
        return 0
    samples = _scale_store.complete_stores(sample)
    if not samples:
        raise SystemExit(f"no complete cached store of {sample:,} sessions")
    root = _scale_store.cache_root()
    stopped = root / folder_name(sessions, samples[0].name)
    manifest = finish(stopped / "store")
    manifest["sample"] = samples[0].name
    recorded = json.loads((samples[0] / _scale_store.COMPLETE).read_text())
    manifest["persisted"] = recorded.get("persisted")
    folder = root / folder_name(int(str(manifest["sessions"])), samples[0].name)
    stopped.rename(folder)
    manifest["key"] = folder.name
    (folder / _scale_store.COMPLETE).write_text(json.dumps(manifest, indent=1))
    print(f"{manifest['sessions']:,} sessions at {folder / 'store'}: {json.dumps(manifest)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, required=True, help="sessions in the new store")
    parser.add_argument(
        "--sample", type=int, default=1000, help="size of the cached recorded store to multiply"
    )
    parser.add_argument(
        "--from-store", type=Path, default=None, help="multiply this store instead (a path)"
    )
    parser.add_argument("--out", type=Path, default=None, help="write here instead of the cache")
    parser.add_argument("--no-checkpoint", action="store_true", help="record no checkpoint")
    parser.add_argument(
        "--per-second",
        type=float,
        default=None,
        metavar="R",
        help="the copies start R to a second after the sample's newest session (a density)",
    )
    parser.add_argument(
        "--ties", action="store_true", help="with --per-second: starts at whole seconds (ties)"
    )
    parser.add_argument(
        "--finish",
        action="store_true",
        help="complete the stopped build of --sessions (or --out) with the copies it loaded",
    )
    args = parser.parse_args(argv)
    if args.ties and args.per_second is None:
        parser.error("--ties needs --per-second")
    if args.per_second is not None and args.per_second <= 0:
        parser.error("--per-second wants a number above 0")
    density = None if args.per_second is None else Density(args.per_second, args.ties)
    if args.finish:
        return finish_cached(args.sessions, args.sample, args.out)
    if args.out is not None:
        source = args.from_store
        if source is None:
            stores = _scale_store.complete_stores(args.sample)
            if not stores:
                parser.error(f"no complete cached store of {args.sample:,} sessions")
            source = stores[0] / "store"
        manifest = build(
            source, args.out, args.sessions, checkpoint=not args.no_checkpoint, density=density
        )
        print(json.dumps(manifest, indent=1))
        return 0
    path, manifest = cached_multiplied(args.sessions, sample=args.sample, density=density)
    print(f"{args.sessions:,} sessions at {path}: {json.dumps(manifest)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
