"""Reading a tiled log (c2sp.org/tlog-tiles) with nothing but its files: what a monitor does.

``TileLog(fetch)`` reads a published log (``trails.evidence.tiles``) through ``fetch``, a
function from a path under the log's prefix (``checkpoint``, ``tile/0/000``) to its bytes:
a folder (``folder_fetch``) or an HTTP prefix (``http_fetch``, bounded by a timeout and a
size limit). ``check`` mirrors it all: the checkpoint's form and (with the log's public
key) its note signature, every entry bundle against its level-0 tile, every tile above
against the tiles below, and the root against the checkpoint. ``inclusion`` and
``consistency`` build RFC 9162 proofs from the O(log n) tiles they need.
"""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from trails.errors import UserError
from trails.evidence.merkle import consistency_proof, inclusion_proof, leaf_hash, node_hash, root
from trails.evidence.note import Checkpoint, NoteError, parse_checkpoint, parse_note
from trails.evidence.note import signature_status as note_signed
from trails.evidence.tiles import WIDTH, level_hashes, tile_path

__all__ = ["TileError", "TileLog", "TileReport", "folder_fetch", "http_fetch"]

Fetch = Callable[[str], bytes]

_MAX = 1 << 20
_TIMEOUT_S = 10.0


class TileError(UserError):
    """A tile, bundle or checkpoint that cannot be read or is not of the layout."""


def folder_fetch(folder: str | Path) -> Fetch:
    """Read paths under ``folder`` (never outside it)."""
    base = Path(folder).resolve()

    def fetch(path: str) -> bytes:
        target = (base / path).resolve()
        if not target.is_relative_to(base):
            raise TileError(f"{path} is outside the log's folder")
        try:
            return target.read_bytes()
        except OSError as exc:
            raise TileError(f"cannot read {path} of the tiled log: {exc.strerror}") from None

    return fetch


def http_fetch(prefix: str, timeout: float = _TIMEOUT_S) -> Fetch:
    """GET paths under the URL ``prefix``, each answer bounded in time and size."""
    base = prefix.rstrip("/") + "/"

    def fetch(path: str) -> bytes:
        try:
            with urllib.request.urlopen(base + path, timeout=timeout) as answer:
                data: bytes = answer.read(_MAX + 1)
        except (OSError, urllib.error.URLError, ValueError) as exc:
            raise TileError(f"cannot fetch {base + path}: {exc}") from None
        if len(data) > _MAX:
            raise TileError(f"{base + path} is larger than {_MAX} bytes")
        return data

    return fetch


@dataclass
class TileReport:
    """What ``TileLog.check`` found."""

    checkpoint: Checkpoint | None = None
    entries: int = 0
    tiles: int = 0
    problems: list[str] = field(default_factory=list)
    signed: bool | None = None
    """The note signature by the key given: True, False, or None (no key, or no line of it)."""

    @property
    def ok(self) -> bool:
        return not self.problems


class TileLog:
    """A tiled log read through ``fetch``; tiles read once and kept."""

    def __init__(self, fetch: Fetch) -> None:
        self.fetch = fetch
        self.tiles: dict[tuple[int | str, int, int], bytes] = {}

    def checkpoint(self, public: bytes | None = None) -> tuple[Checkpoint, bool | None]:
        """The checkpoint, and whether its note signature by ``public`` verifies.

        Raises:
            TileError: no checkpoint, or not a checkpoint.
        """
        try:
            note = parse_note(self.fetch("checkpoint"))
            checkpoint = parse_checkpoint(note.text)
        except NoteError as exc:
            raise TileError(f"the tiled log's checkpoint: {exc}") from None
        signed = note_signed(note, checkpoint.origin, public) if public is not None else None
        return checkpoint, signed

    def tile(self, level: int | str, index: int, size: int) -> bytes:
        """Tile ``index`` of ``level`` (or an entry bundle) as the tree of ``size`` needs it.

        Raises:
            TileError: missing, or not of the width the size gives.
        """
        count = size // WIDTH ** (0 if level == "entries" else int(level))
        width = min(WIDTH, count - index * WIDTH)
        if width <= 0:
            raise TileError(f"a tree of {size} leaves has no tile {index} at level {level}")
        key = (level, index, width)
        if key not in self.tiles:
            data = self.fetch(tile_path(level, index, width))
            if level != "entries" and len(data) != 32 * width:
                raise TileError(f"{tile_path(level, index, width)} is not {width} hashes")
            self.tiles[key] = data
        return self.tiles[key]

    def hash_at(self, size: int) -> Callable[[int, int], bytes]:
        """A ``merkle.Subtrees`` over the tiles: the root of the perfect subtree of
        ``2**level`` leaves number ``index``, from the tile that holds it."""

        def subtree(level: int, index: int) -> bytes:
            tier, height = divmod(level, 8)
            first = index << height  # its first hash in the tier
            data = self.tile(tier, first // WIDTH, size)
            at = first % WIDTH
            row = [data[32 * j : 32 * j + 32] for j in range(at, at + (1 << height))]
            if len(row) != 1 << height or any(len(h) != 32 for h in row):
                raise TileError(f"the tiles lack subtree {level}:{index}")
            while len(row) > 1:
                row = [node_hash(row[j], row[j + 1]) for j in range(0, len(row), 2)]
            return row[0]

        return subtree

    def inclusion(self, index: int, size: int) -> list[bytes]:
        """The inclusion proof of leaf ``index`` in the tree of ``size`` leaves."""
        return inclusion_proof(self.hash_at(size), index, size)

    def consistency(self, old: int, size: int) -> list[bytes]:
        """The consistency proof from ``old`` leaves to ``size`` leaves."""
        return consistency_proof(self.hash_at(size), old, size)

    def check(self, public: bytes | None = None) -> TileReport:
        """Mirror and check everything (see the module docstring)."""
        report = TileReport()
        checkpoint, report.signed = self.checkpoint(public)
        report.checkpoint, size = checkpoint, checkpoint.size
        if report.signed is False or (public is not None and report.signed is None):
            report.problems.append("the checkpoint is not signed by the log's key")
        leaves: list[bytes] = []
        for n in range(0, (size + WIDTH - 1) // WIDTH):
            bundle, tile = self.tile("entries", n, size), self.tile(0, n, size)
            hashes = [tile[i : i + 32] for i in range(0, len(tile), 32)]
            entries = _entries(bundle)
            report.tiles += 2
            if entries is None or [leaf_hash(e) for e in entries] != hashes:
                report.problems.append(f"{tile_path('entries', n, len(hashes))} does not hash "
                                       "to its level-0 tile")  # fmt: skip
            report.entries += len(entries or [])
            leaves.extend(hashes)
        for level, hashes in enumerate(level_hashes(leaves, size)[1:], start=1):
            for n in range(0, (len(hashes) + WIDTH - 1) // WIDTH):
                report.tiles += 1
                if self.tile(level, n, size) != b"".join(hashes[n * WIDTH : (n + 1) * WIDTH]):
                    report.problems.append(f"tile {level}/{n} is not the tiles below it")
        if root(self.hash_at(size), size) != checkpoint.root or _plain_root(leaves) != (
            checkpoint.root
        ):
            report.problems.append("the tiles do not give the checkpoint's root")
        return report


def _plain_root(leaves: list[bytes]) -> bytes:
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return node_hash(_plain_root(leaves[:k]), _plain_root(leaves[k:]))


def _entries(bundle: bytes) -> list[bytes] | None:
    """The entries of a bundle (uint16 big-endian length, then the entry), or None."""
    out, at = [], 0
    while at < len(bundle):
        if at + 2 > len(bundle):
            return None
        size = int.from_bytes(bundle[at : at + 2], "big")
        if at + 2 + size > len(bundle):
            return None
        out.append(bundle[at + 2 : at + 2 + size])
        at += 2 + size
    return out
