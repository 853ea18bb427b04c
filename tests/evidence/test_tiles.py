"""The log as static C2SP tiles: the spec's own examples, a reader written from the
tlog-tiles text (here, not trails' code) over what ``trails log publish`` writes from a
real store, ``trails log check`` as a monitor, and proofs from tiles equal to the store's.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from tests.evidence.c2sp_reference import open_note, parse_checkpoint_text, vkey_of
from tests.evidence.test_checkpoint_note import _keys
from tests.evidence.test_transparency import record_on_disk, trails

from trails.evidence.merkle import consistency_proof, from_leaves, inclusion_proof, root
from trails.evidence.note import Checkpoint, SignedNote, sign_line
from trails.evidence.tiles import level_hashes, tile_path, write_tiles
from trails.evidence.tiles_read import TileError, TileLog, folder_fetch


def test_tile_paths_and_widths_as_the_spec_gives_them() -> None:
    assert tile_path(0, 1234067) == "tile/0/x001/x234/067"
    assert tile_path(0, 5) == "tile/0/005"
    assert tile_path(1, 1000, 17) == "tile/1/x001/000.p/17"
    assert tile_path("entries", 0, 112) == "tile/entries/000.p/112"
    # "a tree of size 70,000: 273 full level 0 tiles, one partial of width 112, one full
    # level 1 tile, one partial of width 17, and one partial level 2 tile of width 1"
    leaves = [hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(70_000)]
    levels = level_hashes(leaves, 70_000)
    assert [len(h) for h in levels] == [70_000, 273, 1]
    assert (len(levels[0]) // 256, len(levels[0]) % 256) == (273, 112)
    assert (len(levels[1]) // 256, len(levels[1]) % 256) == (1, 17)
    # "a tree of size 256: a full level 0 tile and a partial level 1 tile of width 1"
    assert [len(h) for h in level_hashes(leaves, 256)] == [256, 1]


def _reference_read(folder: Path, vkey: str) -> tuple[int, list[bytes]]:
    """From the tlog-tiles text alone: the checkpoint, then each entry bundle (uint16
    big-endian length-prefixed entries) hashed as RFC 6962 leaves, against the level-0
    tiles, and the leaves' Merkle tree hash against the checkpoint's root."""
    _, size, root_hash, _ = parse_checkpoint_text(open_note((folder / "checkpoint").read_bytes(),
                                                            vkey))  # fmt: skip
    leaves: list[bytes] = []
    for n in range((size + 255) // 256):
        width = min(256, size - n * 256)
        digits = f"{n:03d}"
        name = "/".join(["x" + digits[i : i + 3] for i in range(0, len(digits) - 3, 3)] +
                        [digits[-3:]])  # fmt: skip
        suffix = "" if width == 256 else f".p/{width}"
        bundle = (folder / f"tile/entries/{name}{suffix}").read_bytes()
        tile = (folder / f"tile/0/{name}{suffix}").read_bytes()
        at, hashes = 0, []
        while at < len(bundle):
            length = int.from_bytes(bundle[at : at + 2], "big")
            entry = bundle[at + 2 : at + 2 + length]
            hashes.append(hashlib.sha256(b"\x00" + entry).digest())
            at += 2 + length
        assert b"".join(hashes) == tile and len(hashes) == width
        leaves.extend(hashes)

    def mth(d: list[bytes]) -> bytes:
        if len(d) == 1:
            return d[0]
        k = 1 << ((len(d) - 1).bit_length() - 1)
        return hashlib.sha256(b"\x01" + mth(d[:k]) + mth(d[k:])).digest()

    assert mth(leaves) == root_hash
    return size, leaves


def test_full_and_partial_tiles_read_back_and_prove(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    entries = [f"entry {i}\n".encode() for i in range(600)]
    leaves = [hashlib.sha256(b"\x00" + e).digest() for e in entries]
    tree = from_leaves(leaves)
    body = Checkpoint("example.org/log", 600, root(tree, 600)).text()
    note = str(SignedNote(body, (sign_line(body, "example.org/log", key),)))
    done = write_tiles(tmp_path, entries, note)
    assert done.tiles_written == 2 + 1 + 1 + 3  # level 0: 2 full, 1 partial; level 1; bundles
    assert (tmp_path / "tile/0/001").stat().st_size == 8192
    assert (tmp_path / "tile/1/000.p/2").stat().st_size == 64
    size, _ = _reference_read(tmp_path, vkey_of("example.org/log", public))
    assert size == 600
    log = TileLog(folder_fetch(tmp_path))
    report = log.check(public)
    assert report.ok and report.entries == 600, report.problems
    for index in (0, 255, 256, 513, 599):
        assert log.inclusion(index, 600) == inclusion_proof(tree, index, 600)
    assert log.consistency(300, 600) == consistency_proof(tree, 300, 600)
    assert write_tiles(tmp_path, entries, note).tiles_kept == 7  # immutable: kept
    # a flipped byte in an entry bundle, a tile of the level above, a forged signature
    bundle = tmp_path / "tile/entries/001"
    bundle.write_bytes(bundle.read_bytes()[:-1] + b"X")
    (tmp_path / "tile/1/000.p/2").write_bytes(bytes(64))
    problems = TileLog(folder_fetch(tmp_path)).check(public).problems
    assert any("tile/entries/001 does not hash" in p for p in problems), problems
    assert any("tile 1/0 is not the tiles below it" in p for p in problems), problems
    other = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    assert "not signed" in TileLog(folder_fetch(tmp_path)).check(other).problems[0]
    with pytest.raises(TileError, match="outside"):
        folder_fetch(tmp_path)("../x")


@pytest.mark.usefixtures("store")
def test_publish_a_real_log_and_check_it_as_a_monitor(tmp_path: Path) -> None:
    _, public = _keys(tmp_path, origin="example.org/trails/audit")
    sessions = record_on_disk(tmp_path, 3)
    done = trails(tmp_path, "log", "publish", "site")
    assert done.returncode == 2 and "no transparency log yet" in done.stderr
    assert trails(tmp_path, "verify").returncode == 0
    done = trails(tmp_path, "log", "publish", "site")
    assert done.returncode == 0 and "published 3 leaves" in done.stdout, done.stderr
    sessions += record_on_disk(tmp_path, 2)
    assert trails(tmp_path, "verify").returncode == 0
    done = trails(tmp_path, "log", "publish", "site")
    assert done.returncode == 0 and "published 5 leaves" in done.stdout, done.stderr
    size, _ = _reference_read(tmp_path / "site", vkey_of("example.org/trails/audit", public))
    assert size == 5
    done = trails(tmp_path, "log", "check", "site", "--key", "public.pem", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["ok"] and report["entries"] == 5, done.stdout
    # the store's proof of a session is the one the tiles give
    assert trails(tmp_path, "prove", sessions[1], "--out", "proof.json").returncode == 0
    proof = json.loads((tmp_path / "proof.json").read_text())
    log = TileLog(folder_fetch(tmp_path / "site"))
    for entry in proof["seals"]:
        assert [p.hex() for p in log.inclusion(entry["index"], 5)] == entry["path"]
    # an entry rewritten in the published copy: the monitor says so
    bundle = tmp_path / "site" / "tile/entries/000.p/5"
    bundle.write_bytes(bundle.read_bytes().replace(b"seal-hash=", b"seal-hash=0", 1)[:-1])
    done = trails(tmp_path, "log", "check", "site")
    assert done.returncode == 1 and "TILES" in done.stdout, done.stdout
    # bad input: one line, exit 2
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "checkpoint").write_text("not a checkpoint\n")
    for args in (("check", "bad"), ("check", "missing"), ("check", "http://127.0.0.1:9/log")):
        done = trails(tmp_path, "log", *args)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.usefixtures("store")
def test_served_read_only_at_log_and_checked_over_http(tmp_path: Path) -> None:
    import threading
    import time
    import urllib.error
    import urllib.request

    import uvicorn
    from starlette.applications import Starlette

    from trails.server.tiles import tiles_route

    _keys(tmp_path, origin="example.org/trails/audit")
    record_on_disk(tmp_path, 2)
    assert trails(tmp_path, "verify").returncode == 0
    assert trails(tmp_path, "log", "publish", "site").returncode == 0
    (tmp_path / "secret.txt").write_text("not for the web")
    app = Starlette(routes=[tiles_route(tmp_path / "site")])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}/log"
        with urllib.request.urlopen(f"{url}/checkpoint", timeout=5) as answer:
            assert answer.headers["Content-Type"] == "text/plain; charset=utf-8"
            assert answer.read() == (tmp_path / "site" / "checkpoint").read_bytes()
        for bad in ("/../secret.txt", "/tile/0/..%2F..%2F..%2Fsecret.txt", "/secret.txt",
                    "/tile/64/000", "/tile/0/000.p/256"):  # fmt: skip
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(url + bad, timeout=5)
            assert refused.value.code == 404, bad
        done = trails(tmp_path, "log", "check", url, "--key", "public.pem")
        assert done.returncode == 0 and "signed by the key given" in done.stdout, done.stdout
    finally:
        server.should_exit = True
        thread.join(timeout=10)
