"""``LLMClient``: every model call with its cost envelope, budget check and provenance.

The adapter speaks a provider's wire format; the client owns what trails must
own around every call, once, for every provider:

1. the principal's budget is checked before the call (``BudgetExceeded``);
2. the response cache (never for a stream) and, when enabled, the store are
   asked first; a hit is booked and recorded at its original cost, marked a hit;
3. the adapter is called with retries (backoff + jitter, ``retry-after``);
4. a cost envelope tagged ``llm:<model>`` is booked for the principal into
   ``ctx.tracker`` (the module tracker unless the context says otherwise),
   priced from the catalogue (0 for local models, ``None`` when unknown);
5. one ``trails:LLMCompletion`` activity is recorded into the session graph,
   ``prov:wasInformedBy`` the calling activity (``ctx.parent``), success or
   failure, and its IRI comes back on ``Response.activity_iri``.

The same envelope serves ``acomplete`` / ``astream`` (asyncio), ``batch`` /
``abatch``, native tool calls (``tools=``, ``Response.tool_calls``) and
structured output (``response_format=``, ``Response.parsed``): one
implementation in ``trails.llm.envelope``, whose sync and async paths differ
only in how they wait for the adapter (see ``docs/llm.md``).

Cost lives on the completion only. A capability that calls the model while
running under a planner step gets its own completion, linked to the
capability's activity; neither the capability nor the planner step books that
spend again, so the tracker's totals and a SPARQL sum over recorded
completions agree (see ``docs/llm.md``, "Cost accounting").
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from typing import Any

from trails.errors import UserError
from trails.kernel.context import Context
from trails.kernel.cost import CostTracker, default_tracker
from trails.llm.batch import Progress, arun_batch, run_batch
from trails.llm.cache import CacheBackend, StoreCache, cache_backend
from trails.llm.catalogue import Catalogue, ModelSpec, default_catalogue
from trails.llm.envelope import Call, Envelope, Prompt, acting_principal, to_messages
from trails.llm.errors import StructuredOutputError
from trails.llm.mock import MockAdapter, MockScript
from trails.llm.retry import RetryPolicy
from trails.llm.serving import serving_client
from trails.llm.structured import ResponseFormat, output_format
from trails.llm.tokens import atraced, traced
from trails.llm.tools import ToolLike, tool_specs
from trails.llm.types import Adapter, Chunk, Request, Response

__all__ = ["LLMClient", "Prompt", "to_messages"]


class LLMClient(Envelope):
    """A model client: one adapter plus cost, budgets, retries, caching and provenance.

    Build one with a constructor (``mock``, ``anthropic``, ``ollama``,
    ``openai_compatible``, ``fallback``, ``from_spec``) or wrap any ``Adapter``.

    Args:
        adapter: the provider adapter.
        retry: the retry policy (default: 2 retries, 0.5 s base, jitter).
        response_cache: an in-memory ``ResponseCache``, ``True`` for a default
            one, any object with ``get``/``set``/``delete``/``clear`` (a
            ``CacheBackend``), or None. Anything else is refused (``UserError``).
            Streams are never answered from it nor written to it.
        store_cache: answer a request from a successful completion already
            recorded in the context's store with the same request hash, for the
            same principal (``"shared"``: anyone's, recorded as shared).
        catalogue: where prices come from (default: the shipped catalogue).
    """

    def __init__(
        self,
        adapter: Adapter,
        *,
        retry: RetryPolicy | None = None,
        response_cache: CacheBackend | bool | None = None,
        store_cache: StoreCache = False,
        catalogue: Catalogue | None = None,
    ) -> None:
        self.adapter = adapter
        #: ADR-0018 open question 1: also record each streamed completion's tokens in a
        #: token-trace graph of their own (``trails.prov.token_trace``); off by default
        self.token_trace = False
        self.retry = retry if retry is not None else RetryPolicy()
        self.response_cache: CacheBackend | None = cache_backend(response_cache)
        self.store_cache = store_cache
        self.catalogue = catalogue if catalogue is not None else default_catalogue()

    # -- constructors ---------------------------------------------------------------

    @classmethod
    def mock(
        cls,
        response: MockScript | None = None,
        *,
        model: str = "mock",
        retry: RetryPolicy | None = None,
        response_cache: CacheBackend | bool | None = None,
        store_cache: StoreCache = False,
        catalogue: Catalogue | None = None,
    ) -> LLMClient:
        """A scripted model: a fixed answer, ``callable(messages) -> str``, or answers in order.

        Script entries may also be a ``Response`` (exact token counts / ``usd``)
        or an exception instance (that call fails). Requests are kept on
        ``client.requests``. Mock calls cost 0 unless a scripted ``Response``
        says otherwise, and retries default to none with no delay.

        Given no script, it is the offline model: every run finishes at once with
        ``mock answer to: <goal> (offline mock: no capability called)``.

        Args:
            response: the script; None (the default): the offline model.
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
        response_cache: CacheBackend | bool | None = None,
        store_cache: StoreCache = False,
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
        response_cache: CacheBackend | bool | None = None,
        store_cache: StoreCache = False,
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
        response_cache: CacheBackend | bool | None = None,
        store_cache: StoreCache = False,
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
        on_fallback: Callable[..., object] | None = None,
        response_cache: CacheBackend | bool | None = None,
        store_cache: StoreCache = False,
    ) -> LLMClient:
        """Try clients in order; a client that fails ``max_failures`` times in a row is skipped
        for ``cooldown_seconds`` (a circuit breaker), then tried once again.

        Each client keeps its own retry policy; a bad request (4xx) is not
        something another provider fixes, so it is raised at once. Each
        failed client is recorded as a failed completion and each switch as a
        ``trails:ProviderFallback`` (see ``docs/llm.md``).

        Args:
            clients: in priority order.
            max_failures: consecutive failures that open a client's circuit.
            cooldown_seconds: how long an open circuit stays open.
            on_fallback: called on each failover with ``(name, error)``, or with
                ``(failed, next, error)`` when it takes three arguments
                (``provider:model`` names).
            response_cache: see ``LLMClient``.
            store_cache: see ``LLMClient``.

        Returns:
            The client.

        Raises:
            UserError: no clients, bad thresholds, or an ``on_fallback`` that
                takes neither form.
        """
        from trails.llm.fallback import FallbackAdapter

        adapter = FallbackAdapter(
            [(c.adapter, c.retry) for c in clients],
            max_failures=max_failures,
            cooldown_seconds=cooldown_seconds,
            on_fallback=on_fallback,
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
        tools: Sequence[ToolLike] | None = None,
        response_format: ResponseFormat | None = None,
        max_retries: int = 2,
        cache: bool = True,
        principal: str | None = None,
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
            tools: tools the model may call natively: capabilities (their
                manifest's JSON schema), ``ToolSpec`` or ``{"name", "description",
                "parameters"}`` dicts; the calls come back on ``Response.tool_calls``.
            response_format: a pydantic model class or a JSON schema the answer
                must follow; the validated answer is ``Response.parsed``.
            max_retries: with ``response_format``, how many more attempts an
                answer that fails validation gets (each shown the error).
            cache: ``False``: no response or store cache answers this call, and its
                answer is not kept (ADR-0018's ``cache=``).
            principal: the principal the call acts (and is booked) for; the context's
                when omitted. Outside a context of that principal the call is recorded
                in a session of its own for it, ended after the call.
            **extra: further provider parameters (recorded, hashed, passed on).

        Returns:
            The response, with ``usd``, ``retries``, ``latency_s`` and ``activity_iri``.

        Raises:
            BudgetExceeded: the principal had already spent its budget (nothing
                sent; a completion with status ``refused`` was recorded).
            ModelAPIError: the provider failed (a subclass per kind); a failed
                completion was recorded first.
            StructuredOutputError: no answer matched ``response_format`` (each
                attempt recorded with status ``invalid``).
            UserError: the messages or parameters are invalid, or ``principal`` differs
                from ``ctx``'s.
            ConfigError: ``model`` is a ``ModelSpec`` of a provider no client is
                configured for.
        """
        ctx, owned = acting_principal(ctx, principal)
        if owned:
            try:
                return self.complete(
                    messages, max_tokens=max_tokens, temperature=temperature, ctx=ctx,
                    model=model, stop=stop, tools=tools, response_format=response_format,
                    max_retries=max_retries, cache=cache, **extra,
                )  # fmt: skip
            finally:
                ctx.close()
        extra["cache"] = cache
        routed = self._route(model)
        if routed is not None:
            return routed.complete(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                ctx=ctx,
                model=routed.model,
                stop=stop,
                tools=tools,
                response_format=response_format,
                max_retries=max_retries,
                **extra,
            )
        attempts = self._attempts(
            messages, max_tokens=max_tokens, temperature=temperature, ctx=ctx, model=model,
            stop=stop, extra=extra, tools=tools, response_format=response_format,
            max_retries=max_retries,
        )  # fmt: skip
        call = next(attempts)
        try:
            while True:
                call = attempts.send(self._attempt(call))
        except StopIteration as done:
            result: Response = done.value
            return result
        finally:
            attempts.close()

    async def acomplete(
        self,
        messages: Prompt,
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        ctx: Context | None = None,
        model: str | ModelSpec | None = None,
        stop: Sequence[str] = (),
        tools: Sequence[ToolLike] | None = None,
        response_format: ResponseFormat | None = None,
        max_retries: int = 2,
        cache: bool = True,
        principal: str | None = None,
        **extra: Any,
    ) -> Response:
        """``complete`` for asyncio: same arguments, same recorded completion.

        The adapter's ``acomplete`` is awaited (the Anthropic SDK's async
        client; httpx's ``AsyncClient`` for Ollama and OpenAI-compatible
        servers); an adapter without one runs its ``complete`` in a worker
        thread. Retries wait with ``asyncio.sleep``. The store write stays
        synchronous: one atomic write per completion, under the recorder's lock.

        Raises:
            See ``complete``.
        """
        ctx, owned = acting_principal(ctx, principal)
        if owned:
            try:
                return await self.acomplete(
                    messages, max_tokens=max_tokens, temperature=temperature, ctx=ctx,
                    model=model, stop=stop, tools=tools, response_format=response_format,
                    max_retries=max_retries, cache=cache, **extra,
                )  # fmt: skip
            finally:
                ctx.close()
        extra["cache"] = cache
        routed = self._route(model)
        if routed is not None:
            return await routed.acomplete(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                ctx=ctx,
                model=routed.model,
                stop=stop,
                tools=tools,
                response_format=response_format,
                max_retries=max_retries,
                **extra,
            )
        attempts = self._attempts(
            messages, max_tokens=max_tokens, temperature=temperature, ctx=ctx, model=model,
            stop=stop, extra=extra, tools=tools, response_format=response_format,
            max_retries=max_retries,
        )  # fmt: skip
        call = next(attempts)
        try:
            while True:
                call = attempts.send(await self._aattempt(call))
        except StopIteration as done:
            result: Response = done.value
            return result
        finally:
            attempts.close()

    def _attempts(
        self,
        messages: Prompt,
        *,
        max_tokens: int,
        temperature: float,
        ctx: Context | None,
        model: str | ModelSpec | None,
        stop: Sequence[str],
        extra: dict[str, Any],
        tools: Sequence[ToolLike] | None,
        response_format: ResponseFormat | None,
        max_retries: int,
    ) -> Generator[Call, Response, Response]:
        """The attempts of one call, shared by ``complete`` and ``acomplete``.

        Yields each attempt's ``Call``; the driver sends back the recorded
        response (sync or async, the only difference). Without a response
        format there is one attempt; with one, an invalid answer leads to
        another attempt shown the validation error, up to ``max_retries``.

        Raises:
            StructuredOutputError: the last attempt was invalid too.
        """
        output = output_format(response_format) if response_format is not None else None
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise UserError(f"max_retries must be an int >= 0, not {max_retries!r}")
        specs = tool_specs(tools)
        msgs = to_messages(messages)
        total = max_retries + 1 if output is not None else 1
        errors: list[str] = []
        for attempt in range(1, total + 1):
            call = self._begin(
                msgs,
                max_tokens,
                temperature,
                ctx=ctx,
                model=model,
                stop=stop,
                extra=extra,
                tools=specs,
                output=output,
            )
            call.attempt, call.attempts = attempt, total
            response = yield call
            if call.invalid is None or output is None:
                return response
            errors.append(call.invalid)
            msgs = output.retry_messages(msgs, response, call.invalid)
        assert output is not None  # the loop returns on the only attempt without one
        error = StructuredOutputError(
            f"{self.provider}:{call.request.model} gave no answer matching {output.name!r} "
            f"in {total} attempt(s); last problem: {errors[-1]}",
            errors=errors,
            text=output.raw(response),
            provider=self.provider,
            request_id=response.request_id,
        )
        error.activity_iri = call.activity  # type: ignore[attr-defined]
        raise error

    def stream(
        self,
        messages: Prompt,
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        ctx: Context | None = None,
        model: str | ModelSpec | None = None,
        stop: Sequence[str] = (),
        tools: Sequence[ToolLike] | None = None,
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
            tools: see ``complete`` (the calls are on the final ``Response``).
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
                tools=tools,
                **extra,
            )
        call = self._begin(
            messages,
            max_tokens,
            temperature,
            ctx=ctx,
            model=model,
            stop=stop,
            extra=extra,
            tools=tool_specs(tools),
        )
        return traced(self._stream(call), call.ctx) if self.token_trace else self._stream(call)

    def astream(
        self,
        messages: Prompt,
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        ctx: Context | None = None,
        model: str | ModelSpec | None = None,
        stop: Sequence[str] = (),
        tools: Sequence[ToolLike] | None = None,
        **extra: Any,
    ) -> AsyncIterator[Chunk | Response]:
        """``stream`` for asyncio: ``async for`` over chunks, then the ``Response``.

        Checked (budget, input) at the call, like ``stream``; recorded the same way.

        Raises:
            See ``stream``.
        """
        routed = self._route(model)
        if routed is not None:
            return routed.astream(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                ctx=ctx,
                model=routed.model,
                stop=stop,
                tools=tools,
                **extra,
            )
        call = self._begin(
            messages,
            max_tokens,
            temperature,
            ctx=ctx,
            model=model,
            stop=stop,
            extra=extra,
            tools=tool_specs(tools),
        )
        stream = self._astream(call)
        return atraced(stream, call.ctx) if self.token_trace else stream

    def batch(
        self,
        prompts: Sequence[Prompt],
        *,
        max_concurrency: int = 8,
        on_progress: Progress | None = None,
        ctx: Context | None = None,
        **options: Any,
    ) -> list[Response | Exception]:
        """Complete many prompts, ``max_concurrency`` at a time (worker threads).

        Args:
            prompts: one prompt per completion.
            max_concurrency: how many calls run at once.
            on_progress: called with ``(done, total)`` after each call ends.
            ctx: the context every call runs in (default: the caller's).
            **options: passed to ``complete`` (``max_tokens``, ``tools``,
                ``response_format`` ...).

        Returns:
            One result per prompt, in order: the ``Response``, or the exception
            that call ended with (one failure does not cancel the others).

        Raises:
            UserError: ``max_concurrency`` < 1.
        """
        return run_batch(
            self.complete,
            prompts,
            max_concurrency=max_concurrency,
            on_progress=on_progress,
            ctx=ctx,
            options=options,
        )

    async def abatch(
        self,
        prompts: Sequence[Prompt],
        *,
        max_concurrency: int = 8,
        on_progress: Progress | None = None,
        ctx: Context | None = None,
        **options: Any,
    ) -> list[Response | Exception]:
        """``batch`` for asyncio: tasks bounded by a semaphore, each an ``acomplete``.

        Raises:
            UserError: ``max_concurrency`` < 1.
        """
        return await arun_batch(
            self.acomplete,
            prompts,
            max_concurrency=max_concurrency,
            on_progress=on_progress,
            ctx=ctx,
            options=options,
        )

    def _route(self, model: str | ModelSpec | None) -> LLMClient | None:
        """The client serving a ``ModelSpec`` of another provider (None: this one serves it).

        The one ``trails.llm.configured.provider_client`` returns (``trails.llm.serving``).

        Raises:
            ConfigError: nobody is configured to serve that provider.
        """
        if not isinstance(model, ModelSpec) or _same_provider(model.provider, self.provider):
            return None
        return serving_client(
            LLMClient.from_spec,
            model.provider,
            model.model,
            asked_by=f"{self.provider}:{self.model}",
        )


def _same_provider(wanted: str, serving: str) -> bool:
    """Whether a client of provider ``serving`` serves models of provider ``wanted``."""
    return wanted == serving


def module_tracker() -> CostTracker:
    """The module cost tracker every client books into by default (the kernel's)."""
    return default_tracker()
