"""The ``trails`` command: a thin shell over library calls.

Each command group lives in its own module of this package with a
``register(subparsers)`` function. ``COMMANDS`` names each command, the
module that registers it and its one-line help, so ``main`` imports only the
module of the command being run (``trails --help`` imports none: the endpoint's
server stack and the agent runtime stay unloaded). ``--store`` is accepted
before or after the command. Errors from the trails tree print one clear line
and exit non-zero (2 for misuse, 1 for a failure while running). An argument
that is not valid text (bytes that are not UTF-8 reach Python as unpaired
surrogates) is misuse too: ``check_arguments`` names it before any command runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from trails.errors import TrailsError, UserError
from trails.text import check_text

__all__ = ["COMMANDS", "build_parser", "check_arguments", "main"]

# command -> (module of trails.cli that registers it, one-line help shown by trails --help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("demo", "run a short agent session and audit it by SPARQL"),
    "init": ("init", "create an empty store (recording creates one too)"),
    "query": ("query", "run a query of the pack, a SPARQL file, or inline SPARQL"),
    "sessions": ("sessions", "list sessions (by principal, status, time range)"),
    "catalogue": ("catalogue", "rebuild the session catalogue or total its days' cost"),
    "memory": ("memory", "learn, recall, forget and list agent memory"),
    "export": (
        "exporting",
        "export sessions as TriG, N-Quads, Turtle, JSON-LD, PROV-N or PROV-JSON",
    ),
    "import": ("exporting", "load an export (TriG, N-Quads, JSON-LD ...) into the store"),
    "verify": ("verify", "check that recorded sessions still match their seals"),
    "prove": ("prove", "write a session's inclusion proofs in the transparency log"),
    "head": ("prove", "write the transparency log's newest signed tree head"),
    "log": ("tlog", "publish the transparency log as static C2SP tiles, or check published tiles"),
    "recover": (
        "recover",
        "end sessions left open by a process that stopped (as interrupted) and seal them",
    ),
    "hold": ("holds", "legal holds: evidence retention and erasure must not remove until released"),
    "retention": (
        "retention",
        "remove content and sessions past their retention period (plan, then apply)",
    ),
    "erase": (
        "erase",
        "erase recorded content (keeping digests and seals) with a sealed receipt",
    ),
    "compact": (
        "compact",
        "rewrite the store's files so no erased or removed text remains in them",
    ),
    "migrate": (
        "erase",
        "move content out of sealed graphs into content graphs, recorded and re-sealed",
    ),
    "report": ("report", "write the HTML audit report of a session"),
    "logs": ("logs", "show sessions as conversations (prompts, answers, calls)"),
    "replay": ("replay", "print a persisted session; --rerun checks it still runs"),
    "diff": ("replay", "where two recorded sessions diverge"),
    "serve": ("serve", "run the authenticated read-only SPARQL endpoint"),
    "otlp": ("otlp", "receive OpenTelemetry GenAI traces (OTLP/HTTP) as provenance"),
    "mcp": ("mcp", "trails over MCP (serve) and a recording MCP proxy (proxy)"),
    "capabilities": ("capabilities", "print the capability manifest (JSON-LD, JSON or MCP tools)"),
    "controls": ("controls", "check controls (rules over the evidence) and record their findings"),
    "shapes": ("shapes", "print the SHACL shapes recorded graphs satisfy (--path: where they are)"),
}

_STORE_HELP = "store location: a path, memory:, or http(s)://... (default: settings)"


class _Version(argparse.Action):
    """``--version``: print the installed version and exit (read only when asked)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=kwargs.get("help")
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from trails import __version__

        print(f"trails {__version__}")
        parser.exit()


def _add_store(parser: argparse.ArgumentParser) -> None:
    """Accept ``--store`` after a (sub)command too, without overriding one given before it."""
    if any("--store" in a.option_strings for a in parser._actions):
        return
    parser.add_argument("--store", default=argparse.SUPPRESS, help=_STORE_HELP)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _add_store(child)


def build_parser(command: str | None = "*") -> argparse.ArgumentParser:
    """The ``trails`` parser.

    Args:
        command: the command whose module to load; ``"*"`` loads every command
            (what a test walking all options wants), None loads none (the
            other commands get a stand-in that only carries their help line).

    Returns:
        The parser.
    """
    parser = argparse.ArgumentParser(
        prog="trails", description="An agent runtime whose every action is evidence."
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    parser.add_argument("--store", help=_STORE_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = {m for n, (m, _) in COMMANDS.items() if command in ("*", n)}
    loaded: set[str] = set()
    for name, (module_name, help_text) in COMMANDS.items():
        if module_name not in wanted:
            sub.add_parser(name, help=help_text, add_help=False)
        elif module_name not in loaded:
            loaded.add(module_name)
            importlib.import_module(f"trails.cli.{module_name}").register(sub)
    for name, child in sub.choices.items():
        _add_store(child)
        if not child.description and name in COMMANDS:  # --help says what it does, always
            child.description = COMMANDS[name][1][:1].upper() + COMMANDS[name][1][1:] + "."
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


def _command_of(argv: Sequence[str]) -> str | None:
    """The command word of ``argv`` (the first argument that is not a global option)."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--store":
            skip = True
        elif arg == "--":
            return None
        elif not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(argv))
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
        print("trails: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (trails ... | head): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return int(status or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
