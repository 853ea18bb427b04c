"""What a memory is, as Python values, and the checks every input goes through.

``Memory`` is the read-only view the API returns: content, confidence, topic,
tags, scope, the learning agent, when it was recorded, when the fact was true
(``valid_from`` / ``valid_until``, apart from recording time), the activity
and session that produced it, and its retirement (superseded or forgotten).
``Recalled`` adds the score a recall gave it.

The ``check_*`` functions validate user input before anything is written, so a
bad argument raises ``MemoryInputError`` naming the field and nothing is
recorded. Limits are generous but finite: a memory is a fact, not a document.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic_core import to_jsonable_python

from trails.errors import MemoryInputError
from trails.store.terms import IRI
from trails.text import check_text

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_TOPIC_CHARS",
    "RECALL_SCOPES",
    "SCOPES",
    "Memory",
    "Recalled",
    "Scope",
    "Status",
    "check_agent",
    "check_confidence",
    "check_content",
    "check_id",
    "check_k",
    "check_recall_scope",
    "check_scope",
    "check_tags",
    "check_time",
    "check_topic",
    "check_validity",
]

Scope = Literal["private", "shared", "session"]
Status = Literal["current", "superseded", "forgotten"]

SCOPES: tuple[str, ...] = ("private", "shared", "session")
RECALL_SCOPES: tuple[str, ...] = (*SCOPES, "all")
MAX_CONTENT_CHARS = 100_000
MAX_TOPIC_CHARS = 200
MAX_TAGS = 32
MAX_TAG_CHARS = 100
MAX_K = 1000


@dataclass(frozen=True)
class Memory:
    """One version of a learned fact, as recorded in the store.

    ``id`` is the IRI of the ``trails:Memory`` entity. ``session`` and
    ``activity`` say where and by what it was learned; ``revision_of`` the
    version it supersedes; ``invalidated_at`` / ``invalidated_by`` when and by
    which activity it was retired, and ``superseded_by`` the newer version when
    the retirement was a supersession rather than a ``forget``.
    """

    id: str
    content: str
    confidence: float
    topic: str | None
    tags: tuple[str, ...]
    scope: str
    agent_did: str
    recorded_at: datetime
    activity: str
    session: str | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    derived_from: str | None = None
    revision_of: str | None = None
    invalidated_at: datetime | None = None
    invalidated_by: str | None = None
    superseded_by: str | None = None
    reason: str | None = None

    @property
    def status(self) -> Status:
        """``current``, ``superseded`` (a newer version exists) or ``forgotten``."""
        if self.invalidated_at is None:
            return "current"
        return "superseded" if self.superseded_by else "forgotten"

    def current_at(self, when: datetime) -> bool:
        """True when this version was recorded and not yet retired at ``when``."""
        if self.recorded_at > when:
            return False
        return self.invalidated_at is None or self.invalidated_at > when

    def __trails_json__(self) -> Any:
        """Its JSON-able form for ``canonical_json``: pydantic's, computed once.

        A memory is frozen and the index hands out the same object to every recall,
        so a recall's recorded result does not convert the memories it returns again.
        """
        cached = self.__dict__.get("_json")
        if cached is None:
            cached = to_jsonable_python(self)
            object.__setattr__(self, "_json", cached)
        return cached

    def valid_at(self, when: datetime) -> bool:
        """True when ``when`` lies in the fact's validity interval (open ends allowed)."""
        if self.valid_from is not None and when < self.valid_from:
            return False
        return self.valid_until is None or when < self.valid_until


@dataclass(frozen=True)
class Recalled:
    """A memory returned by ``recall``, with its rank and how it scored.

    ``score`` is the combined score the ranking sorted by; ``relevance`` the
    lexical (or re-ranked) relevance in 0..1 it was built from.
    """

    memory: Memory
    score: float
    relevance: float
    rank: int

    @property
    def id(self) -> str:
        return self.memory.id

    def __trails_json__(self) -> Any:
        """Its JSON-able form for ``canonical_json`` (what pydantic gives), its memory's kept."""
        return {
            "memory": self.memory.__trails_json__(),
            "score": self.score,
            "relevance": self.relevance,
            "rank": self.rank,
        }

    @property
    def content(self) -> str:
        return self.memory.content


def _utf8(field: str, value: str) -> None:
    check_text(value, field, MemoryInputError)


def check_content(content: object, limit: int = MAX_CONTENT_CHARS) -> str:
    """Validate memory content: a non-blank string of at most ``limit`` characters.

    Args:
        content: the text to remember.
        limit: the largest accepted length in characters.

    Returns:
        The content, unchanged (leading and trailing space is kept).

    Raises:
        MemoryInputError: not a string, blank, too long, or not encodable text.
    """
    if not isinstance(content, str):
        raise MemoryInputError(f"content must be a string, not {type(content).__name__}")
    if not content.strip():
        raise MemoryInputError("content must not be empty")
    if len(content) > limit:
        raise MemoryInputError(
            f"content is {len(content)} characters; the limit is {limit} "
            "(store a summary, or raise [memory] max_content_chars)"
        )
    _utf8("content", content)
    return content


def check_confidence(confidence: object) -> float:
    """Validate a confidence: a finite number in 0..1.

    Raises:
        MemoryInputError: not a number, NaN, or outside 0..1.
    """
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise MemoryInputError(f"confidence must be a number, not {type(confidence).__name__}")
    value = float(confidence)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise MemoryInputError(f"confidence must be between 0 and 1, not {confidence!r}")
    return value


def check_scope(scope: object) -> str:
    """Validate a memory scope (``private``, ``shared`` or ``session``).

    Raises:
        MemoryInputError: any other value.
    """
    if scope not in SCOPES:
        raise MemoryInputError(f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}")
    return str(scope)


def check_recall_scope(scope: object) -> str:
    """Validate a recall scope: a memory scope, or ``all`` for every visible one.

    Raises:
        MemoryInputError: any other value.
    """
    if scope not in RECALL_SCOPES:
        raise MemoryInputError(f"unknown scope {scope!r}; use one of {', '.join(RECALL_SCOPES)}")
    return str(scope)


def check_topic(topic: object) -> str | None:
    """Validate a topic: None, or text of at most 200 characters (blank means none).

    Raises:
        MemoryInputError: not a string, or too long.
    """
    if topic is None:
        return None
    if not isinstance(topic, str):
        raise MemoryInputError(f"topic must be a string, not {type(topic).__name__}")
    topic = topic.strip()
    if len(topic) > MAX_TOPIC_CHARS:
        raise MemoryInputError(f"topic is {len(topic)} characters; the limit is {MAX_TOPIC_CHARS}")
    _utf8("topic", topic)
    return topic or None


def check_tags(tags: Iterable[object] | None) -> tuple[str, ...]:
    """Validate tags: non-blank strings, de-duplicated, order kept.

    Raises:
        MemoryInputError: a single string instead of a list, a blank or long tag,
            or too many tags.
    """
    if tags is None:
        return ()
    if isinstance(tags, str):
        raise MemoryInputError(f"tags must be a list of strings, not the string {tags!r}")
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str):
            raise MemoryInputError(f"each tag must be a string, not {type(tag).__name__}")
        tag = tag.strip()
        if not tag:
            raise MemoryInputError("tags must not be empty strings")
        if len(tag) > MAX_TAG_CHARS:
            raise MemoryInputError(f"tag {tag[:40]!r}... is longer than {MAX_TAG_CHARS} characters")
        _utf8("tag", tag)
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise MemoryInputError(f"{len(out)} tags given; the limit is {MAX_TAGS}")
    return tuple(out)


def check_agent(agent_did: object, default: str) -> str:
    """The agent DID to act as: ``agent_did``, or ``default`` when None.

    Raises:
        MemoryInputError: not a string, or blank.
    """
    if agent_did is None:
        agent_did = default
    if not isinstance(agent_did, str) or not agent_did.strip():
        raise MemoryInputError(f"agent_did must be a non-empty string, not {agent_did!r}")
    _utf8("agent_did", agent_did)
    return agent_did


def check_time(field: str, value: object) -> datetime | None:
    """A timestamp argument: None, a datetime, or ISO 8601 text; naive means UTC.

    Raises:
        MemoryInputError: anything else, or text that is not ISO 8601.
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise MemoryInputError(f"{field} is not an ISO 8601 time: {value!r}") from None
    if not isinstance(value, datetime):
        raise MemoryInputError(f"{field} must be a datetime or ISO 8601 text, not {value!r}")
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def check_validity(
    valid_from: object, valid_until: object
) -> tuple[datetime | None, datetime | None]:
    """Validate a validity interval; ``valid_until`` must come after ``valid_from``.

    Raises:
        MemoryInputError: a bad timestamp or an empty interval.
    """
    start = check_time("valid_from", valid_from)
    end = check_time("valid_until", valid_until)
    if start is not None and end is not None and end <= start:
        raise MemoryInputError(
            f"valid_until ({end.isoformat()}) must be after valid_from ({start.isoformat()})"
        )
    return start, end


def check_k(k: object) -> int:
    """Validate how many memories a recall returns (1..1000).

    Raises:
        MemoryInputError: not an integer in range.
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise MemoryInputError(f"k must be an integer from 1 to {MAX_K}, not {k!r}")
    return k


def check_id(memory_id: object, base: str) -> IRI:
    """A memory id as an IRI: a full IRI, or the bare UUID of one minted under ``base``.

    Raises:
        MemoryInputError: not text, or not usable as an IRI.
    """
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise MemoryInputError(f"a memory id must be a non-empty string, not {memory_id!r}")
    text = memory_id.strip()
    if ":" not in text:
        text = f"{base}entity:{text}"
    try:
        return IRI(text)
    except ValueError:
        raise MemoryInputError(f"not a memory id: {memory_id!r}") from None
