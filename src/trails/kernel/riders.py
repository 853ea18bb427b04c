"""Events a capability handler asks to have written with its own invocation.

A handler that records an event of its own (a memory recall, say) would
otherwise cost the store a second write besides the invocation's. ``invoke``
gives each handler's context a ``Riders`` collection: the handler ``ride``s
its event, and ``invoke`` writes it in the same atomic write as the finished
invocation, whatever the outcome. So the invocation and what it did are whole
or absent together, and the call costs one write.

Once the invocation is written the collection is closed: ``ride`` then
returns False (a context kept past its call, a context that never ran under
``invoke``) and the caller writes its event itself.
"""

from __future__ import annotations

import threading

from trails.prov.events import Event

__all__ = ["Riders", "ride"]


class Riders:
    """The events riding on one invocation's write (thread-safe)."""

    def __init__(self, invocation: str) -> None:
        self.invocation = str(invocation)
        self._events: list[Event] = []
        self._open = True
        self._lock = threading.Lock()

    def add(self, event: Event) -> bool:
        """Queue ``event`` for the invocation's write; False once that write was made."""
        with self._lock:
            if self._open:
                self._events.append(event)
            return self._open

    def close(self) -> tuple[Event, ...]:
        """Stop taking events and hand over the queued ones (for the invocation's write)."""
        with self._lock:
            self._open = False
            events, self._events = tuple(self._events), []
            return events


def ride(riders: Riders | None, parent: str | None, event: Event) -> bool:
    """Queue ``event`` for the write of the invocation ``parent``, if it is still running.

    Returns:
        True when the event will be written with the invocation; False when the
        caller must write it itself (no invocation, another one, or already written).
    """
    if riders is None or parent is None or riders.invocation != str(parent):
        return False
    return riders.add(event)
