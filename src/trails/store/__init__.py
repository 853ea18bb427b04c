"""Where provenance lives: the ``Store`` protocol, its backends, and how to open one.

``open_store(location)`` picks the backend from the location string:
``memory:`` an in-memory embedded store, ``http(s)://...`` a SPARQL 1.1
server, anything else a directory for the embedded store: created when
missing or empty, refused when it holds other files, and required to exist
already with ``create=False`` (readers; ``location`` says what a store is).
``default_store()`` is the process-wide store named by the settings, opened once.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

from trails.config import Settings, load_settings
from trails.store.base import (
    DATASET_FORMATS,
    GRAPH_FORMATS,
    RESULT_FORMATS,
    QueryResult,
    Solutions,
    Store,
    ask,
    construct,
    select,
)
from trails.store.terms import (
    IRI,
    BNode,
    Literal,
    Quad,
    Term,
    Triple,
    instant,
    literal,
    to_python,
)

__all__ = [
    "DATASET_FORMATS",
    "GRAPH_FORMATS",
    "IRI",
    "RESULT_FORMATS",
    "BNode",
    "Literal",
    "Quad",
    "QueryResult",
    "Solutions",
    "Store",
    "Term",
    "Triple",
    "ask",
    "construct",
    "default_store",
    "instant",
    "literal",
    "open_store",
    "reset_default_store",
    "select",
    "set_default_store",
    "to_python",
]

_lock = threading.Lock()
_default: Store | None = None


def open_store(
    location: str | Path | None = None,
    *,
    settings: Settings | None = None,
    base_iri: str | None = None,
    create: bool = True,
    read_only: bool = False,
) -> Store:
    """Open the store at ``location`` (default: the configured one).

    Args:
        location: ``memory:``, ``http(s)://...`` or a directory path.
        settings: settings to read the default location and remote options from.
        base_iri: the base relative IRIs in queries resolve against (default:
            the configured ``base_iri``, the one trails mints IRIs under).
        create: create a directory store that does not exist yet (what recording
            wants); False for readers, which must find an existing store there.
            ``memory:`` and ``http(s)://`` locations are opened either way.
        read_only: a directory store opened as a snapshot, without its lock, while
            another process writes it (nothing can be written through it).

    Raises:
        NotAStore: the directory is not a store and ``create`` is False, or it is a
            folder holding other files (a store is never created over them).
        StoreLockedError: the directory is held by another process.
        StoreError: the store cannot be opened.
    """
    settings = settings or load_settings()
    if base_iri is not None and base_iri != settings.base_iri:
        settings = dataclasses.replace(settings, base_iri=base_iri)
    where = str(location) if location is not None else settings.store
    if where == "memory:":
        from trails.store.oxigraph import OxigraphStore

        return OxigraphStore(None, base_iri=settings.base_iri)
    if where.startswith(("http://", "https://")):
        from trails.store.sparql import SparqlStore

        remote: Store = SparqlStore.from_settings(where, settings)
        return remote
    from trails.store.oxigraph import OxigraphStore

    path = Path(where) if location is not None else settings.resolve_path(where)
    return OxigraphStore(path, base_iri=settings.base_iri, create=create, read_only=read_only)


def default_store() -> Store:
    """The process-wide store named by the settings, opened on first use."""
    global _default
    with _lock:
        if _default is None:
            _default = open_store()
        return _default


def set_default_store(store: Store | None) -> None:
    """Make ``store`` the process-wide default (tests, applications that open their own)."""
    global _default
    with _lock:
        _default = store


def reset_default_store() -> None:
    """Close and forget the process-wide store; the next use opens it again."""
    global _default
    with _lock:
        if _default is not None:
            _default.close()
        _default = None
