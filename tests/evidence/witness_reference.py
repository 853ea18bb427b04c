"""A C2SP witness, its client and a cosignature verifier, written from the specification texts
(c2sp.org/tlog-witness, c2sp.org/tlog-cosignature, c2sp.org/signed-note, RFC 9162 section
2.1) and not from trails' code: the tests hold trails' witness client, ``trails witness
serve`` and ``trails verify --witness`` to them.

Only ``hashlib``, ``base64``, ``http.server``/``urllib`` and the ``cryptography`` package's
Ed25519 are used. The witness runs on loopback in a thread; ``behaviour`` makes it answer
as the spec says, or with garbage, another key's cosignature, or nothing at all (slow).
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

__all__ = [
    "ReferenceWitness",
    "consistency_proof",
    "cosigner_vkey",
    "mth",
    "post_add_checkpoint",
    "running_witness",
    "sign_checkpoint",
    "verify_consistency",
    "verify_cosignature",
]

EM = "\u2014 "


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


# -- RFC 9162, section 2.1 -------------------------------------------------------------------


def _k(n: int) -> int:
    """The largest power of two smaller than n."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves: list[bytes]) -> bytes:
    """MTH(D[n]) over leaf *data* (2.1.1)."""
    if not leaves:
        return _h(b"")
    if len(leaves) == 1:
        return _h(b"\x00" + leaves[0])
    k = _k(len(leaves))
    return _h(b"\x01" + mth(leaves[:k]) + mth(leaves[k:]))


def _subproof(m: int, leaves: list[bytes], whole: bool) -> list[bytes]:
    """SUBPROOF(m, D[n], b) (2.1.4.1)."""
    n = len(leaves)
    if m == n:
        return [] if whole else [mth(leaves)]
    k = _k(n)
    if m <= k:
        return [*_subproof(m, leaves[:k], whole), mth(leaves[k:])]
    return [*_subproof(m - k, leaves[k:], False), mth(leaves[:k])]


def consistency_proof(m: int, leaves: list[bytes]) -> list[bytes]:
    """PROOF(m, D[n]) (2.1.4.1); empty for m = 0 (as tlog-witness asks) and m = n."""
    return [] if m in (0, len(leaves)) else _subproof(m, leaves, True)


def verify_consistency(m: int, n: int, first: bytes, second: bytes, proof: list[bytes]) -> bool:
    """2.1.4.2, step by step."""
    if m == n:
        return not proof and first == second
    if m == 0 or m > n or not proof:
        return m == 0 and not proof
    path = [first, *proof] if m & (m - 1) == 0 else list(proof)
    fn, sn = m - 1, n - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = _h(b"\x01" + c + fr), _h(b"\x01" + c + sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = _h(b"\x01" + sr + c)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and fr == first and sr == second


# -- signed notes, checkpoints and cosignatures ------------------------------------------------


def _raw(key: Any) -> bytes:
    public = key.public_key() if hasattr(key, "public_key") else key
    raw: bytes = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return raw


def _key_id(name: str, sig_type: int, public: bytes) -> bytes:
    return _h(name.encode() + b"\n" + bytes([sig_type]) + public)[:4]


def sign_checkpoint(origin: str, size: int, root: bytes, key: Ed25519PrivateKey) -> str:
    """A checkpoint note signed by the log key ``key`` under the key name ``origin``."""
    text = f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"
    blob = _key_id(origin, 0x01, _raw(key)) + key.sign(text.encode())
    return f"{text}\n{EM}{origin} {base64.b64encode(blob).decode()}\n"


def cosigner_vkey(name: str, public: bytes) -> str:
    """``name+hex(key ID)+base64(0x04 || key)``: an Ed25519 cosigner's verifier key."""
    material = base64.b64encode(b"\x04" + public).decode()
    return f"{name}+{_key_id(name, 0x04, public).hex()}+{material}"


def _message(text: str, timestamp: int) -> bytes:
    return f"cosignature/v1\ntime {timestamp}\n{text}".encode()


def _cosign(text: str, name: str, key: Ed25519PrivateKey, timestamp: int) -> str:
    signature = key.sign(_message(text, timestamp))
    blob = _key_id(name, 0x04, _raw(key)) + timestamp.to_bytes(8, "big") + signature
    return f"{EM}{name} {base64.b64encode(blob).decode()}\n"


def _split(note: str) -> tuple[str, list[str]]:
    cut = note.rfind("\n\n")
    return note[: cut + 1], note[cut + 2 :].splitlines()


def verify_cosignature(note: str, name: str, public: bytes) -> int | None:
    """The time of a valid cosignature/v1 line by (name, public) on the note, else None."""
    text, lines = _split(note)
    want = _key_id(name, 0x04, public)
    for line in lines:
        line_name, _, b64 = line.removeprefix(EM).partition(" ")
        blob = base64.b64decode(b64)
        if line_name != name or blob[:4] != want or len(blob) != 4 + 8 + 64:
            continue
        stamp = int.from_bytes(blob[4:12], "big")
        try:
            Ed25519PublicKey.from_public_bytes(public).verify(blob[12:], _message(text, stamp))
        except InvalidSignature:
            continue
        return stamp
    return None


def _log_signed(note: str, origin: str, public: bytes) -> bool:
    text, lines = _split(note)
    for line in lines:
        line_name, _, b64 = line.removeprefix(EM).partition(" ")
        blob = base64.b64decode(b64)
        if line_name == origin and blob[:4] == _key_id(origin, 0x01, public):
            try:
                Ed25519PublicKey.from_public_bytes(public).verify(blob[4:], text.encode())
            except InvalidSignature:
                return False
            return True
    return False


# -- the witness (tlog-witness, add-checkpoint) -----------------------------------------------


@dataclass
class ReferenceWitness:
    """A witness following logs ``logs`` (origin -> Ed25519 public key)."""

    name: str
    key: Ed25519PrivateKey
    logs: dict[str, bytes]
    behaviour: str = "honest"  # honest | garbage | other-key | slow
    state: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    requests: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def vkey(self) -> str:
        return cosigner_vkey(self.name, _raw(self.key))

    def answer(self, body: bytes) -> tuple[int, str, bytes]:
        self.requests.append(body)
        if self.behaviour == "slow":
            time.sleep(5)
        if self.behaviour == "garbage":
            return 200, "text/plain", b"<html>the witness is down for maintenance</html>\n"
        head, _, note = body.decode().partition("\n\n")
        first, *proof_lines = head.split("\n")
        old = int(first.removeprefix("old "))
        proof = [base64.b64decode(p) for p in proof_lines]
        text, _ = _split(note)
        origin, size_text, root_b64 = text.split("\n")[:3]
        size, root = int(size_text), base64.b64decode(root_b64)
        if origin not in self.logs:
            return 404, "text/plain", b"unknown origin\n"
        if not _log_signed(note, origin, self.logs[origin]):
            return 403, "text/plain", b"no trusted signature\n"
        if old > size:
            return 400, "text/plain", b"old > size\n"
        with self.lock:
            held_size, held_root = self.state.get(origin, (0, b""))
            if old != held_size:
                return 409, "text/x.tlog.size", f"{held_size}\n".encode()
            if old == size and held_root and root != held_root:
                return 409, "text/plain", b"same size, another root\n"
            if old and not verify_consistency(old, size, held_root, root, proof):
                return 422, "text/plain", b"the proof does not verify\n"
            self.state[origin] = (size, root)
        signer = Ed25519PrivateKey.generate() if self.behaviour == "other-key" else self.key
        return 200, "text/plain", _cosign(text, self.name, signer, int(time.time())).encode()


@contextmanager
def running_witness(witness: ReferenceWitness) -> Iterator[str]:
    """The witness served on loopback in a thread; yields its URL prefix."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path != "/add-checkpoint":
                status, kind, data = 404, "text/plain", b"not found\n"
            else:
                status, kind, data = witness.answer(body)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# -- the client ---------------------------------------------------------------------------------


def post_add_checkpoint(
    prefix: str, old: int, proof: list[bytes], note: str
) -> tuple[int, str, bytes]:
    """POST <prefix>/add-checkpoint: (status, content type, body)."""
    lines = [f"old {old}", *(base64.b64encode(p).decode() for p in proof)]
    body = ("\n".join(lines) + "\n\n" + note).encode()
    request = urllib.request.Request(prefix + "/add-checkpoint", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()
