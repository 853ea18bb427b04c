"""One loop per planner, driven sync or async: the requests a loop yields and their drivers.

Every planner loop is written once, as a generator. Where it needs the outside
world it yields a request and is sent back the answer:

- ``Complete``: "complete these messages" (a reasoning turn); the answer is the
  recorded ``Response``, or the provider's exception thrown into the loop;
- ``Dispatch``: "dispatch this action" (guards, policy, ``invoke``); the answer
  is ``(observation, invocation activity, failed)``;
- ``DispatchMany``: "dispatch these tool calls of one model turn, at most
  ``max_parallel`` at once" (native tool calling); the answer is one such
  triple per call, in the order the model asked for them;
- ``Gather``: "run these loops concurrently" (a behaviour tree's ``parallel``
  node: one loop per child); the answer is their results, in the given order.

Everything else a loop does (parse a reply, check a budget, record a plan
document, end the run) is synchronous and identical on both paths, so a sync
run and an async run of the same script record the same graph. Nested loops
compose with ``yield from`` (Reflexion's inner ReAct passes, Plan-Execute-
Reflect's executor, a behaviour tree's nodes). The store write stays
synchronous: each event is one ``recorder.record`` call, one atomic write
under the recorder's lock, whichever thread or task makes it.

Drivers, all sharing the loop:

- ``drive``: ``run`` -- each request executed in the calling thread (the calls
  of a ``DispatchMany``, the loops of a ``Gather`` in worker threads);
- ``adrive``: ``arun`` -- a completion awaited on the client's ``acomplete``, a
  dispatch run in a worker thread (``invoke`` as ``ainvoke`` runs it: an
  ``async def`` handler runs on the caller's loop), so the event loop stays free;
  the calls of a ``DispatchMany`` and the loops of a ``Gather`` as asyncio
  tasks, gathered;
- ``stream_drive`` / ``astream_drive``: ``stream`` / ``astream`` -- as above,
  a completion streamed (each text piece a ``token`` event), and every
  observer event of the run yielded as it happens (``trails.kernel.observe``:
  one vocabulary for observers and streams). The loops of a ``Gather`` run as
  under ``drive`` / ``adrive`` with their model turns streamed too (``fed``),
  while the stream yields their events as they arrive; each ``token`` event
  names the completion it is a piece of, whichever child streamed it.

``entries`` turns a planner's loop function (the full keyword signature of its
``run``) into its ``run``, ``arun``, ``stream``, ``astream``, ``batch`` and
``abatch``, so each planner states its signature once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Coroutine,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, TypeAlias, TypeVar

from trails.agent.loop.batch import (
    BatchRecord,
    batch_principal,
    batch_session,
    check_batch,
    note_informed,
)
from trails.agent.loop.unreached import raise_if_unreached, watching
from trails.kernel.handlers import caller_loop
from trails.kernel.observe import ObserverEvent, check_observers, notify, observe_on, off_loop
from trails.llm.batch import ProgressCounter
from trails.llm.types import Chunk, Message, Response, ToolCall

if TYPE_CHECKING:
    from trails.agent.context import Session
    from trails.agent.loop.turns import Turns
    from trails.agent.result import PlanResult
    from trails.llm.catalogue import ModelSpec

__all__ = [
    "Complete",
    "Dispatch",
    "DispatchMany",
    "Feed",
    "Gather",
    "Loop",
    "Progress",
    "Request",
    "abatch_entry",
    "adrive",
    "arun_entry",
    "astream_drive",
    "astream_entry",
    "batch_entry",
    "drive",
    "run_entry",
    "stream_drive",
    "stream_entry",
]

P = ParamSpec("P")
T = TypeVar("T")

# Dispatches of async runs: more workers than asyncio's default pool (cpu + 4),
# since each mostly waits (on a handler's I/O, or an async handler on the loop).
_POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="trails-arun")


@dataclass(frozen=True)
class Complete:
    """A reasoning turn the loop asks for (see ``PlanRun.complete`` for the fields)."""

    plan: Turns
    messages: list[Message]
    step: int
    max_tokens: int
    temperature: float
    parent: str | None = None
    model: str | ModelSpec | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def keywords(self) -> dict[str, Any]:
        """The keywords of ``PlanRun.complete`` (and ``stream``) for this turn."""
        return {
            "step": self.step,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "parent": self.parent,
            "model": self.model,
            **self.options,
        }

    def run(self) -> Response:
        return self.plan.complete(self.messages, **self.keywords())

    async def arun(self) -> Response:
        return await self.plan.acomplete(self.messages, **self.keywords())

    def streamable(self, method: str = "stream") -> bool:
        """Whether the turn can be streamed (a structured answer turn cannot; a native
        turn offering tools can: the streamed ``Response`` carries its tool calls)."""
        return set(self.options) <= {"tools"} and callable(getattr(self.plan.llm, method, None))


@dataclass(frozen=True)
class Dispatch:
    """An action the loop asks to dispatch (see ``PlanRun.dispatch``)."""

    plan: Turns
    action: str
    action_input: dict[str, Any]
    informed_by: str | None
    step: int
    tool_call_id: str | None = None

    def run(self) -> tuple[Any, str | None, bool]:
        return self.plan.dispatch(
            self.action,
            self.action_input,
            informed_by=self.informed_by,
            step=self.step,
            tool_call_id=self.tool_call_id,
        )

    async def arun(self) -> tuple[Any, str | None, bool]:
        loop = asyncio.get_running_loop()
        token = caller_loop.set(loop)  # an ``async def`` handler runs on this loop
        try:
            context = contextvars.copy_context()
        finally:
            caller_loop.reset(token)
        context.run(observe_on, loop)  # async observers of its tool events: on this loop too
        return await loop.run_in_executor(_POOL, functools.partial(context.run, self.run))


@dataclass(frozen=True)
class DispatchMany:
    """The tool calls of one model turn, to dispatch concurrently (see ``loop.parallel``).

    Each call is its own ``Dispatch`` (its own invocation, informed by the
    completion that asked, carrying the call's id); a ``parallel_safe=False``
    capability runs alone; the answers come back in the calls' order.
    """

    plan: Turns
    calls: Sequence[ToolCall]
    informed_by: str | None
    step: int
    max_parallel: int

    def dispatches(self) -> list[Dispatch]:
        """One ``Dispatch`` per call, in the calls' order."""
        return [
            Dispatch(self.plan, c.name, dict(c.arguments), self.informed_by, self.step, c.id)
            for c in self.calls
        ]

    def run(self) -> list[tuple[Any, str | None, bool]]:
        from trails.agent.loop.parallel import run_groups

        return run_groups(self.calls, self.dispatches(), max_parallel=self.max_parallel)

    async def arun(self) -> list[tuple[Any, str | None, bool]]:
        from trails.agent.loop.parallel import arun_groups

        return await arun_groups(self.calls, self.dispatches(), max_parallel=self.max_parallel)


@dataclass(frozen=True)
class Gather:
    """Loops to run concurrently, at most ``max_parallel`` at once; the answer is their results.

    Each loop runs in its own copy of the ``contextvars`` context (a worker
    thread under ``drive``, an asyncio task under ``adrive``). Every loop runs
    to its end; then the first exception in the given order is raised, else the
    results come back in the given order.
    """

    loops: Sequence[Generator[Request, Any, Any]]
    max_parallel: int

    def run(self, feed: Feed | None = None) -> list[Any]:
        """Drive the loops in worker threads (their model turns streamed into ``feed``)."""
        from trails.agent.loop.parallel import run_concurrently

        thunks = [functools.partial(drive, loop, feed) for loop in self.loops]
        return run_concurrently(thunks, max_parallel=self.max_parallel)

    async def arun(self, feed: Feed | None = None) -> list[Any]:
        """Drive the loops as asyncio tasks (their model turns streamed into ``feed``)."""
        gate = asyncio.Semaphore(max(1, self.max_parallel))

        async def one(loop: Generator[Request, Any, Any]) -> Any:
            async with gate:
                return await adrive(loop, feed)

        done = await asyncio.gather(*(one(loop) for loop in self.loops), return_exceptions=True)
        for item in done:
            if isinstance(item, BaseException):
                raise item
        return list(done)


Request: TypeAlias = Complete | Dispatch | DispatchMany | Gather
"""What a planner loop yields."""

Loop: TypeAlias = Generator[Request, Any, "PlanResult"]
"""A planner loop: yields requests, is sent their answers, returns the ``PlanResult``."""


def drive(loop: Generator[Request, Any, T], feed: Feed | None = None) -> T:
    """Run a loop to its result, executing each request in this thread.

    With a ``feed`` (the loops of a ``Gather`` in a streamed run), model turns
    are streamed, each piece a ``token`` event the feed receives.

    Raises:
        Exception: whatever the loop lets through (a request's exception is
            thrown into the loop first, where the loop may handle it).
    """
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            request = loop.throw(error) if error is not None else loop.send(answer)
        except StopIteration as done:
            result: T = done.value
            return result
        answer, error = None, None
        try:
            answer = request.run() if feed is None else _fed(request, feed)
        except BaseException as exc:  # handed to the loop, which handles it or re-raises
            error = exc


async def adrive(loop: Generator[Request, Any, T], feed: Feed | None = None) -> T:
    """``drive`` for asyncio: each request awaited (see the module docstring)."""
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            request = loop.throw(error) if error is not None else loop.send(answer)
        except StopIteration as done:
            result: T = done.value
            return result
        answer, error = None, None
        try:
            answer = await request.arun() if feed is None else await _afed(request, feed)
        except BaseException as exc:
            error = exc


# The call id of the model call that began last in this context (thread, task): what
# its streamed pieces are tokens of, when a ``Gather``'s loops stream side by side.
_streaming: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "trails_streamed_completion", default=None
)


class Feed:
    """An observer that keeps the events of one streamed run until the stream yields them.

    Events may come from any thread (the loops of a ``Gather``, dispatches in
    worker threads); ``wait`` blocks until one arrives, and ``wake`` (set by an
    async stream) is called after each.
    """

    def __init__(self) -> None:
        self.events: list[ObserverEvent] = []
        self.wake: Callable[[], None] | None = None
        self._changed = threading.Condition()

    def on_event(self, event: ObserverEvent) -> None:
        if event.kind == "llm_start":
            _streaming.set(event.call_id)  # runs in the context of the call that began
        with self._changed:
            self.events.append(event)
            self._changed.notify_all()
        self.poke(locked=False)

    def poke(self, *, locked: bool = True) -> None:
        """Wake whoever waits for events (``wait``, an async stream's ``wake``)."""
        if locked:
            with self._changed:
                self._changed.notify_all()
        wake = self.wake
        if wake is not None:
            wake()

    def wait(self, done: Callable[[], bool]) -> None:
        """Block until an event is waiting or ``done()`` (call ``poke`` when it turns true)."""
        with self._changed:
            self._changed.wait_for(lambda: bool(self.events) or done())

    def drain(self) -> list[ObserverEvent]:
        with self._changed:
            out, self.events = self.events, []
        return out

    def token(self, request: Complete, text: str) -> None:
        """Tell every observer of the run about one piece of streamed model text."""
        notify(request.plan.ctx, "token", call_id=_streaming.get(), text=text)


def _fed(request: Request, feed: Feed) -> Any:
    """``request.run()``, a model turn streamed into ``feed`` (a loop of a streamed ``Gather``)."""
    if isinstance(request, Complete) and request.streamable():
        pieces = request.plan.stream(request.messages, **request.keywords())
        answer: Any = None
        try:
            for item in pieces:
                if isinstance(item, Chunk):
                    feed.token(request, item.text)
                else:
                    answer = item
        finally:
            closing = getattr(pieces, "close", None)
            if closing is not None:
                closing()
        return answer
    if isinstance(request, Gather):
        return request.run(feed)
    return request.run()


async def _afed(request: Request, feed: Feed) -> Any:
    """``_fed`` for asyncio: a model turn streamed with ``astream``."""
    if isinstance(request, Complete) and request.streamable("astream"):
        pieces = request.plan.astream(request.messages, **request.keywords())
        answer: Any = None
        try:
            async for item in pieces:
                if isinstance(item, Chunk):
                    feed.token(request, item.text)
                else:
                    answer = item
        finally:
            closing = getattr(pieces, "aclose", None)
            if closing is not None:
                await closing()
        return answer
    if isinstance(request, Gather):
        return await request.arun(feed)
    return await request.arun()


def _gathered(request: Gather, feed: Feed) -> Generator[ObserverEvent, None, tuple[Any, Any]]:
    """Run a ``Gather`` in a worker thread, yielding its loops' events as they come.

    Returns ``(answer, error)``. A consumer that leaves early waits for the loops
    to end (each records its own end) before the run is closed.
    """
    future = _POOL.submit(contextvars.copy_context().run, request.run, feed)
    future.add_done_callback(lambda _: feed.poke())
    try:
        while not future.done():
            feed.wait(future.done)
            yield from feed.drain()
    finally:
        concurrent.futures.wait([future])
    yield from feed.drain()
    error = future.exception()
    return (None, error) if error is not None else (future.result(), None)


def stream_drive(loop: Loop, feed: Feed) -> Iterator[ObserverEvent]:
    """Run a loop, yielding every event of the run as it happens (the last is ``run_end``).

    A consumer that stops early ends the run: the loop is closed, which records
    the run as ended with an error (``GeneratorExit``), and an unfinished
    model stream is recorded as a failed completion.
    """
    answer: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                request = loop.throw(error) if error is not None else loop.send(answer)
            except StopIteration:
                yield from feed.drain()
                return
            answer, error = None, None
            yield from feed.drain()
            if isinstance(request, Complete) and request.streamable():
                pieces = request.plan.stream(request.messages, **request.keywords())
                try:
                    while True:
                        try:
                            item = next(pieces)
                        except StopIteration:
                            break
                        except BaseException as exc:
                            error = exc
                            break
                        if isinstance(item, Chunk):
                            feed.token(request, item.text)
                        else:
                            answer = item
                        yield from feed.drain()
                finally:
                    closing = getattr(pieces, "close", None)
                    if closing is not None:
                        closing()
            elif isinstance(request, Gather):
                answer, error = yield from _gathered(request, feed)
            else:
                try:
                    answer = request.run()
                except BaseException as exc:
                    error = exc
    finally:
        loop.close()


async def astream_drive(loop: Loop, feed: Feed) -> AsyncIterator[ObserverEvent]:
    """``stream_drive`` for asyncio: completions streamed with ``astream``."""
    answer: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                request = loop.throw(error) if error is not None else loop.send(answer)
            except StopIteration:
                for event in feed.drain():
                    yield event
                return
            answer, error = None, None
            for event in feed.drain():
                yield event
            if isinstance(request, Complete) and request.streamable("astream"):
                pieces = request.plan.astream(request.messages, **request.keywords())
                try:
                    while True:
                        try:
                            item = await anext(pieces)
                        except StopAsyncIteration:
                            break
                        except BaseException as exc:
                            error = exc
                            break
                        if isinstance(item, Chunk):
                            feed.token(request, item.text)
                        else:
                            answer = item
                        for event in feed.drain():
                            yield event
                finally:
                    closing = getattr(pieces, "aclose", None)
                    if closing is not None:
                        await closing()
            elif isinstance(request, Gather):
                task = asyncio.ensure_future(request.arun(feed))
                gathered = _agathered(task, feed)
                try:
                    async for event in gathered:
                        yield event
                finally:  # a consumer that left early: the task ends before the run does
                    await gathered.aclose()
                if task.exception() is not None:
                    error = task.exception()
                else:
                    answer = task.result()
            else:
                try:
                    answer = await request.arun()
                except BaseException as exc:
                    error = exc
    finally:
        loop.close()


async def _agathered(task: asyncio.Future[Any], feed: Feed) -> AsyncGenerator[ObserverEvent, None]:
    """``_gathered`` for asyncio: the events of a running ``Gather`` task as they come.

    A consumer that leaves early waits for the task to end first.
    """
    running = asyncio.get_running_loop()
    ready = asyncio.Event()

    def wake() -> None:
        running.call_soon_threadsafe(ready.set)

    feed.wake = wake
    task.add_done_callback(lambda _: ready.set())
    try:
        while not task.done():
            await ready.wait()
            ready.clear()
            for event in feed.drain():
                yield event
    finally:
        feed.wake = None
        if not task.done():
            await asyncio.wait([task])
    for event in feed.drain():
        yield event


def _with_feed(kwargs: dict[str, Any]) -> Feed:
    feed = Feed()
    kwargs["observers"] = (*check_observers(kwargs.get("observers")), feed)
    return feed


def _named(fn: Any, like: Callable[..., Any], name: str, doc: str) -> None:
    functools.update_wrapper(fn, like)
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = doc


def run_entry(steps: Callable[P, Loop]) -> Callable[P, PlanResult]:
    """A planner's ``run``: the loop of ``steps`` driven in this thread (its docstring)."""

    def run(*args: P.args, **kwargs: P.kwargs) -> PlanResult:
        with watching() as unreached:
            result = drive(steps(*args, **kwargs))
        return raise_if_unreached(result, unreached)

    _named(run, steps, "run", steps.__doc__ or "")
    return run


def arun_entry(steps: Callable[P, Loop], name: str) -> Callable[P, Coroutine[Any, Any, PlanResult]]:
    """A planner's ``arun``: the same loop, driven on the event loop."""

    async def arun(*args: P.args, **kwargs: P.kwargs) -> PlanResult:
        with watching() as unreached:
            result = await adrive(steps(*args, **kwargs))
        return raise_if_unreached(result, unreached)

    _named(
        arun,
        steps,
        "arun",
        f"``{name}.run`` for asyncio: same arguments, same loop, same recorded graph.\n\n"
        "Model turns are awaited on the client's ``acomplete``; each action is\n"
        "dispatched in a worker thread (an ``async def`` capability runs on this\n"
        "event loop). Store writes stay synchronous and atomic.\n\n"
        f"Returns:\n    The ``PlanResult``, as ``{name}.run`` returns it.\n",
    )
    return arun


def stream_entry(steps: Callable[P, Loop], name: str) -> Callable[P, Iterator[ObserverEvent]]:
    """A planner's ``stream``: the run's events, as they happen."""

    def stream(*args: P.args, **kwargs: P.kwargs) -> Iterator[ObserverEvent]:
        feed = _with_feed(kwargs)
        return stream_drive(steps(*args, **kwargs), feed)

    _named(
        stream,
        steps,
        "stream",
        f"Run like ``{name}.run``, yielding the run's events as they happen.\n\n"
        "The events are the ``ObserverEvent`` objects observers receive\n"
        "(``trails.kernel.observe``): ``run_start``, ``llm_start``, ``token`` (each\n"
        "piece of model text, ``data['text']``), ``llm_end``, ``tool_start``,\n"
        "``tool_end`` / ``tool_error``, ``step_end`` (``data['step']``, a ``PlanStep``)\n"
        "... and last the run's ``run_end``, whose ``data['result']`` is the\n"
        "``PlanResult``. Leaving the loop early ends the run (recorded as an error).\n",
    )
    return stream


def astream_entry(steps: Callable[P, Loop], name: str) -> Callable[P, AsyncIterator[ObserverEvent]]:
    """A planner's ``astream``: ``stream`` for asyncio."""

    def astream(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[ObserverEvent]:
        feed = _with_feed(kwargs)
        return astream_drive(steps(*args, **kwargs), feed)

    _named(
        astream,
        steps,
        "astream",
        f"``{name}.stream`` for asyncio: ``async for event in {name}.astream(...)``.\n",
    )
    return astream


Progress: TypeAlias = Callable[[int, int], None]
"""``on_progress(done, total)``, called after each goal of a batch ends."""


_BATCH_DOC = """Run several goals, each in its own new ``Session``, ``max_concurrency`` at once.

Args:
    goals: the goals, one run each.
    max_concurrency: how many runs go at once ({how}).
    on_progress: called with ``(done, total)`` after each run ends.
    principal: who the sessions act for (default: ``[agent] principal``).
    session_options: further ``Session`` keywords (``store``, ``policy``,
        ``budget`` ...) for every session.
    **options: ``{name}.run`` keywords (``llm`` is required), the same for every goal.

Returns:
    One result per goal, in the goals' order: the ``PlanResult``, or the
    exception that run raised (one failure does not cancel the others). Each
    session is closed when its run ends.

The batch is evidence: a ``trails:Batch`` activity in a graph of its own that
every run and session of the batch is informed by, and observers get
``batch_start`` / ``batch_end`` (see ``trails.agent.loop.batch``).

Raises:
    UserError: ``goals`` is not a list or ``max_concurrency`` < 1.
"""


def batch_entry(steps: Callable[..., Loop], name: str) -> Callable[..., list[Any]]:
    """A planner's ``batch``: goals in worker threads, each its own session and run."""

    def batch(
        goals: Sequence[str],
        *,
        max_concurrency: int = 4,
        on_progress: Progress | None = None,
        principal: str | None = None,
        session_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> list[PlanResult | Exception]:
        todo = check_batch(goals, max_concurrency)
        progress = ProgressCounter(len(todo), on_progress)
        who = batch_principal(principal)
        informed: list[str] = []

        def one(goal: str) -> PlanResult | Exception:
            result: PlanResult | None = None
            session: Session | None = None
            try:
                session = batch_session(who, session_options)
                with session:
                    result = drive(steps(goal, session=session, **options))
                    return result
            except Exception as exc:
                return exc
            finally:
                note_informed(session, result, informed)
                progress.tick()

        if not todo:
            return []
        record = BatchRecord(
            name, len(todo), principal=who, session_options=session_options, options=options
        )
        record.start()
        workers = min(max_concurrency, len(todo))
        with ThreadPoolExecutor(workers, thread_name_prefix=f"trails-{name}-batch") as pool:
            context = contextvars.copy_context()
            futures = [pool.submit(context.copy().run, one, goal) for goal in todo]
            results = [f.result() for f in futures]
        record.end(results, informed)
        return results

    batch.__name__ = batch.__qualname__ = "batch"
    batch.__doc__ = _BATCH_DOC.format(how="worker threads", name=name)
    return batch


def abatch_entry(
    steps: Callable[..., Loop], name: str
) -> Callable[..., Coroutine[Any, Any, list[Any]]]:
    """A planner's ``abatch``: goals as asyncio tasks behind a semaphore."""

    async def abatch(
        goals: Sequence[str],
        *,
        max_concurrency: int = 4,
        on_progress: Progress | None = None,
        principal: str | None = None,
        session_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> list[PlanResult | Exception]:
        todo = check_batch(goals, max_concurrency)
        progress = ProgressCounter(len(todo), on_progress)
        gate = asyncio.Semaphore(max_concurrency)
        who = batch_principal(principal)
        informed: list[str] = []

        async def one(goal: str) -> PlanResult | Exception:
            async with gate:
                result: PlanResult | None = None
                session: Session | None = None
                try:
                    session = batch_session(who, session_options)
                    with session:
                        result = await adrive(steps(goal, session=session, **options))
                        return result
                except Exception as exc:
                    return exc
                finally:
                    note_informed(session, result, informed)
                    progress.tick()

        if not todo:
            return []
        record = BatchRecord(
            name, len(todo), principal=who, session_options=session_options, options=options
        )
        await off_loop(record.start)
        results = list(await asyncio.gather(*(one(goal) for goal in todo)))
        await off_loop(record.end, results, informed)
        return results

    abatch.__name__ = abatch.__qualname__ = "abatch"
    abatch.__doc__ = _BATCH_DOC.format(how="asyncio tasks", name=name)
    return abatch
