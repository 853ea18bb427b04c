"""The CLI as a person meets it: clean tables, pipes that close early."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trails.cli import main


def test_tables_leave_out_parameters_that_were_not_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "store")
    assert main(["--store", store, "demo"]) == 0
    capsys.readouterr()
    assert main(["--store", store, "sessions"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split()
    assert "session" in header and "since" not in header and "until" not in header
    assert (
        main(["--store", store, "query", "sessions", "--param", "since=2000-01-01T00:00:00Z"]) == 0
    )
    assert "since" in capsys.readouterr().out.splitlines()[0].split()


def test_a_reader_that_stops_early_is_not_an_error(tmp_path: Path) -> None:
    trails = Path(sys.executable).parent / "trails"
    result = subprocess.run(
        f"'{trails}' query --list | head -n 1",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.stdout.count("\n") == 1
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr
