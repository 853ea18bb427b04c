"""What each session was about, in a real Chromium against a real ``trails serve``.

The four-session store of ``tests/known_store.py`` (A: "email the summary", answered
"the summary was sent"; B: "triage the inbox", stopped by its budget; C: "follow up
with the CFO", stopped at its step limit; D: "crash", never ended). The sessions list
shows each one's goal, answer, duration, tokens and cost, its times on one line; its
text filter finds a word of a goal or an answer; a column's heading sorts by it; the
outcome, stop reason, cost and duration filters narrow it. Search groups its hits by
session, says what each hit is and shows it as text, not as escaped JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.console.conftest import CHROMIUM, Served, log_in

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's Chromium")

GOALS = {
    "A": "email the summary",
    "B": "triage the inbox",
    "C": "follow up with the CFO",
    "D": "crash",
}


@pytest.fixture(scope="module")
def page(served: Served, browser: Any) -> Any:
    return log_in(browser, served, "auditor")


def _goals(page: Any) -> list[str]:
    return [g.strip() for g in page.locator("table.sessions td.goal").all_inner_texts()]


def _keys(page: Any) -> list[str]:
    by_goal = {goal: key for key, goal in GOALS.items()}
    return [by_goal.get(g, g) for g in _goals(page)]


def test_the_list_says_what_each_session_was_about(served: Served, page: Any) -> None:
    page.goto(served.url + "/console/")
    assert _keys(page) == ["D", "C", "B", "A"]  # newest first
    a = page.locator("table.sessions tbody tr").nth(3)
    cells = [c.strip() for c in a.locator("td").all_inner_texts()]
    assert cells[0] == "2025-03-01 10:00:00"  # UTC, to the second
    assert cells[4] == "the summary was sent"  # the answer
    assert cells[11] == "0.065" and cells[12] == "450/100"  # cost, tokens in/out
    assert cells[1].endswith(("min", "s")) and cells[1] != ""  # a duration with its unit
    d = page.locator("table.sessions tbody tr").first
    assert d.locator("td").nth(1).inner_text() == "running"  # never ended
    # every time sits on one line: one line box, however narrow the window
    page.set_viewport_size({"width": 900, "height": 800})
    lines = page.eval_on_selector_all(
        "table.sessions td.time time", "ts => ts.map(t => t.getClientRects().length)"
    )
    assert lines == [1, 1, 1, 1]
    page.set_viewport_size({"width": 1200, "height": 800})


def test_the_text_filter_finds_a_word_of_a_goal_or_an_answer(served: Served, page: Any) -> None:
    page.goto(served.url + "/console/")
    page.fill("input[name=text]", "inbox")  # in B's goal only
    page.click("form.filters button[type=submit]")
    assert _keys(page) == ["B"]
    page.fill("input[name=text]", "SENT")  # in A's answer only, any case
    page.click("form.filters button[type=submit]")
    assert _keys(page) == ["A"]
    assert "filtered by text" in page.locator("p.covers").inner_text()


def test_a_columns_heading_sorts_the_list_by_it(served: Served, page: Any) -> None:
    page.goto(served.url + "/console/")
    page.click("table.sessions th >> text=Cost (USD)")
    assert _keys(page) == ["B", "A", "C", "D"]  # most first; no cost recorded last
    heading = page.locator("table.sessions th[aria-sort]")
    assert heading.inner_text().startswith("Cost") and heading.get_attribute("aria-sort") == (
        "descending"
    )
    page.click("table.sessions th >> text=Cost (USD)")
    assert _keys(page) == ["C", "A", "B", "D"]
    assert heading.get_attribute("aria-sort") == "ascending"
    page.click("table.sessions th >> text=Goal")
    assert _keys(page) == ["D", "A", "C", "B"]  # A to Z
    page.click("table.sessions th >> text=Duration")
    assert _keys(page) == ["A", "B", "C", "D"]  # longest first; an open session last
    # a sort survives a filter
    page.select_option("select[name=status]", "failed")
    page.click("form.filters button[type=submit]")
    assert _keys(page) == ["B"] and "sort=duration" in page.url


def test_outcome_stop_reason_cost_and_duration_filters(served: Served, page: Any) -> None:
    page.goto(served.url + "/console/")
    page.select_option("select[name=stop]", "max_steps")
    page.click("form.filters button[type=submit]")
    assert _keys(page) == ["C"]
    page.goto(served.url + "/console/?cost_min=0.05&cost_max=0.1")
    assert _keys(page) == ["A"]
    assert page.input_value("input[name=cost_min]") == "0.05"
    page.goto(served.url + "/console/?cost_max=0.06")
    assert _keys(page) == ["C"]  # an open session has no cost to compare
    page.goto(served.url + "/console/?duration_min=1")
    assert _keys(page) == ["C", "B", "A"]  # the ended ones
    page.goto(served.url + "/console/?duration_max=1")
    assert _keys(page) == []
    page.goto(served.url + "/console/?status=open")
    assert _keys(page) == ["D"]
    wrong = page.goto(served.url + "/console/?cost_min=lots")
    assert wrong is not None and wrong.status == 400
    assert "cost_min must be an amount of USD" in page.locator("main").inner_text()


def test_search_hits_are_grouped_typed_and_readable(served: Served, page: Any) -> None:
    page.goto(served.url + "/console/search?q=summary")
    groups = page.locator("ol.hits > li")
    assert groups.count() == 1  # every hit of A under one heading
    assert groups.first.locator("h2 a").inner_text() == served.sessions["A"]
    kinds = sorted(groups.first.locator(".badge.kind").all_inner_texts())
    assert kinds == ["answer", "goal"]
    page.goto(served.url + "/console/search?q=prompt+for")
    groups = page.locator("ol.hits > li")
    sessions = groups.locator("h2 a").all_inner_texts()
    assert len(sessions) == len(set(sessions)) >= 2  # each session once
    assert set(groups.locator(".badge.kind").all_inner_texts()) == {"prompt"}
    snippets = page.locator(".snippet").all_inner_texts()
    assert all(s.startswith("user: prompt for") for s in snippets), snippets
    assert not any("\\n" in s or '{"' in s for s in snippets)
    page.goto(served.url + "/console/search?q=quarterly")  # a call's input
    assert page.locator(".badge.kind").all_inner_texts()[0] == "tool input"
    assert page.locator(".snippet").first.inner_text().startswith("query: quarterly figures")
