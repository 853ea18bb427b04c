"""What verification reports: one ``Finding`` per thing that no longer matches.

Every check of the evidence room (the seals and chains in ``verify``, content against its
sealed digests in ``content``) and the bundle verifier above it report the same record,
so an auditor reads one kind of line whatever found it. It lives apart from ``verify`` so
that ``verify`` can call the content check without the two importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CONTENT_ALTERED", "CONTENT_FOREIGN", "CONTENT_MISSING", "Finding"]

CONTENT_ALTERED = "content-altered"
"""A content value no longer hashes to the digest its graph recorded for it."""
CONTENT_MISSING = "content-missing"
"""A recorded digest has no value, and no sealed erasure or retention receipt names it."""
CONTENT_FOREIGN = "content-foreign"
"""Something in a content graph that no digest accounts for: a value without a digest, a
second value for one entity, a value erased on record, or structure planted there."""


@dataclass(frozen=True)
class Finding:
    """One thing that does not match.

    ``subject`` names what (a graph, a seal, a content entity); ``session`` the session
    (or other graph) it belongs to when the subject is not that graph itself, as for
    content, whose findings name the entity.
    """

    kind: str
    subject: str
    detail: str
    session: str = ""

    def __str__(self) -> str:
        where = f" in {self.session}" if self.session and self.session != self.subject else ""
        return f"{self.kind.upper():<9} {self.subject}{where}: {self.detail}"
