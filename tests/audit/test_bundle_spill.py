"""An evidence bundle's files go through a spill file and are zipped from it, the same bytes.

``write_bundle`` keeps each file (a session's TriG, the segment, an answer) in a temporary
file as it is made instead of in a dictionary of every file, and copies them into the
archive in pieces; the archive must be the very bytes the canonical writer
(``trails.audit.bundle._zip_bytes``, what ``verify_bundle`` rebuilds to compare) makes of
the same files. Memory is measured by ``benchmarks/bench_export_scale.py``, not here.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

import trails.audit.archive as archive
from trails.audit.archive import Spill
from trails.audit.bundle import _zip_bytes, verify_bundle, write_bundle
from trails.evidence.seal import install_sealer
from trails.kernel import Context
from trails.prov import Recorder
from trails.store import open_store


def test_the_spilled_archive_is_the_canonical_archive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "_PART", 7)  # every file copied in many pieces
    files = {
        "sessions/0002.trig": b"<urn:x:a> <urn:x:p> <urn:x:b> .\n" * 50,
        "answers/q.csv": b"a,b\r\n1,2\r\n",
        "keys/0001.pem": b"",
        "sessions/0001.trig": bytes(range(256)),
    }
    manifest = b'{"format": "x"}\n'
    spill = Spill()
    try:
        for name, data in files.items():
            spill.add(name, data)
        with pytest.raises(ValueError, match="already"):
            spill.add("answers/q.csv", b"again")
        assert spill.listing() == {
            name: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            for name, data in sorted(files.items())
        }
        out = io.BytesIO()
        written = spill.write_zip(out, ("manifest.json", manifest))
    finally:
        spill.close()
    expected = _zip_bytes({**files, "manifest.json": manifest})
    assert out.getvalue() == expected and written == len(expected)
    assert zipfile.ZipFile(io.BytesIO(expected)).namelist()[0] == "manifest.json"


def test_a_file_written_into_the_spill_is_the_file_added_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(archive, "_PART", 64)  # a stream reads 64 bytes at a time
    data = bytes(range(256)) * 40
    whole, written = Spill(), Spill()
    try:
        whole.add("answers/a.csv", b"x")
        whole.add("sessions/0001.trig", data)
        written.add("answers/a.csv", b"x")
        with written.writer("sessions/0001.trig") as out:
            for at in range(0, len(data), 333):  # written in pieces, as an exporter writes
                out.write(data[at : at + 333])
        stream = written.open("sessions/0001.trig")
        first = stream.read(100)
        written.add("keys/0001.pem", b"k")  # the next file goes after it, mid-read or not
        assert first + stream.read() == data
        assert written.read("sessions/0001.trig") == data
        assert written.read("keys/0001.pem") == b"k"
        assert {n: v for n, v in written.listing().items() if n != "keys/0001.pem"} == (
            whole.listing()
        )
        assert written.listing()["sessions/0001.trig"]["sha256"] == hashlib.sha256(data).hexdigest()
        with pytest.raises(ValueError, match="already"), written.writer("answers/a.csv"):
            pass
    finally:
        whole.close()
        written.close()


def test_a_bundle_of_several_sessions_goes_through_the_spill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store("memory:")
    recorder = Recorder(store)
    install_sealer(recorder)
    sessions = []
    for who in ("alice", "bob", "carol"):
        with Context.open(f"did:local:{who}", recorder=recorder) as ctx:
            sessions.append(ctx.session)
    spilled: list[str] = []
    add = Spill.add

    def counted(self: Spill, name: str, data: bytes) -> None:
        spilled.append(name)
        add(self, name, data)

    add_parts = Spill.add_parts

    def counted_parts(self: Spill, name: str, parts: Iterable[bytes]) -> None:
        spilled.append(name)  # the ledger segment, sorted outside memory
        add_parts(self, name, parts)

    writer = Spill.writer

    def counted_writer(self: Spill, name: str) -> Any:
        spilled.append(name)  # a session's TriG, on disk as the exporter writes it
        return writer(self, name)

    monkeypatch.setattr(Spill, "add", counted)
    monkeypatch.setattr(Spill, "add_parts", counted_parts)
    monkeypatch.setattr(Spill, "writer", counted_writer)
    path = tmp_path / "evidence.zip"
    stats = write_bundle(store, path, sessions)
    raw = path.read_bytes()
    entries = {i.filename: zipfile.ZipFile(path).read(i) for i in zipfile.ZipFile(path).infolist()}
    assert sorted(spilled) == sorted(n for n in entries if n != "manifest.json")
    assert {f"sessions/000{i}.trig" for i in (1, 2, 3)} <= set(spilled)
    assert _zip_bytes(entries) == raw and stats.bytes == len(raw)
    assert verify_bundle(path).ok
