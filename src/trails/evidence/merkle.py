"""RFC 9162 Merkle tree hashing and proofs: the arithmetic under the transparency log.

The transparency log (``trails.evidence.transparency``) keeps its tree in the store;
this module only computes. A leaf hash is ``SHA-256(0x00 || leaf)``, a node hash
``SHA-256(0x01 || left || right)``, and the tree over ``n`` leaves splits at the
largest power of two below ``n`` (RFC 9162, section 2.1.1), so a tree head commits
to every leaf in order and grows only by appending.

Proofs are built from a ``Subtrees`` function that returns the hash of any *perfect*
subtree (``2**level`` leaves starting at ``index * 2**level``): those never change once
complete, so the log stores them and a proof reads O(log n) of them. Verification
follows RFC 9162 sections 2.1.3.2 (inclusion) and 2.1.4.2 (consistency) and needs
nothing but the proof, the leaf and the tree heads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

__all__ = [
    "Subtrees",
    "consistency_proof",
    "empty_root",
    "from_leaves",
    "inclusion_proof",
    "leaf_hash",
    "node_hash",
    "root",
    "verify_consistency",
    "verify_inclusion",
]

Subtrees = Callable[[int, int], bytes]
"""``subtree(level, index)``: the hash of the perfect subtree of ``2**level`` leaves
starting at leaf ``index * 2**level`` (level 0: a leaf hash)."""


def leaf_hash(data: bytes) -> bytes:
    """``SHA-256(0x00 || data)``."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """``SHA-256(0x01 || left || right)``."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def empty_root() -> bytes:
    """The root of the empty tree: ``SHA-256()`` of nothing."""
    return hashlib.sha256(b"").digest()


def _split(n: int) -> int:
    """The largest power of two strictly below ``n`` (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def _mth(subtree: Subtrees, start: int, end: int) -> bytes:
    """The Merkle tree hash of leaves ``start..end-1`` (``start`` aligned as RFC 9162's
    recursion leaves it: a multiple of a power of two at least ``end - start``)."""
    n = end - start
    if n & (n - 1) == 0:
        level = n.bit_length() - 1
        return subtree(level, start >> level)
    k = _split(n)
    return node_hash(subtree((k.bit_length() - 1), start // k), _mth(subtree, start + k, end))


def root(subtree: Subtrees, size: int) -> bytes:
    """The root hash of the first ``size`` leaves."""
    return empty_root() if size == 0 else _mth(subtree, 0, size)


def inclusion_proof(subtree: Subtrees, index: int, size: int) -> list[bytes]:
    """The audit path of leaf ``index`` in the tree of ``size`` leaves (RFC 9162 PATH).

    Raises:
        ValueError: ``index`` is not a leaf of that tree.
    """
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size} leaves")
    path: list[bytes] = []
    start, end, m = 0, size, index
    while end - start > 1:
        k = _split(end - start)
        if m < k:
            path.append(_mth(subtree, start + k, end))
            end = start + k
        else:
            path.append(_mth(subtree, start, start + k))
            start, m = start + k, m - k
    path.reverse()
    return path


def consistency_proof(subtree: Subtrees, old: int, new: int) -> list[bytes]:
    """The proof that the tree of ``new`` leaves extends that of ``old`` (RFC 9162 PROOF).

    Raises:
        ValueError: ``old`` is not between 0 and ``new``.
    """
    if not 0 <= old <= new:
        raise ValueError(f"no consistency proof from {old} to {new} leaves")
    if old in (0, new):
        return []
    proof: list[bytes] = []
    start, end, m, whole = 0, new, old, True
    while m != end - start:
        k = _split(end - start)
        if m <= k:
            proof.append(_mth(subtree, start + k, end))
            end = start + k
        else:
            proof.append(_mth(subtree, start, start + k))
            start, m, whole = start + k, m - k, False
    if not whole:
        proof.append(_mth(subtree, start, end))
    proof.reverse()
    return proof


def from_leaves(leaves: Sequence[bytes]) -> Subtrees:
    """A ``Subtrees`` over leaf hashes held in memory (for tests and small trees)."""

    def subtree(level: int, index: int) -> bytes:
        if level == 0:
            return leaves[index]
        return node_hash(subtree(level - 1, 2 * index), subtree(level - 1, 2 * index + 1))

    return subtree


def verify_inclusion(
    leaf: bytes, index: int, size: int, path: Sequence[bytes], root_hash: bytes
) -> bool:
    """Whether ``path`` proves that ``leaf`` (a leaf hash) is leaf ``index`` of the tree of
    ``size`` leaves whose root is ``root_hash`` (RFC 9162, 2.1.3.2)."""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root_hash


def verify_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """Whether ``proof`` proves that the tree of ``new`` leaves with root ``new_root``
    extends the tree of ``old`` leaves with root ``old_root`` (RFC 9162, 2.1.4.2)."""
    if not 0 <= old <= new:
        return False
    if old == new:
        return not proof and old_root == new_root
    if old == 0:
        return not proof and old_root == empty_root()
    if not proof:
        return False
    path = list(proof)
    if old & (old - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == old_root and sr == new_root and sn == 0
