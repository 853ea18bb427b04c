"""The four-session store with known answers (``tests/known_store.py``) as the ``fx`` fixture."""

from __future__ import annotations

from tests.known_store import fx

__all__ = ["fx"]
