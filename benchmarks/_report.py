"""Shared helpers for benchmarks: timing as ratios, and writing a section of docs/benchmarks.md.

Each benchmark owns one section of ``docs/benchmarks.md``, between
``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``; ``write_section``
replaces only that section, so benchmarks can be re-run one at a time.
Figures are ratios against a baseline measured in the same run, because the
machines are shared and noisy; absolute times are reported for context only.
"""

from __future__ import annotations

import fcntl
import platform
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
_HEAD = """# Benchmarks

Every figure here is measured by a script in `benchmarks/` and written by it.
Targets are ratios against a baseline measured in the same run (the machines
are shared and noisy, so absolute times are context, not claims). Re-run all
with `python benchmarks/run_all.py`, or one with `python benchmarks/NAME.py`.
"""


def best_of(fn: Callable[[], object], *, repeat: int = 5, number: int = 100) -> float:
    """Median seconds per call over ``repeat`` rounds of ``number`` calls."""
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return statistics.median(rounds)


def _rounds(
    a: Callable[[], object], b: Callable[[], object], rounds: int, number: int
) -> tuple[list[float], list[float]]:
    """Seconds per call of ``a`` and ``b`` in each round, the two timed back to back and
    which of them goes first alternating, so neither always runs on what the other left
    in the caches."""
    ta: list[float] = []
    tb: list[float] = []
    for i in range(rounds):
        for fn, out in ((a, ta), (b, tb)) if i % 2 == 0 else ((b, tb), (a, ta)):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            out.append((time.perf_counter() - start) / number)
    return ta, tb


def interleaved(
    a: Callable[[], object], b: Callable[[], object], *, rounds: int = 7, number: int = 200
) -> tuple[float, float]:
    """Median seconds per call of ``a`` and ``b``, alternating rounds so both see the same
    noise."""
    ta, tb = _rounds(a, b, rounds, number)
    return statistics.median(ta), statistics.median(tb)


def paired(
    a: Callable[[], object], b: Callable[[], object], *, rounds: int = 7, number: int = 200
) -> tuple[float, float, float, list[float]]:
    """``interleaved`` with the ratio taken round by round: median seconds per call of
    ``a`` and ``b``, the median of the rounds' ``a / b``, and those ratios sorted (for
    their spread). A round times ``a`` and ``b`` back to back, so its ratio sees one
    load; the ratio of two medians can set a quiet round of one against a busy round of
    the other, which for a query that runs for seconds is most of what it shows."""
    ta, tb = _rounds(a, b, rounds, number)
    ratios = sorted(x / y for x, y in zip(ta, tb, strict=True))
    return statistics.median(ta), statistics.median(tb), statistics.median(ratios), ratios


def machine() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}"


def write_section(name: str, markdown: str) -> None:
    """Replace this benchmark's section of docs/benchmarks.md (created when missing)."""
    DOC.parent.mkdir(parents=True, exist_ok=True)
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    block = f"{start}\n{markdown.rstrip()}\n\n_Measured {stamp} on {machine()}._\n{end}"
    with open(DOC.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        text = DOC.read_text() if DOC.exists() else _HEAD
        if start in text and end in text:
            before, rest = text.split(start, 1)
            after = rest.split(end, 1)[1]
            text = before + block + after
        else:
            text = text.rstrip() + "\n\n" + block + "\n"
        DOC.write_text(text)
