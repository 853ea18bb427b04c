"""``trails export`` and ``trails import``: move session graphs between stores in standard formats."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, BinaryIO

from trails.audit.access import reading, writing
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
from trails.audit.files import write_bytes
from trails.audit.render import ProgressBar
from trails.cli.common import session_arg
from trails.config import load_settings
from trails.errors import ConfigError, ExportError
from trails.prov.iri import Minter
from trails.store import Store
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
    which.add_argument(
        "--session",
        action="append",
        default=[],
        metavar="IRI",
        help="a session, by IRI or UUID (repeat)",
    )
    which.add_argument("--all", action="store_true", help="every graph (ledger and memory too)")
    p.add_argument("--since", help="sessions started at or after (ISO 8601)")
    p.add_argument("--until", help="sessions started before (ISO 8601)")
    p.add_argument(
        "--format",
        "-f",
        choices=(*EXPORT_FORMATS, "otlp-json"),
        default="trig",
        help="the format (default trig; otlp-json: sessions as OpenTelemetry spans)",
    )
    p.add_argument(
        "--out",
        "-o",
        help="file to write, or a directory to write STORE.EXT into (default: standard output)",
    )
    p.add_argument(
        "--bundle",
        metavar="FILE.zip",
        help="write an offline evidence bundle (graphs, seals, keys, answers, manifest) "
        "that trails verify --bundle checks without the store",
    )
    p.add_argument("--domain", help="the domain the export stays within (default: [audit] domain)")
    bar = p.add_mutually_exclusive_group()
    bar.add_argument("--progress", action="store_true", default=None, help="always show progress")
    bar.add_argument(
        "--no-progress", dest="progress", action="store_false", help="never show progress"
    )
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


_EXTENSIONS = {
    "trig": "trig",
    "nquads": "nq",
    "turtle": "ttl",
    "jsonld": "jsonld",
    "provn": "provn",
    "provjson": "prov.json",
}


def _target(given: str, store: Any, location: str | None, fmt: str) -> Path:
    """The file to write: ``out``, or ``DIR/STORE.EXT`` when ``out`` is a directory.

    Raises:
        ExportError: ``out`` ends with a separator but is no directory, or its folder is missing.
    """
    out = Path(given)
    if out.is_dir():
        name = _store_name(store, location)
        return out / f"{name}.{_EXTENSIONS.get(fmt, fmt)}"
    if given.endswith(("/", os.sep)):
        raise ExportError(f"--out {out}: no such directory (create it first, or name a file)")
    if not out.parent.is_dir():
        raise ExportError(
            f"cannot write the export to {out}: the folder {out.parent} does not exist"
        )
    return out


def _store_name(store: Any, location: str | None) -> str:
    """A file name for the store: its directory's name, ``memory`` or the server's host."""
    where = location or load_settings().store
    if where == "memory:":
        return "memory"
    if where.startswith(("http://", "https://")):
        from urllib.parse import urlsplit

        return urlsplit(where).hostname or "sparql"
    path = Path(where).expanduser().resolve()
    return path.name or "store"


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
            store,
            sessions=[session_arg(s) for s in args.session],
            all_graphs=args.all,
            since=args.since,
            until=args.until,
        )
        check_assurance(store, graphs, domain=domain, forbidden=_levels(audit))
        if args.bundle:
            return _bundle(store, graphs, args, minter)
        if args.format == "otlp-json":
            return _otlp_json(store, graphs, args.out)
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

        target = _target(args.out, store, args.store, args.format) if args.out else None
        try:
            if target is not None:
                stats = export_to_path(write, target)
            else:
                stats = write(sys.stdout.buffer)
                sys.stdout.flush()
        except KeyboardInterrupt:
            if bar is not None:
                bar.close()
                bar = None
            said = "nothing written" if target is not None else "the output is incomplete"
            print(f"interrupted: {said}", file=sys.stderr)
            return 130
        finally:
            if bar is not None:
                bar.close()
    where = str(target) if target is not None else "standard output"
    extra = f", {stats.redacted} value(s) redacted" if stats.redacted else ""
    print(
        f"exported {stats.graphs} graph(s), {stats.quads} quads as {stats.format} to {where}{extra}",
        file=sys.stderr,
    )
    return 0


def _otlp_json(store: Any, graphs: list[Any], out: str | None) -> int:
    """Sessions as one OTLP/JSON trace payload (``trails.otel.export``)."""
    import json

    from trails.otel.export import session_otlp_json
    from trails.prov.vocab import T
    from trails.store import ask

    sessions = [
        g for g in graphs if ask(store, f"ASK {{ GRAPH ?g {{ ?g a {T.Session.n3()} }} }}", {"g": g})
    ]
    text = json.dumps(session_otlp_json(store, sessions), indent=1, sort_keys=True) + "\n"
    if out:
        write_bytes(out, text.encode("utf-8"), what="the export")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    print(
        f"exported {len(sessions)} session(s) as otlp-json to {out or 'standard output'}",
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
    with writing(args.store) as store:
        graphs, quads = import_file(store, args.file, format=args.format, graph=args.graph)
    print(f"imported {quads} quads in {graphs} graph(s) from {args.file}", file=sys.stderr)
    return 0
