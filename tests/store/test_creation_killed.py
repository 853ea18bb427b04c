"""A store whose creation was killed opens next time: the creation is finished or redone.

A process creating a store is killed (SIGKILL) at each step of the creation
(``trails.store._layout.on_step``: ``creating``, ``created``), and at random moments
within 50 ms of the folder appearing; RocksDB's own creation is cut short at each of
the files it writes, in the order it writes them. Every time, the next open records and
reads back, and a reader (``trails verify``) gets no error naming a data directory.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyoxigraph as ox
import pytest

from trails.store import IRI, Literal, Quad, _layout, open_store
from trails.store.location import check_creatable, is_store
from trails.store.oxigraph import OxigraphStore

KILLER = """
import os, signal, sys
from trails.store import _layout
from trails.store.oxigraph import OxigraphStore


def stop(step):
    if step == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)


_layout.on_step = stop
OxigraphStore(sys.argv[1])
print("created", flush=True)
"""

RECORDER = """
import os
import sys

os.environ["TRAILS_STORE"] = sys.argv[1]  # a recording process, as an agent is configured
from trails.kernel import Context

with Context.open("did:local:alice"):  # a session, started and sealed at its end
    pass
print("recorded", flush=True)
"""


def records(root: Path) -> None:
    """The store at ``root`` opens, takes a write, and reads it back."""
    store = open_store(str(root))
    try:
        quad = Quad(IRI("urn:s"), IRI("urn:p"), Literal("v"), IRI("urn:g"))
        store.write([quad])
        assert store.query("ASK { GRAPH <urn:g> { <urn:s> <urn:p> 'v' } }") is True
    finally:
        store.close()
    again = open_store(str(root), create=False)
    try:
        assert IRI("urn:g") in again.graphs()
    finally:
        again.close()
    assert sorted(n for n in os.listdir(root) if n.startswith("data-")) == [
        f"data-{_layout.read_pointer(root)}"
    ]


@pytest.mark.parametrize("step", ["creating", "created"])
def test_a_creation_killed_at_each_step_is_finished_or_redone(tmp_path: Path, step: str) -> None:
    root = tmp_path / "store"
    run = subprocess.run(
        [sys.executable, "-c", KILLER, str(root), step], capture_output=True, text=True
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    assert not (root / _layout.POINTER).exists()  # killed before the pointer
    records(root)


# the kinds of file a fresh Oxigraph store holds, in the order RocksDB writes them; its
# OPTIONS file comes last of those that make a database (``_layout.is_database``)
ORDER = ["LOCK", "IDENTITY", "LOG", "MANIFEST-", "CURRENT", ".log"]


@pytest.mark.parametrize("kept", range(1, len(ORDER) + 1))
def test_a_data_directory_rocksdb_had_not_finished_creating_is_redone(
    tmp_path: Path, kept: int
) -> None:
    """RocksDB cut short after writing its first ``kept`` kinds of file (no pointer yet)."""
    whole = tmp_path / "whole"
    raw = ox.Store(str(whole))
    del raw
    root = tmp_path / "store"
    data = root / "data-1"
    data.mkdir(parents=True)
    (root / _layout.LOCK).touch()
    for name in sorted(os.listdir(whole)):
        if any(name.startswith(p) or name.endswith(p) for p in ORDER[:kept]):
            shutil.copy2(whole / name, data / name)
    assert not _layout.is_database(data)  # no OPTIONS yet: not a database
    assert _layout.unfinished_creation(root) == [data]
    assert not is_store(root)
    assert check_creatable(root)  # a recording process may create it ...
    records(root)  # ... and does, finishing or redoing what was begun


def test_a_folder_with_a_data_directory_of_other_files_is_never_taken_over(
    tmp_path: Path,
) -> None:
    root = tmp_path / "store"
    (root / "data-1").mkdir(parents=True)
    (root / "data-1" / "notes.txt").write_text("mine")
    assert _layout.unfinished_creation(root) == []
    with pytest.raises(Exception, match="not empty and not a store"):
        OxigraphStore(root)
    assert (root / "data-1" / "notes.txt").read_text() == "mine"


def test_sigkill_within_50ms_of_the_folder_appearing_never_bricks_the_store(
    tmp_path: Path,
) -> None:
    rng = random.Random(49)
    for trial in range(12):
        root = tmp_path / f"store-{trial}"
        proc = subprocess.Popen(
            [sys.executable, "-c", RECORDER, str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while not root.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)
        time.sleep(rng.random() * 0.05)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        open_store(str(root)).close()  # the next recording process opens it
        assert is_store(root)
        verified = subprocess.run(
            [sys.executable, "-m", "trails.cli", "--store", str(root), "verify"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        assert verified.returncode == 0, (trial, verified.stdout, verified.stderr)
        records(root)
