"""C2SP signed notes and transparency-log checkpoints: tree heads any checkpoint tool reads.

A tree head of the transparency log (``trails.evidence.transparency``) is also written as a
C2SP ``tlog-checkpoint`` (c2sp.org/tlog-checkpoint) in a C2SP ``signed-note`` envelope
(c2sp.org/signed-note), the form Go's checksum database, Sigstore's Rekor, sigsum and the
C2SP witnesses read and cosign:

    <origin>
    <tree size, ASCII decimal>
    <root hash, standard base64>

    — <key name> base64(key ID || Ed25519 signature over the three lines above)

The note text is the three lines with their final newline (no extension line is written;
any a note carries is kept as read). The key name is the origin; the key ID is the first
four bytes of ``SHA-256(key name || 0x0A || 0x01 || 32-byte Ed25519 public key)``. A
verifier key (*vkey*) is ``<name>+<hex key ID>+base64(0x01 || public key)``.

This module only formats, parses and checks (pure functions over bytes and keys); it
never reads a store. What the log signs and when is the writer's
(``trails.evidence.transparency``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from trails.errors import UserError

__all__ = [
    "ED25519",
    "Checkpoint",
    "NoteError",
    "NoteSignature",
    "SignedNote",
    "key_id",
    "parse_checkpoint",
    "parse_note",
    "parse_vkey",
    "sign_line",
    "signature_status",
    "vkey",
]

ED25519 = 0x01
"""The signed-note signature type of Ed25519 note signatures."""

MAX_NOTE_BYTES = 1 << 20
MAX_SIGNATURES = 100
"""A note is refused above these (the spec asks verifiers to accept at least 16)."""

_SIZE = re.compile(r"0|[1-9][0-9]*")
_DASH = "\u2014 "


class NoteError(UserError):
    """Text that is not a well-formed signed note, checkpoint or verifier key."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    """Strict standard base64 (RFC 4648 section 4, padded).

    Raises:
        ValueError: not canonical base64.
    """
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if _b64(raw) != text:
        raise ValueError("not canonical base64")
    return raw


def key_id(name: str, public: bytes, kind: int = ED25519) -> bytes:
    """The 4-byte key ID: ``SHA-256(name || 0x0A || kind || public key)[:4]``."""
    return hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([kind]) + public).digest()[:4]


def _check_name(name: str) -> None:
    if not name or any(c.isspace() or c == "+" for c in name):
        raise NoteError(f"a key name must be non-empty, without spaces or '+': {name!r}")


def vkey(name: str, public: bytes, kind: int = ED25519) -> str:
    """The verifier key text of an Ed25519 public key (32 raw bytes) under ``name``."""
    _check_name(name)
    return f"{name}+{key_id(name, public, kind).hex()}+{_b64(bytes([kind]) + public)}"


def parse_vkey(text: str) -> tuple[str, bytes, int, bytes]:
    """``(name, key ID, signature type, public key)`` of a verifier key.

    Raises:
        NoteError: not a well-formed vkey, or its key ID is not the one its key gives.
    """
    name, _, rest = text.strip().partition("+")
    hex_id, _, material = rest.partition("+")
    try:
        _check_name(name)
        kid = bytes.fromhex(hex_id) if re.fullmatch(r"[0-9a-f]{8}", hex_id) else b""
        raw = _unb64(material)
    except (ValueError, UnicodeError):
        raise NoteError(f"not a verifier key (name+hexid+base64): {text.strip()[:80]!r}") from None
    if len(kid) != 4 or len(raw) != 33 or raw[0] != ED25519:
        raise NoteError(f"not an Ed25519 verifier key: {text.strip()[:80]!r}")
    if key_id(name, raw[1:], raw[0]) != kid:
        raise NoteError(f"the verifier key's ID is not the one its key gives: {name}+{hex_id}")
    return name, kid, raw[0], raw[1:]


@dataclass(frozen=True)
class NoteSignature:
    """One signature line: the key name, the 4-byte key ID and the signature bytes."""

    name: str
    key_id: bytes
    signature: bytes

    def line(self) -> str:
        return f"{_DASH}{self.name} {_b64(self.key_id + self.signature)}\n"


@dataclass(frozen=True)
class SignedNote:
    """A note's text (with its final newline) and its signature lines."""

    text: str
    signatures: tuple[NoteSignature, ...]

    def __str__(self) -> str:
        return self.text + "\n" + "".join(s.line() for s in self.signatures)


def parse_note(data: bytes | str) -> SignedNote:
    """A signed note (c2sp.org/signed-note), checked for form (not for its signatures).

    Raises:
        NoteError: not valid UTF-8, a control character other than newline, no final
            newline, no blank line before the signatures, or a malformed signature line.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > MAX_NOTE_BYTES:
        raise NoteError(f"a signed note of {len(raw)} bytes is over the {MAX_NOTE_BYTES} allowed")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NoteError("a signed note must be UTF-8") from None
    if any(ord(c) < 0x20 and c != "\n" for c in text):
        raise NoteError("a signed note holds a control character other than newline")
    if not text.endswith("\n"):
        raise NoteError("a signed note ends with a newline")
    split = text.rfind("\n\n")
    if split < 0:
        raise NoteError("a signed note needs a blank line between its text and signatures")
    body, block = text[: split + 1], text[split + 2 :]
    lines = block[:-1].split("\n") if block else []
    if not lines:
        raise NoteError("a signed note needs at least one signature line")
    if len(lines) > MAX_SIGNATURES:
        raise NoteError(f"a signed note of more than {MAX_SIGNATURES} signatures")
    signatures = []
    for line in lines:
        name, _, encoded = line.removeprefix(_DASH).partition(" ")
        try:
            if not line.startswith(_DASH) or " " in encoded:
                raise ValueError(line)
            _check_name(name)
            blob = _unb64(encoded)
        except (ValueError, UnicodeError, NoteError):
            raise NoteError(f"a malformed signature line: {line[:80]!r}") from None
        if len(blob) < 5:
            raise NoteError(f"a signature line too short for a key ID and a signature: {name}")
        signatures.append(NoteSignature(name, blob[:4], blob[4:]))
    return SignedNote(body, tuple(signatures))


def sign_line(text: str, name: str, private_key: Any) -> NoteSignature:
    """An Ed25519 note signature of ``text`` by ``private_key`` under the key name ``name``."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    _check_name(name)
    public = private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return NoteSignature(name, key_id(name, public), private_key.sign(text.encode("utf-8")))


def signature_status(note: SignedNote, name: str, public: bytes) -> bool | None:
    """Whether the note's signature by the Ed25519 key ``public`` under ``name`` verifies:
    None when no line carries that name and key ID (signatures of other keys are ignored,
    as the spec says), True when one does and verifies, False when one does not verify."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    want, found = key_id(name, public), None
    for sig in note.signatures:
        if sig.name != name or sig.key_id != want:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(public).verify(
                sig.signature, note.text.encode("utf-8")
            )
        except (InvalidSignature, ValueError):
            return False
        found = True
    return found


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint's note text: origin, tree size, root hash, extension lines."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        lines = [self.origin, str(self.size), _b64(self.root), *self.extensions]
        return "".join(f"{line}\n" for line in lines)


def parse_checkpoint(text: str) -> Checkpoint:
    """The checkpoint a note's text holds (c2sp.org/tlog-checkpoint).

    Raises:
        NoteError: fewer than three lines, an empty line, a size with leading zeros or not
            decimal, a root hash that is not base64 of 32 bytes.
    """
    if not text.endswith("\n"):
        raise NoteError("a checkpoint's text ends with a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3 or not all(lines):
        raise NoteError("a checkpoint has an origin, a tree size and a root hash, none empty")
    origin, size, root = lines[:3]
    if len(size) > 20 or not _SIZE.fullmatch(size):
        raise NoteError(f"a checkpoint's tree size is ASCII decimal, no leading zero: {size!r}")
    try:
        hashed = _unb64(root)
    except (ValueError, UnicodeError, binascii.Error):
        hashed = b""
    if len(hashed) != 32:
        raise NoteError(f"a checkpoint's root hash is base64 of 32 bytes: {root[:60]!r}")
    return Checkpoint(origin, int(size), hashed, tuple(lines[3:]))
