"""The Controls page and every console page in a real Chromium against a real ``trails serve``.

The four-session store of the console's tests, checked once with the example controls
(``trails controls check``: session A fails a call, session D names no domain, the others
pass), is served; one Chromium drives it. The auditor reads controls x outcomes, the
trend per day, drills down to the sessions and subjects at fault and finds each finding
on its session's page; bob's token sees none of alice's or carol's findings. Every page
then passes axe-core (no serious or critical violation), is used by keyboard alone,
prints without its navigation, and its screenshot in docs/console.md is checked (written
again with TRAILS_WRITE_SCREENSHOTS=1).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from tests.console.conftest import (
    CHROMIUM,
    ROOT,
    TRAILS,
    Served,
    environment,
    log_in,
    record,
    serving,
)

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason="needs Debian's Chromium: apt-get install chromium chromium-driver",
)

EXAMPLE = ROOT / "tests" / "controls" / "example"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The store recorded, its sessions checked by the example controls, then served."""
    home = tmp_path_factory.mktemp("console-controls")
    sessions = record(home)
    checked = subprocess.run(
        [TRAILS, "--store", "store", "controls", "check", "--no-builtin", "--dir", str(EXAMPLE)],
        cwd=home,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 1, checked.stdout + checked.stderr  # violations found
    assert "VIOLATED" in checked.stdout and "passed" in checked.stdout
    with serving(home) as url:
        yield Served(url, home / "store", sessions, home)


def _cells(page: Any, control: str) -> dict[str, str]:
    row = page.locator(f"table.controls tr[data-control='{control}']")
    return {
        name: row.locator(f"td.{name}").inner_text()
        for name in ("passed", "violated", "failed", "not-evaluated")
    }


def test_controls_page_outcomes_trend_and_drill_down(served: Served, browser: Any) -> None:
    page = log_in(browser, served, "auditor")
    a, d = served.sessions["A"], served.sessions["D"]
    page.get_by_role("link", name="Controls", exact=True).click()
    page.wait_for_url("**/console/controls")
    assert "4 session(s)" in page.locator("p.totals").inner_text()
    assert _cells(page, "failed-call") == {
        "passed": "3",
        "violated": "1",
        "failed": "0",
        "not-evaluated": "0",
    }
    assert _cells(page, "labelled-session")["violated"] == "1"
    assert _cells(page, "unsealed-session")["not-evaluated"] == "—"  # a store-wide control
    # the trend: one row per day of session start, violations on A's and D's days
    days = page.locator("table.days tbody tr").all_inner_texts()
    assert len(days) == 4
    assert page.locator("figure.trend svg").count() == 1
    # drill down to one control: its session and subject at fault
    page.locator("table.controls a", has_text="failed-call").click()
    page.wait_for_url("**control=failed-call**")
    rows = page.locator("table.findings tbody tr")
    assert rows.count() == 1
    trend = page.locator("table.days tbody tr").all_inner_texts()
    assert "2025-03-01\t0\t1" in trend and "2025-03-04\t1\t0" in trend  # its own trend
    assert rows.first.locator("a.session").inner_text() == a
    assert rows.first.locator("td.subject").inner_text().startswith("urn:trails:")
    # the finding on its session's page
    rows.first.locator("a.session").click()
    page.wait_for_selector("#controls")
    found = page.locator("table.session-controls tr.outcome-violated")
    assert found.count() == 1 and "failed-call" in found.inner_text()
    assert page.locator("table.session-controls tr.outcome-passed").count() >= 1
    # a period without sessions: nothing at fault
    page.goto(served.url + "/console/controls?from=2025-03-02&to=2025-03-03")
    assert "2 session(s)" in page.locator("p.totals").inner_text()
    assert page.locator("table.findings").count() == 0
    page.goto(served.url + "/console/controls?from=2025-99-01")
    assert "not a date" in page.content()
    # all findings: A's and D's
    page.goto(served.url + "/console/controls")
    sessions = set(page.locator("table.findings a.session").all_inner_texts())
    assert sessions == {a, d}
    page.close()


def test_a_scoped_token_sees_only_its_findings(served: Served, browser: Any) -> None:
    page = log_in(browser, served, "bob")
    page.goto(served.url + "/console/controls")
    assert "1 session(s)" in page.locator("p.totals").inner_text()
    assert page.locator("table.findings").count() == 0
    html = page.content()
    assert served.sessions["A"] not in html and served.sessions["D"] not in html
    assert "unsealed-session" not in html  # a store-wide outcome is not bob's
    page.goto(served.url + "/console/session?s=" + quote(served.sessions["A"], safe=""))
    assert "failed-call" not in page.content()
    page.close()


# -- accessible: axe-core on every page, the keyboard, print --------------------------

AXE = Path(__file__).with_name("axe") / "axe.min.js"


def pages_of(served: Served) -> dict[str, str]:
    """Every console page (a logged-in auditor's), by the name of its screenshot."""
    a = quote(served.sessions["A"], safe="")
    c = quote(served.sessions["C"], safe="")
    return {
        "sessions": "/console/",
        "session": f"/console/session?s={a}",
        "search": "/console/search?q=polished",
        "queries": "/console/queries?name=control-findings&run=1",
        "sparql": "/console/sparql",
        "diff": f"/console/diff?a={a}&b={c}",
        "verify": "/console/verify",
        "compliance": "/console/compliance",
        "charts": "/console/charts",
        "controls": "/console/controls",
        "controls-drill-down": "/console/controls?control=failed-call",
    }


def serious(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page, one line each."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    found = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
        ".map(v => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 3)"
        ".map(n => n.target.join(' ')).join(', '))"
    )
    return list(found)


def test_every_page_passes_axe(served: Served, browser: Any) -> None:
    page = log_in(browser, served, "auditor")
    found: dict[str, list[str]] = {}
    for name, path in pages_of(served).items():
        page.goto(served.url + path)
        found[name] = serious(page)
    # a step opened in its side panel, the step's own page, an error page
    page.goto(served.url + pages_of(served)["session"])
    page.locator("a.open-step").first.click()
    page.wait_for_selector("#step-panel:not([hidden]) h2")
    found["step panel"] = serious(page)
    page.goto(served.url + page.locator("a.open-step").first.get_attribute("href"))
    found["step"] = serious(page)
    page.goto(served.url + "/console/session?s=urn:trails:session:none")
    found["error"] = serious(page)
    browser.clear_cookies()
    page.goto(served.url + "/console/")
    found["login"] = serious(page)
    bad = [f"{k}: {line}" for k, v in found.items() for line in v]
    assert not bad, "\n".join(bad)
    page.close()


def _focused(page: Any) -> dict[str, str]:
    return dict(
        page.evaluate(
            "() => { const e = document.activeElement, s = getComputedStyle(e);"
            " return {tag: e.tagName, text: e.innerText || '', href: e.getAttribute('href') || '',"
            " outline: s.outlineStyle, width: s.outlineWidth, type: e.type || '', focus: String(e.matches(':focus')), sheets: String(document.styleSheets[0].cssRules.length), top: String(e.getBoundingClientRect().top)} }"
        )
    )


def test_the_keyboard_alone_reaches_and_opens(served: Served, browser: Any) -> None:
    page = log_in(browser, served, "auditor")
    page.bring_to_front()  # the focused window: :focus holds as a person's would
    page.goto(served.url + "/console/controls")
    # the first Tab: a visible link past the navigation; Enter moves the focus to the page
    page.keyboard.press("Tab")
    first = _focused(page)
    assert first["href"] == "#main" and float(first["top"]) >= 0
    assert first["outline"] != "none" and first["width"] != "0px"
    page.keyboard.press("Enter")
    assert _focused(page)["tag"] == "MAIN"
    # on, by Tab alone, to the first control's link; each stop shows where it is
    for _ in range(20):
        page.keyboard.press("Tab")
        now = _focused(page)
        assert now["outline"] != "none", str(now)
        if "control=" in now["href"]:
            break
    else:
        raise AssertionError("no control link reached by Tab")
    page.keyboard.press("Enter")
    page.wait_for_url("**control=**")
    assert page.locator("table.findings tbody tr").count() >= 1
    # a form's button pressed by keyboard: the period's "Show" (Space on a button)
    page.goto(served.url + "/console/controls")
    page.locator("input[name=from]").focus()
    page.keyboard.type("2025-03-02")
    page.locator("form.period button").focus()
    page.keyboard.press("Space")
    page.wait_for_url("**from=2025-03-02**")
    assert "3 session(s)" in page.locator("p.totals").inner_text()
    page.close()


def test_pages_print_without_the_navigation(served: Served, browser: Any) -> None:
    page = log_in(browser, served, "auditor")
    page.goto(served.url + pages_of(served)["session"])
    assert page.locator("header nav").is_visible()
    page.emulate_media(media="print")
    assert not page.locator("header nav").is_visible()
    assert not page.locator("form.who").is_visible()
    keep = page.evaluate(
        "() => { const r = document.querySelector('table tbody tr');"
        " const h = document.querySelector('table thead');"
        " return [getComputedStyle(r).breakInside, getComputedStyle(h).display] }"
    )
    assert keep == ["avoid", "table-header-group"]  # rows whole, headings on each page
    whole = page.evaluate(
        "() => [...document.querySelectorAll('main table')].map(t => {"
        " const s = getComputedStyle(t); return s.display + ' ' + s.overflowX })"
    )
    assert whole and set(whole) == {"table visible"}  # no table scrolls (cut) on paper
    pdf = page.pdf(format="A4")
    assert pdf.startswith(b"%PDF") and len(pdf) > 10_000
    page.goto(served.url + "/console/controls")
    assert not page.locator("header nav").is_visible()
    assert page.locator("table.controls").is_visible()
    page.emulate_media(media="screen")
    page.close()


# -- the screenshots in docs/console.md ------------------------------------------------

SHOTS = ROOT / "docs" / "images" / "console"
SIZE = (1024, 640)  # each picture is one screenful of this window


def _png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height from its IHDR chunk (after checking the signature)."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def test_the_docs_show_each_page(served: Served, browser: Any) -> None:
    """docs/console.md shows a screenshot of every page; TRAILS_WRITE_SCREENSHOTS=1 writes
    them again from the running console, otherwise each is checked to be there, a PNG of
    one screenful, and small."""
    names = [*pages_of(served), "step-panel"]
    doc = (ROOT / "docs" / "console.md").read_text(encoding="utf-8")
    for name in names:
        assert f"](images/console/{name}.png)" in doc, name
    if os.environ.get("TRAILS_WRITE_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        page = log_in(browser, served, "auditor")
        page.set_viewport_size({"width": SIZE[0], "height": SIZE[1]})
        for name, path in pages_of(served).items():
            page.goto(served.url + path + ("#findings" if "control=" in path else ""))
            page.screenshot(path=str(SHOTS / f"{name}.png"), type="png")
        page.goto(served.url + pages_of(served)["session"])
        page.locator("a.open-step").nth(1).click()
        page.wait_for_selector("#step-panel:not([hidden]) h2")
        page.screenshot(path=str(SHOTS / "step-panel.png"), type="png")
        page.close()
    for name in names:
        path = SHOTS / f"{name}.png"
        assert path.is_file(), f"{path} missing: run with TRAILS_WRITE_SCREENSHOTS=1"
        assert _png_size(path) == SIZE, name
        assert path.stat().st_size < 150_000, name
