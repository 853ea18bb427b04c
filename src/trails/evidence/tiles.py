"""The transparency log published as static C2SP tiles (c2sp.org/tlog-tiles).

``publish(store, minter, folder)`` writes the log in the tiled layout any static web
server can host and any tlog-tiles client reads:

- ``checkpoint``: the newest tree head as a signed C2SP checkpoint (``trails.evidence.note``),
  with the witnesses' cosignatures kept for it (``trails.evidence.witnessing``);
- ``tile/<L>/<N>[.p/<W>]``: 256 hashes (8,192 bytes) a full tile; at level 0 the leaf
  hashes, at level L+1 each the Merkle tree hash of a full tile of level L; the rightmost
  tile of each level partial (``.p/<W>``, W hashes);
- ``tile/entries/<N>[.p/<W>]``: the leaves' data (``trails-log-leaf/1``, the seal's IRI
  and hash: docs/evidence-format.md) as big-endian uint16 length-prefixed entries.

``<N>`` is written in 3-digit groups, all but the last prefixed ``x`` (``x001/x234/067``).
The leaves are recomputed from the ledger and must give the head's root, or nothing is
written. Full tiles are immutable: one already there is left as it is (a publish after a
publish writes only what is new); the checkpoint is written last, by rename, so a reader
never sees a checkpoint whose tiles are missing. Reading and checking tiles is
``trails.evidence.tiles_read`` (no store needed).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from trails.errors import UserError
from trails.evidence.ledger import ledger_iri
from trails.evidence.merkle import leaf_hash, node_hash
from trails.evidence.proofs import leaf_data
from trails.evidence.transparency import log_iri, read_head
from trails.prov.iri import Minter
from trails.store.base import Solutions, Store
from trails.store.terms import Literal

__all__ = ["Published", "level_hashes", "publish", "tile_path", "write_tiles"]

WIDTH = 256

_LEAVES = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?i ?seal ?sealHash $log $ledger WHERE {
  GRAPH $log { ?leaf trails:leafIndex ?i ; trails:leafSeal ?seal }
  OPTIONAL { GRAPH $ledger { ?seal trails:sealHash ?sealHash } }
}
"""


@dataclass(frozen=True)
class Published:
    """What a publish wrote."""

    size: int
    tiles_written: int
    tiles_kept: int
    bytes_written: int


def tile_path(level: int | str, index: int, width: int = WIDTH) -> str:
    """``tile/<L>/<N>[.p/<W>]`` (``level`` ``"entries"`` for entry bundles)."""
    groups = f"{index:03d}"
    digits = [groups[max(0, i - 3) : i] for i in range(len(groups), 0, -3)][::-1]
    digits = [d.rjust(3, "0") for d in digits]
    name = "/".join([*(f"x{d}" for d in digits[:-1]), digits[-1]])
    suffix = f".p/{width}" if width < WIDTH else ""
    return f"tile/{level}/{name}{suffix}"


def level_hashes(leaves: list[bytes], size: int) -> list[list[bytes]]:
    """The hashes each tile level holds for a tree of ``size`` leaves: level 0 the leaf
    hashes, level L+1 the root of each full group of 256 at level L."""
    levels = [leaves[:size]]
    while len(levels[-1]) >= WIDTH:
        below = levels[-1]
        levels.append([_subtree(below[i : i + WIDTH]) for i in range(0, len(below) - 255, WIDTH)])
    return levels


def _subtree(hashes: list[bytes]) -> bytes:
    """The root of a perfect subtree of 256 hashes."""
    row = hashes
    while len(row) > 1:
        row = [node_hash(row[j], row[j + 1]) for j in range(0, len(row), 2)]
    return row[0]


def _root(leaves: list[bytes]) -> bytes:
    """The RFC 9162 root of the leaves (the stack of perfect subtrees, right to left)."""
    import hashlib

    if not leaves:
        return hashlib.sha256(b"").digest()
    stack: list[tuple[int, bytes]] = []
    for h in leaves:
        level, node = 0, h
        while stack and stack[-1][0] == level:
            node = node_hash(stack.pop()[1], node)
            level += 1
        stack.append((level, node))
    top = stack[-1][1]
    for _, h in reversed(stack[:-1]):
        top = node_hash(h, top)
    return top


def _write(folder: Path, relative: str, data: bytes, *, immutable: bool) -> bool:
    """Write one file atomically; an immutable one already there is kept (False)."""
    path = folder / relative
    if immutable and path.is_file():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def publish(store: Store, minter: Minter, folder: str | Path) -> Published:
    """Write the log's newest checkpoint, tiles and entry bundles under ``folder``.

    Raises:
        UserError: no log yet, its newest head unsigned (a tiled log's checkpoint is a
            signed note), a leaf too long for an entry, or the leaves do not give the
            head's root (the log was edited: ``trails verify`` says how).
        OSError: the folder could not be written.
        StoreError: the store could not be read.
    """
    log = log_iri(minter)
    head = read_head(store, log)
    if head is None:
        raise UserError("the store has no transparency log yet: run `trails verify` first")
    if not head.note:
        raise UserError(
            "the newest tree head has no signed checkpoint: set [audit] signing_key and run "
            "`trails verify` (a tiled log's checkpoint is a signed note)"
        )
    result = store.query(_LEAVES, {"log": log, "ledger": ledger_iri(minter)})
    assert isinstance(result, Solutions)
    data: dict[int, bytes] = {}
    for row in result:
        index, seal, seal_hash = row["i"], row["seal"], row.get("sealHash")
        if isinstance(index, Literal) and isinstance(seal_hash, Literal):
            data[int(index.value)] = leaf_data(str(seal), seal_hash.value)
    entries = [data.get(i, b"") for i in range(head.size)]
    if any(not e or len(e) > 0xFFFF for e in entries):
        raise UserError("a leaf of the log is missing or too long: run `trails verify`")
    leaves = [leaf_hash(e) for e in entries]
    if _root(leaves).hex() != head.root:
        raise UserError("the log's leaves do not give its head's root: run `trails verify`")
    return write_tiles(folder, entries, head.cosigned_note(), leaves=leaves)


def write_tiles(
    folder: str | Path, entries: list[bytes], note: str, *, leaves: list[bytes] | None = None
) -> Published:
    """Write ``entries`` (each a leaf's data) as tiles and bundles, and ``note`` (their
    signed checkpoint) last, under ``folder``."""
    target = Path(folder)
    leaves = leaves if leaves is not None else [leaf_hash(e) for e in entries]
    written = kept = size = 0
    for level, hashes in enumerate(level_hashes(leaves, len(entries))):
        for start in range(0, len(hashes), WIDTH):
            chunk = hashes[start : start + WIDTH]
            path = tile_path(level, start // WIDTH, len(chunk))
            blob = b"".join(chunk)
            if _write(target, path, blob, immutable=True):
                written, size = written + 1, size + len(blob)
            else:
                kept += 1
    for start in range(0, len(entries), WIDTH):
        chunk = entries[start : start + WIDTH]
        blob = b"".join(len(e).to_bytes(2, "big") + e for e in chunk)
        if _write(target, tile_path("entries", start // WIDTH, len(chunk)), blob, immutable=True):
            written, size = written + 1, size + len(blob)
        else:
            kept += 1
    _write(target, "checkpoint", note.encode("utf-8"), immutable=False)
    return Published(len(entries), written, kept, size + len(note))
