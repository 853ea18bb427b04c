"""A real ``trails serve`` on a recorded store, and a headless Chromium to drive its console.

The store is the four-session store of ``tests/known_store.py`` (alice's
sessions A and C, bob's B, carol's D), recorded into a directory by a process
of its own (``record``), then served by ``trails serve`` as a user runs it.
Three tokens read it: the auditor (every graph), alice and bob (their own
sessions). Chromium is Debian's (never a browser Playwright downloads).
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from trails.server.auth import token_entry

ROOT = Path(__file__).resolve().parents[2]
TRAILS = str(Path(sys.executable).with_name("trails"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKENS = {
    "auditor": "auditor-console-token-0123456789",
    "alice": "alice-console-token-0123456789ab",
    "bob": "bob-console-token-0123456789abcde",
}
ALICE, BOB = "did:local:alice", "did:local:bob"


@dataclass(frozen=True)
class Served:
    """The running console: its base URL, the store's folder and the sessions by key."""

    url: str
    store: Path
    sessions: dict[str, str]
    home: Path


def _banner(process: subprocess.Popen[str]) -> str:
    """The URL ``trails serve`` prints once it listens (stderr), or fail with what it said."""
    assert process.stderr is not None
    said: list[str] = []
    with selectors.DefaultSelector() as selector:
        selector.register(process.stderr, selectors.EVENT_READ)
        while True:
            if not selector.select(timeout=120):
                raise AssertionError("trails serve printed no banner: " + "".join(said))
            line = process.stderr.readline()
            if not line:
                raise AssertionError("trails serve stopped: " + "".join(said))
            said.append(line)
            found = re.search(r"(http://[^/\s]+)/sparql", line)
            if found:
                return found.group(1)


def environment() -> dict[str, str]:
    """The environment of the processes the tests start (tests importable, no real models)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "TRAILS_FORBID_REAL_MODELS": "1"}
    env.pop("TRAILS_STORE", None)
    return env


def record(home: Path) -> dict[str, str]:
    """Record the four sessions into ``home/store``, verify it once (a checkpoint, so a tree
    head) and write the tokens file; returns the sessions by key."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.console.record", str(home / "store")],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # a verification checkpoint: the transparency log gets its first tree head
    checked = subprocess.run(
        [TRAILS, "--store", "store", "verify"],
        cwd=home,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert "checkpoint" in checked.stdout + checked.stderr, checked.stdout + checked.stderr
    (home / "tokens.toml").write_text(
        token_entry(TOKENS["auditor"], "did:example:auditor", ["*"], audit=True)
        + token_entry(TOKENS["alice"], ALICE)
        + token_entry(TOKENS["bob"], BOB)
    )
    return dict(line.split(" ", 1) for line in done.stdout.split("\n") if line.strip())


@contextmanager
def serving(home: Path) -> Iterator[str]:
    """``trails serve`` on ``home/store`` (port 0) while the block runs; its base URL."""
    process = subprocess.Popen(
        [TRAILS, "--store", "store", "serve", "--tokens", "tokens.toml", "--port", "0"],
        cwd=home,
        env=environment(),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        yield _banner(process)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(60)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Record the store, start ``trails serve`` on it, stop it after the module."""
    home = tmp_path_factory.mktemp("console")
    sessions = record(home)
    with serving(home) as url:
        yield Served(url, home / "store", sessions, home)


@contextmanager
def chromium_context(profile: Path, *, width: int = 1200) -> Iterator[Any]:
    """A headless Chromium with a fresh profile, its window ``width`` px wide."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            accept_downloads=True,
            viewport={"width": width, "height": 800},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium for the module (a fresh profile)."""
    with chromium_context(tmp_path_factory.mktemp("profile")) as context:
        yield context


def log_in(context: Any, served: Any, who: str) -> Any:
    """A new page logged in as ``who`` through the login form of ``served.url``'s console;
    its cookies cleared first."""
    context.clear_cookies()
    page = context.new_page()
    page.goto(served.url + "/console/")
    page.fill("input[name=token]", TOKENS[who])
    page.click("button[type=submit]")
    page.wait_for_url(served.url + "/console/")
    return page


def shot(page: Any, name: str) -> None:
    """Kept for the tests that call it: docs/console.md's pictures are taken by
    ``test_console_pages.py`` (with ``TRAILS_WRITE_SCREENSHOTS=1``), never on every run."""
