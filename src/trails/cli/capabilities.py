"""``trails capabilities``: print the capability manifest of the capabilities a program registers.

``--import MODULE`` (repeatable) imports the modules that register them (found in the
current directory too), ``--mount`` mounts the ``[[mcp.servers]]`` of trails.toml
first, and ``--format`` picks the document: ``jsonld`` (the default, what ``trails
serve`` publishes at ``/.well-known/capabilities``), ``json`` (each capability's plain
manifest) or ``mcp`` (the tools as an MCP ``tools/list`` result).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any

from trails.config import load_settings
from trails.errors import UserError

__all__ = ["capabilities", "import_modules", "register"]


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "capabilities",
        help="print the capability manifest (JSON-LD, JSON or MCP tools)",
        description="Print every registered capability: id, description, JSON schemas, cost "
        "estimate, side effects, preconditions and its MCP projection.",
    )
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (it registers capabilities; found in the current "
        "directory too); repeatable",
    )
    parser.add_argument(
        "--mount",
        action="store_true",
        help="mount the [[mcp.servers]] of trails.toml first, so their tools are listed",
    )
    parser.add_argument(
        "--format",
        choices=("jsonld", "json", "mcp"),
        default="jsonld",
        help="jsonld (default): the manifest trails serve publishes; json: plain "
        "manifests; mcp: an MCP tools/list result",
    )
    parser.set_defaults(func=capabilities)


def import_modules(names: list[str]) -> None:
    """Import the modules ``--import`` names (they register capabilities).

    Raises:
        UserError: one cannot be imported.
    """
    if names and "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's own modules, as `python -m` would find them
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise UserError(f"--import {name}: {exc}") from exc


def capabilities(args: argparse.Namespace) -> int:
    """``trails capabilities``: print the manifest; 0.

    Raises:
        UserError: a module given to ``--import`` cannot be imported, or a server to
            mount cannot be mounted.
    """
    import_modules(args.imports)
    settings = load_settings()
    from trails.mcp.manifest import manifest_as
    from trails.mcp.mounts import mount_configured, unmount_all

    try:
        if args.mount:
            mount_configured(settings)
        document = manifest_as(args.format, settings.base_iri)
    finally:
        unmount_all()
    print(json.dumps(document, indent=2, ensure_ascii=False))
    return 0
