"""selectools' standalone structured-output helpers, over trails' ``output_format``.

``extract_json``, ``schema_from_response_format``, ``parse_and_validate``,
``build_schema_instruction`` and ``validation_retry_message`` keep seed 002's names and
behaviour for custom validation pipelines; the schema and the validation are trails'
(``trails.llm.output_format``), the same ones a run with ``response_format=`` uses.
"""

from __future__ import annotations

import json
import re
from typing import Any

from trails.llm.structured import ResponseFormat, output_format
from trails.llm.types import Response

__all__ = [
    "ResponseFormat",
    "build_schema_instruction",
    "extract_json",
    "parse_and_validate",
    "schema_from_response_format",
    "validation_retry_message",
]

_FENCED = re.compile(r"```(?:json)?\s*\n?(.*?)```", re.DOTALL)


def _balanced(text: str, start: int) -> str | None:
    """The brace- (or bracket-) balanced JSON text starting at ``start``, strings respected."""
    opener = text[start]
    closer = "}" if opener == "{" else "]"
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        char = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == opener:
            depth += 1
        elif char == closer:
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def extract_json(text: str) -> str | None:
    """The first JSON object or array in ``text`` (a fenced block first, then the first
    balanced ``{...}`` / ``[...]`` that parses); None when there is none."""
    candidates = [m.group(1).strip() for m in _FENCED.finditer(text)]
    candidates += [
        found for i, char in enumerate(text) if char in "{[" and (found := _balanced(text, i))
    ]
    for candidate in candidates:
        try:
            json.loads(candidate)
        except ValueError:
            continue
        return candidate
    return None


def schema_from_response_format(fmt: ResponseFormat) -> dict[str, Any]:
    """The JSON schema of a pydantic model class or of a schema dict."""
    return output_format(fmt).schema


def parse_and_validate(text: str, fmt: ResponseFormat) -> Any:
    """The JSON in ``text``, validated against ``fmt``: a model instance, or the JSON value.

    Raises:
        ValueError: no JSON in the text, or it does not validate (the message says why).
    """
    found = extract_json(text)
    if found is None:
        raise ValueError("no JSON object or array found in the text")
    value, error = output_format(fmt).check(Response(text=found, model=""))
    if error is not None:
        raise ValueError(error)
    return value


def build_schema_instruction(schema: dict[str, Any]) -> str:
    """The system-prompt fragment asking for JSON that matches ``schema``."""
    return (
        "Respond with a single JSON value that matches this JSON schema, and nothing else:\n"
        + json.dumps(schema, indent=2, sort_keys=True)
    )


def validation_retry_message(error: str | BaseException) -> str:
    """What the model is told when its answer failed validation."""
    return (
        f"Your previous answer did not match the required schema: {error}. "
        "Reply again with only the corrected JSON."
    )
