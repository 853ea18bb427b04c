"""An evidence bundle's files held in a spill file and zipped from it, never whole in memory.

A bundle of a whole store holds every session's TriG and the pack's answers over them:
kept in memory until the archive was built, that grew with the store (1.5 GB at 4,000
sessions). ``Spill`` keeps each file in a temporary file as it is made, with its size
and SHA-256 (what the manifest lists), and ``write_zip`` copies them into the canonical
archive (``zip_info``: stored, sorted, fixed times and modes) in pieces: the very bytes
``zipfile.ZipFile.writestr`` of each file would write.
"""

from __future__ import annotations

import hashlib
import tempfile
import zipfile
from collections.abc import Iterable
from typing import IO

__all__ = ["EPOCH", "Spill", "zip_info"]

EPOCH = (1980, 1, 1, 0, 0, 0)
"""Every entry's time: an archive's bytes depend on its content only."""

_COPY = 1 << 20


def zip_info(name: str) -> zipfile.ZipInfo:
    """The header of an entry of the canonical archive (stored, fixed time and mode)."""
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.compress_type = zipfile.ZIP_STORED
    info.create_system = 3
    info.external_attr = 0o644 << 16
    return info


class Spill:
    """Files of an archive, kept in one temporary file as they are added."""

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close)
        self._at: dict[str, tuple[int, int, str]] = {}  # name -> offset, size, sha256

    def add(self, name: str, data: bytes) -> None:
        """Keep ``data`` as the file ``name`` (added once)."""
        if name in self._at:
            raise ValueError(f"{name} is already in the archive")
        self._at[name] = (self._file.tell(), len(data), hashlib.sha256(data).hexdigest())
        self._file.write(data)

    def add_parts(self, name: str, parts: Iterable[bytes]) -> None:
        """Keep the concatenated ``parts`` as the file ``name`` (added once), never whole."""
        if name in self._at:
            raise ValueError(f"{name} is already in the archive")
        offset, digest = self._file.tell(), hashlib.sha256()
        for part in parts:
            digest.update(part)
            self._file.write(part)
        self._at[name] = (offset, self._file.tell() - offset, digest.hexdigest())

    def read(self, name: str) -> bytes:
        """The bytes of the file ``name``."""
        offset, size, _ = self._at[name]
        self._file.seek(offset)
        data = self._file.read(size)
        self._file.seek(0, 2)  # files are added at the end
        if len(data) != size:
            raise OSError("the bundle's spill file ended early")
        return data

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
                        chunk = self._file.read(min(_COPY, left))
                        if not chunk:
                            raise OSError("the bundle's spill file ended early")
                        entry.write(chunk)
                        left -= len(chunk)
        self._file.seek(0, 2)
        return out.tell() - start

    def close(self) -> None:
        self._file.close()
