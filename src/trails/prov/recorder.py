"""The recorder: one event in, one atomic write of its quads out.

It owns the IRI minter and the content policy (record values, or hashes
only), so the rest of trails only builds events. Listeners run after a
successful write (the audit room seals a session graph when it ends).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from trails.config import Settings, load_settings
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.store import Store, default_store
from trails.store.terms import Quad

__all__ = ["Recorder", "default_recorder", "reset_default_recorder"]

log = logging.getLogger(__name__)

Listener = Callable[["Recorder", Event], None]


class Recorder:
    """Writes events to a store.

    Args:
        store: where to write.
        base_iri: base under which instance IRIs are minted.
        content: ``"full"`` records values, ``"hash"`` records sha256 only.
    """

    def __init__(
        self, store: Store, *, base_iri: str = "urn:trails:", content: str = "full"
    ) -> None:
        if content not in ("full", "hash"):
            raise ValueError(f"content must be 'full' or 'hash', not {content!r}")
        self.store = store
        self.minter = Minter(base_iri)
        self.content = content
        self._listeners: list[Listener] = []

    @classmethod
    def from_settings(
        cls, settings: Settings | None = None, store: Store | None = None
    ) -> Recorder:
        """A recorder configured by the settings, sealing sessions as they end.

        Unless ``[audit] seal = false``, the audit room's sealer is subscribed: each
        session graph gets a seal in the ledger when it ends (see ``trails.audit.seal``).
        """
        settings = settings or load_settings()
        recorder = cls(
            store if store is not None else default_store(),
            base_iri=settings.base_iri,
            content=settings.record_content,
        )
        if settings.section("audit").get("seal", True):
            from trails.audit.seal import install_sealer  # audit reads; imported on use

            install_sealer(recorder, settings)
        return recorder

    def quads(self, event: Event) -> list[Quad]:
        """The quads ``event`` becomes, without writing them."""
        builder = QuadBuilder(event.graph, self.minter, self.content)
        event.emit(builder)
        return builder.quads

    def record(self, event: Event, *, remove: Iterable[Quad] = ()) -> None:
        """Write ``event`` atomically, removing ``remove`` in the same transaction.

        ``remove`` is for state the event replaces (the memory revision token).

        Raises:
            StoreError: the write failed; nothing of the event was written.
        """
        self.store.write(self.quads(event), remove=remove)
        for listener in self._listeners:
            try:
                listener(self, event)
            except Exception:  # a listener must never undo or hide a recorded event
                log.exception("recorder listener %r failed on %s", listener, type(event).__name__)

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(recorder, event)`` after each successful write."""
        self._listeners.append(listener)


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
