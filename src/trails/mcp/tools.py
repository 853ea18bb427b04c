"""A tool of a mounted MCP server as a capability: its spec, its schema check, its answer.

``trails.mcp.mounts`` keeps the connections; this module holds what does not need
one: the capability spec a listed tool becomes (validated against the server's JSON
schema, its parameters and side effects read from the schema and the hints), what a
call's result returns to ``invoke``, and how a message the SDK could not read is
named in an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict

from trails.errors import CapabilityError, ValidationError
from trails.kernel.registry import CapabilitySpec, ParamSpec

__all__ = [
    "McpToolSpec",
    "ToolArgs",
    "ToolFailed",
    "malformed",
    "one_line",
    "params_of",
    "side_effects_of",
    "tool_result",
    "validator_of",
    "whose",
]

_JSON_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
    "null": "None",
}


class ToolFailed(CapabilityError):
    """A mounted tool answered with an error (an error reply or an ``isError`` result)."""


def one_line(exc: BaseException) -> str:
    """An exception as one line, reaching into the SDK's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"


@dataclass(frozen=True)
class McpToolSpec(CapabilitySpec):
    """A capability that is a tool of a mounted MCP server: validated against the
    server's JSON schema, described by its manifest, and carrying its MCP tool."""

    tool: Mapping[str, Any] = field(default_factory=dict)
    """The tool as the server listed it (the MCP ``Tool`` object, camelCase keys)."""
    server: str = ""
    """The prefix of the mounted server it belongs to."""
    owner: int = 0
    """Which mount registered it (so a later mount's tools are not unregistered)."""
    validator: Any = None
    """The input schema's validator, built once (None: built per call)."""

    def validate(self, args: Mapping[str, Any] | None) -> dict[str, Any]:
        """The arguments, checked against the tool's input schema.

        Raises:
            ValidationError: they do not fit the schema.
        """
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise ValidationError(
                self.id, f"arguments must be a mapping, not {type(args).__name__}"
            )
        checked = dict(args)
        validator = self.validator or validator_of(self.tool)
        try:
            if validator.is_valid(checked):
                return checked
            problems = sorted(validator.iter_errors(checked), key=lambda e: list(e.path))
        except Exception as exc:  # the server's schema itself is broken
            raise ValidationError(
                self.id, f"the server's input schema cannot be checked: {one_line(exc)}"
            ) from exc
        if problems:
            raise ValidationError(
                self.id,
                "; ".join(
                    f"{'.'.join(str(p) for p in e.path) or '(args)'}: {e.message}" for e in problems
                ),
            )
        return checked

    def manifest(self) -> dict[str, Any]:
        """The capability's manifest, with the server's input and output schemas."""
        manifest = super().manifest()
        manifest["input_schema"] = dict(self.tool.get("inputSchema") or {"type": "object"})
        manifest["output_schema"] = dict(self.tool.get("outputSchema") or {})
        return manifest


def validator_of(tool: Mapping[str, Any]) -> Any:
    return jsonschema.Draft202012Validator(tool.get("inputSchema") or {"type": "object"})


class ToolArgs(BaseModel):
    """The input model of a mounted tool: the server's schema validates, not this."""

    model_config = ConfigDict(extra="allow")


def params_of(schema: Mapping[str, Any]) -> tuple[ParamSpec, ...]:
    required = set(schema.get("required") or [])
    props = schema.get("properties") or {}
    params = []
    for name, prop in props.items() if isinstance(props, Mapping) else ():
        kind = prop.get("type") if isinstance(prop, Mapping) else None
        kind = kind if isinstance(kind, str) else "Any"
        default = prop.get("default") if isinstance(prop, Mapping) else None
        params.append(ParamSpec(str(name), _JSON_TYPES.get(kind, kind), name in required, default))
    return tuple(params)


def side_effects_of(annotations: Mapping[str, Any]) -> bool:
    """MCP's hints: read-only means none; otherwise (destructive or unsaid) it has them."""
    return not bool(annotations.get("readOnlyHint", False))


_JSON_NAMES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def malformed(exc: Exception) -> str:
    """What a message the SDK could not read was, in a few words."""
    try:
        errors = exc.errors() if hasattr(exc, "errors") else []
    except Exception:  # not pydantic's: its text is all there is
        errors = []
    for error in errors:
        raw = error.get("input") if isinstance(error, Mapping) else None
        if isinstance(raw, Mapping) and "result" in raw and not isinstance(raw["result"], Mapping):
            value = raw["result"]
            kind = "null" if value is None else _JSON_NAMES.get(type(value), "a number")
            return f"an answer to request {raw.get('id')!r} whose result is {kind}, not an object"
    if errors and isinstance(errors[0], Mapping) and errors[0].get("msg"):
        detail = " ".join(str(errors[0]["msg"]).split())
    else:
        detail = one_line(exc)
    return f"a message that is not JSON-RPC ({detail[:200]})"


def whose(spec: CapabilitySpec) -> str:
    """Who registered a capability, in a few words (for a refused collision)."""
    if isinstance(spec, McpToolSpec):
        return f"the MCP server mounted as {spec.server}"
    return "the application's own"


def tool_result(capability_id: str, result: Any) -> Any:
    """What a call returns: the structured content, else the text (or the content blocks).

    Raises:
        ToolFailed: the result is an ``isError`` one.
    """
    blocks = [block.model_dump(mode="json", exclude_none=True) for block in result.content]
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    if result.is_error:
        raise ToolFailed(capability_id, " ".join(texts) or "the tool reported an error")
    if result.structured_content is not None:
        return result.structured_content
    if len(blocks) == 1 and len(texts) == 1:
        return texts[0]
    return blocks
