"""Compaction never loses the store: killed at each step, the next open finds it whole.

A compaction runs in a child process that SIGKILLs itself when it reaches a chosen
step (``trails.store._layout.on_step``); the next open, in this process, must find
every quad that was there before, no empty store in place of the real one, no copy
left behind, and (once the compaction had committed) none of the removed text in
any file of the store. The same holds for a store of the earlier layout (RocksDB's
files directly in the folder), which its first compaction moves into the layout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyoxigraph as ox
import pytest

from trails.errors import StoreError, StoreLockedError
from trails.store import _layout
from trails.store.location import is_store
from trails.store.oxigraph import OxigraphStore

SECRET = "erased-text-" + "personal data " * 8  # long: Oxigraph keeps it in its string table
STEPS = ("copying", "copied", "renamed", "switched", "deleting")
COMMITTED = {"renamed", "switched", "deleting"}  # from here a crash finishes the compaction
ROCKSDB_MARK = "CURRENT"  # a RocksDB directory's first file


def _quads() -> list[ox.Quad]:
    return [
        ox.Quad(
            ox.NamedNode(f"urn:s{i}"),
            ox.NamedNode("urn:p"),
            ox.Literal(f"value {i}"),
            ox.NamedNode(f"urn:g{i % 7}"),
        )
        for i in range(300)
    ]


SECRET_QUAD = ox.Quad(
    ox.NamedNode("urn:subject"),
    ox.NamedNode("urn:said"),
    ox.Literal(SECRET),
    ox.NamedNode("urn:g0"),
)


def build(root: Path, *, legacy: bool) -> set[str]:
    """A store at ``root`` holding 300 quads, from which SECRET was removed; its quads.

    ``legacy`` writes it as trails did before the layout: pyoxigraph in the folder itself.
    """
    if legacy:
        raw = ox.Store(str(root))
    else:
        store = OxigraphStore(root)
        raw = store.raw
    raw.extend([*_quads(), SECRET_QUAD])
    raw.flush()
    raw.remove(SECRET_QUAD)
    raw.flush()
    expected = nquads(raw)
    if legacy:
        del raw
    else:
        del raw
        store.close()
    assert holds(root, SECRET), "removed text must still be in the files before compaction"
    return expected


def nquads(raw: ox.Store) -> set[str]:
    return {str(q) for q in raw.quads_for_pattern(None, None, None, None)}


def holds(root: Path, text: str) -> bool:
    """Whether any file of the store's folder holds ``text``."""
    return any(text.encode() in f.read_bytes() for f in root.rglob("*") if f.is_file())


def listing(root: Path) -> list[str]:
    return sorted(os.listdir(root))


def only(data: str) -> list[str]:
    """What the folder of a store whose data is in ``data`` holds, and nothing more."""
    return sorted([data, _layout.LOCK, _layout.POINTER])


KILLER = """
import os, signal, sys
from trails.store import _layout
from trails.store.oxigraph import OxigraphStore

store = OxigraphStore(sys.argv[1])
def stop(step):
    if step == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)
_layout.on_step = stop
store.compact()
print("compacted")
"""


def compact_killed_at(root: Path, step: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", KILLER, str(root), step], capture_output=True, text=True
    )
    assert result.returncode == -signal.SIGKILL, (result.stdout, result.stderr)
    assert "compacted" not in result.stdout


def state_at(root: Path, step: str, *, legacy: bool) -> None:
    """What the kill left: the intermediate state ``step`` names, with a store at the path."""
    names = listing(root)
    old, new = ("data-1", "data-2") if not legacy else (None, "data-1")
    pointer = _layout.read_pointer(root)
    if step in ("copying", "copied"):
        assert f"{new}.tmp" in names and new not in names
    if step == "renamed":  # the copy is complete; the pointer still names the old store
        assert new in names and f"{new}.tmp" not in names
        assert pointer == (None if legacy else 1)
    if step in ("switched", "deleting"):
        assert pointer == int(new.split("-")[1])
        if legacy:  # RocksDB's files of the earlier layout: all there, or some already gone
            assert (ROCKSDB_MARK in names) == (step == "switched")
        else:
            assert old in names
    # at every step the path holds a whole store: the pointer's directory, or the old files
    assert is_store(root)
    if pointer is not None:
        assert (root / f"data-{pointer}" / ROCKSDB_MARK).is_file()
    else:
        assert (root / ROCKSDB_MARK).is_file()


@pytest.mark.parametrize("legacy", [False, True], ids=["layout", "earlier-layout"])
@pytest.mark.parametrize("step", STEPS)
def test_a_compaction_killed_at_any_step_loses_nothing(
    tmp_path: Path, step: str, legacy: bool
) -> None:
    root = tmp_path / "store"
    expected = build(root, legacy=legacy)
    compact_killed_at(root, step)
    state_at(root, step, legacy=legacy)

    store = OxigraphStore(root)  # recovery: finish or roll back, then open
    try:
        assert nquads(store.raw) == expected
        committed = step in COMMITTED
        if committed:  # finished on open: the new copy in use, the old one gone
            assert listing(root) == only("data-2" if not legacy else "data-1")
            assert not holds(root, SECRET)
        elif legacy:  # rolled back: the earlier layout as it was, the copy gone
            assert ROCKSDB_MARK in listing(root)
            assert not [n for n in listing(root) if n.startswith("data-")]
        else:
            assert listing(root) == only("data-1")
        store.compact()  # and a compaction after it completes as any other
        assert nquads(store.raw) == expected
        assert not holds(root, SECRET)
        assert [n for n in listing(root) if n.startswith("data-")] == [
            f"data-{_layout.read_pointer(root)}"
        ]
    finally:
        store.close()
    again = OxigraphStore(root)
    try:
        assert nquads(again.raw) == expected
    finally:
        again.close()


PAUSER = """
import sys
from trails.store import _layout
from trails.store.oxigraph import OxigraphStore

store = OxigraphStore(sys.argv[1])
def pause(step):
    if step == sys.argv[2]:
        print("paused", flush=True)
        sys.stdin.readline()
_layout.on_step = pause
store.compact()
store.close()
print("compacted", flush=True)
"""


@pytest.mark.parametrize("step", STEPS)
def test_another_process_reads_a_whole_store_at_every_step_of_a_compaction(
    tmp_path: Path, step: str
) -> None:
    root = tmp_path / "store"
    expected = build(root, legacy=False)
    child = subprocess.Popen(
        [sys.executable, "-c", PAUSER, str(root), step],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "paused"
        state_at(root, step, legacy=False)  # a whole store at the path at this instant
        with pytest.raises(StoreLockedError, match="single-writer"):
            OxigraphStore(root)  # this process too: the lock spans the whole swap
        trails = str(Path(sys.executable).parent / "trails")
        # a reader sees a whole store, as a snapshot, at every step: the pointer names one
        count = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"
        reader = subprocess.run(
            [trails, "query", count, "--format", "json", "--store", str(root)],
            capture_output=True,
            text=True,
        )
        assert reader.returncode == 0, reader.stdout + reader.stderr
        assert "reading a snapshot" in reader.stderr
        counted = json.loads(reader.stdout)["results"]["bindings"][0]["n"]["value"]
        assert int(counted) == len(expected)
        # a command that changes the store waits for no snapshot: it needs the lock
        changer = subprocess.run(
            [trails, "hold", "add", "did:example:x", "--reason", "r", "--store", str(root)],
            capture_output=True,
            text=True,
        )
        assert changer.returncode == 1 and "already open in another process" in changer.stderr
        child.stdin.write("\n")
        child.stdin.flush()
        out, err = child.communicate()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    assert "compacted" in out
    store = OxigraphStore(root)
    try:
        assert nquads(store.raw) == expected
        assert listing(root) == only("data-2")
        assert not holds(root, SECRET)
    finally:
        store.close()


def test_a_store_of_the_earlier_layout_opens_records_and_compacts_into_the_layout(
    tmp_path: Path,
) -> None:
    root = tmp_path / "store"
    expected = build(root, legacy=True)
    store = OxigraphStore(root)
    try:  # opened in place: nothing moved until a compaction
        assert nquads(store.raw) == expected
        assert ROCKSDB_MARK in listing(root) and _layout.POINTER not in listing(root)
        extra = ox.Quad(
            ox.NamedNode("urn:new"), ox.NamedNode("urn:p"), ox.Literal("new"), ox.NamedNode("urn:g")
        )
        store.raw.add(extra)
        expected.add(str(extra))
        store.compact()
        assert nquads(store.raw) == expected
        assert listing(root) == only("data-1")
        assert not holds(root, SECRET)
    finally:
        store.close()
    reopened = OxigraphStore(root)
    try:
        assert nquads(reopened.raw) == expected
    finally:
        reopened.close()


def test_rocksdb_files_written_into_the_folder_later_are_never_taken_for_leftovers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """After a store moved into the layout, RocksDB files in its folder are not the ones
    it left (those are gone, and the pointer says so): an earlier trails wrote them, and
    they stay for whoever needs them."""
    root = tmp_path / "store"
    expected = build(root, legacy=True)
    store = OxigraphStore(root)
    store.compact()  # moved into the layout: data-1, the earlier files deleted
    store.close()
    assert "clearing" not in (root / _layout.POINTER).read_text()
    earlier = ox.Store(str(root))  # an earlier trails records into the folder itself
    earlier.add(SECRET_QUAD)
    del earlier
    with caplog.at_level("WARNING", logger="trails.store"):
        again = OxigraphStore(root)
    try:
        assert nquads(again.raw) == expected
        assert ROCKSDB_MARK in listing(root) and "written by something else" in caplog.text
    finally:
        again.close()


def test_a_store_lost_between_an_earlier_versions_two_renames_is_restored(
    tmp_path: Path,
) -> None:
    """The crash the earlier compaction had: no store at the path, all of it beside."""
    root = tmp_path / "store"
    whole = tmp_path / "store.compacting-old"
    expected = build(whole, legacy=True)
    half = ox.Store(str(tmp_path / "store.compacting"))  # its copy, written or not
    half.add(SECRET_QUAD)
    del half
    assert not root.exists() and is_store(root)  # readers find the store, too
    store = OxigraphStore(root)
    try:
        assert nquads(store.raw) == expected  # not an empty store in its place
        assert listing(root) == only("data-1")
        assert sorted(os.listdir(tmp_path)) == ["store"]
        store.compact()
        assert not holds(root, SECRET)
    finally:
        store.close()


def test_a_pointer_naming_a_missing_directory_is_an_error_not_an_empty_store(
    tmp_path: Path,
) -> None:
    root = tmp_path / "store"
    build(root, legacy=False)
    (root / "data-1").rename(tmp_path / "elsewhere")
    before = listing(root)
    with pytest.raises(StoreError, match="damaged: its pointer names data-1, which is not there"):
        OxigraphStore(root)
    assert listing(root) == before  # nothing created in its place
    (root / _layout.POINTER).write_text("{not json")
    with pytest.raises(StoreError, match="does not name a data directory"):
        OxigraphStore(root)


def test_a_compaction_that_cannot_switch_leaves_the_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    expected = build(root, legacy=False)
    store = OxigraphStore(root)

    def full(root: Path, version: int, *, clearing: bool = False) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_layout, "point", full)
    try:
        with pytest.raises(StoreError, match=r"the store is as it was: .*No space left"):
            store.compact()
        assert nquads(store.raw) == expected  # still open, on the old data
        assert listing(root) == only("data-1")
    finally:
        store.close()
    monkeypatch.undo()
    again = OxigraphStore(root)  # no later open finishes the abandoned compaction
    try:
        assert _layout.read_pointer(root) == 1 and nquads(again.raw) == expected
    finally:
        again.close()


EMAIL = "jane.doe.compaction@example.org"


def record_jane(root: Path) -> None:
    """A sealed session of jane's on a store at ``root``, her e-mail in its content."""
    from trails.evidence import install_sealer
    from trails.kernel import Context, capability, invoke
    from trails.prov import Recorder

    @capability(id="compaction.lookup", description="Look a customer up")
    def lookup(ctx: Context, email: str) -> dict[str, str]:
        return {"customer": email}

    store = OxigraphStore(root)
    try:
        recorder = Recorder(store)
        install_sealer(recorder)
        with Context.open("did:example:jane", recorder=recorder) as ctx:
            invoke("compaction.lookup", {"email": EMAIL}, ctx=ctx)
    finally:
        store.close()


def test_trails_erase_leaves_one_data_directory_and_no_erased_text(tmp_path: Path) -> None:
    root = tmp_path / "store"
    record_jane(root)
    assert holds(root, EMAIL)
    erase = ["erase", "--principal", "did:example:jane", "--reason", "GDPR"]
    trails = str(Path(sys.executable).parent / "trails")
    result = subprocess.run(
        [trails, "--store", str(root), *erase, "--by", "did:example:dpo"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "store files rewritten" in result.stdout
    assert listing(root) == only("data-2")
    assert not holds(root, EMAIL)


def test_an_erasure_whose_old_copy_cannot_be_deleted_says_so_and_the_next_open_deletes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trails.compliance.erasure import erase
    from trails.evidence import verify
    from trails.prov import Recorder

    root = tmp_path / "store"
    record_jane(root)
    real = _layout.remove

    def refused(path: Path, *, step: str | None = None) -> None:
        if path.name == "data-1":
            raise PermissionError(13, "Permission denied", str(path))
        real(path, step=step)

    monkeypatch.setattr(_layout, "remove", refused)
    store = OxigraphStore(root)
    try:
        with pytest.raises(StoreError) as raised:
            erase(Recorder(store), principal="did:example:jane", reason="GDPR", by="did:x:dpo")
        message = str(raised.value)
        assert str(root / "data-1") in message and "erased text included" in message
        assert "Permission denied" in message
        assert EMAIL.encode() not in (store.dump(format="nquads") or b"")  # erased in the store
        assert holds(root / "data-1", EMAIL)  # but its old copy is on disk, as the error says
        assert not holds(root / "data-2", EMAIL)
    finally:
        store.close()
    monkeypatch.undo()
    again = OxigraphStore(root)  # the next open deletes it
    try:
        assert listing(root) == only("data-2")
        assert not holds(root, EMAIL)
        assert verify(again).ok
    finally:
        again.close()
