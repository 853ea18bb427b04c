"""Calls cut short: the capability calls ``trails verify --strict`` names and fails on.

A seal proves a graph was not changed after it was sealed; it says nothing of
a call that never finished. A call to a capability with side effects (a
payment) is written ahead of its handler, so a program stopped inside it
leaves evidence of a start: ended ``interrupted`` when an interruption
(Ctrl-C, a SIGTERM handler's exit) reached it while the program ran or when
recovery ended its session, or nothing but the start when its session was
ended without it (a store written before interruptions were recorded). Either
way what the call did to the world is unknown and must be checked by other
means, so ``--strict`` (which already fails on open and interrupted sessions)
also lists each such call by name. A call with no status in a session that has
not ended may still be running: it is not listed (the open session is).
"""

from __future__ import annotations

from dataclasses import dataclass

from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal

__all__ = ["CutShort", "calls_cut_short"]

_CUT_SHORT = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?call $session ?capability ?sideEffects ?status ?started ?error WHERE {
  GRAPH $session {
    $session a trails:Session .
    ?call a trails:CapabilityInvocation ;
          trails:inSession $session ;
          prov:startedAtTime ?started ;
          trails:capability ?plan .
    ?plan trails:capabilityId ?capability .
    {
      ?call trails:status "interrupted" .
      BIND("interrupted" AS ?status)
    } UNION {
      $session prov:endedAtTime ?ended .
      FILTER NOT EXISTS { ?call trails:status ?any }
      BIND("unfinished" AS ?status)
    }
    OPTIONAL { ?plan trails:sideEffects ?sideEffects }
    OPTIONAL { GRAPH ?errorMessageGraph1 { ?call trails:errorMessage ?error } }
  }
}
ORDER BY $session ?started ?call
"""


@dataclass(frozen=True)
class CutShort:
    """One capability call that started and did not finish.

    Attributes:
        call: the invocation's IRI.
        session: its session.
        capability: the capability id.
        side_effects: whether the capability changes something outside trails.
        status: ``interrupted`` (an interruption or recovery ended it) or
            ``unfinished`` (only its start is on record, in a session that ended).
        started: when it started (ISO 8601).
        reason: what cut it short, when recorded (e.g. ``KeyboardInterrupt (SIGINT)``).
    """

    call: str
    session: str
    capability: str
    side_effects: bool
    status: str
    started: str
    reason: str = ""

    def __str__(self) -> str:
        kind = "with side effects" if self.side_effects else "pure"
        how = (
            f"cut short ({self.reason})"
            if self.status == "interrupted" and self.reason
            else "cut short when its process stopped"
            if self.status == "interrupted"
            else "started and never ended"
        )
        check = "; check its effect by other means" if self.side_effects else ""
        return (
            f"INTERRUPTED-CALL {self.call} in {self.session}: call to {self.capability} "
            f"({kind}) started {self.started}, {how}{check}"
        )


def _text(value: object) -> str:
    return value.value if isinstance(value, Literal) else ""


def calls_cut_short(store: Store, session: IRI | None = None) -> list[CutShort]:
    """The capability calls that started and did not finish, in ended sessions.

    Args:
        store: the store to read.
        session: only this session.

    Returns:
        The calls, by session and start time.

    Raises:
        StoreError: the store could not be read.
    """
    params = {"session": session} if session is not None else {}
    result = store.query(_CUT_SHORT, params)
    assert isinstance(result, Solutions)
    return [
        CutShort(
            call=str(row["call"]),
            session=str(row["session"]),
            capability=_text(row.get("capability")),
            side_effects=_text(row.get("sideEffects")) == "true",
            status=_text(row.get("status")),
            started=_text(row.get("started")),
            reason=_text(row.get("error")),
        )
        for row in result
    ]
