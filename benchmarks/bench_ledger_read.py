"""Reading a whole ledger on disk: a subject at a time against every row at once.

``read_ledger`` on an on-disk store reads the ledger graph's N-Triples dump a subject at a
time from a temporary file (each seal a record as its last triple is read); the baseline,
in the same process and the same run, is the read it replaced: the dump's bytes, every
row and every grouped subject at once (``_ntriples_rows``, ``_group``, ``_parse``). Both
give the same records (``tests/evidence/test_ledger.py`` holds them equal). Interleaved
rounds, median CPU seconds of each (the process's, so the machine's other load does not
count), and the seals read.

Run: ``python benchmarks/bench_ledger_read.py [--sessions 4000] [--rounds 5]`` (the stores
of ``bench_export_scale``: 1,000 recorded sessions, multiplied past that; cached).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(path: Path, rounds: int) -> dict[str, float]:
    """Median CPU seconds of each read of the ledger of the store at ``path``."""
    import trails.evidence.ledger as ledger_module
    from trails.prov.iri import Minter
    from trails.store.oxigraph import OxigraphStore

    store = OxigraphStore(path, create=False)
    ledger = ledger_module.ledger_iri(Minter())

    def whole() -> ledger_module.LedgerContents:
        dump = store.dump(format="ntriples", graph=ledger) or b""
        rows = ledger_module._ntriples_rows(dump)
        return ledger_module._parse(ledger_module._group(rows), ledger)

    def by_subject() -> ledger_module.LedgerContents:
        read = ledger_module._read_by_subject(store, ledger)
        assert read is not None, "the dump did not list each subject's triples together"
        return read

    times: dict[str, list[float]] = {"whole": [], "by subject": []}
    seals = 0
    try:
        for _ in range(rounds):
            for name, read in (("whole", whole), ("by subject", by_subject)):
                start = time.process_time()
                seals = len(read().seals)
                times[name].append(time.process_time() - start)
    finally:
        store.close()
    return {**{name: statistics.median(t) for name, t in times.items()}, "seals": seals}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    from bench_export_scale import store_of

    got = measure(store_of(args.sessions), args.rounds)
    print(
        f"{args.sessions:,} sessions, {got['seals']:,.0f} seals: a subject at a time "
        f"{got['by subject']:.3f} s, whole {got['whole']:.3f} s "
        f"({got['by subject'] / got['whole']:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    raise SystemExit(main(sys.argv[1:]))
