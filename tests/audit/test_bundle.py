"""Offline evidence bundles: written from a store, verified in a fresh process with no store."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from tests.known_store import ALICE, Fixture

from trails.audit.bundle import verify_bundle, write_bundle
from trails.cli import main
from trails.evidence.seal import install_sealer
from trails.kernel import Context
from trails.prov import Recorder
from trails.store import IRI, Store


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _verify_in_fresh_process(
    bundle: Path, cwd: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("trails") or str(Path(sys.executable).with_name("trails"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    env["TRAILS_STORE"] = str(cwd / "there-is-no-store-here")
    return subprocess.run(
        [exe, "verify", "--bundle", str(bundle), *extra],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
    )


def test_a_bundle_verifies_in_a_fresh_process_without_the_store(
    fx: Fixture, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = tmp_path / "evidence.zip"
    status, _, err = run(
        capsys,
        "export",
        "--session",
        fx.sessions["A"],
        "--session",
        fx.sessions["C"],
        "--bundle",
        str(bundle),
    )
    assert status == 0, err
    assert "bundled 2 graph(s)" in err

    names = zipfile.ZipFile(bundle).namelist()
    assert names[0] == "manifest.json"
    assert {"sessions/0001.trig", "sessions/0002.trig", "ledger/segment.nq"} <= set(names)
    manifest = json.loads(zipfile.ZipFile(bundle).read("manifest.json"))
    assert [s["graph"] for s in manifest["sessions"]] == sorted(
        [fx.sessions["A"], fx.sessions["C"]]
    )
    assert all(s["seal"] and len(s["graph_hash"]) == 64 for s in manifest["sessions"])
    assert set(manifest["files"]) == set(names) - {"manifest.json"}
    # the pack's answers over the bundled graphs, as CSV
    rows = list(
        csv.DictReader(
            io.StringIO(zipfile.ZipFile(bundle).read("answers/cost-by-principal.csv").decode())
        )
    )
    assert [(r["principal"], float(r["costUSD"])) for r in rows] == [(ALICE, pytest.approx(0.105))]

    other = tmp_path / "elsewhere"
    other.mkdir()
    copy = other / "copy.zip"
    shutil.copy(bundle, copy)
    done = _verify_in_fresh_process(copy, other)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK. The bundle" in done.stdout
    assert "2 bundled graph(s) are, quad for quad, the graphs their seals fixed" in done.stdout
    # it says what it does not prove: sessions outside the bundle (B sits in the chain segment)
    assert "It does not prove:" in done.stdout
    assert fx.sessions["B"] in done.stdout and "not in the bundle" in done.stdout
    assert "no trusted key was given" in done.stdout
    assert not (other / "there-is-no-store-here").exists()


@pytest.mark.parametrize("where", ["graph", "manifest", "segment", "answers", "zip-header"])
def test_one_changed_byte_fails(
    fx: Fixture, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    bundle = tmp_path / "evidence.zip"
    assert run(capsys, "export", "--all", "--domain", "health", "--bundle", str(bundle))[0] == 0
    intact = verify_bundle(bundle)
    assert intact.ok, intact.findings
    assert intact.graphs_checked == 3 and intact.unsealed  # A, B, C sealed; D and memory not
    assert fx.sessions["D"] in intact.unsealed
    raw = bytearray(bundle.read_bytes())
    if where == "zip-header":
        offset = 10  # the first entry's modification time in its local header
    else:
        name = {
            "graph": "sessions/0001.trig",
            "manifest": "manifest.json",
            "segment": "ledger/segment.nq",
            "answers": "answers/sessions.csv",
        }[where]
        info = zipfile.ZipFile(bundle).getinfo(name)
        data = zipfile.ZipFile(bundle).read(name)
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        assert raw[start : start + len(data)] == data
        offset = start + len(data) // 2
    raw[offset] ^= 0x01
    bad = tmp_path / "bad.zip"
    bad.write_bytes(bytes(raw))
    report = verify_bundle(bad)
    assert not report.ok
    done = _verify_in_fresh_process(bad, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED" in done.stdout


def test_an_edited_graph_with_a_consistent_manifest_is_altered(fx: Fixture, tmp_path: Path) -> None:
    """Someone rewrites a graph and the manifest's hashes: the seal still catches it."""
    from trails.audit import bundle as bundle_module

    path = tmp_path / "b.zip"
    write_bundle(fx.store, path, [IRI(fx.sessions["A"])])
    archive = zipfile.ZipFile(path)
    entries = {n: archive.read(n) for n in archive.namelist()}
    entries["sessions/0001.trig"] = entries["sessions/0001.trig"].replace(b"0.01", b"0.00", 1)
    manifest = json.loads(entries["manifest.json"])
    manifest["files"]["sessions/0001.trig"]["sha256"] = bundle_module._sha(
        entries["sessions/0001.trig"]
    )
    entries["manifest.json"] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    forged = tmp_path / "forged.zip"
    forged.write_bytes(bundle_module._zip_bytes(entries))
    report = verify_bundle(forged)
    kinds = {(f.kind, f.subject) for f in report.findings}
    assert ("altered", fx.sessions["A"]) in kinds


def test_answers_the_same_bytes_are_not_parsed_and_reordered_rows_still_agree(
    fx: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer whose bytes are the recomputed answer's is not parsed into rows (a whole
    store's answers parsed twice over held every row as Python tuples); one whose rows are
    the same in another order (written before every query ordered its rows totally) is
    still the same answer, and one with a row changed is a finding."""
    from trails.audit import bundle as bundle_module

    path = tmp_path / "b.zip"
    write_bundle(fx.store, path, [IRI(fx.sessions[k]) for k in ("A", "B", "C")])
    parsed: list[bytes] = []
    rows_of = bundle_module._rows_of

    def counting(data: bytes) -> Any:
        parsed.append(data)
        return rows_of(data)

    monkeypatch.setattr(bundle_module, "_rows_of", counting)
    intact = verify_bundle(path)
    assert intact.ok and intact.answers_checked > 0 and parsed == []

    def rebundled(name: str, edit: Callable[[bytes], bytes]) -> Path:
        archive = zipfile.ZipFile(path)
        entries = {n: archive.read(n) for n in archive.namelist()}
        entries[name] = edit(entries[name])
        manifest = json.loads(entries["manifest.json"])
        manifest["files"][name] = {
            "sha256": bundle_module._sha(entries[name]),
            "bytes": len(entries[name]),
        }
        entries["manifest.json"] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
        out = tmp_path / f"edited-{len(list(tmp_path.iterdir()))}.zip"
        out.write_bytes(bundle_module._zip_bytes(entries))
        return out

    def reversed_rows(data: bytes) -> bytes:
        head, *rows = data.decode().splitlines(keepends=True)
        assert len(rows) >= 2 and rows != rows[::-1]
        return (head + "".join(reversed(rows))).encode()

    reordered = verify_bundle(rebundled("answers/sessions.csv", reversed_rows))
    assert reordered.ok, reordered.findings
    assert len(parsed) == 2  # the reordered answer and the recomputed one, nothing else
    changed = verify_bundle(
        rebundled("answers/sessions.csv", lambda data: data.replace(b"ok", b"error", 1))
    )
    assert [(f.kind, f.subject) for f in changed.findings] == [("answers", "answers/sessions.csv")]


def test_trusted_key_and_expected_head(store: Store, tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    pem = tmp_path / "signing.pem"
    pem.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    public = tmp_path / "public.pem"
    public.write_bytes(
        key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    )
    (tmp_path / "trails.toml").write_text(f'[audit]\nsigning_key = "{pem}"\n')
    recorder = Recorder(store)
    install_sealer(recorder)
    sessions = []
    for _ in range(3):
        with Context.open("did:local:dana", recorder=recorder) as ctx:
            sessions.append(ctx.session)
    path = tmp_path / "b.zip"
    stats = write_bundle(store, path, [sessions[1]])
    assert (stats.graphs, stats.seals) == (1, 1)
    manifest = json.loads(zipfile.ZipFile(path).read("manifest.json"))
    head = manifest["chains"][0]["head"]
    report = verify_bundle(path, public_key=key.public_key(), expect_heads=[head])
    assert report.ok, report.findings
    assert report.signed == 1 and any("trusted key" in p for p in report.proves)
    # the chain before the bundled seal is outside it, and said so
    assert any("before the segment" in n for n in report.does_not_prove)
    stranger = Ed25519PrivateKey.generate().public_key()
    report = verify_bundle(path, public_key=stranger, expect_heads=["0" * 63 + "1"])
    assert {f.kind for f in report.findings} == {"signature", "chain"}


def test_bundle_usage_errors(
    fx: Fixture, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(
        capsys, "export", "--session", fx.sessions["A"], "--bundle", "x.zip", "--out", "y"
    )
    assert status == 2 and "without --out" in err
    status, _, err = run(capsys, "verify", "--bundle", str(tmp_path / "none.zip"))
    assert status == 2 and "cannot read the bundle" in err
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    status, out, _ = run(capsys, "verify", "--bundle", str(tmp_path / "junk.zip"), "--json")
    assert status == 1 and json.loads(out)["findings"][0]["kind"] == "archive"
