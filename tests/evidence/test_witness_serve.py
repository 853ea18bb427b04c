"""``trails witness serve`` (a real subprocess) against a client and a log written from the C2SP
texts (``tests.evidence.witness_reference``): it cosigns what extends what it cosigned, in
bytes the reference verifies; answers 404, 403, 400, 409 and 422 as tlog-witness says;
refuses a fork at its second branch and keeps both checkpoints; keeps its state across a
restart; and refuses bad input in one line, exit 2.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from tests.evidence.witness_reference import (
    consistency_proof,
    mth,
    post_add_checkpoint,
    sign_checkpoint,
    verify_consistency,
    verify_cosignature,
)

ORIGIN = "example.org/dept-b"
NAME = "witness.example/dept-a"
EXE = str(Path(sys.executable).with_name("trails"))


def _raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _serving(folder: Path, *extra: str) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [EXE, "witness", "serve", "--key", "witness.pem", "--name", NAME, "--state", "state",
         "--port", str(port), *extra],
        cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.kill(proc.pid, signal.SIGINT)
        proc.communicate(timeout=30)


def _keys(folder: Path) -> tuple[Ed25519PrivateKey, bytes, str]:
    """The log's key (its public key and verifier key to configure), and the witness's key
    made by ``trails witness keygen`` (its public key read from the printed verifier key)."""
    log_key = Ed25519PrivateKey.generate()
    done = subprocess.run(
        [EXE, "witness", "keygen", "--name", NAME, "--out", "witness.pem"],
        cwd=folder, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    vkey = done.stdout.strip()
    raw = base64.b64decode(vkey.split("+", 2)[2])
    assert raw[0] == 0x04 and vkey.split("+")[0] == NAME
    public = _raw(log_key)
    kid = hashlib.sha256(ORIGIN.encode() + b"\n\x01" + public).digest()[:4]
    material = base64.b64encode(bytes([1]) + public).decode()
    log_vkey = f"{ORIGIN}+{kid.hex()}+{material}"
    return log_key, raw[1:], log_vkey


def _pem(folder: Path) -> None:
    """A witness key written here (the commands under test refuse before they would use it)."""
    from cryptography.hazmat.primitives.serialization import NoEncryption, PrivateFormat

    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    (folder / "witness.pem").write_bytes(pem)


def _leaves(n: int, tag: str = "a") -> list[bytes]:
    return [f"{tag}-leaf-{i}".encode() for i in range(n)]


def test_the_witness_cosigns_refuses_forks_keeps_them_and_survives_a_restart(
    tmp_path: Path,
) -> None:
    log_key, witness_public, log_vkey = _keys(tmp_path)
    a = _leaves(7)
    with _serving(tmp_path, "--log", f"{ORIGIN}={log_vkey}") as url:
        three = sign_checkpoint(ORIGIN, 3, mth(a[:3]), log_key)
        status, _, body = post_add_checkpoint(url, 0, [], three)
        assert status == 200, body
        stamp = verify_cosignature(three + body.decode(), NAME, witness_public)
        assert stamp is not None and abs(stamp - time.time()) < 60

        # the spec's refusals
        other = sign_checkpoint("example.org/unknown", 3, mth(a[:3]), log_key)
        assert post_add_checkpoint(url, 0, [], other)[0] == 404
        forged = sign_checkpoint(ORIGIN, 5, mth(a[:5]), Ed25519PrivateKey.generate())
        assert post_add_checkpoint(url, 3, consistency_proof(3, a[:5]), forged)[0] == 403
        five = sign_checkpoint(ORIGIN, 5, mth(a[:5]), log_key)
        assert post_add_checkpoint(url, 6, [], five)[0] == 400  # old > size
        status, kind, body = post_add_checkpoint(url, 0, [], five)
        assert (status, kind, body) == (409, "text/x.tlog.size", b"3\n")
        status, _, body = post_add_checkpoint(url, 3, [b"\x00" * 32], five)
        assert status == 422  # a proof that does not verify
        assert post_add_checkpoint(url, 0, [], "not a checkpoint")[0] == 400

        # the log grows with a proof: cosigned
        proof = consistency_proof(3, a[:5])
        assert verify_consistency(3, 5, mth(a[:3]), mth(a[:5]), proof)  # the reference agrees
        status, _, body = post_add_checkpoint(url, 3, proof, five)
        assert status == 200 and verify_cosignature(five + body.decode(), NAME, witness_public)
        assert post_add_checkpoint(url, 5, [], five)[0] == 200  # the same again: still fine

        # a fork: the same size, another history; then a larger tree that does not extend
        b = a[:4] + _leaves(3, "b")
        split = sign_checkpoint(ORIGIN, 5, mth(b[:5]), log_key)
        assert post_add_checkpoint(url, 5, [], split)[0] == 409
        larger = sign_checkpoint(ORIGIN, 7, mth(b), log_key)
        assert post_add_checkpoint(url, 5, consistency_proof(5, b), larger)[0] == 422

    refusals = [json.loads(x) for x in (tmp_path / "state/refusals.jsonl").read_text().splitlines()]
    assert [r["status"] for r in refusals] == [422, 409, 422]  # the bad proof of 3 -> 5 too
    assert refusals[1]["submitted"] == split and refusals[1]["cosigned"] == five
    assert refusals[2]["submitted"] == larger and refusals[2]["cosigned"] == five
    assert refusals[2]["old"] == 5 and refusals[2]["proof"]

    # restarted: the state is kept (the cosigned size is still 5), the fork still refused
    state = json.loads((tmp_path / "state/state.json").read_text())
    assert state["logs"][ORIGIN]["size"] == 5
    with _serving(tmp_path, "--log", f"{ORIGIN}={log_vkey}") as url:
        assert post_add_checkpoint(url, 0, [], larger)[:3:2] == (409, b"5\n")
        assert post_add_checkpoint(url, 5, consistency_proof(5, b), larger)[0] == 422
        seven = sign_checkpoint(ORIGIN, 7, mth(a), log_key)
        status, _, body = post_add_checkpoint(url, 5, consistency_proof(5, a), seven)
        assert status == 200 and verify_cosignature(seven + body.decode(), NAME, witness_public)


def _one_line_exit_2(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--log", "example.org/x=not-a-key"],
        ["--log", "no-equals-sign"],
        ["--log", "example.org/x=junk.txt"],  # neither a verifier key nor a PEM key
        ["--log", "example.org/x=missing.pem", "--port", "99999"],
    ],
)
def test_bad_input_to_witness_serve_is_one_line_exit_2(tmp_path: Path, args: list[str]) -> None:
    _pem(tmp_path)
    (tmp_path / "junk.txt").write_text("junk\n")
    done = subprocess.run(
        [EXE, "witness", "serve", "--key", "witness.pem", "--name", NAME, *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    _one_line_exit_2(done)


def test_a_corrupt_state_or_an_existing_key_file_is_refused(tmp_path: Path) -> None:
    _pem(tmp_path)
    public = _raw(Ed25519PrivateKey.generate())
    kid = hashlib.sha256(ORIGIN.encode() + b"\n\x01" + public).digest()[:4]
    log_vkey = f"{ORIGIN}+{kid.hex()}+{base64.b64encode(bytes([1]) + public).decode()}"
    (tmp_path / "state").mkdir()
    (tmp_path / "state/state.json").write_text("{not json")
    done = subprocess.run(
        [EXE, "witness", "serve", "--key", "witness.pem", "--name", NAME, "--state", "state",
         "--log", f"{ORIGIN}={log_vkey}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    _one_line_exit_2(done)
    assert "witness state" in done.stderr
    done = subprocess.run(
        [EXE, "witness", "keygen", "--name", NAME, "--out", "witness.pem"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    _one_line_exit_2(done)  # never overwrites a key


def test_one_witness_at_a_time_holds_a_state_folder(tmp_path: Path) -> None:
    from trails.errors import ConfigError
    from trails.evidence.witness import Witness

    first = Witness(tmp_path, NAME, Ed25519PrivateKey.generate(), [])
    try:
        with pytest.raises(ConfigError, match="another witness holds"):
            Witness(tmp_path, NAME, Ed25519PrivateKey.generate(), [])
    finally:
        first.close()
    Witness(tmp_path, NAME, Ed25519PrivateKey.generate(), []).close()  # free again


def test_a_state_that_cannot_be_kept_is_no_cosignature_and_no_new_state(tmp_path: Path) -> None:
    from trails.evidence.witness import LogKey, Witness

    log_key = Ed25519PrivateKey.generate()
    witness = Witness(tmp_path, NAME, Ed25519PrivateKey.generate(),
                      [LogKey(ORIGIN, ORIGIN, _raw(log_key))])  # fmt: skip
    try:
        (tmp_path / "state.json").mkdir()  # the state file cannot be replaced
        (tmp_path / "state.json" / "x").write_text("x")
        three = sign_checkpoint(ORIGIN, 3, mth(_leaves(3)), log_key)
        answer = witness.add_checkpoint(b"old 0\n\n" + three.encode())
        assert answer.status == 500 and "\u2014" not in answer.body.decode()
        assert witness.held(ORIGIN) is None  # not advanced in memory either
        (tmp_path / "state.json" / "x").unlink()
        (tmp_path / "state.json").rmdir()
        assert witness.add_checkpoint(b"old 0\n\n" + three.encode()).status == 200
        assert witness.held(ORIGIN) == (3, mth(_leaves(3)))
    finally:
        witness.close()
