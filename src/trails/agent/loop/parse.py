"""Reading planner replies: the JSON turn, plan or verdict inside an LLM's text.

Models wrap JSON in prose and fenced blocks however they like. Each parser
looks at fenced blocks first, then at every JSON object embedded in the text,
and takes the first one of the expected shape. Anything else is a
``ReplyParseError`` whose message says what was missing, because the planner
shows that message to the model in its nudge-retry.

A ReAct turn that is plain text, with no JSON in it, is malformed like broken
JSON, an object without ``action`` or an empty reply: the trails guide's JSON
contract gives it one nudge-retry, then the run stops with ``stopped="error"``.
Prose is never taken for an answer here; the rule "no tool call means the final
answer" belongs to native tool calling (``loop.native``), where the provider says
whether the model called a tool. ``plain_answer`` tells such prose apart, for
callers that read replies outside the JSON contract.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from trails.errors import ReplyParseError

__all__ = ["json_candidates", "parse_plan", "parse_step", "parse_verdict", "plain_answer"]

_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n(.*?)```", re.S)
_DECODER = json.JSONDecoder()


def json_candidates(text: str) -> Iterator[Any]:
    """Every JSON value in ``text``: fenced blocks first, then embedded objects and arrays.

    Args:
        text: a raw LLM reply.

    Yields:
        Each value that parses, in order of preference.
    """
    for match in _FENCE.finditer(text):
        try:
            yield json.loads(match.group(1))
        except ValueError:
            continue
    index = 0
    while True:
        starts = [i for i in (text.find("{", index), text.find("[", index)) if i >= 0]
        if not starts:
            return
        start = min(starts)
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            index = start + 1
            continue
        yield value
        index = end


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _action_input(obj: dict[str, Any], where: str) -> dict[str, Any]:
    raw = obj.get("action_input", {})
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise ReplyParseError(
                f"{where}'action_input' must be a JSON object, not {raw!r}"
            ) from None
    if not isinstance(raw, dict):
        raise ReplyParseError(f"{where}'action_input' must be a JSON object, not {raw!r}")
    return raw


def _action(obj: dict[str, Any], where: str) -> str:
    action = obj.get("action")
    if not isinstance(action, str) or not action.strip():
        raise ReplyParseError(f"{where}'action' must be a non-empty string, not {action!r}")
    return action.strip()


def plain_answer(text: str) -> str | None:
    """The final answer a reply gives as plain text, or None when it is (or tries to be) JSON.

    Args:
        text: a raw LLM reply.

    Returns:
        The stripped text when it is non-empty, holds no fenced block, does not open
        with ``{`` or ``[``, names no ``"action"`` and holds no JSON object; else None.
    """
    answer = text.strip()
    if not answer or "```" in answer or answer[0] in "{[" or '"action"' in answer:
        return None
    if any(isinstance(value, dict) for value in json_candidates(answer)):
        return None
    return answer


def parse_step(text: str) -> dict[str, Any]:
    """Extract one ReAct turn from a raw LLM reply; tolerates surrounding prose and fences.

    A reply that is just the word ``finish`` is read as a finish turn with an empty answer.
    Prose with no JSON in it is malformed (the guide's contract), not an answer.

    Args:
        text: the raw reply.

    Returns:
        ``{"thought": str, "action": str, "action_input": dict}`` plus
        ``"final_answer"`` (a str) when the action is ``finish``.

    Raises:
        ReplyParseError: an empty reply, prose with no JSON in it, broken JSON, no
            ``action``, or a non-object ``action_input``.
    """
    if not isinstance(text, str):
        raise ReplyParseError(f"the reply must be text, not {type(text).__name__}")
    if text.strip().lower() == "finish":
        return {"thought": "", "action": "finish", "action_input": {}, "final_answer": ""}
    saw_object = False
    for value in json_candidates(text):
        if not isinstance(value, dict):
            continue
        saw_object = True
        if "action" not in value:
            continue
        step: dict[str, Any] = {
            "thought": _text(value.get("thought")),
            "action": _action(value, ""),
            "action_input": _action_input(value, ""),
        }
        if step["action"] == "finish":
            answer = value.get("final_answer", step["action_input"].get("final_answer"))
            step["final_answer"] = _text(answer)
        return step
    if saw_object:
        raise ReplyParseError("the reply's JSON object has no 'action' field")
    if not text.strip():
        raise ReplyParseError("the reply is empty")
    raise ReplyParseError("no JSON object found in the reply")


def parse_plan(text: str) -> list[dict[str, Any]]:
    """Extract a Plan-and-Execute plan: ``{"plan": [...]}`` (or a bare list) ending in finish.

    Args:
        text: the raw reply.

    Returns:
        The plan entries, each ``{"action", "action_input", "rationale"}`` plus
        ``"final_answer"`` on the finish entry.

    Raises:
        ReplyParseError: no plan list, a malformed entry, or no final ``finish`` step.
    """
    if not isinstance(text, str):
        raise ReplyParseError(f"the reply must be text, not {type(text).__name__}")
    raw: list[Any] | None = None
    for value in json_candidates(text):
        if isinstance(value, dict) and isinstance(value.get("plan"), list):
            raw = value["plan"]
            break
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            raw = value
            break
    if raw is None:
        raise ReplyParseError('no JSON plan found; expected {"plan": [...]} in a ```json block')
    if not raw:
        raise ReplyParseError("the plan is empty; it must end with a 'finish' step")
    plan: list[dict[str, Any]] = []
    for number, entry in enumerate(raw, 1):
        where = f"plan step {number}: "
        if not isinstance(entry, dict):
            raise ReplyParseError(f"{where}must be a JSON object, not {entry!r}")
        step: dict[str, Any] = {
            "action": _action(entry, where),
            "action_input": _action_input(entry, where),
            "rationale": _text(entry.get("rationale", entry.get("thought"))),
        }
        if step["action"] == "finish":
            answer = entry.get("final_answer", step["action_input"].get("final_answer"))
            step["final_answer"] = _text(answer)
            if number != len(raw):
                raise ReplyParseError(f"{where}'finish' must be the last step of the plan")
        plan.append(step)
    if plan[-1]["action"] != "finish":
        raise ReplyParseError("the plan must end with an action == 'finish' step")
    return plan


def parse_verdict(text: str) -> dict[str, str]:
    """Extract a Reflexion critic verdict: ``{"verdict": "accept" | "retry", "critique": str}``.

    Args:
        text: the raw critic reply.

    Returns:
        The verdict and the critique.

    Raises:
        ReplyParseError: no JSON object or a verdict other than accept / retry.
    """
    if not isinstance(text, str):
        raise ReplyParseError(f"the reply must be text, not {type(text).__name__}")
    saw_object = False
    for value in json_candidates(text):
        if not isinstance(value, dict):
            continue
        saw_object = True
        if "verdict" not in value:
            continue
        verdict = str(value["verdict"]).strip().lower()
        if verdict not in ("accept", "retry"):
            raise ReplyParseError(
                f'\'verdict\' must be "accept" or "retry", not {value["verdict"]!r}'
            )
        return {"verdict": verdict, "critique": _text(value.get("critique"))}
    if saw_object:
        raise ReplyParseError("the critic's JSON object has no 'verdict' field")
    raise ReplyParseError("no JSON object found in the critic's reply")
