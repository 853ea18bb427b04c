"""One ``ModelAPIError`` subclass per way a model call can fail.

Adapters translate whatever their transport raises (the anthropic SDK's
exceptions, httpx errors, HTTP statuses, unparseable bodies) into exactly one
of these, at the boundary, with ``raise ... from exc``. The retry loop and the
fallback chain decide from the class alone, never from message text::

    ModelAPIError (trails.errors)
    ├── ModelAuthenticationError   401 / 403, or no API key       never retried
    ├── ModelBadRequestError       other 4xx: the request is wrong never retried
    ├── ModelRateLimitError        429                             retried, honours retry-after
    ├── ModelServerError           5xx (incl. 529 overloaded)      retried
    ├── ModelTimeoutError          the call did not finish in time retried
    ├── ModelConnectionError       could not reach the provider    retried
    ├── MalformedResponseError     a 2xx body that does not parse  never retried
    │   ├── IncompleteStreamError  a stream cut before its end-of-message event
    │   └── StructuredOutputError  no answer matched the response_format, retries spent
    ├── RealModelsForbidden        TRAILS_FORBID_REAL_MODELS=1 and a non-loopback host
    ├── MockScriptExhausted        a scripted mock ran out of answers
    └── ProvidersUnavailable       every client of a fallback chain failed or is open

Every error carries ``provider``, ``status`` (HTTP status when there was one)
and ``request_id`` (the provider's id for the request, when it sent one).
"""

from __future__ import annotations

from trails.errors import ModelAPIError

__all__ = [
    "IncompleteStreamError",
    "MalformedResponseError",
    "MockScriptExhausted",
    "ModelAPIError",
    "ModelAuthenticationError",
    "ModelBadRequestError",
    "ModelConnectionError",
    "ModelRateLimitError",
    "ModelServerError",
    "ModelTimeoutError",
    "ProvidersUnavailable",
    "RealModelsForbidden",
    "StructuredOutputError",
    "error_for_status",
    "is_retryable",
    "parse_retry_after",
]


class ModelAuthenticationError(ModelAPIError):
    """The provider refused the credentials (401 / 403), or none were given."""


class ModelBadRequestError(ModelAPIError):
    """The provider rejected the request itself (a 4xx other than 401/403/429)."""


class ModelRateLimitError(ModelAPIError):
    """Too many requests (429). ``retry_after`` is the delay the provider asked for, in seconds."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = 429,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status, request_id=request_id)
        self.retry_after = retry_after


class ModelServerError(ModelAPIError):
    """The provider failed (5xx, including Anthropic's 529 "overloaded")."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status, request_id=request_id)
        self.retry_after = retry_after


class ModelTimeoutError(ModelAPIError):
    """The call did not finish within the adapter's timeout."""


class ModelConnectionError(ModelAPIError):
    """The provider could not be reached (refused, reset, DNS ...)."""


class MalformedResponseError(ModelAPIError):
    """A successful status with a body that is not the provider's wire format."""


class IncompleteStreamError(MalformedResponseError):
    """A stream ended before the provider's end-of-message event: a failed completion.

    ``received`` is the text that arrived before the cut; the client records it
    as the failed completion's content (status ``error``).
    """

    def __init__(
        self,
        message: str,
        *,
        received: str = "",
        provider: str = "",
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        self.received = received
        super().__init__(message, provider=provider, status=status, request_id=request_id)


class StructuredOutputError(MalformedResponseError):
    """No attempt produced an answer matching the requested ``response_format``.

    ``errors`` holds each attempt's validation error, in order; ``text`` is
    the last answer. Every attempt was recorded as a completion with status
    ``invalid``; the last one's error message is this error's.
    """

    def __init__(
        self,
        message: str,
        *,
        errors: list[str] | None = None,
        text: str = "",
        provider: str = "",
        request_id: str | None = None,
    ) -> None:
        self.errors = list(errors or [])
        self.text = text
        super().__init__(message, provider=provider, request_id=request_id)


class RealModelsForbidden(ModelAPIError):
    """``TRAILS_FORBID_REAL_MODELS`` is set and the adapter points at a non-loopback host."""


class MockScriptExhausted(ModelAPIError):
    """A mock built from a list of answers was asked once more than it had answers."""


class ProvidersUnavailable(ModelAPIError):
    """A fallback chain found no client that answered (each failed, or its circuit is open)."""


_RETRYABLE: tuple[type[ModelAPIError], ...] = (
    ModelRateLimitError,
    ModelServerError,
    ModelTimeoutError,
    ModelConnectionError,
)


def is_retryable(error: BaseException) -> bool:
    """True for the failures worth another attempt: 429, 5xx, timeouts, connection errors.

    Args:
        error: what the adapter raised.

    Returns:
        Whether the retry loop may try again.
    """
    return isinstance(error, _RETRYABLE)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``retry-after`` header (delta-seconds form); None when absent or a date."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return max(seconds, 0.0)


def error_for_status(
    status: int,
    message: str,
    *,
    provider: str,
    request_id: str | None = None,
    retry_after: str | None = None,
) -> ModelAPIError:
    """The error for an HTTP error status.

    Args:
        status: the HTTP status (4xx or 5xx).
        message: what the provider said, for the error text.
        provider: the adapter's provider name.
        request_id: the provider's request id, when it sent one.
        retry_after: the raw ``retry-after`` header, when present.

    Returns:
        The matching ``ModelAPIError`` subclass (not raised).
    """
    text = f"{provider} returned HTTP {status}: {message}".rstrip(": ")
    if status in (401, 403):
        return ModelAuthenticationError(
            text, provider=provider, status=status, request_id=request_id
        )
    if status == 429:
        return ModelRateLimitError(
            text,
            provider=provider,
            status=status,
            request_id=request_id,
            retry_after=parse_retry_after(retry_after),
        )
    if status >= 500:
        return ModelServerError(
            text,
            provider=provider,
            status=status,
            request_id=request_id,
            retry_after=parse_retry_after(retry_after),
        )
    return ModelBadRequestError(text, provider=provider, status=status, request_id=request_id)
