"""An erasure killed at any moment never leaves verification red.

``trails erase`` runs in a child process that SIGKILLs itself right after its k-th
write to the store (every k the erasure reaches), or when its compaction reaches a
step (``trails.store._layout.on_step``). Afterwards the store opens, ``trails verify``
passes (the receipt and its seal are one write), ``trails recover`` changes nothing
that verifies, and the same erasure run again writes no second, empty receipt. An
erasure written in batches and killed between two of them is closed by ``trails
recover`` as interrupted and sealed; run again, it erases the rest. A receipt left
without its seal (as an earlier version left one) is sealed by recovery.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.compliance.test_erasure import ALICE, BOB, marker, record_session, store_bytes

from trails.audit.search import FILE_NAME, SearchIndex
from trails.compliance.erasure import erase, list_erasures
from trails.compliance.holds import place_hold
from trails.evidence import verify
from trails.evidence.seal import install_sealer
from trails.prov import Recorder
from trails.store import open_store

CHILD = r"""
import os, signal, sys
from trails.store import _layout
from trails.store.oxigraph import OxigraphStore

mode, limit, step = sys.argv[1], int(sys.argv[2]), sys.argv[3]
writes = 0
write = OxigraphStore.write


def counted(self, quads, *, remove=()):
    global writes
    write(self, quads, remove=remove)
    writes += 1
    if writes == limit:
        os.kill(os.getpid(), signal.SIGKILL)


def stop(reached):
    if reached == step:
        os.kill(os.getpid(), signal.SIGKILL)


OxigraphStore.write = counted
_layout.on_step = stop
if mode == "cli":
    from trails.cli import main

    status = main(sys.argv[4:])
else:  # the library, in batches of two values
    from trails.compliance.erasure import erase
    from trails.prov import Recorder
    from trails.store import open_store

    store = open_store(sys.argv[4])
    recorder = Recorder.from_settings(store=store)
    erase(recorder, principal=sys.argv[5], reason="request 7", by="did:example:dpo", batch=2)
    store.close()
    status = 0
print("writes", writes, flush=True)
sys.exit(status)
"""

COMPACTION_STEPS = ("copying", "copied", "renamed", "switched", "deleting")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of two sessions of Alice's and one of Bob's, each sealed."""
    path = tmp_path_factory.mktemp("template") / "store"
    store = open_store(str(path))
    try:
        recorder = Recorder(store)
        install_sealer(recorder)
        for i in range(2):
            record_session(recorder, ALICE, "alice", i)
        record_session(recorder, BOB, "bob", 0)
    finally:
        store.close()
    return path


def copy_of(template: Path, tmp_path: Path, name: str) -> Path:
    where = tmp_path / name
    shutil.copytree(template, where)
    return where


def trails(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trails.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def child(
    cwd: Path, mode: str, limit: int, step: str, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(limit), step, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def erase_args(where: Path) -> list[str]:
    return ["--store", str(where), "erase", "--principal", ALICE, "--reason", "request 7"]


def check(where: Path) -> tuple[bool, list[str], int, str]:
    """(verification passed, its findings, receipts, the dump) of the store at ``where``."""
    store = open_store(str(where))
    try:
        report = verify(store)
        dump = (store.dump(format="nquads") or b"").decode()
        return report.ok, [str(f) for f in report.findings], len(list_erasures(store)), dump
    finally:
        store.close()


def test_an_erasure_killed_after_any_of_its_writes_verifies_without_recovery(
    template: Path, tmp_path: Path
) -> None:
    whole = copy_of(template, tmp_path, "whole")
    done = child(tmp_path, "cli", 0, "-", *erase_args(whole))
    assert done.returncode == 0, done.stderr
    total = int(done.stdout.split("writes ")[1])
    assert total >= 1
    for k in range(1, total + 1):
        where = copy_of(template, tmp_path, f"killed-{k}")
        killed = child(tmp_path, "cli", k, "-", *erase_args(where))
        assert killed.returncode == -signal.SIGKILL, (k, killed.stdout, killed.stderr)
        ok, findings, receipts, dump = check(where)
        assert ok, (k, findings)  # no recovery needed: the receipt was sealed as written
        assert receipts == 1 and marker("alice", 0) not in dump
        recovered = trails(tmp_path, "--store", str(where), "recover")
        assert recovered.returncode == 0, recovered.stderr
        again = trails(tmp_path, *erase_args(where))
        assert again.returncode == 0, again.stderr
        assert "nothing left to erase" in again.stdout
        ok, findings, receipts, dump = check(where)
        assert ok and receipts == 1, (k, findings, receipts)  # no second, empty receipt
        assert marker("bob", 0) in dump


@pytest.mark.parametrize("step", COMPACTION_STEPS)
def test_an_erasure_killed_while_compacting_verifies_and_trails_compact_finishes(
    template: Path, tmp_path: Path, step: str
) -> None:
    where = copy_of(template, tmp_path, "store")
    killed = child(tmp_path, "cli", 0, step, *erase_args(where))
    assert killed.returncode == -signal.SIGKILL, (killed.stdout, killed.stderr)
    ok, findings, receipts, dump = check(where)
    assert ok and receipts == 1, findings
    assert marker("alice", 1) not in dump
    compacted = trails(tmp_path, "--store", str(where), "compact")
    assert compacted.returncode == 0, compacted.stderr
    assert marker("alice", 1).encode() not in store_bytes(where)
    # the rest is kept: read through the store, as the rewritten files' deeper levels are
    # LZ4-compressed and a raw search can miss a text that is there
    ok, findings, _, dump = check(where)
    assert ok and marker("bob", 0) in dump, findings


def test_an_erasure_killed_between_its_batches_is_closed_by_recovery_and_finished_by_a_rerun(
    template: Path, tmp_path: Path
) -> None:
    whole = copy_of(template, tmp_path, "whole")
    done = child(tmp_path, "batches", 0, "-", str(whole), ALICE)
    assert done.returncode == 0, done.stderr
    total = int(done.stdout.split("writes ")[1])
    assert total >= 3  # several batches, then compaction
    for k in (1, 2):
        where = copy_of(template, tmp_path, f"killed-{k}")
        killed = child(tmp_path, "batches", k, "-", str(where), ALICE)
        assert killed.returncode == -signal.SIGKILL, (killed.stdout, killed.stderr)
        ok, findings, _, dump = check(where)
        assert not ok and any("CONTENT-MISSING" in f or "FOREIGN" in f for f in findings)
        recovered = trails(tmp_path, "--store", str(where), "recover")
        assert recovered.returncode == 0, recovered.stderr
        assert "interrupted after removing" in recovered.stdout, recovered.stdout
        ok, findings, receipts, dump = check(where)
        assert ok and receipts == 1, findings
        assert marker("alice", 0) in dump or marker("alice", 1) in dump  # not all removed yet
        again = trails(tmp_path, *erase_args(where))
        assert again.returncode == 0, again.stderr
        ok, findings, receipts, dump = check(where)
        assert ok and receipts == 2, findings
        assert marker("alice", 0) not in dump and marker("alice", 1) not in dump
        assert marker("bob", 0) in dump


def test_a_rerun_erasure_finishes_a_cut_short_one_without_recovery(
    template: Path, tmp_path: Path
) -> None:
    where = copy_of(template, tmp_path, "store")
    killed = child(tmp_path, "batches", 1, "-", str(where), ALICE)
    assert killed.returncode == -signal.SIGKILL, (killed.stdout, killed.stderr)
    again = trails(tmp_path, *erase_args(where))
    assert again.returncode == 0, again.stderr
    ok, findings, receipts, dump = check(where)
    assert ok and receipts == 2, findings
    assert marker("alice", 0) not in dump and marker("alice", 1) not in dump


def test_a_receipt_left_without_its_seal_is_sealed_by_recovery(
    template: Path, tmp_path: Path
) -> None:
    """What an earlier version left when killed between its receipt and its seal."""
    where = copy_of(template, tmp_path, "store")
    store = open_store(str(where))
    try:
        erase(
            Recorder(store), principal=ALICE, reason="request 7", by="did:example:dpo", seal=False
        )
    finally:
        store.close()
    ok, findings, _, _ = check(where)
    assert not ok and any("CONTENT-MISSING" in f for f in findings)
    recovered = trails(tmp_path, "--store", str(where), "recover")
    assert recovered.returncode == 0, recovered.stderr
    assert "now sealed" in recovered.stdout and "1 erasure" in recovered.stdout
    ok, findings, receipts, _ = check(where)
    assert ok and receipts == 1, findings
    again = trails(tmp_path, *erase_args(where))
    assert again.returncode == 0 and "nothing left to erase" in again.stdout, again
    assert check(where)[2] == 1
    assert os.listdir(where)


INTERRUPTER = r"""
import os, signal, sys
from trails.store import _layout


def interrupt(reached):
    if reached == sys.argv[1]:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C


_layout.on_step = interrupt
from trails.cli import main

sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("step", ["copying", "renamed"])
def test_ctrl_c_while_compacting_says_the_erasure_is_recorded_and_compact_finishes(
    template: Path, tmp_path: Path, step: str
) -> None:
    where = copy_of(template, tmp_path, "store")
    run = subprocess.run(
        [sys.executable, "-c", INTERRUPTER, step, *erase_args(where)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 130, (run.stdout, run.stderr)
    assert run.stderr.strip().splitlines() == [
        "trails: erasure recorded; compaction interrupted: the erased text remains in the "
        "store files until `trails compact`"
    ]
    assert "erased " in run.stdout and "receipt" in run.stdout
    ok, findings, receipts, dump = check(where)
    assert ok and receipts == 1, findings
    assert marker("alice", 0) not in dump
    compacted = trails(tmp_path, "--store", str(where), "compact")
    assert compacted.returncode == 0, compacted.stderr
    assert "no removed text remains" in compacted.stdout
    assert marker("alice", 0).encode() not in store_bytes(where)


def test_no_compact_points_at_trails_compact(template: Path, tmp_path: Path) -> None:
    where = copy_of(template, tmp_path, "store")
    run = trails(tmp_path, *erase_args(where), "--no-compact")
    assert run.returncode == 0, run.stderr
    assert "run `trails compact`" in run.stdout
    assert marker("alice", 0).encode() in store_bytes(where)  # not rewritten yet
    assert trails(tmp_path, "--store", str(where), "compact").returncode == 0
    assert marker("alice", 0).encode() not in store_bytes(where)


def test_compact_on_a_sparql_server_says_the_server_compacts_its_files(tmp_path: Path) -> None:
    run = trails(tmp_path, "--store", "http://127.0.0.1:9/sparql", "compact")
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1
    assert "compacts its own files" in run.stderr


def test_an_erasure_blocked_by_holds_exits_3_naming_them_and_writes_no_receipt(
    template: Path, tmp_path: Path
) -> None:
    where = copy_of(template, tmp_path, "store")
    store = open_store(str(where))
    try:
        recorder = Recorder(store)
        install_sealer(recorder)
        hold = place_hold(recorder, ALICE, reason="case 2025-17", by="did:example:dpo")
    finally:
        store.close()
    run = trails(tmp_path, *erase_args(where))
    assert run.returncode == 3, (run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and hold.iri in lines[0] and "case 2025-17" in lines[0], lines
    assert "nothing erased" in lines[0]
    ok, findings, receipts, dump = check(where)
    assert ok and receipts == 0, findings
    assert marker("alice", 0) in dump


def test_erase_removes_the_subjects_text_from_the_search_index_before_it_reports(
    template: Path, tmp_path: Path
) -> None:
    where = copy_of(template, tmp_path, "store")
    store = open_store(str(where))
    try:
        index = SearchIndex.beside(where)
        index.catch_up(store)
        index.close()
    finally:
        store.close()
    indexed = where / FILE_NAME
    assert marker("alice", 0).encode() in indexed.read_bytes()
    run = trails(tmp_path, *erase_args(where))
    assert run.returncode == 0, run.stderr
    data = indexed.read_bytes()
    for i in range(2):
        assert marker("alice", i).encode() not in data, i
    assert marker("bob", 0).encode() in data
