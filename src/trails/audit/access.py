"""How audit commands open a store: read what exists, never create an empty one by accident.

Recording commands create their store on first use; an auditor who mistypes a
path should instead get "there is no store here", not an empty result from a
store that was just created (nor RocksDB files written into a folder of source
code). ``trails.store.location`` says what a store is. A store another process
holds (an agent recording, a notebook) is read as a snapshot of the moment it is
opened, said on stderr: readers never wait for a writer. ``memory:`` means the
process's own store (the one the application, or a test, is recording into);
an ``http(s)://`` store exists when it answers.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from trails.config import load_settings
from trails.errors import NotAStore, StoreLockedError, TrailsError
from trails.store import Store, default_store, open_store
from trails.store.location import check_existing, is_store, undo_creation

__all__ = ["changing", "check_reading", "existing_store", "reading", "writing"]


def existing_store(
    location: str | None, *, create: bool = False, snapshot: bool = True
) -> tuple[Store, bool]:
    """Open the store at ``location`` (default: the configured one) if it exists.

    Args:
        location: ``memory:``, ``http(s)://...``, a directory, or None for the settings.
        create: a recording command: create the directory store when it is missing or
            empty. Otherwise nothing is written: a folder that is not a store is refused.
        snapshot: a directory store another process holds is opened read-only, as it
            is at this moment (said on stderr). False for a command that changes the
            store: it is refused with ``StoreLockedError`` instead.

    Returns:
        The store and whether the caller owns it (and must close it).

    Raises:
        NotAStore: the directory is not a store (reading), or it is a folder of other
            files that a store must not be created in (``create``).
        StoreLockedError: another process holds the store and ``snapshot`` is False.
        StoreError: the store cannot be opened.
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
    try:
        return open_store(path, settings=settings, create=create), True
    except NotAStore as exc:
        if create:
            raise
        raise _advised(exc, path) from None
    except StoreLockedError:
        if create or not snapshot:
            raise
    # another process is writing the store: read it as it is at this moment
    store = open_store(path, settings=settings, create=False, read_only=True)
    seen = getattr(store, "snapshot_at", None)
    moment = f" as of {seen:%H:%M:%S} UTC" if seen is not None else ""
    print(
        f"trails: {path} is being written by another process; reading a snapshot{moment} "
        f"(what is recorded after it is not shown)",
        file=sys.stderr,
    )
    return store, True


def check_reading(location: str) -> None:
    """Refuse a location no reader may open, without opening it (nor writing anything).

    For a command whose store is opened elsewhere (``trails serve`` opens it in its
    worker processes): the same refusal, and the same advice, as ``existing_store``.

    Args:
        location: ``memory:``, ``http(s)://...`` (both accepted) or a directory.

    Raises:
        NotAStore: the directory is not a trails store.
    """
    if location == "memory:" or location.startswith(("http://", "https://")):
        return
    path = Path(location).expanduser()
    try:
        check_existing(path)
    except NotAStore as exc:
        raise _advised(exc, path) from None


def _advised(exc: NotAStore, path: Path) -> NotAStore:
    """``exc`` with what to do about it, in one line."""
    make = (
        f", or make one there by recording (trails demo) or with trails init --store {path}"
        if exc.creatable
        else ""
    )
    return NotAStore(
        f"{exc}; name the store with --store PATH or TRAILS_STORE{make}",
        location=exc.location,
        creatable=exc.creatable,
    )


@contextmanager
def _closing(store: Store, owned: bool) -> Iterator[Store]:
    """``store`` for a ``with`` block, closed after it when the caller opened it."""
    try:
        yield store
    finally:
        if owned:
            store.close()


def reading(location: str | None) -> AbstractContextManager[Store]:
    """``existing_store`` as a context manager that closes what it opened.

    Args:
        location: as for ``existing_store``.

    Returns:
        The store, as a context manager that closes what it opened.
    """
    return _closing(*existing_store(location))


def writing(location: str | None) -> AbstractContextManager[Store]:
    """``reading`` for a command that records: the directory store is created if missing or
    empty. A command that fails (its block raises) before anything was recorded leaves no
    store behind: the one created for it is deleted, with the folders made for it.

    Args:
        location: as for ``existing_store``.

    Returns:
        The store, as a context manager that closes what it opened.
    """
    return _created(location)


@contextmanager
def _created(location: str | None) -> Iterator[Store]:
    path = _directory(location)
    made: list[Path] = []
    if path is not None and not is_store(path):
        whole = path.absolute()
        made = [p for p in [whole, *whole.parents] if not p.exists()]
        fresh = True
    else:
        fresh = False
    store, owned = existing_store(location, create=True)
    try:
        yield store
    except BaseException:
        if fresh and owned and path is not None and _empty(store):
            store.close()
            undo_creation(path, made)
        raise
    finally:
        if owned:
            store.close()


def _directory(location: str | None) -> Path | None:
    """The directory of a directory store at ``location`` (None: memory, a server)."""
    settings = load_settings()
    where = location if location is not None else settings.store
    if where == "memory:" or where.startswith(("http://", "https://")):
        return None
    return Path(where) if location is not None else settings.resolve_path(where)


def _empty(store: Store) -> bool:
    """Whether nothing at all is recorded in ``store``."""
    try:
        return not store.query("ASK { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }")
    except TrailsError:
        return False


def changing(location: str | None) -> AbstractContextManager[Store]:
    """``reading`` for a command that changes an existing store (erase, holds, recovery).

    It needs the writer's lock: a store another process holds is refused, never read
    as a snapshot the change could not be written to.

    Args:
        location: as for ``existing_store``.

    Returns:
        The store, as a context manager that closes what it opened.
    """
    return _closing(*existing_store(location, snapshot=False))
