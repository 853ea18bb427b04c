"""The suite's test modules rewritten for assertions once, before the workers start.

pytest rewrites each test module's ``assert`` statements for its messages, and keeps the
result in a ``__pycache__`` file. With ``-n auto`` every worker collects every module at
the same moment, so on a fresh checkout each one rewrote the whole suite again (about
16 CPU-seconds a worker, most of collection) before any cache file existed, and with
``PYTHONDONTWRITEBYTECODE`` set none was ever written. ``rewrite_once`` writes those
cache files from the controller, on every core, in the format and place pytest's own
loader reads them (a checked-hash pyc, so a changed source is rewritten again as usual).
It only saves time: should pytest's internals differ, it does nothing and the workers
rewrite as before.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

__all__ = ["rewrite_once"]

_CONFIG: list[pytest.Config] = []
_NEEDED = (
    "PYC_TAIL",
    "_read_pyc",
    "_rewrite_test",
    "_write_pyc",
    "assertstate_key",
    "get_cache_dir",
    "try_makedirs",
)
"""The names of pytest's rewriting module this uses (none of them public)."""


def _rewrite(path: Path) -> bool:
    """Rewrite one module into its cache file unless a valid one is there (a forked worker)."""
    from _pytest.assertion import rewrite

    config = _CONFIG[0]
    state = config.stash[rewrite.assertstate_key]  # type: ignore[attr-defined]
    cache_dir = rewrite.get_cache_dir(path)
    if not rewrite.try_makedirs(cache_dir):
        return False
    pyc = cache_dir / (path.name[:-3] + rewrite.PYC_TAIL)
    if rewrite._read_pyc(path, pyc, state.trace) is not None:
        return False
    source_hash, code = rewrite._rewrite_test(path, config)
    return bool(rewrite._write_pyc(state, code, source_hash, pyc))


def rewrite_once(config: pytest.Config, root: Path) -> int:
    """Write the rewritten form of every test module and conftest under ``root``; how many."""
    if config.getoption("assertmode", "rewrite") != "rewrite" or not config.getoption(
        "numprocesses", None
    ):
        return 0
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return 0
    if not all(hasattr(rewrite, name) for name in _NEEDED):
        return 0
    paths = sorted(
        p for p in root.rglob("*.py") if p.name.startswith("test_") or p.name == "conftest.py"
    )
    _CONFIG[:] = [config]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max(1, cores or 1), mp_context=context) as pool:
            return sum(pool.map(_rewrite, paths, chunksize=8))
    except (OSError, ValueError):
        return 0
