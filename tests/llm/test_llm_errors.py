"""Every failure maps to one error class, and only the transient ones are retried."""

from __future__ import annotations

import anthropic
import httpx2
import pytest

from trails.errors import ModelAPIError, RunError
from trails.llm.anthropic import AnthropicAdapter
from trails.llm.errors import (
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelRateLimitError,
    ModelServerError,
    ModelTimeoutError,
    error_for_status,
    is_retryable,
    parse_retry_after,
)


@pytest.mark.parametrize("status", range(400, 600))
def test_every_error_status_maps(status: int) -> None:
    error = error_for_status(status, "msg", provider="p", request_id="r", retry_after="3")
    assert isinstance(error, ModelAPIError) and isinstance(error, RunError)
    assert (error.status, error.request_id, error.provider) == (status, "r", "p")
    expected = (
        ModelAuthenticationError
        if status in (401, 403)
        else ModelRateLimitError
        if status == 429
        else ModelServerError
        if status >= 500
        else ModelBadRequestError
    )
    assert type(error) is expected
    assert is_retryable(error) == (status == 429 or status >= 500)


def test_retry_after_parsing() -> None:
    assert parse_retry_after("2.5") == 2.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") is None
    assert parse_retry_after("-4") == 0.0


def _status_error(cls: type[anthropic.APIStatusError], status: int) -> anthropic.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    response = httpx2.Response(status, request=request, headers={"request-id": "req_x"})
    return cls("boom", response=response, body=None)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            anthropic.APITimeoutError(request=httpx2.Request("POST", "http://127.0.0.1")),
            ModelTimeoutError,
        ),
        (
            anthropic.APIConnectionError(request=httpx2.Request("POST", "http://127.0.0.1")),
            ModelConnectionError,
        ),
        (_status_error(anthropic.AuthenticationError, 401), ModelAuthenticationError),
        (_status_error(anthropic.PermissionDeniedError, 403), ModelAuthenticationError),
        (_status_error(anthropic.RateLimitError, 429), ModelRateLimitError),
        (_status_error(anthropic.BadRequestError, 400), ModelBadRequestError),
        (_status_error(anthropic.NotFoundError, 404), ModelBadRequestError),
        (_status_error(anthropic.InternalServerError, 500), ModelServerError),
        (_status_error(anthropic.APIStatusError, 529), ModelServerError),
    ],
)
def test_sdk_exceptions_are_translated(exc: Exception, expected: type[ModelAPIError]) -> None:
    translated = AnthropicAdapter("m", api_key="k", base_url="http://127.0.0.1:1")._translate(exc)
    assert type(translated) is expected and translated.provider == "anthropic"
    if isinstance(exc, anthropic.APIStatusError):
        assert translated.request_id == "req_x"
