"""Run the seeds' coverage table and write it to ``docs/seeds.md``.

Every feature of the five seeds (``tests/seed_rows/rows.json``, 291 rows, each with the grade
it had when the seeds were first checked from outside) is graded by the tests marked
``@pytest.mark.seed_row("002-017")``, in this folder or beside the feature's other tests.
Running this file runs the marked tests of the whole suite and grades each row from what they
did:

* ✓: every test of the row passed, and none is marked ``differs=`` or ``missing=``;
* ~: every test passed, and one says ``differs="docs/agent.md#..."``: trails does it another
  way on purpose (or under another name: a seed's own name that raises is never ✓), the
  test asserts the trails way, and that doc explains it;
* ✗: a test of the row failed or is an expected failure, the row has no test, or a test
  says ``missing="..."``: it asserts what trails does where the seed's feature is absent,
  and the reason is shown in the table.

Usage: ``python tests/seed_rows/table.py [--write]``; it prints the counts per seed, before and
after, and with ``--write`` rewrites ``docs/seeds.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

__all__ = ["HERE", "grade_rows", "load_rows", "main", "render"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
GRADES = ("✓", "~", "✗")


def load_rows() -> dict[str, Any]:
    """The table as first measured: seeds' titles and the 291 rows with their old grade."""
    table: dict[str, Any] = json.loads((HERE / "rows.json").read_text(encoding="utf-8"))
    return table


class _Collector:
    """A pytest plugin that keeps each marked test's rows, outcome and ``differs=``.

    ``tests/conftest.py`` puts the rows into the test's ``user_properties``, which travel in
    the report from any worker.
    """

    def __init__(self) -> None:
        self.results: dict[str, list[tuple[str, str, str | None, str | None]]] = defaultdict(list)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not (report.when == "call" or (report.when == "setup" and not report.passed)):
            return
        outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        for name, value in report.user_properties:
            if name == "seed_row":
                row, differs, missing = value
                self.results[str(row)].append((report.nodeid, outcome, differs, missing))


def grade_rows(
    rows: list[dict[str, Any]], results: dict[str, list[tuple[str, str, str | None, str | None]]]
) -> dict[str, tuple[str, list[str], str | None]]:
    """Each row's grade now, the tests that gave it, and the doc of a difference (or why ✗)."""
    graded: dict[str, tuple[str, list[str], str | None]] = {}
    for row in rows:
        runs = results.get(row["id"], [])
        tests = [nodeid.split("::", 1)[-1] for nodeid, _, _, _ in runs]
        differs = next((doc for _, _, doc, _ in runs if doc), None)
        missing = next((why for _, _, _, why in runs if why), None)
        if not runs or any(outcome != "passed" for _, outcome, _, _ in runs):
            graded[row["id"]] = ("✗", tests, differs)
        elif missing:
            graded[row["id"]] = ("✗", tests, f"missing: {missing}")
        else:
            graded[row["id"]] = ("~" if differs else "✓", tests, differs)
    return graded


def _counts(grades: list[str]) -> tuple[int, int, int]:
    return (grades.count("✓"), grades.count("~"), grades.count("✗"))


def render(table: dict[str, Any], graded: dict[str, tuple[str, list[str], str | None]]) -> str:
    """The table as Markdown: a summary before/after per seed, then every row."""
    rows: list[dict[str, Any]] = table["rows"]
    lines = [
        "# The seeds, row by row",
        "",
        "Every feature of the five seeds (the API and behaviour users of trails and of the",
        "frameworks it takes over already know) is graded by a test in `tests/seed_rows/`, which",
        "runs it and, where the action should leave evidence, reads it back with SPARQL.",
        f"*Before* is the grade measured from outside on {table['measured_on']};",
        "*now* is this table's own run: `python tests/seed_rows/table.py --write`.",
        "",
        "✓ works as the seed says (the same name, or a documented equivalent with the same",
        "behaviour); ~ trails does it another way on purpose, and the linked section says how;",
        "✗ missing.",
        "",
        "| seed | rows | before ✓ / ~ / ✗ | now ✓ / ~ / ✗ |",
        "| --- | --- | --- | --- |",
    ]
    by_seed: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_seed[row["id"][:3]].append(row)
    total_before: list[str] = []
    total_now: list[str] = []
    for seed, seed_rows in sorted(by_seed.items()):
        before = [r["before"] for r in seed_rows]
        now = [graded[r["id"]][0] for r in seed_rows]
        total_before += before
        total_now += now
        b, n = _counts(before), _counts(now)
        title = table["seeds"][seed]
        lines.append(
            f"| {seed} {title} | {len(seed_rows)} | {b[0]} / {b[1]} / {b[2]} | {n[0]} / {n[1]} / {n[2]} |"
        )
    b, n = _counts(total_before), _counts(total_now)
    lines.append(f"| **all** | {len(rows)} | {b[0]} / {b[1]} / {b[2]} | {n[0]} / {n[1]} / {n[2]} |")
    for seed, seed_rows in sorted(by_seed.items()):
        lines += ["", f"## Seed {seed}: {table['seeds'][seed]}", ""]
        lines += ["| row | feature | before | now | graded by |", "| --- | --- | --- | --- | --- |"]
        for row in seed_rows:
            grade, tests, differs = graded[row["id"]]
            feature = row["feature"].replace("|", "\\|")
            by = ", ".join(f"`{t}`" for t in tests) or "no test"
            if differs and differs.startswith("missing: "):
                by += f" ({differs})"
            elif differs:
                by += f" ([the trails way]({differs.removeprefix('docs/')}))"
            lines.append(f"| {row['id']} | {feature} | {row['before']} | {grade} | {by} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the row tests, print the counts, and with ``--write`` rewrite ``docs/seeds.md``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite docs/seeds.md")
    args = parser.parse_args(argv)
    collector = _Collector()
    sys.path.insert(0, str(ROOT))  # as ``python -m pytest`` from the project's root
    code = pytest.main(
        [
            str(ROOT / "tests"),
            "-q",
            "-m",
            "seed_row",
            "-p",
            "no:cacheprovider",
            "-rN",
            "--rootdir",
            str(ROOT),
        ],
        plugins=[collector],
    )
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        print(f"the row tests did not run: pytest exit {int(code)}", file=sys.stderr)
        return 2
    table = load_rows()
    graded = grade_rows(table["rows"], collector.results)
    text = render(table, graded)
    summary = text.split("\n## ", 1)[0].splitlines()
    print("\n".join(line for line in summary if line.startswith("|")))
    if args.write:
        (ROOT / "docs" / "seeds.md").write_text(text, encoding="utf-8")
        print("wrote docs/seeds.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
