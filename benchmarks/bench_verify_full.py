"""Full verification against the raw read of the same store, and the quick mode as it grows.

Two measurements, each against a baseline from the same run, on stores of real sessions
built by ``_scale_store`` (ReAct sessions over a scripted model, memory, failures,
interrupted sessions; cached between runs):

- **full verification throughput**: ``verify(store)`` (a plain ``trails verify``: every
  sealed graph rehashed, all content recomputed, every catalogue entry recomputed, every
  graph accounted for, in one pass) against pyoxigraph dumping the whole dataset as
  N-Quads into a sink that keeps nothing (the raw read of the same quads). Interleaved
  rounds; the ratio is raw time / verification time (throughput relative to the raw
  read, target >= 0.5).
- **quick verification as the store grows**: ``verify(store, quick=True)`` after a full
  verification's checkpoint and 10 sessions sealed since, on a small and a large store
  (copies of the cached stores); the ratio large / small (target <= 1.5: flat).

Run: ``python benchmarks/bench_verify_full.py`` (200 sessions; quick at 100 and 1,000),
``python benchmarks/bench_verify_full.py --sessions 10000 --quick 1000,10000`` for the
figures at scale.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _scale_store
from _report import paired, write_section

from trails.evidence.checkpoint import record_checkpoint
from trails.evidence.verify import verify
from trails.prov import Recorder
from trails.store import open_store


class _Sink:
    """A binary file that keeps nothing (what the raw read is timed into)."""

    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        pass


def _raw_read(store: Any) -> None:
    import pyoxigraph as ox

    store.raw.dump(_Sink(), format=ox.RdfFormat.N_QUADS)


def _copy(sessions: int, into: Path) -> Path:
    path, _ = _scale_store.cached_store(sessions, reuse_any_digest=True)
    target = into / f"store-{sessions}-{len(list(into.iterdir()))}"
    shutil.copytree(path, target)
    return target


def _full(path: Path, rounds: int) -> dict[str, float]:
    store = open_store(path)
    try:
        first = verify(store)
        assert first.ok, first.findings[:3]
        t_verify, t_raw, ratio, ratios = paired(
            lambda: verify(store), lambda: _raw_read(store), rounds=rounds, number=1
        )
        return {
            "verify": t_verify,
            "raw": t_raw,
            "throughput": 1 / ratio,
            "worst": 1 / ratios[-1],
            "best": 1 / ratios[0],
            "sessions": first.sessions_checked,
            "quads": first.quads_read,
        }
    finally:
        store.close()


def _prepared_quick(path: Path, new: int) -> Any:
    """The store at ``path`` with a full verification's checkpoint and ``new`` sessions
    sealed since (open; the caller closes it)."""
    store = open_store(path)
    recorder = Recorder.from_settings(store=store)
    full = verify(store)
    assert full.ok, full.findings[:3]
    record_checkpoint(
        recorder,
        mode="full",
        seals=full.seals,
        graphs=full.graphs_checked,
        verified=full.chain_tips,
        previous=None,
    )
    _scale_store.register_capabilities()
    for i in range(new):
        plan = _scale_store.plan_for(100_000 + i * 2)  # finishing sessions, never left open
        _scale_store.record_session(recorder, plan)
    quick = verify(store, quick=True)
    assert quick.ok and quick.mode == "quick" and quick.graphs_checked == new, quick.findings[:3]
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=200, help="store for the full check")
    parser.add_argument("--quick", default="100,1000", help="SMALL,LARGE stores for --quick")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    small_n, large_n = (int(n) for n in args.quick.split(","))
    with tempfile.TemporaryDirectory(prefix="trails-bench-verify-") as tmp:
        root = Path(tmp)
        full = _full(_copy(args.sessions, root), args.rounds)
        small = _prepared_quick(_copy(small_n, root), 10)
        large = _prepared_quick(_copy(large_n, root), 10)
        try:
            t_large, t_small, q_ratio, q_ratios = paired(
                lambda: verify(large, quick=True),
                lambda: verify(small, quick=True),
                rounds=max(args.rounds, 7),
                number=3,
            )
        finally:
            small.close()
            large.close()

    n = args.sessions
    write_section(
        "verify_full",
        f"""## Verification: the full check against the raw read, the quick mode as it grows (issue 30)

`python benchmarks/bench_verify_full.py --sessions {n} --quick {small_n},{large_n}`,
on-disk stores of realistic sessions (`benchmarks/_scale_store.py`). A plain
`trails verify` is the full check: every sealed graph rehashed, all content recomputed
against its digests, every catalogue entry recomputed from its session, every graph
accounted for, read in one N-Quads stream of the whole store. The baseline is pyoxigraph
dumping the same store as N-Quads into a sink that keeps nothing: the raw read of the
same quads, in the same run (rounds interleaved, ratio taken per round).

| | time | ratio |
|---|---|---|
| `verify` (full) of {n:,} sessions, {full["quads"]:,.0f} quads | {full["verify"]:.2f} s | throughput **{full["throughput"]:.2f}** x the raw read (rounds {full["worst"]:.2f}-{full["best"]:.2f}; target >= 0.5) |
| raw read: `Store.dump` of the whole store to N-Quads (baseline) | {full["raw"]:.2f} s | |
| `verify --quick`, 10 sessions sealed since the checkpoint, {large_n:,} sessions | {t_large * 1e3:.0f} ms | **{q_ratio:.2f}** x at {small_n:,} (rounds {q_ratios[0]:.2f}-{q_ratios[-1]:.2f}; target <= 1.5) |
| `verify --quick`, the same at {small_n:,} sessions (baseline) | {t_small * 1e3:.0f} ms | |

Full verification reads {full["sessions"] / full["verify"]:,.0f} sessions/s and
{full["quads"] / full["verify"]:,.0f} quads/s here (`trails verify` prints both, in the
line before its verdict). The quick mode reads only the seals after the checkpoint (walking back from
the ledger's newest-seal pointers) and the graphs they seal: its time follows what is
new, not the store.""",
    )
    print(
        f"full: {full['throughput']:.2f}x raw read ({full['verify']:.2f} s vs {full['raw']:.2f} s); "
        f"quick: {q_ratio:.2f}x ({t_large * 1e3:.0f} ms vs {t_small * 1e3:.0f} ms)"
    )


if __name__ == "__main__":
    main()
