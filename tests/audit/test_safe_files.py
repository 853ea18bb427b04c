"""Files a user names are written safely: a link planted at the name, or at any name trails
used to write beside it, is replaced or ignored, never followed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import pytest

from trails.audit.files import write_bytes, write_file
from trails.errors import ExportError
from trails.evidence.seal import install_sealer
from trails.kernel import Context
from trails.prov import Recorder
from trails.store import open_store

_PRECIOUS = b"another user's file, not to be touched\n"


@pytest.fixture
def store_dir(tmp_path: Path) -> tuple[Path, str]:
    """A store folder holding one sealed session, and that session's IRI."""
    where = tmp_path / "store"
    store = open_store(where)
    try:
        recorder = Recorder(store)
        install_sealer(recorder)
        with Context.open("did:local:alice", recorder=recorder) as ctx:
            session = str(ctx.session)
    finally:
        store.close()
    return where, session


def _trails(cwd: Path, store: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("trails") or str(Path(sys.executable).with_name("trails"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    env["TRAILS_STORE"] = str(store)
    return subprocess.run(
        [exe, *argv], capture_output=True, text=True, env=env, cwd=cwd, check=False
    )


def _plant(shared: Path, name: str, victims: Path) -> dict[Path, Path]:
    """Links at ``name`` and at ``name.partial`` in ``shared``, each to a victim file."""
    planted = {}
    for link in (shared / name, shared / f"{name}.partial"):
        victim = victims / f"victim-of-{link.name}"
        victim.write_bytes(_PRECIOUS)
        link.symlink_to(victim)
        planted[link] = victim
    return planted


@pytest.mark.parametrize(
    ("name", "argv", "check"),
    [
        ("out.nq", ["export", "--all", "--out"], lambda data: b"<urn:trails:" in data),
        ("out.zip", ["export", "--all", "--bundle"], lambda data: data.startswith(b"PK\x03\x04")),
        ("out.json", ["export", "--all", "--format", "otlp-json", "--out"], None),
        ("report.html", ["report", "{session}", "--out"], lambda data: b"<html" in data),
    ],
)
def test_links_planted_at_an_output_are_never_followed(
    store_dir: tuple[Path, str],
    tmp_path: Path,
    name: str,
    argv: list[str],
    check: Callable[[bytes], bool] | None,
) -> None:
    store, session = store_dir
    shared, victims = tmp_path / "shared", tmp_path / "victims"
    shared.mkdir()
    victims.mkdir()
    planted = _plant(shared, name, victims)
    target = shared / name
    args = [a.replace("{session}", session) for a in argv]
    done = _trails(tmp_path, store, *args, str(target))
    assert done.returncode == 0, done.stdout + done.stderr
    for victim in planted.values():
        assert victim.read_bytes() == _PRECIOUS  # the link's target is untouched
    assert not target.is_symlink() and target.is_file()  # the link at the name is replaced
    data = target.read_bytes()
    if check is not None:
        assert check(data), data[:200]
    else:
        assert data.startswith(b"{") and b"resourceSpans" in data
    # nothing else is left in the folder: the planted link beside it, untouched, and the output
    assert sorted(p.name for p in shared.iterdir()) == sorted([name, f"{name}.partial"])
    assert (shared / f"{name}.partial").is_symlink()


def test_a_failed_write_leaves_the_name_as_it_was(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_bytes(b"before")

    def fail(out: BinaryIO) -> None:
        out.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_file(target, fail)
    assert target.read_bytes() == b"before"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary file left


def test_the_file_is_new_and_whole(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    write_bytes(target, b"one")
    first = target.stat().st_ino
    write_bytes(target, b"two")
    assert target.read_bytes() == b"two"
    assert target.stat().st_ino != first  # a new file moved in, not the old one rewritten


def test_unwritable_outputs_are_clear_errors(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    with pytest.raises(ExportError, match=r"cannot write the report to .*a-folder"):
        write_bytes(folder, b"x", what="the report")
    assert folder.is_dir() and list(folder.iterdir()) == []
    assert [p.name for p in tmp_path.iterdir()] == ["a-folder"]
    with pytest.raises(ExportError, match=r"cannot write the export to .*no-such-folder"):
        write_bytes(tmp_path / "no-such-folder" / "out.nq", b"x", what="the export")


def test_the_cli_says_so_without_a_traceback(store_dir: tuple[Path, str], tmp_path: Path) -> None:
    store, session = store_dir
    folder = tmp_path / "report.html"
    folder.mkdir()
    done = _trails(tmp_path, store, "report", session, "--out", str(folder))
    assert done.returncode != 0
    assert "cannot write the report to" in done.stderr
    assert "Traceback" not in done.stderr
