"""``Context``: who is acting, in which session, recorded where, billed to whom.

Handlers receive it as ``ctx``; planners and the LLM client take it as
``ctx=``. It carries the principal, the session IRI (which names the session's
graph), the recorder, the cost tracker, the parent activity (so children link
with ``prov:wasInformedBy``), and optional tool policy, LLM client and
application extras (``ctx.graph`` in the seed is an extra).

``Context.open`` starts a session and records it; ``close`` ends it (once,
whichever copy of the context is closed). A session id the caller chooses names
one session, of one principal and one writer: an id the store already holds is
refused (``SessionTaken``), never written into (``trails.prov.starts``). A session
nobody closes is still ended: when its last context is garbage, or at exit
(``trails.kernel.lifecycle``). Code that calls ``invoke`` or ``LLMClient.complete``
with no context gets ``current_context()``: inside a capability handler, the
handler's own context (so a nested call is linked to the invocation that made it,
as in ``ctx.llm.complete(...)``); elsewhere, the process default context, a session
opened on first use for the configured principal. Nothing is ever recorded
outside a session graph.

The policy a context holds is typed by ``trails.kernel.decision`` (``ToolPolicy``,
``Decision``, re-exported here); the one read from trails.toml is a
``trails.kernel.policy.RulePolicy``. Neither of those modules imports this one.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from trails.config import load_settings
from trails.errors import TrailsError, UserError
from trails.kernel.cost import CostTracker, default_tracker
from trails.kernel.decision import Decision, ToolPolicy
from trails.kernel.lifecycle import (
    Lifecycle,
    SessionEnd,
    drain_pending,
    end_status,
    interruption,
    on_exit,
    open_here,
)
from trails.kernel.policy import RulePolicy, settings_timeout
from trails.kernel.riders import Riders
from trails.prov.events import SessionStarted
from trails.prov.iri import check_session_id
from trails.prov.recorder import Recorder, default_recorder
from trails.prov.starts import record_start
from trails.store.terms import IRI
from trails.text import check_text

if TYPE_CHECKING:
    from trails.store.base import Store

__all__ = [
    "Context",
    "Decision",
    "InvocationRecord",
    "ToolPolicy",
    "current_context",
    "default_context",
    "minted_session_id",
    "now",
    "reset_default_context",
]

log = logging.getLogger(__name__)


def now() -> datetime:
    """The current time, timezone-aware UTC (every recorded timestamp)."""
    return datetime.now(UTC)


# the session ids ``minted_session_id`` gave out that no ``Context.open`` has used yet
# (insertion-ordered; the oldest forgotten past ``_MINTED_KEPT``: then checked, still right)
_minted: dict[str, None] = {}
_minted_lock = threading.Lock()
_MINTED_KEPT = 4096


def minted_session_id() -> str:
    """A new session id (a UUID4) for a session that opens later (``Session`` names its
    session before its first step): the first ``Context.open`` given it writes the start
    at once, as for an id it mints itself, since no one else can hold it. Once: a second
    open of the same id, or an id never minted here, is checked like any chosen id
    (``trails.prov.starts``)."""
    sid = str(uuid.uuid4())
    with _minted_lock:
        _minted[sid] = None
        if len(_minted) > _MINTED_KEPT:
            del _minted[next(iter(_minted))]
    return sid


def _first_use(session_id: str) -> bool:
    """Whether ``session_id`` was minted here and not used yet (and from now on, used)."""
    with _minted_lock:
        return _minted.pop(session_id, False) is None


@dataclass(frozen=True)
class InvocationRecord:
    """The envelope of one ``invoke`` made in a session (``Session.invocations``)."""

    capability: str
    args: Any
    result: Any
    args_sha256: str
    result_sha256: str | None
    status: str
    activity: str
    error: str | None
    started: datetime
    ended: datetime


@dataclass
class Context:
    """The per-call view of a session. Cheap to copy: ``child`` shares everything but the parent."""

    principal: str
    session: IRI
    recorder: Recorder
    tracker: CostTracker = field(default_factory=default_tracker)
    parent: IRI | None = None
    step: int | None = None
    llm: Any = None
    policy: ToolPolicy | None = None
    approver: Callable[..., Any] | None = None
    approval_timeout_s: float | None = None
    observers: tuple[Any, ...] = ()
    run: IRI | None = None
    """The plan-run activity a call belongs to (the observers' ``run_id``)."""
    invocations: list[InvocationRecord] | None = None
    tool_call_id: str | None = None
    """The provider's id of the model's tool call the next ``invoke`` runs (native tool
    calling): recorded on the invocation as ``trails:toolCallId``; not inherited by
    the calls its handler makes."""
    tool_timeout_s: float | None = None
    """A cap on how long each ``invoke`` made with this context may run (a planner's
    ``tool_timeout_s``): the smaller of it and the capability's ``timeout_s`` applies."""
    extras: dict[str, Any] = field(default_factory=dict)
    lifecycle: Lifecycle | None = field(default=None, repr=False, compare=False)
    riders: Riders | None = field(default=None, repr=False, compare=False)
    """Inside a handler: events written with its invocation (``trails.kernel.riders``)."""

    @property
    def store(self) -> Store:
        return self.recorder.store

    @property
    def session_id(self) -> str:
        return self.recorder.minter.session_id(self.session)

    def child(self, **changes: Any) -> Context:
        """A copy with some fields changed (usually ``parent=``).

        Made for every call (each ``invoke``, each planner step), so it copies the
        fields as they are instead of running ``__init__`` again (``dataclasses.replace``).

        Raises:
            TypeError: a name that is not a field (as ``dataclasses.replace`` would).
        """
        unknown = changes.keys() - _FIELDS
        if unknown:
            raise TypeError(f"Context has no field {', '.join(sorted(unknown))}")
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def __getattr__(self, name: str) -> Any:
        extras = self.__dict__.get("extras")
        if extras is not None and name in extras:
            return extras[name]
        raise AttributeError(f"Context has no attribute {name!r}")

    @classmethod
    def open(
        cls,
        principal: str | None = None,
        *,
        recorder: Recorder | None = None,
        tracker: CostTracker | None = None,
        session_id: str | None = None,
        label: str | None = None,
        assurance_level: str | None = None,
        domain: str | None = None,
        rerun_of: str | None = None,
        **fields: Any,
    ) -> Context:
        """Start a session, record its start, and return its context.

        Without ``session_id`` the session gets a new UUID. With one, the id must
        be free: an id the store already holds (another principal's session, one
        that has ended, one open in this or another writer, a graph holding other
        data) is refused, and the check and the start are one step
        (``trails.prov.starts``).

        Raises:
            UserError: a principal that is empty or blank (None means the configured
                one), or a principal, label or other text that is not valid Unicode.
            SessionError: a ``session_id`` that cannot name a session (empty, blank,
                too long, a character an IRI path segment cannot hold as it is).
            SessionTaken: the ``session_id`` is taken (``reason`` says why).
            StoreError: the session start could not be recorded.
        """
        drain_pending()  # a safe point: end sessions the garbage collector found abandoned
        if principal is None:
            principal = load_settings().principal
        elif not isinstance(principal, str) or not principal.strip():
            raise UserError(
                f"Context.open principal must be a non-empty str, not {principal!r:.40} "
                "(leave it out for the configured principal)"
            )
        for name, value in (
            ("principal", principal),
            ("session_id", session_id),
            ("label", label),
            ("assurance_level", assurance_level),
            ("domain", domain),
        ):
            check_text(value, f"Context.open {name}")
        if session_id is not None:
            check_session_id(session_id, "Context.open session_id")
        recorder = recorder or default_recorder()
        if fields.get("policy") is None:
            _policy_from_settings(fields)
        session = recorder.minter.session(session_id)
        start = SessionStarted(
            session=session,
            principal=principal,
            started=now(),
            label=label,
            assurance_level=assurance_level,
            domain=domain,
            rerun_of=rerun_of,
        )
        if session_id is None or _first_use(session_id):  # a fresh UUID: no one can hold it
            recorder.record(start)
        else:
            record_start(recorder, start, open_here=open_here(recorder.store, session))
        return cls(
            principal=principal,
            session=session,
            recorder=recorder,
            tracker=tracker or default_tracker(),
            parent=session,
            lifecycle=Lifecycle(SessionEnd(recorder, session)),
            **fields,
        )

    @property
    def ended(self) -> bool:
        """Whether this context's session has ended (through any copy of it)."""
        return self.lifecycle is not None and self.lifecycle.ending.ended

    def close(self, status: str = "ok", *, reason: str | None = None) -> None:
        """Record the end of the session, once: closing again (or another copy) does nothing.

        A session an interruption reached (a call or run cut short by Ctrl-C) ends
        ``interrupted`` whatever ``status`` says (``trails.kernel.lifecycle``).

        Args:
            status: the recorded end status (``"ok"``, ``"error"`` or ``"interrupted"``).
            reason: with ``"interrupted"``, what interrupted it.

        Raises:
            StoreError: the end could not be recorded (the session stays open).
        """
        if self.lifecycle is None:  # built by hand, not by open(): nothing tracks it
            self.lifecycle = Lifecycle(SessionEnd(self.recorder, self.session))
        self.lifecycle.ending.end(status, reason)

    def __enter__(self) -> Context:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(end_status(exc), reason=interruption(exc))


_FIELDS = frozenset(f.name for f in dataclasses.fields(Context))


def _policy_from_settings(fields: dict[str, Any]) -> None:
    """Fill ``policy`` (and the approval timeout) from ``[policy]`` of trails.toml, if any."""
    settings = load_settings()
    policy = RulePolicy.from_settings(settings)
    if policy is not None:
        fields["policy"] = policy
        if fields.get("approval_timeout_s") is None:
            fields["approval_timeout_s"] = settings_timeout(settings)


_lock = threading.Lock()
_default: Context | None = None


def default_context() -> Context:
    """The process default context: a session opened on first use, ended at exit.

    When the default store (hence recorder) changes, the previous default
    session is ended first.
    """
    global _default
    with _lock:
        recorder = default_recorder()
        if _default is None or _default.recorder is not recorder or _default.ended:
            previous, _default = _default, None
            if previous is not None:
                _close_quietly(previous)
            _default = Context.open(recorder=recorder, label="default session")
        return _default


def _close_quietly(ctx: Context) -> None:
    try:
        ctx.close()
    except TrailsError:
        log.debug("could not record the end of the default session", exc_info=True)


_current: contextvars.ContextVar[Context | None] = contextvars.ContextVar(
    "trails_current_context", default=None
)


def current_context() -> Context:
    """The context of the capability handler running now, else the process default."""
    ctx = _current.get()
    return ctx if ctx is not None else default_context()


def reset_default_context() -> None:
    """Forget the default context (its session is ended first when possible)."""
    global _default
    with _lock:
        ctx, _default = _default, None
    if ctx is not None:
        _close_quietly(ctx)


on_exit(reset_default_context)
