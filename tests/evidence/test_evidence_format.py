"""docs/evidence-format.md is enough to verify trails' evidence.

The first half of this file is a verifier written from that document alone (hashlib,
base64 and the ``cryptography`` package's Ed25519; nothing of trails): leaf and node
hashes, roots, inclusion and consistency proofs, seals and C2SP checkpoints. It checks the
document's own vectors, then real proofs, consistency proofs and checkpoints that the
``trails`` CLI wrote from a real store. The last test holds trails' code to the vectors,
so the document cannot drift from what trails writes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from tests.evidence.test_checkpoint_note import _keys
from tests.evidence.test_transparency import record_on_disk, trails

DOC = (Path(__file__).parents[2] / "docs" / "evidence-format.md").read_text(encoding="utf-8")


def vector(label: str) -> str:
    """The value after ``label:`` on a line of the document's vectors."""
    match = re.search(rf"^{re.escape(label)}: (.+)$", DOC, re.MULTILINE)
    assert match, label
    return match.group(1).strip()


def block_after(text: str) -> str:
    """The fenced block that starts with ``text`` (with its line feeds)."""
    match = re.search(rf"```text\n({re.escape(text)}.*?)```", DOC, re.DOTALL)
    assert match, text
    return match.group(1)


# -- the verifier, from the document ----------------------------------------------------


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def leaf_hash(data: bytes) -> bytes:  # section 5
    return sha256(b"\x00" + data)


def node(left: bytes, right: bytes) -> bytes:
    return sha256(b"\x01" + left + right)


def leaf_data(seal: str, seal_hash: str) -> bytes:
    return f"trails-log-leaf/1\nseal={seal}\nseal-hash={seal_hash}\n".encode()


def mth(leaves: list[bytes]) -> bytes:
    if not leaves:
        return sha256(b"")
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return node(mth(leaves[:k]), mth(leaves[k:]))


def included(leaf: bytes, index: int, size: int, path: list[bytes], root: bytes) -> bool:
    """Section 6, step by step."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            r = node(p, r)
            if fn % 2 == 0:
                while fn % 2 == 0 and fn != 0:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root


def consistent(m: int, n: int, old: bytes, new: bytes, proof: list[bytes]) -> bool:
    """Section 7, step by step."""
    if m == n:
        return not proof and old == new
    if m == 0:
        return not proof
    if not proof:
        return False
    path = list(proof)
    if m & (m - 1) == 0:
        path.insert(0, old)
    fn, sn = m - 1, n - 1
    while fn % 2 == 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            fr, sr = node(c, fr), node(c, sr)
            if fn % 2 == 0:
                while fn % 2 == 0 and fn != 0:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == old and sr == new and sn == 0


def seal_hash(seal: dict[str, object]) -> str:
    """Section 3, from the fields of a proof file's seal."""
    anchors = ",".join(sorted(seal["anchor_hashes"]))  # type: ignore[arg-type]
    message = (
        f"trails-seal/2\nchain={seal['chain']}\nsequence={seal['sequence']}\n"
        f"graph={seal['graph']}\ngraph-hash={seal['graph_hash']}\nquads={seal['quads']}\n"
        f"time={seal['time']}\nprevious={seal['previous_hash']}\nanchors={anchors}\n"
        f"revision-of={seal['revision_of'] or ''}\nkey={seal['key'] or ''}\n"
    )
    return hashlib.sha256(message.encode()).hexdigest()


def verify_ed25519(public: bytes, signature: bytes, message: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except InvalidSignature:
        return False
    return True


def open_checkpoint(note: str, name: str, public: bytes) -> tuple[str, int, bytes]:
    """Section 9: (origin, size, root) when a line of ``name`` and its key ID verifies."""
    cut = note.rfind("\n\n")
    text, lines = note[: cut + 1], note[cut + 2 :].splitlines()
    key_id = sha256(name.encode() + b"\x0a\x01" + public)[:4]
    ok = False
    for line in lines:
        assert line.startswith("\u2014 ")
        line_name, b64 = line[2:].split(" ")
        blob = base64.b64decode(b64)
        if line_name == name and blob[:4] == key_id:
            ok = verify_ed25519(public, blob[4:], text.encode())
            if not ok:
                break
    assert ok, "no valid signature by the key"
    origin, size, root = text.splitlines()[:3]
    return origin, int(size), base64.b64decode(root)


# -- the document's vectors --------------------------------------------------------------

PUBLIC = bytes.fromhex(vector("public key"))


def _leaves() -> list[bytes]:
    out = []
    for i in range(5):
        m = re.search(rf"^leaf {i}: seal (\S+) hash (\S+) leaf (\S+)$", DOC, re.MULTILINE)
        assert m
        assert leaf_hash(leaf_data(m[1], m[2])).hex() == m[3]
        assert m[2] == hashlib.sha256(f"seal {i + 1}".encode()).hexdigest()
        out.append(bytes.fromhex(m[3]))
    return out


def test_the_documents_vectors_hold_for_a_verifier_written_from_it() -> None:
    lines = block_after("<urn:example:session> <http://www.w3.org/2000/01/rdf-schema#label>")
    assert hashlib.sha256(lines.encode()).hexdigest() == vector("graph hash")
    assert lines.count("\n") == int(vector("quads"))
    assert hashlib.sha256(b"Refund order 1234").hexdigest() == vector('content "Refund order 1234"')
    canonical = json.dumps({"b": 1, "a": "é"}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)  # fmt: skip
    label = 'arguments {"b": 1, "a": "é"} (canonical {"a":"é","b":1})'
    assert hashlib.sha256(canonical.encode()).hexdigest() == vector(label)

    seal = block_after("trails-seal/2\nchain=urn:trails:graph:ledger:chain:w1")
    digest = hashlib.sha256(seal.encode()).hexdigest()
    assert digest == vector("seal hash")
    signature = base64.b64decode(vector("seal signature"))
    assert verify_ed25519(PUBLIC, signature, digest.encode("ascii"))
    checkpoint = block_after("trails-verify-checkpoint/1\ntime=2026-01-02T03:05:00Z")
    assert hashlib.sha256(checkpoint.encode()).hexdigest() == vector("checkpoint hash")

    leaves = _leaves()
    for n in range(1, 6):
        assert mth(leaves[:n]).hex() == vector(f"root {n}")
    root5, root3 = bytes.fromhex(vector("root 5")), bytes.fromhex(vector("root 3"))
    path = [bytes.fromhex(h) for h in vector("inclusion of leaf 2 in 5").split()]
    assert included(leaves[2], 2, 5, path, root5)
    assert not included(leaves[3], 2, 5, path, root5)
    proof = [bytes.fromhex(h) for h in vector("consistency from 3 to 5").split()]
    assert consistent(3, 5, root3, root5, proof)
    assert not consistent(3, 5, bytes.fromhex(vector("root 2")), root5, proof)

    head = block_after("trails-tree-head/1\nlog=urn:trails:graph:transparency")
    head_hash = hashlib.sha256(head.encode()).hexdigest()
    assert head_hash == vector("head hash")
    signature = base64.b64decode(vector("head signature"))
    assert verify_ed25519(PUBLIC, signature, head_hash.encode("ascii"))

    note = block_after("example.org/trails/audit\n5")
    assert open_checkpoint(note, "example.org/trails/audit", PUBLIC) == (
        "example.org/trails/audit",
        5,
        root5,
    )
    key_id = sha256(b"example.org/trails/audit\n\x01" + PUBLIC)[:4]
    vkey = f"example.org/trails/audit+{key_id.hex()}+" + base64.b64encode(b"\x01" + PUBLIC).decode()
    assert vkey == vector("verifier key")


@pytest.mark.usefixtures("store")
def test_real_proofs_from_a_real_store_hold_for_the_documents_verifier(tmp_path: Path) -> None:
    _, public = _keys(tmp_path, origin="example.org/trails/audit")
    sessions = record_on_disk(tmp_path, 3)
    assert trails(tmp_path, "verify").returncode == 0
    assert trails(tmp_path, "head", "--out", "old.checkpoint").returncode == 0
    sessions += record_on_disk(tmp_path, 4)
    assert trails(tmp_path, "verify").returncode == 0
    assert trails(tmp_path, "prove", sessions[4], "--out", "proof.json").returncode == 0
    done = trails(tmp_path, "head", "--from", "3", "--out", "add-checkpoint.txt")
    assert done.returncode == 0, done.stderr

    name = "example.org/trails/audit"
    old_origin, old_size, old_root = open_checkpoint(
        (tmp_path / "old.checkpoint").read_text(), name, public
    )
    body = (tmp_path / "add-checkpoint.txt").read_text()
    header, _, note = body.partition("\n\n")
    origin, size, root = open_checkpoint(note, name, public)
    assert (old_origin, origin, old_size, size) == (name, name, 3, 7)
    old_line, *hashes = header.split("\n")
    assert old_line == "old 3"
    assert consistent(3, 7, old_root, root, [base64.b64decode(h) for h in hashes])
    assert not consistent(3, 7, sha256(b"another"), root, [base64.b64decode(h) for h in hashes])

    proof = json.loads((tmp_path / "proof.json").read_text())
    head = proof["head"]
    assert head["size"] == size and bytes.fromhex(head["root"]) == root
    assert head["checkpoint"] == note
    for entry in proof["seals"]:
        seal = entry["seal"]
        assert seal_hash(seal) == seal["hash"]
        leaf = leaf_hash(leaf_data(seal["seal"], seal["hash"]))
        path = [bytes.fromhex(h) for h in entry["path"]]
        assert included(leaf, entry["index"], size, path, root)
        assert not included(leaf, entry["index"] ^ 1, size, path, root)

    done = trails(tmp_path, "head", "--from", "9", "--out", "x.txt")
    assert done.returncode == 2 and "no consistency proof from 9" in done.stderr


def test_trails_writes_the_documents_vectors() -> None:
    from trails.evidence.canonical import canonical_lines, digest_lines
    from trails.evidence.checkpoint import checkpoint_message
    from trails.evidence.ledger import SealRecord
    from trails.evidence.merkle import consistency_proof, from_leaves, inclusion_proof, root
    from trails.evidence.note import Checkpoint, SignedNote, sign_line, vkey
    from trails.evidence.proofs import head_message
    from trails.prov.content import json_sha256
    from trails.store.terms import IRI, Literal

    key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(vector("secret key")))
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    assert public == PUBLIC and base64.b64encode(public).decode() == vector("public key base64")
    g, label = IRI("urn:example:session"), IRI("http://www.w3.org/2000/01/rdf-schema#label")
    started = IRI("http://www.w3.org/ns/prov#startedAtTime")
    when = Literal("2026-01-02T03:04:05.100Z",
                   datatype=IRI("http://www.w3.org/2001/XMLSchema#dateTime"))  # fmt: skip
    lines = canonical_lines([(g, label, Literal('a "refund"\tline')), (g, started, when)], g,
                            version=2)  # fmt: skip
    assert digest_lines(lines) == (vector("graph hash"), 2)
    assert json_sha256('{"b": 1, "a": "é"}') == vector(
        'arguments {"b": 1, "a": "é"} (canonical {"a":"é","b":1})'
    )
    seal = SealRecord(
        iri=IRI("urn:trails:graph:ledger:seal:w1:1"), sequence=1, graph=g,
        graph_hash=vector("graph hash"), quad_count=2, at="2026-01-02T03:04:06.5Z",
        previous_hash="0" * 64, seal_hash="", chain=IRI("urn:trails:graph:ledger:chain:w1"),
        signing_key=vector("public key base64"),
    )  # fmt: skip
    assert seal.recomputed_hash() == vector("seal hash")
    assert base64.b64encode(key.sign(vector("seal hash").encode())).decode() == vector(
        "seal signature"
    )
    leaves = _leaves()
    tree = from_leaves(leaves)
    r5 = root(tree, 5)
    assert r5.hex() == vector("root 5")
    assert " ".join(p.hex() for p in inclusion_proof(tree, 2, 5)) == vector(
        "inclusion of leaf 2 in 5"
    )
    assert " ".join(p.hex() for p in consistency_proof(tree, 3, 5)) == vector(
        "consistency from 3 to 5"
    )
    tip = [("urn:trails:graph:ledger:seal:w1:5", hashlib.sha256(b"seal 5").hexdigest())]
    message = checkpoint_message("2026-01-02T03:05:00Z", "full", seals=5, graphs=5,
                                 verified=tip, previous="0" * 64, log=(5, r5.hex()))  # fmt: skip
    assert hashlib.sha256(message).hexdigest() == vector("checkpoint hash")
    head = head_message("urn:trails:graph:transparency", 5, r5.hex(), "2026-01-02T03:05:00Z",
                        vector("public key base64"))  # fmt: skip
    assert hashlib.sha256(head).hexdigest() == vector("head hash")
    body = Checkpoint("example.org/trails/audit", 5, r5).text()
    note = SignedNote(body, (sign_line(body, "example.org/trails/audit", key),))
    assert str(note) == block_after("example.org/trails/audit\n5")
    assert vkey("example.org/trails/audit", public) == vector("verifier key")
