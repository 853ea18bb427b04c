"""The endpoint's limits on abusive clients: failed authentications throttled per client,
and request bodies that must arrive in time.

Failed authentications are counted per client, so guessing tokens is slow and cheap to
refuse.
Each request with no valid bearer token is a failure of the address it came from. Once
an address has failed ``failures`` times within ``window`` seconds, its requests are
answered 429 with ``Retry-After`` (the seconds until its oldest counted failure leaves
the window) before any token is checked, and only the first of them is written to the
access log: a client guessing thousands of tokens costs the log a few entries, not one
per guess. The table keeps at most ``clients`` addresses (the least recent go first),
so a flood of addresses cannot grow it without bound either.

A request body (a SPARQL query, a batch of spans) must arrive whole within
``BODY_SECONDS``: a client trickling it byte by byte is answered 408 and its connection
freed, instead of holding it for as long as it likes. The request head before it has a
time limit of its own, in the HTTP protocol the server runs (``heads``).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

__all__ = ["BODY_SECONDS", "FailureThrottle", "Throttled"]

BODY_SECONDS = 30.0
"""How long a request body may take to arrive, whole (a slow client is cut off: 408)."""


class Throttled(Exception):
    """Too many failed authentications from this client: retry after ``retry_after`` s."""

    def __init__(self, retry_after: int, *, first: bool) -> None:
        super().__init__(
            f"too many failed authentications from this client; retry after {retry_after} s"
        )
        self.retry_after = retry_after
        self.first = first
        """Whether this is the first refusal of the current block (the one that is logged)."""


class FailureThrottle:
    """Counts failed authentications per client address.

    Args:
        failures: failures allowed within ``window`` before requests are refused.
        window: seconds a failure counts for.
        clients: addresses remembered at most.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        failures: int = 20,
        window: float = 60.0,
        *,
        clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failures, self.window, self.clients, self.clock = failures, window, clients, clock
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()
        self._blocked: set[str] = set()
        self._lock = threading.Lock()

    def check(self, client: str) -> None:
        """Raise ``Throttled`` when ``client`` is over its failures in the window."""
        with self._lock:
            now = self.clock()
            times = self._seen.get(client)
            if times is None:
                return
            while times and now - times[0] >= self.window:
                times.popleft()
            if len(times) < self.failures:
                self._blocked.discard(client)
                return
            first = client not in self._blocked
            self._blocked.add(client)
            raise Throttled(max(1, math.ceil(self.window - (now - times[0]))), first=first)

    def failed(self, client: str) -> None:
        """Count a failed authentication of ``client``."""
        with self._lock:
            times = self._seen.pop(client, None) or deque(maxlen=self.failures)
            times.append(self.clock())
            self._seen[client] = times  # the most recent last
            while len(self._seen) > self.clients:
                gone, _ = self._seen.popitem(last=False)
                self._blocked.discard(gone)
