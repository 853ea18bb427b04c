"""Prompt templates with ``${parameters.name}`` substitution, as the Plan-Execute-Reflect seed has.

A template is text in which ``${parameters.<name>}`` is replaced by the value
of ``<name>``; every name must be given (a missing one is a ``UserError``
naming it, never an empty hole in a prompt). ``PERPrompts`` gathers the
prompts and templates of the Plan-Execute-Reflect planner with the seed's
structure: a planner template for the first turn, a reflect template for the
turns after a step ran, and a planner-with-history template for a first turn
in a session that already holds conversation; ``inject_datetime`` adds the
current date and time to the system prompts (the planner's and the executor's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from trails.errors import UserError

__all__ = [
    "BUILT_IN",
    "DEFAULT_PLANNER_PROMPT",
    "DEFAULT_PLANNER_TEMPLATE",
    "DEFAULT_PLANNER_WITH_HISTORY_TEMPLATE",
    "DEFAULT_REFLECT_PROMPT",
    "DEFAULT_REFLECT_TEMPLATE",
    "PERPrompts",
    "render_template",
]

_PARAM = re.compile(r"\$\{parameters\.([A-Za-z_][A-Za-z0-9_]*)\}")

#: The parameters the planner fills in itself, on every turn.
BUILT_IN = (
    "tools_prompt",
    "planner_prompt",
    "reflect_prompt",
    "user_prompt",
    "steps",
    "completed_steps",
    "chat_history",
)

DEFAULT_PLANNER_PROMPT = (
    "For the given objective, generate a step-by-step plan composed of simple, "
    "self-contained steps. The final step should directly yield the final answer. "
    "Avoid unnecessary steps."
)

DEFAULT_REFLECT_PROMPT = (
    "Update your plan based on the latest step results. If the task is complete, return "
    "the final answer. Otherwise, include only the remaining steps. Do not repeat "
    "previously completed steps."
)

DEFAULT_PLANNER_TEMPLATE = """\
Tools:
${parameters.tools_prompt}

${parameters.planner_prompt}

Objective: ${parameters.user_prompt}

Remember: respond only with the JSON object."""

DEFAULT_REFLECT_TEMPLATE = """\
Tools:
${parameters.tools_prompt}

${parameters.planner_prompt}

Objective: ${parameters.user_prompt}

Original plan:
${parameters.steps}

Completed steps and their results:
${parameters.completed_steps}

${parameters.reflect_prompt}

Remember: respond only with the JSON object."""

DEFAULT_PLANNER_WITH_HISTORY_TEMPLATE = """\
Tools:
${parameters.tools_prompt}

${parameters.planner_prompt}

Earlier conversation (most recent last):
${parameters.chat_history}

Objective: ${parameters.user_prompt}

Remember: respond only with the JSON object."""


def render_template(template: str, parameters: Mapping[str, Any]) -> str:
    """``template`` with every ``${parameters.name}`` replaced by ``str(parameters[name])``.

    Raises:
        UserError: the template names a parameter that was not given.
    """
    missing = sorted({m for m in _PARAM.findall(template) if m not in parameters})
    if missing:
        raise UserError(
            f"the prompt template uses parameters nobody gave: {', '.join(missing)} "
            f"(given: {', '.join(sorted(parameters))})"
        )
    return _PARAM.sub(lambda m: str(parameters[m.group(1)]), template)


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{name}= must be a non-empty str, not {value!r}")
    return value


@dataclass(frozen=True)
class PERPrompts:
    """The Plan-Execute-Reflect planner's prompts, templates and history settings.

    Attributes:
        system_prompt: the planner's system prompt (its role and reply format).
        planner_prompt: ``${parameters.planner_prompt}``.
        reflect_prompt: ``${parameters.reflect_prompt}``.
        planner_template: the first planner turn.
        reflect_template: every turn after a step ran.
        planner_with_history_template: the first turn when the session already
            holds conversation (``${parameters.chat_history}``).
        message_history_limit: how many earlier history entries the planner sees.
        executor_message_history_limit: how many history entries from before its
            pass each executor pass sees (its own pass is always whole).
        inject_datetime: add the current date and time to the system prompt.
        datetime_format: its ``strftime`` format.
        parameters: further ``${parameters.*}`` values for custom templates.
    """

    system_prompt: str
    planner_prompt: str = DEFAULT_PLANNER_PROMPT
    reflect_prompt: str = DEFAULT_REFLECT_PROMPT
    planner_template: str = DEFAULT_PLANNER_TEMPLATE
    reflect_template: str = DEFAULT_REFLECT_TEMPLATE
    planner_with_history_template: str = DEFAULT_PLANNER_WITH_HISTORY_TEMPLATE
    message_history_limit: int = 10
    executor_message_history_limit: int = 10
    inject_datetime: bool = False
    datetime_format: str = "%Y-%m-%d %H:%M:%S %Z"
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in (
            "system_prompt",
            "planner_prompt",
            "reflect_prompt",
            "planner_template",
            "reflect_template",
            "planner_with_history_template",
            "datetime_format",
        ):
            _text(name, getattr(self, name))
        for name in ("message_history_limit", "executor_message_history_limit"):
            limit = getattr(self, name)
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                raise UserError(f"{name}= must be an int >= 0, not {limit!r}")
        if not isinstance(self.inject_datetime, bool):
            raise UserError(f"inject_datetime= must be True or False, not {self.inject_datetime!r}")
        if not isinstance(self.parameters, Mapping) or not all(
            isinstance(k, str) for k in self.parameters
        ):
            raise UserError(f"parameters= must map names to values, not {self.parameters!r}")
        known = {*BUILT_IN, *self.parameters}
        for name in (
            "planner_prompt",
            "reflect_prompt",
            "planner_template",
            "reflect_template",
            "planner_with_history_template",
        ):
            unknown = sorted(set(_PARAM.findall(getattr(self, name))) - known)
            if unknown:
                raise UserError(
                    f"{name} uses parameters nobody gives: {', '.join(unknown)} "
                    f"(pass them in parameters=)"
                )

    def system(self, now: datetime | None = None) -> str:
        """The system prompt, with the date and time when ``inject_datetime``."""
        return self.dated(self.system_prompt, now)

    def dated(self, prompt: str, now: datetime | None = None) -> str:
        """``prompt`` with the current date and time appended when ``inject_datetime``
        (the planner's system prompt and the executor's alike)."""
        if not self.inject_datetime:
            return prompt
        stamp = (now or datetime.now(UTC)).strftime(self.datetime_format)
        return f"{prompt}\n\nCurrent date and time: {stamp}"

    def user(
        self,
        *,
        goal: str,
        tools_prompt: str,
        steps: list[str],
        completed: list[tuple[str, str | None]],
        history: list[str],
    ) -> str:
        """The planner's user message for this turn (which template depends on the turn)."""
        done = "\n".join(
            f"{i}. {step}\n   result: {result}" for i, (step, result) in enumerate(completed, 1)
        )
        own = {name: "" for name in BUILT_IN} | {**self.parameters, "user_prompt": goal}
        values = {
            **self.parameters,
            "tools_prompt": tools_prompt,
            "planner_prompt": render_template(self.planner_prompt, own),
            "reflect_prompt": render_template(self.reflect_prompt, own),
            "user_prompt": goal,
            "steps": "\n".join(f"- {s}" for s in steps) or "(none)",
            "completed_steps": done or "(none)",
            "chat_history": "\n".join(history) or "(none)",
        }
        if completed:
            template = self.reflect_template
        elif history:
            template = self.planner_with_history_template
        else:
            template = self.planner_template
        return render_template(template, values)
