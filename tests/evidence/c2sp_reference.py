"""A C2SP signed-note and tlog-checkpoint verifier written from the specification texts
(c2sp.org/signed-note, c2sp.org/tlog-checkpoint, c2sp.org/tlog-cosignature), not from
trails' code: the tests hold trails' checkpoints, and trails' verifier, to it.

Only ``hashlib``, ``base64`` and the ``cryptography`` package's Ed25519 are used.
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = ["Reject", "cosigned_message", "open_note", "parse_checkpoint_text", "vkey_of"]


class Reject(Exception):
    """The note is rejected."""


def vkey_of(name: str, public: bytes, sig_type: int = 1) -> str:
    """``<key name>+hex(key ID)+base64(signature type || public key)`` where
    key ID = SHA-256(key name || 0x0A || signature type || public key)[:4]."""
    kid = hashlib.sha256(name.encode() + b"\x0a" + bytes([sig_type]) + public).digest()[:4]
    return f"{name}+{kid.hex()}+{base64.b64encode(bytes([sig_type]) + public).decode()}"


def _parse_vkey(vkey: str) -> tuple[str, bytes, int, bytes]:
    name, hex_id, material = vkey.split("+", 2)
    raw = base64.b64decode(material, validate=True)
    return name, bytes.fromhex(hex_id), raw[0], raw[1:]


def open_note(note: bytes, vkey: str) -> str:
    """The note text, when a signature by the key ``vkey`` names verifies; else ``Reject``.

    "A signed note consists of a text ending in newline, followed by a blank line, followed
    by one or more signature lines: em dash, space, key name, space, base64 signature,
    newline." The text is separated from the signatures by the last empty line.
    """
    try:
        whole = note.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Reject("not UTF-8") from exc
    for ch in whole:
        if ord(ch) < 0x20 and ch != "\n":
            raise Reject("control character")
    cut = whole.rfind("\n\n")
    if cut < 0 or not whole.endswith("\n"):
        raise Reject("no blank line, or no final newline")
    text, signatures = whole[: cut + 1], whole[cut + 2 :]
    name, kid, sig_type, public = _parse_vkey(vkey)
    if sig_type != 1:
        raise Reject("only Ed25519 (0x01) keys here")
    verified = False
    for line in signatures.split("\n")[:-1]:
        if not line.startswith("\u2014 "):
            raise Reject(f"not a signature line: {line!r}")
        line_name, b64 = line[2:].split(" ")
        blob = base64.b64decode(b64, validate=True)
        if line_name != name or blob[:4] != kid:
            continue  # "Verifiers MUST ignore signatures from unknown keys"
        try:
            Ed25519PublicKey.from_public_bytes(public).verify(blob[4:], text.encode("utf-8"))
        except InvalidSignature as exc:
            raise Reject("a signature from a known key fails") from exc
        verified = True
    if not verified:
        raise Reject("no signature from a known key")
    return text


def parse_checkpoint_text(text: str) -> tuple[str, int, bytes, list[str]]:
    """``(origin, tree size, root hash, extension lines)``: at least three non-empty lines;
    the size is ASCII decimal with no leading zeroes; the root hash base64."""
    lines = text.split("\n")
    assert lines[-1] == "", "the text ends in a newline"
    lines = lines[:-1]
    if len(lines) < 3 or any(not line for line in lines):
        raise Reject("fewer than three lines, or an empty one")
    origin, size, root = lines[0], lines[1], lines[2]
    if not size.isdigit() or (size != "0" and size.startswith("0")):
        raise Reject("tree size")
    return origin, int(size), base64.b64decode(root, validate=True), lines[3:]


def cosigned_message(body: str, timestamp: int) -> bytes:
    """The Ed25519 cosignature/v1 signed message: ``cosignature/v1``, ``time <t>``, then
    the checkpoint's note body."""
    return f"cosignature/v1\ntime {timestamp}\n{body}".encode()
