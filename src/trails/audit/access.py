"""How audit commands open a store: read what exists, never create an empty one by accident.

Writing commands create their store on first use; an auditor who mistypes a
path should instead get "there is no store here", not an empty result from a
store that was just created. ``memory:`` means the process's own store (the
one the application, or a test, is recording into).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from trails.config import load_settings
from trails.errors import StoreError
from trails.store import Store, default_store, open_store

__all__ = ["existing_store", "reading", "writing"]


def existing_store(location: str | None, *, create: bool = False) -> tuple[Store, bool]:
    """Open the store at ``location`` (default: the configured one) if it exists.

    Args:
        location: ``memory:``, ``http(s)://...``, a directory, or None for the settings.
        create: a writing command: create the directory store when it does not exist.

    Returns:
        The store and whether the caller owns it (and must close it).

    Raises:
        StoreError: the directory does not exist or holds no store, or it cannot be opened.
    """
    settings = load_settings()
    where = location if location is not None else settings.store
    if where == "memory:":
        # the process's own store when the settings name memory: (an application or a
        # test recording in memory); otherwise a fresh one, so nothing touches the disk
        if settings.store == "memory:":
            return default_store(), False
        return open_store("memory:"), True
    if where.startswith(("http://", "https://")):
        return open_store(where, settings=settings), True
    path = Path(where) if location is not None else settings.resolve_path(where)
    if not create and (not path.is_dir() or not any(path.iterdir())):
        raise StoreError(
            f"no trails store at {path}: record something first (trails demo), or name the "
            f"store with --store PATH or TRAILS_STORE"
        )
    return open_store(path, settings=settings), True


@contextmanager
def reading(location: str | None) -> Iterator[Store]:
    """``existing_store`` as a context manager that closes what it opened.

    Args:
        location: as for ``existing_store``.

    Yields:
        The store.
    """
    store, owned = existing_store(location)
    try:
        yield store
    finally:
        if owned:
            store.close()


@contextmanager
def writing(location: str | None) -> Iterator[Store]:
    """``reading`` for a command that records: the directory store is created if missing.

    Args:
        location: as for ``existing_store``.

    Yields:
        The store.
    """
    store, owned = existing_store(location, create=True)
    try:
        yield store
    finally:
        if owned:
            store.close()
