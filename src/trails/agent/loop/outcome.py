"""How every planner run begins and ends: the guarded body, and a structured final answer.

``guarded`` wraps a planner's loop (a generator, see ``loop.drive``): it records
the run's start, turns a principal budget's refusal into a clean budget stop,
ends the run as an error on any other exception (re-raised), and, when the
run was given ``output_type=``, adds the answer turn.

``output_type=`` (a pydantic model class or a JSON schema) makes
``PlanResult.answer`` a validated object. No planner can know in advance which
of its turns is the last, so when a run reaches ``goal_achieved`` one more
completion asks for the final answer in that form, with the client's
``response_format`` (the provider's JSON or tool mode, validation, and up to
``output_retries`` retries shown the validation error). Each attempt that
fails validation is recorded as a completion with status ``invalid``; when no
attempt validates, the run ends with ``stopped="error"`` naming the schema and
the last problem (recorded as the run's termination), its answer the text
answer the run had reached.

``guarded`` takes the run as ``AnsweringRun``, the part of a ``PlanRun`` it
uses, so this module does not import ``loop.run`` (which imports it); ``stringify``
lives here for the same reason (``loop.run`` re-exports it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from trails.errors import BudgetExceeded, ModelAPIError, UserError
from trails.llm.errors import StructuredOutputError
from trails.llm.structured import output_format
from trails.llm.types import Message

if TYPE_CHECKING:
    from trails.agent.loop.drive import Complete, Loop
    from trails.agent.result import PlanResult, PlanStep, StopReason
    from trails.llm.catalogue import ModelSpec

__all__ = [
    "ANSWER_PROMPT",
    "AnsweringRun",
    "Output",
    "answer_text",
    "check_output",
    "guarded",
    "stringify",
]

ANSWER_PROMPT = """\
You give the final answer of an agent run, as JSON that matches the required schema. \
Use only what the run found; reply with the JSON answer and nothing else."""

#: How many of the run's latest observations the answer turn is shown.
_SHOWN = 8


@dataclass(frozen=True)
class Output:
    """A run's ``output_type=``: what ``response_format`` gets, and the answer turn's limits."""

    spec: Any
    name: str
    max_retries: int
    max_tokens: int


class AnsweringRun(Protocol):
    """What ``guarded`` and the answer turn use of a run (``PlanRun`` satisfies it)."""

    pending: PlanResult | None
    answered: bool

    @property
    def goal(self) -> str:
        """The run's goal."""

    @property
    def output(self) -> Output | None:
        """The run's ``output_type=``, or None."""

    @property
    def steps(self) -> list[PlanStep]:
        """The run's trajectory."""

    def start(self) -> None:
        """Record the plan-run root activity."""

    def ask(
        self,
        messages: list[Message],
        *,
        step: int,
        max_tokens: int,
        temperature: float,
        parent: str | None = None,
        model: str | ModelSpec | None = None,
        **options: Any,
    ) -> Complete:
        """The request for one reasoning turn."""

    def finish(
        self,
        stopped: StopReason,
        *,
        answer: str | None = None,
        error: str | None = None,
        steps: list[PlanStep] | None = None,
        terminated_by: str | None = None,
        terminated_by_call: str | None = None,
    ) -> PlanResult:
        """End the run."""

    def provider_failed(self, exc: ModelAPIError, *, own_turn: bool = True) -> PlanResult:
        """End the run because the provider failed."""

    def budget_stop(self, exc: BudgetExceeded) -> PlanResult:
        """End the run because a principal budget refused a spend."""

    def abort(self, exc: BaseException) -> None:
        """End a run an unexpected exception is leaving."""


def stringify(value: Any) -> str:
    """An observation as text: itself when a str, else ``json.dumps(value, default=str)``.

    Args:
        value: the observation.

    Returns:
        The text.
    """
    return value if isinstance(value, str) else json.dumps(value, default=str)


def check_output(output_type: Any, output_retries: Any, max_tokens: int) -> Output | None:
    """Validate ``output_type=`` / ``output_retries=`` before anything is recorded.

    Args:
        output_type: a pydantic model class, a JSON schema dict, or None.
        output_retries: how many more answer attempts an invalid answer gets.
        max_tokens: the completion-token cap of the answer turn.

    Returns:
        The ``Output``, or None without ``output_type``.

    Raises:
        UserError: not a pydantic model or a valid JSON schema; a bad retry count.
    """
    if output_type is None:
        return None
    name = output_format(output_type).name  # raises UserError on anything else
    if isinstance(output_retries, bool) or not isinstance(output_retries, int):
        raise UserError(f"output_retries must be an int >= 0, not {output_retries!r}")
    if output_retries < 0:
        raise UserError(f"output_retries must be an int >= 0, not {output_retries!r}")
    return Output(output_type, name, output_retries, max_tokens)


def answer_text(answer: Any) -> str | None:
    """An answer as recorded text: a str as is, a structured one as JSON."""
    if answer is None or isinstance(answer, str):
        return answer
    dump = getattr(answer, "model_dump", None)
    data = dump(mode="json") if callable(dump) else answer
    return json.dumps(data, ensure_ascii=False, sort_keys=True, default=str)


def guarded(plan: AnsweringRun, body: Loop) -> Loop:
    """Record the run's start, run ``body``, and end the run on every path.

    Returns:
        The ``PlanResult`` of ``body`` (or of the answer turn, with ``output_type``).

    A budget refusal ends the run with its budget stop, and a provider failure the
    body lets through (the ``reflect_before_action`` client's: the run's own turns
    handle theirs) with ``stopped="error"``, as every planner documents.

    Raises:
        BaseException: whatever else ``body`` raised, after the run was recorded as
            ended with an error.
    """
    plan.start()
    try:
        result = yield from body
        pending = plan.pending
        if pending is None:
            return result
        plan.pending, plan.answered = None, True
        return (yield from _answer_turn(plan, pending))
    except BudgetExceeded as exc:
        return plan.budget_stop(exc)
    except ModelAPIError as exc:  # a model call the body does not handle (a reflector's)
        return plan.provider_failed(exc, own_turn=False)
    except BaseException as exc:
        plan.abort(exc)
        raise


def _answer_messages(plan: AnsweringRun, reached: PlanResult) -> list[Message]:
    seen = [s for s in reached.steps if s.observation is not None][-_SHOWN:]
    lines = [f"Goal: {plan.goal}", "", f"The run's answer: {answer_text(reached.answer)}"]
    if seen:
        lines += ["", "What the run observed:"]
        lines += [f"- {s.action}: {stringify(s.observation)}" for s in seen]
    return [Message("system", ANSWER_PROMPT), Message("user", "\n".join(lines))]


def _answer_turn(plan: AnsweringRun, reached: PlanResult) -> Loop:
    output = plan.output
    assert output is not None
    try:
        response = yield plan.ask(
            _answer_messages(plan, reached),
            step=len(plan.steps),
            max_tokens=output.max_tokens,
            temperature=0.0,
            response_format=output.spec,
            max_retries=output.max_retries,
        )
    except StructuredOutputError as exc:
        attempts = len(exc.errors) or output.max_retries + 1
        problem = exc.errors[-1] if exc.errors else str(exc)
        return plan.finish(
            "error",
            answer=reached.answer,
            steps=reached.steps,
            error=f"the final answer did not match output_type {output.name!r} in "
            f"{attempts} attempt(s); last problem: {problem}",
        )
    except ModelAPIError as exc:
        return plan.provider_failed(exc)
    return plan.finish(
        "goal_achieved",
        answer=response.parsed,
        steps=reached.steps,
        terminated_by=reached.terminated_by,
        terminated_by_call=reached.terminated_by_call,
    )
