"""The seeds' table runner grades rows from what their tests did, and every row has a test."""

from __future__ import annotations

import re
from pathlib import Path

from tests.seed_rows.table import ROOT, grade_rows, load_rows, render

MARK = re.compile(r"seed_row\(\s*\"(\d{3}-\d{3})\"")


def _marked_rows() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        found |= set(MARK.findall(path.read_text(encoding="utf-8")))
    return found


def test_grades_follow_the_outcomes() -> None:
    rows = [{"id": f"009-00{i}", "before": "✗"} for i in range(1, 7)]
    results = {
        "009-001": [("t::a", "passed", None, None), ("t::b", "passed", None, None)],
        "009-002": [("t::c", "passed", "docs/agent.md#coming-from-selectools", None)],
        "009-003": [("t::d", "passed", None, None), ("t::e", "failed", None, None)],
        "009-004": [("t::f", "xfailed", None, None)],
        "009-006": [("t::g", "passed", None, "no create_agent tool")],
    }
    graded = grade_rows(rows, results)
    assert graded["009-001"] == ("✓", ["a", "b"], None)
    assert graded["009-002"][0] == "~"
    assert graded["009-002"][2] == "docs/agent.md#coming-from-selectools"
    assert graded["009-003"][0] == "✗"
    assert graded["009-004"][0] == "✗"
    assert graded["009-005"] == ("✗", [], None)
    # a passing test that asserts a feature is absent grades the row ✗, saying why
    assert graded["009-006"] == ("✗", ["g"], "missing: no create_agent tool")
    text = render(
        {
            "measured_on": "x",
            "seeds": {"009": "s"},
            "rows": [{"id": "009-006", "feature": "f", "before": "✗"}],
        },
        {"009-006": graded["009-006"]},
    )
    assert "| 009-006 | f | ✗ | ✗ | `g` (missing: no create_agent tool) |" in text


def test_the_rendered_table_counts_before_and_now() -> None:
    table = {
        "measured_on": "an old commit",
        "seeds": {"009": "a seed"},
        "rows": [
            {"id": "009-001", "feature": "a | b", "before": "✗"},
            {"id": "009-002", "feature": "c", "before": "~"},
        ],
    }
    graded = {"009-001": ("✓", ["t"], None), "009-002": ("~", ["u"], "docs/agent.md#x")}
    text = render(table, graded)
    assert "| 009 a seed | 2 | 0 / 1 / 1 | 1 / 1 / 0 |" in text
    assert "| 009-001 | a \\| b | ✗ | ✓ | `t` |" in text
    assert "([the trails way](agent.md#x))" in text


def test_every_mark_names_a_row_of_the_table() -> None:
    ids = {row["id"] for row in load_rows()["rows"]}
    unknown = _marked_rows() - ids
    assert not unknown, f"seed_row marks naming no row: {sorted(unknown)}"


def test_every_row_has_a_test() -> None:
    ids = {row["id"] for row in load_rows()["rows"]}
    untested = sorted(ids - _marked_rows())
    assert not untested, f"{len(untested)} row(s) with no test: {untested[:20]}"


def test_the_published_table_lists_every_row() -> None:
    published = (ROOT / "docs" / "seeds.md").read_text(encoding="utf-8")
    for row in load_rows()["rows"]:
        assert f"| {row['id']} |" in published, row["id"]


def test_differs_links_name_a_section_that_exists() -> None:
    for path in (ROOT / "tests").rglob("test_*.py"):
        for doc, anchor in re.findall(r'differs="(docs/[\w./-]+)#([\w-]+)"', path.read_text()):
            text = Path(ROOT / doc).read_text(encoding="utf-8")
            slugs = {
                re.sub(r"[^\w\- ]", "", h.strip("# ").lower()).replace(" ", "-")
                for h in text.splitlines()
                if h.startswith("#")
            }
            assert anchor in slugs, f"{path.name}: {doc}#{anchor} names no heading"
