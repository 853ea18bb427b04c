"""``trails.context``: the seed guide's name for the module of ``Context``.

The agent runtime guide calls the ``ctx`` a handler receives "the per-invoke
``trails.context.Context``". It lives in ``trails.kernel.context``; this module
is a thin alias of it, so ``from trails.context import Context`` works as the
guide writes it. Every name is the very object of the real module, and a name
not listed here is looked up there.
"""

from __future__ import annotations

from typing import Any

from trails.kernel import context as _context
from trails.kernel.context import (
    Context,
    Decision,
    InvocationRecord,
    ToolPolicy,
    current_context,
    default_context,
    now,
    reset_default_context,
)

__all__ = [
    "Context",
    "Decision",
    "InvocationRecord",
    "ToolPolicy",
    "current_context",
    "default_context",
    "now",
    "reset_default_context",
]


def __getattr__(name: str) -> Any:
    """Any other name of the context module, read there (so the alias stays whole)."""
    try:
        return getattr(_context, name)
    except AttributeError:
        raise AttributeError(f"module 'trails.context' has no attribute {name!r}") from None
