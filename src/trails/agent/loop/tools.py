"""Tool discovery and filtering: which capabilities a planner shows the model.

Every planner resolves ``tools=`` and ``tool_filter=`` the same way, once, at
``run()`` entry. ``tools=`` picks the candidate ids (all registered, an explicit
list, a zero-arg callable, or the N most recently registered); ``tool_filter=``
post-filters them by a predicate on each tool's metadata dict or by keywords.
Ids nobody registered stay in the list, marked ``(unregistered)``, so the model
sees the gap instead of a silently shorter catalogue. ``granted_by`` then keeps
only what the session's agent card grants (ADR-0015: the card decides which
capabilities a calling agent may see), and ``render_catalogue`` shows each
tool's side effects, cost estimate and preconditions, so the model can prefer
cheaper, safer steps (ADR-0018); a capability whose callable precondition does
not hold now is not offered at all.
"""

from __future__ import annotations

import fnmatch
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from trails.config import MCP_SERVERS, load_settings
from trails.errors import UnknownCapability, UserError
from trails.kernel.registry import all_capabilities, get_capability, unmet_precondition

__all__ = [
    "SOFT_TOOL_CAP",
    "UNREGISTERED",
    "ToolFilter",
    "ToolsSpec",
    "card_grants",
    "discover_tools",
    "granted_by",
    "offered_tools",
    "render_catalogue",
]

ToolsSpec: TypeAlias = Sequence[str] | Callable[[], Sequence[str]] | int | None
"""``tools=``: None (every registered capability), ids, a zero-arg callable, or N most recent."""

ToolFilter: TypeAlias = Callable[[dict[str, Any]], bool] | str | None
"""``tool_filter=``: a predicate on the metadata dict, or whitespace-separated keywords."""

#: Past this many auto-discovered capabilities with no filter, ``discover_tools`` warns.
SOFT_TOOL_CAP = 30

#: The description an unknown id carries in the catalogue.
UNREGISTERED = "(unregistered)"


def _unregistered(capability_id: str) -> dict[str, Any]:
    return {
        "id": capability_id,
        "description": UNREGISTERED,
        "registered": False,
        "params": [],
        "required": [],
        "types": {},
        "annotations": {},
        "input_shape": {},
        "output_shape": {},
    }


def _metadata(capability_id: str) -> dict[str, Any]:
    try:
        spec = get_capability(capability_id)
    except UnknownCapability:
        return _unregistered(capability_id)
    return spec.metadata() | {"registered": True}


def _ids(value: Any, what: str) -> list[str]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise UserError(f"{what} must be a list of capability ids, not {type(value).__name__}")
    for item in value:
        if not isinstance(item, str) or not item:
            raise UserError(f"{what} must hold non-empty capability id strings, not {item!r}")
    return list(dict.fromkeys(value))


def _candidates(tools: ToolsSpec) -> list[str]:
    if tools is None:
        return [spec.id for spec in all_capabilities()]
    if isinstance(tools, bool):
        raise UserError(
            "tools= does not accept a bool; pass None (all), a list of ids, "
            "a zero-arg callable, or an int N (the N most recently registered)"
        )
    if isinstance(tools, int):
        if tools < 0:
            raise UserError(f"tools={tools}: the number of recent capabilities must be >= 0")
        ids = [spec.id for spec in all_capabilities()]
        return ids[len(ids) - tools :] if tools else []
    if callable(tools):
        return _ids(tools(), "the list returned by tools=")
    return _ids(tools, "tools=")


def _keep(tool_filter: ToolFilter) -> Callable[[dict[str, Any]], bool]:
    if tool_filter is None:
        return lambda _meta: True
    if isinstance(tool_filter, str):
        words = [w.lower() for w in tool_filter.split()]
        if not words:
            return lambda _meta: True
        return lambda meta: any(
            w in str(meta["id"]).lower() or w in str(meta["description"]).lower() for w in words
        )
    if callable(tool_filter):
        return tool_filter
    raise UserError(
        f"tool_filter= must be None, a str of keywords or a predicate, "
        f"not {type(tool_filter).__name__}"
    )


def discover_tools(
    tools: ToolsSpec = None, *, tool_filter: ToolFilter = None
) -> list[tuple[str, dict[str, Any]]]:
    """List the tools a planner run exposes, as ``(capability_id, metadata)`` pairs.

    Args:
        tools: None for every registered capability; a list of ids (unknown ones are
            kept and marked ``(unregistered)``); a zero-arg callable returning ids,
            called once; or an int N for the N most recently registered.
        tool_filter: None; a predicate on the metadata dict (True keeps the tool); or
            whitespace-separated keywords, one of which must occur in the id or the
            description (case-insensitive). An empty string keeps everything.

    Returns:
        The tools, in registration order (or the order given), without those whose
        callable precondition does not hold now.

    Raises:
        UserError: ``tools`` is a bool, a negative int, a str, or holds non-str ids;
            ``tool_filter`` is of an unsupported type.

    Warns:
        UserWarning: more than ``SOFT_TOOL_CAP`` capabilities were auto-discovered
            (``tools=None``) and no ``tool_filter`` scopes them.
    """
    keep = _keep(tool_filter)
    ids = _candidates(tools)
    if tools is None and tool_filter is None and len(ids) > SOFT_TOOL_CAP:
        warnings.warn(
            f"{len(ids)} capabilities discovered for the planner prompt (soft cap "
            f"{SOFT_TOOL_CAP}); scope them with tools= or tool_filter= to cut cost",
            UserWarning,
            stacklevel=2,
        )
    pairs = [(cid, _metadata(cid)) for cid in ids if _holds(cid)]
    return [(cid, meta) for cid, meta in pairs if keep(meta)]


def _holds(capability_id: str) -> bool:
    """Whether every callable precondition of the capability holds now (unknown ids: yes)."""
    try:
        spec = get_capability(capability_id)
    except UnknownCapability:
        return True
    return unmet_precondition(spec) is None


def card_grants(card: Any) -> tuple[str, ...] | None:
    """The capability ids (or globs) an agent card grants; None when it does not say.

    The card's ``capabilities``, ``skills`` or ``actions`` (a WoT Thing
    Description's action names) is read, as a key or an attribute: a list of ids
    (or of objects with an ``id`` or ``name``), or a mapping whose keys are ids.

    Raises:
        UserError: the grant is neither a list nor a mapping.
    """
    if card is None:
        return None
    for key in ("capabilities", "skills", "actions"):
        value = card.get(key) if isinstance(card, Mapping) else getattr(card, key, None)
        if value is None:
            continue
        if isinstance(value, Mapping):
            return tuple(str(k) for k in value)
        if isinstance(value, Sequence) and not isinstance(value, str | bytes):
            names = []
            for item in value:
                if isinstance(item, Mapping):
                    item = item.get("id") or item.get("name")
                if isinstance(item, str) and item:
                    names.append(item)
            return tuple(names)
        raise UserError(f"the agent card's {key!r} must be a list or a mapping, not {value!r}")
    return None


def granted_by(
    card: Any, tool_specs: list[tuple[str, dict[str, Any]]]
) -> list[tuple[str, dict[str, Any]]]:
    """The tools of ``tool_specs`` the agent card grants (all of them when it says nothing)."""
    grants = card_grants(card)
    if grants is None:
        return tool_specs
    return [(cid, m) for cid, m in tool_specs if any(fnmatch.fnmatchcase(cid, g) for g in grants)]


def offered_tools(
    session: Any, tools: ToolsSpec, tool_filter: ToolFilter
) -> list[tuple[str, dict[str, Any]]]:
    """The tools a planner run offers: ``discover_tools(tools, tool_filter=...)``, cut to
    what the session's agent card grants. The MCP servers of ``[[mcp.servers]]`` are
    mounted first (once per process), so their tools are in the first run's catalogue."""
    _mount_configured()
    return granted_by(
        getattr(session, "card", None), discover_tools(tools, tool_filter=tool_filter)
    )


def _mount_configured() -> None:
    """Mount the configured MCP servers through the plugin path the settings name (this
    room imports no MCP code: the path connects the rooms, as recorder plugins do)."""
    settings = load_settings()
    if settings.section("mcp").get("servers"):
        settings.plugin(MCP_SERVERS)(None, settings)


def _traits(meta: dict[str, Any]) -> str:
    notes = []
    if meta.get("side_effects"):
        notes.append("side effects: changes the world")
    cost = meta.get("cost_estimate")
    if cost:
        notes.append("estimated cost " + ", ".join(f"{k} {v:g}" for k, v in cost.items()))
    conditions = meta.get("preconditions")
    if conditions:
        notes.append("preconditions: " + "; ".join(conditions))
    return f" [{'; '.join(notes)}]" if notes else ""


def render_catalogue(tool_specs: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """The tool list of a planner prompt: id, description, side effects, cost,
    preconditions, parameters.

    Args:
        tool_specs: ``(capability_id, metadata)`` pairs from ``discover_tools``.

    Returns:
        One block per tool; ``(none)`` when the list is empty.
    """
    if not tool_specs:
        return "(none)"
    lines: list[str] = []
    for cid, meta in tool_specs:
        if not meta.get("registered", True):
            lines.append(f"- {cid} {UNREGISTERED}")
            continue
        description = meta.get("description") or "(no description)"
        lines.append(f"- {cid}: {description}{_traits(meta)}")
        required = set(meta.get("required", []))
        types = meta.get("types", {})
        for name in meta.get("params", []):
            flag = "required" if name in required else "optional"
            lines.append(f"    {name}: {types.get(name, 'Any')} ({flag})")
        if not meta.get("params"):
            lines.append("    (no parameters)")
    return "\n".join(lines)
