"""``trails log publish DIR`` and ``trails log check DIR|URL``: the log as static C2SP tiles.

``publish`` writes the transparency log's newest checkpoint, its tiles and entry bundles
in the c2sp.org/tlog-tiles layout (``trails.evidence.tiles``), for any static web server
(or ``trails serve`` with ``[serve] log_tiles``) to host. ``check`` is what a monitor
runs: it mirrors a published log, from a folder or a URL, and checks it from the tiles
alone (``trails.evidence.tiles_read``); with ``--key``, the checkpoint's signature too.
Exit 0 when it holds, 1 on a finding, 2 on bad usage or a log that cannot be read.
"""

from __future__ import annotations

import argparse
import json

from trails.audit.access import reading
from trails.config import load_settings
from trails.errors import UserError
from trails.evidence.checks import load_public_key
from trails.evidence.tiles import publish
from trails.evidence.tiles_read import TileLog, folder_fetch, http_fetch

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``log`` command."""
    p = subparsers.add_parser(
        "log",
        help="publish the transparency log as static C2SP tiles, or check published tiles",
        description="publish: write the newest signed checkpoint, tiles and entry bundles "
        "(c2sp.org/tlog-tiles) under DIR, for a static web server. check: mirror a published "
        "log (DIR or http(s) URL) and check every entry, tile and the root against its "
        "checkpoint, from the tiles alone.",
    )
    sub = p.add_subparsers(dest="log_command", metavar="ACTION", required=True)
    pub = sub.add_parser("publish", help="write the log as tiles under DIR")
    pub.add_argument("dir", metavar="DIR", help="the folder to write the tiles under")
    pub.set_defaults(func=run_publish)
    chk = sub.add_parser("check", help="mirror and check a tiled log (DIR or URL)")
    chk.add_argument(
        "source", metavar="DIR|URL", help="the published log: its folder or its http(s) prefix"
    )
    chk.add_argument("--key", help="the log's Ed25519 public key (PEM): the checkpoint's signer")
    chk.add_argument("--json", action="store_true", help="print the report as JSON")
    chk.set_defaults(func=run_check)


def run_publish(args: argparse.Namespace) -> int:
    """``trails log publish DIR``."""
    from trails.prov.iri import Minter

    settings = load_settings()
    with reading(args.store) as store:
        try:
            done = publish(store, Minter(settings.base_iri), args.dir)
        except OSError as exc:
            raise UserError(f"cannot write the tiles under {args.dir}: {exc}") from None
    print(
        f"published {done.size} leaves under {args.dir}: {done.tiles_written} tile(s) and "
        f"bundle(s) written ({done.bytes_written} bytes), {done.tiles_kept} kept, and the "
        "checkpoint"
    )
    return 0


def run_check(args: argparse.Namespace) -> int:
    """``trails log check DIR|URL [--key PEM]``."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    source: str = args.source
    web = source.startswith(("http://", "https://"))
    fetch = http_fetch(source) if web else folder_fetch(source)
    public = None
    if args.key:
        key = load_public_key(str(load_settings().resolve_path(args.key)))
        public = key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    report = TileLog(fetch).check(public)
    checkpoint = report.checkpoint
    assert checkpoint is not None
    if args.json:
        print(
            json.dumps(
                {
                    "ok": report.ok,
                    "origin": checkpoint.origin,
                    "size": checkpoint.size,
                    "root": checkpoint.root.hex(),
                    "entries": report.entries,
                    "tiles": report.tiles,
                    "signed_by_key": report.signed,
                    "problems": report.problems,
                },
                indent=2,
            )
        )
        return 0 if report.ok else 1
    for problem in report.problems:
        print(f"TILES     {problem}")
    verdict = "OK" if report.ok else f"FAILED: {len(report.problems)} finding(s)"
    signer = (
        "signed by the key given"
        if report.signed
        else "signature not checked (pass the log's public key: --key)"
        if public is None
        else "not signed by the key given"
    )
    print(
        f"{verdict}. {checkpoint.origin}: {checkpoint.size} leaves, {report.entries} entries and "
        f"{report.tiles} tile(s) checked against the root {checkpoint.root.hex()[:16]}…; "
        f"checkpoint {signer}"
    )
    return 0 if report.ok else 1
