"""``LLMClient``: every model call with its cost envelope, budget check and provenance.

The adapter speaks a provider's wire format; the client owns what trails must
own around every call, once, for every provider:

1. the principal's budget is checked before the call (``BudgetExceeded``);
2. the response cache and, when enabled, the store are asked first;
3. the adapter is called with retries (backoff + jitter, ``retry-after``);
4. a cost envelope tagged ``llm:<model>`` is booked for the principal into
   ``ctx.tracker`` (the module tracker unless the context says otherwise),
   priced from the catalogue (0 for local models, ``None`` when unknown);
5. one ``trails:LLMCompletion`` activity is recorded into the session graph,
   ``prov:wasInformedBy`` the calling activity (``ctx.parent``), success or
   failure, and its IRI comes back on ``Response.activity_iri``.

Cost lives on the completion only. A capability that calls the model while
running under a planner step gets its own completion, linked to the
capability's activity; neither the capability nor the planner step books that
spend again, so the tracker's totals and a SPARQL sum over recorded
completions agree (see ``docs/llm.md``, "Cost accounting").
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from trails.errors import ModelAPIError, TrailsError, UserError
from trails.kernel.context import Context, current_context, now
from trails.kernel.cost import CostTracker, default_tracker
from trails.kernel.observe import notify, observing
from trails.llm.cache import ResponseCache, lookup_recorded, request_hash, request_params
from trails.llm.catalogue import Catalogue, ModelSpec, default_catalogue
from trails.llm.errors import IncompleteStreamError, MalformedResponseError
from trails.llm.mock import MockAdapter, MockScript
from trails.llm.retry import RetryError, RetryPolicy, call_with_retries
from trails.llm.types import Adapter, Chunk, Message, Request, Response
from trails.prov.events import LLMCompleted
from trails.text import check_text, text_problem

__all__ = ["LLMClient", "Prompt", "to_messages"]

Prompt = str | Message | Sequence[Message | Mapping[str, Any]]


def to_messages(messages: Prompt) -> list[Message]:
    """Normalise a prompt: a str becomes one user message; dicts become ``Message``.

    Args:
        messages: a string, a ``Message``, or a sequence of messages or
            ``{"role", "content", "cache"?}`` dicts.

    Returns:
        The messages.

    Raises:
        UserError: empty, or a message with an unknown role or non-str content.
    """
    if isinstance(messages, str):
        return [Message("user", messages)]
    if isinstance(messages, Message):
        return [messages]
    out: list[Message] = []
    for i, m in enumerate(messages):
        if isinstance(m, Mapping):
            try:
                m = Message(m["role"], m["content"], bool(m.get("cache", False)))
            except KeyError as exc:
                raise UserError(f"message #{i} has no {exc.args[0]!r}") from exc
        if not isinstance(m, Message):
            raise UserError(f"message #{i} is a {type(m).__name__}, expected Message or dict")
        if m.role not in ("system", "user", "assistant"):
            raise UserError(
                f"message #{i} has role {m.role!r}; use 'system', 'user' or 'assistant'"
            )
        if not isinstance(m.content, str):
            raise UserError(f"message #{i} content must be str, not {type(m.content).__name__}")
        out.append(m)
    if not out:
        raise UserError("a completion needs at least one message")
    return out


@dataclass
class _Call:
    """What one complete/stream call needs to book and record itself."""

    ctx: Context
    request: Request
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    hash: str
    activity: str
    started: datetime
    t0: float


class LLMClient:
    """A model client: one adapter plus cost, budgets, retries, caching and provenance.

    Build one with a constructor (``mock``, ``anthropic``, ``ollama``,
    ``openai_compatible``, ``fallback``, ``from_spec``) or wrap any ``Adapter``.

    Args:
        adapter: the provider adapter.
        retry: the retry policy (default: 2 retries, 0.5 s base, jitter).
        response_cache: an in-memory cache, ``True`` for a default one, or None.
        store_cache: answer a request from a successful completion already
            recorded in the context's store with the same request hash.
        catalogue: where prices come from (default: the shipped catalogue).
    """

    def __init__(
        self,
        adapter: Adapter,
        *,
        retry: RetryPolicy | None = None,
        response_cache: ResponseCache | bool | None = None,
        store_cache: bool = False,
        catalogue: Catalogue | None = None,
    ) -> None:
        self.adapter = adapter
        self.retry = retry if retry is not None else RetryPolicy()
        if response_cache is True:
            response_cache = ResponseCache()
        self.response_cache: ResponseCache | None = (
            response_cache if isinstance(response_cache, ResponseCache) else None
        )
        self.store_cache = store_cache
        self.catalogue = catalogue if catalogue is not None else default_catalogue()

    # -- constructors ---------------------------------------------------------------

    @classmethod
    def mock(
        cls,
        response: MockScript = "",
        *,
        model: str = "mock",
        retry: RetryPolicy | None = None,
        response_cache: ResponseCache | bool | None = None,
        store_cache: bool = False,
        catalogue: Catalogue | None = None,
    ) -> LLMClient:
        """A scripted model: a fixed answer, ``callable(messages) -> str``, or answers in order.

        Script entries may also be a ``Response`` (exact token counts / ``usd``)
        or an exception instance (that call fails). Requests are kept on
        ``client.requests``. Mock calls cost 0 unless a scripted ``Response``
        says otherwise, and retries default to none with no delay.

        Args:
            response: the script.
            model: the model id to report.
            retry: retry policy (default: no retries).
            response_cache: see ``LLMClient``.
            store_cache: see ``LLMClient``.
            catalogue: see ``LLMClient``.

        Returns:
            The client.
        """
        return cls(
            MockAdapter(response, model=model),
            retry=retry if retry is not None else RetryPolicy(max_retries=0, base_delay=0.0),
            response_cache=response_cache,
            store_cache=store_cache,
            catalogue=catalogue,
        )

    @classmethod
    def anthropic(
        cls,
        model: str = "claude-sonnet-4-5",
        *,
        cache: bool = False,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        response_cache: ResponseCache | bool | None = None,
        store_cache: bool = False,
        catalogue: Catalogue | None = None,
    ) -> LLMClient:
        """Anthropic's Messages API through the official SDK (its own retries off).

        Args:
            model: the model id.
            cache: prompt caching: messages marked ``Message(cache=True)`` get a
                ``cache_control`` breakpoint (the system prompt when none is marked).
            api_key: the key (default: ``ANTHROPIC_API_KEY``).
            base_url: the API root (default: the SDK's, or ``ANTHROPIC_BASE_URL``).
            timeout: seconds per attempt.
            retry: retry policy.
            response_cache: see ``LLMClient``.
            store_cache: see ``LLMClient``.
            catalogue: see ``LLMClient``.

        Returns:
            The client.
        """
        from trails.llm.anthropic import AnthropicAdapter

        adapter = AnthropicAdapter(
            model, cache=cache, api_key=api_key, base_url=base_url, timeout=timeout
        )
        return cls(
            adapter,
            retry=retry,
            response_cache=response_cache,
            store_cache=store_cache,
            catalogue=catalogue,
        )

    @classmethod
    def ollama(
        cls,
        model: str = "qwen3:8b",
        *,
        host: str | None = None,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        response_cache: ResponseCache | bool | None = None,
        store_cache: bool = False,
        catalogue: Catalogue | None = None,
    ) -> LLMClient:
        """A local Ollama server's ``/api/chat`` (free: local models cost 0).

        Args:
            model: the model tag (``qwen3:8b`` ...).
            host: the server root (default: ``OLLAMA_HOST``, as the Ollama CLI reads
                it, else ``http://localhost:11434``).
            timeout: seconds per attempt.
            retry: retry policy.
            response_cache: see ``LLMClient``.
            store_cache: see ``LLMClient``.
            catalogue: see ``LLMClient``.

        Returns:
            The client.
        """
        from trails.llm.ollama import OllamaAdapter

        if host is None:
            host = os.environ.get("OLLAMA_HOST") or "http://localhost:11434"
            if "://" not in host:
                host = f"http://{host}"
        return cls(
            OllamaAdapter(model, host=host, timeout=timeout),
            retry=retry,
            response_cache=response_cache,
            store_cache=store_cache,
            catalogue=catalogue,
        )

    @classmethod
    def openai_compatible(
        cls,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        provider: str | None = None,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        response_cache: ResponseCache | bool | None = None,
        store_cache: bool = False,
        catalogue: Catalogue | None = None,
    ) -> LLMClient:
        """Any ``/v1/chat/completions`` server: vLLM, llama.cpp server, LM Studio, OpenAI.

        Args:
            model: the model id the server knows.
            base_url: the API root, including ``/v1`` (default: ``OPENAI_BASE_URL``,
                as the OpenAI SDK reads it, else ``http://localhost:8000/v1``).
            api_key: sent as a bearer token when given (default: ``OPENAI_API_KEY``
                for ``api.openai.com`` only).
            provider: the provider name to record (default ``openai`` for
                api.openai.com, else ``openai_compatible``).
            timeout: seconds per attempt.
            retry: retry policy.
            response_cache: see ``LLMClient``.
            store_cache: see ``LLMClient``.
            catalogue: see ``LLMClient``.

        Returns:
            The client.
        """
        from trails.llm.openai_compat import OpenAICompatAdapter

        if base_url is None:
            base_url = os.environ.get("OPENAI_BASE_URL") or "http://localhost:8000/v1"
        return cls(
            OpenAICompatAdapter(
                model, base_url=base_url, api_key=api_key, provider=provider, timeout=timeout
            ),
            retry=retry,
            response_cache=response_cache,
            store_cache=store_cache,
            catalogue=catalogue,
        )

    @classmethod
    def fallback(
        cls,
        clients: Sequence[LLMClient],
        *,
        max_failures: int = 3,
        cooldown_seconds: float = 60.0,
        response_cache: ResponseCache | bool | None = None,
        store_cache: bool = False,
    ) -> LLMClient:
        """Try clients in order; a client that fails ``max_failures`` times in a row is skipped
        for ``cooldown_seconds`` (a circuit breaker), then tried once again.

        Each client keeps its own retry policy; a bad request (4xx) is not
        something another provider fixes, so it is raised at once.

        Args:
            clients: in priority order.
            max_failures: consecutive failures that open a client's circuit.
            cooldown_seconds: how long an open circuit stays open.
            response_cache: see ``LLMClient``.
            store_cache: see ``LLMClient``.

        Returns:
            The client.

        Raises:
            UserError: no clients, or bad thresholds.
        """
        from trails.llm.fallback import FallbackAdapter

        adapter = FallbackAdapter(
            [(c.adapter, c.retry) for c in clients],
            max_failures=max_failures,
            cooldown_seconds=cooldown_seconds,
        )
        catalogue = clients[0].catalogue if clients else None
        return cls(
            adapter,
            retry=RetryPolicy(max_retries=0, base_delay=0.0),
            response_cache=response_cache,
            store_cache=store_cache,
            catalogue=catalogue,
        )

    @classmethod
    def from_spec(cls, spec: str, **options: Any) -> LLMClient:
        """Build a client from a short spec (``trails demo --llm``).

        Accepted: ``mock`` or ``mock:MODEL``; ``anthropic:MODEL``;
        ``ollama:MODEL`` or ``ollama:MODEL@http://host:11434``;
        ``openai:MODEL@URL`` (any OpenAI-compatible server, URL including ``/v1``).

        Args:
            spec: the spec string.
            **options: passed on to the matching constructor (``response=`` for
                the mock, ``api_key=``, ``timeout=``, ``retry=`` ...).

        Returns:
            The client.

        Raises:
            UserError: the spec does not have one of the accepted forms.
        """
        forms = "mock, anthropic:MODEL, ollama:MODEL[@URL], openai:MODEL@URL"
        kind, _, rest = spec.strip().partition(":")
        kind = kind.lower()
        if kind == "mock":
            return cls.mock(model=rest or "mock", **options)
        if not rest:
            raise UserError(f"--llm {spec!r} names no model; accepted forms: {forms}")
        if kind == "anthropic":
            return cls.anthropic(model=rest, **options)
        if kind == "ollama":
            model, _, host = rest.partition("@")
            if host:
                options.setdefault("host", host)
            return cls.ollama(model=model, **options)
        if kind in ("openai", "openai_compatible"):
            model, sep, url = rest.partition("@")
            if not sep or not url or not model:
                raise UserError(
                    f"--llm {spec!r}: openai needs MODEL@URL (e.g. openai:qwen@http://127.0.0.1:8000/v1)"
                )
            return cls.openai_compatible(model=model, base_url=url, **options)
        raise UserError(f"unknown --llm {spec!r}; accepted forms: {forms}")

    # -- introspection --------------------------------------------------------------

    @property
    def provider(self) -> str:
        return self.adapter.provider

    @property
    def model(self) -> str:
        return self.adapter.model

    @property
    def requests(self) -> list[Request]:
        """Requests the adapter received (the mock keeps them; others return [])."""
        return list(getattr(self.adapter, "requests", []))

    @property
    def last_request(self) -> Request | None:
        reqs = self.requests
        return reqs[-1] if reqs else None

    def spec(self, model: str | None = None) -> ModelSpec:
        """The catalogue spec of this client's model (local / unpriced when not listed)."""
        return self._spec(self.provider, model or self.model, self.model)

    def __repr__(self) -> str:
        return f"LLMClient({self.provider}:{self.model})"

    # -- calls ----------------------------------------------------------------------

    def complete(
        self,
        messages: Prompt,
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        ctx: Context | None = None,
        model: str | ModelSpec | None = None,
        stop: Sequence[str] = (),
        **extra: Any,
    ) -> Response:
        """One completion, with budget check, cost envelope and a recorded ``trails:LLMCompletion``.

        Args:
            messages: a string (one user message) or a list of messages.
            max_tokens: completion token limit.
            temperature: sampling temperature.
            ctx: the calling context (principal, session, parent activity, step,
                tracker); the process default context when omitted.
            model: override the client's model for this call: an id, or a ``ModelSpec``
                (one of another provider is served by the client configured for
                that provider, see ``trails.llm.configured``).
            stop: stop sequences.
            **extra: further provider parameters (recorded, hashed, passed on).

        Returns:
            The response, with ``usd``, ``retries``, ``latency_s`` and ``activity_iri``.

        Raises:
            BudgetExceeded: the principal had already spent its budget (nothing recorded).
            ModelAPIError: the provider failed (a subclass per kind); a failed
                completion was recorded first.
            UserError: the messages or parameters are invalid.
            ConfigError: ``model`` is a ``ModelSpec`` of a provider no client is
                configured for.
        """
        routed = self._route(model)
        if routed is not None:
            return routed.complete(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                ctx=ctx,
                model=routed.model,
                stop=stop,
                **extra,
            )
        call = self._begin(messages, max_tokens, temperature, ctx, model, stop, extra)
        cached = self._cached(call)
        if cached is not None:
            return self._succeed(call, cached, retries=0, cache_hit=True)
        try:
            with observing(call.ctx):
                response, retries = call_with_retries(
                    lambda: self.adapter.complete(call.request), self.retry, self._retried(call)
                )
        except RetryError as err:
            error = self._fail(call, err.error, err.retries)
            raise error from error.__cause__
        return self._succeed(call, response, retries=retries, cache_hit=False)

    def stream(
        self,
        messages: Prompt,
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        ctx: Context | None = None,
        model: str | ModelSpec | None = None,
        stop: Sequence[str] = (),
        **extra: Any,
    ) -> Iterator[Chunk | Response]:
        """Stream a completion: ``Chunk`` pieces of text, then the full ``Response`` last.

        The budget is checked when ``stream`` is called, before anything is
        sent. Attempts are retried only until the first chunk arrives; a
        failure after that is recorded and raised. A consumer that stops early
        leaves a failed completion recorded ("stream closed by the consumer").

        Args:
            messages: see ``complete``.
            max_tokens: see ``complete``.
            temperature: see ``complete``.
            ctx: see ``complete``.
            model: see ``complete``.
            stop: see ``complete``.
            **extra: see ``complete``.

        Returns:
            An iterator of chunks ending with the response.

        Raises:
            BudgetExceeded: at the call, before anything is sent.
            ModelAPIError: while iterating, after the failure was recorded.
        """
        routed = self._route(model)
        if routed is not None:
            return routed.stream(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                ctx=ctx,
                model=routed.model,
                stop=stop,
                **extra,
            )
        call = self._begin(messages, max_tokens, temperature, ctx, model, stop, extra)
        return self._stream(call)

    def _stream(self, call: _Call) -> Iterator[Chunk | Response]:
        cached = self._cached(call)
        if cached is not None:
            if cached.text:
                yield Chunk(cached.text)
            yield self._succeed(call, cached, retries=0, cache_hit=True)
            return

        def open_stream() -> tuple[Iterator[Chunk | Response], Chunk | Response | None]:
            it = iter(self.adapter.stream(call.request))
            return it, next(it, None)

        try:
            with observing(call.ctx):
                (it, first), retries = call_with_retries(
                    open_stream, self.retry, self._retried(call)
                )
        except RetryError as err:
            error = self._fail(call, err.error, err.retries)
            raise error from error.__cause__
        received: list[str] = []
        item = first
        try:
            while item is not None:
                if isinstance(item, Response):
                    break
                received.append(item.text)
                yield item
                item = next(it, None)
        except GeneratorExit:
            _close(it)
            self._fail(
                call,
                ModelAPIError(
                    f"stream closed by the consumer after {sum(map(len, received))} characters",
                    provider=self.provider,
                ),
                retries,
                received="".join(received),
            )
            raise
        except Exception as exc:
            _close(it)
            error = self._fail(call, exc, retries, received="".join(received))
            raise error from error.__cause__
        if not isinstance(item, Response):
            text = "".join(received)
            error = IncompleteStreamError(
                f"{self.provider} stream ended without a final message, after {len(text)} "
                "characters of text",
                received=text,
                provider=self.provider,
            )
            raise self._fail(call, error, retries, received=text)
        yield self._succeed(call, item, retries=retries, cache_hit=False)

    def _route(self, model: str | ModelSpec | None) -> LLMClient | None:
        """The client serving a ``ModelSpec`` of another provider (None: this one serves it).

        Raises:
            ConfigError: nobody is configured to serve that provider.
        """
        if not isinstance(model, ModelSpec) or _same_provider(model.provider, self.provider):
            return None
        from trails.llm.configured import provider_client

        return provider_client(
            model.provider, model.model, asked_by=f"{self.provider}:{self.model}"
        )

    # -- the envelope around every call ---------------------------------------------

    def _begin(
        self,
        messages: Prompt,
        max_tokens: int,
        temperature: float,
        ctx: Context | None,
        model: str | ModelSpec | None,
        stop: Sequence[str],
        extra: dict[str, Any],
    ) -> _Call:
        msgs = to_messages(messages)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise UserError(f"max_tokens must be a positive int, not {max_tokens!r}")
        if isinstance(temperature, bool) or not isinstance(temperature, int | float):
            raise UserError(f"temperature must be a number, not {temperature!r}")
        if isinstance(stop, str):
            stop = [stop]
        model_id = model.model if isinstance(model, ModelSpec) else (model or self.model)
        for i, m in enumerate(msgs):
            check_text(m.content, f"message #{i} content")
        check_text(model_id, "model")
        for s in stop:
            check_text(s, "stop sequence")
        ctx = ctx if ctx is not None else current_context()
        ctx.tracker.check(ctx.principal)
        params = request_params(max_tokens, temperature, stop, extra)
        request = Request(
            model=model_id,
            messages=tuple(msgs),
            max_tokens=max_tokens,
            temperature=float(temperature),
            stop=tuple(stop),
            extra=dict(extra),
        )
        call = _Call(
            ctx=ctx,
            request=request,
            messages=[m.as_dict() for m in msgs],
            params=params,
            hash=request_hash(model_id, msgs, params),
            activity=ctx.recorder.minter.activity(),
            started=now(),
            t0=time.perf_counter(),
        )
        notify(ctx, "llm_start", call_id=call.activity, model=model_id, messages=len(msgs))
        return call

    def _retried(self, call: _Call) -> Any:
        def told(attempt: int, error: BaseException, delay: float) -> None:
            data = {"attempt": attempt, "error": f"{type(error).__name__}: {error}"}
            notify(call.ctx, "llm_retry", call_id=call.activity, delay_s=delay, **data)

        return told

    def _cached(self, call: _Call) -> Response | None:
        if self.response_cache is not None:
            hit = self.response_cache.get(call.hash)
            if hit is not None:
                return hit
        if self.store_cache:
            return lookup_recorded(call.ctx.store, call.hash)
        return None

    def _spec(self, provider: str, model: str, requested: str) -> ModelSpec:
        local = bool(getattr(self.adapter, "local", False)) and provider == self.provider
        found = self.catalogue.find(provider, model) or self.catalogue.find(provider, requested)
        return found or self.catalogue.spec_for(provider, model, local=local)

    def _succeed(
        self, call: _Call, response: Response, *, retries: int, cache_hit: bool
    ) -> Response:
        ctx = call.ctx
        if not cache_hit:
            retries += response.retries  # attempts an adapter made itself (a fallback chain)
        provider = response.provider or self.provider
        model = response.model or call.request.model
        for what, value in (("completion text", response.text), ("model id", model)):
            problem = text_problem(value)
            if problem is not None:  # e.g. a "\ud800" escape in the provider's JSON
                raise self._fail(
                    call,
                    MalformedResponseError(
                        f"{provider}: the {what} is not valid Unicode text ({problem}), "
                        "so it cannot be recorded",
                        provider=provider,
                        request_id=response.request_id,
                    ),
                    retries,
                )
        if cache_hit:
            usd: float | None = 0.0
        elif response.usd is not None:
            usd = response.usd
        else:
            usd = self._spec(provider, model, call.request.model).cost(
                response.input_tokens,
                response.output_tokens,
                response.cache_read_tokens,
                response.cache_write_tokens,
            )
        latency = time.perf_counter() - call.t0
        envelope = ctx.tracker.book(
            tag=f"llm:{model}",
            principal=ctx.principal,
            usd=usd,
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
            activity=call.activity,
        )
        ctx.recorder.record(
            LLMCompleted(
                session=ctx.session,
                activity=call.activity,
                parent=ctx.parent,
                principal=ctx.principal,
                provider=provider,
                model=model,
                started=call.started,
                ended=now(),
                messages=call.messages,
                params=call.params,
                request_hash=call.hash,
                text=response.text,
                input_tokens=response.input_tokens,
                output_tokens=response.output_tokens,
                cache_read_tokens=response.cache_read_tokens,
                cache_write_tokens=response.cache_write_tokens,
                usd=usd,
                cache_hit=cache_hit,
                latency_ms=latency * 1000.0,
                retries=retries,
                request_id=response.request_id,
                status="ok",
                step=ctx.step,
            )
        )
        if not cache_hit and self.response_cache is not None:
            self.response_cache.set(call.hash, response)
        if cache_hit:
            notify(ctx, "cache_hit", call_id=call.activity, model=model)
        tokens = {"input_tokens": response.input_tokens, "output_tokens": response.output_tokens}
        notify(ctx, "llm_end", call_id=call.activity, model=model, status="ok", usd=usd, **tokens)
        return replace(
            response,
            provider=provider,
            model=model,
            usd=usd,
            cache_hit=cache_hit,
            latency_s=latency,
            retries=retries,
            activity_iri=call.activity,
            call_id=envelope.call_id,
        )

    def _fail(
        self, call: _Call, error: BaseException, retries: int, *, received: str = ""
    ) -> BaseException:
        """Record a failed completion and return the error to raise (translated if foreign).

        ``received`` is the text a stream delivered before it failed; it is
        recorded as the failed completion's content (a cut stream's partial
        answer is evidence too), never as an answer: the status is ``error``.
        """
        if not isinstance(error, TrailsError):
            translated: BaseException = ModelAPIError(
                f"{self.provider} adapter raised {type(error).__name__}: {error}",
                provider=self.provider,
            )
            translated.__cause__ = error
            error = translated
        retries += int(getattr(error, "inner_retries", 0))
        message = f"{type(error).__name__}: {error}"
        if text_problem(message) is not None:  # a provider's message may hold anything
            message = message.encode("utf-8", "backslashreplace").decode("utf-8")
        if text_problem(received) is not None:
            received = ""  # not recordable as it came; the error says how much arrived
        ctx = call.ctx
        ctx.recorder.record(
            LLMCompleted(
                session=ctx.session,
                activity=call.activity,
                parent=ctx.parent,
                principal=ctx.principal,
                provider=getattr(error, "provider", "") or self.provider,
                model=call.request.model,
                started=call.started,
                ended=now(),
                messages=call.messages,
                params=call.params,
                request_hash=call.hash,
                latency_ms=(time.perf_counter() - call.t0) * 1000.0,
                retries=retries,
                request_id=getattr(error, "request_id", None),
                text=received or None,
                status="error",
                error=message,
                step=ctx.step,
            )
        )
        model = call.request.model
        notify(ctx, "llm_end", call_id=call.activity, model=model, status="error", error=message)
        error.activity_iri = call.activity  # type: ignore[attr-defined]
        error.retries = retries  # type: ignore[attr-defined]
        return error


def _same_provider(wanted: str, serving: str) -> bool:
    """Whether a client of provider ``serving`` serves models of provider ``wanted``."""
    return wanted == serving


def _close(it: Iterator[Any]) -> None:
    close = getattr(it, "close", None)
    if callable(close):
        close()


def module_tracker() -> CostTracker:
    """The module cost tracker every client books into by default (the kernel's)."""
    return default_tracker()
