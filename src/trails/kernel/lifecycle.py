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
import threading
import weakref
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from trails.errors import TrailsError
from trails.prov.events import SessionEnded

if TYPE_CHECKING:
    from trails.prov.recorder import Recorder
    from trails.store.terms import IRI

__all__ = [
    "Lifecycle",
    "SessionEnd",
    "drain_pending",
    "end_open_sessions",
    "on_exit",
    "open_sessions",
]

log = logging.getLogger(__name__)


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
        self._lock = threading.Lock()

    def end(self, status: str = "ok") -> bool:
        """Record ``SessionEnded`` unless it already was.

        Args:
            status: the recorded end status.

        Returns:
            True when this call recorded the end.

        Raises:
            StoreError: the end could not be written (the session stays open).
        """
        with self._lock:
            if self.ended:
                return False
            self.recorder.record(
                SessionEnded(session=self.session, ended=datetime.now(UTC), status=status)
            )
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
_collecting = threading.local()


def _forget(ending: SessionEnd) -> None:
    with _lock:
        _open.pop(id(ending), None)


def _abandoned(ending: SessionEnd) -> None:
    if ending.ended:
        return
    if getattr(_collecting, "active", False):
        _pending.append(ending)  # inside the cyclic collector: end it at the next safe point
        return
    ending.end_quietly("ok")


def _gc_phase(phase: str, info: dict[str, Any]) -> None:
    _collecting.active = phase == "start"


gc.callbacks.append(_gc_phase)


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


def end_open_sessions(status: str = "ok") -> None:
    """End every session this process opened and has not ended (what exit does)."""
    drain_pending()
    with _lock:
        endings = list(_open.values())
    for ending in endings:
        ending.end_quietly(status)


_exit_handlers: list[Callable[[], None]] = []


def _at_exit() -> None:
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
