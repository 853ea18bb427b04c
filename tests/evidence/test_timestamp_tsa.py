"""RFC 3161 with any conforming TSA: real ``openssl ts -reply`` servers on loopback
(``tests.evidence.loopback_tsa``), with and without their certificates in the response,
with and without an intermediate CA; ``--tsa-cert`` given the root, the TSA's certificate
or its chain; several TSAs configured; an unstamped head under ``--strict``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from tests.evidence.loopback_tsa import LoopbackTSA, loopback_tsa
from tests.evidence.test_transparency import LOG, checkpoint, record, record_on_disk, sealed, trails

from trails.evidence.proofs import TreeHead
from trails.evidence.timestamp import (
    der_ordered,
    load_certificates,
    request_stamp,
    timestamp_checker,
)
from trails.evidence.transparency import read_head
from trails.store import Store

KINDS = [
    pytest.param(False, False, id="leaf-only"),
    pytest.param(True, False, id="certs"),
    pytest.param(False, True, id="intermediate"),
    pytest.param(True, True, id="intermediate-certs"),
]


def _head(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> TreeHead:
    recorder = sealed(store)
    record(recorder, 2)
    (tmp_path / "trails.toml").write_text(f'[audit]\ntimestamp_url = "{url}"\n')
    monkeypatch.chdir(tmp_path)
    checkpoint(recorder)
    head = read_head(store, LOG)
    assert head is not None
    return head


def _pem(tmp_path: Path, name: str, *files: Path | None) -> list[object]:
    path = tmp_path / name
    path.write_bytes(b"".join(f.read_bytes() for f in files if f is not None))
    return load_certificates(path)


@pytest.mark.parametrize(("certs", "intermediate"), KINDS)
def test_each_kind_of_openssl_tsa_stamps_and_verifies(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    certs: bool,
    intermediate: bool,
) -> None:
    with loopback_tsa(certs=certs, intermediate=intermediate) as tsa:
        head = _head(store, tmp_path, monkeypatch, tsa.url)
        files = _files(tsa, tmp_path)
    assert head.timestamp and len(tsa.requests) == 1, "the head was not stamped"
    raw = base64.b64decode(head.timestamp)
    if certs:  # what OpenSSL sent is kept as it was: BER order, put in DER order to parse
        assert der_ordered(raw) != raw
    assert timestamp_checker()(head) is None  # the imprint alone, no certificate
    # the chain (the TSA's certificate, the intermediate) with the root: always enough
    assert timestamp_checker(files["chain+root"])(head) is None
    # the root alone: enough when the token carries the intermediate, or there is none
    root_only = timestamp_checker(files["root"])(head)
    if certs or not intermediate:
        assert root_only is None, root_only
    else:
        assert root_only is not None and "trails test intermediate" in root_only
    # the TSA's own certificate alone: no trust anchor; the problem names the one needed
    leaf = timestamp_checker(files["tsa"])(head)
    assert leaf is not None and "no trust anchor" in leaf
    needed = "trails test root" if certs or not intermediate else "trails test intermediate"
    assert needed in leaf, leaf
    assert timestamp_checker(files["tsa+root"])(head) is None or (intermediate and not certs)


def _files(tsa: LoopbackTSA, tmp_path: Path) -> dict[str, list[object]]:
    return {
        "root": _pem(tmp_path, "root.pem", tsa.root_pem),
        "tsa": _pem(tmp_path, "tsa.pem", tsa.tsa_pem),
        "tsa+root": _pem(tmp_path, "tsa-root.pem", tsa.tsa_pem, tsa.root_pem),
        "chain+root": _pem(tmp_path, "chain-root.pem", tsa.chain_pem, tsa.root_pem),
    }


def test_request_stamp_accepts_a_ber_ordered_certificate_set() -> None:
    with loopback_tsa(certs=True, intermediate=True) as tsa:
        token = request_stamp(tsa.url, b"a head message")
    assert der_ordered(token) != token
    assert der_ordered(der_ordered(token)) == der_ordered(token)
    assert der_ordered(b"\x30\x80garbage") == b"\x30\x80garbage"  # left for the parser


@pytest.mark.usefixtures("store")
def test_the_command_line_names_the_time_stamp_and_the_anchor(tmp_path: Path) -> None:
    record_on_disk(tmp_path, 2)
    with loopback_tsa(certs=True, intermediate=True) as tsa:
        (tmp_path / "trails.toml").write_text(
            f'[audit]\ntimestamp_url = ["http://127.0.0.1:9/", "{tsa.url}"]\n'
        )
        done = trails(tmp_path, "verify")
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(tsa.requests) == 1  # the first TSA refused the connection: the next stamped
        (tmp_path / "tsa.pem").write_bytes(tsa.tsa_pem.read_bytes())  # type: ignore[union-attr]
        (tmp_path / "root.pem").write_bytes(tsa.root_pem.read_bytes())
        chain = tsa.chain_pem.read_bytes() + tsa.root_pem.read_bytes()  # type: ignore[union-attr]
        (tmp_path / "chain.pem").write_bytes(chain)
    assert trails(tmp_path, "head", "--out", "head.json").returncode == 0
    assert json.loads((tmp_path / "head.json").read_text())["timestamp"]
    for good in ("root.pem", "chain.pem"):
        done = trails(tmp_path, "verify", "--since-head", "head.json", "--tsa-cert", good)
        assert done.returncode == 0, done.stdout
        assert "trusted time-stamping authority" in done.stdout
    done = trails(tmp_path, "verify", "--since-head", "head.json", "--tsa-cert", "tsa.pem")
    assert done.returncode == 1, done.stdout
    assert "the time-stamp of the tree head head.json does not verify" in done.stdout
    assert "does not extend" not in done.stdout
    assert "CN=trails test root: add that root certificate" in done.stdout, done.stdout


@pytest.mark.usefixtures("store")
def test_an_unstamped_head_fails_only_strict_verification(tmp_path: Path) -> None:
    record_on_disk(tmp_path, 1)
    (tmp_path / "trails.toml").write_text('[audit]\ntimestamp_url = "http://127.0.0.1:9/"\n')
    done = trails(tmp_path, "verify")
    assert done.returncode == 0 and "not time-stamped" in done.stderr, done.stderr
    done = trails(tmp_path, "verify", "--strict", "--no-checkpoint")
    assert done.returncode == 1, done.stdout
    assert "UNSTAMPED tree head 1@" in done.stdout
    assert "1 tree head(s) not time-stamped" in done.stdout
    (tmp_path / "trails.toml").write_text("")
    assert trails(tmp_path, "verify", "--strict", "--no-checkpoint").returncode == 0
    (tmp_path / "trails.toml").write_text('[audit]\ntimestamp_url = ["ftp://x"]\n')
    done = trails(tmp_path, "verify", "--strict")
    assert done.returncode == 2 and "timestamp_url" in done.stderr
