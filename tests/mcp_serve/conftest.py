"""What the MCP tests share: a capabilities module, the trails CLI, SPARQL on the store.

The servers and clients are real: ``trails mcp serve`` and ``trails mcp proxy`` run
as the user runs them (subprocesses of the installed ``trails``), driven by the
official MCP SDK's ``ClientSession``; the store is a directory store the test
reads afterwards.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from trails.server.auth import token_entry
from trails.store import Store, open_store

TRAILS = str(Path(sys.executable).with_name("trails"))
PYTHON = sys.executable

CAPABILITIES = """
from trails import capability


@capability(id="notes.add", description="keep a note", side_effects=True)
def add(text: str, times: int = 1) -> dict:
    return {"kept": text * times}


@capability(id="notes.count", description="count the letters of a text")
def count(text: str) -> int:
    return len(text)


@capability(id="admin.wipe", description="not for MCP clients", side_effects=True)
def wipe() -> str:
    return "wiped"
"""


ALICE, BOB, AUDITOR = "did:example:alice", "did:example:bob", "did:example:auditor"
TOKENS = {
    ALICE: "alice-token-" + "a" * 40,
    BOB: "bob-token-" + "b" * 40,
    AUDITOR: "aud-" + "c" * 40,
}


def environment() -> dict[str, str]:
    """The test process's environment without its trails settings (the CLI uses --store)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}


def trails(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TRAILS, *args], cwd=cwd, env=environment(), capture_output=True, text=True, check=False
    )


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A folder holding the capabilities module ``mcpcaps`` (imported by ``--import``)."""
    (tmp_path / "mcpcaps.py").write_text(CAPABILITIES)
    return tmp_path


def rows(location: Path, sparql: str, **params: str) -> list[dict[str, str]]:
    """SELECT on the directory store, each value as text; ``params`` bound as IRIs."""
    from trails.store.base import select
    from trails.store.terms import IRI

    store: Store = open_store(str(location))
    try:
        solutions = select(store, sparql, {k: IRI(v) for k, v in params.items()})
        return [
            {k: str(getattr(v, "value", v)) for k, v in row.items() if v is not None}
            for row in solutions
        ]
    finally:
        store.close()


def assert_conforming(location: Path) -> None:
    """The recorded graphs conform to the shapes, read as PROV and meet PROV-CONSTRAINTS."""
    from trails.testing import assert_prov_constraints, assert_prov_readable, shacl_report

    store: Store = open_store(str(location))
    try:
        conforms, report = shacl_report(store)
        assert conforms, report
        assert_prov_readable(store)
        assert_prov_constraints(store)
    finally:
        store.close()


class Served:
    """A running ``trails mcp serve --http``: its URL, its store, and how to stop it."""

    def __init__(self, url: str, store: Path, process: subprocess.Popen[str]) -> None:
        self.url, self.store, self.process = url, store, process

    def stop(self) -> None:
        """Stop the server (SIGTERM, as an operator would), so the store can be opened."""
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait()
        assert self.process.stderr is not None
        rest = self.process.stderr.read()
        assert "Traceback" not in rest, rest


@pytest.fixture
def served(workdir: Path) -> Iterator[Served]:
    """``trails mcp serve --http 127.0.0.1:0`` with three tokens, on a store of its own."""
    tokens = workdir / "tokens.toml"
    tokens.write_text(
        token_entry(TOKENS[ALICE], ALICE)
        + token_entry(TOKENS[BOB], BOB)
        + token_entry(TOKENS[AUDITOR], AUDITOR, ["*"])
    )
    store = workdir / "store"
    assert trails("--store", str(store), "init", cwd=workdir).returncode == 0
    command = [TRAILS, "--store", str(store), "mcp", "serve", "--import", "mcpcaps"]
    process = subprocess.Popen(
        [*command, "--http", "127.0.0.1:0", "--tokens", str(tokens)],
        cwd=workdir,
        env=environment(),
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    banner = process.stderr.readline()
    found = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", banner)
    assert found, banner
    served = Served(found.group(1), store, process)
    try:
        yield served
    finally:
        served.stop()
        process.stderr.close()
