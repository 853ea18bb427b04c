"""Canonical JSON and its sha256: how trails records structured content.

Changing ``canonical_json`` changes every recorded hash (capability inputs and
outputs, prompts, request hashes used by replay). Treat it as a file format:
sorted keys, no insignificant white space, UTF-8 kept as is, and values JSON
cannot hold turned into their JSON-able form by pydantic (datetimes, models,
dataclasses), or their ``str`` as the last resort.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic_core import to_jsonable_python

__all__ = ["canonical_json", "sha256_hex", "unicode_problem"]


def _fallback(value: Any) -> Any:
    try:
        return to_jsonable_python(value)
    except Exception:  # pydantic raises its own error for unknown types
        return str(value)


def canonical_json(value: Any) -> str:
    """The one canonical JSON text of ``value``."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_fallback
    )


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
