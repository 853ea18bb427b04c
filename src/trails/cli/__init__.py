"""The ``trails`` command: a thin shell over library calls.

Each command group lives in its own module of this package with a
``register(subparsers)`` function; ``main`` loads the modules listed in
``COMMANDS``. Errors from the trails tree print one clear line and exit
non-zero (2 for misuse, 1 for a failure while running). An argument that is
not valid text (bytes that are not UTF-8 reach Python as unpaired surrogates)
is misuse too: ``check_arguments`` names it before any command runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from trails.errors import TrailsError, UserError
from trails.text import check_text

__all__ = ["COMMANDS", "build_parser", "check_arguments", "main"]

COMMANDS = (
    "demo",
    "query",
    "sessions",
    "memory",
    "exporting",
    "verify",
    "holds",
    "report",
    "replay",
    "serve",
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


def _names(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """How each destination of the chosen (sub)commands is spelled on the command line."""
    names: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if chosen is not None:
                names.update(_names(chosen, args))
        elif action.dest not in names:
            names[action.dest] = (
                "/".join(action.option_strings) if action.option_strings else action.dest.upper()
            )
    return names


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse an argument that is not valid text, naming it (``argument --topic ...``).

    Raises:
        UserError: a value holds an unpaired surrogate (its bytes were not UTF-8).
    """
    names = _names(parser, args)
    for dest, value in vars(args).items():
        for item in value if isinstance(value, list | tuple) else [value]:
            check_text(item, f"argument {names.get(dest, dest)}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        check_arguments(parser, args)
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
