"""An evidence bundle's files held in a spill file and zipped from it, never whole in memory.

A bundle of a whole store holds every session's TriG and the pack's answers over them:
kept in memory until the archive was built, that grew with the store (1.5 GB at 4,000
sessions). ``Spill`` keeps each file in a temporary file as it is made, with its size
and SHA-256 (what the manifest lists), and ``write_zip`` copies them into the canonical
archive (``zip_info``: stored, sorted, fixed times and modes) in pieces: the very bytes
``zipfile.ZipFile.writestr`` of each file would write. ``read_archive`` goes the other
way for ``verify_bundle``: it checks the central directory before reading anything,
copies each entry into a spill a part at a time, and compares the archive with the
canonical archive of its files rebuilt in a temporary file, so verifying a bundle holds
no more of it in memory than writing it did.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from typing import IO, BinaryIO, cast

__all__ = ["EPOCH", "MANIFEST", "NotABundle", "Spill", "read_archive", "zip_info"]

EPOCH = (1980, 1, 1, 0, 0, 0)
"""Every entry's time: an archive's bytes depend on its content only."""

_PART = 1 << 20
"""Bytes copied or compared at a time."""

MANIFEST = "manifest.json"
"""The bundle's manifest: the archive's first entry."""


class NotABundle(Exception):
    """An archive ``read_archive`` refuses: not a bundle's layout, or not a readable zip."""


_NAMES = re.compile(
    r"manifest\.json|ledger/segment\.nq|log/proofs\.json"
    r"|sessions/\d{4,}\.trig|keys/\d{4,}\.pem"
    r"|answers/[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/\d{4,})?\.csv"
)
"""Every name ``write_bundle`` gives an entry; an archive with any other is refused unread."""

_ENCRYPTED = 0x1
"""The general-purpose flag bit of an encrypted entry (``write_bundle`` never sets it)."""

_MALFORMED = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    NotImplementedError,  # a compression method zipfile does not know
    RuntimeError,  # an encrypted entry
    zlib.error,
    EOFError,
    OverflowError,
    UnicodeDecodeError,
    struct.error,
    OSError,
    ValueError,
    LookupError,
)
"""What ``zipfile`` raises on a malformed archive: each becomes an ``archive`` finding."""


def _layout_problem(infos: list[zipfile.ZipInfo], size: int) -> str | None:
    """What in the central directory ``write_bundle`` never writes, before any entry is read.

    Entries are stored (never deflated: nothing is inflated), unencrypted, under the
    names ``write_bundle`` gives, each once, and their sizes together fit in the archive,
    so reading them takes no more memory than the file's own size.
    """
    if not infos:
        return "it has no entries"
    seen: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        if name in seen:
            return f"the entry {name!r} appears twice"
        seen.add(name)
        if not _NAMES.fullmatch(name):
            return f"the entry {name!r} is not a bundle file"
        if info.compress_type != zipfile.ZIP_STORED:
            return f"the entry {name!r} is compressed (method {info.compress_type}); bundles store"
        if info.flag_bits & _ENCRYPTED:
            return f"the entry {name!r} is marked encrypted"
        if info.file_size != info.compress_size:
            return (
                f"the entry {name!r} claims {info.file_size} bytes stored in {info.compress_size}"
            )
        total += info.compress_size
        if total > size:
            return f"its entries claim {total} bytes or more in an archive of {size}"
    if MANIFEST not in seen:
        return f"it has no {MANIFEST}"
    return None


def zip_info(name: str) -> zipfile.ZipInfo:
    """The header of an entry of the canonical archive (stored, fixed time and mode)."""
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.compress_type = zipfile.ZIP_STORED
    info.create_system = 3
    info.external_attr = 0o644 << 16
    return info


class _Appending(io.RawIOBase):
    """Writes go to the end of a spill file, hashed on the way."""

    def __init__(self, file: IO[bytes], digest: hashlib._Hash) -> None:
        self._file, self._digest = file, digest

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self._digest.update(data)
        self._file.write(data)
        return len(data)


class _Window(io.RawIOBase):
    """Reads one file of a spill, from wherever the spill file was left."""

    def __init__(self, file: IO[bytes], offset: int, size: int) -> None:
        self._file, self._at, self._left = file, offset, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        want = min(len(buffer), self._left)
        if want <= 0:
            return 0
        self._file.seek(self._at)
        got = self._file.readinto(memoryview(buffer)[:want])  # type: ignore[attr-defined]
        if not got:
            raise OSError("the bundle's spill file ended early")
        self._at, self._left = self._at + got, self._left - got
        return int(got)


class Spill:
    """Files of an archive, kept in one temporary file as they are added."""

    def __init__(self) -> None:
        # reads move anywhere in the file; each file is added at its end (``seek(0, 2)``)
        self._file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close)
        self._at: dict[str, tuple[int, int, str]] = {}  # name -> offset, size, sha256

    def add(self, name: str, data: bytes) -> None:
        """Keep ``data`` as the file ``name`` (added once)."""
        if name in self._at:
            raise ValueError(f"{name} is already in the archive")
        self._file.seek(0, 2)  # files are added at the end, wherever a read left it
        self._at[name] = (self._file.tell(), len(data), hashlib.sha256(data).hexdigest())
        self._file.write(data)

    def add_parts(self, name: str, parts: Iterable[bytes]) -> None:
        """Keep the concatenated ``parts`` as the file ``name`` (added once), never whole."""
        if name in self._at:
            raise ValueError(f"{name} is already in the archive")
        offset, digest = self._file.seek(0, 2), hashlib.sha256()
        for part in parts:
            digest.update(part)
            self._file.write(part)
        self._at[name] = (offset, self._file.tell() - offset, digest.hexdigest())

    @contextlib.contextmanager
    def writer(self, name: str) -> Iterator[BinaryIO]:
        """A stream whose bytes become the file ``name`` (added once) as they are written:
        a file an exporter writes goes to disk as it is made, never whole in memory."""
        if name in self._at:
            raise ValueError(f"{name} is already in the archive")
        offset, digest = self._file.seek(0, 2), hashlib.sha256()
        yield cast(BinaryIO, _Appending(self._file, digest))
        self._at[name] = (offset, self._file.tell() - offset, digest.hexdigest())

    def size(self, name: str) -> int:
        """The size of the file ``name``."""
        return self._at[name][1]

    def read(self, name: str) -> bytes:
        """The bytes of the file ``name``."""
        offset, size, _ = self._at[name]
        self._file.seek(offset)
        data = self._file.read(size)
        if len(data) != size:
            raise OSError("the bundle's spill file ended early")
        return data

    def open(self, name: str) -> IO[bytes]:
        """A stream of the file ``name``, read a piece at a time (never whole)."""
        offset, size, _ = self._at[name]
        return io.BufferedReader(_Window(self._file, offset, size), _PART)

    def __len__(self) -> int:
        return len(self._at)

    def names(self) -> list[str]:
        """The files' names, in the order added."""
        return list(self._at)

    def listing(self) -> dict[str, dict[str, str | int]]:
        """``{name: {"sha256": ..., "bytes": ...}}`` for every file, sorted by name."""
        return {
            name: {"sha256": sha, "bytes": size}
            for name, (_, size, sha) in sorted(self._at.items())
        }

    def write_zip(self, out: IO[bytes], first: tuple[str, bytes]) -> int:
        """Write the archive of ``first`` (its name and bytes) and then every file, sorted by
        name, to ``out``; returns the bytes written."""
        start = out.tell()
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:
            archive.writestr(zip_info(first[0]), first[1])
            for name in sorted(self._at):
                offset, size, _ = self._at[name]
                info = zip_info(name)
                info.file_size = size  # as writestr sets it before it opens the entry
                self._file.seek(offset)
                with archive.open(info, mode="w") as entry:
                    left = size
                    while left:
                        chunk = self._file.read(min(_PART, left))
                        if not chunk:
                            raise OSError("the bundle's spill file ended early")
                        entry.write(chunk)
                        left -= len(chunk)
        return out.tell() - start

    def close(self) -> None:
        self._file.close()


def read_archive(source: IO[bytes]) -> tuple[bytes, Spill, bool]:
    """An evidence bundle's archive, checked before anything is read from it.

    Returns:
        The manifest's bytes, every other file (in a spill, read one at a time, a part at a
        time: the caller closes it) and whether the archive is byte for byte the canonical
        archive of its files.

    Raises:
        NotABundle: its central directory is not a bundle's layout (nothing is read), or
            it is not a readable zip archive.
    """
    spill = Spill()
    try:
        with zipfile.ZipFile(source) as archive:
            infos = archive.infolist()  # the central directory: nothing is read or inflated yet
            problem = _layout_problem(infos, os.fstat(source.fileno()).st_size)
            if problem is not None:
                raise NotABundle(f"not a bundle's layout: {problem}")
            manifest = b""
            for info in infos:
                with archive.open(info) as entry:
                    if info.filename == MANIFEST:
                        manifest = b"".join(_entry_parts(entry, info))
                    else:
                        spill.add_parts(info.filename, _entry_parts(entry, info))
            return manifest, spill, _canonical(spill, manifest, source)
    except _MALFORMED as exc:
        spill.close()
        raise NotABundle(f"not a readable zip archive: {exc or type(exc).__name__}") from exc
    except BaseException:
        spill.close()
        raise


def _entry_parts(entry: IO[bytes], info: zipfile.ZipInfo) -> Iterator[bytes]:
    """An entry's bytes a part at a time: no more than it claims (a stored entry is its
    size), and not fewer."""
    read = 0
    while part := entry.read(min(_PART, info.file_size + 1 - read)):
        read += len(part)
        if read > info.file_size:
            break
        yield part
    if read != info.file_size:
        raise zipfile.BadZipFile(
            f"the entry {info.filename!r} holds {read} bytes or more, "
            f"not the {info.file_size} it claims"
        )


def _canonical(spill: Spill, manifest: bytes, source: IO[bytes]) -> bool:
    """Whether ``source`` is byte for byte the canonical archive of its files (rebuilt in a
    temporary file, compared a part at a time)."""
    with tempfile.TemporaryFile() as rebuilt:
        size = spill.write_zip(rebuilt, (MANIFEST, manifest))
        source.seek(0, 2)
        if source.tell() != size:
            return False
        rebuilt.seek(0)
        source.seek(0)
        while True:
            ours, theirs = rebuilt.read(_PART), source.read(_PART)
            if ours != theirs:
                return False
            if not ours:
                return True
