"""What a fallback chain tells the call around it when one of its providers fails.

A ``FallbackAdapter`` is an adapter: it knows requests, not sessions. The
envelope around the call knows the session, so it watches the chain while the
adapter runs (``watching``) and records each failed attempt and each switch to
the next provider as evidence, and each member it passed over because that member's
circuit was open (``CircuitSkip``). The chain reports through ``report``; with no
watcher (an adapter used on its own) nothing is recorded and nothing fails.

``FallbackHook`` turns the user's ``on_fallback`` callable into one call per
failover: the seed's two-argument form ``(name, error)`` and the fuller
``(failed, next, error)`` are both accepted.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime

from trails.errors import UserError

__all__ = ["CircuitSkip", "Failover", "FallbackHook", "report", "watching"]


@dataclass(frozen=True)
class Failover:
    """One provider of a chain that failed, and the one tried next.

    Attributes:
        provider: the failed member's provider.
        model: the failed member's model id.
        next: ``provider:model`` of the member tried next (None: none was left).
        error: the failure, after the member's own retries.
        retries: the member's retries before it gave up.
        started: when the member was first tried.
        ended: when it gave up.
        latency_ms: how long that took.
    """

    provider: str
    model: str
    next: str | None
    error: BaseException
    retries: int
    started: datetime
    ended: datetime
    latency_ms: float

    @property
    def failed(self) -> str:
        """``provider:model`` of the failed member."""
        return f"{self.provider}:{self.model}"


@dataclass(frozen=True)
class CircuitSkip:
    """A member of a chain passed over, unasked, because its circuit is open.

    Attributes:
        provider: the skipped member's provider.
        model: the skipped member's model id.
        next: ``provider:model`` of the member asked instead (None: none was left).
        open_until: when its circuit lets a trial call through again.
        at: when it was skipped.
    """

    provider: str
    model: str
    next: str | None
    open_until: datetime
    at: datetime

    @property
    def skipped(self) -> str:
        """``provider:model`` of the skipped member."""
        return f"{self.provider}:{self.model}"


Watcher = Callable[[Failover | CircuitSkip], None]

_watcher: ContextVar[Watcher | None] = ContextVar("trails_failover_watcher", default=None)


@contextmanager
def watching(watcher: Watcher) -> Iterator[None]:
    """Make ``watcher`` hear of every failed member of a chain called inside the block."""
    token = _watcher.set(watcher)
    try:
        yield
    finally:
        _watcher.reset(token)


def report(failover: Failover | CircuitSkip) -> None:
    """Tell the watcher of the call in progress (if any) that a member failed or was skipped."""
    watcher = _watcher.get()
    if watcher is not None:
        watcher(failover)


class FallbackHook:
    """The user's ``on_fallback``, called once per failover with the arguments it takes.

    A callable taking three positional arguments (or ``*args``) gets
    ``(failed, next, error)``; one taking two gets the seed's ``(name, error)``.

    Raises:
        UserError: ``fn`` is not callable, or takes neither form.
    """

    def __init__(self, fn: Callable[..., object]) -> None:
        self.fn = fn
        self.full = _takes_three(fn)

    def __call__(self, failed: str, next_provider: str, error: BaseException) -> None:
        if self.full:
            self.fn(failed, next_provider, error)
        else:
            self.fn(failed, error)


def _takes_three(fn: Callable[..., object]) -> bool:
    """Whether ``fn`` accepts ``(failed, next, error)`` rather than ``(name, error)``."""
    if not callable(fn):
        raise UserError(f"on_fallback must be callable, not {type(fn).__name__}")
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: the seed's form
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return True
    count = sum(1 for p in params if p.kind in positional)
    required = sum(1 for p in params if p.kind in positional and p.default is p.empty)
    if required > 3 or count < 2:
        raise UserError(
            "on_fallback takes (name, error) or (failed, next, error); "
            f"{getattr(fn, '__name__', fn)!r} takes {count} positional argument(s)"
        )
    if required == 3:
        return True
    return required < 2 and count >= 3
