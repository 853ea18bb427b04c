"""Erasure with a receipt: recorded content removed, structure, digests and seals kept.

Content lives apart from structure (``trails.prov.content``): a session's
prompts, completions, capability inputs and outputs, goals, answers and history,
and a memory's text, are quads of the *content graph* next to the graph they
belong to; the graph itself, which seals cover, keeps each value's sha256. So
erasing content never touches a sealed graph: every seal still verifies, and
each digest still proves what the content was to anyone who holds a copy.

``erase(recorder, principal=..., session=..., memory=..., digest=..., reason=..., by=...)``
removes the content chosen by data subject (every session of a principal and
the memories attributed to it), by session, by memory or by content digest,
and records a ``trails:Erasure`` activity in a receipt graph of its own
(``<base>graph:erasure/<uuid>``): who (``prov:wasAssociatedWith``), when, why
(``trails:erasureReason``), which sessions, memories and digests, and, in plain
PROV, each erased content entity ``prov:wasInvalidatedBy`` the erasure. The
receipt is written in the same atomic write as the removal it describes, and its
seal too (as a session's end and its seal are one write): an erasure killed at
any moment has either not happened or happened, recorded and sealed, so ``trails
verify`` checks it like any sealed graph. An erasure of more than ``batch``
values is written in batches (each whole or absent, the last one sealed): one
killed between two of them leaves a receipt without an end, which
``finish_erasures`` (``trails recover``, and the next ``erase`` on an embedded
store) closes as ``interrupted`` and seals, naming what it did remove; the same
erasure run again removes the rest. ``finish_erasures`` also seals a complete
receipt left without a seal (by a version of trails that sealed it in a second
write). Nothing left to erase writes no receipt; an erasure whose every value is
held raises ``ErasureBlocked``.

Held evidence is never erased: a session under an active legal hold
(``trails.compliance.holds``; directly or through its principal), and a memory whose
principal or learning session is held, is skipped, and the receipt names each
hold it respected (``trails:skippedHold``; ``ErasureReceipt.skipped`` with the
hold's reason).

Erased memory text must not live on in a cache either: the memory index of this
process is loaded again, the memory revision changes (so no snapshot taken before
is used), and the index snapshot beside an on-disk store is deleted.

On the embedded store the erased text must not survive in the store's files:
Oxigraph never prunes the strings of removed quads, so ``erase`` ends by
rewriting the store (``OxigraphStore.compact``). A SPARQL server's files are the
server's business: compact it with its own tools.

A store written before content was kept apart holds content in its sealed
graphs: ``erase`` refuses it (``UserError``) until ``trails migrate`` has moved it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from trails.compliance.holds import Hold, active_holds_for, list_holds
from trails.errors import UserError
from trails.evidence.content import content_entity
from trails.evidence.erasures import ErasureRecord, list_erasures
from trails.prov.builder import QuadBuilder
from trails.prov.content import CONTENT_DIGESTS, LEGACY_INLINE, content_graph, sha256_hex
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Quad, Term, to_python
from trails.text import check_text

if TYPE_CHECKING:
    from trails.evidence.seal import Sealer
    from trails.prov.recorder import Recorder

__all__ = [
    "BATCH",
    "ContentErased",
    "ErasureBlocked",
    "ErasureReceipt",
    "ErasureRecord",
    "FinishedErasure",
    "SkippedHold",
    "erase",
    "erasure_graph",
    "finish_erasures",
    "list_erasures",
]

BATCH = 2000
"""Content values removed per atomic write (each write carries its part of the receipt)."""

_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_VALUES = (
    "VALUES (?p ?dp) { "
    + " ".join(f"({p.n3()} {d.n3()})" for p, d in CONTENT_DIGESTS.items())
    + " }"
)

# content kinds that older stores kept in sealed structure (no digest): not a sign of a
# store that needs migrating (see docs/compliance.md for what they leave behind)
_LEGACY = ", ".join(p.n3() for p in sorted(LEGACY_INLINE))

_IS_SESSION = f"ASK {{ GRAPH $g {{ $g a {T.Session.n3()} }} }}"

_SESSIONS_OF = f"""
SELECT DISTINCT ?g $id WHERE {{
  GRAPH ?g {{ ?g a {T.Session.n3()} ; {PROV.wasAssociatedWith.n3()}/{T.principalId.n3()} $id }}
}}
"""

_MEMORIES_OF = f"""
SELECT ?m ?g $id WHERE {{
  GRAPH ?g {{ ?m a {T.Memory.n3()} ; {PROV.wasAttributedTo.n3()}/{T.principalId.n3()} $id }}
}}
"""

_MEMORY = f"""
SELECT ?g ?who ?learnedIn $m WHERE {{
  GRAPH ?g {{
    $m a {T.Memory.n3()} .
    OPTIONAL {{ $m {PROV.wasAttributedTo.n3()}/{T.principalId.n3()} ?who }}
    OPTIONAL {{ $m {PROV.wasGeneratedBy.n3()}/{T.inSession.n3()} ?learnedIn }}
  }}
}}
"""

_BY_DIGEST = f"""
SELECT ?g ?s ?p ?dp $d WHERE {{
  {_VALUES}
  GRAPH ?g {{ ?s ?dp $d }}
}}
"""

# What a graph's content graph holds, with the digests its structure keeps, and (the
# second branch) any content still in the graph itself: a store not yet migrated.
_CONTENT_OF = f"""
SELECT ?s ?p ?o ?d ?old $g $cg WHERE {{
  {{ {_VALUES} GRAPH $cg {{ ?s ?p ?o }} OPTIONAL {{ GRAPH $g {{ ?s ?dp ?d }} }} }}
  UNION
  {{ {_VALUES} GRAPH $g {{ ?s ?p ?o }} FILTER (?p NOT IN ({_LEGACY})) BIND(true AS ?old) }}
}}
"""

_ONE = """
SELECT ?o ?d $s $p $dp $g $cg WHERE {
  GRAPH $cg { $s $p ?o } OPTIONAL { GRAPH $g { $s $dp ?d } }
}
"""

_IN_GRAPH = "ASK { GRAPH $g { $s $p ?o } }"


def erasure_graph(minter: Minter, erasure_id: str) -> IRI:
    """The receipt graph of one erasure (``<base>graph:erasure/<id>``)."""
    return minter.graph(f"erasure/{erasure_id}")


@dataclass(frozen=True)
class SkippedHold:
    """Something an erasure left as it was because a legal hold covers it."""

    target: str
    """The session graph or memory IRI left untouched."""
    hold: Hold

    def __str__(self) -> str:
        return f"skipped {self.target}: held by {self.hold.describe()}"


class ErasureBlocked(UserError):
    """Nothing was erased because legal holds cover everything the erasure selected; no
    receipt was written. ``skipped`` names what each hold kept (``trails erase`` exits 3)."""

    def __init__(self, skipped: Sequence[SkippedHold]) -> None:
        self.skipped = tuple(skipped)
        holds = {s.hold.iri: s.hold for s in self.skipped}
        named = "; ".join(h.describe() for h in holds.values())
        super().__init__(
            f"nothing erased, no receipt written: what it selects is under legal hold: {named}"
        )


@dataclass(frozen=True)
class ErasureReceipt:
    """What ``erase`` did (and what its sealed receipt graph records).

    When nothing was left to erase (an erasure run again, a digest no value has)
    no receipt is written: ``erasure`` and ``graph`` are empty and ``erased`` is 0.
    """

    erasure: str
    """The ``trails:Erasure`` activity's IRI ("" when nothing was left to erase)."""
    graph: str
    """The receipt graph (sealed unless ``seal=False``; "" when none was written)."""
    seal: str | None
    by: str
    at: str
    reason: str
    sessions: tuple[str, ...]
    """Sessions whose content was removed (wholly or, by digest, in part)."""
    memories: tuple[str, ...]
    digests: tuple[str, ...]
    """The sha256 of every value removed (sorted, without repeats)."""
    erased: int
    """How many content values were removed."""
    skipped: tuple[SkippedHold, ...] = ()
    compacted: bool = False
    """Whether the store's files were rewritten without the removed text."""


class ContentErased(Event):
    """One atomic part of an erasure: its receipt quads (``session`` is the receipt graph).

    ``first`` carries who, why and the holds respected; ``last`` the end and the count.
    """

    activity: str
    by: str
    reason: str
    at: datetime
    first: bool = True
    last: bool = True
    ended: datetime | None = None
    count: int = 0
    principals: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    memories: tuple[str, ...] = ()
    items: tuple[tuple[str, str], ...] = ()
    """(erased content entity, its sha256)."""
    status: str | None = None
    """``interrupted`` for the end ``finish_erasures`` writes to a receipt cut short."""
    sealed: bool = False
    """The last part is sealed in its own write (``completes_graph``)."""

    @property
    def completes_graph(self) -> bool:
        return self.last and self.sealed

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        if self.first:
            b.activity(a, T.Erasure, self.at)
            b.label(a, "erasure of recorded content")
            b.add(a, PROV.wasAssociatedWith, b.agent(self.by))
            b.value(a, T.erasureReason, self.reason)
            for did in self.principals:
                b.add(a, T.erasedPrincipal, b.agent(did))
            for hold in self.skipped:
                b.add(a, T.skippedHold, IRI.trusted(hold))
        for s in self.sessions:
            b.add(a, T.erasedSession, IRI.trusted(s))
        for m in self.memories:
            b.add(a, T.erasedMemory, IRI.trusted(m))
        for entity, digest in self.items:
            e = IRI.trusted(entity)
            b.types(e, PROV.Entity)
            b.add(e, PROV.wasInvalidatedBy, a)
            b.value(e, PROV.invalidatedAtTime, self.at)
            b.value(e, T.sha256, digest)
            b.value(a, T.erasedDigest, digest)
        if self.last:
            b.value(a, PROV.endedAtTime, self.ended or self.at)
            b.value(a, T.erasedCount, self.count)
            b.value(a, T.status, self.status)


@dataclass
class _Removal:
    quad: Quad
    entity: str
    digest: str
    owner: str
    memory: bool


@dataclass
class _Plan:
    sessions: set[str] = field(default_factory=set)
    memories: dict[str, IRI] = field(default_factory=dict)
    hits: list[tuple[IRI, IRI, IRI, IRI]] = field(default_factory=list)
    skipped: list[SkippedHold] = field(default_factory=list)


def _names(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [v.strip() for v in items if v and v.strip()]


def _iri(text: str, what: str) -> IRI:
    try:
        return IRI(text)
    except (ValueError, UnicodeError):
        raise UserError(f"{text!r} is not an IRI (--{what} takes one)") from None


def _rows(store: Store, query: str, params: dict[str, Term]) -> Solutions:
    result = store.query(query, params)
    assert isinstance(result, Solutions)
    return result


def _text(term: Term | None) -> str | None:
    return term.value if isinstance(term, Literal) else None


def _plan(
    store: Store,
    minter: Minter,
    *,
    principals: list[str],
    sessions: list[str],
    memories: list[str],
    digests: list[str],
) -> _Plan:
    plan = _Plan()
    holds = list_holds(store, minter)
    for s in sessions:
        iri = _iri(s, "session")
        if not store.query(_IS_SESSION, {"g": iri}):
            raise UserError(f"{s} is not a session of this store")
        plan.sessions.add(str(iri))
    for did in principals:
        sessions_of = _rows(store, _SESSIONS_OF, {"id": Literal(did)})
        memories_of = _rows(store, _MEMORIES_OF, {"id": Literal(did)})
        if not len(sessions_of) and not len(memories_of):
            # a mistyped principal must not pass for an erasure: no receipt for nothing
            raise UserError(
                f"{did} has no session and no memory in this store: nothing erased, "
                "no receipt written"
            )
        plan.sessions.update(str(row["g"]) for row in sessions_of)
        for row in memories_of:
            plan.memories[str(row["m"])] = IRI.trusted(str(row["g"]))
    for m in memories:
        iri = _iri(m, "memory")
        found = _rows(store, _MEMORY, {"m": iri})
        if not len(found):
            raise UserError(f"{m} is not a memory of this store")
        plan.memories[str(iri)] = IRI.trusted(str(next(iter(found))["g"]))
    for d in digests:
        if not _DIGEST.match(d):
            raise UserError(f"{d!r} is not a sha256 digest (64 lower-case hexadecimal digits)")
        for row in _rows(store, _BY_DIGEST, {"d": Literal(d)}):
            g, s = IRI.trusted(str(row["g"])), IRI.trusted(str(row["s"]))
            plan.hits.append((g, s, IRI.trusted(str(row["p"])), IRI.trusted(str(row["dp"]))))
    # legal holds: nothing held is erased; each hold respected is named
    held: dict[str, list[Hold]] = {}

    def holds_on(session: str) -> list[Hold]:
        if session not in held:
            held[session] = active_holds_for(store, minter, IRI.trusted(session), holds=holds)
        return held[session]

    if holds:
        for s in sorted(plan.sessions):
            for hold in holds_on(s):
                plan.skipped.append(SkippedHold(s, hold))
            if held[s]:
                plan.sessions.discard(s)
        for m in sorted(plan.memories):
            covering = _memory_holds(store, IRI.trusted(m), holds, holds_on)
            plan.skipped += [SkippedHold(m, h) for h in covering]
            if covering:
                del plan.memories[m]
        kept = []
        for g, s, p, dp in plan.hits:
            covering = holds_on(str(g)) if store.query(_IS_SESSION, {"g": g}) else []
            if not covering and str(s) in _memories_in(store, g, s):
                covering = _memory_holds(store, s, holds, holds_on)
            plan.skipped += [SkippedHold(str(g), h) for h in covering]
            if not covering:
                kept.append((g, s, p, dp))
        plan.hits = kept
    return plan


def _memories_in(store: Store, graph: IRI, s: IRI) -> set[str]:
    found = _rows(store, _MEMORY, {"m": s})
    return {str(s)} if any(str(r["g"]) == str(graph) for r in found) else set()


def _memory_holds(
    store: Store, m: IRI, holds: list[Hold], holds_on: Callable[[str], list[Hold]]
) -> list[Hold]:
    """The holds covering memory ``m``: on its principal, or on the session it was learned in."""
    covering: list[Hold] = []
    for row in _rows(store, _MEMORY, {"m": m}):
        who, learned = _text(row.get("who")), row.get("learnedIn")
        covering += [h for h in holds if h.kind == "principal" and h.target == who]
        if learned is not None:
            covering += [h for h in holds_on(str(learned)) if h.kind == "session"]
    return list({h.iri: h for h in covering}.values())


def _refuse_unmigrated(graph: IRI) -> UserError:
    return UserError(
        f"{graph} holds its content inside the sealed graph (a store written before content "
        "was kept apart): run `trails migrate` first, then erase"
    )


def _removals(store: Store, plan: _Plan) -> list[_Removal]:
    out: list[_Removal] = []
    seen: set[tuple[str, str, str]] = set()

    def add(quad: Quad, digest: Term | None, owner: str, memory: bool) -> None:
        key = (str(quad.subject), str(quad.predicate), str(quad.graph))
        if key in seen or not isinstance(quad.object, Literal):
            return
        seen.add(key)
        d = _text(digest) or sha256_hex(quad.object.value)
        entity = str(content_entity(str(quad.subject), str(quad.predicate)))
        out.append(_Removal(quad, entity, d, owner, memory))

    for s in sorted(plan.sessions):
        g = IRI.trusted(s)
        cg = content_graph(g)
        for row in _rows(store, _CONTENT_OF, {"g": g, "cg": cg}):
            if row.get("old") is not None:
                raise _refuse_unmigrated(g)
            subject = IRI.trusted(str(row["s"]))
            quad = Quad(subject, IRI.trusted(str(row["p"])), row["o"], cg)
            add(quad, row.get("d"), s, False)
    for m, g in sorted(plan.memories.items()):
        cg = content_graph(g)
        for p, dp in CONTENT_DIGESTS.items():
            params: dict[str, Term] = {"s": IRI.trusted(m), "p": p, "dp": dp, "g": g, "cg": cg}
            for row in _rows(store, _ONE, params):
                add(Quad(IRI.trusted(m), p, row["o"], cg), row.get("d"), m, True)
    for g, s, p, dp in plan.hits:
        cg = content_graph(g)
        if store.query(_IN_GRAPH, {"g": g, "s": s, "p": p}):
            raise _refuse_unmigrated(g)
        memory = bool(_memories_in(store, g, s))
        params = {"s": s, "p": p, "dp": dp, "g": g, "cg": cg}
        for row in _rows(store, _ONE, params):
            add(Quad(s, p, row["o"], cg), row.get("d"), str(s) if memory else str(g), memory)
    return out


def erase(
    recorder: Recorder,
    *,
    principal: str | Sequence[str] | None = None,
    session: str | Sequence[str] | None = None,
    memory: str | Sequence[str] | None = None,
    digest: str | Sequence[str] | None = None,
    reason: str,
    by: str,
    seal: bool = True,
    compact: bool = True,
    batch: int = BATCH,
) -> ErasureReceipt:
    """Erase recorded content, keep its digests, and record a sealed receipt.

    Each selector takes one value or several; they add up. Content under an
    active legal hold is skipped and named in the receipt.

    Args:
        recorder: writes the receipt (its store is the one erased from).
        principal: data subjects (DIDs): every session associated with them and
            every memory attributed to them.
        session: session IRIs.
        memory: memory IRIs (a memory's id).
        digest: sha256 digests of content values: every value with that digest.
        reason: why (a request, a retention rule); recorded.
        by: who erases (a principal's DID); recorded.
        seal: seal the receipt graph into the ledger (default).
        compact: rewrite the embedded store's files so no erased text survives
            in them (default; set False to compact once after several erasures,
            with ``store.compact()``).
        batch: content values removed per atomic write.

    Returns:
        The receipt.

    Raises:
        UserError: no selector, an empty reason, a session, memory or digest that
            is not in the store, or a store not yet migrated (``trails migrate``).
        ErasureBlocked: legal holds cover everything selected: nothing was erased.
        StoreError: the store could not be read or written.
    """
    principals, sessions = _names(principal), _names(session)
    memories, digests = _names(memory), _names(digest)
    for value, name in (
        (reason, "reason"),
        (by, "by"),
        *((p, "principal") for p in principals),
        *((s, "session") for s in sessions),
        *((m, "memory") for m in memories),
        *((d, "digest") for d in digests),
    ):
        check_text(value, name)  # a UserError naming the field, before anything is read
    if not (principals or sessions or memories or digests):
        raise UserError("say what to erase: a principal, a session, a memory or a digest")
    reason = reason.strip()
    if not reason:
        raise UserError("an erasure needs a --reason")
    if not by.strip():
        raise UserError("an erasure needs who erases (by)")
    store, minter = recorder.store, recorder.minter
    sealer = _sealer(recorder) if seal else None
    if sealer is not None and getattr(store, "exclusive_since", None) is not None:
        # this process holds the store alone: an erasure cut short here before is closed
        finish_erasures(recorder)
    plan = _plan(
        store, minter, principals=principals, sessions=sessions, memories=memories, digests=digests
    )
    removals = _removals(store, plan)
    if not removals:
        if plan.skipped:
            raise ErasureBlocked(plan.skipped)
        return ErasureReceipt(
            erasure="",
            graph="",
            seal=None,
            by=by,
            at=datetime.now(UTC).isoformat(),
            reason=reason,
            sessions=(),
            memories=(),
            digests=(),
            erased=0,
        )
    erasure_id = str(uuid.uuid4())
    graph = erasure_graph(minter, erasure_id)
    activity = Minter.part(graph, "erasure")
    at = datetime.now(UTC)
    skipped_holds = sorted({s.hold.iri for s in plan.skipped})
    chunks = [removals[i : i + batch] for i in range(0, len(removals), max(1, batch))]
    for n, chunk in enumerate(chunks):
        last = n == len(chunks) - 1
        recorder.record(
            ContentErased(
                session=graph,
                activity=activity,
                by=by,
                reason=reason,
                at=at,
                first=n == 0,
                last=last,
                ended=datetime.now(UTC) if last else None,
                count=len(removals),
                principals=tuple(principals) if n == 0 else (),
                skipped=tuple(skipped_holds) if n == 0 else (),
                sessions=tuple(sorted({r.owner for r in chunk if not r.memory})),
                memories=tuple(sorted({r.owner for r in chunk if r.memory})),
                items=tuple((r.entity, r.digest) for r in chunk),
                sealed=sealer is not None,
            ),
            remove=[r.quad for r in chunk],
        )
    if any(r.memory for r in removals):
        _drop_memory_copies(store, minter)
    seal_iri = None
    if sealer is not None:
        sealed = sealer.sealed_by(graph)  # in the last part's write, unless the hook failed
        seal_iri = str(sealed if sealed is not None else sealer.seal(recorder, graph))
    compacted = False
    rewrite = getattr(store, "compact", None)
    if compact and removals and callable(rewrite):
        rewrite()
        compacted = True
    return ErasureReceipt(
        erasure=str(activity),
        graph=str(graph),
        seal=seal_iri,
        by=by,
        at=at.isoformat(),
        reason=reason,
        sessions=tuple(sorted({r.owner for r in removals if not r.memory})),
        memories=tuple(sorted({r.owner for r in removals if r.memory})),
        digests=tuple(sorted({r.digest for r in removals})),
        erased=len(removals),
        skipped=tuple(plan.skipped),
        compacted=compacted,
    )


def _sealer(recorder: Recorder) -> Sealer:
    from trails.evidence.seal import install_sealer

    return install_sealer(recorder)


_UNFINISHED = f"""
SELECT ?g ?e ?at ?ended ?by ?reason ?memory $ledger WHERE {{
  GRAPH ?g {{
    ?e a {T.Erasure.n3()} ; {PROV.startedAtTime.n3()} ?at ; {T.erasureReason.n3()} ?reason .
    OPTIONAL {{ ?e {PROV.endedAtTime.n3()} ?ended }}
    OPTIONAL {{ ?e {PROV.wasAssociatedWith.n3()}/{T.principalId.n3()} ?by }}
    OPTIONAL {{ ?e {T.erasedMemory.n3()} ?memory }}
  }}
  FILTER NOT EXISTS {{ GRAPH $ledger {{ ?seal {T.sealedGraph.n3()} ?g }} }}
}}
"""

_ITEMS = f"""
SELECT DISTINCT ?x $g $e WHERE {{ GRAPH $g {{ ?x {PROV.wasInvalidatedBy.n3()} $e }} }}
"""


@dataclass(frozen=True)
class FinishedErasure:
    """An erasure receipt ``finish_erasures`` found without a seal, and what it did."""

    erasure: str
    graph: str
    seal: str
    interrupted: bool
    """The erasure was cut short between two of its writes: its receipt was closed as
    ``interrupted`` (the values it names were removed; run the erasure again for the rest).
    False: the receipt was complete and only its seal was missing."""
    erased: int
    """How many values the receipt accounts for."""

    def describe(self) -> str:
        if self.interrupted:
            return (
                f"{self.erasure} was interrupted after removing {self.erased} value(s): its "
                f"receipt is closed as interrupted and sealed ({self.seal}); run the same "
                "`trails erase` again to erase the rest"
            )
        return f"{self.erasure} had been recorded without its seal: now sealed ({self.seal})"


def finish_erasures(
    recorder: Recorder, *, older_than: timedelta | None = None
) -> list[FinishedErasure]:
    """Close and seal the erasure receipts a stopped process left without a seal.

    A receipt whose erasure had ended (an earlier version of trails sealed it in a
    write of its own) is sealed. One without an end was cut short between two of its
    batches: what it names was removed with it, the rest was not; it is ended as
    ``interrupted`` with the count of what it names, and sealed, in one write (running
    the same erasure again removes the rest). Either way every removed value is then
    accounted for by a sealed receipt, and ``trails verify`` passes.

    Args:
        recorder: writes the ends and seals (with its sealer, installed when missing).
        older_than: on a store shared with live writers (a SPARQL server), only receipts
            started at least this long ago (an erasure running elsewhere is left alone).
            None: every unsealed receipt (an embedded store this process holds alone).

    Returns:
        What was finished, oldest first.

    Raises:
        StoreError: the store could not be read or written.
    """
    from trails.evidence.ledger import ledger_iri

    store, minter = recorder.store, recorder.minter
    sealer = _sealer(recorder)
    rows = _rows(store, _UNFINISHED, {"ledger": ledger_iri(minter)})
    cutoff = datetime.now(UTC) - older_than if older_than is not None else None
    found: dict[str, dict[str, Term]] = {}
    memories: set[str] = set()
    for row in rows:
        found.setdefault(str(row["g"]), dict(row))
        if row.get("memory") is not None:
            memories.add(str(row["g"]))
    done: list[FinishedErasure] = []
    for g, row in sorted(found.items(), key=lambda kv: str(kv[1].get("at"))):
        graph, activity = IRI.trusted(g), IRI.trusted(str(row["e"]))
        started = to_python(row["at"]) if row.get("at") is not None else None
        if cutoff is not None and (not isinstance(started, datetime) or started > cutoff):
            continue
        interrupted = row.get("ended") is None
        erased = len(_rows(store, _ITEMS, {"g": graph, "e": activity}))
        if interrupted:
            at = started if isinstance(started, datetime) else datetime.now(UTC)
            recorder.record(
                ContentErased(
                    session=graph,
                    activity=activity,
                    by=_text(row.get("by")) or "did:trails:unknown",
                    reason=_text(row.get("reason")) or "",
                    at=at,
                    first=False,
                    ended=datetime.now(UTC),
                    count=erased,
                    status="interrupted",
                    sealed=True,
                )
            )
            if g in memories:  # its batches removed memory text the index may still hold
                _drop_memory_copies(store, minter)
        sealed = sealer.sealed_by(graph)
        seal = sealed if sealed is not None else sealer.seal(recorder, graph)
        done.append(FinishedErasure(str(activity), g, str(seal), interrupted, erased))
    return done


def _drop_memory_copies(store: Store, minter: Minter) -> None:
    """Erased memory text must not live on in the memory index: a fresh memory revision
    (so no snapshot taken before is used again), the snapshot file beside an on-disk
    store deleted, and this process's index loaded again from the store."""
    from trails.memory import snapshot
    from trails.memory.index import index_for

    index = index_for(store, minter)
    index.compact()  # a fresh revision token: every snapshot taken before is stale
    path = snapshot.path_for(store)
    if path is not None:
        path.unlink(missing_ok=True)
    index.reload()
