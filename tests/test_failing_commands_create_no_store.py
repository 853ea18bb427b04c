"""A command that fails leaves no store behind, and one that recorded keeps it.

``trails --store NEW import bad.nq`` and ``trails --store NEW mcp proxy --
nosuchcommand`` fail with one line; before, each left an empty store at NEW. The
cause was how recording commands open their store (``trails.audit.access.writing``):
it is created on open, so a failure afterwards left it. Now a failure before anything
was recorded deletes what the open created (and the folders made for it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trails.audit.access import writing
from trails.store import IRI, Literal, Quad, open_store
from trails.store.location import is_store


def trails(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trails.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    "command",
    [["import", "bad.nq"], ["mcp", "proxy", "--", "nosuchcommand-of-trails"]],
    ids=["import", "mcp-proxy"],
)
@pytest.mark.parametrize("where", ["NEW", "deeper/still/NEW", "EMPTY"])
def test_a_failing_command_creates_no_store(tmp_path: Path, command: list[str], where: str) -> None:
    (tmp_path / "bad.nq").write_text("garbage <<\n")
    (tmp_path / "EMPTY").mkdir()
    run = trails(tmp_path, "--store", where, *command)
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    if where == "EMPTY":
        assert list((tmp_path / "EMPTY").iterdir()) == []  # the folder stays, empty
    else:
        assert not (tmp_path / where.split("/")[0]).exists()


def test_a_command_that_succeeds_creates_its_store(tmp_path: Path) -> None:
    (tmp_path / "good.nq").write_text("<urn:s> <urn:p> <urn:o> <urn:g> .\n")
    run = trails(tmp_path, "--store", "NEW", "import", "good.nq")
    assert run.returncode == 0, run.stderr
    assert is_store(tmp_path / "NEW")


def test_a_command_that_recorded_before_failing_keeps_what_it_recorded(tmp_path: Path) -> None:
    where = tmp_path / "NEW"
    quad = Quad(IRI("urn:s"), IRI("urn:p"), Literal("kept"), IRI("urn:g"))
    with pytest.raises(RuntimeError), writing(str(where)) as store:
        store.write([quad])
        raise RuntimeError("failed after recording")
    store = open_store(str(where), create=False)
    try:
        assert store.query("ASK { GRAPH <urn:g> { <urn:s> <urn:p> 'kept' } }") is True
    finally:
        store.close()


def test_a_failing_command_never_touches_an_existing_store(tmp_path: Path) -> None:
    where = tmp_path / "store"
    open_store(str(where)).close()  # an existing store, empty
    (tmp_path / "bad.nq").write_text("garbage <<\n")
    run = trails(tmp_path, "--store", str(where), "import", "bad.nq")
    assert run.returncode == 2
    assert is_store(where)
