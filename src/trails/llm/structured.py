"""Structured output: a response format (a pydantic model or a JSON schema), checked and retried.

``LLMClient.complete(..., response_format=...)`` asks the provider for an
answer in that form (its JSON mode, or a forced tool where that is the
provider's way, see each adapter), then ``OutputFormat.check`` validates the
answer here. An answer that does not validate is recorded as a completion
with status ``invalid`` and the model is asked again, shown the validation
error (``OutputFormat.retry_messages``), up to ``max_retries`` times. The
check and the retry prompt are plain functions of the response, so the sync
and async clients share them and differ only in how they call the model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import jsonschema
import pydantic

from trails.errors import UserError
from trails.llm.types import Message, Response

__all__ = ["OutputFormat", "ResponseFormat", "output_format"]


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)


def _name(raw: object) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", str(raw or "")).strip("_")[:64]
    return name or "answer"


@dataclass(frozen=True)
class OutputFormat:
    """A response format ready to send and to check.

    Attributes:
        name: a provider-safe name (the pydantic class name, or the schema's ``title``).
        schema: the JSON schema sent to the provider and recorded with the prompt.
        model: the pydantic model the answer is validated into, or None for a plain schema.
    """

    name: str
    schema: dict[str, Any]
    model: type[pydantic.BaseModel] | None = None

    def raw(self, response: Response) -> str:
        """The answer's JSON text: the forced tool's arguments, else the text."""
        for call in response.tool_calls:
            if call.name == self.name:
                return json.dumps(call.arguments, ensure_ascii=False)
        return response.text

    def check(self, response: Response) -> tuple[Any, str | None]:
        """Validate one answer.

        Returns:
            ``(parsed, None)`` when it validates (a model instance, or the JSON
            value for a plain schema), else ``(None, what is wrong)``.
        """
        text = self.raw(response)
        fenced = _FENCE.match(text)
        if fenced:
            text = fenced.group(1)
        try:
            data = json.loads(text)
        except ValueError as exc:
            return None, f"the answer is not JSON ({exc})"
        if self.model is not None:
            try:
                return self.model.model_validate(data), None
            except pydantic.ValidationError as exc:
                return None, "; ".join(
                    f"{'.'.join(str(p) for p in err['loc']) or '(answer)'}: {err['msg']}"
                    for err in exc.errors()
                )
        validator = jsonschema.Draft202012Validator(self.schema)
        found = sorted(
            f"{'.'.join(str(p) for p in err.absolute_path) or '(answer)'}: {err.message}"
            for err in validator.iter_errors(data)
        )
        if found:
            return None, "; ".join(found)
        return data, None

    def retry_messages(
        self, messages: list[Message], response: Response, error: str
    ) -> list[Message]:
        """The next attempt's messages: the failed answer, then what was wrong with it."""
        return [
            *messages,
            Message("assistant", self.raw(response)),
            Message(
                "user",
                f"That answer does not match the required JSON schema: {error}. "
                "Answer again with only JSON that matches the schema.",
            ),
        ]


ResponseFormat = type[pydantic.BaseModel] | dict[str, Any] | OutputFormat


def output_format(spec: ResponseFormat) -> OutputFormat:
    """Normalise ``response_format=``: a pydantic model class, a JSON schema dict, or an
    ``OutputFormat`` (a recorded one, as a rerun asks again: its name and schema as recorded).

    Raises:
        UserError: anything else, or a schema that is not a valid JSON schema.
    """
    if isinstance(spec, OutputFormat):
        return spec
    if isinstance(spec, type) and issubclass(spec, pydantic.BaseModel):
        return OutputFormat(_name(spec.__name__), spec.model_json_schema(), spec)
    if isinstance(spec, dict):
        try:
            jsonschema.Draft202012Validator.check_schema(spec)
        except jsonschema.SchemaError as exc:
            raise UserError(f"response_format is not a valid JSON schema: {exc.message}") from exc
        return OutputFormat(_name(spec.get("title")), dict(spec))
    raise UserError(
        "response_format takes a pydantic model class or a JSON schema dict, "
        f"not {type(spec).__name__}"
    )
