"""Retries for model calls: exponential backoff with jitter, honouring ``retry-after``.

Only the failures ``trails.llm.errors.is_retryable`` names are retried (429,
5xx, timeouts, connection errors); any other 4xx, a malformed body or a
refused host fails at once. Provider SDKs keep their own retries off, so the
count recorded on a completion (``trails:retries``) is the real number of
extra attempts. ``sleep`` and ``random`` are injectable so tests run in
milliseconds and deterministically. ``acall_with_retries`` is the same loop
for asyncio: it waits with ``asyncio.sleep`` (an injected ``sleep`` is called
instead, as in the sync loop), so a waiting task never blocks the others.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from trails.errors import UserError
from trails.llm.errors import is_retryable

__all__ = ["RetryError", "RetryPolicy", "acall_with_retries", "call_with_retries"]

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry.

    Attributes:
        max_retries: extra attempts after the first (0 = no retry).
        base_delay: seconds before the first retry; doubles each time.
        max_delay: cap on any single delay, including a provider's ``retry-after``.
        jitter: fraction of the delay drawn at random (0 = none, 1 = "full jitter").
        sleep: how to wait (``time.sleep``; tests pass a recorder).
        rand: a ``random.Random`` for the jitter (seed it for determinism).
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 30.0
    jitter: float = 0.25
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)
    rand: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise UserError(f"max_retries must be >= 0, not {self.max_retries}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise UserError("retry delays must be >= 0")
        if not 0.0 <= self.jitter <= 1.0:
            raise UserError(f"jitter must be between 0 and 1, not {self.jitter}")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based).

        Args:
            attempt: which retry this is (1 for the first).
            retry_after: the delay the provider asked for, if any; it wins over
                the computed backoff when longer (capped by ``max_delay``).

        Returns:
            The delay in seconds.
        """
        backoff = min(self.base_delay * (2.0 ** (attempt - 1)), self.max_delay)
        if self.jitter:
            backoff = backoff * (1.0 - self.jitter) + backoff * self.jitter * self.rand.random()
        if retry_after is not None:
            backoff = max(backoff, min(retry_after, self.max_delay))
        return backoff

    def wait(self, error: BaseException, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` after ``error`` (``delay`` with the
        provider's ``retry-after``); a policy that reads the error overrides this."""
        return self.delay(attempt, getattr(error, "retry_after", None))


class RetryError(Exception):
    """Internal carrier: the final error plus how many retries were made before it."""

    def __init__(self, error: BaseException, retries: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.retries = retries


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    on_retry: Callable[[int, BaseException, float], None] | None = None,
) -> tuple[T, int]:
    """Call ``fn`` until it succeeds, fails for good, or retries run out.

    Args:
        fn: the attempt (an adapter call).
        policy: the retry policy.
        on_retry: told ``(attempt, error, delay_s)`` before each wait.

    Returns:
        ``(result, retries)``: what ``fn`` returned and how many retries it took.

    Raises:
        RetryError: the last error (on ``.error``) with the retry count; the
            client unwraps it, records the failure and raises the error.
    """
    retries = 0
    while True:
        try:
            return fn(), retries
        except Exception as exc:
            delay = _next_delay(exc, retries, policy)
            retries += 1
            if on_retry is not None:
                on_retry(retries, exc, delay)
            policy.sleep(delay)


def _next_delay(exc: Exception, retries: int, policy: RetryPolicy) -> float:
    """The delay before retry ``retries + 1``, or ``RetryError`` when there is none."""
    if not is_retryable(exc) or retries >= policy.max_retries:
        raise RetryError(exc, retries) from exc
    return policy.wait(exc, retries + 1)


async def acall_with_retries(
    fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    on_retry: Callable[[int, BaseException, float], None] | None = None,
) -> tuple[T, int]:
    """``call_with_retries`` for an async attempt (``on_retry`` as there).

    Raises:
        RetryError: as ``call_with_retries``.
    """
    retries = 0
    while True:
        try:
            return await fn(), retries
        except Exception as exc:
            delay = _next_delay(exc, retries, policy)
            retries += 1
            if on_retry is not None:
                on_retry(retries, exc, delay)
            if policy.sleep is time.sleep:
                await asyncio.sleep(delay)
            else:
                policy.sleep(delay)
