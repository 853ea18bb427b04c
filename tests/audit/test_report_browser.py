"""The HTML report in a real headless Chromium: what happened is there to read, and it prints.

Driven by Playwright against Debian's ``chromium`` (never a browser Playwright
downloads). Each invocation's input and output sit collapsed under its line of
the timeline and open on a click; redaction rules hide what they name; times
read to the millisecond and costs in USD; printed to PDF, the inputs and
outputs are on the page (prompts only by their size).
"""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.known_store import Fixture

from trails.audit.export import Redaction, RedactionRule
from trails.audit.report import write_report

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason="needs Debian's Chromium: apt-get install chromium chromium-driver",
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def activity(page: Any, label: str) -> Any:
    """The ``<li>`` of the first activity labelled ``label`` (not one of its ancestors)."""
    return page.locator(
        f"xpath=//li[div[@class='act']/span[@class='label' and text()='{label}']]"
    ).first


def test_the_report_in_a_browser_shows_inputs_and_outputs_and_prints(
    fx: Fixture, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright
    from pypdf import PdfReader

    redaction = Redaction((RedactionRule("hash", (), ("send_email",)),))
    page_file = write_report(
        fx.store, fx.sessions["A"], tmp_path / "report.html", redaction=redaction
    )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),  # a fresh --user-data-dir
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
        )
        try:
            page = browser.new_page()
            page.goto(page_file.as_uri())
            search = activity(page, "invoke search")
            output = search.locator("details.io", has_text="Output").first
            value = output.locator("pre")
            # collapsed by default, open on a click
            assert output.get_attribute("open") is None and not value.is_visible()
            output.locator("summary").click()
            assert value.is_visible() and "result for quarterly figures" in value.inner_text()
            inputs = search.locator("details.io", has_text="Input").first
            inputs.locator("summary").click()
            assert '"query": "quarterly figures"' in inputs.locator("pre").inner_text()
            # the redaction rule for send_email shows its input as a hash, never the text
            send = activity(page, "invoke send_email")
            hidden = send.locator("details.io", has_text="Input").first
            hidden.locator("summary").click()
            assert "redacted" in hidden.locator("summary").inner_text()
            assert re.fullmatch(r"sha256:[0-9a-f]{64}", hidden.locator("pre").inner_text())
            assert "cfo@example.com" not in page.content()
            # times to the millisecond, durations and costs with units
            times = page.locator("ul.tree .time").all_inner_texts()
            assert times and all(re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", t) for t in times)
            assert page.get_by_text("0.065000 USD").first.is_visible()
            assert all(
                re.fullmatch(r"[\d.]+ (ms|s)|\d+ min [\d.]+ s", t)
                for t in page.locator("ul.tree .took").all_inner_texts()
            )
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
            pdf = page.pdf(format="A4")
        finally:
            browser.close()
    reader = PdfReader(io.BytesIO(pdf))
    text = "\n".join(p.extract_text() for p in reader.pages)
    assert len(reader.pages) >= 2
    assert "Audit report: alpha" in text and "Cost by model" in text and "VERIFIED" in text
    assert "result for quarterly figures" in text  # outputs are printed ...
    assert "Prompt" in text and "characters" in text  # ... prompts only by their size
    assert "cfo@example.com" not in text
