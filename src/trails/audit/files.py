"""Files a user names, written safely: never through a link planted at the name or beside it.

Every file trails writes on a user's behalf (an export, an evidence bundle, the
HTML report, an OTLP/JSON payload) may be named in a folder other people can
write to. Writing it by opening the name, or a predictable neighbour such as
``F.partial``, follows a symbolic link someone planted there, so a run by a
more privileged user would overwrite the file the link points at.

``write_file`` never opens the name. It creates a temporary file under a random
name in the target's folder with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (an existing
file or link of that name is refused, never followed or reused), writes it,
flushes it to disk, then moves it onto the name with ``os.replace``, which
replaces a link at the name instead of writing through it. A failure or an
interrupt removes the temporary file and leaves the name as it was: readers see
the old file or the whole new one, never half of it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

from trails.errors import ExportError

__all__ = ["write_bytes", "write_file"]

T = TypeVar("T")

_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_ATTEMPTS = 16


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _create_beside(target: Path, what: str) -> tuple[int, Path]:
    """A new, empty file under a random name in ``target``'s folder, and its descriptor."""
    for _ in range(_ATTEMPTS):
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
        try:
            return os.open(temporary, _FLAGS, 0o666), temporary
        except FileExistsError:
            continue  # someone holds this name: draw another, never open theirs
        except OSError as exc:
            raise ExportError(f"cannot write {what} to {target}: {_reason(exc)}") from exc
    raise ExportError(f"cannot write {what} to {target}: no free temporary name in its folder")


def _sync_folder(folder: Path) -> None:
    """Make the rename durable where the platform allows (best effort)."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_file(path: str | Path, write: Callable[[BinaryIO], T], *, what: str = "the output") -> T:
    """Run ``write`` into a new file and put it at ``path`` in one step.

    Args:
        path: the file to write; a symbolic link there is replaced, not followed.
        write: writes the content to the binary stream it is given.
        what: names the output in error messages ("the export", "the bundle").

    Returns:
        What ``write`` returned.

    Raises:
        ExportError: the folder cannot be written, or ``path`` is a folder.
    """
    target = Path(path)
    fd, temporary = _create_beside(target, what)
    try:  # everything after the file exists is inside: an interrupt removes it too
        try:
            out = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise
        with out:
            try:
                result = write(out)
                out.flush()
                os.fsync(out.fileno())
            except OSError as exc:  # a full disk, a quota
                raise ExportError(f"cannot write {what} to {target}: {_reason(exc)}") from exc
        try:
            os.replace(temporary, target)
        except OSError as exc:
            raise ExportError(f"cannot write {what} to {target}: {_reason(exc)}") from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_folder(target.parent)
    return result


def write_bytes(path: str | Path, data: bytes, *, what: str = "the output") -> None:
    """Write ``data`` to ``path`` as ``write_file`` does (no link followed, all or nothing).

    Args:
        path: the file to write.
        data: its content.
        what: names the output in error messages.

    Raises:
        ExportError: the file cannot be written.
    """
    write_file(path, lambda out: out.write(data), what=what)
