"""``trails witness``: witness another party's log, make a witness key, or ask this log's
witnesses now.

``serve`` runs a C2SP tlog-witness (``trails.evidence.witness`` behind
``trails.server.witness``) for the logs named by ``--log ORIGIN=KEY``; ``keygen`` writes an
Ed25519 key (PEM) and prints the witness's verifier key, what the other party configures;
``submit`` sends the store's newest signed checkpoint to the ``[[audit.witnesses]]`` (what
each ``trails verify`` checkpoint does) and keeps their cosignatures (exit 1 when a witness
refused it, 2 when one could not be asked or answered garbage). Exit 2 on bad usage (a
malformed key, an unreadable state folder, a port that cannot be bound).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from trails.errors import ConfigError, UserError
from trails.evidence.note import NoteError, parse_vkey

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``witness`` command."""
    p = subparsers.add_parser(
        "witness",
        help="witness another party's log (C2SP tlog-witness), or ask this log's witnesses",
        description="serve: cosign checkpoints of the logs given by --log when they extend the "
        "last one cosigned (C2SP tlog-witness), refusing and keeping any fork. keygen: write "
        "a witness key and print its verifier key. submit: send the newest checkpoint to the "
        "[[audit.witnesses]] and keep their cosignatures.",
    )
    sub = p.add_subparsers(dest="witness_command", metavar="ACTION", required=True)
    serve = sub.add_parser("serve", help="run a witness for other logs")
    serve.add_argument("--key", required=True, help="the witness's Ed25519 private key (PEM)")
    serve.add_argument("--name", required=True, help="the witness's key name (e.g. a URL)")
    serve.add_argument(
        "--log",
        action="append",
        required=True,
        metavar="ORIGIN=KEY",
        help="a log to witness: its checkpoint origin and its verifier key (name+id+base64), "
        "or a file holding the verifier key or the log's public key (PEM); repeatable",
    )
    serve.add_argument(
        "--state", default="witness-state", help="the state folder (default: witness-state)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    serve.add_argument("--port", type=int, default=7380, help="the port (default 7380)")
    serve.set_defaults(func=run_serve)
    keygen = sub.add_parser("keygen", help="write a witness key and print its verifier key")
    keygen.add_argument("--name", required=True, help="the witness's key name (e.g. a URL)")
    keygen.add_argument("--out", required=True, help="the private key file to write (PEM)")
    keygen.set_defaults(func=run_keygen)
    submit = sub.add_parser(
        "submit", help="send the newest checkpoint to the configured witnesses now"
    )
    submit.set_defaults(func=run_submit)


def _public_of(text: str) -> tuple[str, bytes] | None:
    """``(key name, public key)`` of a log's verifier key text, else None."""
    try:
        name, _, _, public = parse_vkey(text)
    except NoteError:
        return None
    return name, public


def _log_key(spec: str) -> tuple[str, str, bytes]:
    """``(origin, key name, public key)`` of one ``--log``.

    Raises:
        UserError: not ORIGIN=KEY (or a bare verifier key, its name the origin).
    """
    from trails.evidence.checks import load_public_key

    bare = _public_of(spec)
    if bare is not None:
        return bare[0], bare[0], bare[1]
    origin, sep, key = spec.partition("=")
    if not sep or not origin or any(c.isspace() for c in origin):
        raise UserError(f"--log {spec[:80]!r}: give ORIGIN=KEY (a verifier key or a key file)")
    found = _public_of(key)
    if found is not None:
        return origin, found[0], found[1]
    path = Path(key)
    if not path.is_file():
        raise UserError(f"--log {origin}=...: not a verifier key, nor a file: {key[:80]!r}")
    found = _public_of(path.read_text(encoding="utf-8", errors="replace"))
    if found is not None:
        return origin, found[0], found[1]
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    public = load_public_key(str(path)).public_bytes(Encoding.Raw, PublicFormat.Raw)
    return origin, origin, public


def run_serve(args: argparse.Namespace) -> int:
    """``trails witness serve``."""
    from trails.evidence.cosign import Cosigner
    from trails.evidence.seal import load_signing_key
    from trails.evidence.witness import LogKey, Witness
    from trails.server.witness import make_server

    if not 0 <= args.port <= 65535:
        raise UserError(f"--port {args.port} is not a port number")
    if not args.name or any(c.isspace() or c == "+" for c in args.name):
        raise UserError(f"--name {args.name!r}: a key name has no spaces and no '+'")
    key = load_signing_key(args.key)
    logs = [LogKey(*_log_key(spec)) for spec in args.log]
    try:
        witness = Witness(args.state, args.name, key, logs)
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    try:
        server = make_server(witness, args.host, args.port)
    except OSError as exc:
        witness.close()
        raise UserError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
        ) from None
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    port = server.server_address[1]
    print(
        f"witness {args.name} at http://{args.host}:{port}/add-checkpoint, state in {args.state}, "
        f"{len(logs)} log key(s); verifier key {Cosigner(args.name, public).vkey()}",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        witness.close()
    return 0


def run_keygen(args: argparse.Namespace) -> int:
    """``trails witness keygen --name NAME --out KEY.pem``."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        PublicFormat,
    )

    from trails.evidence.cosign import Cosigner

    if not args.name or any(c.isspace() or c == "+" for c in args.name):
        raise UserError(f"--name {args.name!r}: a key name has no spaces and no '+'")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    try:
        fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise UserError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    print(Cosigner(args.name, public).vkey())
    return 0


def run_submit(args: argparse.Namespace) -> int:
    """``trails witness submit``: exit 0 when every witness cosigned, 1 when one refused the
    checkpoint, 2 when one could not be asked (unreachable, too slow, or it answered
    garbage)."""
    from trails.audit.access import changing
    from trails.config import load_settings
    from trails.evidence.witnessing import configured_witnesses, witness_newest
    from trails.prov.recorder import Recorder

    settings = load_settings()
    witnesses, timeout = configured_witnesses(settings)
    if not witnesses:
        raise UserError("no witness is configured: add [[audit.witnesses]] url and key")
    with changing(args.store) as store:
        outcomes = witness_newest(
            Recorder(store, base_iri=settings.base_iri), witnesses, timeout=timeout
        )
    if not outcomes:
        raise UserError("the store has no signed checkpoint yet: set [audit] signing_key and "
                        "run trails verify")  # fmt: skip
    for outcome in outcomes:
        print(outcome)
    cosigned = sum(o.line is not None for o in outcomes)
    print(f"{cosigned} of {len(outcomes)} witness(es) cosigned", file=sys.stderr)
    if any(o.refused for o in outcomes):
        return 1
    return 0 if cosigned == len(outcomes) else 2


# -- what ``trails verify`` does with witnesses ------------------------------------------


def required_witnesses(args: argparse.Namespace) -> tuple[list[Any], int]:
    """``--witness KEY...`` (verifier keys, or files holding one) and ``--quorum N``
    (default: all of them).

    Raises:
        UserError: a key that is not a witness verifier key, ``--quorum`` without
            ``--witness``, or a quorum outside 1..the keys given.
    """
    from trails.evidence.cosign import parse_cosigner

    given: list[str] = getattr(args, "witness", None) or []
    quorum: int | None = getattr(args, "quorum", None)
    if not given:
        if quorum is not None:
            raise UserError("--quorum N counts cosignatures of the --witness keys: give them")
        return [], 0
    keys = []
    for text in given:
        path = Path(text)
        value = text
        if "+" not in text and path.is_file():
            value = path.read_text(encoding="utf-8", errors="replace").strip()
        try:
            keys.append(parse_cosigner(value))
        except NoteError as exc:
            raise UserError(f"--witness: {exc}") from None
    if len({(k.name, k.public) for k in keys}) != len(keys):
        raise UserError("--witness names the same key twice")
    quorum = len(keys) if quorum is None else quorum
    if not 1 <= quorum <= len(keys):
        raise UserError(f"--quorum {quorum} must be between 1 and the {len(keys)} key(s) given")
    return keys, quorum


def kept_note(path: str) -> str:
    """The cosigned checkpoint a kept file holds (a checkpoint, or a JSON head's).

    Raises:
        UserError: neither.
    """
    from trails.evidence.proofs import TreeHead, read_json

    data = Path(path).read_bytes()
    if data.lstrip().startswith(b"{"):
        head = TreeHead.from_json(read_json(path, "tree head"), path)
        if not head.note:
            raise UserError(f"{path} holds no checkpoint for witnesses to have cosigned")
        return head.note
    return data.decode("utf-8", errors="replace")


def quorum_lines(store: Any, keys: list[Any], quorum: int, kept: str | None) -> list[str]:
    """The quorum check of ``trails verify --witness``: one ``WITNESSED`` line when
    ``quorum`` of ``keys`` validly cosigned the checkpoint (the kept file's, else the log's
    newest head's), else one ``WITNESSES`` line naming the witnesses missing or invalid."""
    from trails.config import load_settings
    from trails.evidence.transparency import log_iri, read_head
    from trails.prov.iri import Minter

    if kept is not None:
        return [note_quorum(kept_note(kept), keys, quorum, kept)[1]]
    head = read_head(store, log_iri(Minter(load_settings().base_iri)))
    if head is None or not head.note:
        return ["WITNESSES the log has no signed checkpoint for witnesses to have cosigned"]
    return [note_quorum(head.cosigned_note(), keys, quorum, "the log's newest tree head")[1]]


def note_quorum(text: str, keys: list[Any], quorum: int, where: str) -> tuple[bool, str]:
    """Whether ``quorum`` of ``keys`` validly cosigned the checkpoint ``text``, and the
    ``WITNESSED`` or ``WITNESSES`` line that says so.

    Raises:
        UserError: ``text`` is not a signed checkpoint.
    """
    from trails.evidence.cosign import check_quorum
    from trails.evidence.note import parse_checkpoint, parse_note

    try:
        note = parse_note(text)
        size = parse_checkpoint(note.text).size
    except NoteError as exc:
        raise UserError(f"{where}: not a checkpoint: {exc}") from None
    report = check_quorum(note, keys, quorum)
    if report.ok:
        return True, (
            f"WITNESSED checkpoint of {size} leaves ({where}): cosigned by "
            f"{', '.join(report.valid)} ({len(report.valid)} of the {quorum} required)"
        )
    return False, f"WITNESSES checkpoint of {size} leaves ({where}): {report.problem()}"


def ask_configured(recorder: Any, witnesses: list[Any], timeout: float) -> list[str]:
    """After a checkpoint: ask the configured witnesses; one line each."""
    from trails.errors import StoreError
    from trails.evidence.witnessing import witness_newest

    try:
        outcomes = witness_newest(recorder, witnesses, timeout=timeout)
    except StoreError as exc:
        return [f"WITNESS   no cosignature kept: {exc}"]
    if not outcomes:
        return [
            "WITNESS   nothing sent to the witnesses: the tree head is not a signed checkpoint "
            "(set [audit] signing_key)"
        ]
    return [str(o) for o in outcomes]
