"""Erasure and retention for the endpoint's access log: the query texts that name a person.

The SPARQL endpoint logs every query it receives, its text and parameters included, in a
store of its own (``trails serve``'s access log). An auditor looking for a data subject
writes her name or e-mail into a query, so the log holds personal data that no session of
hers contains: erasing her sessions alone would leave it there. This module removes, from
that log, the text, the parameters and the error message of every logged query that
mentions one of the given strings (her identifier, her e-mail ...), or of every query
received before a given time (retention). What stays of each entry is what says that a
query happened: who asked, when, how it ended, how many results, and the query text's
sha256. The removal is one atomic write, with a ``trails:Erasure`` in the log graph saying
who removed what, when and why; the log store's files are then rewritten (compacted) so
no removed text survives in them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from trails.errors import UserError
from trails.prov.builder import QuadBuilder
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Quad
from trails.text import check_text

__all__ = ["AccessLogErasure", "erase_from_access_log"]

_ENTRIES = f"""
SELECT ?g ?a ?t ?q ?text ?params ?error WHERE {{ GRAPH ?g {{
  ?a a {T.QueryReceived.n3()} ; {PROV.startedAtTime.n3()} ?t .
  OPTIONAL {{ ?a {PROV.used.n3()} ?q . ?q {PROV.value.n3()} ?text }}
  OPTIONAL {{ ?a {T.queryParameters.n3()} ?params }}
  OPTIONAL {{ ?a {T.errorMessage.n3()} ?error }}
}} }}
"""


@dataclass(frozen=True)
class AccessLogErasure:
    """What an erasure from the access log removed."""

    entries: int
    """Logged queries whose text, parameters or error message were removed."""
    values: int
    """Values removed (a query text, its parameters, an error message)."""
    erasure: str | None
    """The ``trails:Erasure`` recorded in the log (None when nothing matched)."""
    compacted: bool
    """Whether the log store's files were rewritten."""


def _text(term: object) -> str | None:
    return term.value if isinstance(term, Literal) else None


def erase_from_access_log(
    log: Store,
    *,
    mentions: Sequence[str] = (),
    before: datetime | None = None,
    reason: str,
    by: str,
    minter: Minter | None = None,
    compact: bool = True,
) -> AccessLogErasure:
    """Remove from the access log the query texts that mention any of ``mentions``
    (compared without regard to case), or that were received before ``before``.

    Args:
        log: the access-log store (never the data store).
        mentions: strings whose presence in a query text, its parameters or its error
            message marks the entry (a data subject's identifier, e-mail, name).
        before: also remove the texts of every query received before this instant.
        reason: why; recorded.
        by: who removes; recorded.
        minter: names the erasure and the remover (default base ``urn:trails:``).
        compact: rewrite the log store's files afterwards (an embedded store).

    Raises:
        UserError: neither ``mentions`` nor ``before``, an empty mention or reason.
        StoreError: the log cannot be read or written.
    """
    for value, field in ((reason, "reason"), (by, "by"), *((m, "mention") for m in mentions)):
        check_text(value, field)
    wanted = [m.casefold() for m in mentions]
    if not wanted and before is None:
        raise UserError("say what to remove from the access log: mentions or a time")
    if any(not m.strip() for m in wanted):
        raise UserError("an empty mention would match every logged query")
    if not reason.strip():
        raise UserError("give a reason for the erasure")
    minter = minter or Minter()
    result = log.query(_ENTRIES)
    assert isinstance(result, Solutions)
    remove: list[Quad] = []
    invalidated: list[tuple[IRI, IRI]] = []
    graph: IRI | None = None
    for row in result:
        g, a, q = row["g"], row["a"], row.get("q")
        assert isinstance(g, IRI) and isinstance(a, IRI)
        texts = {k: v for k in ("text", "params", "error") if (v := _text(row.get(k))) is not None}
        when = row["t"]
        old = before is not None and isinstance(when, Literal) and _before(when, before)
        if not texts or not (old or any(m in v.casefold() for v in texts.values() for m in wanted)):
            continue
        graph = g
        if "text" in texts and isinstance(q, IRI):
            remove.append(Quad(q, PROV.value, row["text"], g))
            invalidated.append((q, g))
        if "params" in texts:
            remove.append(Quad(a, T.queryParameters, row["params"], g))
        if "error" in texts:
            remove.append(Quad(a, T.errorMessage, row["error"], g))
    if graph is None:
        return AccessLogErasure(0, 0, None, False)
    erasure = minter.activity()
    b = QuadBuilder(graph, minter)
    now = datetime.now(UTC)
    b.activity(erasure, T.Erasure, now, now)
    b.associate(erasure, b.agent(by))
    b.value(erasure, T.erasureReason, reason)
    b.label(erasure, f"access-log erasure {uuid.uuid4().hex[:8]}")
    for q, g in invalidated:
        b.quads.append(Quad(q, PROV.wasInvalidatedBy, erasure, g))
    b.value(erasure, T.erasedCount, len(remove))
    log.write(b.quads, remove=remove)
    compacted = False
    rewrite = getattr(log, "compact", None)
    if compact and callable(rewrite):
        rewrite()
        compacted = True
    entries = len({q for q, _ in invalidated}) or len(remove)
    return AccessLogErasure(entries, len(remove), str(erasure), compacted)


def _before(when: Literal, limit: datetime) -> bool:
    try:
        at = datetime.fromisoformat(when.value)
    except ValueError:
        return False
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at < limit
