"""The console on the demo's store, in a real Chromium against a real ``trails serve``.

``trails demo`` records its session into a directory, and a writer process a
second, different session (``live_writer``); ``trails serve`` serves the store (one
server for the module) while ``trails replay --rerun`` records a rerun into it.

- the graph: drawn by the vendored layout engine, list members folded, no
  bare-number label, edges drawn with their PROV relations, the goal-to-answer
  path marked, the page no wider than a 1280 px window;
- the diff: the rerun's page links to the comparison with its original, the
  original's to its rerun, ``trails diff --html`` prints the same page's address,
  and the page and the command name the same first divergence.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
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
    ROOT,
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
    other: str


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


def writer(home: Path, steps: int, gate: Path | None = None) -> subprocess.Popen[str]:
    """A process recording a session of ``steps`` calls into ``home/store`` (``live_writer``)."""
    args = [sys.executable, "-m", "tests.console.live_writer", str(home / "store"), str(steps)]
    return subprocess.Popen(
        [*args, *([str(gate)] if gate is not None else [])],
        cwd=ROOT,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """``trails demo`` into a store, tokens for the auditor, alice and bob, served."""
    home = tmp_path_factory.mktemp("demo")
    done = trails(home, "demo")
    assert done.returncode == 0, done.stderr
    session = re.search(r"urn:trails:session:[0-9a-f-]{36}", done.stdout)
    assert session is not None, done.stdout
    other = writer(home, 2)
    assert other.wait(120) == 0
    assert other.stdout is not None
    other_iri = other.stdout.readline().strip()
    (home / "tokens.toml").write_text(
        token_entry(TOKENS["auditor"], "did:example:auditor", ["*"], audit=True)
        + token_entry(TOKENS["alice"], ALICE)
        + token_entry(TOKENS["bob"], BOB)
    )
    with serving(home) as url:
        yield Demo(url, home, session.group(0), other_iri)


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


def test_a_rerun_is_a_new_session_compared_with_its_original_as_trails_diff_does(
    demo: Demo, chromium: Any
) -> None:
    # trails replay --rerun records the rerun into the served store (serve holds no lock)
    done = trails(demo.home, "replay", demo.session, "--rerun", "--import", "trails.demo")
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"recorded as (urn:trails:session:[0-9a-f-]{36})", done.stdout)
    assert found is not None, done.stdout
    rerun = found.group(1)
    # trails diff --html prints the console page comparing the two
    done = trails(demo.home, "diff", demo.session, rerun, "--html", demo.url)
    assert done.returncode == 0 and "identical" in done.stdout, done.stdout + done.stderr
    address = re.search(r"console: (\S+)", done.stdout)
    assert address is not None and address.group(1).startswith(demo.url + "/console/diff?")
    page = log_in(chromium, demo, "auditor")
    # the rerun's page leads to the comparison with its original (within a snapshot's age)
    page.goto(demo.url + "/console/session?s=" + quote(rerun, safe=""))
    for _ in range(20):
        if page.locator("a.compare-original").count():
            break
        page.wait_for_timeout(250)
        page.reload()
    page.click("a.compare-original")
    page.wait_for_selector("table.diff")
    assert page.url == address.group(1)
    assert page.locator("p.verdict").inner_text().startswith("identical")
    assert page.locator("table.diff tbody tr.same").count() == 7
    assert page.locator("#first-divergence").count() == 0
    # and the original's page leads to its rerun
    page.goto(demo.url + "/console/session?s=" + quote(demo.session, safe=""))
    assert page.locator("a.compare-rerun").count() == 1
    # two different sessions: the page marks the divergence trails diff names
    done = trails(demo.home, "diff", demo.session, demo.other)
    assert done.returncode == 1
    said = done.stdout.splitlines()[2]
    page.fill("form.compare input[name=b]", demo.other.rsplit(":", 1)[-1])  # a bare UUID
    page.click("form.compare button")
    page.wait_for_selector("table.diff")
    verdict = page.locator("p.verdict").inner_text()
    assert verdict.startswith(said), (verdict, said)
    first = page.locator("#first-divergence")
    assert first.get_attribute("data-index") == re.search(r"#(\d+)", said).group(1)
    assert "first divergence" in first.inner_text()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1280, width
    # a session the token may not read cannot be compared
    page = log_in(chromium, demo, "bob")
    page.goto(f"{demo.url}/console/diff?a={quote(demo.session)}&b={quote(rerun)}")
    assert page.locator("p.error").count() == 1 and demo.session not in page.content()
    page.close()
