"""``trails.decorators``: the seed guide's name for the capability registry.

The agent runtime guide speaks of ``from trails.decorators import capability``
and of "the live ``trails.decorators._handlers`` registry" that ``react.run``
walks when it is given no ``tools=``. The registry lives in
``trails.kernel.registry``; this module is a thin alias of it, so code written
from the guide imports and works unchanged. Every name is the very object of
the real module (``_handlers`` is the same dict the decorator fills), and a
name not listed here is looked up there.
"""

from __future__ import annotations

from typing import Any

from trails.kernel import registry as _registry
from trails.kernel.registry import (
    CapabilitySpec,
    ParamSpec,
    _handlers,
    all_capabilities,
    capability,
    get_capability,
    unregister,
)

__all__ = [
    "CapabilitySpec",
    "ParamSpec",
    "_handlers",
    "all_capabilities",
    "capability",
    "get_capability",
    "unregister",
]


def __getattr__(name: str) -> Any:
    """Any other name of the registry module, read there (so the alias stays whole)."""
    try:
        return getattr(_registry, name)
    except AttributeError:
        raise AttributeError(f"module 'trails.decorators' has no attribute {name!r}") from None
