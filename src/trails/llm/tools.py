"""Tools offered to a model: capabilities (or plain dicts) turned into ``ToolSpec``.

Native tool calling needs each tool's name, description and the JSON schema
of its arguments. A capability already has all three in its manifest
(``id``, ``description``, ``input_schema``), so ``tool_specs`` reads them
from there (given the capability spec or the function ``@capability``
decorated); a ``{"name", "description", "parameters"}`` dict (or an
``input_schema`` key, Anthropic's spelling) works too. Duck-typed, so the LLM
room does not import the kernel's registry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trails.errors import UserError
from trails.llm.types import ToolSpec, wire_name

__all__ = ["ToolLike", "tool_specs"]

ToolLike = Any  # a capability (its spec or decorated function), a ToolSpec, or a mapping


def _one(tool: ToolLike, i: int) -> ToolSpec:
    if isinstance(tool, ToolSpec):
        return tool
    tool = getattr(tool, "__trails_capability__", tool)  # a function under @capability
    if callable(getattr(tool, "manifest", None)):
        manifest = tool.manifest()
        return ToolSpec(
            str(manifest["id"]), str(manifest.get("description") or ""), manifest["input_schema"]
        )
    if isinstance(tool, Mapping):
        name = tool.get("name")
        schema = tool.get("parameters", tool.get("input_schema"))
        if not isinstance(name, str) or not name:
            raise UserError(f"tool #{i} has no name")
        if schema is None:
            schema = {"type": "object", "properties": {}}
        if not isinstance(schema, Mapping):
            raise UserError(f"tool {name!r}: parameters must be a JSON schema object")
        return ToolSpec(name, str(tool.get("description") or ""), dict(schema))
    raise UserError(
        f"tool #{i} is a {type(tool).__name__}; pass capabilities (@capability functions "
        "or their specs), ToolSpec or "
        "{'name', 'description', 'parameters'} dicts"
    )


def tool_specs(tools: Iterable[ToolLike] | None) -> tuple[ToolSpec, ...]:
    """The tools as ``ToolSpec``, names unique.

    Raises:
        UserError: a tool of an unknown kind, without a name, or two tools whose
            names a provider would see as one (``wire_name``).
    """
    if tools is None:
        return ()
    specs = tuple(_one(t, i) for i, t in enumerate(tools))
    seen: dict[str, str] = {}
    for spec in specs:
        wire = wire_name(spec.name)
        if wire in seen:
            raise UserError(
                f"tools {seen[wire]!r} and {spec.name!r} would both be called {wire!r} by a "
                "provider; rename one"
            )
        seen[wire] = spec.name
    return specs
