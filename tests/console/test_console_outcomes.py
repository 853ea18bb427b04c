"""A failed run reads "failed" on the console, over real HTTP and in a real Chromium.

The store holds three ReAct sessions recorded by a process of their own
(``tests.catalogue.record_outcomes``): one whose provider failed ("provider down": the
session itself ended ``ok``), one that reached its goal, one stopped by its step
limit. A real ``trails serve`` serves it; the sessions list shows each outcome and
why, the status filter finds the failed one by ``failed`` and by ``error``, and the
failures chart counts it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from tests.console.conftest import (
    CHROMIUM,
    ROOT,
    TOKENS,
    TRAILS,
    Served,
    environment,
    log_in,
    serving,
)

from trails.server.auth import token_entry


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("outcomes")
    done = subprocess.run(
        [sys.executable, "-m", "tests.catalogue.record_outcomes", str(home / "store")],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    sessions = {line.split()[0]: line.split()[1] for line in done.stdout.splitlines() if line}
    checked = subprocess.run(  # a checkpoint: the transparency log gets its first tree head
        [TRAILS, "--store", "store", "verify"],
        cwd=home,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    held = subprocess.run(  # a legal hold on the failed session: the compliance page lists it
        [TRAILS, "--store", "store", "hold", "add", sessions["failed"], "--reason", "case 46"],
        cwd=home,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert held.returncode == 0, held.stderr
    (home / "tokens.toml").write_text(
        token_entry(TOKENS["auditor"], "did:example:auditor", ["*"], audit=True)
    )
    with serving(home) as url:
        yield Served(url, home / "store", sessions, home)


def logged_in(served: Served) -> httpx.Client:
    client = httpx.Client(base_url=served.url, timeout=60)
    done = client.post("/console/login", data={"token": TOKENS["auditor"]})
    assert done.status_code == 303, done.text
    return client


def listed(client: httpx.Client, query: str = "") -> dict[str, str]:
    """The sessions page's rows: each session's outcome badge."""
    import re

    page = client.get("/console/" + query)
    assert page.status_code == 200, page.text
    found = re.findall(
        r'href="/console/session\?s=([^"]+)">.*?<span class="badge s-(\w+)"', page.text, re.S
    )
    return {s.replace("%3A", ":"): badge for s, badge in found}


def test_the_list_the_filter_and_the_chart_say_failed(outcomes: Served) -> None:
    s = outcomes.sessions
    client = logged_in(outcomes)
    try:
        assert listed(client) == {s["failed"]: "failed", s["ok"]: "ok", s["stopped"]: "stopped"}
        page = client.get("/console/").text
        assert "a run stopped: error: provider down" in page
        for status in ("failed", "error"):
            assert listed(client, f"?status={status}") == {s["failed"]: "failed"}
        assert listed(client, "?status=ok") == {s["ok"]: "ok"}
        assert listed(client, "?status=interrupted") == {}
        charts = client.get("/console/charts").text
        assert "Sessions failed or interrupted per day" in charts
        day = charts.split("Sessions failed or interrupted per day", 1)[1]
        assert ": 1</title>" in day.split("</svg>", 1)[0]
        # the session page says the same as the list
        one = client.get("/console/session?s=" + quote(s["failed"], safe=""))
        assert '<span class="badge s-failed">failed</span>' in one.text
    finally:
        client.close()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's Chromium")
def test_an_auditor_sees_and_filters_the_failed_run_in_chromium(
    outcomes: Served, browser: Any
) -> None:
    s = outcomes.sessions
    page = log_in(browser, outcomes, "auditor")
    rows = page.locator("table.sessions tbody tr")
    assert rows.count() == 3
    failed = page.locator("table.sessions tbody tr", has_text=s["failed"].rsplit(":", 1)[1])
    assert failed.locator(".badge").inner_text() == "failed"
    assert "provider down" in failed.locator("small.why").inner_text()
    page.select_option("select[name=status]", "failed")
    page.click("form.filters button")
    assert page.locator("table.sessions tbody tr").count() == 1
    assert page.locator("table.sessions .badge").inner_text() == "failed"
    assert page.locator("p.totals").inner_text().startswith("1 session(s)")


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's Chromium")
def test_the_verify_page_says_which_head_is_whose(outcomes: Served, browser: Any) -> None:
    page = log_in(browser, outcomes, "auditor")
    page.goto(outcomes.url + "/console/verify")
    log_head = page.locator("p.head").inner_text()
    assert log_head.startswith("The transparency log's tree head") and "3 seal(s)" in log_head
    page.click("form button[type=submit] >> text=Verify")
    ledger = page.locator("p.ledger-heads").inner_text()
    assert ledger.startswith("The ledger's head") and "trails verify --expect-head" in ledger


def test_compliance_tables_have_human_headers_and_linked_sessions(outcomes: Served) -> None:
    client = logged_in(outcomes)
    try:
        page = client.get("/console/compliance").text
    finally:
        client.close()
    holds = page.split("<h2>Legal holds</h2>", 1)[1].split("</table>", 1)[0]
    assert "<th>Held session</th>" in holds and "<th>Placed at</th>" in holds
    assert "heldSession" not in holds and "placedAt" not in holds
    failed = outcomes.sessions["failed"]
    assert f'<a href="/console/session?s={quote(failed, safe="")}">{failed}</a>' in holds


def test_a_chart_has_axes_and_a_zero_series_takes_one_line() -> None:
    from xml.etree import ElementTree

    from trails.server.console.svg import bar_chart

    drawn = ElementTree.fromstring(bar_chart("calls", [("a", 2.0), ("b", 4.0)]))
    svg = "{http://www.w3.org/2000/svg}"
    assert len(list(drawn.iter(svg + "line"))) == 2  # the value axis and the baseline
    assert [t.text for t in drawn.iter(svg + "text")][:2] == ["4", "0"]
    zero = ElementTree.fromstring(bar_chart("failures", [("a", 0.0), ("b", 0.0)]))
    assert zero.get("height") == "24" and not list(zero.iter(svg + "rect"))
    assert [t.text for t in zero.iter(svg + "text")] == ["none: 0 in each of 2"]


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's Chromium")
def test_charts_read_in_chromium_titled_above_with_axes(outcomes: Served, browser: Any) -> None:
    page = log_in(browser, outcomes, "auditor")
    page.goto(outcomes.url + "/console/charts")
    figures = page.locator("div.charts figure")
    assert figures.count() == 6
    for i in range(figures.count()):
        caption = figures.nth(i).locator("figcaption").bounding_box()
        picture = figures.nth(i).locator("svg").bounding_box()
        assert caption["y"] + caption["height"] <= picture["y"] + 1  # the title above its plot
    calls = figures.filter(has_text="LLM calls per day").locator("svg")
    assert calls.locator("g.axes line").count() == 2  # the value axis and the baseline
    assert calls.bounding_box()["height"] > 100
    # no session was refused by a policy: a series of zeros is one line
    refusals = figures.filter(has_text="Policy refusals per day").locator("svg")
    assert refusals.bounding_box()["height"] <= 30
    said = refusals.locator("text").text_content() or ""
    assert said == "nothing recorded" or said.startswith("none: 0 in each of")


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's Chromium")
def test_a_held_session_opens_from_the_compliance_page(outcomes: Served, browser: Any) -> None:
    page = log_in(browser, outcomes, "auditor")
    page.goto(outcomes.url + "/console/compliance")
    holds = page.locator("h2:text-is('Legal holds') + table")
    headers = holds.locator("th").all_inner_texts()
    assert "Held session" in headers and all(h[:1].isupper() for h in headers)
    holds.locator("a", has_text=outcomes.sessions["failed"]).click()
    page.wait_for_url("**/console/session?s=*")
    assert page.locator("p.iri code").inner_text() == outcomes.sessions["failed"]
    assert page.locator("main p .badge").first.inner_text() == "failed"
