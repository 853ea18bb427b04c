"""The console on the demo's store, in a real Chromium against a real ``trails serve``.

``trails demo`` records its session into a directory; ``trails serve`` serves it
(one server for the module). The session's provenance graph is drawn by the
vendored layout engine: list members folded, no bare-number label, edges drawn
with their PROV relations, the goal-to-answer path marked, and the page no wider
than a 1280 px window.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from tests.console.conftest import (
    ALICE,
    BOB,
    CHROMIUM,
    TOKENS,
    TRAILS,
    environment,
    serving,
)

from trails.server.auth import token_entry

SHOTS = os.environ.get("CB_SHOT", "")
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason="needs Debian's Chromium: apt-get install chromium chromium-driver",
)


@dataclass(frozen=True)
class Demo:
    """The served demo store: its URL, folder and the demo's session."""

    url: str
    home: Path
    session: str


def trails(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``trails --store store ARGS`` in ``home`` (a bounded wait)."""
    return subprocess.run(
        [TRAILS, "--store", "store", *args],
        cwd=home,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """``trails demo`` into a store, tokens for the auditor, alice and bob, served."""
    home = tmp_path_factory.mktemp("demo")
    done = trails(home, "demo")
    assert done.returncode == 0, done.stderr
    session = re.search(r"urn:trails:session:[0-9a-f-]{36}", done.stdout)
    assert session is not None, done.stdout
    (home / "tokens.toml").write_text(
        token_entry(TOKENS["auditor"], "did:example:auditor", ["*"], audit=True)
        + token_entry(TOKENS["alice"], ALICE)
        + token_entry(TOKENS["bob"], BOB)
    )
    with serving(home) as url:
        yield Demo(url, home, session.group(0))


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium for the module, its window 1280 px wide."""
    from playwright.sync_api import sync_playwright
    from tests.console.conftest import FLAGS

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1280, "height": 800},
        )
        try:
            yield context
        finally:
            context.close()


def log_in(context: Any, demo: Demo, who: str) -> Any:
    """A new page logged in as ``who`` (cookies cleared first)."""
    context.clear_cookies()
    page = context.new_page()
    page.goto(demo.url + "/console/")
    page.fill("input[name=token]", TOKENS[who])
    page.click("button[type=submit]")
    page.wait_for_url(demo.url + "/console/")
    return page


def test_the_demo_graph_is_laid_out_folded_labelled_and_its_path_marked(
    demo: Demo, chromium: Any
) -> None:
    page = log_in(chromium, demo, "auditor")
    page.goto(demo.url + "/console/session?s=" + quote(demo.session, safe=""))
    page.wait_for_selector("svg.prov-graph g.node")
    nodes = page.locator("svg.prov-graph g.node")
    # the 16 list members of the projection are folded into it: 30 nodes, not 46
    assert nodes.count() == 30
    labels = [n.get_attribute("data-label") or "" for n in nodes.all()]
    assert not [label for label in labels if re.fullmatch(r"\s*\d+\s*", label)]
    assert any(label.startswith("projection of session") and "(16)" in label for label in labels)
    titles = page.locator("svg.prov-graph g.node > title").all_text_contents()
    assert any("holds 4 × completion, 9 × history, 3 × invocation" in t for t in titles)
    # edges drawn, each with its relation, and a legend naming them
    edges = page.locator("svg.prov-graph path.edge")
    assert edges.count() > 0
    relations = {e.get_attribute("data-relation") for e in edges.all()}
    assert {"used", "wasGeneratedBy", "wasInformedBy", "wasAssociatedWith"} <= relations
    assert {"actedOnBehalfOf", "hadPlan"} <= relations
    legend = page.locator("#prov-legend li").all_inner_texts()
    assert {t.strip() for t in legend} == relations
    # the path from the goal to the answer: both ends marked, and the edges between
    goal = page.locator('svg.prov-graph g.node[data-end="goal"]')
    answer = page.locator('svg.prov-graph g.node[data-end="answer"]')
    assert goal.get_attribute("data-path") == "1" and answer.get_attribute("data-path") == "1"
    assert "goal: Find the urgent notes" in goal.locator("title").text_content()
    assert page.locator('svg.prov-graph path.edge[data-path="1"]').count() >= 2
    # long labels cut for the drawing, whole in the tooltip
    assert max(len(label) for label in labels) <= 28
    # nothing wider than the window: wide tables and the graph scroll in their own box
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1280, width
    if SHOTS:
        page.locator("#prov-graph").screenshot(path=SHOTS)
    page.close()
