"""``trails export`` and ``trails import``: move session graphs between stores in standard formats."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, BinaryIO

from trails.audit.access import reading
from trails.audit.bundle import write_bundle
from trails.audit.export import (
    EXPORT_FORMATS,
    IMPORT_FORMATS,
    ExportStats,
    Redaction,
    check_assurance,
    export,
    export_to_path,
    import_file,
    select_graphs,
)
from trails.audit.render import ProgressBar
from trails.config import load_settings
from trails.errors import ConfigError
from trails.prov.iri import Minter
from trails.store import Store, default_store, open_store
from trails.store.terms import IRI

__all__ = ["register", "run_export", "run_import"]

_LARGE = 200  # graphs: above this, draw a progress bar on a terminal


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``export`` and ``import`` commands."""
    p = subparsers.add_parser(
        "export",
        help="export sessions as TriG, N-Quads, Turtle, JSON-LD, PROV-N or PROV-JSON",
        description="Export session graphs. Redaction rules and assurance-level export "
        "rules from [audit] in trails.toml apply.",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--session", action="append", default=[], metavar="IRI", help="a session")
    which.add_argument("--all", action="store_true", help="every graph (ledger and memory too)")
    p.add_argument("--since", help="sessions started at or after (ISO 8601)")
    p.add_argument("--until", help="sessions started before (ISO 8601)")
    p.add_argument("--format", "-f", choices=EXPORT_FORMATS, default="trig")
    p.add_argument("--out", "-o", help="file to write (default: standard output)")
    p.add_argument(
        "--bundle",
        metavar="FILE.zip",
        help="write an offline evidence bundle (graphs, seals, keys, answers, manifest) "
        "that trails verify --bundle checks without the store",
    )
    p.add_argument("--domain", help="the domain the export stays within (default: [audit] domain)")
    bar = p.add_mutually_exclusive_group()
    bar.add_argument("--progress", action="store_true", default=None, help="always show progress")
    bar.add_argument("--no-progress", dest="progress", action="store_false")
    p.set_defaults(func=run_export)

    q = subparsers.add_parser(
        "import", help="load an export (TriG, N-Quads, JSON-LD ...) into the store"
    )
    q.add_argument("file", help="the export file")
    q.add_argument("--format", "-f", choices=IMPORT_FORMATS, help="default: from the extension")
    q.add_argument("--graph", help="target graph for a Turtle / N-Triples file")
    q.set_defaults(func=run_import)


def _levels(audit: dict[str, Any]) -> list[str]:
    levels = audit.get("no_cross_domain", ["L1"])
    if not isinstance(levels, list) or not all(isinstance(x, str) for x in levels):
        raise ConfigError("[audit] no_cross_domain must be a list of assurance levels")
    return levels


def run_export(args: argparse.Namespace) -> int:
    """Run ``trails export``."""
    if (args.since or args.until) and (args.session or args.all):
        raise ConfigError(
            "--since/--until select sessions by time: use them without --session/--all"
        )
    if args.bundle and args.out:
        raise ConfigError("--bundle names the file to write: use it without --out")
    settings = load_settings()
    audit = settings.section("audit")
    redaction = Redaction.from_settings(settings)
    domain = args.domain or audit.get("domain")
    minter = Minter(settings.base_iri)
    with reading(args.store) as store:
        graphs = select_graphs(
            store, sessions=args.session, all_graphs=args.all, since=args.since, until=args.until
        )
        check_assurance(store, graphs, domain=domain, forbidden=_levels(audit))
        if args.bundle:
            return _bundle(store, graphs, args, minter)
        show = (
            args.progress
            if args.progress is not None
            else (len(graphs) > _LARGE and sys.stderr.isatty())
        )
        bar = ProgressBar(sys.stderr) if show else None

        def write(out: BinaryIO) -> ExportStats:
            return export(
                store,
                out,
                graphs,
                format=args.format,
                redaction=redaction,
                minter=minter,
                progress=bar,
            )

        try:
            if args.out:
                stats = export_to_path(write, Path(args.out))
            else:
                stats = write(sys.stdout.buffer)
                sys.stdout.flush()
        finally:
            if bar is not None:
                bar.close()
    where = args.out or "standard output"
    extra = f", {stats.redacted} value(s) redacted" if stats.redacted else ""
    print(
        f"exported {stats.graphs} graph(s), {stats.quads} quads as {stats.format} to {where}{extra}",
        file=sys.stderr,
    )
    return 0


def _bundle(store: Store, graphs: list[IRI], args: argparse.Namespace, minter: Minter) -> int:
    selection = "all" if args.all else ("sessions" if args.session else "time")
    stats = write_bundle(store, args.bundle, graphs, minter=minter, selection=selection)
    print(
        f"bundled {stats.graphs} graph(s), {stats.quads} quads, {stats.seals} seal(s) and "
        f"{stats.answers} answer file(s) in {args.bundle} ({stats.bytes} bytes)",
        file=sys.stderr,
    )
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Run ``trails import`` (the target store is created when it does not exist yet)."""
    location = args.store or load_settings().store
    if location == "memory:":
        store, owned = default_store(), False
    else:
        store, owned = open_store(args.store), True
    try:
        graphs, quads = import_file(store, args.file, format=args.format, graph=args.graph)
    finally:
        if owned:
            store.close()
    print(f"imported {quads} quads in {graphs} graph(s) from {args.file}", file=sys.stderr)
    return 0
