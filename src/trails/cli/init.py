"""``trails init [--store PATH]``: create an empty store, before anything is recorded into it.

Reading commands never create a store, so an auditor (or a ``trails serve``
started before the first recording) can make one on purpose here. Recording
creates its store too; either way a folder that already holds other files is
refused, and a folder that already is a store is left as it was.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from trails.config import load_settings
from trails.errors import ConfigError
from trails.store import ask, open_store
from trails.store.location import is_store

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``init`` command.

    Args:
        subparsers: the CLI's subparsers action.
    """
    p = subparsers.add_parser(
        "init",
        help="create an empty store (recording creates one too)",
        description="Create an empty trails store at --store PATH (default: the configured "
        "store). A folder that is already a store is left as it is; a folder holding other "
        "files is refused.",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Create the store; see ``register``.

    Returns:
        0 when the store exists afterwards.

    Raises:
        NotAStore: the location is a file, or a folder holding other files.
        ConfigError: the location is ``memory:`` (it lives inside one process).
        RemoteStoreError: a SPARQL server location does not answer.
    """
    settings = load_settings()
    where = args.store if args.store is not None else settings.store
    if where == "memory:":
        raise ConfigError(
            "memory: is a store inside one process: there is nothing to create; "
            "name a folder with --store PATH"
        )
    if where.startswith(("http://", "https://")):
        remote = open_store(where, settings=settings)
        try:
            ask(remote, "ASK { }")
        finally:
            remote.close()
        print(f"{remote!r} answers: a SPARQL server is its own store, nothing to create")
        return 0
    path = Path(where) if args.store is not None else settings.resolve_path(where)
    if is_store(path):
        print(f"trails store at {path} already exists: left as it was")
        return 0
    open_store(path, settings=settings).close()
    print(f"created an empty trails store at {path}")
    return 0
