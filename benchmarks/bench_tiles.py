"""The transparency log published as C2SP tiles: publishing 100,000 leaves, and a proof
from the tiles against the same proof from the store.

The log is built for real over synthetic seals (``bench_transparency.synthetic_seals``:
ledger entries holding what the log reads of a seal) with a signing key, so its head is a
signed checkpoint. Then, in CPU seconds of this process:

- **publish**: ``trails.evidence.tiles.publish`` of the whole log to an empty folder
  (leaves recomputed from the ledger and checked against the head's root, every tile and
  entry bundle written), per leaf; and a second publish of the unchanged log (every full
  tile kept);
- **proof from tiles**: an inclusion proof built by ``TileLog.inclusion`` reading only the
  tiles it needs from the folder (a fresh reader each time, nothing cached), the median
  over seals spread across the log;
- **proof from the store**: ``log_proofs`` for one seal (head, leaf index, O(log n)
  stored subtrees), the same seals, median;
- **check**: a monitor's ``TileLog.check`` of the whole published log.

The ratio tiles/store is the figure to watch (same process, same run).

Run: ``python benchmarks/bench_tiles.py [LEAVES]`` (default 100,000).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_section
from bench_transparency import synthetic_seals
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from trails.evidence.tiles import publish
from trails.evidence.tiles_read import TileLog, folder_fetch
from trails.evidence.transparency import extend_log, log_iri, log_proofs, read_head
from trails.prov import Minter, Recorder
from trails.store import open_store

PROVED = 50


def cpu(fn: object) -> tuple[float, object]:
    began = time.process_time()
    out = fn()  # type: ignore[operator]
    return time.process_time() - began, out


def measure(n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "store")
        try:
            minter = Minter()
            seals = synthetic_seals(store, n)
            event, old = extend_log(store, minter, signing_key=Ed25519PrivateKey.generate())
            Recorder(store).record(event, remove=old)
            head = read_head(store, log_iri(minter))
            assert head is not None and head.size == n and head.note
            site = Path(tmp) / "site"
            publish_s, first = cpu(lambda: publish(store, minter, site))
            again_s, second = cpu(lambda: publish(store, minter, site))
            picks = [(i * 7919) % n for i in range(PROVED)]
            tiles, stored = [], []
            for index in picks:
                took, path = cpu(lambda i=index: TileLog(folder_fetch(site)).inclusion(i, n))
                tiles.append(took)
                took, doc = cpu(lambda i=index: log_proofs(store, minter, [seals[i][0]]))
                stored.append(took)
                assert [p.hex() for p in path] == doc["proofs"][0]["path"]  # type: ignore[index,union-attr]
            check_s, report = cpu(lambda: TileLog(folder_fetch(site)).check())
            assert report.ok  # type: ignore[attr-defined]
            return {
                "publish_s": publish_s,
                "publish_us": publish_s / n * 1e6,
                "again_s": again_s,
                "written": first.tiles_written,  # type: ignore[attr-defined]
                "bytes": first.bytes_written,  # type: ignore[attr-defined]
                "kept": second.tiles_kept,  # type: ignore[attr-defined]
                "tiles_ms": statistics.median(tiles) * 1e3,
                "store_ms": statistics.median(stored) * 1e3,
                "check_s": check_s,
            }
        finally:
            store.close()


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    f = measure(n)
    ratio = f["tiles_ms"] / f["store_ms"]
    table = f"""## The log as C2SP tiles (`trails log publish`, `trails log check`)

`python benchmarks/bench_tiles.py` ({n:,} leaves, CPU seconds of one process):

| figure | value |
| --- | --- |
| publish {n:,} leaves (leaves recomputed from the ledger, checked, written) | {f["publish_s"]:.2f} s ({f["publish_us"]:.1f} µs a leaf) |
| tiles and entry bundles written | {f["written"]:,.0f} ({f["bytes"] / 1e6:.1f} MB) |
| publish again, unchanged (full tiles kept: {f["kept"]:,.0f}) | {f["again_s"]:.2f} s |
| inclusion proof from the tiles (median of {PROVED}) | {f["tiles_ms"]:.2f} ms |
| the same proof from the store (`log_proofs`, median) | {f["store_ms"]:.2f} ms |
| tiles / store | {ratio:.2f}x |
| a monitor's check of every entry and tile (`trails log check`) | {f["check_s"]:.2f} s |
"""
    print(table)
    write_section("tiles", table)


if __name__ == "__main__":
    main()
