"""The reliability campaign's script runs, at its smallest size, and finds nothing.

``benchmarks/bench_reliability.py --smallest`` kills a writer, runs two writers on one
Oxigraph server, records hostile strings, flips bundle bytes and loads ``trails serve``;
it must exit 0 (no torn event, no finding, no injection, no undetected flip, no crash,
no server error) and write its table where it was told.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_reliability.py"


def test_the_reliability_script_runs_at_its_smallest_size(tmp_path: Path) -> None:
    out = tmp_path / "reliability.md"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smallest", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    table = out.read_text()
    assert "<!-- reliability -->" in table and "| test | inputs tried | result |" in table
    for row in ("0 torn", "0 verify findings", "0 injections", "0 undetected, 0 crashes"):
        assert row in table, table
    assert "0 server errors" in table
