"""A session's conversation and its steps, in a real Chromium against a real ``trails serve``.

Session A of ``tests/known_store.py``: a ReAct run whose completions were prompted
``prompt for c0`` ... and answered ``{"action": "search"}`` ..., a ``search`` call with
its input and output, a ``send_email`` call whose handler made a nested completion.
The session page shows each prompt as chat turns beside its completion, each call's
input beside its output, and tokens, cost and latency on the steps; "Details" opens a
step in a side panel (its figures, the session's seal, each value's evidence, its
lineage) without leaving the page, by keyboard as by mouse: focus moves into the
panel, Escape closes it and gives focus back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from tests.console.conftest import CHROMIUM, TOKENS, Served, log_in

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's Chromium")


@pytest.fixture(scope="module")
def page(served: Served, browser: Any) -> Any:
    page = log_in(browser, served, "auditor")
    page.goto(served.url + "/console/session?s=" + quote(served.sessions["A"], safe=""))
    return page


def _step(page: Any, text: str) -> Any:
    """The tree's item of the first step whose heading line holds ``text``."""
    return page.locator("ul.tree li", has=page.locator(f"div.act:has-text('{text}')")).last


def test_the_page_says_what_the_session_was_about(page: Any) -> None:
    about = page.locator("dl.about")
    assert about.locator("dd.goal").inner_text() == "email the summary"
    assert about.locator("dd.answer").inner_text() == "the summary was sent"
    assert about.locator("dd.when").inner_text() == "2025-03-01 10:00:00.000 UTC"
    assert about.locator("dd.tokens").inner_text() == "450 in, 100 out"
    assert about.locator("dd.cost").inner_text() == "0.065000 USD"
    assert about.locator("dd.duration").inner_text().endswith(("s", "min"))


def test_prompts_read_as_chat_turns_beside_their_completion(page: Any) -> None:
    first = page.locator(".conversation").first
    turns = first.locator("section.prompt ol.chat > li")
    assert turns.count() == 1
    assert turns.first.locator(".role").inner_text().lower() == "user"
    assert turns.first.locator(".said").inner_text() == "prompt for c0"
    assert first.locator("section.reply .said").inner_text() == "action: search"
    # side by side: the completion starts level with the prompt, to its right
    prompt = first.locator("section.prompt").bounding_box()
    reply = first.locator("section.reply").bounding_box()
    assert reply["x"] > prompt["x"] + prompt["width"] - 1 and abs(reply["y"] - prompt["y"]) < 2
    assert "{&quot;messages" not in page.content() and '{"messages"' not in page.content()


def test_a_calls_input_sits_beside_its_output(page: Any) -> None:
    pair = _step(page, "invoke send_email").locator(".io-pair").first
    inside = pair.locator("section.in pre").inner_text()
    out = pair.locator("section.out pre").inner_text()
    assert "to: cfo@example.com" in inside and "body: hi" in inside
    assert out == "sent to cfo@example.com"
    left, right = (
        pair.locator("section.in").bounding_box(),
        pair.locator("section.out").bounding_box(),
    )
    assert right["x"] > left["x"] + left["width"] - 1 and abs(right["y"] - left["y"]) < 2


def test_every_step_shows_its_figures(page: Any) -> None:
    c0 = page.locator("div.act:has-text('claude-sonnet')").first
    assert c0.locator(".tokens").inner_text() == "100/20 tokens"
    assert c0.locator(".cost").inner_text() == "0.010000 USD"
    assert c0.locator(".latency").inner_text().startswith("latency ")
    # the call whose handler made a completion adds that completion's figures up
    email = page.locator("div.act:has-text('invoke send_email')").first
    assert email.locator(".tokens").inner_text() == "50/10 tokens in all"
    assert email.locator(".cost").inner_text() == "0.005000 USD in all"
    run = page.locator("div.act:has-text('react run')").first
    assert run.locator(".tokens").inner_text() == "450/100 tokens in all"  # the whole run
    assert run.locator(".cost").inner_text() == "0.065000 USD in all"


def test_a_step_opens_in_a_side_panel_by_keyboard_and_closes_with_escape(
    served: Served, page: Any
) -> None:
    url = page.url
    details = page.locator("div.act:has-text('invoke search') a.open-step").first
    details.focus()
    page.keyboard.press("Enter")
    panel = page.locator("#step-panel")
    panel.locator("#step-title").wait_for()
    assert page.url == url  # the page stayed
    assert panel.is_visible() and panel.get_attribute("role") == "dialog"
    assert page.evaluate("document.activeElement.id") == "step-title"  # focus moved in
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
    page.locator("#step-title:text-is('react run')").wait_for()
    assert page.url == url
    page.keyboard.press("Escape")
    assert panel.is_hidden()
    assert page.evaluate("document.activeElement.textContent").startswith("Details")
    assert page.evaluate("document.activeElement.getAttribute('href')") == details.get_attribute(
        "href"
    )


def test_a_step_has_a_page_of_its_own_within_the_grant(served: Served, page: Any) -> None:
    href = page.locator("div.act:has-text('invoke search') a.open-step").first.get_attribute("href")
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
