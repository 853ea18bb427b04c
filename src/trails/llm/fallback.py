"""Provider fallback with a circuit breaker.

``FallbackAdapter`` holds adapters in priority order, each with its own retry
policy. A call goes to the first member whose circuit is closed; when it
fails (after its own retries) the next is tried. ``max_failures`` consecutive
failures open a member's circuit for ``cooldown_seconds``; after that it gets
one trial call (half-open): success closes the circuit, failure reopens it.

A bad request (``ModelBadRequestError``) or a refused host is the caller's
problem, not the provider's, so it is raised at once and does not count
against the member. When no member answers, ``ProvidersUnavailable`` names
each member's failure. The response names the member that answered, so the
recorded model agent is the one that actually did the work.

Every member that fails is reported (``trails.llm.failover.report``) to the
call around the chain, which records it as a failed completion and the switch
to the next member as a ``trails:ProviderFallback``; each switch also reaches
observers (a ``fallback`` event) and the ``on_fallback`` callable. A stream
fails over only before its first chunk.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from trails.errors import TrailsError, UserError
from trails.kernel.context import now
from trails.kernel.observe import notify_current
from trails.llm.errors import ModelBadRequestError, ProvidersUnavailable, RealModelsForbidden
from trails.llm.failover import CircuitSkip, Failover, FallbackHook, report
from trails.llm.retry import RetryError, RetryPolicy, call_with_retries
from trails.llm.types import Adapter, Chunk, Request, Response

__all__ = ["CircuitState", "FallbackAdapter"]

_NO_FALLBACK: tuple[type[BaseException], ...] = (ModelBadRequestError, RealModelsForbidden)


@dataclass
class CircuitState:
    """One member's breaker: consecutive failures and when its open circuit may be retried."""

    failures: int = 0
    open_until: float | None = None

    def is_open(self, at: float) -> bool:
        return self.open_until is not None and at < self.open_until


class FallbackAdapter:
    """Adapters tried in order behind per-member circuit breakers.

    Args:
        members: ``(adapter, retry policy)`` pairs, highest priority first.
        max_failures: consecutive failures that open a member's circuit.
        cooldown_seconds: how long an open circuit skips the member.
        clock: monotonic clock (injectable for tests).
        on_fallback: called on each failover, before the next member is tried, with
            ``(failed, error)`` or ``(failed, next, error)`` (``provider:model`` names),
            whichever it takes.

    Raises:
        UserError: no members, ``max_failures`` < 1 or a negative cooldown.
    """

    def __init__(
        self,
        members: Sequence[tuple[Adapter, RetryPolicy]],
        *,
        max_failures: int = 3,
        cooldown_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        on_fallback: Callable[..., object] | None = None,
    ) -> None:
        if not members:
            raise UserError("LLMClient.fallback needs at least one client")
        if max_failures < 1:
            raise UserError(f"max_failures must be at least 1, not {max_failures}")
        if cooldown_seconds < 0:
            raise UserError(f"cooldown_seconds must be >= 0, not {cooldown_seconds}")
        self.members = list(members)
        self.max_failures = max_failures
        self.cooldown_seconds = cooldown_seconds
        self.states = [CircuitState() for _ in self.members]
        self._clock = clock
        self._on_fallback = FallbackHook(on_fallback) if on_fallback is not None else None
        self._lock = threading.Lock()
        primary = self.members[0][0]
        self.provider = primary.provider
        self.model = primary.model
        self.local = all(bool(getattr(a, "local", False)) for a, _ in self.members)
        # images only when every member sends them: a failover never drops them
        self.accepts_images = all(getattr(a, "accepts_images", False) for a, _ in self.members)

    @staticmethod
    def _name(adapter: Adapter) -> str:
        return f"{adapter.provider}:{adapter.model}"

    def _circuits(self) -> tuple[list[int], dict[int, float]]:
        """The members a call may ask, in order, and when each open one's circuit closes."""
        at = self._clock()
        with self._lock:
            opened = {
                i: (s.open_until or at) - at for i, s in enumerate(self.states) if s.is_open(at)
            }
        return [i for i in range(len(self.states)) if i not in opened], opened

    def _skip(self, opened: dict[int, float], after: int, below: int) -> None:
        """Report each member between ``after`` and ``below`` passed over for its open circuit."""
        wall = now()
        nxt = self._name(self.members[below][0]) if below < len(self.members) else None
        for i in sorted(opened):
            if after < i < below:
                adapter = self.members[i][0]
                report(
                    CircuitSkip(
                        provider=adapter.provider,
                        model=adapter.model,
                        next=nxt,
                        open_until=wall + timedelta(seconds=max(0.0, opened[i])),
                        at=wall,
                    )
                )

    def _record(self, index: int, ok: bool) -> None:
        with self._lock:
            state = self.states[index]
            if ok:
                state.failures, state.open_until = 0, None
            else:
                state.failures += 1
                if state.failures >= self.max_failures:
                    state.open_until = self._clock() + self.cooldown_seconds

    def _failed(
        self,
        index: int,
        following: list[int],
        error: BaseException,
        retries: int,
        started: tuple[datetime, float],
    ) -> None:
        """A member gave up: count it, then tell the call, observers and ``on_fallback``."""
        self._record(index, ok=False)
        adapter = self.members[index][0]
        nxt = self._name(self.members[following[0]][0]) if following else None
        report(
            Failover(
                provider=adapter.provider,
                model=adapter.model,
                next=nxt,
                error=error,
                retries=retries,
                started=started[0],
                ended=now(),
                latency_ms=(time.perf_counter() - started[1]) * 1000.0,
            )
        )
        if nxt is None:
            return
        failed = self._name(adapter)
        notify_current("fallback", failed=failed, next=nxt, error=str(error))
        if self._on_fallback is not None:
            self._on_fallback(failed, nxt, error)

    def _request_for(self, index: int, request: Request) -> Request:
        # The request names the primary's model; each member answers with its own.
        if index == 0:
            return request
        return replace(request, model=self.members[index][0].model)

    def _unavailable(
        self, errors: list[tuple[str, BaseException]], retries: int
    ) -> ProvidersUnavailable:
        if errors:
            detail = "; ".join(f"{name}: {type(e).__name__}: {e}" for name, e in errors)
        else:
            detail = "every circuit is open"
        error = ProvidersUnavailable(f"no provider answered ({detail})", provider=self.provider)
        error.inner_retries = retries  # type: ignore[attr-defined]
        if errors:
            error.__cause__ = errors[-1][1]
        return error

    def complete(self, request: Request) -> Response:
        """The first member's answer that succeeds.

        Raises:
            ModelBadRequestError: the request itself was refused (not retried elsewhere).
            ProvidersUnavailable: every member failed or is open.
        """
        errors: list[tuple[str, BaseException]] = []
        retries = 0
        available, opened = self._circuits()
        for pos, i in enumerate(available):
            self._skip(opened, available[pos - 1] if pos else -1, i)
            adapter, policy = self.members[i]
            req = self._request_for(i, request)

            def attempt(a: Adapter = adapter, r: Request = req) -> Response:
                return a.complete(r)

            started = (now(), time.perf_counter())
            try:
                response, used = call_with_retries(attempt, policy)
            except RetryError as err:
                retries += err.retries + 1
                if isinstance(err.error, _NO_FALLBACK) or not isinstance(err.error, TrailsError):
                    raise err.error from err.error.__cause__
                errors.append((self._name(adapter), err.error))
                self._failed(i, available[pos + 1 :], err.error, err.retries, started)
                continue
            self._record(i, ok=True)
            return replace(
                response,
                provider=response.provider or adapter.provider,
                model=response.model or adapter.model,
                retries=retries + used,
            )
        self._skip(opened, available[-1] if available else -1, len(self.members))
        raise self._unavailable(errors, retries)

    def stream(self, request: Request) -> Iterator[Chunk | Response]:
        """Stream from the first member that starts answering; later failures are not retried."""
        errors: list[tuple[str, BaseException]] = []
        retries = 0
        available, opened = self._circuits()
        for pos, i in enumerate(available):
            self._skip(opened, available[pos - 1] if pos else -1, i)
            adapter, policy = self.members[i]
            req = self._request_for(i, request)

            def open_stream(
                a: Adapter = adapter, r: Request = req
            ) -> tuple[Iterator[Chunk | Response], Chunk | Response | None]:
                it = iter(a.stream(r))
                return it, next(it, None)

            started = (now(), time.perf_counter())
            try:
                (it, first), used = call_with_retries(open_stream, policy)
            except RetryError as err:
                retries += err.retries + 1
                if isinstance(err.error, _NO_FALLBACK) or not isinstance(err.error, TrailsError):
                    raise err.error from err.error.__cause__
                errors.append((self._name(adapter), err.error))
                self._failed(i, available[pos + 1 :], err.error, err.retries, started)
                continue
            self._record(i, ok=True)
            item = first
            while item is not None:
                if isinstance(item, Response):
                    yield replace(
                        item,
                        provider=item.provider or adapter.provider,
                        model=item.model or adapter.model,
                        retries=retries + used,
                    )
                    return
                yield item
                item = next(it, None)
            return
        self._skip(opened, available[-1] if available else -1, len(self.members))
        raise self._unavailable(errors, retries)
