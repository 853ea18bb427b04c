"""The console on the demo's store, in a real Chromium against a real ``trails serve``.

``trails demo`` records its session into a directory, and a writer process a
second, different session (``live_writer``); ``trails serve`` serves the store (one
server for the module) while ``trails replay --rerun`` records a rerun into it.

- the graph: drawn by the vendored layout engine, list members folded, no
  bare-number label, edges drawn with their PROV relations, the goal-to-answer
  path marked, the page no wider than a 1280 px window;
- the diff: the rerun's page links to the comparison with its original, the
  original's to its rerun, ``trails diff --html`` prints the same page's address,
  and the page and the command name the same first divergence;
- live: while a writer process records a session step by step, the sessions list
  shows it and its page shows each new step without reloading; a token that may
  not read it never hears of it; stopping the server ends the open streams.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from tests.console.conftest import (
    ALICE,
    BOB,
    CHROMIUM,
    ROOT,
    TOKENS,
    TRAILS,
    _banner,
    chromium_context,
    environment,
    log_in,
)

from trails.server.auth import token_entry

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
    server: subprocess.Popen[str]


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
    server = subprocess.Popen(
        [TRAILS, "--store", "store", "serve", "--tokens", "tokens.toml", "--port", "0"],
        cwd=home,
        env=environment(),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        yield Demo(_banner(server), home, session.group(0), other_iri, server)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(60)


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium for the module, its window 1280 px wide."""
    with chromium_context(tmp_path_factory.mktemp("profile"), width=1280) as context:
        yield context


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
    # and what changed in its inputs and in what came back, line by line
    assert first.locator("details.changed[open]").count() == 2
    assert first.locator("details.changed span.ins").count() > 0
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1280, width
    page.close()
    # a session the token may not read cannot be compared
    page = log_in(chromium, demo, "bob")
    page.goto(f"{demo.url}/console/diff?a={quote(demo.session)}&b={quote(rerun)}")
    assert page.locator("p.error").count() == 1 and demo.session not in page.content()
    page.close()


class Stream:
    """A logged-in ``/console/events`` stream read in a thread (an ``EventSource``'s view)."""

    def __init__(self, demo: Demo, who: str, query: str = "") -> None:
        self.client = httpx.Client(base_url=demo.url, timeout=httpx.Timeout(10.0, read=None))
        done = self.client.post("/console/login", data={"token": TOKENS[who]})
        assert done.status_code == 303, done.text
        self.events: list[tuple[str, str]] = []
        self.ended = threading.Event()
        self.response = self.client.send(
            self.client.build_request("GET", "/console/events" + query), stream=True
        )
        assert self.response.headers["content-type"].startswith("text/event-stream")
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        name = ""
        try:
            for line in self.response.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    self.events.append((name, line[6:]))
        except httpx.HTTPError:
            pass
        finally:
            self.ended.set()

    def close(self) -> None:
        self.response.close()
        self.client.close()


def test_a_recording_session_and_its_steps_appear_live_within_the_grant(
    demo: Demo, chromium: Any, tmp_path: Path
) -> None:
    page = log_in(chromium, demo, "auditor")
    page.wait_for_selector("#live-state:has-text('live: following')")
    page.evaluate("window.drawnOnce = true")  # gone if the page reloads
    alice, bob = Stream(demo, "alice"), Stream(demo, "bob")
    gate = tmp_path / "gate"
    gate.mkdir()
    process = writer(demo.home, 2, gate)
    try:
        assert process.stdout is not None
        session = process.stdout.readline().strip()
        assert session.startswith("urn:trails:session:"), process.stderr
        started = time.monotonic()
        page.wait_for_selector(f'tr.live-new[data-session="{session}"]', timeout=30_000)
        seen_in = time.monotonic() - started
        row = page.locator(f'tr.live-new[data-session="{session}"]')
        assert row.locator("span.badge").inner_text() == "open"
        assert page.evaluate("window.drawnOnce") is True
        # its page: each new step appears as the writer records it, without a reload
        page.goto(demo.url + "/console/session?s=" + quote(session, safe=""))
        for _ in range(40):  # the page reads a snapshot, current within its age
            if page.locator("#live-state").count():
                break
            page.wait_for_timeout(250)
            page.reload()
        page.wait_for_selector("#live-state:has-text('live: following')")
        page.evaluate("window.drawnOnce = true")
        steps = page.locator("#live-steps li")
        for n in range(2):
            (gate / f"go-{n}").touch()
            assert process.stdout.readline().strip() == f"step {n}"
            steps.nth(n).wait_for(timeout=30_000)
            assert steps.count() == n + 1
        assert "invoke live.step" in steps.last.inner_text()
        (gate / "go-end").touch()
        assert process.wait(120) == 0
        page.wait_for_selector("details#live > summary:has-text('has ended')", timeout=30_000)
        assert page.evaluate("window.drawnOnce") is True
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)
    # within the grant: alice's own stream announced her session; bob's never named it
    deadline = time.monotonic() + 30
    while session not in " ".join(d for _, d in alice.events) and time.monotonic() < deadline:
        time.sleep(0.1)
    alice.close()
    bob.close()
    assert any(name == "sessions" and session in data for name, data in alice.events)
    assert any(name == "sessions" for name, _ in bob.events)
    assert not [data for _, data in bob.events if "urn:trails:session:" in data]
    print(f"the new session appeared in the list {seen_in:.2f} s after it started")
    page.close()


def test_stopping_the_server_ends_the_open_streams(demo: Demo) -> None:
    """The last test of the module: it stops the server the others used."""
    stream = Stream(demo, "auditor")
    deadline = time.monotonic() + 30
    while not stream.events and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stream.events and stream.events[0][0] == "sessions"
    os.killpg(demo.server.pid, signal.SIGTERM)
    assert demo.server.wait(60) == 0
    assert stream.ended.wait(30)
    assert demo.server.stderr is not None
    assert "trails serve: stopped" in demo.server.stderr.read()
    stream.close()
