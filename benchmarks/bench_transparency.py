"""The transparency log: proof size and time at 1,000 and 100,000 leaves.

The log is built for real (``extend_log``, the checkpoint's append, written to an on-disk
store) over synthetic seals: ledger entries holding what the log reads of a seal (its
type, hash and time), since recording 100,000 sessions would measure recording, not the
log. Then, at each size:

- **proof size**: hashes in an inclusion proof (the audit path) and bytes of the
  ``trails prove`` document for one seal, and of a consistency proof from half the log;
- **proof time**: ``log_proofs`` for one seal (read the head, find the leaf, read the
  O(log n) stored subtrees, build the path), the median over seals spread across the log,
  the first time (the store's blocks read from disk, as a fresh ``trails prove`` does) and
  again (in the store's cache);
- **verification time**: ``verify_inclusion`` of that proof (no store);
- **a checkpoint's append**: 100 new seals appended to the log of that size (the
  checkpoint's share of the work), beside building the whole log in one append.

The claim is O(log n): the ratio of each figure at 100k to the same at 1k, measured in
the same run, should stay near log2(100k) / log2(1k) = 1.67, far from the 100x of a
linear scan.

Run: ``python benchmarks/bench_transparency.py``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_section

from trails.evidence.ledger import ledger_iri
from trails.evidence.merkle import consistency_proof, leaf_hash, verify_inclusion
from trails.evidence.proofs import leaf_data
from trails.evidence.transparency import _Nodes as Nodes
from trails.evidence.transparency import extend_log, log_iri, log_proofs, read_head
from trails.prov import Minter, Recorder
from trails.prov.vocab import PROV, RDF, T
from trails.store import IRI, Quad, Store, open_store
from trails.store.terms import literal

SIZES = (1_000, 100_000)
PROVED = 50


def synthetic_seals(store: Store, n: int, first: int = 0) -> list[tuple[IRI, str]]:
    minter = Minter()
    ledger = ledger_iri(minter)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    seals = []
    batch: list[Quad] = []
    for i in range(first, first + n):
        seal = Minter.part(ledger, f"seal:bench:{i + 1}")
        seal_hash = f"{i:064x}"
        seals.append((seal, seal_hash))
        batch += [
            Quad(seal, RDF.type, T.Seal, ledger),
            Quad(seal, T.sealHash, literal(seal_hash), ledger),
            Quad(seal, PROV.generatedAtTime, literal(start + timedelta(seconds=i)), ledger),
        ]
        if len(batch) >= 30_000:
            store.write(batch)
            batch = []
    store.write(batch)
    return seals


def measure(n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "store")
        try:
            minter = Minter()
            seals = synthetic_seals(store, n)
            recorder = Recorder(store)
            began = time.perf_counter()
            event, old = extend_log(store, minter)
            recorder.record(event, remove=old)
            append_s = time.perf_counter() - began
            head = read_head(store, log_iri(minter))
            assert head is not None and head.size == n
            picks = [seals[(i * 7919) % n] for i in range(PROVED)]
            prove_times, warm_times, verify_times, hashes, sizes = [], [], [], [], []
            root = bytes.fromhex(head.root)
            for seal, seal_hash in picks:
                began = time.perf_counter()
                doc = log_proofs(store, minter, [seal])
                prove_times.append(time.perf_counter() - began)
                again = []
                for _ in range(3):
                    began = time.perf_counter()
                    log_proofs(store, minter, [seal])
                    again.append(time.perf_counter() - began)
                warm_times.append(min(again))
                assert doc is not None
                (proof,) = doc["proofs"]
                path = [bytes.fromhex(h) for h in proof["path"]]
                leaf = leaf_hash(leaf_data(str(seal), seal_hash))
                began = time.perf_counter()
                ok = verify_inclusion(leaf, proof["index"], head.size, path, root)
                verify_times.append(time.perf_counter() - began)
                assert ok
                hashes.append(len(path))
                sizes.append(len(json.dumps(doc).encode()))
            consistency = consistency_proof(Nodes(store, log_iri(minter)), n // 2 + 1, n)
            reads, writes = [], []
            for round_ in range(5):
                newest = synthetic_seals(store, 100, first=n + 100 * round_)[-1]
                began = time.perf_counter()
                event, old = extend_log(store, minter, tips=[newest])
                reads.append(time.perf_counter() - began)
                assert len(event.leaves) == 100
                began = time.perf_counter()
                recorder.record(event, remove=old)
                writes.append(time.perf_counter() - began)
            checkpoint_s = statistics.median(r + w for r, w in zip(reads, writes, strict=True))
            return {
                "append_us": append_s / n * 1e6,
                "checkpoint_ms": checkpoint_s * 1e3,
                "read_ms": statistics.median(reads) * 1e3,
                "write_ms": statistics.median(writes) * 1e3,
                "prove_ms": statistics.median(prove_times) * 1e3,
                "warm_ms": statistics.median(warm_times) * 1e3,
                "verify_us": statistics.median(verify_times) * 1e6,
                "hashes": max(hashes),
                "bytes": statistics.median(sizes),
                "consistency": len(consistency),
            }
        finally:
            store.close()


def main() -> None:
    figures = {n: measure(n) for n in SIZES}
    small, big = figures[SIZES[0]], figures[SIZES[1]]
    rows = "\n".join(
        f"| {n:,} | {f['hashes']:.0f} | {f['bytes']:,.0f} | {f['consistency']:.0f} | "
        f"{f['prove_ms']:.2f} ms | {f['warm_ms']:.2f} ms | {f['verify_us']:.0f} µs | "
        f"{f['checkpoint_ms']:.0f} ms ({f['read_ms']:.0f} + {f['write_ms']:.0f}) | "
        f"{f['append_us']:.0f} µs |"
        for n, f in figures.items()
    )
    markdown = f"""## The transparency log: proof size and time (issue 30)

`python benchmarks/bench_transparency.py`: the log built by the checkpoint's append over
{SIZES[0]:,} and {SIZES[1]:,} synthetic seals in an on-disk store; an inclusion proof of one
seal (`log_proofs`, what `trails prove` and a bundle carry) for {PROVED} seals spread over
the log (median; "cached": the best of 3 more), its offline check (`verify_inclusion`), a
consistency proof from half the log, and a checkpoint's append of 100 new seals (median of
5: finding and reading them and the O(log n) subtrees, then the one write).

| leaves | hashes in the proof | proof document (bytes) | consistency proof (hashes) | prove one seal (first) | prove (cached) | verify | checkpoint: append 100 seals (read + write) | whole log in one append, per seal |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|
{rows}

100k against 1k, same run: proof {big["hashes"] / small["hashes"]:.2f}x the hashes,
{big["bytes"] / small["bytes"]:.2f}x the bytes, {big["warm_ms"] / small["warm_ms"]:.2f}x the
time to prove (cached; {big["prove_ms"] / small["prove_ms"]:.1f}x the first time, when the
O(log n) subtrees are read from disk) and {big["verify_us"] / small["verify_us"]:.2f}x the
time to verify, for 100x the leaves (O(log n): log2 100k / log2 1k = 1.67). A checkpoint's
append of 100 seals costs {big["checkpoint_ms"] / small["checkpoint_ms"]:.2f}x at 100k:
it reads the seals after each writer's newest logged seal up to the chain tips it
verified, O(new seals + log n). Building a whole log in one append (the first checkpoint
of a store that had none) scans every seal: O(n).
"""
    write_section("transparency", markdown)
    print(markdown)


if __name__ == "__main__":
    main()
