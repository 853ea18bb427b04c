"""The web console in a real headless Chromium against a real ``trails serve``.

An auditor logs in with a token, lists and filters the sessions, opens one,
reads a call's input beside its output, sees the provenance graph drawn (an SVG with the expected
nodes), searches a word of a completion, runs a pack query with a hostile
parameter, starts a verification, and downloads a bundle that
``trails verify --bundle`` accepts. Bob's token (his own sessions only) sees
none of alice's sessions anywhere: not in the list, the search, a session
page, its graph or its downloads. The pictures docs/console.md shows are taken
by ``test_console_pages.py``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from tests.console.conftest import CHROMIUM, TRAILS, Served, log_in, shot

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason="needs Debian's Chromium: apt-get install chromium chromium-driver",
)


def session_rows(page: Any) -> list[str]:
    """The session links of the sessions table, top to bottom."""
    return [a.get_attribute("href") for a in page.locator("table.sessions td a").all()]


def test_an_auditor_browses_filters_opens_and_checks(
    served: Served, browser: Any, tmp_path: Path
) -> None:
    page = log_in(browser, served, "auditor")
    a, b, c, d = (served.sessions[k] for k in "ABCD")
    # newest first: D (day 4), C, B, A
    assert session_rows(page) == [f"/console/session?s={quote(s, safe='')}" for s in (d, c, b, a)]
    totals = page.locator("p.totals").inner_text()
    assert totals.startswith("4 session(s)")
    shot(page, "sessions")
    # filters: status, then principal (the totals follow the filter)
    page.select_option("select[name=status]", "failed")
    page.click("form.filters button")
    assert session_rows(page) == [f"/console/session?s={quote(b, safe='')}"]
    assert page.locator("p.totals").inner_text().startswith("1 session(s) · 0.5 USD")
    page.goto(served.url + "/console/?principal=" + quote("did:local:alice"))
    assert sorted(session_rows(page)) == sorted(
        f"/console/session?s={quote(s, safe='')}" for s in (a, c)
    )
    # open A: each call's input shown beside its output, the graph drawn with its nodes
    page.goto(served.url + "/console/")
    page.locator("table.sessions td a").last.click()
    page.wait_for_selector("svg.prov-graph")
    pair = page.locator(".io-pair", has_text="quarterly figures").first
    assert pair.locator("section.in pre").is_visible()
    assert pair.locator("section.out pre").inner_text() == "result for quarterly figures"
    kinds = {n.get_attribute("data-kind") for n in page.locator("svg.prov-graph g.node").all()}
    assert kinds == {"activity", "entity", "agent"}
    labels = page.locator("svg.prov-graph g.node title").all_text_contents()
    assert any(t.startswith("agent: did:local:alice\n") for t in labels)
    assert any(a in t for t in labels)  # the session itself is an activity of its graph
    relations = {
        e.get_attribute("data-relation") for e in page.locator("svg.prov-graph path.edge").all()
    }
    assert {"used", "wasGeneratedBy", "wasAssociatedWith", "wasInformedBy"} <= relations
    assert page.locator("svg.timeline g.bar").count() >= 5
    shot(page, "session")
    # search a word of a completion: the hit links into A
    page.goto(served.url + "/console/search?q=polished")
    hits = page.locator("ol.hits li")
    assert hits.count() >= 1
    assert hits.first.locator("a").inner_text() == a
    assert hits.first.locator("mark").first.inner_text().lower() == "polished"
    shot(page, "search")
    # a pack query with a hostile parameter: refused as a value, nothing spliced, no rows
    hostile = "x> } UNION { GRAPH ?g { ?s ?p ?o } } #"
    page.goto(served.url + "/console/queries?name=sessions&run=1&principal=" + quote(hostile))
    assert page.locator("p.error").count() == 1
    assert page.locator("table.results").count() == 0
    page.goto(served.url + "/console/queries?name=sessions&run=1&status=" + quote('ok" } #'))
    assert "0 row(s)" in page.locator("main").inner_text()
    page.goto(served.url + "/console/queries?name=sessions")
    page.fill("input[name=status]", "error")
    page.click("button[name=run]")
    assert page.locator("table.results tbody tr").count() == 1
    shot(page, "queries")
    # verification, started from its form
    page.goto(served.url + "/console/verify")
    page.click("form[action='/console/verify'] button")
    verdict = page.locator("p.verdict").inner_text()
    assert "graph(s) checked" in verdict
    shot(page, "verify")
    page.goto(served.url + "/console/compliance")
    assert page.locator("h2", has_text="The Article 12 map").count() == 1
    assert "row(s)" in page.locator("main").inner_text()
    shot(page, "compliance")
    page.goto(served.url + "/console/charts")
    assert page.locator("svg.chart").count() == 6
    # one bar per day the four sessions started on; A's 0.065 USD on its day
    per_day = page.locator("svg.chart").first.locator("g.bar title").all_text_contents()
    assert [t.split(":")[0] for t in per_day] == [
        "2025-03-01",
        "2025-03-02",
        "2025-03-03",
        "2025-03-04",
    ]
    assert per_day[0] == "2025-03-01: 0.065 USD"
    refusals = page.locator("svg.chart").last.locator("g.bar title").all_text_contents()
    assert refusals == ["2025-03-01: 1"]  # pay, denied by policy in A
    shot(page, "charts")
    # the bundle of A, downloaded from its page, verifies offline
    page.goto(served.url + "/console/session?s=" + quote(a, safe=""))
    with page.expect_download() as download:
        page.click("text=evidence bundle")
    bundle = tmp_path / "a.zip"
    download.value.save_as(bundle)
    checked = subprocess.run(
        [TRAILS, "verify", "--bundle", str(bundle)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    page.close()


def test_a_token_without_the_grant_sees_no_other_session_anywhere(
    served: Served, browser: Any
) -> None:
    page = log_in(browser, served, "bob")
    a, b = served.sessions["A"], served.sessions["B"]
    assert session_rows(page) == [f"/console/session?s={quote(b, safe='')}"]
    assert page.locator("p.totals").inner_text().startswith("1 session(s) · 0.5 USD")
    body = page.content()
    assert "did:local:alice" not in body and a not in body
    # alice's session: not its page, its graph, nor any download
    for path in (
        "/console/session?s=" + quote(a, safe=""),
        *(
            f"/console/download?format={f}&s=" + quote(a, safe="")
            for f in ("html", "trig", "provn", "bundle")
        ),
    ):
        response = page.goto(served.url + path)
        assert response is not None and response.status == 404, path
        assert "polished" not in page.content() and "did:local:alice" not in page.content()
    # nor the search
    page.goto(served.url + "/console/search?q=polished")
    assert page.locator("ol.hits li").count() == 0
    page.goto(served.url + "/console/search?q=" + quote(a))
    assert page.locator("ol.hits li").count() == 0
    # nor its own SPARQL: the graphs it reads are bob's
    page.goto(served.url + "/console/sparql")
    page.fill("textarea[name=query]", "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
    page.click("form[action='/console/sparql'] button")
    graphs = page.locator("table.results tbody td").all_inner_texts()
    assert graphs and all(g.startswith(b) for g in graphs)
    shot(page, "sparql")
    # the charts count bob's session alone
    page.goto(served.url + "/console/charts")
    assert "alice" not in page.content()
    # his own session opens, with its graph
    page.goto(served.url + "/console/session?s=" + quote(b, safe=""))
    titles = page.locator("svg.prov-graph g.node title").all_text_contents()
    assert any(t.startswith("agent: did:local:bob\n") for t in titles)
    assert not any("alice" in t for t in titles)
    page.close()
