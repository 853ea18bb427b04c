"""RFC 9162 hashing and proofs (``trails.evidence.merkle``) against an independent tree.

pymerkle (its RFC 9162 mode: 0x00/0x01 prefixes, SHA-256) is the oracle: the same
leaves must give the same roots and the same audit paths. Then every proof verifies,
and every proof altered the ways an attacker would alter one is rejected.
"""

from __future__ import annotations

import pytest
from pymerkle import InmemoryTree

from trails.evidence.merkle import (
    consistency_proof,
    empty_root,
    from_leaves,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root,
    verify_consistency,
    verify_inclusion,
)

SIZES = 70


def _trees(n: int) -> tuple[InmemoryTree, list[bytes]]:
    oracle = InmemoryTree(algorithm="sha256")
    leaves = []
    for i in range(n):
        data = f"seal {i}".encode()
        oracle.append_entry(data)
        leaves.append(leaf_hash(data))
    return oracle, leaves


def test_hashes_are_rfc_9162s() -> None:
    import hashlib

    assert leaf_hash(b"x") == hashlib.sha256(b"\x00x").digest()
    assert node_hash(b"l", b"r") == hashlib.sha256(b"\x01lr").digest()
    assert empty_root() == hashlib.sha256(b"").digest()
    # the published RFC 6962/9162 root of the empty tree
    assert empty_root().hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_roots_and_audit_paths_equal_an_independent_implementation() -> None:
    oracle, leaves = _trees(SIZES)
    subtrees = from_leaves(leaves)
    for n in range(1, SIZES + 1):
        assert root(subtrees, n) == oracle.get_root(n), n
        for m in range(n):
            path = inclusion_proof(subtrees, m, n)
            theirs = oracle.prove_inclusion(m + 1, n).path  # the leaf itself, then its path
            assert theirs[0] == leaves[m] and path == theirs[1:], (m, n)
            assert verify_inclusion(leaves[m], m, n, path, root(subtrees, n))


def test_every_consistency_proof_verifies_against_the_independent_roots() -> None:
    oracle, leaves = _trees(40)
    subtrees = from_leaves(leaves)
    for new in range(1, 41):
        for old in range(new + 1):
            proof = consistency_proof(subtrees, old, new)
            old_root = oracle.get_root(old) if old else empty_root()
            assert verify_consistency(old, new, old_root, oracle.get_root(new), proof), (old, new)


def _flip(h: bytes) -> bytes:
    return bytes([h[0] ^ 1]) + h[1:]


@pytest.mark.parametrize("n", [2, 5, 8, 13, 33])
def test_each_wrong_inclusion_proof_is_rejected(n: int) -> None:
    """A wrong size is a size with its own root (a head of another size): the size alone
    only steers the path, and the signed tree head binds it to its root (the head's
    hash covers both; ``test_transparency`` edits a head's size in a proof file)."""
    _, leaves = _trees(n + 1)
    subtrees = from_leaves(leaves)
    top, bigger = root(subtrees, n), root(subtrees, n + 1)
    for m in range(n):
        path = inclusion_proof(subtrees, m, n)
        for i in range(len(path)):  # one sibling flipped
            bad = [*path[:i], _flip(path[i]), *path[i + 1 :]]
            assert not verify_inclusion(leaves[m], m, n, bad, top)
        assert not verify_inclusion(leaves[m], m, n + 1, path, bigger)  # wrong size
        if m < n - 1:
            smaller = root(subtrees, n - 1)
            assert not verify_inclusion(leaves[m], m, n - 1, path, smaller)
        assert not verify_inclusion(leaves[m], m, n, path, _flip(top))  # wrong root
        assert not verify_inclusion(_flip(leaves[m]), m, n, path, top)  # another leaf
        assert not verify_inclusion(leaves[m], m, n, path[:-1], top)  # truncated
        assert not verify_inclusion(leaves[m], m, n, [*path, path[-1]], top)  # padded
        assert not verify_inclusion(leaves[m], n, n, path, top)  # out of the tree
        if n > 1:
            other = (m + 1) % n
            assert not verify_inclusion(leaves[m], other, n, path, top)  # wrong index


def test_a_rewritten_old_leaf_fails_the_consistency_proof() -> None:
    _, leaves = _trees(20)
    old = from_leaves(leaves[:11])
    old_root = root(old, 11)
    rewritten = list(leaves)
    rewritten[4] = leaf_hash(b"a seal rewritten after the head was kept")
    new = from_leaves(rewritten)
    proof = consistency_proof(new, 11, 20)
    assert not verify_consistency(11, 20, old_root, root(new, 20), proof)
    honest = from_leaves(leaves)
    assert verify_consistency(11, 20, old_root, root(honest, 20), consistency_proof(honest, 11, 20))


def test_a_truncated_log_fails_against_an_older_head() -> None:
    _, leaves = _trees(20)
    subtrees = from_leaves(leaves)
    head_root = root(subtrees, 12)
    # cut to 8 leaves: no proof can take a 12-leaf head to a smaller tree
    assert not verify_consistency(12, 8, head_root, root(subtrees, 8), [])
    with pytest.raises(ValueError):
        consistency_proof(subtrees, 12, 8)
    # cut and regrown to 12 other leaves: same size, another root
    regrown = from_leaves([*leaves[:8], *(leaf_hash(b"new %d" % i) for i in range(4))])
    assert not verify_consistency(12, 12, head_root, root(regrown, 12), [])


@pytest.mark.parametrize(("old", "new"), [(1, 2), (3, 7), (4, 8), (6, 13), (16, 33)])
def test_each_wrong_consistency_proof_is_rejected(old: int, new: int) -> None:
    _, leaves = _trees(new + 1)
    subtrees = from_leaves(leaves)
    a, b = root(subtrees, old), root(subtrees, new)
    proof = consistency_proof(subtrees, old, new)
    assert verify_consistency(old, new, a, b, proof)
    for i in range(len(proof)):
        bad = [*proof[:i], _flip(proof[i]), *proof[i + 1 :]]
        assert not verify_consistency(old, new, a, b, bad)
    assert not verify_consistency(old, new + 1, a, root(subtrees, new + 1), proof)  # wrong size
    assert not verify_consistency(old + 1, new, root(subtrees, old + 1), b, proof)
    assert not verify_consistency(old, new, _flip(a), b, proof)  # wrong old root
    assert not verify_consistency(old, new, a, _flip(b), proof)  # wrong new root
    assert not verify_consistency(old, new, a, b, proof[:-1])  # truncated
