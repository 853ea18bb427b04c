"""Canonical JSON and its sha256, and where content is kept: how trails records content.

Changing ``canonical_json`` changes every recorded hash (capability inputs and
outputs, prompts, request hashes used by replay). Treat it as a file format:
sorted keys, no insignificant white space, UTF-8 kept as is, and values JSON
cannot hold turned into their JSON-able form by pydantic (datetimes, models,
dataclasses), or their ``str`` as the last resort.

Content lives apart from structure: the quads holding content values
(``CONTENT_PROPERTIES``: ``prov:value``, a plan run's goal and answer, a persisted
envelope's arguments and result, error messages, recall queries, a memory's topic and
tags, the label a session's caller gave it: whatever may hold personal data) are written to the *content graph* of the graph
their event belongs to (``content_graph``: the graph's IRI plus ``:content``), in
the same atomic write; the graph itself keeps the structure and each value's
sha256. Seals cover the structure graph only, so content can be erased
(``trails.compliance.erasure``) without touching anything sealed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from trails.prov.vocab import PROV, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal

__all__ = [
    "CONTENT_DIGESTS",
    "CONTENT_PROPERTIES",
    "CONTENT_SUFFIX",
    "LEGACY_INLINE",
    "canonical_json",
    "content_graph",
    "erasure_of",
    "is_content_graph",
    "json_sha256",
    "sha256_hex",
    "structure_graph",
    "unicode_problem",
]

CONTENT_SUFFIX = ":content"
"""What a graph's IRI is followed by to name its content graph."""

CONTENT_DIGESTS: dict[IRI, IRI] = {
    PROV.value: T.sha256,
    T.goal: T.goalSha256,
    T.answer: T.answerSha256,
    T.arguments: T.argumentsSha256,
    T.result: T.resultSha256,
    T.errorMessage: T.errorMessageSha256,
    T.recallQuery: T.recallQuerySha256,
    T.topic: T.topicSha256,
    T.tags: T.tagsSha256,
    T.sessionLabel: T.sessionLabelSha256,
}
"""Each content property and the structure property holding its value's sha256 (for
``trails:arguments``/``trails:result``, of the canonical JSON of the value)."""

CONTENT_PROPERTIES = frozenset(CONTENT_DIGESTS)
"""The properties whose values are content, kept in content graphs."""

LEGACY_INLINE = frozenset({T.errorMessage, T.recallQuery, T.topic})
"""Content properties that stores written before they became content hold in their
structure graphs, sealed, with no digest: such a value is structure of its graph (the seal
proves it; ``trails migrate`` moves it to content), and does not make the graph one that
still needs migrating."""


def content_graph(graph: str) -> IRI:
    """The content graph of ``graph`` (its IRI followed by ``:content``)."""
    return IRI.trusted(f"{graph}{CONTENT_SUFFIX}")


def is_content_graph(graph: str) -> bool:
    """Whether ``graph`` names a content graph."""
    return graph.endswith(CONTENT_SUFFIX)


def structure_graph(graph: str) -> IRI:
    """The graph whose content ``graph`` holds (``graph`` itself when it is not a content graph)."""
    if is_content_graph(graph):
        return IRI.trusted(graph[: -len(CONTENT_SUFFIX)])
    return IRI.trusted(graph)


def _fallback(value: Any) -> Any:
    own = getattr(type(value), "__trails_json__", None)
    if own is not None:  # a trails value that keeps its (pydantic-equal) form itself
        return own(value)
    # loaded for the first value JSON cannot hold, so a reader of content never loads it
    from pydantic_core import to_jsonable_python

    try:
        return to_jsonable_python(value)
    except Exception:  # pydantic raises its own error for unknown types
        return str(value)


def canonical_json(value: Any) -> str:
    """The one canonical JSON text of ``value``.

    A value whose class defines ``__trails_json__`` (a recalled memory) gives its
    JSON-able form itself, the form pydantic gives, kept instead of converted again.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_fallback
    )


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_sha256(text: str) -> str:
    """The digest of a JSON value kept as text in its own key order (a persisted envelope's
    ``trails:arguments`` and ``trails:result``): the sha256 of its canonical JSON, so the
    order the text keeps does not count; of the text itself when it is not JSON (masking
    may have cut through it). The recorder records it and verification recomputes it."""
    try:
        value = json.loads(text)
    except ValueError:
        return sha256_hex(text)
    return sha256_hex(canonical_json(value))


def unicode_problem(text: str) -> str | None:
    """Why ``text`` (a canonical JSON form) cannot be recorded as RDF, or None when it can.

    RDF literals hold Unicode scalar values only; Python strings may also hold
    unpaired surrogates (from ``surrogateescape`` decoding, for instance).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"text that is not valid Unicode (unpaired surrogate {text[exc.start]!r} at "
            f"character {exc.start} of its JSON form): {text.encode('utf-8', 'backslashreplace').decode()[:200]}"
        )
    return None


_ERASED = f"""
SELECT ?erasure ?at ?reason ?by $entity WHERE {{
  GRAPH ?receipt {{
    $entity {PROV.wasInvalidatedBy.n3()} ?erasure .
    ?erasure a {T.Erasure.n3()} ; {T.erasureReason.n3()} ?reason ; {PROV.startedAtTime.n3()} ?at .
    OPTIONAL {{ ?erasure {PROV.wasAssociatedWith.n3()}/{T.principalId.n3()} ?by }}
  }}
}} LIMIT 1
"""


def erasure_of(store: Store, entity: str) -> str | None:
    """Who erased ``entity``'s content, when and why (one line), or None when it was not erased.

    Replay and the projection reader name it when they meet content that is gone.
    """
    result = store.query(_ERASED, {"entity": IRI.trusted(entity)})
    assert isinstance(result, Solutions)
    for row in result:
        by, at, reason = row.get("by"), row.get("at"), row.get("reason")
        return (
            f"erased by {by.value if isinstance(by, Literal) else 'unknown'} at "
            f"{at.value if isinstance(at, Literal) else '?'} ({row['erasure']}): "
            f"{reason.value if isinstance(reason, Literal) else ''}"
        )
    return None
