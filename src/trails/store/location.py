"""What makes a folder a trails store, so that nothing turns a folder into one by accident.

A directory store is the folder Oxigraph writes: RocksDB's ``CURRENT`` file
naming a ``MANIFEST-*`` that exists, beside an ``OPTIONS-*`` file declaring
Oxigraph's own column families (``id2str``, its table of strings, and the
``spog`` index). Those files are the mark: every store ever written has them
(so stores from before this check, and stores loaded by Oxigraph's own tools,
are recognised without a marker to forget), they survive ``compact`` (which
swaps in a freshly written directory), and a folder of source code or
another program's RocksDB database does not have them. A store holds them in
the folder itself (stores written before ``trails.store._layout``) or in the
data directory its pointer file names; the pointer alone marks a store too.

Reading (``check_existing``) needs that mark and writes nothing; creating
(``check_creatable``) accepts a store, a missing folder or an empty one, and
refuses a folder that already holds something else.
"""

from __future__ import annotations

import re
from pathlib import Path

from trails.errors import NotAStore, StoreError
from trails.store import _layout

__all__ = ["check_creatable", "check_existing", "is_store", "undo_creation"]


def is_store(path: str | Path) -> bool:
    """Whether ``path`` is a folder Oxigraph wrote (a trails store).

    Args:
        path: a directory, or anything else.

    Returns:
        True when the folder holds an Oxigraph RocksDB database, directly (the
        earlier layout) or in the data directory the store's pointer names, or
        when it holds such a pointer at all (opening says what is wrong with it);
        never raises.
    """
    folder = Path(path)
    if (folder / _layout.POINTER).is_file():
        return True
    try:  # absolute: "." and ".." have siblings too; "/" has none (its name is empty)
        elsewhere = _layout.unpointed(folder.absolute())
    except ValueError:
        elsewhere = []
    return any(_is_oxigraph(where) for where in [folder, *elsewhere])


_is_oxigraph = _layout.is_database


#: what an open that stopped before its store was written leaves (the lock file, a
#: pointer never swapped in, a data directory RocksDB never wrote into or had not
#: finished creating): a folder of only these is empty
_BOOKKEEPING = re.compile(
    rf"{re.escape(_layout.LOCK)}|{re.escape(_layout.POINTER)}\.tmp|data-[0-9]{{1,9}}(?:\.tmp)?"
)


def _entries(folder: Path) -> list[str]:
    """What ``folder`` holds, leaving out what an interrupted creation of a store left."""
    begun = {p.name for p in _layout.unfinished_creation(folder)}
    try:
        return sorted(
            p.name
            for p in folder.iterdir()
            if not (_BOOKKEEPING.fullmatch(p.name) and (p.name in begun or _is_empty_or_file(p)))
        )
    except OSError as exc:
        raise StoreError(f"cannot open store at {folder}: {exc.strerror or exc}") from exc


def _is_empty_or_file(path: Path) -> bool:
    """A bookkeeping file, or a data directory RocksDB never wrote into."""
    if not path.is_dir():
        return path.name in (_layout.LOCK, _layout.POINTER + ".tmp")
    return not any(path.iterdir())


def check_existing(path: str | Path) -> None:
    """Refuse ``path`` unless it is a trails store; touches nothing on disk.

    Args:
        path: the directory a reader wants to open.

    Raises:
        NotAStore: nothing is there, a file, an empty folder, or a folder of other files.
        StoreError: the folder cannot be listed (permissions).
    """
    folder = Path(path)
    if is_store(folder):
        return
    where = str(folder)
    if not folder.exists():
        raise NotAStore(
            f"no trails store at {folder}: it does not exist", location=where, creatable=True
        )
    if not folder.is_dir():
        raise NotAStore(
            f"no trails store at {folder}: it is a file, not a store's folder", location=where
        )
    entries = _entries(folder)
    if not entries:
        raise NotAStore(
            f"no trails store at {folder}: the folder is empty", location=where, creatable=True
        )
    raise NotAStore(
        f"no trails store at {folder}: the folder holds other files ({_some(entries)})",
        location=where,
    )


def check_creatable(path: str | Path) -> bool:
    """Whether a store must be created at ``path``, refusing a place that cannot hold one.

    Args:
        path: the directory a recording process wants to open.

    Returns:
        False when ``path`` already is a store, True when it is missing or an empty folder.

    Raises:
        NotAStore: ``path`` is a file, or a folder holding anything that is not a store.
        StoreError: the folder cannot be listed (permissions).
    """
    folder = Path(path)
    if is_store(folder):
        return False
    if not folder.exists():
        return True
    if not folder.is_dir():
        raise NotAStore(
            f"cannot create a trails store at {folder}: it is a file", location=str(folder)
        )
    entries = _entries(folder)
    if entries:
        raise NotAStore(
            f"will not create a trails store at {folder}: the folder is not empty and not a "
            f"store ({_some(entries)}); name a new or empty folder",
            location=str(folder),
        )
    return True


def _some(names: list[str]) -> str:
    """A few of a folder's entries, so the error shows what is there."""
    shown = ", ".join(n if n.isprintable() else repr(n) for n in names[:3])
    return shown if len(names) <= 3 else f"{shown} and {len(names) - 3} more"


def undo_creation(root: str | Path, made: list[Path]) -> None:
    """Delete a store that was just created and holds nothing, closed: its lock, its
    pointer and its data directories, then the folders in ``made`` (those created for
    it, deepest first) that are left empty. Anything else in the folder stays. For a
    command that failed: it must not leave a store behind. Never raises.

    Args:
        root: the store's folder.
        made: the folders that did not exist before the store was created.
    """
    folder = Path(root)
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        if _BOOKKEEPING.fullmatch(entry.name) or entry.name == _layout.POINTER:
            try:
                _layout.remove(entry)
            except OSError:
                return  # what is left is a store or part of one: the next open repairs it
    for path in sorted(made, key=lambda p: len(p.parts), reverse=True):
        try:
            path.rmdir()
        except OSError:
            return
