"""Fixtures for the docs and examples tests: the scripted model server and a clean environment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from scripted_models import ScriptedModels, model_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def models() -> Iterator[ScriptedModels]:
    server = ScriptedModels()
    yield server
    server.close()


@pytest.fixture
def fresh_env(models: ScriptedModels, tmp_path: Path) -> dict[str, str]:
    """The environment of a reader's fresh process: no test-suite store, models scripted.

    The working directory gets the checkout's ``ontologies/`` and ``queries/`` (the
    docs are written for a reader in a checkout) and nothing else.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRAILS_", "ANTHROPIC_"))}
    env.update(model_env(models.url))
    if env.get("PYTHONPATH") != str(ROOT / "src"):  # a checkout's own code stays its own
        env.pop("PYTHONPATH", None)
    for name in ("ontologies", "queries"):
        (tmp_path / name).symlink_to(ROOT / name)
    return env
