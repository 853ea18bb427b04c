"""``trails shapes [--path]``: the SHACL shapes every recorded graph satisfies, as installed.

The shapes (``shapes.ttl``) ship with the package, so a graph can be validated
outside a checkout of trails: ``pyshacl -s "$(trails shapes --path)" -i none
session.nt``. Without ``--path`` the command prints the shapes themselves (Turtle).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from trails.errors import ConfigError

__all__ = ["register", "run", "shapes_path"]


def register(subparsers: Any) -> None:
    """Add the ``shapes`` command.

    Args:
        subparsers: the CLI's subparsers action.
    """
    p = subparsers.add_parser(
        "shapes",
        help="print the SHACL shapes recorded graphs satisfy (--path: where they are)",
        description="Print the SHACL shapes (Turtle) every graph trails records satisfies, "
        "as installed with this version; --path prints the file's path instead, for a "
        'validator: pyshacl -s "$(trails shapes --path)" -i none session.nt',
    )
    p.add_argument("--path", action="store_true", help="print the path of shapes.ttl only")
    p.set_defaults(func=run)


def shapes_path() -> Path:
    """Where ``shapes.ttl`` is: in the installed package, else in the source tree.

    Raises:
        ConfigError: this installation holds no shapes.
    """
    here = Path(__file__).resolve()
    for folder in (here.parents[1] / "_data" / "ontologies", here.parents[3] / "ontologies"):
        if (folder / "shapes.ttl").is_file():
            return folder / "shapes.ttl"
    raise ConfigError("this installation of trails holds no shapes.ttl (reinstall trails)")


def run(args: argparse.Namespace) -> int:
    """Print the shapes or their path; 0."""
    path = shapes_path()
    if args.path:
        print(path)
    else:
        sys.stdout.write(path.read_text(encoding="utf-8"))
    return 0
