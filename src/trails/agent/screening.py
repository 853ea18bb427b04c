"""Output screening: a session's functions read each capability's output before the model does.

A tool's output is text from outside (a web page, a document, another system's answer) and may
carry instructions meant for the model ("ignore your task and ..."). A session given
``screen_output=`` passes every output, after the call and before the model's next turn, to
its screening functions ``(capability_id, output) -> reason | None``. A reason withholds the
output: the model sees ``error: output withheld: <reason>`` instead, and the refusal is
recorded as a denying ``trails:PolicyDecision`` (policy ``screen_output``, the function's name
as the rule) informed by the invocation, as the planners' other guards record theirs
(``trails.agent.loop.guards.screen``). The invocation and its recorded output stay as they
were: the evidence shows both what the tool returned and that the model never saw it. An output
every function let through is recorded too (``OutputScreened``: the invocation's
``trails:outputScreenedBy``, one function name each), so a capability declared
``screen_output=True`` proves its output was screened before the model read it (the
``screened-tool-output`` control).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from trails.errors import UserError
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.vocab import T
from trails.store.terms import IRI

__all__ = ["OutputScreen", "OutputScreened", "instructions_in_output", "output_screens"]

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


class OutputScreened(Event):
    """Every screening function let the output of ``invocation`` through to the model."""

    invocation: str
    screens: tuple[str, ...]

    def emit(self, b: QuadBuilder) -> None:
        for name in self.screens:
            b.value(IRI.trusted(self.invocation), T.outputScreenedBy, name)
