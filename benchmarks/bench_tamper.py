"""The outside tampering table, run whole: which verification catches each scenario.

Prepares the signed store of ``tests/evidence/tamper_store.py`` once (sessions with
content, memories, an erasure receipt, checkpoints, the transparency log, a kept tree
head, a proof and a bundle), then for every scenario of ``tests/evidence/tamper_table.py``
tampers with a file copy of it and runs the real ``trails verify`` in the mode the table
names. Prints a markdown table: scenario, family, mode, caught (yes/no), the finding
codes printed; then the scenarios no mode catches yet, with why. Where a mode other than
a plain ``trails verify`` is needed, the table says why only that mode can tell.

Run: ``python benchmarks/bench_tamper.py`` (about a minute; exit 1 if any scenario of the
table is not caught).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.evidence.tamper_store import prepare  # noqa: E402
from tests.evidence.tamper_table import GAPS, SCENARIOS, Scenario, run  # noqa: E402

from trails.store import set_default_store  # noqa: E402


def _row(scenario: Scenario, caught: bool, codes: list[str]) -> str:
    mode = f"`{scenario.mode}`" if scenario.mode != "plain" else "plain"
    if scenario in GAPS:
        mode = "none yet"
    if scenario.why:
        mode += f" ({scenario.why})"
    found = ", ".join(dict.fromkeys(codes)) or "none"
    return (
        f"| {scenario.name} | {scenario.family} | {mode} | {'yes' if caught else 'no'} | {found} |"
    )


def main() -> int:
    began = time.perf_counter()
    missed = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        prepared = prepare(folder / "prepared")
        set_default_store(None)
        rows = []
        for i, scenario in enumerate(SCENARIOS + GAPS):
            outcome = run(scenario, prepared, folder / f"case-{i}")
            shutil.rmtree(folder / f"case-{i}")
            in_table = scenario in SCENARIOS
            missed += in_table and not outcome.caught
            rows.append(_row(scenario, outcome.caught, outcome.codes))
    caught = len(SCENARIOS) - missed
    print("| scenario | family | mode | caught | finding codes |")
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    print()
    print(
        f"{caught} of {len(SCENARIOS)} scenarios caught in the mode the table names; "
        f"{len(GAPS)} listed as not caught yet; {time.perf_counter() - began:.0f} s"
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
