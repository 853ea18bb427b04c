"""JSON over HTTP for the httpx adapters (Ollama, OpenAI-compatible), errors translated.

One place turns httpx's exceptions and HTTP error statuses into the
``trails.llm.errors`` classes, so the adapters only parse their bodies. The
loopback guard runs before every request. The same object speaks sync
(``post``, ``stream_lines``: an ``httpx.Client``) and asyncio (``apost``,
``astream_lines``: an ``httpx.AsyncClient`` per running event loop, since an
async client's connections belong to the loop that opened them); both share
the URL, headers, error translation and body parsing.

The async client's requests go through ``_Lanes``: one-connection httpx
pools, a request to an idle one (a new one while all are busy, up to
``max_connections``). httpcore's pool does work for every connection it holds
on every request it starts and ends (a keep-alive expiry check and a socket
readability probe per idle connection, and a count of idle connections for
each), so one pool of 16 keep-alive connections costs a concurrent batch about
as much CPU as the rest of the HTTP client together; a lane holds one. When
the environment names a proxy for the URL, the async client keeps httpx's own
transports (which honour it), as the sync client does.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
import urllib.request
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from trails.llm._net import check_host
from trails.llm.errors import (
    MalformedResponseError,
    ModelAPIError,
    ModelConnectionError,
    ModelTimeoutError,
    error_for_status,
)

__all__ = ["JsonHttp"]

_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-amzn-requestid")


def _request_id(response: httpx.Response) -> str | None:
    for name in _REQUEST_ID_HEADERS:
        value = response.headers.get(name)
        if value:
            return str(value)
    return None


def _error_text(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:500]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err)
        return str(err)
    return str(data)[:500]


def _env_proxied(url: str) -> bool:
    """Whether ``HTTP(S)_PROXY`` / ``ALL_PROXY`` (less ``NO_PROXY``) send ``url`` via a proxy."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(parts.netloc)


class _Released(httpx.AsyncByteStream):
    """A response body that frees its lane when closed (the connection is then idle)."""

    def __init__(self, stream: httpx.AsyncByteStream, done: Callable[[], None]) -> None:
        self._stream = stream
        self._done: Callable[[], None] | None = done

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            done, self._done = self._done, None
            if done is not None:
                done()


class _Lanes(httpx.AsyncBaseTransport):
    """httpx transports of one keep-alive connection each; a request takes an idle one.

    Args:
        max_lanes: at most this many connections (requests beyond queue on
            the least busy lane).
    """

    def __init__(self, max_lanes: int = 100) -> None:
        self._max = max_lanes
        self._ssl: ssl.SSLContext | None = None
        self._lanes: list[httpx.AsyncHTTPTransport] = []
        self._busy: list[int] = []

    def _lane(self) -> int:
        for i, busy in enumerate(self._busy):
            if not busy:
                return i
        if len(self._lanes) < self._max:
            if self._ssl is None:  # one context for all lanes: loading the CAs is slow
                self._ssl = httpx.create_ssl_context()
            limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
            self._lanes.append(httpx.AsyncHTTPTransport(verify=self._ssl, limits=limits))
            self._busy.append(0)
            return len(self._lanes) - 1
        return min(range(len(self._busy)), key=self._busy.__getitem__)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        i = self._lane()
        self._busy[i] += 1

        def done() -> None:
            self._busy[i] -= 1

        try:
            response = await self._lanes[i].handle_async_request(request)
        except BaseException:
            done()
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_Released(response.stream, done),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        for lane in self._lanes:
            await lane.aclose()


class JsonHttp:
    """POST JSON to one base URL; answers parsed, failures translated.

    Args:
        provider: the provider name for errors.
        base_url: the API root.
        timeout: seconds per request (connect, read, write, pool).
        headers: sent with every request.
    """

    def __init__(
        self,
        provider: str,
        base_url: str,
        timeout: float,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._headers = dict(headers or {})
        self._client = httpx.Client(timeout=timeout, headers=self._headers)
        self._aclients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        self._aclients = weakref.WeakKeyDictionary()
        self._alock = threading.Lock()

    def _aclient(self) -> httpx.AsyncClient:
        """The async client of the running event loop (made on first use in that loop)."""
        loop = asyncio.get_running_loop()
        with self._alock:
            client = self._aclients.get(loop)
            if client is None:
                # an environment proxy for this URL: httpx's own transports (a custom
                # transport turns httpx's environment proxies off)
                lanes = None if _env_proxied(self.base_url) else _Lanes()
                client = httpx.AsyncClient(
                    timeout=self.timeout, headers=self._headers, transport=lanes
                )
                self._aclients[loop] = client
            return client

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    def _translate(self, exc: httpx.HTTPError, url: str) -> ModelAPIError:
        if isinstance(exc, httpx.TimeoutException):
            return ModelTimeoutError(
                f"{self.provider}: {url} did not answer within {self.timeout} s",
                provider=self.provider,
            )
        if isinstance(exc, httpx.TransportError):
            return ModelConnectionError(
                f"{self.provider}: cannot reach {url}: {type(exc).__name__}: {exc}",
                provider=self.provider,
            )
        return ModelAPIError(f"{self.provider}: {url}: {exc}", provider=self.provider)

    def _check(self, response: httpx.Response) -> None:
        if response.status_code >= 400:
            response.read()
            raise self._status_error(response)

    async def _acheck(self, response: httpx.Response) -> None:
        if response.status_code >= 400:
            await response.aread()
            raise self._status_error(response)

    def _status_error(self, response: httpx.Response) -> ModelAPIError:
        return error_for_status(
            response.status_code,
            _error_text(response),
            provider=self.provider,
            request_id=_request_id(response),
            retry_after=response.headers.get("retry-after"),
        )

    def _parsed(self, response: httpx.Response, url: str) -> tuple[Any, str | None]:
        request_id = _request_id(response)
        try:
            return response.json(), request_id
        except ValueError as exc:
            raise MalformedResponseError(
                f"{self.provider}: {url} answered {response.status_code} with a body that is "
                f"not JSON: {response.text[:200]!r}",
                provider=self.provider,
                status=response.status_code,
                request_id=request_id,
            ) from exc

    def post(self, path: str, body: dict[str, Any]) -> tuple[Any, str | None]:
        """POST ``body`` and parse the JSON answer.

        Args:
            path: appended to the base URL.
            body: the JSON request body.

        Returns:
            ``(parsed JSON, request id or None)``.

        Raises:
            ModelAPIError: a subclass per failure kind.
        """
        url = self.url(path)
        check_host(url, self.provider)
        try:
            response = self._client.post(url, json=body)
        except httpx.HTTPError as exc:
            raise self._translate(exc, url) from exc
        self._check(response)
        return self._parsed(response, url)

    async def apost(self, path: str, body: dict[str, Any]) -> tuple[Any, str | None]:
        """``post`` over the event loop's async client.

        Raises:
            ModelAPIError: a subclass per failure kind.
        """
        url = self.url(path)
        check_host(url, self.provider)
        try:
            response = await self._aclient().post(url, json=body)
        except httpx.HTTPError as exc:
            raise self._translate(exc, url) from exc
        await self._acheck(response)
        return self._parsed(response, url)

    def stream_lines(
        self, path: str, body: dict[str, Any]
    ) -> Iterator[str | dict[str, str | None]]:
        """POST ``body`` and yield the answer's non-empty lines as they arrive.

        The first item is ``{"request_id": ...}``; the rest are text lines.

        Raises:
            ModelAPIError: a subclass per failure kind, before or during the stream.
        """
        url = self.url(path)
        check_host(url, self.provider)
        try:
            with self._client.stream("POST", url, json=body) as response:
                self._check(response)
                yield {"request_id": _request_id(response)}
                for line in response.iter_lines():
                    if line.strip():
                        yield line
        except httpx.HTTPError as exc:
            raise self._translate(exc, url) from exc

    async def astream_lines(
        self, path: str, body: dict[str, Any]
    ) -> AsyncGenerator[str | dict[str, str | None], None]:
        """``stream_lines`` over the event loop's async client.

        Raises:
            ModelAPIError: a subclass per failure kind, before or during the stream.
        """
        url = self.url(path)
        check_host(url, self.provider)
        try:
            async with self._aclient().stream("POST", url, json=body) as response:
                await self._acheck(response)
                yield {"request_id": _request_id(response)}
                async for line in response.aiter_lines():
                    if line.strip():
                        yield line
        except httpx.HTTPError as exc:
            raise self._translate(exc, url) from exc

    def close(self) -> None:
        self._client.close()


def loads(line: str, provider: str, what: str) -> Any:
    """Parse one streamed JSON line or event, as a ``MalformedResponseError`` when it is not JSON."""
    try:
        return json.loads(line)
    except ValueError as exc:
        raise MalformedResponseError(
            f"{provider}: {what} is not JSON: {line[:200]!r}", provider=provider
        ) from exc
