"""Minting instance IRIs under one configurable base (default ``urn:trails:``).

Every resource trails writes has an IRI (no blank nodes, which keeps canonical
hashing linear and exports stable). Random parts are UUID4; names that come
from users (capability ids, model ids, non-IRI principals) are percent-encoded
so an IRI is always valid whatever the input.
"""

from __future__ import annotations

import uuid
from functools import lru_cache
from urllib.parse import quote

from trails.store.terms import _IRI_BAD, _IRI_SCHEME, IRI

__all__ = ["Minter", "agent_iri"]


@lru_cache(maxsize=4096)  # capability, model, policy and principal names repeat in every event
def _safe(value: str) -> str:
    return quote(value, safe="-._~:@!$&'()*+,;=/")


@lru_cache(maxsize=1024)
def agent_iri(principal: str, base: str = "urn:trails:") -> IRI:
    """The IRI of a principal: itself when it is an absolute IRI (a DID), else minted."""
    if _IRI_SCHEME.match(principal) and not _IRI_BAD.search(principal):
        return IRI.trusted(principal)
    return IRI.trusted(f"{base}agent:{_safe(principal)}")


class Minter:
    """Mints IRIs for sessions, activities, entities, capabilities, models and graphs."""

    __slots__ = ("base",)

    def __init__(self, base: str = "urn:trails:") -> None:
        self.base = base

    def session(self, session_id: str | None = None) -> IRI:
        """A session's IRI, which is also the name of its graph."""
        return IRI.trusted(f"{self.base}session:{_safe(session_id or str(uuid.uuid4()))}")

    def activity(self) -> IRI:
        return IRI.trusted(f"{self.base}activity:{uuid.uuid4()}")

    def entity(self) -> IRI:
        return IRI.trusted(f"{self.base}entity:{uuid.uuid4()}")

    def capability(self, capability_id: str) -> IRI:
        return IRI.trusted(f"{self.base}capability:{_safe(capability_id)}")

    def model(self, provider: str, model_id: str) -> IRI:
        return IRI.trusted(f"{self.base}model:{_safe(provider)}:{_safe(model_id)}")

    def policy(self, name: str) -> IRI:
        return IRI.trusted(f"{self.base}policy:{_safe(name)}")

    def agent(self, principal: str) -> IRI:
        return agent_iri(principal, self.base)

    def graph(self, name: str) -> IRI:
        """A named graph that is not a session's (memory, ledger, access log ...)."""
        return IRI.trusted(f"{self.base}graph:{_safe(name)}")

    def session_id(self, session_iri: str) -> str:
        """The id part of a session IRI minted here."""
        prefix = f"{self.base}session:"
        return session_iri[len(prefix) :] if session_iri.startswith(prefix) else session_iri

    @staticmethod
    def part(iri: str, name: str) -> IRI:
        """A dependent resource of ``iri`` (its input, output, association ...)."""
        return IRI.trusted(f"{iri}:{name}")
