"""The code stays ruff-clean, formatted, and strictly typed: checked with every test run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "src", "tests", "benchmarks"],
        ["ruff", "format", "--check", "src", "tests", "benchmarks"],
        ["mypy"],
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict"],
)
def test_tool_is_clean(command: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_modules_stay_small() -> None:
    too_long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "src").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 850
    }
    assert not too_long, too_long


def test_only_the_store_imports_pyoxigraph() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "src" / "trails").rglob("*.py")
        if "store" not in p.relative_to(ROOT / "src" / "trails").parts
        and "import pyoxigraph" in p.read_text(encoding="utf-8")
    ]
    assert not offenders, offenders
