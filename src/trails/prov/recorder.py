"""The recorder: one event in, one atomic write of its quads out.

It owns the IRI minter and the content policy (record values, or hashes
only), so the rest of trails only builds events. Two kinds of hook extend it
without the recorder knowing who they are (the settings install them, see
``trails.config``):

- a *pre-write hook* ``hook(recorder, event, quads) -> (add, remove)`` runs
  before the write and may add (and remove) quads in the same atomic write (the audit
  room's sealer adds the seal of a session to the write that ends it, so
  there is no moment where a session is ended and not sealed);
- a *listener* ``listener(recorder, event)`` runs after a successful write;
- a *write observer* ``observer(recorder, added, removed)`` sees every quad a
  successful write added and removed (event writes and ``write_quads``), so a
  hook can know what a graph holds without reading it back (the sealer keeps
  the graphs of the sessions it saw start).

While pre-write hooks are installed, hook and write run under the
recorder's lock, so what a hook read is still what the store holds when its
quads are written (for writes through this recorder).

An event's quads describe the things it involves: the capability, the principal,
the model, the policy. Those descriptions are the same in every event of a
session, so the recorder writes each of them once per graph: it remembers the
quads it wrote about anything that is not an activity or entity minted for one
event (a few dozen per graph, for the graphs it wrote to last), forgets a graph
when its session ends, and forgets a quad when a write through it removes that
quad. A quad is remembered only once the write that carried it succeeded.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence

from trails.config import Settings, load_settings
from trails.prov.builder import QuadBuilder
from trails.prov.content import content_graph
from trails.prov.events import Event, SessionEnded
from trails.prov.iri import Minter
from trails.prov.masking import Masking
from trails.store import Store, default_store
from trails.store.terms import IRI, Quad

__all__ = [
    "Listener",
    "PreWriteHook",
    "Recorder",
    "WriteObserver",
    "default_recorder",
    "reset_default_recorder",
]

log = logging.getLogger(__name__)

Listener = Callable[["Recorder", Event], None]
"""Called after each successful write."""

PreWriteHook = Callable[["Recorder", Event, list[Quad]], tuple[Sequence[Quad], Sequence[Quad]]]
"""Called before each write with the event's quads; returns ``(add, remove)`` for the same write."""

WriteObserver = Callable[["Recorder", Sequence[Quad], Sequence[Quad]], None]
"""Called after each successful write with the quads it added and removed."""

_WRITTEN_GRAPHS = 256
"""Graphs whose repeated descriptions a recorder remembers (the most recently first written)."""
_WRITTEN_PER_GRAPH = 4096
"""Quads remembered per graph (past that, a repeat is written again, which is harmless)."""
_NONE: frozenset[Quad] = frozenset()


class Recorder:
    """Writes events to a store.

    Args:
        store: where to write.
        base_iri: base under which instance IRIs are minted.
        content: ``"full"`` records values, ``"hash"`` records sha256 only.
        masking: PII masking rules applied to every text before it is written
            (``trails.prov.masking``; default: none).
    """

    def __init__(
        self,
        store: Store,
        *,
        base_iri: str = "urn:trails:",
        content: str = "full",
        masking: Masking | None = None,
    ) -> None:
        if content not in ("full", "hash"):
            raise ValueError(f"content must be 'full' or 'hash', not {content!r}")
        self.store = store
        self.minter = Minter(base_iri)
        self.content = content
        self.masking = masking
        self._listeners: list[Listener] = []
        self._prewrite: list[PreWriteHook] = []
        self._on_written: list[Listener] = []
        self._observers: list[WriteObserver] = []
        self._lock = threading.RLock()
        self.removing: Sequence[Quad] = ()
        """What the write in progress removes (for pre-write hooks to see)."""
        # per graph, the quads about shared things (not minted for one event) written here
        self._written: dict[IRI, set[Quad]] = {}
        self._minted = (f"{self.minter.base}activity:", f"{self.minter.base}entity:")

    @classmethod
    def from_settings(
        cls, settings: Settings | None = None, store: Store | None = None
    ) -> Recorder:
        """A recorder configured by the settings, with the plugins they name.

        Each ``settings.recorder_plugins()`` entry (by default the evidence room's
        sealer, unless ``[audit] seal = false``, then its recovery of sessions left
        open by a process that stopped) is called with the recorder and the
        settings and installs its hooks.

        Raises:
            ConfigError: a plugin cannot be loaded or refuses its configuration.
        """
        settings = settings or load_settings()
        recorder = cls(
            store if store is not None else default_store(),
            base_iri=settings.base_iri,
            content=settings.record_content,
            masking=Masking.from_settings(settings),
        )
        for path in settings.recorder_plugins():
            settings.plugin(path)(recorder, settings)
        return recorder

    def quads(self, event: Event) -> list[Quad]:
        """The quads ``event`` becomes, without writing them."""
        builder = QuadBuilder(event.graph, self.minter, self.content, self.masking)
        if not event.content_apart:  # content kept in the event's own graph (the access log)
            builder.content_graph = builder.graph
        event.emit(builder)
        return builder.quads

    def record(
        self, event: Event, *, remove: Iterable[Quad] = (), also: Sequence[Event] = ()
    ) -> None:
        """Write ``event`` atomically, removing ``remove`` in the same transaction.

        ``remove`` is for state the event replaces (the memory revision token).
        ``also`` are events written in the same write, after ``event`` (what a
        capability handler recorded with its invocation, ``trails.kernel.riders``):
        pre-write hooks see the one write, as ``event`` with every quad of it;
        listeners see each event.

        Raises:
            StoreError: the write failed; nothing of the events was written.
        """
        self.record_all([event, *also], remove=remove, hooked=event)

    def record_all(
        self,
        events: Sequence[Event],
        *,
        remove: Iterable[Quad] = (),
        hooked: Event | None = None,
    ) -> None:
        """Write several events that happen together (a policy decision and the call it
        let run, what a handler recorded with its invocation) in one atomic write. The
        pre-write hooks are called once, with ``hooked`` (default: the last event) and the
        quads of all; the listeners hear each event, in order, once the write succeeded.

        Raises:
            StoreError: the write failed; nothing of the events was written.
        """
        if len(events) == 1:
            quads = self.quads(events[0])
        else:  # one write holds each quad once, whichever events share it
            quads = list(dict.fromkeys(q for e in events for q in self.quads(e)))
        if self._written:
            quads = self._unwritten(quads)
        main = hooked if hooked is not None else events[-1]
        if not self._prewrite:
            removed = list(remove)
            self.store.write(quads, remove=removed)
            self._remember(events, quads, removed)
            self._observe(quads, removed)
        else:
            with self._lock:
                removed = list(remove)
                self.removing = removed
                try:
                    add, extra = self._extra(main, quads)
                finally:
                    self.removing = ()
                written, removed = quads + add, [*removed, *extra]
                self.store.write(written, remove=removed)
                self._remember(events, quads, removed)
                for done in self._on_written:
                    done(self, main)
                self._observe(written, removed)
        for event in events:
            for listener in self._listeners:
                try:
                    listener(self, event)
                except Exception:  # a listener must never undo or hide a recorded event
                    log.exception(
                        "recorder listener %r failed on %s", listener, type(event).__name__
                    )

    def write_quads(self, quads: Iterable[Quad], *, remove: Iterable[Quad] = ()) -> None:
        """Write quads that are not an event's (a persisted projection) in one atomic write,
        under the hooks' lock and seen by the write observers.

        Raises:
            StoreError: the write failed; nothing was written.
        """
        added, removed = list(quads), list(remove)
        with self._lock:
            self.store.write(added, remove=removed)
            self._remember((), [], removed)
            self._observe(added, removed)

    def _unwritten(self, quads: list[Quad]) -> list[Quad]:
        """``quads`` less the descriptions this recorder already wrote to the same graph."""
        known = self._written.get
        return [q for q in quads if q not in known(q[3], _NONE)]

    def _remember(self, events: Sequence[Event], quads: list[Quad], removed: list[Quad]) -> None:
        """Note what a successful write added about shared things, and what it removed."""
        minted = self._minted
        with self._lock:
            written = self._written
            for q in removed:
                known = written.get(q[3])
                if known is not None:
                    known.discard(q)
            for q in quads:
                if q[0].startswith(minted):
                    continue
                known = written.get(q[3])
                if known is None:
                    if len(written) >= _WRITTEN_GRAPHS:
                        del written[next(iter(written))]
                    known = written[q[3]] = set()
                if len(known) < _WRITTEN_PER_GRAPH:
                    known.add(q)
            for event in events:
                if isinstance(event, SessionEnded):
                    written.pop(event.graph, None)
                    written.pop(content_graph(event.graph), None)

    def add_write_observer(self, observer: WriteObserver) -> None:
        """Call ``observer(recorder, added, removed)`` after each successful write."""
        self._observers.append(observer)

    def _observe(self, added: Sequence[Quad], removed: Sequence[Quad]) -> None:
        for observer in self._observers:
            observer(self, added, removed)

    def _extra(self, event: Event, quads: list[Quad]) -> tuple[list[Quad], list[Quad]]:
        add: list[Quad] = []
        remove: list[Quad] = []
        for hook in self._prewrite:
            try:
                more, less = hook(self, event, quads)
            except Exception:  # a hook must never cost the event itself
                log.exception("pre-write hook %r failed on %s", hook, type(event).__name__)
                continue
            add.extend(more)
            remove.extend(less)
        return add, remove

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(recorder, event)`` after each successful write."""
        self._listeners.append(listener)

    def add_prewrite(self, hook: PreWriteHook, *, on_written: Listener | None = None) -> None:
        """Call ``hook(recorder, event, quads)`` before each write; the ``(add, remove)``
        it returns is applied in the same atomic write. A hook that raises is logged and
        skipped: the event is still written, without that hook's quads. ``on_written``
        is called, still under the lock, once that write succeeded."""
        self._prewrite.append(hook)
        if on_written is not None:
            self._on_written.append(on_written)

    def locked(self) -> threading.RLock:
        """The lock pre-write hooks and writes run under (for a hook's own writes)."""
        return self._lock


_default: Recorder | None = None


def default_recorder() -> Recorder:
    """The recorder over the process-wide default store."""
    global _default
    store = default_store()
    if _default is None or _default.store is not store:
        _default = Recorder.from_settings(store=store)
    return _default


def reset_default_recorder() -> None:
    global _default
    _default = None
