"""What each session was about, in a real Chromium against a real ``trails serve``.

The four-session store of ``tests/known_store.py`` (A: "email the summary", answered
"the summary was sent"; B: "triage the inbox", stopped by its budget; C: "follow up
with the CFO", stopped at its step limit; D: "crash", never ended). The sessions list
shows each one's goal, answer, duration, tokens and cost, its times on one line; its
text filter finds a word of a goal or an answer; a column's heading sorts by it; the
outcome, stop reason, cost and duration filters narrow it. Search groups its hits by
session, says what each hit is and shows it as text, not as escaped JSON.

Session A's own page (a ReAct run whose completions were prompted ``prompt for c0`` ...
and answered ``{"action": "search"}`` ..., a ``search`` call with its input and output, a
``send_email`` call whose handler made a nested completion) says what the session was
about, shows each prompt as chat turns beside its completion, each call's input beside
its output, and tokens, cost and latency on the steps; "Details" opens a step in a side
panel (its figures, the session's seal, each value's evidence, its lineage) without
leaving the page, by keyboard as by mouse: focus moves into the panel, Escape closes it
and gives focus back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from tests.console.conftest import CHROMIUM, TOKENS, Served, log_in

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
    said = dict(
        zip(
            page.locator(".snippet").all_inner_texts(),
            page.locator(".badge.kind").all_inner_texts(),
            strict=True,
        )
    )
    assert said.get("query: quarterly figures") == "tool input"
    assert said.get("result for quarterly figures") == "tool output"


@pytest.fixture(scope="module")
def session_page(served: Served, browser: Any, page: Any) -> Any:
    """Session A's page, in a tab of its own beside the list's (``page`` logged in)."""
    tab = browser.new_page()
    tab.goto(served.url + "/console/session?s=" + quote(served.sessions["A"], safe=""))
    return tab


def _step(page: Any, text: str) -> Any:
    """The tree's item of the first step whose heading line holds ``text``."""
    return page.locator("ul.tree li", has=page.locator(f"div.act:has-text('{text}')")).last


def test_the_page_says_what_the_session_was_about(session_page: Any) -> None:
    about = session_page.locator("dl.about")
    assert about.locator("dd.goal").inner_text() == "email the summary"
    assert about.locator("dd.answer").inner_text() == "the summary was sent"
    assert about.locator("dd.when").inner_text() == "2025-03-01 10:00:00.000 UTC"
    assert about.locator("dd.tokens").inner_text() == "450 in, 100 out"
    assert about.locator("dd.cost").inner_text() == "0.065000 USD"
    assert about.locator("dd.duration").inner_text().endswith(("s", "min"))
    costs = session_page.locator("h2:text-is('Costs') + p + table th").all_inner_texts()
    assert costs[:3] == ["Model", "Calls", "Input"] and "USD" in costs  # headed in words


def test_prompts_read_as_chat_turns_beside_their_completion(session_page: Any) -> None:
    first = session_page.locator(".conversation").first
    turns = first.locator("section.prompt ol.chat > li")
    assert turns.count() == 1
    assert turns.first.locator(".role").inner_text().lower() == "user"
    assert turns.first.locator(".said").inner_text() == "prompt for c0"
    assert first.locator("section.reply .said").inner_text() == "action: search"
    # side by side: the completion starts level with the prompt, to its right
    prompt = first.locator("section.prompt").bounding_box()
    reply = first.locator("section.reply").bounding_box()
    assert reply["x"] > prompt["x"] + prompt["width"] - 1 and abs(reply["y"] - prompt["y"]) < 2
    assert (
        "{&quot;messages" not in session_page.content()
        and '{"messages"' not in session_page.content()
    )


def test_a_calls_input_sits_beside_its_output(session_page: Any) -> None:
    pair = _step(session_page, "invoke send_email").locator(".io-pair").first
    inside = pair.locator("section.in pre").inner_text()
    out = pair.locator("section.out pre").inner_text()
    assert "to: cfo@example.com" in inside and "body: hi" in inside
    assert out == "sent to cfo@example.com"
    left, right = (
        pair.locator("section.in").bounding_box(),
        pair.locator("section.out").bounding_box(),
    )
    assert right["x"] > left["x"] + left["width"] - 1 and abs(right["y"] - left["y"]) < 2


def test_every_step_shows_its_figures(session_page: Any) -> None:
    c0 = session_page.locator("div.act:has-text('claude-sonnet')").first
    assert c0.locator(".tokens").inner_text() == "100/20 tokens"
    assert c0.locator(".cost").inner_text() == "0.010000 USD"
    assert c0.locator(".latency").inner_text().startswith("latency ")
    # the call whose handler made a completion adds that completion's figures up
    email = session_page.locator("div.act:has-text('invoke send_email')").first
    assert email.locator(".tokens").inner_text() == "50/10 tokens in all"
    assert email.locator(".cost").inner_text() == "0.005000 USD in all"
    run = session_page.locator("div.act:has-text('react run')").first
    assert run.locator(".tokens").inner_text() == "450/100 tokens in all"  # the whole run
    assert run.locator(".cost").inner_text() == "0.065000 USD in all"


def test_a_step_opens_in_a_side_panel_by_keyboard_and_closes_with_escape(
    served: Served, session_page: Any
) -> None:
    url = session_page.url
    details = session_page.locator("div.act:has-text('invoke search') a.open-step").first
    details.focus()
    session_page.keyboard.press("Enter")
    panel = session_page.locator("#step-panel")
    panel.locator("#step-title").wait_for()
    assert session_page.url == url  # the page stayed
    assert panel.is_visible() and panel.get_attribute("role") == "dialog"
    assert session_page.evaluate("document.activeElement.id") == "step-title"  # focus moved in
    assert panel.locator("#step-title").inner_text() == "invoke search"
    assert panel.locator("p.seal .badge").inner_text() == "verified"
    evidence = panel.locator("section.entity")
    assert evidence.count() == 2  # its input (used) and its output (generated)
    assert set(evidence.locator(".evidence .badge").all_inner_texts()) == {"matches"}
    assert "query: quarterly figures" in evidence.first.locator("pre").inner_text()
    lineage = panel.locator("ul.lineage a").all_inner_texts()
    assert lineage == ["react run"]  # informed by the run
    # a lineage link opens that step in the same panel
    panel.locator("ul.lineage a").first.click()
    session_page.locator("#step-title:text-is('react run')").wait_for()
    assert session_page.url == url
    session_page.keyboard.press("Escape")
    assert panel.is_hidden()
    assert session_page.evaluate("document.activeElement.textContent").startswith("Details")
    assert session_page.evaluate(
        "document.activeElement.getAttribute('href')"
    ) == details.get_attribute("href")


def test_a_step_has_a_page_of_its_own_within_the_grant(served: Served, session_page: Any) -> None:
    href = session_page.locator(
        "div.act:has-text('invoke search') a.open-step"
    ).first.get_attribute("href")
    with httpx.Client(base_url=served.url, timeout=60) as client:
        client.post("/console/login", data={"token": TOKENS["auditor"]})
        whole = client.get(href)
        assert whole.status_code == 200 and "<h1>A step of the session</h1>" in whole.text
        alone = client.get(href + "&part=panel")
        assert alone.status_code == 200 and "<html" not in alone.text
        assert '<h2 id="step-title"' in alone.text
        other = quote(served.sessions["B"], safe="")
        wrong = client.get(href.split("?")[0] + f"?s={other}&" + href.split("&", 1)[1])
        assert wrong.status_code == 404  # a step of A is no step of B
    with httpx.Client(base_url=served.url, timeout=60) as client:
        client.post("/console/login", data={"token": TOKENS["bob"]})
        assert client.get(href).status_code == 404  # A is alice's: bob reads none of it
