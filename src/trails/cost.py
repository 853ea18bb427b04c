"""``trails.cost``: the seed ADR's name for the cost tracker's module.

ADR-0018 says every LLM call "plugs into ``trails.cost.CostTracker``". The
tracker lives in ``trails.kernel.cost``; this module is a thin alias of it, so
``from trails.cost import CostTracker`` works as the ADR writes it. Every name
is the very object of the real module, and a name not listed here is looked up
there.
"""

from __future__ import annotations

from typing import Any

from trails.kernel import cost as _cost
from trails.kernel.cost import KEEP, Budget, CostTracker, Envelope, default_tracker

__all__ = ["KEEP", "Budget", "CostTracker", "Envelope", "default_tracker"]


def __getattr__(name: str) -> Any:
    """Any other name of the cost module, read there (so the alias stays whole)."""
    try:
        return getattr(_cost, name)
    except AttributeError:
        raise AttributeError(f"module 'trails.cost' has no attribute {name!r}") from None
