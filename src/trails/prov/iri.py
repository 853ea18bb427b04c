"""Minting instance IRIs under one configurable base (default ``urn:trails:``).

Every resource trails writes has an IRI (no blank nodes, which keeps canonical
hashing linear and exports stable). Random parts are UUID4; names that come
from users (capability ids, model ids, non-IRI principals) are percent-encoded
so an IRI is always valid whatever the input.

A session id a caller chooses is the one exception: it names the session and its
graph for everyone who reads them, so it must be usable as it is, one IRI path
segment. ``check_session_id`` refuses any other (empty, blank, too long, or with a
character a path segment cannot hold) instead of letting the minter quietly escape
it into a name nobody chose.
"""

from __future__ import annotations

import re
import uuid
from functools import lru_cache
from urllib.parse import quote

from trails.errors import SessionError
from trails.store.terms import _IRI_BAD, _IRI_SCHEME, IRI

__all__ = ["SESSION_ID_MAX", "Minter", "agent_iri", "check_session_id", "foreign_session_key"]

SESSION_ID_MAX = 200
"""The longest session id accepted, in characters."""

# RFC 3986 pchar without pct-encoded (unreserved, sub-delims, "@": what the minter
# leaves as it is, so the id is the IRI's last segment, unescaped), less ":", which
# trails puts between a session's IRI and the names of its parts (``<session>:content``)
_SEGMENT = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=@"
)
_ALLOWED = "ASCII letters, digits and - . _ ~ ! $ & ' ( ) * + , ; = @"


def check_session_id(session_id: object, field: str = "session_id") -> None:
    """Refuse a session id that cannot name a session as it is.

    A session id becomes the last segment of the session's IRI
    (``<base>session:<id>``), unescaped: 1 to ``SESSION_ID_MAX`` characters, each
    one a path segment holds as it is (ASCII letters and digits, ``- . _ ~ ! $ & '
    ( ) * + , ; = @``). Anything else (white space, ``< > " { } | \\ ^ ` / ? # %``,
    control characters, letters outside ASCII, which the minter would escape)
    is refused rather than turned into a name nobody chose; so is ``:``, which
    trails puts before the names of a session's parts (an id ``case-1:content``
    would name the content graph of session ``case-1``).

    Args:
        session_id: the id a caller chose.
        field: what it is, for the message (``"Context.open session_id"``).

    Raises:
        SessionError: not a str, empty, blank, too long, or a character a path
            segment cannot hold as it is (the message names it and where it is).
    """
    if not isinstance(session_id, str):
        raise SessionError(f"{field} must be a str, not {type(session_id).__name__}")
    if not session_id.strip():
        what = "empty" if not session_id else f"blank ({ascii(session_id)[:40]})"
        raise SessionError(f"{field} is {what}: a session id names the session, choose one")
    if len(session_id) > SESSION_ID_MAX:
        raise SessionError(
            f"{field} is {len(session_id)} characters long; a session id has at most "
            f"{SESSION_ID_MAX} ({session_id[:20]!a}...)"
        )
    for i, char in enumerate(session_id):
        if char not in _SEGMENT:
            shown = session_id if len(session_id) <= 40 else session_id[:37] + "..."
            why = (
                "which trails puts before the parts of a session (<session>:content)"
                if char == ":"
                else "which a session IRI cannot hold as it is"
            )
            raise SessionError(
                f"{field} {shown!a} holds {char!a} at character {i + 1}, {why}; a session "
                f"id is {_ALLOWED}"
            )


# what a session id keeps as it is in its IRI: a path segment's characters less ":" (so no
# session is ever named ``<another session>:content`` or ``:<part>``), and "%" when it starts
# an escape (an id read back from an escaped IRI names the same session again)
_SESSION_SAFE = "-._~!$&'()*+,;=@%"
_BARE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


@lru_cache(maxsize=4096)
def _session_segment(value: str) -> str:
    return _BARE_PERCENT.sub("%25", quote(value, safe=_SESSION_SAFE))


def foreign_session_key(text: str, reserved: tuple[str, ...] = ()) -> str:
    """An id chosen outside trails (an OTLP conversation id) as a session id of its own.

    ``Minter.session`` escapes ``:`` in any id, so no id names the content graph or a
    part of another session. This also escapes ``~``, which trails puts between a
    conversation and a trace to name the continuation of an ended session, and the first
    character of a ``reserved`` prefix (the namespace of another writer's sessions), so
    such an id always names a session of its own. Letters, digits and ``- . _`` are kept.

    Args:
        text: the id as received.
        reserved: prefixes the id must not start with as it is.

    Returns:
        The id to mint the session from (``text`` itself when it spells no such shape).
    """
    key = text.replace("~", "%7E")
    if key.startswith(reserved):
        key = f"%{ord(key[0]):02X}{key[1:]}"
    return key


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
        """A session's IRI, which is also the name of its graph.

        The id is its last segment, every character a path segment cannot hold, and
        ``:``, percent-encoded (``a:b`` names ``<base>session:a%3Ab``), so no id names a
        graph or resource trails derives from another session's IRI (``<session>:content``,
        ``<session>:<part>``); an escape already in the id is kept as it is.
        """
        return IRI.trusted(
            f"{self.base}session:{_session_segment(session_id or str(uuid.uuid4()))}"
        )

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
