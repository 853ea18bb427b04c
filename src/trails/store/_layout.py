"""The embedded store's directory: a path that never moves over data swapped atomically.

Compaction (``OxigraphStore.compact``) replaces every file of a store. Renaming
directories in place to do that leaves an instant with no store at the path, and a
crash there lost the store. So the directory a user names (the *root*) never moves:
RocksDB lives in a numbered data directory inside it, and a pointer file names the
one in use::

    root/
        trails-store.json          {"data": "data-2"}, replaced atomically
        trails-store.lock          locked while a process has the store open
        data-2/                    the RocksDB store
        trails-memory-index.json   the memory index snapshot, when there is one

A compaction writes its copy into ``data-3.tmp``, syncs it to disk and renames it
``data-3`` (complete), points the pointer at it (``os.replace``: the commit), then
deletes ``data-2``. At every instant the pointer names a whole store, and
``recover``, run on open under the lock, repairs whatever a crash left: a ``.tmp``
copy is deleted (the compaction is rolled back), a complete ``data-N`` newer than
the pointer is pointed at (the compaction is finished), and every data directory
the pointer does not name is deleted, since it holds what the compaction removed.
A pointer naming a directory that is not there is an error: nothing here ever
creates an empty store in place of one that went missing.

A store written before this layout (RocksDB's files directly in the root) opens in
place; its first compaction moves it into the layout (the copy becomes ``data-1``,
and RocksDB's files in the root are deleted once the pointer names it, the pointer
saying ``"clearing": true`` until they are all gone; RocksDB files found in the root
without it were written there since, by an earlier trails, and are left alone). A crash of
an earlier version between the two renames of its compaction (no store at the
root, the whole store at ``<root>.compacting-old``) is repaired too: that copy
becomes ``data-1``.

Creating a store is the same commit: RocksDB creates ``data-1``, then the pointer is
written. A crash before the pointer leaves ``data-1`` whole (``recover`` points at it)
or half written by RocksDB, with nothing recorded in it (``unfinished_creation``):
``recover`` deletes it and the creation starts again.

``on_step`` is called with the name of each step of a compaction as it is reached
(``copying``, ``copied``, ``renamed``, ``switched``, ``deleting``), and of a creation
(``creating``: the lock held, RocksDB not yet opened; ``created``: RocksDB's files
written, the pointer not yet); it does nothing, and exists so that tests can stop the
process between two steps.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from trails.errors import StoreError

__all__ = [
    "LOCK",
    "POINTER",
    "DirectoryLock",
    "Layout",
    "abandon",
    "commit",
    "discard",
    "drop_earlier_copies",
    "finish_copy",
    "holder",
    "is_database",
    "leftovers",
    "on_step",
    "point",
    "reached",
    "read_pointer",
    "recover",
    "remove",
    "start_copy",
    "unfinished_creation",
    "unpointed",
]

POINTER = "trails-store.json"
LOCK = "trails-store.lock"
_POINTER_TMP = POINTER + ".tmp"
_FORMAT = "trails-store/1"
_DATA = re.compile(r"data-([0-9]{1,9})")
_COPY = re.compile(r"data-([0-9]{1,9})\.tmp")
# what RocksDB writes into its directory (a store of the earlier layout holds them in the root)
_ROCKSDB = re.compile(
    r"CURRENT|IDENTITY|LOCK|LOG(?:\.old\.[0-9]+)?|(?:MANIFEST|OPTIONS)-[0-9]+(?:\.dbtmp)?"
    r"|[0-9]+\.(?:sst|log|blob|ldb|dbtmp)"
)
# the names an earlier version's compaction used beside the root
_EARLIER_COPY, _EARLIER_OLD = ".compacting", ".compacting-old"
_MANIFEST = re.compile(r"MANIFEST-\d+")
#: the column families every Oxigraph store declares in its RocksDB OPTIONS file
_OXIGRAPH_FAMILIES = ('[CFOptions "id2str"]', '[CFOptions "spog"]')

log = logging.getLogger("trails.store")


def _nothing(step: str) -> None:
    """The default ``on_step``: a compaction's steps are not observed."""


#: called with each compaction step's name as it is reached (tests replace it)
on_step: Callable[[str], None] = _nothing


def reached(step: str) -> None:
    """Tell ``on_step`` that a compaction reached ``step``."""
    on_step(step)


if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> None:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            raise BlockingIOError(errno.EAGAIN, str(exc)) from exc

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


class DirectoryLock:
    """The lock on a store's root, held from open to close (a compaction included).

    RocksDB locks its own directory too, but a compaction closes one data directory
    and opens another: this lock is what keeps every other opener out meanwhile. It
    is released when the process ends, however it ends, and when this object goes.

    Raises:
        BlockingIOError: another opener (in this process or another) holds it.
        OSError: the lock file cannot be created or opened.
    """

    def __init__(self, root: Path) -> None:
        self._fd: int | None = None
        fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _lock(fd)
        except OSError:
            os.close(fd)
            raise
        self._fd = fd
        with contextlib.suppress(OSError, AttributeError):  # who holds it: named to the refused
            os.ftruncate(fd, 0)
            os.pwrite(fd, _holding().encode("utf-8", "replace"), 0)

    def release(self) -> None:
        """Let other openers in (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        self.release()


def _holding() -> str:
    """This process as the lock file names it: its id and its command, without arguments.

    Only the program and the subcommand are written (``trails erase``), never the
    arguments: they may name the very values an erasure removes, and the lock file stays.
    """
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    if name in ("trails", "__main__.py") or name.startswith("trails"):
        words, after_option = ["trails"], False
        for word in sys.argv[1:]:
            if word.startswith("-"):
                after_option = "=" not in word
                continue
            if not after_option and word.replace("-", "").isalpha() and word.islower():
                words.append(word)
                break
            after_option = False
        command = " ".join(words)
    else:
        command = f"{sys.executable.rsplit('/', 1)[-1]} {name}".strip()
    return f"{os.getpid()}\n{command[:300]}\n"


def holder(root: Path) -> str | None:
    """Who holds the store's lock, as the holder wrote it in the lock file: ``the process
    N (COMMAND)``, ``this process`` for one of our own; None when it names no live process
    (a store opened by another program, or a file of a process that is gone)."""
    try:
        pid_text, _, command = (root / LOCK).read_text(encoding="utf-8").partition("\n")
        pid = int(pid_text)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if pid == os.getpid():
        return "this process"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:
        pass  # alive, another user's
    command = command.strip()
    return f"process {pid} ({command})" if command else f"process {pid}"


@dataclass(frozen=True)
class Layout:
    """Where a store's data lives.

    Attributes:
        root: the directory the user names.
        version: the data directory in use (``data-<version>``), or None for a store
            of the earlier layout, whose RocksDB files are in the root itself.
        fresh: nothing is there yet: open ``data`` (creating it), then ``commit``.
        clearing: the store just moved out of the earlier layout, and RocksDB's files
            in the root are what it left (to delete). Without it, such files are
            someone else's (an earlier trails that opened the folder since) and stay.
    """

    root: Path
    version: int | None
    fresh: bool = False
    clearing: bool = False

    @property
    def data(self) -> Path:
        """The directory RocksDB opens."""
        return self.root if self.version is None else self.root / f"data-{self.version}"


def _sync_dir(path: Path) -> None:
    """Make the entries of ``path`` (names created, renamed, removed) durable."""
    if os.name != "posix":
        return  # elsewhere a directory cannot be opened to be synced
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_tree(path: Path) -> None:
    """Make every file under ``path`` durable, then the directories that name them."""
    for folder, _, files in os.walk(path):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _sync_dir(Path(folder))


def read_pointer(root: Path) -> int | None:
    """The data directory the pointer names (None: no pointer, an earlier layout or nothing).

    Raises:
        StoreError: the pointer cannot be read or names no data directory.
    """
    found = _read(root)
    return None if found is None else found[0]


def _read(root: Path) -> tuple[int, bool] | None:
    """The pointer's data directory and whether root files are being cleared, or None."""
    where = root / POINTER
    try:
        text = where.read_text("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot read the store's pointer {where}: {exc}") from exc
    clearing = False
    try:
        body = json.loads(text)
        match = _DATA.fullmatch(body["data"])
        clearing = body.get("clearing") is True
    except (ValueError, KeyError, TypeError, AttributeError):
        match = None
    if match is None:
        raise StoreError(
            f"the store's pointer {where} does not name a data directory (it should hold "
            f'{{"data": "data-N"}}, naming the data-N directory beside it): {text[:200]!r}'
        )
    return int(match.group(1)), clearing


def point(root: Path, version: int, *, clearing: bool = False) -> None:
    """Make the pointer name ``data-<version>``: written aside, synced, then swapped in.

    Args:
        root: the store's folder.
        version: the data directory to use.
        clearing: RocksDB files in the root are the earlier layout's, to be deleted.

    Raises:
        OSError: it could not be written; the pointer is then as it was, or already
            names ``version`` if only the final sync failed (``read_pointer`` tells).
    """
    fields: dict[str, object] = {"format": _FORMAT, "data": f"data-{version}"}
    if clearing:
        fields["clearing"] = True
    body = json.dumps(fields) + "\n"
    aside = root / _POINTER_TMP
    aside.unlink(missing_ok=True)
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        os.write(fd, body.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(aside, root / POINTER)
    _sync_dir(root)


def commit(layout: Layout) -> Layout:
    """Point at a fresh layout's data directory once RocksDB has created it."""
    assert layout.version is not None
    point(layout.root, layout.version)
    return Layout(layout.root, layout.version)


def _entries(root: Path, pattern: re.Pattern[str], *, folders: bool) -> dict[int, Path]:
    found = {}
    for entry in os.scandir(root):
        match = pattern.fullmatch(entry.name)
        if match and entry.is_dir(follow_symlinks=False) == folders:
            found[int(match.group(1))] = Path(entry.path)
    return found


def _earlier_layout_files(root: Path) -> list[Path]:
    """RocksDB's files in the root (a store of the earlier layout, or what is left of one)."""
    return sorted(
        Path(e.path)
        for e in os.scandir(root)
        if _ROCKSDB.fullmatch(e.name) and e.is_file(follow_symlinks=False)
    )


def _beside(root: Path, suffix: str) -> Path:
    """The sibling ``<root><suffix>`` of the store's folder, for any spelling of it (``.``)."""
    folder = Path(os.path.abspath(root))
    return folder.with_name(folder.name + suffix)


def is_database(folder: Path) -> bool:
    """Whether ``folder`` holds a whole Oxigraph RocksDB database: RocksDB's ``CURRENT``
    naming a ``MANIFEST-*`` that exists, beside an ``OPTIONS-*`` file declaring Oxigraph's
    column families (what ``trails.store.location`` takes for the mark of a store)."""
    try:
        current = (folder / "CURRENT").read_text(encoding="ascii").strip()
        if not _MANIFEST.fullmatch(current) or not (folder / current).is_file():
            return False
        for options in folder.glob("OPTIONS-*"):
            text = options.read_text(encoding="utf-8", errors="replace")
            if all(family in text for family in _OXIGRAPH_FAMILIES):
                return True
    except (OSError, UnicodeDecodeError):
        return False
    return False


def unfinished_creation(root: Path) -> list[Path]:
    """The data directories a creation of the store left unfinished: with no pointer and
    none of the earlier layout's files in the root, a ``data-N`` directory holding only
    files RocksDB writes (or nothing) but no whole database. A process killed while
    RocksDB created its files leaves one; nothing was ever recorded in it (the pointer
    is written before anything is). Never raises."""
    try:
        if (root / POINTER).exists() or _earlier_layout_files(root):
            return []
        found = []
        for path in _entries(root, _DATA, folders=True).values():
            names = list(os.scandir(path))
            rocksdb = all(
                e.is_file(follow_symlinks=False) and _ROCKSDB.fullmatch(e.name) for e in names
            )
            if rocksdb and not is_database(path):
                found.append(path)
        return sorted(found)
    except OSError:
        return []


def unpointed(root: Path) -> list[Path]:
    """Data directories that hold a store although no pointer names them yet: a complete
    ``data-N`` (a store whose first pointer, or a compaction's, was never written) and an
    earlier version's ``<root>.compacting-old``. ``recover`` adopts them; never raises."""
    found = [_beside(root, _EARLIER_OLD)]
    with contextlib.suppress(OSError):
        found += sorted(_entries(root, _DATA, folders=True).values())
    return found


def remove(path: Path, *, step: str | None = None) -> None:
    """Delete a file or a directory tree; ``step`` is reached after the first file goes.

    Raises:
        OSError: something could not be deleted (what was deleted stays deleted).
    """
    if not path.is_dir() or path.is_symlink():
        path.unlink(missing_ok=True)
        if step:
            reached(step)
        return
    first = True
    for folder, dirs, files in os.walk(path, topdown=False):
        for name in files:
            os.unlink(os.path.join(folder, name))
            if first and step:
                reached(step)
            first = False
        for name in dirs:
            inner = os.path.join(folder, name)
            if os.path.islink(inner):
                os.unlink(inner)
            else:
                os.rmdir(inner)
    os.rmdir(path)


def leftovers(layout: Layout) -> list[Path]:
    """What in the root is not the store in use: unfinished copies, replaced data
    directories, RocksDB files of the earlier layout, a pointer never swapped in."""
    root = layout.root
    found = list(_entries(root, _COPY, folders=True).values())
    if layout.version is not None:
        found += [p for n, p in _entries(root, _DATA, folders=True).items() if n != layout.version]
    if layout.clearing:
        found += _earlier_layout_files(root)
    found += [p for p in [root / _POINTER_TMP] if p.exists()]
    return sorted(found)


def _remove_leftovers(layout: Layout) -> None:
    for path in leftovers(layout):
        try:
            remove(path)
        except OSError as exc:  # the store is whole; the next compaction insists
            log.warning("could not delete %s, left by a compaction: %s", path, exc)


def _adopt_earlier_copy(root: Path) -> None:
    """An earlier version's compaction stopped between its two renames: the root holds no
    store and ``<root>.compacting-old`` holds all of it. That copy becomes ``data-1``
    (one rename), which ``recover`` then points at; its unfinished copy is deleted."""
    old = _beside(root, _EARLIER_OLD)
    if not old.is_dir() or _earlier_layout_files(root) or _entries(root, _DATA, folders=True):
        return
    os.rename(old, root / "data-1")
    _sync_dir(root)
    _sync_dir(root.parent)
    log.warning(
        "restored the store at %s from %s, left by an interrupted compaction of an earlier "
        "version; what was removed before it is still in its files until the next compaction",
        root,
        old,
    )
    copy = _beside(root, _EARLIER_COPY)
    if copy.exists():
        remove(copy)


def recover(root: Path) -> Layout:
    """Repair what an interrupted compaction left and say where the store is.

    Call it holding the root's ``DirectoryLock``, before opening RocksDB.

    Returns:
        The layout to open (``fresh`` when the root holds no store yet).

    Raises:
        StoreError: the pointer is unreadable, or names a data directory that is missing.
        OSError: a repair (a rename, the pointer) could not be written.
    """
    state = _read(root)
    if state is None:
        for begun in unfinished_creation(root):  # redo a creation a crash cut short
            remove(begun)
            log.warning("removed %s: the creation of the store at %s had not finished", begun, root)
        _adopt_earlier_copy(root)
    versions = _entries(root, _DATA, folders=True)  # complete copies (a .tmp never is)
    newest = max(versions, default=None)
    if newest is not None and (state is None or newest > state[0]):
        # a finished copy never pointed at: the compaction is finished
        clearing = (state is None or state[1]) and bool(_earlier_layout_files(root))
        point(root, newest, clearing=clearing)
        log.info("finished an interrupted compaction of the store at %s", root)
        state = newest, clearing
    if state is None:
        layout = Layout(root, None) if _earlier_layout_files(root) else Layout(root, 1, fresh=True)
        _remove_leftovers(layout)
        return layout
    version, clearing = state
    if version not in versions:
        present = ", ".join(sorted(p.name for p in versions.values())) or "none"
        raise StoreError(
            f"the store at {root} is damaged: its pointer names data-{version}, which is "
            f"not there (data directories present: {present}). Nothing was created in its "
            f"place; restore the directory from a backup"
        )
    _remove_leftovers(Layout(root, version, clearing=clearing))
    foreign = _earlier_layout_files(root)
    if clearing and not foreign:
        point(root, version)  # the earlier layout's files are all gone
        clearing = False
    elif foreign and not clearing:
        log.warning(
            "the store at %s uses %s, but its folder also holds RocksDB files (%s ...), "
            "written by something else since: left alone",
            root,
            f"data-{version}",
            foreign[0].name,
        )
    return Layout(root, version, clearing=clearing)


def drop_earlier_copies(root: Path) -> None:
    """Delete the copies an earlier version's compaction left beside the root (its own
    next compaction deleted them too: they hold what that compaction removed).

    Raises:
        OSError: one could not be deleted.
    """
    for suffix in (_EARLIER_COPY, _EARLIER_OLD):
        copy = _beside(root, suffix)
        if copy.exists():
            remove(copy)


def start_copy(layout: Layout) -> tuple[Path, Layout]:
    """Where a compaction writes its copy (a name nothing holds), and the layout once
    the copy is in use."""
    root = layout.root
    taken = [*_entries(root, _DATA, folders=True), *_entries(root, _COPY, folders=True)]
    version = max([layout.version or 0, *taken]) + 1
    clearing = layout.version is None or layout.clearing
    return root / f"data-{version}.tmp", Layout(root, version, clearing=clearing)


def finish_copy(copy: Path, target: Layout) -> None:
    """Make the finished copy durable, then complete under its final name.

    From here a crash finishes the compaction (``recover`` points at the copy).

    Raises:
        OSError: it could not be synced or renamed (the copy is still a ``.tmp``).
    """
    _sync_tree(copy)
    reached("copied")
    os.rename(copy, target.data)
    _sync_dir(target.root)


def abandon(copy: Path, target: Layout) -> None:
    """Undo a compaction's copy: named ``.tmp`` again if it was complete (one rename:
    no later ``recover`` finishes the compaction), then deleted.

    Raises:
        OSError: the complete copy could not be renamed (``recover`` would adopt it).
    """
    if target.data.exists():
        os.rename(target.data, copy)
        _sync_dir(target.root)
    try:
        remove(copy)
    except OSError as exc:  # an unfinished copy: the next open deletes it
        log.warning("could not delete %s, an abandoned compaction copy: %s", copy, exc)


def discard(old: Layout, new: Layout) -> None:
    """Delete the store ``new`` replaced (its data directory, or the earlier layout's
    files in the root) and anything else ``leftovers`` finds.

    Raises:
        OSError: something could not be deleted (the store in use is whole).
    """
    if old.version is not None:
        remove(old.data, step="deleting")
    else:
        # CURRENT first: without it what is left is no longer a RocksDB store
        files = sorted(_earlier_layout_files(old.root), key=lambda p: p.name != "CURRENT")
        for n, path in enumerate(files):
            remove(path, step=None if n else "deleting")
    for path in leftovers(new):
        remove(path)
    if new.clearing:
        assert new.version is not None
        point(new.root, new.version)  # the earlier layout's files are all gone
    else:
        _sync_dir(new.root)
