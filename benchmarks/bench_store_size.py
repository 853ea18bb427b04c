"""The store's size on disk against its data: as written, optimised, compacted, and raw.

A store of recorded sessions (``_scale_store``, cached; copied, the cache is never
written) is measured as the recorder wrote it, after ``pyoxigraph.Store.optimize()``
(RocksDB's full compaction), and after ``OxigraphStore.compact`` (what ``trails
compact`` runs: the quads bulk-loaded into a fresh data directory, then optimised).
The baseline, in the same run, is the same quads bulk-loaded by pyoxigraph into an
empty directory (``Store.bulk_extend``), the smallest store those quads make.

Why a written store is larger (measured here, see docs/benchmarks.md): Oxigraph's
RocksDB compresses (LZ4) only below the base level of its column families, and, with
dynamic level sizes, the base level of a column family under 512 MiB is its only
level: what transactions write stays uncompressed however often it is compacted,
while the bulk loader writes compressed files straight into the last level.

Targets (issue 44.5): compacted <= 1.2x of the raw store; as written <= 1.5x.

Usage: ``python benchmarks/bench_store_size.py [--sizes 1000] [--no-doc] [--check]``;
``--check`` exits 1 when the compacted store is past its target by more than
``NOISE`` (sizes are exact; the noise is RocksDB's file layout).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from _report import write_section

ROOT = Path(__file__).resolve().parent.parent
COMPACTED = 1.2
WRITTEN = 1.5
NOISE = 1.05


def size_of(path: Path) -> int:
    """Bytes of the files under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def data_dir(store: Path) -> Path:
    """The data directory a store's pointer names (``data-N``)."""
    (data,) = [p for p in store.iterdir() if p.is_dir() and p.name.startswith("data")]
    return data


def measure(source: Path) -> dict[str, float]:
    """Sizes (bytes) of a copy of the store at ``source`` in each state, and its quads."""
    import pyoxigraph as ox

    from trails.store.oxigraph import OxigraphStore

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder) / "store"
        shutil.copytree(source, work)
        out: dict[str, float] = {"written": size_of(data_dir(work))}
        raw = Path(folder) / "raw"
        store = OxigraphStore(work, create=False)
        try:
            out["quads"] = len(store.raw)
            fresh = ox.Store(str(raw))
            fresh.bulk_extend(store.raw.quads_for_pattern(None, None, None, None))
            fresh.flush()
            del fresh
            out["raw"] = size_of(raw)
            store.raw.optimize()
            store.raw.flush()
            out["optimized"] = size_of(data_dir(work))
            store.compact()
            out["compacted"] = size_of(data_dir(work))
        finally:
            store.close()
    return out


def problems(figures: dict[int, dict[str, float]]) -> list[str]:
    out = []
    for size, fig in figures.items():
        ratio = fig["compacted"] / fig["raw"]
        if ratio > COMPACTED * NOISE:
            out.append(f"compacted {ratio:.2f}x of the raw store at {size:,} sessions")
    return out


def table(figures: dict[int, dict[str, float]]) -> str:
    lines = [
        "| sessions | quads | raw bulk load | as written | optimised | compacted "
        "| written / raw | optimised / raw | compacted / raw |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    mib = 1 << 20
    for size, f in figures.items():
        lines.append(
            f"| {size:,} | {f['quads']:,.0f} | {f['raw'] / mib:.1f} MiB "
            f"| {f['written'] / mib:.1f} MiB | {f['optimized'] / mib:.1f} MiB "
            f"| {f['compacted'] / mib:.1f} MiB | {f['written'] / f['raw']:.2f}x "
            f"| {f['optimized'] / f['raw']:.2f}x | {f['compacted'] / f['raw']:.2f}x |"
        )
    return "\n".join(lines)


def section(sizes: str, figures: dict[int, dict[str, float]]) -> str:
    """The section of docs/benchmarks.md for these figures."""
    text = table(figures)
    return (
        "## The store's size against its data\n\n"
        "Bytes on disk of a store of recorded sessions as the recorder wrote it, after "
        "`pyoxigraph.Store.optimize()`, and after `OxigraphStore.compact` (what `trails "
        "compact` runs), against the same quads bulk-loaded into an empty store "
        f"(`benchmarks/bench_store_size.py --sizes {sizes}`). Targets: compacted "
        f"<= {COMPACTED}x of the raw store, as written <= {WRITTEN}x.\n\n"
        + text
        + "\n\nWhere the difference goes: not to bookkeeping (the raw store holds the very "
        "same quads, catalogue, ledger and access log included) nor to files waiting for "
        "a compaction (optimising the written store changes nothing). Oxigraph opens "
        "RocksDB with LZ4 for levels 2 and below only (`compression_per_level`: none, "
        "none, LZ4 ...) and dynamic level sizes with a 512 MiB base: every column family "
        "of a store this size lives in its base level, which takes level 1's setting, "
        "so whatever transactions write is stored uncompressed however it is compacted "
        "(at 1,000 sessions, a 25.2 MB table file of the written store compresses to 7.3 MB "
        "with `lz4 -1`, one of the bulk-loaded store from 14.5 MB to 12.9 MB only). "
        "The bulk loader writes LZ4-compressed files straight into the last level. The "
        "ratio as written is LZ4's ratio on these keys and strings; `compact` reaches the "
        "raw store because it is a bulk load. pyoxigraph exposes no RocksDB option, so "
        "the written store cannot meet 1.5x by configuration: the proposed restatement "
        "is <= 1.2x after `trails compact` (met) and, as written, the uncompressed size "
        "of the same data (the ratio above), until pyoxigraph lets a store choose its "
        "compression."
    )


def main(argv: list[str]) -> int:
    from _scale_store import cached_store

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000", help="sessions, comma separated")
    parser.add_argument("--no-doc", action="store_true", help="print, do not write the doc")
    parser.add_argument("--check", action="store_true", help="exit 1 on a regression")
    args = parser.parse_args(argv)
    figures = {}
    for size in (int(s) for s in args.sizes.split(",")):
        figures[size] = measure(cached_store(size, reuse_any_digest=True)[0])
        print(size, figures[size], flush=True)
    text = table(figures)
    print(text)
    found = problems(figures)
    for line in found:
        print("REGRESSION:", line, file=sys.stderr)
    if not args.no_doc:
        write_section("store-size", section(args.sizes, figures))
    return 1 if args.check and found else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    raise SystemExit(main(sys.argv[1:]))
