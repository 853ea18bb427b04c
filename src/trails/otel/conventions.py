"""What a GenAI span means, whatever version of the conventions it was written in.

The OpenTelemetry GenAI semantic conventions are still marked Development and
real traffic carries several versions at once: the current names
(``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.input.messages``
...), the older ones still emitted by default (``gen_ai.system``,
``gen_ai.prompt.N.*``, ``gen_ai.completion.N.*``, the ``gen_ai.content.*``
events) and OpenInference's ``llm.*`` / ``openinference.span.kind``. This
module reads all of them into one ``Reading`` per span, so the mapping to
provenance (``trails.otel.mapping``) never looks at attribute names.
``docs/otel.md`` has the table; keep the two in step.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trails.otel.otlp import Span

__all__ = [
    "AGENT_OPERATIONS",
    "INFERENCE_OPERATIONS",
    "MEMORY_OPERATIONS",
    "TOOL_OPERATIONS",
    "Reading",
    "read_span",
]

INFERENCE_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "embeddings"})
TOOL_OPERATIONS = frozenset({"execute_tool"})
AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent", "invoke_workflow"})
MEMORY_OPERATIONS = frozenset(
    {"create_memory", "update_memory", "search_memory", "delete_memory", "retrieval"}
)

_OPENINFERENCE_KINDS = {
    "LLM": "chat",
    "EMBEDDING": "embeddings",
    "TOOL": "execute_tool",
    "AGENT": "invoke_agent",
    "RETRIEVER": "retrieval",
}
_TRACELOOP_KINDS = {"tool": "execute_tool", "agent": "invoke_agent", "workflow": "invoke_workflow"}
_INDEXED = re.compile(r"^(?P<prefix>.+?)\.(?P<n>\d+)\.(?P<rest>.+)$")


@dataclass(frozen=True)
class Reading:
    """A span read through the conventions. Fields are None when the span does not say.

    ``category`` is ``inference``, ``tool``, ``agent``, ``memory`` or ``span`` (any
    other span). Messages are trails message dicts (``role``, ``content``).
    """

    operation: str
    category: str
    provider: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    conversation_id: str | None = None
    agent_id: str | None = None
    agent_name: str | None = None
    agent_description: str | None = None
    tool_name: str | None = None
    tool_description: str | None = None
    tool_call_id: str | None = None
    tool_arguments: Any = None
    tool_result: Any = None
    requested_tool_calls: tuple[str, ...] = ()
    messages: list[dict[str, Any]] | None = None
    output_text: str | None = None
    finish_reasons: tuple[str, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] = ()
    response_id: str | None = None
    error_type: str | None = None
    error_message: str | None = None
    failed: bool = False
    principal: str | None = None
    query: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    request: dict[str, Any] = field(default_factory=dict)


def _first(attrs: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        value = attrs.get(name)
        if value not in (None, "", []):
            return value
    return None


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return None


def _lower(value: Any) -> str | None:
    return str(value).lower() if value is not None else None


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _indexed(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest`` attributes as a list of dicts of ``rest`` (N ascending)."""
    rows: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix + "."):
            continue
        m = _INDEXED.match(key)
        if m is None or m.group("prefix") != prefix:
            continue
        rows.setdefault(int(m.group("n")), {})[m.group("rest")] = value
    return [rows[n] for n in sorted(rows)]


def _parts_text(parts: Any) -> tuple[str, list[dict[str, Any]]]:
    """Text of a current-convention ``parts`` list, and its tool calls."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    if isinstance(parts, str):
        return parts, calls
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" or (kind is None and "content" in part):
            texts.append(_text(part.get("content")))
        elif kind == "tool_call":
            calls.append(
                {"id": part.get("id"), "name": part.get("name"), "arguments": part.get("arguments")}
            )
        elif kind == "tool_call_response":  # pydantic-ai names the response ``result``
            response = part["response"] if "response" in part else part.get("result")
            texts.append(_text({"tool_call_id": part.get("id"), "response": response}))
        elif kind is not None:
            texts.append(_text(part))
    return "".join(texts), calls


def _message(role: Any, text: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    content = text
    if calls:
        content = (text + "\n" if text else "") + _text({"tool_calls": calls})
    return {"role": str(role or "user"), "content": content}


def _current_messages(value: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(messages, tool calls) of ``gen_ai.input.messages`` / ``gen_ai.output.messages``."""
    data = _json(value)
    out: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for m in data if isinstance(data, list) else []:
        if not isinstance(m, dict):
            continue
        if "parts" in m:
            text, found = _parts_text(m.get("parts"))
        else:  # the events' {role, content, tool_calls} shape
            text, found = _text(m.get("content")), []
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                found.append(
                    {"id": tc.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")}
                )
        calls.extend(found)
        out.append(_message(m.get("role"), text, found))
    return out, calls


def _flat_messages(
    rows: list[dict[str, Any]], prefix: str = ""
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Messages of the indexed forms (``gen_ai.prompt.N.role`` / ``llm.input_messages.N.message.role``)."""
    out: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for row in rows:
        found: list[dict[str, Any]] = []
        for call in _indexed(row, f"{prefix}tool_calls"):
            found.append(
                {
                    "id": _first(call, "id", "tool_call.id"),
                    "name": _first(call, "name", "tool_call.function.name"),
                    "arguments": _json(_first(call, "arguments", "tool_call.function.arguments")),
                }
            )
        calls.extend(found)
        out.append(_message(row.get(f"{prefix}role"), _text(row.get(f"{prefix}content")), found))
    return out, calls


def _operation(span: Span) -> str:
    a = span.attributes
    op = _first(a, "gen_ai.operation.name")
    if op:
        return str(op)
    kind = _first(a, "openinference.span.kind")
    if kind:
        return _OPENINFERENCE_KINDS.get(str(kind).upper(), "")
    kind = _first(a, "traceloop.span.kind")
    if kind in _TRACELOOP_KINDS:
        return _TRACELOOP_KINDS[str(kind)]
    if _first(a, "llm.request.type") in ("chat", "completion"):
        return "chat" if a["llm.request.type"] == "chat" else "text_completion"
    if _first(a, "gen_ai.system", "gen_ai.request.model", "gen_ai.provider.name"):
        return "chat"
    return ""


def _category(op: str) -> str:
    if op in INFERENCE_OPERATIONS:
        return "inference"
    if op in TOOL_OPERATIONS:
        return "tool"
    if op in AGENT_OPERATIONS:
        return "agent"
    if op in MEMORY_OPERATIONS:
        return "memory"
    return "span"


def _content_events(span: Span) -> dict[str, Any]:
    """Attributes carried by content events (current and older names), merged."""
    merged: dict[str, Any] = {}
    for event in span.events:
        if event.name in (
            "gen_ai.client.inference.operation.details",
            "gen_ai.content.prompt",
            "gen_ai.content.completion",
        ):
            merged.update(event.attributes)
    return merged


_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _event_messages(span: Span) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(input, output) messages of the 1.30 per-message events, in the events' shape.

    Their message is the event's body (``gen_ai.event.body``, as the log records
    carry it); a body without content (content capture off) gives no message.
    """
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for event in span.events:
        body = event.attributes.get("gen_ai.event.body")
        if not isinstance(body, dict):
            continue
        if event.name == "gen_ai.choice":
            message = body.get("message")
            if isinstance(message, dict) and ("content" in message or "tool_calls" in message):
                outputs.append({"role": "assistant", **message})
            continue
        role = _MESSAGE_EVENTS.get(event.name)
        if role is None or not ("content" in body or "tool_calls" in body):
            continue
        if role == "tool":
            response = {"type": "tool_call_response", "id": body.get("id")}
            inputs.append(
                {"role": "tool", "parts": [{**response, "response": body.get("content")}]}
            )
        else:
            inputs.append({"role": body.get("role") or role, **body})
    return inputs, outputs


def _messages(
    span: Span, attrs: Mapping[str, Any]
) -> tuple[list[dict[str, Any]] | None, str | None, list[dict[str, Any]]]:
    """(input messages, output text, requested tool calls) from whichever form the span has."""
    messages: list[dict[str, Any]] | None = None
    output: str | None = None
    calls: list[dict[str, Any]] = []
    if span.events and not any(k in attrs for k in ("gen_ai.input.messages", "gen_ai.prompt")):
        event_inputs, event_outputs = _event_messages(span)
        if event_inputs:
            messages = _current_messages(event_inputs)[0]
        if event_outputs:
            out_msgs, calls = _current_messages(event_outputs)
            output = "".join(m["content"] for m in out_msgs)
        if messages is not None or output is not None:
            return messages, output, calls
    system = _first(attrs, "gen_ai.system_instructions")
    inputs = _first(attrs, "gen_ai.input.messages", "gen_ai.prompt")
    outputs = _first(attrs, "gen_ai.output.messages", "gen_ai.completion")
    if inputs is not None or system is not None:
        messages = []
        if system is not None:
            text, _ = _parts_text(_json(system))
            messages.append({"role": "system", "content": text})
        messages.extend(_current_messages(inputs)[0] if inputs is not None else [])
    if outputs is not None:
        out_msgs, calls = _current_messages(outputs)
        output = "".join(m["content"] for m in out_msgs)
    if messages is None:
        for prefix, inner in (("gen_ai.prompt", ""), ("llm.input_messages", "message.")):
            rows = _indexed(attrs, prefix)
            if rows:
                messages = _flat_messages(rows, inner)[0]
                break
    if output is None:
        for prefix, inner in (("gen_ai.completion", ""), ("llm.output_messages", "message.")):
            rows = _indexed(attrs, prefix)
            if rows:
                out_msgs, calls = _flat_messages(rows, inner)
                output = "".join(m["content"] for m in out_msgs)
                break
    return messages, output, calls


def _error(span: Span, attrs: Mapping[str, Any]) -> tuple[str | None, str | None]:
    etype = _first(attrs, "error.type")
    message = span.status_message or None
    for event in span.events:
        if event.name == "exception":
            etype = etype or event.attributes.get("exception.type")
            message = message or event.attributes.get("exception.message")
    if span.status == "error" and not message:
        message = str(etype) if etype else "the span ended with status ERROR"
    return (str(etype) if etype else None), (str(message) if message else None)


def read_span(span: Span) -> Reading:
    """Read ``span`` through every supported version of the conventions.

    Args:
        span: a decoded span.

    Returns:
        What it says, convention-independent.
    """
    attrs: dict[str, Any] = (
        {**_content_events(span), **span.attributes} if span.events else span.attributes
    )
    op = _operation(span)
    category = _category(op)
    messages, output, calls = (
        _messages(span, attrs) if category == "inference" else (None, None, [])
    )
    etype, emessage = _error(span, attrs)
    failed = span.status == "error" or etype is not None
    input_tokens = _int(
        _first(
            attrs,
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.prompt_tokens",
            "llm.token_count.prompt",
            "llm.usage.prompt_tokens",
        )
    )
    output_tokens = _int(
        _first(
            attrs,
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.completion_tokens",
            "llm.token_count.completion",
            "llm.usage.completion_tokens",
        )
    )
    finish = _first(attrs, "gen_ai.response.finish_reasons")
    if finish is None:  # the older per-choice form
        rows = _indexed(attrs, "gen_ai.completion")
        finish = [r["finish_reason"] for r in rows if r.get("finish_reason")] or None
    stop = _first(attrs, "gen_ai.request.stop_sequences")
    principal = _first(attrs, "enduser.id", "user.id", "gen_ai.user.id") or _first(
        span.resource, "enduser.id", "user.id"
    )
    tool_args = _first(
        attrs, "gen_ai.tool.call.arguments", "tool.parameters", "traceloop.entity.input"
    )
    tool_result = _first(attrs, "gen_ai.tool.call.result", "traceloop.entity.output")
    if category == "tool":
        tool_args = _json(tool_args if tool_args is not None else attrs.get("input.value"))
        tool_result = _json(tool_result if tool_result is not None else attrs.get("output.value"))
    request = {
        k.removeprefix("gen_ai.request."): v
        for k, v in attrs.items()
        if k.startswith("gen_ai.request.") and k != "gen_ai.request.model" and v is not None
    }
    for old in ("max_tokens", "temperature"):
        if old not in request and attrs.get(f"llm.request.{old}") is not None:
            request[old] = attrs[f"llm.request.{old}"]
    tools = _json(attrs.get("gen_ai.tool.definitions"))
    if tools is not None:  # what the model was offered is part of its request
        request["tools"] = tools
    return Reading(
        request=request,
        operation=op or "span",
        category=category,
        provider=_lower(
            _first(attrs, "gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
        ),
        request_model=_first(
            attrs, "gen_ai.request.model", "llm.request.model", "embedding.model_name"
        ),
        response_model=_first(
            attrs, "gen_ai.response.model", "llm.model_name", "llm.response.model"
        ),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=_int(
            _first(
                attrs,
                "gen_ai.usage.cache_read.input_tokens",
                "gen_ai.usage.cache_read_input_tokens",
                "llm.token_count.prompt_details.cache_read",
            )
        ),
        cache_write_tokens=_int(
            _first(
                attrs,
                "gen_ai.usage.cache_creation.input_tokens",
                "gen_ai.usage.cache_creation_input_tokens",
                "llm.token_count.prompt_details.cache_write",
            )
        ),
        reasoning_tokens=_int(
            _first(
                attrs,
                "gen_ai.usage.reasoning.output_tokens",
                "gen_ai.usage.output_tokens.reasoning",
                "gen_ai.usage.reasoning_tokens",
                "llm.token_count.completion_details.reasoning",
            )
        ),
        conversation_id=_first(attrs, "gen_ai.conversation.id", "session.id", "trails.session.id"),
        agent_id=_first(attrs, "gen_ai.agent.id"),
        agent_name=_first(attrs, "gen_ai.agent.name", "agent.name", "traceloop.entity.name")
        if category == "agent"
        else _first(attrs, "gen_ai.agent.name"),
        agent_description=_first(attrs, "gen_ai.agent.description"),
        tool_name=_first(attrs, "gen_ai.tool.name", "tool.name", "traceloop.entity.name")
        if category == "tool"
        else None,
        tool_description=_first(attrs, "gen_ai.tool.description", "tool.description"),
        tool_call_id=_first(attrs, "gen_ai.tool.call.id", "tool_call.id"),
        tool_arguments=tool_args,
        tool_result=tool_result,
        requested_tool_calls=tuple(str(c["id"]) for c in calls if c.get("id")),
        messages=messages,
        output_text=output,
        finish_reasons=tuple(str(x) for x in finish) if isinstance(finish, list) else (),
        max_tokens=_int(_first(attrs, "gen_ai.request.max_tokens", "llm.request.max_tokens")),
        temperature=float(t)
        if isinstance(
            t := _first(attrs, "gen_ai.request.temperature", "llm.request.temperature"), int | float
        )
        else None,
        stop=tuple(str(x) for x in stop) if isinstance(stop, list) else (),
        response_id=_first(attrs, "gen_ai.response.id"),
        error_type=etype,
        error_message=emessage,
        failed=failed,
        principal=str(principal) if principal else None,
        query=_first(attrs, "gen_ai.memory.query", "gen_ai.retrieval.query.text", "input.value")
        if category == "memory"
        else None,
    )
