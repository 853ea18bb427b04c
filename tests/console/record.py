"""Record the four-session store of ``tests/known_store.py`` into a directory, in its own process.

Run as ``python -m tests.console.record DIR``: the console's tests serve that
directory with a real ``trails serve``, and recording in a process of its own keeps
the fixture's capabilities out of the test process's registry.
"""

from __future__ import annotations

import sys

import pytest
from tests.known_store import build

from trails.store import open_store

__all__ = ["main"]


def main(folder: str) -> None:
    """Record the sessions into the store at ``folder`` and close it."""
    store = open_store(folder, base_iri="urn:trails:")
    with pytest.MonkeyPatch.context() as patch:
        fx = build(store, patch)
        for key, iri in sorted(fx.sessions.items()):
            print(key, iri)
    store.close()


if __name__ == "__main__":
    main(sys.argv[1])
