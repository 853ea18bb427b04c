"""History evictions as evidence: what a session's token window dropped, and its summary.

A session's history is a token window (``trails.agent.history.TokenWindow``):
past its budget the oldest unpinned messages are dropped. Each such eviction is
recorded in the session's graph as one atomic write: a ``trails:HistoryEviction``
activity (a ``prov:Activity`` in the session) with how many entries it dropped,
and each dropped message as a ``trails:EvictedEntry`` entity (its role, token
count, and content kept apart like every recorded text) that
``prov:wasInvalidatedBy`` the eviction. Observers get a ``history_trim`` event
(``evicted``, ``tokens``, ``summarized``).

With ``Session(summarize_on_trim=fn)``, ``fn(entries)`` (the dropped entries,
the previous summary first when there is one) returns the text that stands in
for them: it enters the window as a summary entry, and the graph holds it as a
``trails:HistorySummary`` the eviction generated, ``prov:wasDerivedFrom`` each
entry it summarises (the previous summary is invalidated by the eviction too).
``summarize_on_trim`` may also be an LLM client (seed 002's
``summarize_provider``): it is asked for the summary (``SUMMARY_PROMPT``), and
that request is a completion recorded in the session like any other.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

from trails.agent.history import HistoryEntry, TokenWindow
from trails.errors import UserError
from trails.kernel.context import now
from trails.kernel.observe import notify
from trails.llm.types import Message
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI

if TYPE_CHECKING:
    from trails.kernel.context import Context

__all__ = [
    "SUMMARY_PROMPT",
    "EvictedEntry",
    "EvictionRecorder",
    "HistoryEvicted",
    "Summarizer",
    "WindowOwner",
]

Summarizer = Callable[[list[HistoryEntry]], str]
"""``summarize_on_trim(entries) -> str``: the summary of the entries a window dropped."""


class WindowOwner(Protocol):
    """What an eviction reads of its session (``Session`` satisfies it; this module
    does not import ``trails.agent.context``, which imports it)."""

    @property
    def history(self) -> TokenWindow:
        """The session's window."""

    @property
    def closed(self) -> bool:
        """Whether the session was closed."""

    @property
    def read_only(self) -> bool:
        """Whether the session is a replay."""

    @property
    def context(self) -> Context:
        """The session's provenance context (opened on first use)."""


class EvictedEntry(BaseModel):
    """One dropped message, as ``HistoryEvicted`` records it."""

    model_config = ConfigDict(frozen=True)

    role: str
    content: str
    tokens: int


class HistoryEvicted(Event):
    """A session's token window dropped entries (and, summarising, wrote their summary)."""

    activity: str
    at: datetime
    dropped: tuple[EvictedEntry, ...]
    summary: str | None = None
    previous_summary: str | None = None
    """The IRI of the summary this eviction replaced (it is invalidated here)."""

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        b.activity(a, T.HistoryEviction, self.at, self.at)
        b.child_of(a, None, self.graph)
        b.label(a, f"history eviction of {len(self.dropped)}")
        b.value(a, T.evictedCount, len(self.dropped))
        entries = []
        for i, entry in enumerate(self.dropped):
            e = Minter.part(a, f"entry{i}")
            entries.append(e)
            b.entity(e, T.EvictedEntry, entry.content, as_json=False)
            b.value(e, T.role, entry.role)
            b.value(e, T.tokenCount, entry.tokens)
            b.add(e, PROV.wasInvalidatedBy, a)
            b.value(e, PROV.invalidatedAtTime, self.at)
        if self.previous_summary is not None:
            old = IRI.trusted(self.previous_summary)
            b.add(old, PROV.wasInvalidatedBy, a)
            b.value(old, PROV.invalidatedAtTime, self.at)
            entries.insert(0, old)
        if self.summary is not None:
            s = Minter.part(a, "summary")
            b.entity(s, T.HistorySummary, self.summary, generated_by=a, at=self.at, as_json=False)
            b.label(s, f"summary of {len(entries)} history entries")
            for e in entries:
                b.add(s, PROV.wasDerivedFrom, e)


SUMMARY_PROMPT = (
    "Summarise the conversation below in a few sentences, keeping names, figures and "
    "decisions; it replaces these messages in the agent's memory. Reply with the summary only."
)


def _model_summarizer(client: Any, session: Callable[[], Any]) -> Summarizer:
    """``summarize_on_trim`` for a model client: it is asked for the summary, in the session."""

    def summarize(entries: list[HistoryEntry]) -> str:
        owner = session()
        text = "\n".join(f"{e.role}: {e.content}" for e in entries)
        messages = [Message("system", SUMMARY_PROMPT), Message("user", text)]
        ctx = owner.context if owner is not None and not owner.closed else None
        return str(client.complete(messages, ctx=ctx, max_tokens=512).text)

    return summarize


class EvictionRecorder:
    """A session window's ``on_evict``: records each eviction, summarising when asked.

    Args:
        session: the session whose window it watches.
        summarize: ``summarize_on_trim``, or None.

    Raises:
        UserError: ``summarize`` is not a function.
    """

    def __init__(self, session: WindowOwner, summarize: Summarizer | Any = None) -> None:
        if summarize is not None and not callable(summarize):
            if not callable(getattr(summarize, "complete", None)):
                raise UserError(
                    f"summarize_on_trim= must be a function (entries) -> str or an LLM "
                    f"client, not {summarize!r}"
                )
            summarize = _model_summarizer(summarize, weakref.ref(session))
        # weak: the session holds its window, which holds this; a strong reference
        # back would keep a dropped session alive (and unended) until a GC cycle
        self._session = weakref.ref(session)
        self.summarize = summarize
        self.summary_iri: str | None = None

    def __call__(self, dropped: list[HistoryEntry]) -> str | None:
        """Record the eviction of ``dropped`` and return the summary to keep, if any.

        Raises:
            UserError: the summarizer raised or did not return a str (the eviction
                is recorded first, without a summary).
        """
        session = self._session()
        if session is None:
            return None
        previous = session.history.summary
        text: str | None = None
        failure: UserError | None = None
        if self.summarize is not None:
            try:
                made = self.summarize(([previous] if previous is not None else []) + dropped)
            except Exception as exc:
                failure = UserError(f"summarize_on_trim raised: {type(exc).__name__}: {exc}")
            else:
                if isinstance(made, str):
                    text = made
                else:
                    failure = UserError(
                        f"summarize_on_trim must return a str, not {type(made).__name__}"
                    )
        if not (session.closed or session.read_only):
            self._record(session.context, dropped, text, previous is not None)
        if failure is not None:
            raise failure
        return text

    def _record(
        self, ctx: Context, dropped: list[HistoryEntry], text: str | None, replaces: bool
    ) -> None:
        activity = ctx.recorder.minter.activity()
        ctx.recorder.record(
            HistoryEvicted(
                session=ctx.session,
                activity=activity,
                at=now(),
                dropped=tuple(
                    EvictedEntry(role=e.role, content=e.content, tokens=e.tokens) for e in dropped
                ),
                summary=text,
                previous_summary=self.summary_iri if replaces and text is not None else None,
            )
        )
        if text is not None:
            self.summary_iri = str(Minter.part(activity, "summary"))
        notify(
            ctx,
            "history_trim",
            call_id=str(activity),
            evicted=len(dropped),
            tokens=sum(e.tokens for e in dropped),
            summarized=text is not None,
            summary=text,
        )
