"""Where a full verification's CPU time goes, stage by stage, against the raw read.

``bench_verify_full`` gives the ratio of the raw read's time to a full verification's; this
benchmark says what the difference is made of. On a store recorded one session at a time
(``_scale_store``, 1,000 sessions) and on one of the same size multiplied and bulk-loaded
as the 100,000-session store is (``_multiply_store``), each measured on a hard-linked copy:

- the raw read: CPU seconds of pyoxigraph dumping the whole dataset as N-Quads into a sink
  that keeps nothing, and its quads per CPU second;
- ``verify(store, jobs=1)`` (everything in one process, so every stage is counted), its
  CPU seconds split by stage: a timer of CPU time is wrapped around the functions each
  stage calls (the N-Quads to N-Triples rewrite, the canonical hash, the session's state,
  the catalogue entry's summary lines and ``summarise``, the stored entries, the content's
  digests and values, the ledger and its chains, the receipts, the transparency log, the
  learned digests, cutting the stream into graphs); what is left is the dump itself and
  the pass's own bookkeeping.

CPU time, not wall time: on a shared machine what another process takes from this one is
not counted. The best of the rounds is kept (the least disturbed).

Run: ``python benchmarks/bench_verify_stages.py [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _multiply_store
import _scale_store
from _report import write_section
from bench_scale import snapshot
from bench_verify_full import _raw_read

from trails.store import open_store

_cpu = time.process_time
_graphwork = importlib.import_module("trails.evidence.graphwork")
_verify = importlib.import_module("trails.evidence.verify")
_sweep = importlib.import_module("trails.evidence.sweep")

#: (module, function, stage): the functions each stage calls (one called by another listed
#: is counted for its own stage only)
_STAGES: list[tuple[Any, str, str]] = [
    (_graphwork, "_ntriples", "N-Quads lines to N-Triples"),
    (_graphwork, "digest_nquads", "canonical hash of sealed graphs"),
    (_graphwork, "digest_ntriples", "canonical hash of sealed graphs"),
    (_graphwork, "session_state", "session state"),
    (_graphwork, "summary_triples", "catalogue: the summary lines read"),
    (_graphwork, "entry_lines", "catalogue: `summarise` and the entry's lines"),
    (_graphwork, "entry_digest", "catalogue: entry digests"),
    (_graphwork, "stored_entries", "catalogue: the stored entries read"),
    (_graphwork, "structure_from_ntriples", "content: the digests read"),
    (_graphwork, "judge_content", "content: the values read and hashed"),
    (_verify, "_start", "the ledger read, its chains walked"),
    (_verify, "removals", "receipts read"),
    (_verify, "read_accounts", "receipts read"),
    (_verify, "check_log", "the transparency log recomputed"),
    (_verify, "check_learned", "memories against their learned digests"),
]
_CUT = "cutting the stream into graphs"


class _Timers:
    """CPU seconds by stage, counted while installed."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.handed = 0.0
        self.inner: list[float] = []

    def install(self) -> None:
        for module, name, stage in _STAGES:
            setattr(module, name, self._timed(getattr(module, name), stage))
        hand_on, block = _sweep.Sweep._hand_on, _sweep.Sweep._block
        timers = self

        def timed_hand_on(sweep: Any, *args: Any) -> None:
            start = _cpu()
            try:
                hand_on(sweep, *args)
            finally:
                timers.handed += _cpu() - start

        def timed_block(sweep: Any) -> None:
            start, handed = _cpu(), timers.handed
            try:
                block(sweep)
            finally:  # the graphs handed on from this block are the stages' own
                timers.spent[_CUT] += (_cpu() - start) - (timers.handed - handed)

        _sweep.Sweep._hand_on = timed_hand_on
        _sweep.Sweep._block = timed_block

    def _timed(self, fn: Callable[..., Any], stage: str) -> Callable[..., Any]:
        inner = self.inner  # a stage called by another counts for itself only

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = _cpu()
            inner.append(0.0)
            try:
                return fn(*args, **kwargs)
            finally:
                spent = _cpu() - start
                self.spent[stage] += spent - inner.pop()
                if inner:
                    inner[-1] += spent

        return timed


def _measure(path: Path, rounds: int, timers: _Timers) -> dict[str, Any]:
    store = open_store(path)
    try:
        raw: list[float] = []
        best: tuple[float, dict[str, float], int, int] | None = None
        for _ in range(rounds):
            start = _cpu()
            _raw_read(store)
            raw.append(_cpu() - start)
            timers.spent.clear()
            start = _cpu()
            report = _verify.verify(store, jobs=1)
            total = _cpu() - start
            assert report.ok, report.findings[:3]
            if best is None or total < best[0]:
                best = (total, dict(timers.spent), report.quads_read, report.sessions_checked)
    finally:
        store.close()
    assert best is not None
    total, spent, quads, sessions = best
    return {
        "raw": min(raw),
        "total": total,
        "stages": spent,
        "quads": quads,
        "sessions": sessions,
    }


def _table(label: str, m: dict[str, Any]) -> str:
    raw, total, stages = m["raw"], m["total"], m["stages"]
    rest = total - sum(stages.values())
    rows = [
        f"| **{label}**: {m['sessions']:,} sessions, {m['quads']:,} quads | | |",
        f"| raw read (baseline): `Store.dump` to N-Quads | {raw:.2f} s | "
        f"{m['quads'] / raw:,.0f} quads per CPU second |",
        f"| `verify --jobs 1`, in all | {total:.2f} s | **{raw / total:.2f}** x the raw read |",
        f"| - the dump itself and the pass's bookkeeping | {rest:.2f} s | "
        f"{rest / raw:.2f} x the raw read's |",
    ]
    for stage, spent in sorted(stages.items(), key=lambda kv: -kv[1]):
        rows.append(f"| - {stage} | {spent:.2f} s | {spent / total:.0%} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    recorded, _ = _scale_store.cached_store(1000, reuse_any_digest=True)
    multiplied, _ = _multiply_store.cached_multiplied(1000)
    timers = _Timers()
    timers.install()
    root = _scale_store.cache_root()
    results: list[tuple[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="work-stages-", dir=root) as tmp:
        for label, source in (
            ("recorded", recorded),
            ("multiplied (as the 100,000-session store)", multiplied),
        ):
            m = _measure(snapshot(source, Path(tmp) / label.split()[0]), args.rounds, timers)
            results.append((label, m))
            print(f"{label}: raw {m['raw']:.2f} s, verify {m['total']:.2f} s CPU")
    tables = "\n".join(_table(label, m) for label, m in results)
    write_section(
        "verify_stages",
        f"""## Verification: where the CPU time goes (issue 30)

`python benchmarks/bench_verify_stages.py --rounds {args.rounds}`: CPU seconds (not wall
time: what other processes take is not counted; the best of {args.rounds} rounds) of the raw
read and of a full `verify --jobs 1` (every stage in one process), split by stage, on a
hard-linked copy of the 1,000-session store recorded one session at a time and of the
1,000-session store multiplied and bulk-loaded the way the 100,000-session one is. A stage
is the time spent in the functions it calls (timers of CPU time wrapped around them); the
dump itself is what is left.

| | CPU | share |
|---|---|---|
{tables}""",
    )


if __name__ == "__main__":
    main()
