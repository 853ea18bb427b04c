"""Witness cosignatures (c2sp.org/tlog-cosignature) and the witness protocol's request body
(c2sp.org/tlog-witness): the bytes both sides of a witness agree on.

A witness is an independent party that cosigns a checkpoint only after checking that it is
consistent with the last checkpoint of the same log it cosigned. A fork (two histories
shown to two audiences) then needs every witness of a quorum to cosign both branches,
which an honest witness never does. A cosignature is one more signature line of the
checkpoint's note:

    — <witness name> base64(key ID || timestamp || Ed25519 signature)

with the key ID ``SHA-256(name || 0x0A || 0x04 || public key)[:4]``, the timestamp an
8-byte big-endian POSIX time, and the signature over

    cosignature/v1
    time <timestamp>
    <the checkpoint's note text>

A witness's verifier key is ``<name>+<hex key ID>+base64(0x04 || public key)``.

The ``add-checkpoint`` request body is ``old <size>``, the consistency proof's hashes in
base64 (one a line, at most 63), an empty line and the signed checkpoint. This module only
formats, parses and checks; the witness is ``trails.evidence.witness``, the client that
asks witnesses ``trails.evidence.witnessing``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Any

from trails.evidence.note import NoteError, NoteSignature, SignedNote, parse_note

__all__ = [
    "COSIGNATURE_V1",
    "MAX_PROOF_LINES",
    "AddCheckpoint",
    "Cosigner",
    "QuorumReport",
    "check_quorum",
    "cosign",
    "cosigned_message",
    "cosigner_key_id",
    "format_add_checkpoint",
    "parse_add_checkpoint",
    "parse_cosigner",
]

COSIGNATURE_V1 = 0x04
"""The signature type of Ed25519 ``cosignature/v1`` keys (key IDs and verifier keys)."""

MAX_PROOF_LINES = 63
MAX_FUTURE_S = 300
"""A cosignature dated more than this after the verifier's clock is not counted."""

_SIZE = re.compile(r"0|[1-9][0-9]{0,19}")


def cosigner_key_id(name: str, public: bytes) -> bytes:
    """``SHA-256(name || 0x0A || 0x04 || public key)[:4]``."""
    material = name.encode("utf-8") + b"\n" + bytes([COSIGNATURE_V1]) + public
    return hashlib.sha256(material).digest()[:4]


def cosigned_message(text: str, timestamp: int) -> bytes:
    """The bytes a ``cosignature/v1`` signature covers: the header, the time, the note text."""
    return f"cosignature/v1\ntime {timestamp}\n{text}".encode()


@dataclass(frozen=True)
class Cosigner:
    """A witness's identity: its key name and Ed25519 public key (32 raw bytes)."""

    name: str
    public: bytes

    @property
    def key_id(self) -> bytes:
        return cosigner_key_id(self.name, self.public)

    def vkey(self) -> str:
        material = base64.b64encode(bytes([COSIGNATURE_V1]) + self.public).decode("ascii")
        return f"{self.name}+{self.key_id.hex()}+{material}"

    def signed(self, text: str, sig: NoteSignature) -> int | None:
        """The time of ``sig`` when it is this cosigner's valid cosignature of ``text``."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        if sig.name != self.name or sig.key_id != self.key_id or len(sig.signature) != 72:
            return None
        stamp = int.from_bytes(sig.signature[:8], "big")
        if stamp >= 1 << 63:
            return None
        try:
            Ed25519PublicKey.from_public_bytes(self.public).verify(
                sig.signature[8:], cosigned_message(text, stamp)
            )
        except (InvalidSignature, ValueError):
            return None
        return stamp


def parse_cosigner(text: str) -> Cosigner:
    """A witness's verifier key (``name+hexid+base64(0x04 || key)``).

    Raises:
        NoteError: not such a key, or its key ID is not the one its key gives.
    """
    shown = text.strip()[:80]
    name, _, rest = text.strip().partition("+")
    hex_id, _, material = rest.partition("+")
    try:
        if not name or any(c.isspace() or c == "+" for c in name):
            raise ValueError(name)
        raw = base64.b64decode(material.encode("ascii"), validate=True)
        kid = bytes.fromhex(hex_id) if re.fullmatch(r"[0-9a-f]{8}", hex_id) else b""
    except (ValueError, UnicodeError, binascii.Error):
        raise NoteError(f"not a witness verifier key (name+hexid+base64): {shown!r}") from None
    if len(kid) != 4 or len(raw) != 33 or raw[0] != COSIGNATURE_V1:
        raise NoteError(f"not a cosignature/v1 Ed25519 verifier key (type 0x04): {shown!r}")
    cosigner = Cosigner(name, raw[1:])
    if cosigner.key_id != kid:
        raise NoteError(f"the verifier key's ID is not the one its key gives: {name}+{hex_id}")
    return cosigner


def cosign(text: str, name: str, private_key: Any, timestamp: int | None = None) -> NoteSignature:
    """The ``cosignature/v1`` signature line of ``text`` (a checkpoint's note text)."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    stamp = int(time.time()) if timestamp is None else timestamp
    public = private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    signature = private_key.sign(cosigned_message(text, stamp))
    return NoteSignature(name, cosigner_key_id(name, public), stamp.to_bytes(8, "big") + signature)


@dataclass
class QuorumReport:
    """Which of the required witnesses cosigned a checkpoint, and which did not."""

    quorum: int
    valid: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    """Witnesses whose line is there but does not verify (or is dated in the future)."""

    @property
    def ok(self) -> bool:
        return len(self.valid) >= self.quorum

    def problem(self) -> str:
        """One sentence on why the quorum is not met (empty when it is)."""
        if self.ok:
            return ""
        parts = [f"{len(self.valid)} valid cosignature(s) of the {self.quorum} required"]
        if self.missing:
            parts.append("none from " + ", ".join(self.missing))
        if self.invalid:
            parts.append("an invalid one from " + ", ".join(self.invalid))
        return "; ".join(parts)


def check_quorum(
    note: SignedNote, witnesses: list[Cosigner], quorum: int, *, now: float | None = None
) -> QuorumReport:
    """How many of ``witnesses`` validly cosigned the note's text: each counts once, lines
    of other keys are ignored (as the spec asks), a line of a known key that does not
    verify, or is dated more than five minutes ahead, makes the witness invalid."""
    clock = time.time() if now is None else now
    report = QuorumReport(quorum)
    for witness in witnesses:
        label = f"{witness.name}+{witness.key_id.hex()}"
        lines = [
            s for s in note.signatures if s.name == witness.name and s.key_id == witness.key_id
        ]
        times = [witness.signed(note.text, s) for s in lines]
        if any(t is not None and t <= clock + MAX_FUTURE_S for t in times):
            report.valid.append(label)
        elif lines:
            report.invalid.append(label)
        else:
            report.missing.append(label)
    return report


@dataclass(frozen=True)
class AddCheckpoint:
    """An ``add-checkpoint`` request: the old size, the consistency proof, the note."""

    old: int
    proof: tuple[bytes, ...]
    note: SignedNote


def format_add_checkpoint(old: int, proof: list[bytes], note: str) -> bytes:
    """The request body of ``POST <prefix>/add-checkpoint``."""
    lines = [f"old {old}", *(base64.b64encode(h).decode("ascii") for h in proof)]
    return ("\n".join(lines) + "\n\n" + note).encode("utf-8")


def parse_add_checkpoint(body: bytes) -> AddCheckpoint:
    """An ``add-checkpoint`` request body.

    Raises:
        NoteError: not ``old N``, base64 hashes of 32 bytes (at most 63), an empty line
            and a well-formed signed note.
    """
    head, sep, rest = body.partition(b"\n\n")
    if not sep:
        raise NoteError("an add-checkpoint body needs an empty line before the checkpoint")
    try:
        lines = head.decode("ascii").split("\n")
    except UnicodeDecodeError:
        raise NoteError("an add-checkpoint body's first lines are ASCII") from None
    first = lines[0]
    if not first.startswith("old ") or not _SIZE.fullmatch(first[4:]):
        raise NoteError(f"an add-checkpoint body starts with 'old <size>': {first[:40]!r}")
    if len(lines) - 1 > MAX_PROOF_LINES:
        raise NoteError(f"more than {MAX_PROOF_LINES} consistency proof lines")
    proof = []
    for line in lines[1:]:
        try:
            hashed = base64.b64decode(line.encode("ascii"), validate=True)
        except (ValueError, binascii.Error):
            hashed = b""
        if len(hashed) != 32:
            raise NoteError(f"a consistency proof line is not base64 of 32 bytes: {line[:60]!r}")
        proof.append(hashed)
    return AddCheckpoint(int(first[4:]), tuple(proof), parse_note(rest))
