"""PROV-N and PROV-JSON exports of whole stores: linear in the sessions, against TriG.

``trails export --all --format provn`` writes PROV-N and PROV-JSON straight from
the export's quads (``trails.audit.provn``), as the ``prov`` package reads
PROV-O. Through the ``prov`` package, a whole store in one document was
superlinear (4.6 s of CPU at 150 sessions, 271 s at 1,500), and one conversion
per session linear but about 0.09x of TriG. This measures the CPU seconds of ``trails.audit.export.export`` for ``trig``,
``provn`` and ``provjson`` over every graph of stores of realistic recorded
sessions (``_scale_store``, cached) at each size, and reports each doubling's
ratio (target <= 2.2x: linear) and the throughput of PROV-N against TriG in the
same run (target >= 0.3x).

Usage: ``python benchmarks/bench_export_prov.py [--sizes 150,300,600] [--no-doc]``.
CPU time of this process (``time.process_time``): the machine's other load
does not count.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

from _report import write_section

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("trig", "provn", "provjson")


def measure(path: Path) -> dict[str, float]:
    """CPU seconds of exporting every graph of the store at ``path`` in each format."""
    from trails.audit.export import export, select_graphs
    from trails.store.oxigraph import OxigraphStore

    store = OxigraphStore(path, create=False)
    try:
        graphs = select_graphs(store, all_graphs=True)
        out: dict[str, float] = {}
        for fmt in FORMATS:
            start = time.process_time()
            export(store, io.BytesIO(), graphs, format=fmt)
            out[fmt] = time.process_time() - start
        return out
    finally:
        store.close()


def main(argv: list[str]) -> int:
    from _scale_store import cached_store

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="150,300,600", help="sessions, comma separated")
    parser.add_argument("--no-doc", action="store_true", help="print, do not write the doc")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    cpu: dict[int, dict[str, float]] = {}
    for size in sizes:
        path, _ = cached_store(size, reuse_any_digest=True)
        cpu[size] = measure(path)
        print(size, {k: round(v, 2) for k, v in cpu[size].items()}, flush=True)
    lines = [
        "| sessions | TriG | PROV-N | PROV-JSON | PROV-N / previous size "
        "| PROV-N throughput / TriG | PROV-JSON throughput / TriG |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, size in enumerate(sizes):
        row = cpu[size]
        growth = (
            f"{row['provn'] / cpu[sizes[i - 1]]['provn']:.2f}x for {size / sizes[i - 1]:.1f}x"
            if i
            else "-"
        )
        lines.append(
            f"| {size:,} | {row['trig']:.2f} s | {row['provn']:.2f} s | {row['provjson']:.2f} s "
            f"| {growth} | {row['trig'] / row['provn']:.2f}x | {row['trig'] / row['provjson']:.2f}x |"
        )
    table = "\n".join(lines)
    print(table)
    if not args.no_doc:
        write_section(
            "export-prov",
            "## PROV-N and PROV-JSON exports\n\n"
            "CPU seconds of `trails export --all` (`trails.audit.export.export`, every graph "
            "of a store of recorded sessions) per format (`benchmarks/bench_export_prov.py "
            f"--sizes {args.sizes}`). PROV-N and PROV-JSON are written straight from the "
            "export's quads (`trails.audit.provn`, the `prov` package kept as the test oracle "
            "that reads them back); through the `prov` package, the whole store as one "
            "conversion grew superlinearly (4.6 s at 150 sessions, 271 s at 1,500), and one "
            "conversion per session was linear but about 0.09x of TriG (7.3 s, 13.8 s, "
            "28.8 s at 150, 300, 600 sessions). Targets: each doubling <= 2.2x, PROV-N "
            "throughput >= 0.3x of TriG's. "
            f"On {os.cpu_count()} cores.\n\n" + table,
        )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main(sys.argv[1:]))
