"""``trails logs`` and ``trails otlp`` as a user meets them: bad input is one line.

``trails logs`` with something that is not a session is one ``trails: error:`` line
(exit 2), a failed call or completion shows its error's text next to ``[error]``, and an
entry's heading does not say its kind twice. ``trails otlp`` on a busy port says so in
one line and exits 2 before its listening line, as ``trails serve`` does.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

TRAILS = str(Path(sys.executable).with_name("trails"))

RECORD_FAILURES = """
from trails import capability, invoke
from trails.kernel import Context


@capability(id="disk.write", side_effects=True)
def write(path: str) -> str:
    raise OSError(f"the disk is full, cannot write {path}")


ctx = Context.open(principal="did:example:alice")
try:
    invoke("disk.write", {"path": "/var/report.txt"}, ctx=ctx)
except Exception:
    pass
ctx.close("error")
"""


def trails(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    return subprocess.run(
        [TRAILS, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("trails: error: "), lines
    assert done.returncode == 2, done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("logs")
    done = trails("--store", "store", "demo", cwd=home)
    assert done.returncode == 0, done.stderr
    return home


@pytest.mark.parametrize("bad", ["BADID", "not a session", "urn:trails:session:nope", "x:"])
def test_logs_of_something_that_is_not_a_session_is_one_line(demo: Path, bad: str) -> None:
    line = one_line_error(trails("--store", "store", "logs", bad, cwd=demo))
    assert bad.split()[0] in line


def test_logs_name_each_entry_once(demo: Path) -> None:
    done = trails("--store", "store", "logs", cwd=demo)
    assert done.returncode == 0, done.stderr
    headings = [line for line in done.stdout.splitlines() if line.startswith("## ")]
    assert any(h.startswith("## completion by mock:") for h in headings), headings
    assert any(h.startswith("## call notes.search") for h in headings), headings
    assert not [h for h in headings if "completion completion" in h or "call invoke" in h]


def test_logs_show_the_text_of_an_error(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    env["TRAILS_STORE"] = str(tmp_path / "store")
    done = subprocess.run(
        [sys.executable, "-c", RECORD_FAILURES],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    shown = trails("--store", "store", "logs", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("## call disk.write [error]"))
    assert "error:" in lines[at + 1 :][lines[at + 1 :].index("  error:")]
    assert "the disk is full, cannot write /var/report.txt" in shown.stdout
    as_json = trails("--store", "store", "logs", "--json", cwd=tmp_path)
    assert "the disk is full" in as_json.stdout


def test_otlp_on_a_busy_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = trails("--store", "store", "otlp", "--port", str(port), cwd=tmp_path, timeout=60)
    line = one_line_error(done)
    assert f"cannot listen on 127.0.0.1:{port}" in line
    assert "trails otlp: http://" not in done.stderr  # never said it was listening


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_otlp_with_a_port_out_of_range_is_one_line(tmp_path: Path, port: str) -> None:
    line = one_line_error(trails("--store", "store", "otlp", "--port", port, cwd=tmp_path))
    assert "--port" in line
