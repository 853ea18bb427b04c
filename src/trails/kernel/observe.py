"""Observers: live lifecycle events of runs, model calls and capability calls.

The provenance graph is the durable record; observers are the live feed
(dashboards, logs, alerting, a human watching). Both come from the same
moments, but an observer sees an event whether or not anything is recorded,
and an observer that raises is logged and ignored: it never breaks a run or a
write.

An event is one ``ObserverEvent``: a ``kind`` from ``EVENT_KINDS``, the
``run_id`` (the plan-run activity IRI, None outside a planner run), a
``call_id`` (the completion or invocation activity IRI, so a start and its end
pair up), the session IRI, a UTC time and a ``data`` mapping. The same event
objects are what a streamed run yields (``react.stream`` / ``astream``), so one
vocabulary serves both; ``token`` events (pieces of model text) exist only when
a run is streamed.

An observer is anything with ``on_event(event)``, sync or ``async def``
(``Observer`` and ``AsyncObserver`` are the protocols). ``ObserverBase``
dispatches each event to an ``on_<kind>(event)`` method, so subclasses write
only the ones they care about. Attach observers globally (``add_observer``),
per session (``Session(observers=[...])``) or per run (``run(...,
observers=[...])``); ``LoggingObserver`` writes each event as one JSON line to
the ``trails.events`` logger.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import functools
import inspect
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from trails.errors import UserError

if TYPE_CHECKING:
    import asyncio

    from trails.kernel.context import Context

__all__ = [
    "EVENT_KINDS",
    "AsyncObserver",
    "LoggingObserver",
    "Observer",
    "ObserverBase",
    "ObserverEvent",
    "add_observer",
    "check_observers",
    "clear_observers",
    "notify",
    "notify_current",
    "observe_on",
    "observing",
    "off_loop",
    "remove_observer",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

EVENT_KINDS: tuple[str, ...] = (
    "run_start",  # data: strategy, goal
    "error",  # data: error, goal, strategy (a run ends on an unrecoverable error; run_end follows)
    "run_end",  # data: stopped, answer, error, result (the PlanResult)
    "llm_start",  # data: provider, model, messages (count)
    "token",  # data: text (a piece of a streamed model answer; streamed runs only)
    "llm_end",  # data: model, status, input_tokens, output_tokens, usd, error
    "structured_validate",  # data: success, attempt, error (an answer asked for in a format)
    "cache_hit",  # data: model
    "llm_retry",  # data: attempt, max_retries, error, delay_s
    "tool_start",  # data: capability, args
    "tool_chunk",  # data: capability, chunk (a piece a streaming capability yielded)
    "tool_end",  # data: capability, duration_ms, result
    "tool_error",  # data: capability, status, error, duration_ms
    "tool_dry_run",  # data: capability, args, observation (planned, not executed)
    "policy_decision",  # data: capability, decision, reason, rule, review, reviewer
    "fallback",  # data: failed, next, error (a provider of a chain, or a strategy)
    "budget",  # data: reason, limit, observed
    "step_end",  # data: index, action, step (the PlanStep)
    "node_end",  # data: node_id, node_kind, outcome, iteration (a behaviour-tree node ended)
    "history_trim",  # data: evicted, tokens, summarized, summary (a window dropped entries)
    "batch_start",  # data: batch_id, prompts_count
    "batch_end",  # data: batch_id, results_count, errors_count, total_duration_ms
    "session_save",  # data: session_id, message_count (persist() wrote a projection)
    "session_load",  # data: session_id, message_count (fork() loaded a replayed session)
    "entity_extraction",  # data: entities, relationships, turn_count (knowledge memory)
)
"""Every event kind, in lifecycle order."""


@dataclass(frozen=True)
class ObserverEvent:
    """One lifecycle event. ``data`` holds the kind's fields (see ``EVENT_KINDS``)."""

    kind: str
    run_id: str | None
    call_id: str | None
    session: str | None
    at: datetime
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The event as plain JSON-able data."""
        return {
            "event": self.kind,
            "run_id": self.run_id,
            "call_id": self.call_id,
            "session": self.session,
            "at": self.at.isoformat(),
            **{k: v for k, v in self.data.items()},
        }


@runtime_checkable
class Observer(Protocol):
    """A synchronous observer: called inline, in the thread that did the work."""

    def on_event(self, event: ObserverEvent) -> None: ...


@runtime_checkable
class AsyncObserver(Protocol):
    """An asynchronous observer: ``async def on_event``.

    Inside a running event loop its coroutine is scheduled as a task on that
    loop (fire and forget); elsewhere it is run to completion on the spot.
    """

    def on_event(self, event: ObserverEvent) -> Awaitable[None]: ...


class ObserverBase:
    """Dispatches each event to ``on_<kind>(event)`` when the subclass defines it."""

    def on_event(self, event: ObserverEvent) -> Any:
        handler = getattr(self, f"on_{event.kind}", None)
        return handler(event) if handler is not None else None


class LoggingObserver(ObserverBase):
    """Logs each event as one JSON line (``logging`` logger ``trails.events``).

    Args:
        level: the logging level of the lines (default INFO).
        logger: the logger name.
    """

    def __init__(self, level: int = logging.INFO, logger: str = "trails.events") -> None:
        self.level = level
        self.logger = logging.getLogger(logger)

    def on_event(self, event: ObserverEvent) -> None:
        if self.logger.isEnabledFor(self.level):
            line = json.dumps(event.as_dict(), default=str, ensure_ascii=False, sort_keys=True)
            self.logger.log(self.level, line)


_global: list[Any] = []
_global_lock = threading.Lock()
_active: contextvars.ContextVar[Context | None] = contextvars.ContextVar(
    "trails_observed_context", default=None
)
#: The event loop of the task a worker thread records for (``off_loop``): an async
#: observer notified from that thread is scheduled on it, as it would be on the loop.
_home: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "trails_observer_loop", default=None
)


def check_observers(observers: Any) -> tuple[Any, ...]:
    """``observers=`` as a tuple, each checked to have ``on_event``.

    Raises:
        UserError: not a list of observers.
    """
    if observers is None:
        return ()
    if not isinstance(observers, list | tuple):
        observers = (observers,)
    for obs in observers:
        if not callable(getattr(obs, "on_event", None)):
            raise UserError(f"an observer needs an on_event(event) method, not {obs!r}")
    return tuple(observers)


def add_observer(observer: Any) -> None:
    """Attach an observer to every run of the process.

    Raises:
        UserError: it has no ``on_event``.
    """
    (obs,) = check_observers([observer])
    with _global_lock:
        _global.append(obs)


def remove_observer(observer: Any) -> None:
    """Detach a global observer (no error when it was not attached)."""
    with _global_lock:
        if observer in _global:
            _global.remove(observer)


def clear_observers() -> None:
    """Detach every global observer."""
    with _global_lock:
        _global.clear()


def _deliver(observer: Any, event: ObserverEvent) -> None:
    try:
        result = observer.on_event(event)
        if inspect.isawaitable(result):
            import asyncio  # imported when first used: `import trails` does not load asyncio

            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                home = _home.get()
                if home is not None and home.is_running():
                    future = asyncio.run_coroutine_threadsafe(_awaited(result), home)
                    future.add_done_callback(_log_future_error)
                else:
                    asyncio.run(_awaited(result))
            else:
                task = loop.create_task(_awaited(result))
                task.add_done_callback(_log_task_error)
    except Exception:  # an observer never breaks a run
        log.warning("observer %r raised on %s; ignored", observer, event.kind, exc_info=True)


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _log_task_error(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("an async observer raised; ignored", exc_info=task.exception())


def _log_future_error(future: concurrent.futures.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("an async observer raised; ignored", exc_info=future.exception())


def observe_on(loop: asyncio.AbstractEventLoop | None) -> None:
    """In the current context, schedule async observers notified outside a loop on ``loop``.

    A worker thread that records for an asyncio task (``off_loop``, an async
    planner's dispatch) calls it in its context, so async observers run on the
    task's loop as they would had the event been notified there.
    """
    _home.set(loop)


async def off_loop(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run a synchronous recording step in a worker thread, the event loop free meanwhile.

    The store write of an event is synchronous (one atomic write under the
    recorder's lock); run here, other tasks go on while it is written. The
    thread sees the caller's context, and async observers it notifies are
    scheduled on the caller's loop.
    """
    import asyncio  # imported when first used: `import trails` does not load asyncio

    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    context.run(observe_on, loop)
    return await loop.run_in_executor(None, functools.partial(context.run, fn, *args, **kwargs))


def notify(ctx: Context | None, kind: str, *, call_id: str | None = None, **data: Any) -> None:
    """Send one event to the global observers and those of ``ctx``.

    Costs one attribute read when nobody observes.
    """
    observers = tuple(_global) + (tuple(ctx.observers) if ctx is not None else ())
    if not observers:
        return
    run = getattr(ctx, "run", None) if ctx is not None else None
    event = ObserverEvent(
        kind=kind,
        run_id=None if run is None else str(run),
        call_id=call_id,
        session=None if ctx is None else str(ctx.session),
        at=datetime.now(UTC),
        data=data,
    )
    for obs in observers:
        _deliver(obs, event)


def notify_current(kind: str, *, call_id: str | None = None, **data: Any) -> None:
    """``notify`` for the context of the model call in progress (see ``observing``)."""
    ctx = _active.get()
    if ctx is not None or _global:
        notify(ctx, kind, call_id=call_id, **data)


@contextmanager
def observing(ctx: Context) -> Iterator[None]:
    """Make ``ctx`` the one ``notify_current`` reports to, inside the block."""
    token = _active.set(ctx)
    try:
        yield
    finally:
        _active.reset(token)
