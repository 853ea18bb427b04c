"""The transparency log over the seals, in a real store: appended by checkpoints, proved
offline, and caught when rewritten or cut.

Sessions are recorded on a real pyoxigraph store with the sealer installed; each
verification checkpoint appends the seals not yet in the log and records a tree head.
The log's root is checked against an independent RFC 9162 tree (pymerkle) over the same
leaves; proof files are checked by ``verify_proof`` alone; heads are stamped by a
loopback time-stamping authority (``openssl ts -reply``); the CLI runs as a subprocess.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pymerkle import InmemoryTree
from tests.evidence.loopback_tsa import loopback_tsa

from trails.evidence.checkpoint import read_checkpoint, record_checkpoint
from trails.evidence.ledger import ledger_iri, read_seals, sha256_hex
from trails.evidence.proofs import ProofReport, TreeHead, leaf_data, verify_proof
from trails.evidence.seal import install_sealer
from trails.evidence.timestamp import load_certificates, timestamp_checker
from trails.evidence.transparency import (
    check_log,
    extend_log,
    log_iri,
    node_iri,
    prove_session,
    read_head,
    since_head,
)
from trails.evidence.verify import verify
from trails.kernel import Context
from trails.prov import Minter, Recorder
from trails.prov.vocab import T
from trails.store import (
    IRI,
    Literal,
    Quad,
    Solutions,
    Store,
    instant,
    open_store,
    set_default_store,
)

MINTER = Minter()
LEDGER, LOG = ledger_iri(MINTER), log_iri(MINTER)


def record(recorder: Recorder, n: int) -> list[IRI]:
    out = []
    for i in range(n):
        with Context.open("did:local:alice", recorder=recorder, label=f"run {i}") as ctx:
            out.append(IRI(str(ctx.session)))
    return out


def chain_tips(store: Store) -> list[tuple[IRI, str]]:
    """The newest seal of each writer's chain (what a verification's checkpoint records)."""
    newest: dict[object, Any] = {}
    for seal in read_seals(store, LEDGER):
        if seal.chain not in newest or seal.sequence > newest[seal.chain].sequence:
            newest[seal.chain] = seal
    return [(s.iri, s.seal_hash) for s in newest.values()]


def checkpoint(recorder: Recorder, key: Any = None) -> None:
    tips = chain_tips(recorder.store)
    record_checkpoint(
        recorder,
        mode="full",
        seals=len(tips),
        graphs=0,
        verified=tips,
        previous=read_checkpoint(recorder.store, LEDGER),
        signing_key=key,
    )


def leaf_order(store: Store) -> list[str]:
    rows = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?i ?seal $log WHERE { GRAPH $log "
        "{ ?leaf trails:leafIndex ?i ; trails:leafSeal ?seal } } ORDER BY ?i",
        {"log": LOG},
    )
    assert isinstance(rows, Solutions)
    return [str(r["seal"]) for r in rows]


def sealed(store: Store) -> Recorder:
    recorder = Recorder(store)
    install_sealer(recorder)
    return recorder


def test_each_checkpoint_appends_the_new_seals_in_order(store: Store) -> None:
    recorder = sealed(store)
    first = record(recorder, 3)
    assert read_head(store, LOG) is None  # sealing never touches the log
    checkpoint(recorder)
    head = read_head(store, LOG)
    assert head is not None and head.size == len(read_seals(store, LEDGER))
    record(recorder, 2)
    assert read_head(store, LOG) == head  # until the next checkpoint
    checkpoint(recorder)
    later = read_head(store, LOG)
    assert later is not None and later.size == len(read_seals(store, LEDGER)) > head.size
    order = leaf_order(store)
    assert len(order) == later.size == len(set(order))
    by_seal = {str(s.iri): s for s in read_seals(store, LEDGER)}
    firsts = {str(s.iri) for s in by_seal.values() if s.graph in first}
    assert firsts <= set(order[: head.size])  # the older seals keep their places
    oracle = InmemoryTree(algorithm="sha256")
    for seal in order:
        oracle.append_entry(leaf_data(seal, by_seal[seal].seal_hash))
    assert oracle.get_root(later.size).hex() == later.root
    assert oracle.get_root(head.size).hex() == head.root
    assert later.intact() and check_log(store, MINTER) == []
    checkpoint(recorder)  # nothing new: a fresh head of the same tree
    again = read_head(store, LOG)
    assert again is not None and (again.size, again.root) == (later.size, later.root)


def test_a_checkpoint_appends_only_what_it_verified_reading_only_new_seals(store: Store) -> None:
    from tests.evidence.test_ledger import Spy

    recorder = sealed(store)
    record(recorder, 4)
    checkpoint(recorder)
    verified = chain_tips(store)
    record(recorder, 3)  # sealed after the verification: the next checkpoint's
    spy = Spy(store)
    event, _ = extend_log(spy, MINTER, tips=verified)  # type: ignore[arg-type]
    assert event.leaves == ()  # nothing new up to the verified tips
    assert not any("FILTER NOT EXISTS" in q for q, _ in spy.queries)  # no scan of all seals
    event, _ = extend_log(spy, MINTER, tips=chain_tips(store))
    newest = sorted(read_seals(store, LEDGER), key=lambda s: (instant(s.at), str(s.iri)))[-3:]
    assert [seal for _, seal in event.leaves] == [str(s.iri) for s in newest]
    assert not any("FILTER NOT EXISTS" in q for q, _ in spy.queries)


def test_a_proof_file_verifies_alone_and_is_logarithmic(store: Store, tmp_path: Path) -> None:
    recorder = sealed(store)
    sessions = record(recorder, 40)
    checkpoint(recorder)
    proof = prove_session(store, MINTER, sessions[7])
    path = tmp_path / "proof.json"
    path.write_text(json.dumps(proof))
    report = verify_proof(path)
    assert report.ok, report.findings
    assert report.seals == 1 and "are leaves of the log" in report.proves[0]
    size = proof["head"]["size"]
    assert all(len(s["path"]) <= (size - 1).bit_length() for s in proof["seals"])


def _edited(proof: dict[str, Any], tmp_path: Path, edit: Any) -> ProofReport:
    doc = json.loads(json.dumps(proof))
    edit(doc)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return verify_proof(path)


def _flip_hex(text: str) -> str:
    return ("1" if text[0] == "0" else "0") + text[1:]


def test_each_edited_proof_file_is_rejected(store: Store, tmp_path: Path) -> None:
    recorder = sealed(store)
    sessions = record(recorder, 9)
    checkpoint(recorder)
    proof = prove_session(store, MINTER, sessions[2])
    entry = proof["seals"][0]

    def sibling(d: dict[str, Any]) -> None:
        d["seals"][0]["path"][1] = _flip_hex(d["seals"][0]["path"][1])

    def size(d: dict[str, Any]) -> None:
        d["head"]["size"] += 1

    def root(d: dict[str, Any]) -> None:
        d["head"]["root"] = _flip_hex(d["head"]["root"])

    def index(d: dict[str, Any]) -> None:
        d["seals"][0]["index"] = entry["index"] + 1

    def seal_field(d: dict[str, Any]) -> None:
        d["seals"][0]["seal"]["graph_hash"] = _flip_hex(entry["seal"]["graph_hash"])

    def truncated(d: dict[str, Any]) -> None:
        d["seals"][0]["path"] = d["seals"][0]["path"][:-1]

    expected = {
        sibling: "proof",
        size: "head",
        root: "head",
        index: "proof",
        seal_field: "altered",
        truncated: "proof",
    }
    for edit, kind in expected.items():
        report = _edited(proof, tmp_path, edit)
        assert kind in {f.kind for f in report.findings}, (edit.__name__, report.findings)


def _pem(tmp_path: Path, key: Ed25519PrivateKey, name: str) -> Path:
    path = tmp_path / name
    path.write_bytes(key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    return path


def test_a_signed_head_verifies_only_with_its_key(store: Store, tmp_path: Path) -> None:
    key, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    recorder = sealed(store)
    sessions = record(recorder, 3)
    checkpoint(recorder, key)
    path = tmp_path / "proof.json"
    path.write_text(json.dumps(prove_session(store, MINTER, sessions[0])))
    good = verify_proof(path, public_key=key.public_key())
    assert good.ok and "the tree head is signed by the trusted key" in good.proves
    bad = verify_proof(path, public_key=other.public_key())
    assert [f.kind for f in bad.findings] == ["signature"]
    # the head's size and root edited and its hash recomputed: only the signature tells
    # (an unsigned head is the file's own claim; a signed one binds size and root)
    doc = json.loads(path.read_text())
    doc["head"]["size"] += 1
    doc["head"]["root"] = _flip_hex(doc["head"]["root"])
    doc["head"]["hash"] = sha256_hex(TreeHead.from_json(doc["head"], "edited").message())
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(doc))
    kinds = {f.kind for f in verify_proof(forged, public_key=key.public_key()).findings}
    assert "signature" in kinds
    # the signature alone stripped (the head still names its key): a finding without --key
    doc = json.loads(path.read_text())
    doc["head"]["signature"] = None
    forged.write_text(json.dumps(doc))
    stripped = verify_proof(forged).findings
    assert [f.kind for f in stripped] == ["signature"] and "no signature" in stripped[0].detail
    checkpoint(recorder)  # an unsigned head: a trusted key finds it unsigned
    path.write_text(json.dumps(prove_session(store, MINTER, sessions[0])))
    assert [f.kind for f in verify_proof(path, public_key=key.public_key()).findings] == [
        "signature"
    ]


def _drop_seal_quads(store: Store, seal: IRI) -> None:
    rows = store.query(
        "SELECT ?p ?o $s $g WHERE { GRAPH $g { $s ?p ?o } }", {"s": seal, "g": LEDGER}
    )
    assert isinstance(rows, Solutions)
    store.write([], remove=[Quad(seal, r["p"], r["o"], LEDGER) for r in rows])  # type: ignore[arg-type]


@pytest.mark.allow_nonconforming  # the ledger is tampered with on purpose
def test_since_head_holds_for_a_grown_log_and_fails_for_a_rewritten_or_cut_one(
    store: Store,
) -> None:
    recorder = sealed(store)
    record(recorder, 5)
    checkpoint(recorder)
    kept = read_head(store, LOG)
    assert kept is not None
    record(recorder, 3)
    checkpoint(recorder)
    grown = ProofReport()
    since_head(store, MINTER, kept, grown)
    assert grown.ok and "extends the head" in grown.proves[0]

    # an old seal rewritten and the whole log rebuilt over it, consistently
    order = leaf_order(store)
    victim = IRI(order[1])
    rows = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?h $s $g WHERE { GRAPH $g "
        "{ $s trails:sealHash ?h } }",
        {"s": victim, "g": LEDGER},
    )
    assert isinstance(rows, Solutions)
    (old_hash,) = [r["h"] for r in rows]
    store.write(
        [Quad(victim, T.sealHash, Literal("f" * 64), LEDGER)],
        remove=[Quad(victim, T.sealHash, old_hash, LEDGER)],  # type: ignore[arg-type]
    )
    store.clear(LOG)
    checkpoint(Recorder(store))  # the forger's own process rebuilds the log
    rebuilt = read_head(store, LOG)
    assert rebuilt is not None and rebuilt.size == len(order) and check_log(store, MINTER) == []
    rewritten = ProofReport()
    since_head(store, MINTER, kept, rewritten)
    assert [f.kind for f in rewritten.findings] == ["head"]
    assert "does not extend it" in rewritten.findings[0].detail

    # the newest seals removed and the log rebuilt without them: smaller than the kept head
    for seal in order[3:]:
        _drop_seal_quads(store, IRI(seal))
    store.clear(LOG)
    checkpoint(Recorder(store))
    cut = ProofReport()
    since_head(store, MINTER, kept, cut)
    assert [f.kind for f in cut.findings] == ["head"] and "was cut" in cut.findings[0].detail


@pytest.mark.allow_nonconforming  # the log is tampered with on purpose
def test_check_log_finds_an_edited_node_and_proofs_through_it_fail(
    store: Store, tmp_path: Path
) -> None:
    recorder = sealed(store)
    record(recorder, 6)
    checkpoint(recorder)
    assert check_log(store, MINTER) == []
    node = node_iri(LOG, 1, 0)  # leaves 0 and 1: on the path of leaves 2 and 3
    rows = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?h $n $g WHERE { GRAPH $g "
        "{ $n trails:nodeHash ?h } }",
        {"n": node, "g": LOG},
    )
    assert isinstance(rows, Solutions)
    (h,) = [r["h"] for r in rows]
    store.write(
        [Quad(node, T.nodeHash, Literal("0" * 64), LOG)],
        remove=[Quad(node, T.nodeHash, h, LOG)],  # type: ignore[arg-type]
    )
    assert [f.subject for f in check_log(store, MINTER)] == [str(node)]
    # a plain full verification runs the log's check too
    assert [(f.kind, f.subject) for f in verify(store).findings] == [("log", str(node))]
    by_seal = {str(s.iri): s.graph for s in read_seals(store, LEDGER)}
    session = by_seal[leaf_order(store)[2]]
    path = tmp_path / "proof.json"
    path.write_text(json.dumps(prove_session(store, MINTER, session)))
    assert "proof" in {f.kind for f in verify_proof(path).findings}


def test_tree_heads_are_stamped_by_the_configured_tsa(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = sealed(store)
    sessions = record(recorder, 2)
    with loopback_tsa() as tsa, loopback_tsa() as stranger:
        (tmp_path / "trails.toml").write_text(f'[audit]\ntimestamp_url = "{tsa.url}"\n')
        monkeypatch.chdir(tmp_path)
        checkpoint(recorder)
        roots, strange = load_certificates(tsa.root_pem), load_certificates(stranger.root_pem)
        (tmp_path / "tsa-root.pem").write_bytes(tsa.root_pem.read_bytes())
    head = read_head(store, LOG)
    assert head is not None and head.timestamp and len(tsa.requests) == 1
    path = tmp_path / "proof.json"
    proof = prove_session(store, MINTER, sessions[0])
    path.write_text(json.dumps(proof))
    trusted = verify_proof(path, timestamp=timestamp_checker(roots), tsa_trusted=True)
    assert trusted.ok, trusted.findings
    assert any("trusted time-stamping authority" in line for line in trusted.proves)
    wrong = verify_proof(path, timestamp=timestamp_checker(strange), tsa_trusted=True)
    assert [f.kind for f in wrong.findings] == ["timestamp"]
    # a token moved onto another head stamps another hash
    checkpoint(recorder)
    other = read_head(store, LOG)
    assert other is not None and not other.timestamp  # no TSA configured here any more
    moved = prove_session(store, MINTER, sessions[0])
    moved["head"]["timestamp"] = head.timestamp
    path.write_text(json.dumps(moved))
    report = verify_proof(path, timestamp=timestamp_checker(roots), tsa_trusted=True)
    assert [f.detail for f in report.findings] == [
        "its time-stamp token stamps another hash than the head's"
    ]
    assert base64.b64decode(head.timestamp)
    # the command line: --tsa-cert checks the token against the TSA's certificate
    path.write_text(json.dumps(proof))
    done = trails(tmp_path, "verify", "--proof", str(path), "--tsa-cert", "tsa-root.pem")
    assert done.returncode == 0 and "trusted time-stamping authority" in done.stdout, done.stdout


def test_an_unreachable_tsa_costs_the_stamp_not_the_head(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = sealed(store)
    record(recorder, 1)
    (tmp_path / "trails.toml").write_text('[audit]\ntimestamp_url = "http://127.0.0.1:9/"\n')
    monkeypatch.chdir(tmp_path)
    checkpoint(recorder)
    head = read_head(store, LOG)
    assert head is not None and head.size >= 1 and not head.timestamp
    assert "was not time-stamped" in caplog.text


# -- the command line -----------------------------------------------------------------


def trails(cwd: Path, *args: str, store: Path | None = None) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).with_name("trails"))
    env = {**os.environ, "TRAILS_STORE": str(store or cwd / "store")}
    return subprocess.run(
        [exe, *args], capture_output=True, text=True, env=env, cwd=cwd, check=False
    )


def record_on_disk(folder: Path, n: int) -> list[IRI]:
    disk = open_store(folder / "store")
    set_default_store(disk)
    try:
        return record(sealed(disk), n)
    finally:
        disk.close()
        set_default_store(None)


@pytest.mark.usefixtures("store")
def test_prove_and_verify_a_proof_from_the_command_line(tmp_path: Path) -> None:
    sessions = record_on_disk(tmp_path, 3)
    done = trails(tmp_path, "head", "--out", "none.json")
    assert done.returncode == 2 and "no transparency log yet" in done.stderr
    assert trails(tmp_path, "verify").returncode == 0  # the checkpoint appends the seals
    done = trails(tmp_path, "head", "--out", "head1.json")
    assert done.returncode == 0 and "tree head of" in done.stdout, done.stderr
    sessions += record_on_disk(tmp_path, 2)
    done = trails(tmp_path, "prove", sessions[-1], "--out", "early.json")
    assert done.returncode == 2 and "not in the transparency log yet" in done.stderr
    assert trails(tmp_path, "verify").returncode == 0
    done = trails(tmp_path, "prove", sessions[1], "--out", "proof.json")
    assert done.returncode == 0, done.stderr
    assert trails(tmp_path, "export", "--session", sessions[1], "--out", "s.trig").returncode == 0

    # offline: the store named does not exist, and nothing is created there
    nowhere = tmp_path / "nowhere"
    done = trails(
        tmp_path, "verify", "--proof", "proof.json", "--session-file", "s.trig", store=nowhere
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "are leaves of the log" in done.stdout and "quad for quad" in done.stdout
    assert not nowhere.exists()

    trig = (tmp_path / "s.trig").read_text()
    (tmp_path / "s.trig").write_text(trig.replace('"run 1"', '"run 9"'))
    done = trails(
        tmp_path, "verify", "--proof", "proof.json", "--session-file", "s.trig", store=nowhere
    )
    assert done.returncode == 1 and "CONTENT-ALTERED" in done.stdout, done.stdout

    proof = json.loads((tmp_path / "proof.json").read_text())
    proof["seals"][0]["path"][0] = _flip_hex(proof["seals"][0]["path"][0])
    (tmp_path / "bad.json").write_text(json.dumps(proof))
    done = trails(tmp_path, "verify", "--proof", "bad.json", "--json", store=nowhere)
    report = json.loads(done.stdout)
    assert done.returncode == 1 and [f["kind"] for f in report["findings"]] == ["proof"]

    done = trails(tmp_path, "verify", "--since-head", "head1.json")
    assert done.returncode == 0 and "extends the head" in done.stdout, done.stdout
    done = trails(tmp_path, "verify", "--since-head", "head1.json", "--expect-head", "0" * 64)
    assert done.returncode == 1  # --expect-head still works beside it

    done = trails(tmp_path, "verify", "--proof", "missing.json", store=nowhere)
    assert done.returncode == 2 and "cannot read the proof" in done.stderr
    assert "Traceback" not in done.stderr
    done = trails(tmp_path, "verify", "--session-file", "s.trig")
    assert done.returncode == 2 and "--session-file goes with --proof" in done.stderr


@pytest.mark.allow_nonconforming  # the log is removed on purpose
def test_a_removed_log_is_a_finding_of_plain_and_quick_verification(store: Store) -> None:
    """The checkpoint's hash covers the size and root of the log written with it: the log's
    graph dropped (or cut) afterwards is a finding without any kept head."""
    recorder = sealed(store)
    record(recorder, 3)
    checkpoint(recorder)
    kept = read_checkpoint(store, LEDGER)
    assert kept is not None and kept.log is not None and kept.log[0] == 3
    assert verify(store).ok and verify(store, quick=True).ok
    store.clear(LOG)
    for report in (verify(store), verify(store, quick=True)):
        found = [f for f in report.findings if f.kind == "log"]
        assert found and "removed" in found[0].detail, report.findings


@pytest.mark.allow_nonconforming  # an older checkpoint rewritten on purpose
def test_a_checkpoint_written_before_the_log_existed_asks_for_no_log(store: Store) -> None:
    """A checkpoint without the log line (an older store) is intact and needs no log."""
    recorder = sealed(store)
    record(recorder, 2)
    checkpoint(recorder)
    old = read_checkpoint(store, LEDGER)
    assert old is not None
    # the older form: no log fields, its hash recomputed without them
    store.clear(LOG)
    rows = store.query(
        "SELECT ?p ?o $s $g WHERE { GRAPH $g { $s ?p ?o } }", {"s": old.iri, "g": LEDGER}
    )
    assert isinstance(rows, Solutions)
    gone = (T.logSize, T.logRoot, T.checkpointHash)
    store.write(
        [],
        remove=[Quad(old.iri, r["p"], r["o"], LEDGER) for r in rows if r["p"] in gone],  # type: ignore[arg-type]
    )
    old.log = None
    store.write([Quad(old.iri, T.checkpointHash, Literal(sha256_hex(old.message())), LEDGER)])
    again = read_checkpoint(store, LEDGER)
    assert again is not None and again.intact() and again.log is None
    assert not [f for f in verify(store).findings if f.kind == "log"]
