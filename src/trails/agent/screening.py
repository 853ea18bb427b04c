"""Output screening: a session's functions read each capability's output before the model does.

A tool's output is text from outside (a web page, a document, another system's answer) and may
carry instructions meant for the model ("ignore your task and ..."). A session given
``screen_output=`` passes every output, after the call and before the model's next turn, to
its screening functions ``(capability_id, output) -> reason | None``. A reason withholds the
output: the model sees ``error: output withheld: <reason>`` instead, and the refusal is
recorded as a denying ``trails:PolicyDecision`` (policy ``screen_output``, the function's name
as the rule) informed by the invocation. The invocation and its recorded output stay as they
were: the evidence shows both what the tool returned and that the model never saw it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from trails.errors import TrailsError, UserError
from trails.kernel.context import now
from trails.kernel.observe import notify
from trails.kernel.registry import get_capability
from trails.prov.events import PolicyDecided

if TYPE_CHECKING:
    from trails.kernel.context import Context

__all__ = ["OutputScreen", "instructions_in_output", "output_screens", "screen"]

OutputScreen = Callable[[str, Any], "str | None"]
"""``screen_output(capability_id, output)``: None to show the output, a reason to withhold it."""


_INSTRUCTIONS = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}\b(?:previous|prior|above|earlier|"
    r"system|all)\b[^.\n]{0,20}\b(?:instructions?|prompts?|rules|messages?)\b"
    r"|\byou are now\b|\bnew (?:system )?instructions?:|\breveal (?:your|the) system prompt\b",
    re.IGNORECASE,
)


def instructions_in_output(capability_id: str, output: Any) -> str | None:
    """A ready screen: withhold an output that addresses the model with new instructions.

    It looks for the common phrasings of a prompt injection ("ignore all previous
    instructions", "you are now ...", "new instructions:", "reveal your system prompt");
    a pattern list, not a classifier: pass your own function for anything stronger. The
    reason never quotes the output, so the model does not read the injection in it either.
    """
    if _INSTRUCTIONS.search(str(output)) is None:
        return None
    return f"the output of {capability_id} carries instructions to the model"  # never quoted


def output_screens(screen_output: Any) -> tuple[OutputScreen, ...]:
    """``Session(screen_output=)`` as a tuple of functions.

    Raises:
        UserError: neither None, a function, nor a list of functions.
    """
    if screen_output is None:
        return ()
    if callable(screen_output):
        return (screen_output,)
    if (
        isinstance(screen_output, Sequence)
        and not isinstance(screen_output, str | bytes)
        and all(callable(fn) for fn in screen_output)
    ):
        return tuple(screen_output)
    raise UserError(f"screen_output= must be a function or a list of them, not {screen_output!r}")


def screen(
    ctx: Context,
    screens: Sequence[OutputScreen],
    action: str,
    action_input: dict[str, Any],
    output: Any,
    invocation: str,
) -> str | None:
    """What the model sees instead of ``output`` (the refusal recorded), or None to show it.

    The first function that returns a reason decides; the others are not asked.
    """
    for fn in screens:
        reason = fn(action, output)
        if reason is None:
            continue
        name = str(getattr(fn, "__name__", type(fn).__name__))
        decision = ctx.recorder.minter.activity()
        try:
            side_effects: bool | None = get_capability(action).side_effects
        except TrailsError:
            side_effects = None
        ctx.recorder.record(
            PolicyDecided(
                session=ctx.session,
                activity=decision,
                parent=invocation,
                principal=ctx.principal,
                policy="screen_output",
                capability_id=action,
                side_effects=side_effects,
                decision="deny",
                reason=str(reason),
                rule=f"screen_output:{name}",
                arguments=action_input,
                at=now(),
            )
        )
        notify(
            ctx,
            "policy_decision",
            call_id=str(decision),
            capability=action,
            decision="deny",
            reason=str(reason),
            rule=f"screen_output:{name}",
            review=None,
            reviewer=None,
        )
        return f"error: output withheld: {reason}"
    return None
