"""Legal holds: evidence that must not be removed, by session or by principal, until released.

A hold is placed on a session (its graph) or on a principal (every session
associated with that principal, present and future) with a reason, and later
released with a reason. Both are recorded in plain PROV in the holds graph
(``<base>graph:holds``): a ``trails:HoldPlacement`` activity generates a
``trails:LegalHold`` entity (``trails:heldSession`` or
``trails:heldPrincipal``, ``trails:holdReason``), and a ``trails:HoldRelease``
activity invalidates it (``prov:wasInvalidatedBy``, ``prov:invalidatedAtTime``,
``trails:releaseReason``). Each activity is associated with who did it.

The holds graph is sealed like a session graph: its first write is sealed
in that write (``completes_graph``: never an unsealed holds graph after a kill),
and every later hold or release gets a revision seal in the same atomic write as itself (the sealer revises any
sealed graph it sees written). So removing or editing a hold shows in
``trails verify``.

``active_holds_for(store, session)`` is what retention and erasure ask before
they remove anything: the holds covering a session directly or through its
principal.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from trails.errors import UserError
from trails.evidence.ledger import ledger_iri, seals_of_graph
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Term
from trails.store.terms import Literal as RDFLiteral
from trails.text import check_text

if TYPE_CHECKING:
    from trails.prov.recorder import Recorder

__all__ = [
    "Hold",
    "HoldPlaced",
    "HoldReleased",
    "active_holds_for",
    "holds_graph",
    "list_holds",
    "place_hold",
    "release_holds",
    "resolve_target",
]


def holds_graph(minter: Minter) -> IRI:
    """The graph holds and releases are recorded in (``<base>graph:holds``)."""
    return minter.graph("holds")


class HoldPlaced(Event):
    """A legal hold was placed (``session`` is the holds graph)."""

    hold: str
    activity: str
    kind: Literal["session", "principal"]
    target: str
    reason: str
    by: str
    at: datetime
    first: bool = False
    """The holds graph's first write: sealed in it (``completes_graph``), never after it."""

    @property
    def completes_graph(self) -> bool:
        return self.first

    def emit(self, b: QuadBuilder) -> None:
        a, h = IRI.trusted(self.activity), IRI.trusted(self.hold)
        b.activity(a, T.HoldPlacement, self.at, self.at)
        b.label(a, f"legal hold placed on {self.kind} {self.target}")
        b.add(a, PROV.wasAssociatedWith, b.agent(self.by))
        b.types(h, T.LegalHold, PROV.Entity)
        b.label(h, f"legal hold on {self.kind} {self.target}")
        b.add(h, PROV.wasGeneratedBy, a)
        b.value(h, PROV.generatedAtTime, self.at)
        b.value(h, T.holdReason, self.reason)
        if self.kind == "session":
            b.add(h, T.heldSession, IRI.trusted(self.target))
        else:
            b.add(h, T.heldPrincipal, b.agent(self.target))


class HoldReleased(Event):
    """A legal hold was released (``session`` is the holds graph)."""

    hold: str
    activity: str
    reason: str
    by: str
    at: datetime
    first: bool = False
    """The holds graph's first sealed write (holds placed unsealed): sealed in it."""

    @property
    def completes_graph(self) -> bool:
        return self.first

    def emit(self, b: QuadBuilder) -> None:
        a, h = IRI.trusted(self.activity), IRI.trusted(self.hold)
        b.activity(a, T.HoldRelease, self.at, self.at)
        b.label(a, "legal hold released")
        b.add(a, PROV.wasAssociatedWith, b.agent(self.by))
        b.value(a, T.releaseReason, self.reason)
        b.add(a, PROV.invalidated, h)
        b.add(h, PROV.wasInvalidatedBy, a)
        b.value(h, PROV.invalidatedAtTime, self.at)


@dataclass(frozen=True)
class Hold:
    """A hold as read back; ``released_at`` is None while it is active."""

    iri: str
    kind: str
    target: str
    reason: str
    placed_by: str
    placed_at: str
    released_at: str | None = None
    released_by: str | None = None
    release_reason: str | None = None

    @property
    def active(self) -> bool:
        return self.released_at is None

    def describe(self) -> str:
        """One line naming the hold, for the commands that skip what it holds."""
        return f"{self.iri} on {self.kind} {self.target} ({self.reason!r}, by {self.placed_by})"


_IS_SESSION = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $g { $g a trails:Session } }
"""
_IS_PRINCIPAL = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH ?g { ?agent trails:principalId $id } }
"""

_HOLDS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?hold ?session ?principal ?reason ?by ?at ?releasedAt ?releasedBy ?releaseReason $graph
WHERE { GRAPH $graph {
  ?hold a trails:LegalHold ; trails:holdReason ?reason ; prov:generatedAtTime ?at ;
        prov:wasGeneratedBy ?placing .
  ?placing prov:wasAssociatedWith/trails:principalId ?by .
  OPTIONAL { ?hold trails:heldSession ?session }
  OPTIONAL { ?hold trails:heldPrincipal/trails:principalId ?principal }
  OPTIONAL { ?hold prov:invalidatedAtTime ?releasedAt ; prov:wasInvalidatedBy ?release .
             ?release prov:wasAssociatedWith/trails:principalId ?releasedBy .
             OPTIONAL { ?release trails:releaseReason ?releaseReason } }
} } ORDER BY ?at ?hold
"""

_PRINCIPALS_OF = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT DISTINCT ?id $g WHERE { GRAPH $g { $g prov:wasAssociatedWith/trails:principalId ?id } }
"""


def _text(term: Term | None) -> str | None:
    return term.value if isinstance(term, RDFLiteral) else None


def resolve_target(store: Store, text: str) -> tuple[Literal["session", "principal"], str]:
    """Whether ``text`` names a session (its graph IRI) or a principal (a DID in the store).

    Raises:
        UserError: it names neither.
    """
    text = text.strip()
    if not text:
        raise UserError("name a session IRI or a principal")
    try:
        iri = IRI(text)
    except (ValueError, UnicodeError):
        iri = None
    if iri is not None and store.query(_IS_SESSION, {"g": iri}):
        return "session", text
    if store.query(_IS_PRINCIPAL, {"id": RDFLiteral(text)}) or text.startswith("did:"):
        return "principal", text
    raise UserError(f"{text!r} is neither a session of this store nor a principal (a DID)")


def list_holds(store: Store, minter: Minter, *, include_released: bool = False) -> list[Hold]:
    """The holds recorded in the store (only active ones unless ``include_released``)."""
    result = store.query(_HOLDS, {"graph": holds_graph(minter)})
    assert isinstance(result, Solutions)
    holds = []
    for row in result:
        session, principal = row.get("session"), _text(row.get("principal"))
        hold = Hold(
            iri=str(row["hold"]),
            kind="session" if session is not None else "principal",
            target=str(session) if session is not None else principal or "",
            reason=_text(row.get("reason")) or "",
            placed_by=_text(row.get("by")) or "",
            placed_at=_text(row.get("at")) or "",
            released_at=_text(row.get("releasedAt")),
            released_by=_text(row.get("releasedBy")),
            release_reason=_text(row.get("releaseReason")),
        )
        if include_released or hold.active:
            holds.append(hold)
    return holds


def active_holds_for(
    store: Store, minter: Minter, session: IRI, *, holds: list[Hold] | None = None
) -> list[Hold]:
    """The active holds covering ``session``: on it, or on a principal it is associated with.

    Args:
        store: the store.
        minter: names the holds graph.
        session: the session graph.
        holds: the active holds, when the caller already read them (many sessions).
    """
    holds = holds if holds is not None else list_holds(store, minter)
    if not holds:
        return []
    covering = [h for h in holds if h.kind == "session" and h.target == str(session)]
    if any(h.kind == "principal" for h in holds):
        result = store.query(_PRINCIPALS_OF, {"g": session})
        assert isinstance(result, Solutions)
        principals = {_text(r.get("id")) for r in result}
        covering += [h for h in holds if h.kind == "principal" and h.target in principals]
    return covering


def _checked(reason: str, by: str, target: str) -> None:
    """Refuse text no record can hold (an unpaired surrogate), naming the field."""
    for value, field in ((reason, "reason"), (by, "by"), (target, "target")):
        check_text(value, field)


def _reason(reason: str) -> str:
    reason = reason.strip()
    if not reason:
        raise UserError("a hold and its release need a --reason")
    return reason


def _seal_first(recorder: Recorder, graph: IRI, seal: bool) -> bool:
    """Whether this write is the holds graph's first to seal: then the sealer (installed
    here) seals it in that same write; later writes get revision seals in their own write
    (the sealer revises every sealed graph it sees written)."""
    if not seal or seals_of_graph(recorder.store, ledger_iri(recorder.minter), graph):
        return False
    from trails.evidence.seal import install_sealer

    install_sealer(recorder)
    return True


def place_hold(recorder: Recorder, target: str, *, reason: str, by: str, seal: bool = True) -> Hold:
    """Place a legal hold on a session or a principal.

    Args:
        recorder: writes the hold.
        target: a session IRI or a principal's DID (see ``resolve_target``).
        reason: why (a case number, a request).
        by: the principal placing it.
        seal: seal the holds graph (default).

    Returns:
        The hold.

    Raises:
        UserError: an empty reason, or a target that is neither a session nor a principal,
            or text that cannot be recorded (an unpaired surrogate).
    """
    _checked(reason, by, target)
    reason = _reason(reason)
    kind, name = resolve_target(recorder.store, target)
    graph = holds_graph(recorder.minter)
    at = datetime.now(UTC)
    hold = Minter.part(graph, f"hold:{uuid.uuid4()}")
    first = _seal_first(recorder, graph, seal)
    event = HoldPlaced(
        session=graph,
        hold=hold,
        activity=recorder.minter.activity(),
        kind=kind,
        target=name,
        reason=reason,
        by=by,
        at=at,
        first=first,
    )
    recorder.record(event)
    return Hold(str(hold), kind, name, reason, by, at.isoformat())


def release_holds(
    recorder: Recorder, target: str, *, reason: str, by: str, seal: bool = True
) -> list[Hold]:
    """Release the active holds on ``target`` (a session, a principal, or one hold's IRI).

    Returns:
        The holds released.

    Raises:
        UserError: an empty reason, no active hold matches, or text that cannot be
            recorded (an unpaired surrogate).
    """
    _checked(reason, by, target)
    reason = _reason(reason)
    graph = holds_graph(recorder.minter)
    active = list_holds(recorder.store, recorder.minter)
    chosen = [h for h in active if target.strip() in (h.iri, h.target)]
    if not chosen:
        raise UserError(f"no active hold on {target!r}")
    first = _seal_first(recorder, graph, seal)
    for n, hold in enumerate(chosen, start=1):
        recorder.record(
            HoldReleased(
                session=graph,
                hold=hold.iri,
                activity=recorder.minter.activity(),
                reason=reason,
                by=by,
                at=datetime.now(UTC),
                first=first and n == len(chosen),
            )
        )
    return chosen
