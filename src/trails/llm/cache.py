"""The request hash, an in-memory response cache, and the store-backed lookup.

``request_hash(model, messages, params)`` is the one key for "the same
request": the sha256 of the canonical JSON (``trails.prov.content``) of::

    {"model": <model id>,
     "messages": [{"role": ..., "content": ..., "cache": true?,
                   "images": [{"media_type": ..., "sha256": ..., "size": ...}]?}, ...],
     "params": {"max_tokens": ..., "temperature": ..., "stop": [...]?, ...}}

``messages`` are ``Message.as_dict()`` (``cache`` appears only when true, and
``images`` only when the message shows the model some: each by its digest, so
two images never share a key, and a text-only request's hash is unchanged);
``params`` holds ``max_tokens`` and ``temperature`` always, ``stop`` only when
non-empty, any extra provider parameters, the offered tools (``tools``, each
``ToolSpec.as_dict()``) when there are any, and the response format
(``response_format``: ``{"name", "schema"}``) of a structured call: whatever
determined the reply. ``request_params_of`` builds them from a ``Request``, for
the envelope and the replay alike. Every completion records it as
``trails:requestHash`` on both the activity and its prompt entity, so the
replay harness and the store lookup find completions by it. Changing this
function changes every recorded hash: treat it as a file format.

``ResponseCache`` is a thread-safe LRU with per-entry TTL. Any other object
with the same four methods (``get(key)``, ``set(key, value)``, ``delete(key)``,
``clear()``; ``stats`` optional), a ``CacheBackend``, can stand in for it: a
shared or persistent backend the application owns. ``cache_backend`` checks
one and refuses anything else with a ``UserError`` rather than ignoring it.
``lookup_recorded`` answers a request from a successful completion already in
the store.
"""

from __future__ import annotations

import json
import threading
import time
import typing
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from trails.errors import UserError
from trails.llm.types import Message, Request, Response, ToolCall
from trails.prov.content import canonical_json, sha256_hex
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions, Store
from trails.store.terms import Literal, Term, to_python

__all__ = [
    "CacheBackend",
    "CacheStats",
    "ResponseCache",
    "StoreCache",
    "cache_backend",
    "lookup_recorded",
    "request_hash",
    "request_params",
    "request_params_of",
]


StoreCache = bool | typing.Literal["shared"]
"""``store_cache=``: off, on for the principal's own completions, or ``"shared"`` (anyone's)."""


def request_params(
    max_tokens: int,
    temperature: float,
    stop: Iterable[str] = (),
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``params`` part of a request hash, in its canonical shape.

    Args:
        max_tokens: the completion token limit.
        temperature: the sampling temperature.
        stop: stop sequences (omitted from the params when empty).
        extra: further provider parameters, included as given.

    Returns:
        The params mapping that ``request_hash`` and the recorded prompt use.
    """
    params: dict[str, Any] = dict(extra or {})
    params["max_tokens"] = int(max_tokens)
    params["temperature"] = float(temperature)
    stops = list(stop)
    if stops:
        params["stop"] = stops
    return params


def request_params_of(request: Request) -> dict[str, Any]:
    """The ``params`` of a request's hash: ``request_params`` plus its tools and response format.

    The one definition of what a recorded completion's parameters are, so a
    replay hashes a request exactly as the envelope did when it was recorded.
    """
    params = request_params(request.max_tokens, request.temperature, request.stop, request.extra)
    if request.tools:  # what the model was offered is part of what determined its reply
        params["tools"] = [t.as_dict() for t in request.tools]
    if request.response_format is not None:  # and so is the form it was asked to answer in
        params["response_format"] = {
            "name": request.response_name,
            "schema": request.response_format,
        }
    return params


def request_hash(
    model: str, messages: Iterable[Message | Mapping[str, Any]], params: Mapping[str, Any]
) -> str:
    """The canonical sha256 hex of a request (see the module docstring for the exact form).

    Args:
        model: the model id.
        messages: ``Message`` objects or their ``as_dict()`` form.
        params: the request parameters (build them with ``request_params``).

    Returns:
        64 lowercase hex characters.
    """
    msgs = [m.as_dict() if isinstance(m, Message) else dict(m) for m in messages]
    return sha256_hex(canonical_json({"model": model, "messages": msgs, "params": dict(params)}))


@dataclass(frozen=True)
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    size: int = 0

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


class ResponseCache:
    """Thread-safe LRU + TTL cache of responses by request hash.

    An answer is kept for the principal who paid for it: the client keys each
    entry by the request hash and the principal, so Bob never gets Alice's answer.
    ``across_principals=True`` shares answers between principals (any backend may
    carry the same attribute); a hit from another principal is recorded with
    ``trails:cacheScope "shared"`` and the completion it came from.

    Args:
        max_size: entries kept; the least recently used goes first.
        ttl_seconds: how long an entry stays valid (None = until evicted).
        clock: monotonic clock (injectable for tests).
        across_principals: share answers between principals (opt-in).

    Raises:
        UserError: ``max_size`` < 1 or a negative TTL.
    """

    def __init__(
        self,
        max_size: int = 1024,
        ttl_seconds: float | None = 300.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        across_principals: bool = False,
    ) -> None:
        if max_size < 1:
            raise UserError(f"max_size must be at least 1, not {max_size}")
        if ttl_seconds is not None and ttl_seconds < 0:
            raise UserError(f"ttl_seconds must be >= 0, not {ttl_seconds}")
        self.max_size = max_size
        self.ttl_seconds = ttl_seconds
        self.across_principals = across_principals
        self._clock = clock
        self._lock = threading.Lock()
        self._data: OrderedDict[str, tuple[float | None, Response]] = OrderedDict()
        self._hits = self._misses = self._evictions = 0

    def get(self, key: str) -> Response | None:
        """The cached response for ``key``, or None (expired entries are dropped)."""
        with self._lock:
            item = self._data.get(key)
            if item is None:
                self._misses += 1
                return None
            expires, response = item
            if expires is not None and self._clock() >= expires:
                del self._data[key]
                self._misses += 1
                return None
            self._data.move_to_end(key)
            self._hits += 1
            return response

    def set(self, key: str, response: Response) -> None:
        """Store ``response`` under ``key``, evicting the least recently used if full."""
        expires = None if self.ttl_seconds is None else self._clock() + self.ttl_seconds
        with self._lock:
            self._data[key] = (expires, response)
            self._data.move_to_end(key)
            while len(self._data) > self.max_size:
                self._data.popitem(last=False)
                self._evictions += 1

    def delete(self, key: str) -> bool:
        with self._lock:
            return self._data.pop(key, None) is not None

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    @property
    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses, self._evictions, len(self._data))


@runtime_checkable
class CacheBackend(Protocol):
    """What the client needs of a response cache: four methods, keyed by request hash.

    ``set`` is called with two arguments (a backend may take an optional TTL
    after them); the value is the recorded ``Response``, which a backend
    storing bytes pickles or serialises itself. ``stats`` is optional.
    """

    def get(self, key: str) -> Any: ...

    def set(self, key: str, value: Any) -> Any: ...

    def delete(self, key: str) -> Any: ...

    def clear(self) -> Any: ...


def cache_backend(cache: object) -> CacheBackend | None:
    """The response cache a client uses: ``True`` for a new ``ResponseCache``, None/False for none.

    Args:
        cache: a ``ResponseCache``, any ``CacheBackend``, ``True``, ``False`` or None.

    Returns:
        The cache to ask and fill, or None.

    Raises:
        UserError: ``cache`` lacks one of ``get``/``set``/``delete``/``clear``
            (a cache is never silently dropped).
    """
    if cache is None or cache is False:
        return None
    if cache is True:
        return ResponseCache()
    missing = [
        m for m in ("get", "set", "delete", "clear") if not callable(getattr(cache, m, None))
    ]
    if missing:
        raise UserError(
            f"response_cache must be a ResponseCache, True, or an object with "
            f"get/set/delete/clear methods; {type(cache).__name__} has no {', '.join(missing)}"
        )
    return cache  # type: ignore[return-value]


_LOOKUP = f"""
SELECT ?a ?hash ?text ?provider ?model ?in ?out ?cr ?cw ?usd ?rid ?ended ?who WHERE {{
  GRAPH ?g {{
    ?a a {T.LLMCompletion.n3()} ;
       {T.requestHash.n3()} ?hash ;
       {T.status.n3()} "ok" ;
       {PROV.endedAtTime.n3()} ?ended .
    ?c {PROV.wasGeneratedBy.n3()} ?a ;
       a {T.Completion.n3()} .
    GRAPH ?cg {{ ?c {PROV.value.n3()} ?text }}
    ?a {PROV.wasAssociatedWith.n3()} ?m .
    ?m a {T.Model.n3()} ; {T.provider.n3()} ?provider ; {T.modelId.n3()} ?model .
    ?a {PROV.wasAssociatedWith.n3()} ?p .
    ?p {T.principalId.n3()} ?who .
    OPTIONAL {{ ?a {T.inputTokens.n3()} ?in }}
    OPTIONAL {{ ?a {T.outputTokens.n3()} ?out }}
    OPTIONAL {{ ?a {T.cacheReadTokens.n3()} ?cr }}
    OPTIONAL {{ ?a {T.cacheWriteTokens.n3()} ?cw }}
    OPTIONAL {{ ?a {T.costUSD.n3()} ?usd }}
    OPTIONAL {{ ?a {T.requestId.n3()} ?rid }}
  }}
}} ORDER BY DESC(?ended) LIMIT 1
"""

_CALLS = f"""
SELECT ?a ?r ?value WHERE {{
  GRAPH ?g {{
    ?r a {T.ToolCallRequest.n3()} ; {PROV.wasGeneratedBy.n3()} ?a .
  }}
  GRAPH ?cg {{ ?r {PROV.value.n3()} ?value }}
}}
"""


def _recorded_calls(store: Store, activity: Term) -> tuple[ToolCall, ...]:
    """The tool calls a recorded completion asked for, in the order asked."""
    result = store.query(_CALLS, {"a": activity})
    if not isinstance(result, Solutions):
        return ()
    calls = []
    for row in result:
        data = json.loads(str(to_python(row["value"])))
        index = str(row["r"]).rsplit(":toolcall", 1)[-1]
        call = ToolCall(str(data["id"]), str(data["name"]), dict(data.get("arguments") or {}))
        calls.append((int(index) if index.isdigit() else 0, call))
    return tuple(c for _, c in sorted(calls, key=lambda pair: pair[0]))


def lookup_recorded(
    store: Store, hash_hex: str, *, principal: str | None = None
) -> Response | None:
    """A response rebuilt from the newest successful completion recorded with this request hash.

    Completions recorded with ``record_content = "hash"`` hold no text and are
    never used. The response comes back with ``cache_hit=True``, the recorded
    completion's ``usd`` (what that answer cost when it was paid for), its
    ``activity_iri`` and the principal it was paid for.

    Args:
        store: the store to search (every session graph).
        hash_hex: a ``request_hash`` value.
        principal: only completions made for this principal (None: anyone's).

    Returns:
        The rebuilt response, or None when nothing matches.
    """
    bindings: dict[str, Term] = {"hash": Literal(hash_hex)}
    if principal is not None:
        bindings["who"] = Literal(principal)
    result = store.query(_LOOKUP, bindings)
    if not isinstance(result, Solutions):
        return None
    for row in result:

        def get(name: str, row: dict[str, Any] = row) -> Any:
            term = row.get(name)
            return None if term is None else to_python(term)

        return Response(
            text=str(get("text")),
            model=str(get("model")),
            input_tokens=int(get("in") or 0),
            output_tokens=int(get("out") or 0),
            cache_read_tokens=int(get("cr") or 0),
            cache_write_tokens=int(get("cw") or 0),
            usd=None if get("usd") is None else float(get("usd")),
            cache_hit=True,
            request_id=get("rid"),
            provider=str(get("provider")),
            tool_calls=_recorded_calls(store, row["a"]),
            activity_iri=str(row["a"]),
            principal=str(get("who")),
        )
    return None
