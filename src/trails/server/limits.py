"""The endpoint's limits on abusive clients: failed authentications throttled per client
and per presented token, and request bodies that must arrive in time.

Failed authentications are counted per client and per token, so guessing tokens is slow
and cheap to refuse, while a user holding a right token is never shut out by someone
else's guesses.
Each request with no valid bearer token (or a console login with a wrong one) is a
failure of the client it came from and, when it presented a token, of that token (its
SHA-256, never the token). The client is the address the connection came from, or the
one a trusted reverse proxy reports for it (``[serve] forwarded_allow_ips``: behind a
proxy every user would otherwise share its address). Once a client or a token has
failed ``failures`` times within ``window`` seconds, its wrong tokens are answered 429
with ``Retry-After`` (the seconds until its oldest counted failure leaves the window),
and only the first of them is written to the access log: a client guessing thousands of
tokens costs the log a few entries, not one per guess. A right token gets in whatever
the count (tokens are long random secrets, beyond guessing; the count keeps the log and
the server from paying for the guesses). The table keeps at most ``clients`` keys (the
least recent go first), so a flood of addresses or tokens cannot grow it without bound.

A request body (a SPARQL query, a batch of spans) must arrive whole within
``BODY_SECONDS``: a client trickling it byte by byte is answered 408 and its connection
freed, instead of holding it for as long as it likes. The request head before it has a
time limit of its own, in the HTTP protocol the server runs (``heads``).
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

__all__ = ["BODY_SECONDS", "FailureThrottle", "Throttled", "failure_keys"]

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


def failure_keys(client: str, token: str | None) -> tuple[str, ...]:
    """What a failed authentication counts against: the client, and the token presented.

    Args:
        client: the client's address (as the trusted proxy reports it, behind one).
        token: the token presented (a bearer token, a login form's), None or empty: none.

    Returns:
        ``("client:ADDRESS",)``, with ``"token:SHA256"`` after it when a token was presented.
    """
    keys: tuple[str, ...] = (f"client:{client}",)
    if token:
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        keys += (f"token:{digest}",)
    return keys


class FailureThrottle:
    """Counts failed authentications per key (a client, a presented token).

    Args:
        failures: failures allowed within ``window`` before requests are refused.
        window: seconds a failure counts for.
        clients: keys remembered at most.
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

    def check(self, *keys: str) -> None:
        """Raise ``Throttled`` when any of ``keys`` is over its failures in the window.

        Call it for a request whose token did not authenticate, before counting it: a
        right token is let in without asking.
        """
        with self._lock:
            now = self.clock()
            over: list[tuple[int, bool]] = []
            for key in keys:
                times = self._seen.get(key)
                if times is None:
                    continue
                while times and now - times[0] >= self.window:
                    times.popleft()
                if len(times) < self.failures:
                    self._blocked.discard(key)
                    continue
                first = key not in self._blocked
                self._blocked.add(key)
                over.append((max(1, math.ceil(self.window - (now - times[0]))), first))
            if over:
                retry = max(seconds for seconds, _ in over)
                raise Throttled(retry, first=all(first for _, first in over))

    def failed(self, *keys: str) -> None:
        """Count a failed authentication against each of ``keys``."""
        with self._lock:
            at = self.clock()
            for key in keys:
                times = self._seen.pop(key, None) or deque(maxlen=self.failures)
                times.append(at)
                self._seen[key] = times  # the most recent last
            while len(self._seen) > self.clients:
                gone, _ = self._seen.popitem(last=False)
                self._blocked.discard(gone)
