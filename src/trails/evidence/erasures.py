"""Erasure receipts read back: what ``trails verify`` reports of lawful removals.

Erasure itself is a compliance operation (``trails.compliance.erasure``); the
receipts it leaves are evidence. Verification lists them next to its findings so
that an auditor tells a lawful removal (a sealed ``trails:Erasure`` receipt naming
who, when, why and how many values) apart from tampering, without importing the
room that erases.
"""

from __future__ import annotations

from dataclasses import dataclass

from trails.prov.vocab import PROV, T
from trails.store.base import Solutions, Store
from trails.store.terms import Literal, Term

__all__ = ["ErasureRecord", "list_erasures"]

_ERASURES = f"""
SELECT ?erasure ?graph ?at ?by ?reason ?count ?session WHERE {{
  GRAPH ?graph {{
    ?erasure a {T.Erasure.n3()} ; {T.erasureReason.n3()} ?reason ;
             {PROV.startedAtTime.n3()} ?at .
    OPTIONAL {{ ?erasure {PROV.wasAssociatedWith.n3()}/{T.principalId.n3()} ?by }}
    OPTIONAL {{ ?erasure {T.erasedCount.n3()} ?count }}
    OPTIONAL {{ ?erasure {T.erasedSession.n3()} ?session }}
  }}
}} ORDER BY ?at ?erasure
"""


@dataclass(frozen=True)
class ErasureRecord:
    """An erasure as read back from its receipt (for ``trails verify``)."""

    erasure: str
    graph: str
    at: str
    by: str
    reason: str
    count: int | None
    sessions: tuple[str, ...] = ()

    def describe(self) -> str:
        done = (
            f"{self.count} content value(s)" if self.count is not None else "content (unfinished)"
        )
        where = f" in {len(self.sessions)} session(s)" if self.sessions else ""
        return f"{done}{where} erased by {self.by} at {self.at}: {self.reason!r} ({self.erasure})"


def _text(term: Term | None) -> str | None:
    return term.value if isinstance(term, Literal) else None


def list_erasures(store: Store, *, session: str | None = None) -> list[ErasureRecord]:
    """The erasures recorded in the store (only those touching ``session`` when given)."""
    found: dict[str, ErasureRecord] = {}
    touched: dict[str, set[str]] = {}
    for row in _solutions(store):
        key = str(row["erasure"])
        if key not in found:
            count = row.get("count")
            found[key] = ErasureRecord(
                erasure=key,
                graph=str(row["graph"]),
                at=_text(row.get("at")) or "",
                by=_text(row.get("by")) or "unknown",
                reason=_text(row.get("reason")) or "",
                count=int(count.value) if isinstance(count, Literal) else None,
            )
        if row.get("session") is not None:
            touched.setdefault(key, set()).add(str(row["session"]))
    out = []
    for key, record in found.items():
        sessions = tuple(sorted(touched.get(key, set())))
        if session is not None and session not in sessions:
            continue
        out.append(
            ErasureRecord(
                record.erasure,
                record.graph,
                record.at,
                record.by,
                record.reason,
                record.count,
                sessions,
            )
        )
    return out


def _solutions(store: Store) -> Solutions:
    result = store.query(_ERASURES)
    assert isinstance(result, Solutions)
    return result
