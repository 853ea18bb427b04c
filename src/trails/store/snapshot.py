"""A store another process is writing, read as a snapshot renewed every few seconds.

The embedded store has one writer: the process that holds its directory (an
agent recording, a notebook). A reader opens it read-only instead
(``OxigraphStore(path, read_only=True)``): the store as it was at that moment.
A long-running reader (``trails serve``) wants to see what is recorded since,
so ``LiveSnapshot`` opens a fresh snapshot when the one it has is older than
``interval`` seconds, before a read. Queries already running keep the snapshot
they started on (it is closed when the last of them lets go of it). Nothing
can be written through it.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from trails.errors import StoreError, StoreReadOnlyError
from trails.store import _layout
from trails.store.base import QueryResult, Store
from trails.store.oxigraph import OxigraphStore
from trails.store.terms import IRI, Quad, Term

__all__ = ["SNAPSHOT_EVERY", "LiveSnapshot", "change_marker"]

SNAPSHOT_EVERY = 2.0
"""Seconds a snapshot is read before a newer one is opened (``[serve] snapshot_interval``)."""


#: the files a write changes: the write-ahead log, the tables, the manifest and its pointer
#: (not RocksDB's info ``LOG``, which a reader's opening writes too)
_WRITTEN = re.compile(r"^(?:[0-9]+\.(?:log|sst)|MANIFEST-[0-9]+|CURRENT)$")


def change_marker(path: str | Path) -> tuple[Any, ...]:
    """A value that changes whenever a writer changes the directory store at ``path``.

    Read from the file system alone (the store pointer, and the name, size and time of
    each file a write changes), never by opening the store: a reader that follows a
    store another process writes (``trails serve``'s console, for its live pages)
    compares it once a second and reads the store only when it changed. Reading the
    store does not change it.

    Args:
        path: the store's directory.

    Returns:
        The marker (compare it with ``==``); ``()`` for a directory that is not there.
    """
    root = Path(path)
    try:
        version = _layout.read_pointer(root)
    except (OSError, StoreError):  # a pointer being replaced: the data files still say
        version = None
    data = root if version is None else root / f"data-{version}"
    files: list[tuple[str, int, int]] = []
    try:
        with os.scandir(data) as entries:
            for entry in entries:
                if _WRITTEN.match(entry.name):
                    try:
                        stat = entry.stat()
                    except FileNotFoundError:  # a table compacted away meanwhile
                        continue
                    files.append((entry.name, stat.st_size, stat.st_mtime_ns))
    except FileNotFoundError:
        return ()
    return (version, tuple(sorted(files)))


class LiveSnapshot(Store):
    """Read-only snapshots of the directory store at ``path``, renewed every ``interval`` s.

    Args:
        path: the store's directory (held by another process).
        base_iri: the base relative IRIs in queries resolve against.
        interval: seconds between snapshots.

    Raises:
        NotAStore: ``path`` is not a store.
        StoreError: it cannot be opened read-only.
    """

    exclusive = False
    read_only = True

    def __init__(
        self, path: str | Path, *, base_iri: str, interval: float = SNAPSHOT_EVERY
    ) -> None:
        self.path = Path(path)
        self.base_iri = base_iri
        self.interval = interval
        self._lock = threading.Lock()
        self._opened = time.monotonic()
        self._current = OxigraphStore(self.path, base_iri=base_iri, read_only=True)

    def __repr__(self) -> str:
        return f"LiveSnapshot({self.path})"

    @property
    def snapshot_at(self) -> datetime | None:
        """The moment the snapshot being read shows."""
        return self._current.snapshot_at

    def current(self) -> OxigraphStore:
        """The snapshot to read now: a fresh one when this one is ``interval`` old."""
        with self._lock:
            if time.monotonic() - self._opened >= self.interval:
                # the old one closes when the queries still reading it let it go
                self._current = OxigraphStore(self.path, base_iri=self.base_iri, read_only=True)
                self._opened = time.monotonic()
            return self._current

    @property
    def changes(self) -> int:
        """A number that changes with every snapshot (caches of the store compare it)."""
        return int(self._opened * 1000)

    def write(self, quads: Iterable[Quad], *, remove: Iterable[Quad] = ()) -> None:
        self._refuse("write")

    def clear(self, graph: IRI) -> None:
        self._refuse("clear")

    def load(
        self, data: bytes | BinaryIO | Path, *, format: str = "trig", graph: IRI | None = None
    ) -> None:
        self._refuse("load")

    def _refuse(self, what: str) -> None:
        raise StoreReadOnlyError(
            f"{what} refused: the store at {self.path} is read as snapshots while another "
            f"process writes it; nothing was written"
        )

    def query(
        self,
        sparql: str,
        params: Mapping[str, Term] | None = None,
        *,
        default_graph: Sequence[IRI] | None = None,
        named_graphs: Sequence[IRI] | None = None,
        union_default_graph: bool = False,
    ) -> QueryResult:
        return self.current().query(
            sparql,
            params,
            default_graph=default_graph,
            named_graphs=named_graphs,
            union_default_graph=union_default_graph,
        )

    def query_to(
        self,
        sparql: str,
        params: Mapping[str, Term] | None = None,
        *,
        format: str = "json",
        default_graph: Sequence[IRI] | None = None,
        named_graphs: Sequence[IRI] | None = None,
        union_default_graph: bool = False,
        max_bytes: int | None = None,
    ) -> bytes:
        return self.current().query_to(
            sparql,
            params,
            format=format,
            default_graph=default_graph,
            named_graphs=named_graphs,
            union_default_graph=union_default_graph,
            max_bytes=max_bytes,
        )

    def graphs(self) -> list[IRI]:
        return self.current().graphs()

    def has_triple(self, predicate: IRI, obj: Term | None, graphs: Sequence[IRI]) -> bool:
        return self.current().has_triple(predicate, obj, graphs)

    def dump(
        self,
        output: BinaryIO | Path | None = None,
        *,
        format: str = "trig",
        graph: IRI | None = None,
    ) -> bytes | None:
        return self.current().dump(output, format=format, graph=graph)

    def close(self) -> None:
        with self._lock:
            self._current.close()

    def __getattr__(self, name: str) -> Any:
        # backend-specific reads (``raw`` for benchmarks and tools) go to the snapshot
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.current(), name)
