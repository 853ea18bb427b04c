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

The snapshot is data only (JSON: strings, numbers, lists), read with checks,
so a file planted in the store's directory can at worst be refused, never run.
Any error in it is the same as no snapshot.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from trails.memory.lexical import Bm25Index
from trails.memory.model import Memory

__all__ = ["FILE_NAME", "VERSION", "load", "path_for", "save"]

FILE_NAME = "trails-memory-index.json"
VERSION = 1
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


def _row(m: Memory) -> list[Any]:
    row: list[Any] = [getattr(m, f) for f in _FIELDS]
    for i in _TIME_AT:
        if row[i] is not None:
            row[i] = row[i].isoformat()
    row[_TAGS_AT] = list(m.tags)
    return row


def save(
    path: Path, base: str, tokens: frozenset[str], docs: list[Memory], lexical: Bm25Index
) -> None:
    """Write the snapshot atomically (a temporary file renamed over the old one)."""
    postings, lengths = lexical.export()
    data = {
        "format": _FORMAT,
        "version": VERSION,
        "base": base,
        "tokens": sorted(tokens),
        "fields": list(_FIELDS),
        "memories": [_row(m) for m in docs],
        "lengths": lengths,
        "postings": postings,
    }
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".memory-index-", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except OSError as exc:  # a snapshot is an optimisation: never fail the caller for it
        log.warning("could not write the memory index snapshot %s: %s", path, exc)


def _memory(row: list[Any]) -> Memory:
    if len(row) != len(_FIELDS):
        raise ValueError("a memory row of the wrong length")
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


def load(
    path: Path, base: str, tokens: frozenset[str]
) -> tuple[list[Memory], Bm25Index] | None:
    """The memories and lexical index of a valid snapshot at ``tokens``, else None."""
    try:
        with path.open("rb") as f:
            data = json.loads(f.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable memory index snapshot %s: %s", path, exc)
        return None
    try:
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError("not a memory index snapshot")
        if data.get("version") != VERSION or data.get("fields") != list(_FIELDS):
            raise ValueError(f"snapshot version {data.get('version')!r}, not {VERSION}")
        if data.get("base") != base or set(data.get("tokens", ())) != tokens:
            return None  # another store, or the store changed since: stale
        docs = [_memory(row) for row in data["memories"]]
        lexical = Bm25Index.restore(data["postings"], data["lengths"], len(docs))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("ignoring invalid memory index snapshot %s: %s", path, exc)
        return None
    return docs, lexical
