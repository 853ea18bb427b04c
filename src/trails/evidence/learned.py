"""Memories against what their sealed learning session says was learned.

Memory graphs are not sealed (many sessions write one, and memories are forgotten and
superseded there), so a memory's text rewritten together with its ``trails:sha256`` would
still agree with itself. The session that learned the memory keeps, in its *sealed* graph,
the digest of the text it learned (``trails:learnedSha256`` on the memory: the text only,
not its topic or tags). ``check_learned`` compares the two for every memory a sealed,
intact session learned:

- ``content-altered``: the memory graph's digest is not the one its session sealed (the
  value itself is checked against the memory graph's digest by ``trails.evidence.content``);
- ``content-missing``: the memory graph no longer holds the memory's digest, and no sealed
  erasure receipt names the memory;
- a memory whose digest a sealed erasure receipt accounts for is counted against that
  receipt (``ContentTally.accounted``), never a finding.

Memories learned before the learned digest was recorded have none: only their text against
the memory graph's digest is checked. Every memory that looks wrong is read again, by
itself, before it is reported, so a store written to while it is verified gives no false
finding.

``check_learned_by`` is the same check for the memories some sessions learned, read by
index (``trails verify --session`` for that session, ``--quick`` for the sessions sealed
since the checkpoint): since those modes do not read the memory graphs' content, each such
memory's text is hashed too and compared with the digest its session sealed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from trails.evidence.content import Accounts, ContentTally, read_accounts
from trails.evidence.findings import CONTENT_ALTERED, CONTENT_MISSING, Finding
from trails.prov.content import content_graph, sha256_hex
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal

__all__ = ["check_learned", "check_learned_by"]

_LEARNED = f"""
SELECT ?session ?m ?learned ?d WHERE {{
  GRAPH ?session {{ ?m {T.learnedSha256.n3()} ?learned }}
  OPTIONAL {{ GRAPH ?g {{ ?m a {T.Memory.n3()} ; {T.sha256.n3()} ?d }} }}
}}
"""

_DIGESTS_OF = f"""
SELECT ?d $m WHERE {{ GRAPH ?g {{ $m a {T.Memory.n3()} ; {T.sha256.n3()} ?d }} }}
"""


_LEARNED_IN = f"""
SELECT ?m ?learned $session WHERE {{ GRAPH $session {{ ?m {T.learnedSha256.n3()} ?learned }} }}
"""

_MEMORY_GRAPHS = f"""
SELECT ?g ?d $m WHERE {{ GRAPH ?g {{ $m a {T.Memory.n3()} . OPTIONAL {{ $m {T.sha256.n3()} ?d }} }} }}
"""

_TEXTS = f"""
SELECT ?v $m $c WHERE {{ GRAPH $c {{ $m {PROV.value.n3()} ?v }} }}
"""


def _digests(store: Store, memory: str) -> set[str]:
    result = store.query(_DIGESTS_OF, {"m": IRI.trusted(memory)})
    assert isinstance(result, Solutions)
    return {d.value for row in result if isinstance(d := row.get("d"), Literal)}


def check_learned(
    store: Store,
    trusted: Callable[[str], bool],
    accounts: Accounts,
    findings: list[Finding],
    tally: ContentTally,
) -> int:
    """Compare each memory's digest with the one its sealed learning session recorded.

    Args:
        store: the store (read once for every memory, then once per memory that looks
            wrong).
        trusted: whether a session graph is sealed and matches its seal (only such a
            session's learned digests are evidence).
        accounts: the receipts of removed content (a memory a sealed erasure names is
            accounted for).
        findings: where findings go (a memory a content finding already names is not
            reported twice).
        tally: the content tally (memories accounted for by a receipt are counted there).

    Returns:
        How many memories were compared with their learned digest.
    """
    result = store.query(_LEARNED)
    assert isinstance(result, Solutions)
    learned: dict[str, tuple[str, str]] = {}
    present: dict[str, set[str]] = defaultdict(set)
    for row in result:
        graph, entity, sealed = row.get("session"), row.get("m"), row.get("learned")
        if not isinstance(sealed, Literal) or not trusted(str(graph)):
            continue
        learned[str(entity)] = (str(graph), sealed.value)
        if isinstance(kept := row.get("d"), Literal):
            present[str(entity)].add(kept.value)
    named = {f.subject for f in findings if f.kind.startswith("content-")}
    for memory, (session, digest) in sorted(learned.items()):
        if present.get(memory) == {digest} or memory in named:
            continue
        now = _digests(store, memory)  # read again: what looks wrong must still be so
        if now == {digest}:
            continue
        if now:
            other = sorted(now - {digest}) or sorted(now)
            findings.append(
                Finding(
                    CONTENT_ALTERED,
                    memory,
                    f"its memory graph's digest {other[0][:16]}… is not the digest "
                    f"{digest[:16]}… its learning session sealed",
                    session=session,
                )
            )
            continue
        receipt = _receipt(accounts, memory)
        if receipt is not None:
            key = (session, receipt)
            tally.accounted[key] = tally.accounted.get(key, 0) + 1
            continue
        findings.append(
            Finding(
                CONTENT_MISSING,
                memory,
                f"its learning session sealed the digest {digest[:16]}…, and the memory is "
                "gone from its memory graph with no sealed erasure receipt naming it",
                session=session,
            )
        )
    return len(learned)


def _receipt(accounts: Accounts, memory: str) -> str | None:
    """The sealed erasure receipt naming ``memory`` (one sealed since it was read too)."""
    erased = accounts.erased.get(memory)
    if erased is not None:
        return erased[0].iri
    pending = accounts.pending.get(memory)
    if pending is not None and accounts.recheck is not None and accounts.recheck(pending.graph):
        return pending.iri
    return None


def check_learned_by(
    store: Store,
    sessions: Iterable[IRI],
    is_sealed: Callable[[str], bool],
    findings: list[Finding],
    tally: ContentTally,
) -> int:
    """Each memory that ``sessions`` learned against the digest the session sealed: the
    memory graph's digest and the memory's text (a session mode and the quick mode read
    neither otherwise).

    Args:
        store: the store (read by index: a few reads per memory).
        sessions: sealed session graphs that match their seals (only their learned
            digests are evidence).
        is_sealed: whether a graph is sealed (an erasure receipt counts only if it is;
            the receipts are read only when a memory is gone).
        findings: where findings go (a memory a finding already names is not reported
            twice).
        tally: the content tally (memories accounted for by a receipt are counted there).

    Returns:
        How many memories were compared with their learned digest.
    """
    named = {f.subject for f in findings if f.kind.startswith("content-")}
    accounts: list[Accounts] = []

    def receipt(memory: str) -> str | None:
        if not accounts:
            accounts.append(read_accounts(store, is_sealed))
        return _receipt(accounts[0], memory)

    compared = 0
    for session in sorted(set(sessions)):
        result = store.query(_LEARNED_IN, {"session": session})
        assert isinstance(result, Solutions)
        learned = {
            str(row["m"]): sealed.value
            for row in result
            if isinstance(sealed := row.get("learned"), Literal)
        }
        for memory, digest in sorted(learned.items()):
            compared += 1
            if memory in named:
                continue
            finding = _against_learned(store, str(session), memory, digest, receipt, tally)
            if finding is not None:
                findings.append(finding)
                named.add(memory)
    return compared


def _against_learned(
    store: Store,
    session: str,
    memory: str,
    digest: str,
    receipt: Callable[[str], str | None],
    tally: ContentTally,
) -> Finding | None:
    """What is wrong with one memory against the digest its session sealed, if anything."""
    graphs = store.query(_MEMORY_GRAPHS, {"m": IRI.trusted(memory)})
    assert isinstance(graphs, Solutions)
    kept = {d.value for row in graphs if isinstance(d := row.get("d"), Literal)}
    homes = sorted({str(row["g"]) for row in graphs})
    texts: list[str] = []
    for home in homes:
        values = store.query(
            _TEXTS, {"m": IRI.trusted(memory), "c": content_graph(IRI.trusted(home))}
        )
        assert isinstance(values, Solutions)
        texts.extend(v.value for row in values if isinstance(v := row.get("v"), Literal))
    if kept and kept != {digest}:
        other = sorted(kept - {digest}) or sorted(kept)
        return Finding(
            CONTENT_ALTERED,
            memory,
            f"its memory graph's digest {other[0][:16]}… is not the digest "
            f"{digest[:16]}… its learning session sealed",
            session=session,
        )
    for text in texts:
        if sha256_hex(text) != digest:
            return Finding(
                CONTENT_ALTERED,
                memory,
                f"its text hashes to {sha256_hex(text)[:16]}…, not the digest "
                f"{digest[:16]}… its learning session sealed",
                session=session,
            )
    if kept and texts:
        return None
    erasure = receipt(memory)
    if erasure is not None:
        key = (session, erasure)
        tally.accounted[key] = tally.accounted.get(key, 0) + 1
        return None
    gone = "its text" if kept else "the memory"
    return Finding(
        CONTENT_MISSING,
        memory,
        f"its learning session sealed the digest {digest[:16]}…, and {gone} is gone "
        "from its memory graph with no sealed erasure receipt naming it",
        session=session,
    )
