"""``trails compact``: rewrite the embedded store's files so nothing removed survives in them.

Oxigraph keeps the text of removed quads in its files until the store is rewritten
(``OxigraphStore.compact``). ``trails erase`` and ``trails retention apply`` rewrite
them as they finish; ``--no-compact``, or an interruption, leaves that to this command.
A SPARQL server's files are the server's to compact.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from trails.audit.access import changing
from trails.config import load_settings
from trails.errors import UserError

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``compact`` command."""
    p = subparsers.add_parser(
        "compact",
        help="rewrite the store's files so no erased or removed text remains in them",
        description="Rewrite the embedded store's files from the quads it holds now, so "
        "no text removed from it (by an erasure, retention, or anything else) remains in "
        "them: what `trails erase --no-compact`, or an interrupted erasure, leaves to "
        "do. The store is whole at every instant (a crash finishes or undoes it when the "
        "store is next opened). A SPARQL server compacts its own files.",
    )
    p.set_defaults(func=run)


def _size(folder: Path) -> int:
    total = 0
    for here, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(here, name))
            except OSError:  # gone while walking (RocksDB's own files come and go)
                continue
    return total


def run(args: argparse.Namespace) -> int:
    """Run the command; see ``register``."""
    where = args.store or load_settings().store
    if where.startswith(("http://", "https://")):
        raise UserError(
            f"{where} is a SPARQL server: it compacts its own files (with its own tools); "
            "trails compact rewrites an embedded store"
        )
    with changing(args.store) as store:
        folder = getattr(store, "path", None)
        before = _size(folder) if folder is not None else None
        try:
            store.compact()  # type: ignore[attr-defined]
        except KeyboardInterrupt:
            print(
                "trails: compaction interrupted: the store is whole; what was removed "
                "remains in its files until `trails compact` completes",
                flush=True,
            )
            return 130
    if folder is None or before is None:
        print("compacted the in-memory store")
        return 0
    print(
        f"compacted {folder}: {before:,} bytes before, {_size(folder):,} after; no removed "
        "text remains in its files"
    )
    return 0
