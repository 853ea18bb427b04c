"""Evidence bundles carry content, and content is evidence: the bundle verifier checks every
bundled value against the digest its bundled, sealed graph keeps.

Stores are recorded for real (``invoke`` with the sealer installed), bundled with the real
``trails export --bundle`` and checked with the real ``trails verify --bundle`` in a
subprocess without the store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from tests.evidence.test_content import ALICE, changed, record, value_of

from trails.audit import bundle as bundle_module
from trails.audit.bundle import verify_bundle, write_bundle
from trails.compliance.erasure import erase
from trails.evidence.seal import install_sealer
from trails.prov import Recorder
from trails.store import IRI, Store, open_store, set_default_store


def trails_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).with_name("trails"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    env["TRAILS_STORE"] = str(cwd / "there-is-no-store-here")
    return subprocess.run(
        [exe, *args], capture_output=True, text=True, env=env, cwd=cwd, check=False
    )


def rewrite(
    path: Path, target: Path, name: str, old: bytes, new: bytes, *, careful: bool = True
) -> None:
    """Edit one file of a bundle. A careful forger recomputes the pack's answers from the
    edited graphs, every file's hash in the manifest and the canonical zip, so only the
    seals can tell; a careless one rebuilds the zip only."""
    archive = zipfile.ZipFile(path)
    entries = {n: archive.read(n) for n in archive.namelist()}
    assert old in entries[name]
    entries[name] = entries[name].replace(old, new, 1)
    if careful:
        manifest = json.loads(entries["manifest.json"])
        stems = {Path(s["file"]).stem: IRI(s["graph"]) for s in manifest["sessions"]}
        with bundle_module._scratch(entries.items()) as scratch:
            answers = bundle_module._answers(scratch, stems)
        entries.update({n: data for n, data in answers.items() if n in entries})
        for n, data in entries.items():
            if n != "manifest.json":
                manifest["files"][n] = {"sha256": bundle_module._sha(data), "bytes": len(data)}
        entries["manifest.json"] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    target.write_bytes(bundle_module._zip_bytes(entries))


URGENT = b'priority\\":\\"urgent'  # the input's value as TriG writes it


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_a_bundle_exported_from_an_altered_store_does_not_verify(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = open_store(path)
    try:
        recorded = record(store)
        changed(store, recorded)  # "urgent" -> "routine" in the content graph
    finally:
        set_default_store(None)
        store.close()
    bundle = tmp_path / "evidence.zip"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    exe = str(Path(sys.executable).with_name("trails"))
    exported = subprocess.run(
        [exe, "--store", str(path), "export", "--session", recorded.session, "--bundle",
         str(bundle)],
        capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stdout + exported.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = trails_cli(elsewhere, "verify", "--bundle", str(bundle))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"CONTENT-ALTERED {recorded.input} in {recorded.session}: " in done.stdout
    report = json.loads(trails_cli(elsewhere, "verify", "--bundle", str(bundle), "--json").stdout)
    assert [(f["kind"], f["subject"], f["session"]) for f in report["findings"]] == [
        ("content-altered", recorded.input, recorded.session)
    ]


@pytest.mark.allow_nonconforming  # tampered on purpose
@pytest.mark.parametrize("careful", [False, True])
def test_a_bundle_whose_content_was_edited_after_export_does_not_verify(
    store: Store, tmp_path: Path, careful: bool
) -> None:
    recorded = record(store)
    path = tmp_path / "b.zip"
    write_bundle(store, path, [recorded.session])
    intact = verify_bundle(path)
    assert intact.ok, intact.findings
    assert intact.content.values == 4  # triage's and memory.learn's input and output
    assert any("4 bundled content value(s)" in line for line in intact.proves)

    forged = tmp_path / "forged.zip"
    routine = URGENT.replace(b"urgent", b"routine")
    rewrite(path, forged, "sessions/0001.trig", URGENT, routine, careful=careful)
    report = verify_bundle(forged)
    assert not report.ok
    found = [(f.kind, f.subject, f.session) for f in report.findings]
    assert ("content-altered", recorded.input, recorded.session) in found
    if careful:  # nothing else tells
        assert found == [("content-altered", recorded.input, recorded.session)]
    else:  # the manifest and the answers tell too
        assert {"altered", "answers"} <= {kind for kind, _, _ in found}
    done = trails_cli(tmp_path, "verify", "--bundle", str(forged))
    assert done.returncode == 1 and f"CONTENT-ALTERED {recorded.input}" in done.stdout


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_content_smuggled_into_a_session_file_is_foreign(store: Store, tmp_path: Path) -> None:
    recorded = record(store)
    path = tmp_path / "b.zip"
    write_bundle(store, path, [recorded.session])
    planted = (
        b"<urn:trails:session:ghost:content> {\n"
        b'\t<urn:trails:entity:ghost> <http://www.w3.org/ns/prov#value> "approved" .\n}\n'
    )
    archive = zipfile.ZipFile(path)
    text = archive.read("sessions/0001.trig")
    rewrite(path, tmp_path / "smuggled.zip", "sessions/0001.trig", text, text + planted)
    report = verify_bundle(tmp_path / "smuggled.zip")
    assert [(f.kind, f.subject, f.session) for f in report.findings] == [
        ("content-foreign", "urn:trails:entity:ghost", "urn:trails:session:ghost")
    ]


def test_a_bundle_of_erased_content_carries_its_receipt_and_verifies(
    store: Store, tmp_path: Path
) -> None:
    recorded = record(store)
    recorder = Recorder(store)
    install_sealer(recorder)
    receipt = erase(recorder, session=recorded.session, reason="GDPR art. 17", by=ALICE)
    path = tmp_path / "b.zip"
    write_bundle(store, path, [recorded.session])
    manifest = json.loads(zipfile.ZipFile(path).read("manifest.json"))
    assert [s["graph"] for s in manifest["sessions"]] == sorted(
        [recorded.session, receipt.graph]
    )  # the sealed receipt goes with the session it names
    report = verify_bundle(path)
    assert report.ok, report.findings
    assert report.content.accounted == {(recorded.session, receipt.erasure): 4}
    assert any("4 more were removed on record" in line for line in report.proves)
    done = trails_cli(tmp_path, "verify", "--bundle", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_a_bundle_without_the_receipt_misses_the_erased_content(
    store: Store, tmp_path: Path
) -> None:
    """Content deleted in the store before export, and no receipt: missing in the bundle."""
    recorded = record(store)
    store.write([], remove=[value_of(store, recorded.session, recorded.input)])
    path = tmp_path / "b.zip"
    write_bundle(store, path, [IRI(recorded.session)])
    report = verify_bundle(path)
    assert [(f.kind, f.subject) for f in report.findings] == [("content-missing", recorded.input)]
