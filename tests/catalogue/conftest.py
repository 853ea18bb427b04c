"""The four-session store with known answers (``tests/known_store.py``) as the ``fx`` fixture,
and ``queries_asked``, what the paging tests count a page's queries with."""

from __future__ import annotations

from typing import Any

import pytest
from tests.known_store import fx

from trails.store import Solutions, Store

__all__ = ["fx", "queries_asked"]


def queries_asked(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Each query ``store`` is asked from now on, and how many rows it gave (1 for ASK)."""
    asked: list[tuple[str, int]] = []
    query = store.query

    def counted(sparql: str, params: Any = None, **kwargs: Any) -> Any:
        found = query(sparql, params, **kwargs)
        asked.append((sparql, len(found.rows) if isinstance(found, Solutions) else 1))
        return found

    monkeypatch.setattr(store, "query", counted)
    return asked
