"""The memory index saved beside an on-disk store, so a new process need not rebuild it.

Building the index means reading every memory from the store and tokenising
its text: seconds at 100k memories. A process that built or changed the index
leaves a snapshot of it in the store's directory (``trails-memory-index.json``),
and the next process opening the store reads it instead, when it is valid.

Valid means: same format version, same base IRI, and taken at the store's
current memory revision, the set of ``trails:memoryRevision`` tokens (every
write that changes memory replaces them, in the same atomic write). A snapshot
from before any later change, or from another store, is never used: the index
is then loaded from the store and a fresh snapshot written.

The snapshot is data only, read with checks, so a file planted in the store's
directory can at worst be refused, never run: a JSON header line (format,
version, base, revision tokens, memory ids, the index terms), the postings and
document lengths as little arrays of 64-bit integers, then one JSON line per
memory. Loading decodes only the header and the arrays; each memory's line is
decoded when the memory is first read, and each term's postings when the term
is first searched, so a new process's first recall costs about the same at
100k memories as at 1k. Any error in the header or arrays is the same as no
snapshot; a damaged memory line found later raises ``StoreError``.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import sys
import tempfile
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import accumulate
from pathlib import Path
from typing import Any

from trails.errors import StoreError
from trails.memory.lexical import INT, Bm25Index
from trails.memory.model import Memory

__all__ = ["FILE_NAME", "VERSION", "Rows", "Snapshot", "load", "path_for", "save"]

FILE_NAME = "trails-memory-index.json"
VERSION = 2
_FORMAT = "trails-memory-index"

log = logging.getLogger(__name__)

# Memory fields in snapshot order; the datetime ones are stored as ISO 8601 text.
_FIELDS = (
    "id",
    "content",
    "confidence",
    "topic",
    "tags",
    "scope",
    "agent_did",
    "recorded_at",
    "activity",
    "session",
    "valid_from",
    "valid_until",
    "derived_from",
    "revision_of",
    "invalidated_at",
    "invalidated_by",
    "superseded_by",
    "reason",
)
_TIMES = frozenset({"recorded_at", "valid_from", "valid_until", "invalidated_at"})
_TIME_AT = tuple(i for i, f in enumerate(_FIELDS) if f in _TIMES)
_TAGS_AT = _FIELDS.index("tags")


def path_for(store: object) -> Path | None:
    """Where the snapshot of ``store``'s memory index lives (None: not an on-disk embedded store)."""
    where = getattr(store, "path", None)
    if not getattr(store, "exclusive", False) or not isinstance(where, Path):
        return None
    return where / FILE_NAME


def _encode(m: Memory) -> bytes:
    row: list[Any] = [getattr(m, f) for f in _FIELDS]
    for i in _TIME_AT:
        if row[i] is not None:
            row[i] = row[i].isoformat()
    row[_TAGS_AT] = list(m.tags)
    # JSON escapes every control character, so a row never holds a raw newline
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _decode(line: bytes) -> Memory:
    row = json.loads(line)
    if not isinstance(row, list) or len(row) != len(_FIELDS):
        raise ValueError("a memory row of the wrong shape")
    for i in _TIME_AT:
        if row[i] is not None:
            row[i] = datetime.fromisoformat(row[i])
    row[_TAGS_AT] = tuple(row[_TAGS_AT])
    memory = Memory(*row)
    if not isinstance(memory.id, str) or not isinstance(memory.content, str):
        raise ValueError("a memory without id or content")
    if not isinstance(memory.confidence, int | float) or memory.recorded_at.tzinfo is None:
        raise ValueError("a memory with a bad confidence or time")
    return memory


class Rows:
    """Memories by position; rows restored from a snapshot are decoded on first read.

    ``data`` and ``offsets`` hold the snapshot's memory lines: row ``i`` is
    ``data[base + offsets[i]:base + offsets[i + 1]]`` until it is decoded (or replaced).
    """

    __slots__ = ("_base", "_data", "_items", "_offsets", "_source")

    def __init__(
        self,
        n: int = 0,
        data: bytes = b"",
        offsets: array[int] | None = None,
        source: Path | None = None,
        base: int = 0,
    ) -> None:
        self._items: list[Memory | None] = [None] * n
        self._data = data
        self._offsets = offsets if offsets is not None else array(INT, [0])
        self._source = source
        self._base = base

    def __len__(self) -> int:
        return len(self._items)

    def _line(self, i: int) -> bytes:
        return self._data[self._base + self._offsets[i] : self._base + self._offsets[i + 1]]

    def __getitem__(self, i: int) -> Memory:
        item = self._items[i]
        if item is not None:
            return item
        try:
            memory = _decode(self._line(i))
        except (ValueError, TypeError, AttributeError, IndexError) as exc:
            raise StoreError(
                f"the memory index snapshot {self._source} is damaged ({exc}); "
                "delete it and the index is rebuilt from the store"
            ) from None
        self._items[i] = memory
        return memory

    def __setitem__(self, i: int, memory: Memory) -> None:
        self._items[i] = memory

    def __iter__(self) -> Iterator[Memory]:
        for i in range(len(self._items)):
            yield self[i]

    def append(self, memory: Memory) -> None:
        self._items.append(memory)

    def encoded(self) -> list[bytes]:
        """Every row as a snapshot line (rows never decoded are written back as read)."""
        return [
            self._line(i) if item is None else _encode(item) for i, item in enumerate(self._items)
        ]


@dataclass
class Snapshot:
    """What a valid snapshot restores."""

    by_id: dict[str, int]
    rows: Rows
    lexical: Bm25Index
    successors: dict[str, list[str]]
    watermark: datetime | None


def save(path: Path, base: str, tokens: frozenset[str], state: Snapshot) -> None:
    """Write the snapshot atomically (a temporary file renamed over the old one).

    Args:
        path: the snapshot file (``path_for``).
        base: the store's base IRI.
        tokens: the memory revision the index was at.
        state: what ``load`` will restore (the index's rows, ids, terms, successors
            and watermark).
    """
    ids = [""] * len(state.rows)
    for mid, doc in state.by_id.items():
        ids[doc] = mid
    terms, counts, flat, lengths = state.lexical.export()
    lines = state.rows.encoded()
    offsets = array(INT, [0])
    offsets.extend(accumulate(len(line) for line in lines))
    head = {
        "format": _FORMAT,
        "version": VERSION,
        "base": base,
        "tokens": sorted(tokens),
        "byteorder": sys.byteorder,
        "int_bytes": flat.itemsize,
        "ids": ids,
        "terms": terms,
        "counts": counts,
        "flat_bytes": len(flat) * flat.itemsize,
        "lengths_bytes": len(lengths) * lengths.itemsize,
        "offsets_bytes": len(offsets) * offsets.itemsize,
        "successors": state.successors,
        "watermark": state.watermark.isoformat() if state.watermark else None,
    }
    parts = [
        json.dumps(head, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
        b"\n",
        flat.tobytes(),
        lengths.tobytes(),
        offsets.tobytes(),
        *lines,
    ]
    try:
        fd, tmp = tempfile.mkstemp(prefix=".memory-index-", dir=path.parent)
        with os.fdopen(fd, "wb") as out:
            out.writelines(parts)
        os.replace(tmp, path)
    except OSError as exc:  # a snapshot is an optimisation: never fail the caller for it
        log.warning("could not write the memory index snapshot %s: %s", path, exc)


def _array(data: bytes) -> array[int]:
    values = array(INT)
    values.frombytes(data)
    return values


def _read(path: Path, data: bytes, base: str, tokens: frozenset[str]) -> Snapshot | None:
    end = data.index(b"\n")
    head = json.loads(data[:end])
    if not isinstance(head, dict) or head.get("format") != _FORMAT:
        raise ValueError("not a memory index snapshot")
    if head.get("version") != VERSION or head.get("byteorder") != sys.byteorder:
        raise ValueError(f"snapshot version {head.get('version')!r}, not {VERSION}")
    if head.get("int_bytes") != array(INT).itemsize:
        raise ValueError("snapshot written with another integer size")
    if head.get("base") != base or set(head.get("tokens", ())) != tokens:
        return None  # another store, or the store changed since: stale
    ids = head["ids"]
    if not isinstance(ids, list):
        raise ValueError("bad memory ids")
    n = len(ids)
    cut = [end + 1]
    for key in ("flat_bytes", "lengths_bytes", "offsets_bytes"):
        cut.append(cut[-1] + int(head[key]))
    flat, lengths, offsets = (_array(data[a:b]) for a, b in itertools.pairwise(cut))
    if (
        len(lengths) != n
        or len(offsets) != n + 1
        or offsets[0] != 0
        or offsets[-1] != len(data) - cut[-1]
    ):
        raise ValueError("memory rows, ids and lengths disagree")
    lexical = Bm25Index.restore(head["terms"], head["counts"], flat, lengths)
    successors = head["successors"]
    if not isinstance(successors, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in successors.values()
    ):
        raise ValueError("bad successors")
    mark = head["watermark"]
    watermark = datetime.fromisoformat(mark) if mark is not None else None
    by_id = dict(zip(ids, range(n), strict=True))
    if len(by_id) != n or not all(isinstance(k, str) for k in successors):
        raise ValueError("repeated memory ids")
    rows = Rows(n, data, offsets, path, cut[-1])
    return Snapshot(by_id, rows, lexical, successors, watermark)


def load(path: Path, base: str, tokens: frozenset[str]) -> Snapshot | None:
    """What a valid snapshot at ``tokens`` restores, else None."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("ignoring unreadable memory index snapshot %s: %s", path, exc)
        return None
    try:
        return _read(path, data, base, tokens)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("ignoring invalid memory index snapshot %s: %s", path, exc)
        return None
