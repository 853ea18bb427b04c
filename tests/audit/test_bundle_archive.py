"""A bundle verifier refuses malformed archives, never crashes, and never inflates anything.

The archive's layout is checked from its central directory before any entry is read:
only the names ``write_bundle`` gives, each once, stored (not deflated), not
encrypted, sizes that fit in the file. Every archive ``zipfile`` cannot read is an
``archive`` finding with exit 1.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import struct
import subprocess
import sys
import tracemalloc
import warnings
import zipfile
from pathlib import Path

import pytest

from trails.audit.bundle import verify_bundle, write_bundle
from trails.evidence.seal import install_sealer
from trails.kernel import Context
from trails.prov import Recorder
from trails.store import Store

_CENTRAL = 46  # fixed part of a central directory header
_LOCAL = 30  # fixed part of a local file header


@pytest.fixture
def bundle(store: Store, tmp_path: Path) -> Path:
    """A real bundle of one sealed session (about 30 entries)."""
    recorder = Recorder(store)
    install_sealer(recorder)
    with Context.open("did:local:alice", recorder=recorder) as ctx:
        session = ctx.session
    path = tmp_path / "evidence.zip"
    write_bundle(store, path, [session])
    assert verify_bundle(path).ok
    return path


def _verify_cli(path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("trails") or str(Path(sys.executable).with_name("trails"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    return subprocess.run(
        [exe, "verify", "--bundle", str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
    )


def _headers(raw: bytes) -> list[tuple[int, int]]:
    """(central header offset, local header offset) of every entry."""
    archive = zipfile.ZipFile(io.BytesIO(raw))
    central = archive.start_dir
    found = []
    for info in archive.infolist():
        found.append((central, info.header_offset))
        central += _CENTRAL + len(info.filename.encode()) + len(info.extra) + len(info.comment)
    return found


def test_a_deflated_manifest_is_refused_without_inflating_it(tmp_path: Path) -> None:
    """A zip bomb: a small archive whose manifest inflates to 64 MiB is refused unread."""
    inflated = 64 * 1024 * 1024
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        with z.open("manifest.json", "w", force_zip64=False) as entry:
            block = b" " * (1024 * 1024)
            for _ in range(inflated // len(block)):
                entry.write(block)
    assert bomb.stat().st_size < 1024 * 1024
    assert zipfile.ZipFile(bomb).getinfo("manifest.json").file_size == inflated

    tracemalloc.start()
    try:
        report = verify_bundle(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [f.kind for f in report.findings] == ["archive"]
    assert "is compressed (method 8)" in report.findings[0].detail
    assert peak < 8 * 1024 * 1024  # far below what inflating the manifest would take


def test_sizes_the_archive_cannot_hold_are_refused_unread(bundle: Path, tmp_path: Path) -> None:
    """A stored entry whose central directory claims 1 GiB is refused before it is read."""
    raw = bytearray(bundle.read_bytes())
    central, _local = _headers(bytes(raw))[0]  # the manifest's
    struct.pack_into("<II", raw, central + 20, 1 << 30, 1 << 30)  # compressed, uncompressed
    liar = tmp_path / "liar.zip"
    liar.write_bytes(bytes(raw))
    report = verify_bundle(liar)
    assert [f.kind for f in report.findings] == ["archive"]
    assert "claim 1073741824 bytes or more" in report.findings[0].detail


def _rezip(bundle: Path, target: Path, extra: dict[str, bytes]) -> None:
    with zipfile.ZipFile(bundle) as source, zipfile.ZipFile(target, "w") as out:
        for info in source.infolist():
            out.writestr(info, source.read(info))
        for name, data in extra.items():
            out.writestr(name, data)


def test_names_a_bundle_never_has_are_refused(bundle: Path, tmp_path: Path) -> None:
    for name, why in [
        ("../../etc/passwd", "is not a bundle file"),
        ("sessions/0001.trig", "appears twice"),
    ]:
        odd = tmp_path / "odd.zip"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it writes
            _rezip(bundle, odd, {name: b"x"})
        report = verify_bundle(odd)
        assert [f.kind for f in report.findings] == ["archive"], name
        assert why in report.findings[0].detail


def _flips(raw: bytes) -> list[tuple[int, int]]:
    """The flips of the campaign: (byte offset, xor mask).

    Every entry's flags and compression method in both of its headers, set to
    encrypted and to each method zipfile knows (and one it does not); then 600
    flips at positions and bits drawn with a fixed seed over the headers, and 150
    anywhere in the file.
    """
    flips = []
    for central, local in _headers(raw):
        for flags, method in ((central + 8, central + 10), (local + 6, local + 8)):
            flips.append((flags, 0x01))  # encrypted
            flips += [(method, m) for m in (8, 12, 14, 93, 99)]  # deflate .. AES
    rng = random.Random(31)
    structure = [
        offset
        for central, local in _headers(raw)
        for offset in (*range(central, central + _CENTRAL), *range(local, local + _LOCAL))
    ]
    structure += range(zipfile.ZipFile(io.BytesIO(raw)).start_dir, len(raw))  # + end record
    flips += [(rng.choice(structure), 1 << rng.randrange(8)) for _ in range(600)]
    flips += [(rng.randrange(len(raw)), 1 << rng.randrange(8)) for _ in range(150)]
    return flips


@pytest.mark.slow
def test_every_flipped_byte_is_a_finding_never_a_crash(bundle: Path, tmp_path: Path) -> None:
    raw = bundle.read_bytes()
    flips = _flips(raw)
    assert len(flips) > 900
    flipped = tmp_path / "flipped.zip"
    kinds: set[str] = set()
    for offset, mask in flips:
        data = bytearray(raw)
        data[offset] ^= mask
        flipped.write_bytes(bytes(data))
        report = verify_bundle(flipped)  # an exception here fails the test
        assert not report.ok, (offset, mask)  # the canonical layout makes every byte matter
        kinds.update(f.kind for f in report.findings)
    assert "archive" in kinds


@pytest.mark.parametrize("field", ["encrypted", "deflated", "unknown-method"])
def test_the_cli_reports_a_flipped_flag_as_an_archive_finding(
    bundle: Path, tmp_path: Path, field: str
) -> None:
    raw = bytearray(bundle.read_bytes())
    central, local = _headers(bytes(raw))[1]
    if field == "encrypted":
        raw[central + 8] ^= 0x01
        raw[local + 6] ^= 0x01
    else:
        method = 8 if field == "deflated" else 93
        struct.pack_into("<H", raw, central + 10, method)
        struct.pack_into("<H", raw, local + 8, method)
    flipped = tmp_path / "flipped.zip"
    flipped.write_bytes(bytes(raw))
    done = _verify_cli(flipped, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "ARCHIVE" in done.stdout and "FAILED: 1 finding(s)" in done.stdout


@pytest.mark.parametrize(
    ("manifest", "kind", "detail"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "manifest", "unreadable"),
        (b'{"format": "trails-bundle/1", "files": [], "sessions": []}', "manifest", "files"),
        (b"\xff\xfe", "manifest", "unreadable"),
    ],
)
def test_a_crafted_manifest_is_a_finding(
    bundle: Path, tmp_path: Path, manifest: bytes, kind: str, detail: str
) -> None:
    """Rebuilt in the canonical layout with valid checksums: the content is what is odd."""
    from trails.audit.bundle import _zip_bytes

    with zipfile.ZipFile(bundle) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    entries["manifest.json"] = manifest
    crafted = tmp_path / "crafted.zip"
    crafted.write_bytes(_zip_bytes(entries))
    report = verify_bundle(crafted)
    assert [f.kind for f in report.findings] == [kind]
    assert detail in report.findings[0].detail


def test_a_session_file_that_does_not_parse_is_altered(bundle: Path, tmp_path: Path) -> None:
    from trails.audit.bundle import _zip_bytes

    with zipfile.ZipFile(bundle) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    entries["sessions/0001.trig"] = b"<not trig"
    crafted = tmp_path / "crafted.zip"
    crafted.write_bytes(_zip_bytes(entries))
    report = verify_bundle(crafted)
    assert any(
        f.kind == "altered" and f.subject == "sessions/0001.trig" and "does not parse" in f.detail
        for f in report.findings
    ), report.findings
    assert not report.ok
