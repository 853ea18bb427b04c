"""A throwaway store on disk, filled in one bulk load: answers over many documents in
bounded memory.

An evidence bundle's answers are the pack's queries over the bundle's own graphs, which
``trails export --bundle`` computes and ``trails verify --bundle`` recomputes. Held in a
memory store, those graphs grew the process with the bundle (every session of a whole
store). ``scratch_store`` loads them instead into a store in a temporary folder, deleted
when it is left: pyoxigraph's bulk loader writes the store's files directly (a transaction
per document kept RocksDB's write buffers full, and cost more CPU than the queries), and
the store reads what a query needs from disk. Each document keeps its own blank nodes, as
a load of each document one by one would; a document that does not parse loads nothing.
"""

from __future__ import annotations

import contextlib
import itertools
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

import pyoxigraph as ox

from trails.errors import RDFSyntaxError, StoreError
from trails.store.base import DEFAULT_BASE_IRI
from trails.store.oxigraph import OxigraphStore, rdf_format

__all__ = ["BATCH", "Document", "Refused", "scratch_store"]

BATCH = 100_000
"""Quads a bulk load takes at a time: its memory (pyoxigraph's loader sorts a batch in
memory, in every index) is bounded by it, whatever the documents hold."""

_HOLD = 1 << 20
"""A document up to this size is parsed into memory whole before it loads."""

Refused = Callable[[str, str], None]
"""Told ``(name, why)`` of a document that does not parse (it is left out)."""


Document = bytes | Callable[[], IO[bytes]]
"""A document's bytes, or what opens a stream of them (read twice when it is large: never
whole in memory)."""


def _quads(
    documents: Iterable[tuple[str, Document, str]], refused: Refused | None
) -> Iterator[ox.Quad]:
    for name, data, format in documents:
        fmt = rdf_format(format)
        try:
            # the whole document parsed first: one that fails half way loads nothing (a
            # large one parsed twice rather than held: a whole store's ledger segment)
            if callable(data):
                for _ in ox.parse(data(), fmt):
                    pass
                quads: Iterable[ox.Quad] = ox.parse(data(), fmt, rename_blank_nodes=True)
            elif len(data) > _HOLD:
                for _ in ox.parse(data, fmt):
                    pass
                quads = ox.parse(data, fmt, rename_blank_nodes=True)
            else:
                quads = list(ox.parse(data, fmt, rename_blank_nodes=True))
        except SyntaxError as exc:
            if refused is None:
                raise RDFSyntaxError(f"cannot parse {name} as {format}: {exc}") from exc
            refused(name, str(exc))
            continue
        yield from quads


def _bulk(store: OxigraphStore, quads: Iterator[ox.Quad]) -> None:
    """Bulk load ``quads`` ``BATCH`` at a time: pyoxigraph's loader holds a batch in memory."""
    raw = store.raw
    while (first := next(quads, None)) is not None:
        raw.bulk_extend(itertools.chain((first,), itertools.islice(quads, BATCH - 1)))


def _folder() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="trails-scratch-")


@contextlib.contextmanager
def scratch_store(
    documents: Iterable[tuple[str, Document, str]],
    *,
    refused: Refused | None = None,
    base_iri: str | None = None,
    in_memory: bool = False,
) -> Iterator[OxigraphStore]:
    """A store in a temporary folder holding ``documents``, deleted on leaving the block.

    Args:
        documents: ``(name, data, format)`` of each document (``trig``, ``nquads``, ...),
            read one at a time as the load goes; ``data`` is the bytes, or a function
            that opens a stream of them (a large document, never read whole).
        refused: told each document that does not parse (without it, that raises).
        base_iri: the store's base IRI (default: trails' own).
        in_memory: keep the store in memory instead (for a few documents, where creating
            a store on disk would cost more than the documents).

    Raises:
        RDFSyntaxError: a document does not parse and ``refused`` is None.
        StoreError: the folder or the store cannot be written.
    """
    with contextlib.ExitStack() as stack:
        folder = None if in_memory else stack.enter_context(_folder())
        where = None if folder is None else Path(folder) / "store"
        store = OxigraphStore(where, base_iri=base_iri or DEFAULT_BASE_IRI)
        try:
            try:
                _bulk(store, _quads(documents, refused))
            except OSError as exc:
                raise StoreError(f"cannot fill the scratch store {store!r}: {exc}") from exc
            yield store
        finally:
            store.close()
