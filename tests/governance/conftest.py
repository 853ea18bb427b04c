"""Fixtures for the governance tests: scripted replies for the planners."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest


def turn(action: str, action_input: dict[str, Any] | None = None, **extra: Any) -> str:
    """A well-formed ReAct reply in a fenced block."""
    payload = {"thought": extra.pop("thought", f"use {action}"), "action": action}
    payload["action_input"] = action_input or {}
    payload.update(extra)
    return "```json\n" + json.dumps(payload) + "\n```"


def plan(*steps: dict[str, Any]) -> str:
    """A Plan-and-Execute reply: the steps, in a fenced block."""
    return "```json\n" + json.dumps({"plan": list(steps)}) + "\n```"


@pytest.fixture
def reply() -> Callable[..., str]:
    """``reply(action, input, final_answer=...)``: a well-formed ReAct reply."""
    return turn
