"""Evidence bundles carry the transparency log's tree head and their seals' inclusion proofs.

A store is recorded for real (the sealer installed), a checkpoint extends its log, the
bundle is written with ``write_bundle`` and checked with the real ``trails verify --bundle``
in a subprocess without the store. A bundle whose proofs were edited by a careful forger
(manifest hashes and canonical zip recomputed) does not verify.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from tests.audit.test_bundle_content import rewrite, trails_cli
from tests.evidence.test_ledger import signing_config
from tests.evidence.test_transparency import checkpoint, record, sealed

from trails.audit.bundle import verify_bundle, write_bundle
from trails.store import Store


def bundled(store: Store, tmp_path: Path, *, key: Ed25519PrivateKey | None = None) -> Path:
    recorder = sealed(store)
    sessions = record(recorder, 5)
    checkpoint(recorder, key)
    path = tmp_path / "bundle.zip"
    write_bundle(store, path, sessions[1:3])
    return path


def test_a_bundle_carries_the_head_and_proves_its_seals_are_in_the_log(
    store: Store, tmp_path: Path
) -> None:
    path = bundled(store, tmp_path)
    proofs = json.loads(zipfile.ZipFile(path).read("log/proofs.json"))
    assert proofs["format"] == "trails-log-proofs/1" and proofs["proofs"]
    report = verify_bundle(path)
    assert report.ok, report.findings
    assert any("are leaves of the transparency log" in line for line in report.proves)
    done = trails_cli(tmp_path, "verify", "--bundle", str(path))
    assert done.returncode == 0 and "leaves of the transparency log" in done.stdout, done.stdout


def test_a_bundle_whose_proof_was_edited_does_not_verify(store: Store, tmp_path: Path) -> None:
    path = bundled(store, tmp_path)
    proofs = json.loads(zipfile.ZipFile(path).read("log/proofs.json"))
    sibling = proofs["proofs"][0]["path"][0]
    flipped = ("1" if sibling[0] == "0" else "0") + sibling[1:]
    edited = tmp_path / "edited.zip"
    rewrite(path, edited, "log/proofs.json", sibling.encode(), flipped.encode())
    report = verify_bundle(edited)
    assert [f.kind for f in report.findings] == ["proof"], report.findings
    assert report.findings[0].subject == proofs["proofs"][0]["seal"]
    done = trails_cli(tmp_path, "verify", "--bundle", str(edited))
    assert done.returncode == 1 and "PROOF" in done.stdout, done.stdout

    root = proofs["head"]["root"]
    other = tmp_path / "root.zip"
    rewrite(path, other, "log/proofs.json", root.encode(), ("0" * 64).encode())
    assert "head" in {f.kind for f in verify_bundle(other).findings}


def test_a_bundle_head_is_checked_against_the_trusted_key(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = signing_config(tmp_path, monkeypatch)  # seals and tree heads signed with it
    path = bundled(store, tmp_path, key=key)
    report = verify_bundle(path, public_key=key.public_key())
    assert report.ok, report.findings
    assert "the tree head is signed by the trusted key" in report.proves
    stranger = Ed25519PrivateKey.generate().public_key()
    assert "signature" in {f.kind for f in verify_bundle(path, public_key=stranger).findings}
