"""The ``trails`` command: a thin shell over library calls.

Each command group lives in its own module of this package with a
``register(subparsers)`` function; ``main`` loads the modules listed in
``COMMANDS``. Errors from the trails tree print one clear line and exit
non-zero (2 for misuse, 1 for a failure while running).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from trails.errors import TrailsError, UserError

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS = (
    "demo",
    "query",
    "sessions",
    "memory",
    "exporting",
    "verify",
    "report",
    "replay",
    "serve",
    "otlp",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trails", description="An agent runtime whose every action is evidence."
    )
    parser.add_argument(
        "--store", help="store location: a path, memory:, or http(s)://... (default: settings)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"trails.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"trails.cli.{name}":
                continue  # a command group not shipped in this build
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        status = args.func(args)
    except UserError as exc:
        print(f"trails: error: {exc}", file=sys.stderr)
        return 2
    except TrailsError as exc:
        print(f"trails: failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (trails ... | head): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return int(status or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
