"""Every session ends: explicitly, when nothing refers to it any more, or at exit.

A session is opened by ``Context.open`` (directly, through a ``Session``'s first
run, or as the process default session). This module makes sure its end is
recorded, exactly once, on every path a program can take:

- ``Context.close`` / ``Session.close`` / leaving a ``with`` block ends it now;
- when the last ``Context`` of the session (and the ``Session`` holding it) is
  garbage, it is ended with status ``ok``: ``Session(...)`` used without
  ``with``, ``Session.new(...).run(...)``, a ``Context.open`` never closed;
- at normal interpreter exit, every session still open is ended.

The end is the ``SessionEnded`` event, recorded through the session's
recorder, so a sealer installed on it seals the session as usual.

An interruption is a way to end too. A ``KeyboardInterrupt`` (Ctrl-C, SIGINT) or
a ``SystemExit`` (what a SIGTERM handler usually raises) reaching a capability
call or a plan run is noted on the session (``interrupt``); whichever path then
ends the session ends it ``interrupted``, with a ``trails:Interruption`` naming
the exception and the activities it cut short, and seals it as usual. The
same happens when the program stops on an uncaught ``KeyboardInterrupt`` with
sessions open. trails installs no signal handler: a signal that Python leaves
at its default action (SIGTERM without a handler, SIGKILL) stops the process
without any of this, and recovery ends its sessions as interrupted.

Ending a session writes to the store, which must not happen in the middle of
another write. A session found garbage by the *cyclic* garbage collector
(which can run at any allocation, inside trails' own code) is therefore not
ended on the spot but queued, and the queue is drained at the next safe
point: the next ``Context.open``, or exit. Sessions freed by reference counting
(the usual case) are ended at once.

The exit handler is re-registered each time a session opens, so it runs
before ``atexit`` handlers registered earlier (``atexit`` runs the newest
first); an application that closes its store in an ``atexit`` handler
registered after its last session opened should close its sessions first.
A process that is killed leaves its sessions open: recovery ends them as
interrupted (``trails.evidence.recovery``).
"""

from __future__ import annotations

import atexit
import gc
import logging
import sys
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from trails.errors import TrailsError
from trails.prov.events import SessionEnded

if TYPE_CHECKING:
    from trails.prov.recorder import Recorder
    from trails.store.terms import IRI

__all__ = [
    "INTERRUPTED",
    "Lifecycle",
    "SessionEnd",
    "collecting",
    "drain_pending",
    "end_open_sessions",
    "end_status",
    "interruption",
    "mark_interrupted",
    "on_exit",
    "open_here",
    "open_sessions",
]

log = logging.getLogger(__name__)

INTERRUPTED = "interrupted"
"""The end status of a session, a run or a call an interruption cut short."""


def interruption(exc: BaseException | None) -> str | None:
    """The name recorded for an exception that interrupts rather than fails, else None.

    ``KeyboardInterrupt`` is what Python raises on SIGINT (Ctrl-C); ``SystemExit``
    is what a program's own SIGTERM handler usually raises (``sys.exit``); any
    other exception outside ``Exception`` (an asyncio cancellation) stops a call
    the same way. ``GeneratorExit`` (a generator closed) and ordinary exceptions
    are not interruptions.

    Args:
        exc: the exception leaving a call, a run or a session.

    Returns:
        ``"KeyboardInterrupt (SIGINT)"``, ``"SystemExit(143)"``, the class name, or None.
    """
    if exc is None or isinstance(exc, Exception | GeneratorExit):
        return None
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt (SIGINT)"
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r})"
    return type(exc).__name__


def end_status(exc: BaseException | None) -> str:
    """How a session left by ``exc`` ends: ``ok``, ``error`` or ``interrupted``."""
    if exc is None:
        return "ok"
    return INTERRUPTED if interruption(exc) is not None else "error"


class SessionEnd:
    """Records the end of one session, once, whoever asks first.

    Args:
        recorder: the session's recorder.
        session: the session IRI.
    """

    def __init__(self, recorder: Recorder, session: IRI) -> None:
        self.recorder = recorder
        self.session = session
        self.ended = False
        self.reason: str | None = None
        """Why the session was interrupted, once it was (its end is then ``interrupted``)."""
        self.interrupted_at: datetime | None = None
        self._lock = threading.Lock()

    def interrupt(self, reason: str) -> None:
        """Note that an interruption reached this session: its end will be ``interrupted``.

        Args:
            reason: what interrupted it (the first reason noted is kept).
        """
        if self.reason is None:
            self.reason, self.interrupted_at = reason, datetime.now(UTC)

    def end(self, status: str = "ok", reason: str | None = None) -> bool:
        """Record ``SessionEnded`` unless it already was.

        A session an interruption reached (``interrupt``) ends ``interrupted``
        whatever ``status`` asks, with a ``trails:Interruption`` naming the reason
        (the calls and runs it cut short already name that interruption).

        Args:
            status: the recorded end status.
            reason: why, when ``status`` is ``interrupted`` and nothing was noted.

        Returns:
            True when this call recorded the end.

        Raises:
            StoreError: the end could not be written (the session stays open).
        """
        with self._lock:
            if self.ended:
                return False
            ended = datetime.now(UTC)
            if status == INTERRUPTED or self.reason is not None:
                event = SessionEnded(
                    session=self.session,
                    ended=ended,
                    status=INTERRUPTED,
                    reason=self.reason or reason or "the program was interrupted",
                    detected=ended,
                    interrupted_at=self.interrupted_at,
                )
            else:
                event = SessionEnded(session=self.session, ended=ended, status=status)
            self.recorder.record(event)
            self.ended = True
        _forget(self)
        return True

    def end_quietly(self, status: str = "ok") -> None:
        """``end``, logging instead of raising (exit and garbage paths have no caller)."""
        if getattr(self.recorder.store, "closed", False):  # nothing can be written there now:
            _forget(self)  # the session stays open, and recovery ends it as interrupted
            return
        try:
            self.end(status)
        except TrailsError:  # e.g. its store was closed: it stays open, recovery ends it
            log.info("could not record the end of session %s", self.session, exc_info=True)
            _forget(self)


def mark_interrupted(lifecycle: Lifecycle | None, reason: str) -> None:
    """Note an interruption on a context's session (nothing when no lifecycle tracks it).

    Args:
        lifecycle: the context's ``lifecycle``.
        reason: what interrupted it, and where.
    """
    if lifecycle is not None:
        lifecycle.ending.interrupt(reason)


class Lifecycle:
    """Shared by every ``Context`` copy of one session; when it is garbage, the session ends.

    Args:
        ending: the session's ``SessionEnd``.
    """

    __slots__ = ("__weakref__", "ending")

    def __init__(self, ending: SessionEnd) -> None:
        self.ending = ending
        with _lock:
            _open[id(ending)] = ending
        weakref.finalize(self, _abandoned, ending).atexit = False
        _arm_exit_handler()


_lock = threading.Lock()
_open: dict[int, SessionEnd] = {}
_pending: deque[SessionEnd] = deque()
# The collector's phase, kept by a callback written in C. A callback written in Python
# runs bytecode, where Python runs a pending signal's handler; the exception that
# handler raises (Ctrl-C's KeyboardInterrupt, a SIGTERM handler's SystemExit) would be
# swallowed there as "Exception ignored in", and the signal lost. ``move_to_end(phase,
# info)`` moves "start" or "stop" to the end: the last key is the phase the collector
# is in. It is the process's, not a thread's: a session that another thread lets go
# while a collection is under way is queued as well.
_phase: OrderedDict[str, None] = OrderedDict(start=None, stop=None)


def _forget(ending: SessionEnd) -> None:
    with _lock:
        _open.pop(id(ending), None)


def _abandoned(ending: SessionEnd) -> None:
    if ending.ended:
        return
    if collecting():
        _pending.append(ending)  # inside the cyclic collector: end it at the next safe point
        return
    ending.end_quietly("ok")


def collecting() -> bool:
    """Whether the cyclic garbage collector is running (between its start and stop)."""
    return next(reversed(_phase)) == "start"


# called as move_to_end(phase, info): info, a dict and never empty, is taken as last=True
gc.callbacks.append(_phase.move_to_end)  # type: ignore[arg-type]


def drain_pending() -> None:
    """End the sessions the cyclic garbage collector found abandoned (a safe point)."""
    while _pending:
        try:
            ending = _pending.popleft()
        except IndexError:
            return
        ending.end_quietly("ok")


def open_sessions() -> list[IRI]:
    """The sessions this process opened and has not ended yet."""
    with _lock:
        return [e.session for e in _open.values() if not e.ended]


def open_here(store: object, session: IRI) -> bool:
    """Whether this process has ``session`` open on ``store`` (opened, not ended yet)."""
    with _lock:
        return any(
            e.session == session and e.recorder.store is store and not e.ended
            for e in _open.values()
        )


def end_open_sessions(status: str = "ok") -> None:
    """End every session this process opened and has not ended (what exit does)."""
    drain_pending()
    with _lock:
        endings = list(_open.values())
    for ending in endings:
        ending.end_quietly(status)


_exit_handlers: list[Callable[[], None]] = []


def _note_uncaught() -> None:
    """A program stopping on an uncaught interruption interrupts every session it left open."""
    if hasattr(sys, "ps1"):  # interactive: an old interrupted statement says nothing of now
        return
    name = interruption(getattr(sys, "last_value", None))
    if name is None:
        return
    with _lock:
        endings = list(_open.values())
    for ending in endings:
        ending.interrupt(f"{name}: the program stopped with the session open")


def _at_exit() -> None:
    _note_uncaught()
    for handler in _exit_handlers:  # the default session first, then every other one
        try:
            handler()
        except Exception:  # exit must go on
            log.debug("exit handler %r failed", handler, exc_info=True)
    end_open_sessions()


def _arm_exit_handler() -> None:
    atexit.unregister(_at_exit)
    atexit.register(_at_exit)


def on_exit(handler: Callable[[], None]) -> None:
    """Run ``handler`` at exit before the remaining open sessions are ended."""
    _exit_handlers.append(handler)
    _arm_exit_handler()
