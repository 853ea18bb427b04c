"""The store contract runs on every backend: embedded, ``oxigraph serve`` and Virtuoso.

Here ``any_store`` is parametrised over ``servers.BACKENDS`` rather than the
embedded and Oxigraph stores only: the Virtuoso runs carry the ``virtuoso``
marker and are skipped when ``virtuoso-t`` is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from servers import BACKENDS, backend_store
from trails.store import Store


@pytest.fixture(params=BACKENDS)
def any_store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """The same test on each store backend, with the same expectations."""
    yield from backend_store(request, request.param)
