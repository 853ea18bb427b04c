"""Where things are, as a user reads it: ``trails demo`` ends with its store's folder, and
``trails serve`` names its console's address and its access log's folder (never a repr)."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path

from trails.server.auth import token_entry

TRAILS = str(Path(sys.executable).with_name("trails"))


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}


def test_the_demo_ends_with_its_store_and_serve_names_its_console(tmp_path: Path) -> None:
    demo = subprocess.run(
        [TRAILS, "--store", "store", "demo"],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert demo.returncode == 0, demo.stderr
    assert demo.stdout.rstrip().splitlines()[-1] == f"Store: {(tmp_path / 'store').resolve()}"
    (tmp_path / "tokens.toml").write_text(token_entry("t" * 32, "did:example:auditor", ["*"]))
    serve = subprocess.Popen(
        [TRAILS, "--store", "store", "serve", "--tokens", "tokens.toml", "--port", "0"],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    said: list[str] = []
    try:
        assert serve.stderr is not None
        with selectors.DefaultSelector() as selector:
            selector.register(serve.stderr, selectors.EVENT_READ)
            assert selector.select(timeout=120), "trails serve printed nothing"
        said = [serve.stderr.readline()]
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(60)
    banner = "".join(said)
    assert "OxigraphStore(" not in banner
    assert f"access log {tmp_path / 'store.access-log'}" in banner
    address = banner.split("/sparql", 1)[0].rsplit(" ", 1)[1]
    assert banner.rstrip().endswith(f", the console at {address}/console/")
