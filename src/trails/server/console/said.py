"""What was said, as a person reads it: prompts as chat turns, recorded JSON as text.

trails records a completion's prompt as the request it sent (canonical JSON: the
``messages`` and the ``params``), a call's input and output as canonical JSON, and
goals, answers and completions as text. Shown as recorded, an auditor reads
``{"messages":[{"content":"You are...\\n..."`` with its escapes. This module turns
those values into what the console shows:

- ``turns``: a prompt's messages as chat turns by role (system, user, assistant,
  tool), each with its text, the tools an assistant turn called and the call a tool
  turn answers;
- ``readable``: any recorded value as plain text (a prompt as its turns, JSON as
  ``key: value`` lines with its strings unescaped, other text as it is);
- ``kind_of``: what a recorded value is (goal, answer, prompt, completion, tool
  input, tool output ...) from its property and its entity's type, for search hits;
- ``snippet``: the part of a readable value around a match.

Nothing here reads the store; the pages pass the values in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KINDS", "Turn", "kind_of", "readable", "snippet", "turns"]

_TRAILS = "https://w3id.org/trails/ns#"
_PROV_VALUE = "http://www.w3.org/ns/prov#value"

KINDS: dict[str, str] = {
    _TRAILS + "goal": "goal",
    _TRAILS + "answer": "answer",
    _TRAILS + "errorMessage": "error message",
    _TRAILS + "arguments": "tool input",
    _TRAILS + "result": "tool output",
    _TRAILS + "recallQuery": "memory query",
    _TRAILS + "topic": "memory topic",
    _TRAILS + "tags": "memory tags",
    _TRAILS + "sessionLabel": "session label",
}
"""What a content property's value is, by the property."""

_ENTITY_KINDS = {
    _TRAILS + "Prompt": "prompt",
    _TRAILS + "Completion": "completion",
    _TRAILS + "CapabilityInput": "tool input",
    _TRAILS + "CapabilityOutput": "tool output",
    _TRAILS + "ToolCallRequest": "tool call",
    _TRAILS + "PlanDocument": "plan",
    _TRAILS + "Memory": "memory",
}
_ROLES = ("system", "user", "assistant", "tool")


@dataclass
class Turn:
    """One message of a conversation: who said it, what, and the tools it involves."""

    role: str
    text: str
    name: str = ""
    calls: list[str] = field(default_factory=list)
    """An assistant turn's tool calls, each ``name(arguments)``."""
    answers: str = ""
    """A tool turn's call id (the call it answers)."""


def _json(value: str) -> Any:
    try:
        return json.loads(value)
    except (ValueError, TypeError):
        return None


def _text_of(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") == "tool_result":
                parts.append(_text_of(part.get("content")))
            else:
                parts.append(_plain(part))
        return "\n".join(p for p in parts if p)
    return _plain(content)


def _call(call: Any) -> str:
    """A tool call as ``name(arguments)`` (OpenAI's nested ``function`` or flat)."""
    if not isinstance(call, dict):
        return _plain(call)
    nested = call.get("function")
    function: dict[str, Any] = nested if isinstance(nested, dict) else call
    name = str(function.get("name") or "tool")
    arguments = function.get("arguments", function.get("input", function.get("args", "")))
    if isinstance(arguments, str):
        decoded = _json(arguments)
        arguments = decoded if decoded is not None else arguments
    shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"{name}({shown})"


def turns(value: str | None) -> list[Turn] | None:
    """A prompt's messages as chat turns, or None when ``value`` holds no messages.

    Args:
        value: a recorded prompt (``{"messages": [...], "params": {...}}``) or a list of
            messages.

    Returns:
        One ``Turn`` per message, in order (a role outside system, user, assistant and
        tool is kept as it was recorded).
    """
    data = _json(value) if value else None
    messages = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(messages, list) or not messages:
        return None
    if not all(isinstance(m, dict) and "role" in m for m in messages):
        return None
    out = []
    for m in messages:
        calls = m.get("tool_calls") or []
        text = _text_of(m.get("content"))
        data = _json(text) if text.lstrip().startswith(("{", "[")) else None
        out.append(
            Turn(
                role=str(m.get("role") or ""),
                # a turn that is a JSON object (a ReAct step: thought, action ...) as lines
                text=_plain(data) if isinstance(data, (dict, list)) else text,
                name=str(m.get("name") or ""),
                calls=[_call(c) for c in calls] if isinstance(calls, list) else [],
                answers=str(m.get("tool_call_id") or ""),
            )
        )
    return out


def _plain(data: Any, indent: str = "") -> str:
    """JSON data as lines of text: strings as they are, objects as ``key: value``."""
    if isinstance(data, str):
        return data
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "true" if data else "false"
    if isinstance(data, (int, float)):
        return str(data)
    if isinstance(data, list):
        if all(not isinstance(item, (dict, list)) for item in data):
            return ", ".join(_plain(item) for item in data)
        return "\n".join(f"{indent}- " + _plain(item, indent + "  ").lstrip() for item in data)
    if isinstance(data, dict):
        lines = []
        for key, item in data.items():
            text = _plain(item, indent + "  ")
            if isinstance(item, (dict, list)) and "\n" in text:
                lines.append(f"{indent}{key}:\n{text}")
            else:
                lines.append(f"{indent}{key}: {text}")
        return "\n".join(lines)
    return str(data)


def readable(value: str | None) -> str:
    """A recorded value as plain text: a prompt's turns as ``role: text`` lines, other JSON
    as ``key: value`` lines (strings unescaped), anything else as it is."""
    if not value:
        return ""
    said = turns(value)
    if said is not None:
        lines = []
        for t in said:
            line = f"{t.role}: {t.text}" if t.text else f"{t.role}:"
            if t.calls:
                line += " " + "; ".join(t.calls)
            lines.append(line)
        return "\n".join(lines)
    data = _json(value)
    if isinstance(data, (dict, list)):
        return _plain(data)
    return data if isinstance(data, str) else value


def kind_of(prop: str, types: set[str] | frozenset[str] = frozenset()) -> str:
    """What a recorded value is: by its content property, or for ``prov:value`` by its
    entity's types (a prompt, a completion, a tool's input or output ...)."""
    if prop in KINDS:
        return KINDS[prop]
    if prop == _PROV_VALUE:
        for t in sorted(types):
            if t in _ENTITY_KINDS:
                return _ENTITY_KINDS[t]
        return "recorded value"
    return prop.rsplit("#", 1)[-1].rsplit("/", 1)[-1]


def snippet(text: str, words: str, width: int = 60) -> tuple[str, str, str]:
    """The text around the first place ``words`` (or, failing that, its first word) occur:
    what comes before, the match, what follows; the start of the text when none occurs."""
    low = text.lower()
    at, size = low.find(words.lower()), len(words)
    if at < 0:
        for word in words.split():
            at, size = low.find(word.lower()), len(word)
            if at >= 0:
                break
    if at < 0:
        return (text[: 2 * width] + ("…" if len(text) > 2 * width else ""), "", "")
    start = max(at - width, 0)
    end = at + size
    before = ("…" if start else "") + text[start:at]
    after = text[end : end + width] + ("…" if end + width < len(text) else "")
    return (before, text[at:end], after)
