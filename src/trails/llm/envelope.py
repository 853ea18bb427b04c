"""The envelope around every model call: begin, attempt, succeed or fail, and record.

``LLMClient`` (``trails.llm.client``) is the public face; this module is the
one implementation of what happens around an adapter call, shared by the
sync and async paths so both record exactly the same PROV-O:

- ``_begin`` checks the input and the principal's budget and mints the
  completion's IRI;
- ``_attempt`` / ``_aattempt`` call the adapter with retries (the async one
  awaits the adapter's ``acomplete``, or runs its sync ``complete`` in a
  worker thread when it has none);
- ``_succeed`` books the cost envelope and records one ``trails:LLMCompletion``
  (status ``ok``, or ``invalid`` when a structured answer failed validation);
  ``_fail`` records a failed one. Each is one ``recorder.record`` call, one
  atomic write under the recorder's lock, so concurrent tasks and threads
  never interleave the quads of two completions;
- ``_stream`` / ``_astream`` wrap a streaming call: retried until the first
  chunk, a cut or abandoned stream recorded as failed;
- while the adapter runs, a fallback chain's failed members are watched
  (``trails.llm.failover``): each is recorded as it fails, a failed completion
  and the switch to the next provider, and the call's own completion is
  informed by the last of them;
- a call the principal's budget refuses is recorded (status ``refused``, ended
  by a ``trails:BudgetBreach``) before ``BudgetExceeded`` is raised.
"""

from __future__ import annotations

import asyncio
import time
import typing
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from trails.errors import BudgetExceeded, ModelAPIError, TrailsError, UserError
from trails.kernel.context import Context, current_context, now
from trails.kernel.observe import notify, observing, off_loop
from trails.llm.batch import hold_slot, release_slot
from trails.llm.cache import (
    CacheBackend,
    StoreCache,
    lookup_recorded,
    request_hash,
    request_params_of,
)
from trails.llm.catalogue import Catalogue, ModelSpec
from trails.llm.errors import IncompleteStreamError, MalformedResponseError
from trails.llm.evidence import (
    BudgetRefused,
    ProviderFellBack,
    ProviderSkipped,
    SentCompletion,
    images_sent,
)
from trails.llm.failover import CircuitSkip, Failover, watching
from trails.llm.retry import RetryError, RetryPolicy, acall_with_retries, call_with_retries
from trails.llm.structured import OutputFormat
from trails.llm.types import Adapter, Chunk, Message, Request, Response, ToolCall, ToolSpec
from trails.text import check_text, text_problem

__all__ = ["Call", "Envelope", "Prompt", "to_messages"]

Prompt = str | Message | Sequence[Message | Mapping[str, Any]]

_ROLES = ("system", "user", "assistant", "tool")


def acting_principal(ctx: Context | None, principal: str | None) -> tuple[Context, bool]:
    """The context a call acts in, for ADR-0018's ``principal=``; True when it is the call's own.

    Without ``principal`` (or naming the acting context's own principal) the call runs in
    ``ctx``, else the caller's context. Naming another principal outside a context of ours
    opens a session of that principal for the call (the caller closes it after the call);
    naming one that differs from an explicit ``ctx`` is a contradiction.

    Raises:
        UserError: ``principal`` is not a non-empty string, or differs from ``ctx``'s.
    """
    if principal is None:
        return (ctx if ctx is not None else current_context()), False
    if not isinstance(principal, str) or not principal.strip():
        raise UserError(f"principal= must be a non-empty string, not {principal!r}")
    if ctx is not None:
        if ctx.principal != principal:
            raise UserError(
                f"principal={principal!r} differs from the context's principal "
                f"{ctx.principal!r}: a call acts for the context it runs in"
            )
        return ctx, False
    current = current_context()
    if current.principal == principal:
        return current, False
    return Context.open(principal, recorder=current.recorder, label="completion"), True


def _tool_calls(raw: Any, i: int) -> tuple[ToolCall, ...]:
    out: list[ToolCall] = []
    for call in raw or ():
        if isinstance(call, Mapping):
            try:
                call = ToolCall(
                    str(call["id"]), str(call["name"]), dict(call.get("arguments") or {})
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise UserError(f"message #{i} has a tool call without {exc}") from exc
        if not isinstance(call, ToolCall):
            raise UserError(f"message #{i} has a tool call that is a {type(call).__name__}")
        out.append(call)
    return tuple(out)


def to_messages(messages: Prompt) -> list[Message]:
    """Normalise a prompt: a str becomes one user message; dicts become ``Message``.

    Args:
        messages: a string, a ``Message``, or a sequence of messages or
            ``{"role", "content", "cache"?, "tool_calls"?, "tool_call_id"?, "images"?}``
            dicts (``images``: ``Image`` objects).

    Returns:
        The messages.

    Raises:
        UserError: empty, or a message with an unknown role, non-str content, or images
            that are not ``Image`` objects or not on a user message.
    """
    if isinstance(messages, str):
        return [Message("user", messages)]
    if isinstance(messages, Message):
        return [messages]
    out: list[Message] = []
    for i, m in enumerate(messages):
        if isinstance(m, Mapping):
            try:
                m = Message(
                    m["role"],
                    m["content"],
                    bool(m.get("cache", False)),
                    _tool_calls(m.get("tool_calls"), i),
                    m.get("tool_call_id"),
                    m.get("images") or (),
                )
            except KeyError as exc:
                raise UserError(f"message #{i} has no {exc.args[0]!r}") from exc
        if not isinstance(m, Message):
            raise UserError(f"message #{i} is a {type(m).__name__}, expected Message or dict")
        if m.role not in _ROLES:
            raise UserError(
                f"message #{i} has role {m.role!r}; use 'system', 'user', 'assistant' or 'tool'"
            )
        if not isinstance(m.content, str):
            raise UserError(f"message #{i} content must be str, not {type(m.content).__name__}")
        if m.role == "tool" and not m.tool_call_id:
            raise UserError(f"message #{i} is a tool result without a tool_call_id")
        out.append(m)
    if not out:
        raise UserError("a completion needs at least one message")
    return out


@dataclass
class Call:
    """What one complete/stream call needs to book and record itself."""

    ctx: Context
    request: Request
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    hash: str
    activity: str
    started: datetime
    t0: float
    output: OutputFormat | None = None
    attempt: int = 1
    attempts: int = 1
    invalid: str | None = None
    after: str | None = None
    """The last failover record of this call (a switch, or the last failed member)."""
    stream: bool = False
    """A stream: never answered from, nor written to, the response cache."""
    use_cache: bool = True
    """``cache=False`` on the call: no cache answers it, none keeps its answer."""
    cache_key: str = ""
    """The response cache's key: the request hash, scoped to the principal unless shared."""
    images: list[dict[str, Any]] = field(default_factory=list)
    """The images the request shows the model (``images_sent``), recorded as used."""

    @property
    def informed_by(self) -> list[str]:
        return [self.after] if self.after is not None else []


class Envelope:
    """The envelope's state and steps; ``LLMClient`` builds on it (see the module docstring)."""

    adapter: Adapter
    retry: RetryPolicy
    response_cache: CacheBackend | None
    store_cache: StoreCache
    catalogue: Catalogue

    @property
    def provider(self) -> str:
        return self.adapter.provider

    @property
    def model(self) -> str:
        return self.adapter.model

    def _begin(
        self,
        messages: Prompt,
        max_tokens: int,
        temperature: float,
        *,
        ctx: Context | None,
        model: str | ModelSpec | None,
        stop: Sequence[str],
        extra: dict[str, Any],
        tools: tuple[ToolSpec, ...] = (),
        output: OutputFormat | None = None,
    ) -> Call:
        msgs = to_messages(messages)
        if any(m.images for m in msgs) and not getattr(self.adapter, "accepts_images", False):
            raise UserError(
                f"the {self.provider} adapter does not send images (it has no accepts_images "
                "= True), so a message with images= cannot go to it: nothing was sent"
            )
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise UserError(f"max_tokens must be a positive int, not {max_tokens!r}")
        if isinstance(temperature, bool) or not isinstance(temperature, int | float):
            raise UserError(f"temperature must be a number, not {temperature!r}")
        if isinstance(stop, str):
            stop = [stop]
        extra = dict(extra)
        use_cache = extra.pop("cache", True)
        if not isinstance(use_cache, bool):
            raise UserError(f"cache= must be True or False, not {use_cache!r}")
        ctx, owned = acting_principal(ctx, extra.pop("principal", None))
        if owned:
            raise UserError(
                "principal= names another principal than the caller's context: pass "
                "ctx=Context.open(principal) to stream or batch for it"
            )
        model_id = model.model if isinstance(model, ModelSpec) else (model or self.model)
        for i, m in enumerate(msgs):
            check_text(m.content, f"message #{i} content")
        check_text(model_id, "model")
        for s in stop:
            check_text(s, "stop sequence")
        request = Request(
            model=model_id,
            messages=tuple(msgs),
            max_tokens=max_tokens,
            temperature=float(temperature),
            stop=tuple(stop),
            extra=dict(extra),
            tools=tools,
            response_format=output.schema if output is not None else None,
            response_name=output.name if output is not None else "answer",
        )
        params = request_params_of(request)
        as_sent = [m.as_dict() for m in msgs]  # the recorded prompt, and what the hash reads
        call = Call(
            ctx=ctx,
            request=request,
            messages=as_sent,
            params=params,
            hash=request_hash(model_id, as_sent, params),
            images=images_sent(msgs),
            activity=ctx.recorder.minter.activity(),
            started=now(),
            t0=time.perf_counter(),
            output=output,
            use_cache=use_cache,
            cache_key=self._cache_key(ctx.principal, request_hash(model_id, as_sent, params)),
        )
        try:
            ctx.tracker.check(ctx.principal)
        except BudgetExceeded as refusal:
            self._refuse(call, refusal)
            raise
        notify(ctx, "llm_start", call_id=call.activity, model=model_id, messages=len(msgs))
        return call

    def _refuse(self, call: Call, refusal: BudgetExceeded) -> None:
        """Record a call the principal's budget refused, before it is raised."""
        ctx = call.ctx
        ended = now()
        message = f"{type(refusal).__name__}: {refusal}"
        completion = SentCompletion(
            session=ctx.session,
            activity=call.activity,
            parent=ctx.parent,
            principal=ctx.principal,
            provider=self.provider,
            model=call.request.model,
            started=call.started,
            ended=ended,
            messages=call.messages,
            images=call.images,
            params=call.params,
            request_hash=call.hash,
            latency_ms=(time.perf_counter() - call.t0) * 1000.0,
            status="refused",
            error=message,
            step=ctx.step,
        )
        ctx.recorder.record(
            BudgetRefused(
                session=ctx.session,
                refused=completion,
                budget=refusal.kind,
                limit=refusal.limit,
                observed=refusal.observed,
            )
        )
        data = {"reason": message, "limit": refusal.limit, "observed": refusal.observed}
        notify(ctx, "budget", call_id=call.activity, **data)
        refusal.activity_iri = call.activity  # type: ignore[attr-defined]

    def _watch(self, call: Call) -> Callable[[Failover | CircuitSkip], None]:
        """Records each failed or skipped member of a fallback chain while ``call`` runs."""

        def failed(failover: Failover | CircuitSkip) -> None:
            ctx = call.ctx
            if isinstance(failover, CircuitSkip):
                skipped = ProviderSkipped(
                    session=ctx.session,
                    activity=ctx.recorder.minter.activity(),
                    principal=ctx.principal,
                    skipped=failover.skipped,
                    next_provider=failover.next,
                    open_until=failover.open_until,
                    at=failover.at,
                    call=call.activity,
                    step=ctx.step,
                )
                ctx.recorder.record(skipped)
                return
            attempt = ctx.recorder.minter.activity()
            switch = ctx.recorder.minter.activity() if failover.next is not None else None
            event = ProviderFellBack(
                session=ctx.session,
                failed=SentCompletion(
                    session=ctx.session,
                    activity=attempt,
                    parent=ctx.parent,
                    principal=ctx.principal,
                    provider=failover.provider,
                    model=failover.model,
                    started=failover.started,
                    ended=failover.ended,
                    messages=call.messages,
                    images=call.images,
                    params=call.params,
                    request_hash=call.hash,
                    latency_ms=failover.latency_ms,
                    retries=failover.retries,
                    request_id=getattr(failover.error, "request_id", None),
                    status="error",
                    error=_message(failover.error),
                    step=ctx.step,
                    informed_by=call.informed_by,
                ),
                switch=switch,
                next_provider=failover.next,
                at=failover.ended,
            )
            ctx.recorder.record(event)
            call.after = switch if switch is not None else attempt

        return failed

    def _retried(self, call: Call) -> Callable[[int, BaseException, float], None]:
        """Tells the call's observers of each retry (``llm_retry``), before its wait."""

        def told(attempt: int, error: BaseException, delay: float) -> None:
            notify(
                call.ctx,
                "llm_retry",
                call_id=call.activity,
                attempt=attempt,
                max_retries=self.retry.max_retries,
                error=f"{type(error).__name__}: {error}",
                delay_s=delay,
            )

        return told

    def _cache_key(self, principal: str, hash_hex: str) -> str:
        """One principal's answers are not another's unless the cache says it is shared."""
        if getattr(self.response_cache, "across_principals", False):
            return hash_hex
        return f"{hash_hex} {principal}"

    def _cached(self, call: Call) -> Response | None:
        # a stream never asks the response cache (docs/llm.md, Caching); the store lookup,
        # an explicit opt-in to answers already recorded, serves streams too
        if not call.use_cache:
            return None
        if self.response_cache is not None and not call.stream:
            hit = self.response_cache.get(call.cache_key)
            if isinstance(hit, Response):  # a backend's own miss marker is a miss
                return hit
        if self.store_cache:
            scope = None if self.store_cache == "shared" else call.ctx.principal
            return lookup_recorded(call.ctx.store, call.hash, principal=scope)
        return None

    def _spec(self, provider: str, model: str, requested: str) -> ModelSpec:
        local = bool(getattr(self.adapter, "local", False)) and provider == self.provider
        found = self.catalogue.find(provider, model) or self.catalogue.find(provider, requested)
        return found or self.catalogue.spec_for(provider, model, local=local)

    def _attempt(self, call: Call) -> Response:
        """The adapter's answer (cache first, then with retries); a failure is recorded, raised."""
        cached = self._cached(call)
        if cached is not None:
            return self._succeed(call, cached, retries=0, cache_hit=True)
        try:
            with observing(call.ctx), watching(self._watch(call)):
                response, retries = call_with_retries(
                    lambda: self.adapter.complete(call.request), self.retry, self._retried(call)
                )
        except RetryError as err:
            error = self._fail(call, err.error, err.retries)
            raise error from error.__cause__
        return self._succeed(call, response, retries=retries, cache_hit=False)

    async def _aattempt(self, call: Call) -> Response:
        """``_attempt`` over asyncio: the adapter's ``acomplete``, else its ``complete`` in a thread."""
        cached = self._cached(call)
        if cached is not None:
            return self._succeed(call, cached, retries=0, cache_hit=True)
        acomplete = getattr(self.adapter, "acomplete", None)

        async def once() -> Response:
            await hold_slot()  # in ``abatch``: a place among the requests in flight
            try:
                if acomplete is not None:
                    result: Response = await acomplete(call.request)
                    return result
                return await asyncio.to_thread(self.adapter.complete, call.request)
            finally:
                release_slot()  # answered (or failed): recording needs no request slot

        try:
            with observing(call.ctx), watching(self._watch(call)):
                response, retries = await acall_with_retries(once, self.retry, self._retried(call))
        except RetryError as err:
            error = self._fail(call, err.error, err.retries)
            raise error from error.__cause__
        # recorded in a worker thread: other tasks' requests go out while this one is written
        return await off_loop(self._succeed, call, response, retries=retries, cache_hit=False)

    def _succeed(
        self,
        call: Call,
        response: Response,
        *,
        retries: int,
        cache_hit: bool,
    ) -> Response:
        """Book and record a completion that answered.

        With a response format the answer is validated first: one that does
        not validate is recorded with status ``invalid`` (its cost booked: it
        was spent) and ``call.invalid`` says what is wrong with it; a valid
        one comes back with ``parsed`` set.
        """
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
        parsed: Any = None
        invalid: str | None = None
        if call.output is not None:
            parsed, invalid = call.output.check(response)
            call.invalid = invalid
        error = None
        if invalid is not None:
            error = f"invalid answer (attempt {call.attempt} of {call.attempts}): {invalid}"
            if call.attempt >= call.attempts:
                error += "; no attempts left"
        if cache_hit:  # the cost of the answer when it was paid for, marked as a hit
            usd: float | None = response.usd
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
            parent=ctx.parent,
        )
        ctx.recorder.record(
            SentCompletion(
                session=ctx.session,
                activity=call.activity,
                parent=ctx.parent,
                principal=ctx.principal,
                provider=provider,
                model=model,
                started=call.started,
                ended=now(),
                messages=call.messages,
                images=call.images,
                params=call.params,
                request_hash=call.hash,
                text=call.output.raw(response) if call.output is not None else response.text,
                input_tokens=response.input_tokens,
                output_tokens=response.output_tokens,
                cache_read_tokens=response.cache_read_tokens,
                cache_write_tokens=response.cache_write_tokens,
                usd=usd,
                cache_hit=cache_hit,
                cached_from=response.activity_iri if cache_hit else None,
                cache_scope=self._cache_scope(call, response) if cache_hit else None,
                latency_ms=latency * 1000.0,
                retries=retries,
                request_id=response.request_id,
                status="ok" if invalid is None else "invalid",
                error=error,
                step=ctx.step,
                tool_calls=[c.as_dict() for c in response.tool_calls],
                informed_by=call.informed_by,
            )
        )
        answered = replace(
            response,
            provider=provider,
            model=model,
            usd=usd,
            activity_iri=call.activity,
            principal=ctx.principal,
        )
        if (
            invalid is None
            and not cache_hit
            and not call.stream
            and call.use_cache
            and self.response_cache is not None
        ):
            self.response_cache.set(call.cache_key, answered)
        if cache_hit:
            notify(ctx, "cache_hit", call_id=call.activity, model=model)
        tokens = {"input_tokens": response.input_tokens, "output_tokens": response.output_tokens}
        status = "ok" if invalid is None else "invalid"
        notify(ctx, "llm_end", call_id=call.activity, model=model, status=status, usd=usd, **tokens)
        if call.output is not None:  # a structured answer: was it valid, which attempt, why not
            notify(
                ctx,
                "structured_validate",
                call_id=call.activity,
                success=invalid is None,
                attempt=call.attempt,
                error=error,
            )
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
            parsed=parsed,
            principal=ctx.principal,
        )

    def _cache_scope(self, call: Call, hit: Response) -> typing.Literal["principal", "shared"]:
        """``principal`` for a hit the principal paid for itself, else ``shared``."""
        return "principal" if hit.principal in (None, call.ctx.principal) else "shared"

    def _fail(
        self, call: Call, error: BaseException, retries: int, *, received: str = ""
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
        message = _message(error)
        if text_problem(received) is not None:
            received = ""  # not recordable as it came; the error says how much arrived
        ctx = call.ctx
        ctx.recorder.record(
            SentCompletion(
                session=ctx.session,
                activity=call.activity,
                parent=ctx.parent,
                principal=ctx.principal,
                provider=getattr(error, "provider", "") or self.provider,
                model=call.request.model,
                started=call.started,
                ended=now(),
                messages=call.messages,
                images=call.images,
                params=call.params,
                request_hash=call.hash,
                latency_ms=(time.perf_counter() - call.t0) * 1000.0,
                retries=retries,
                request_id=getattr(error, "request_id", None),
                text=received or None,
                status="error",
                error=message,
                step=ctx.step,
                informed_by=call.informed_by,
            )
        )
        model = call.request.model
        notify(ctx, "llm_end", call_id=call.activity, model=model, status="error", error=message)
        error.activity_iri = call.activity  # type: ignore[attr-defined]
        error.retries = retries  # type: ignore[attr-defined]
        return error

    # -- streams --------------------------------------------------------------------

    def _closed_early(self, call: Call, retries: int, received: list[str]) -> None:
        self._fail(
            call,
            ModelAPIError(
                f"stream closed by the consumer after {sum(map(len, received))} characters",
                provider=self.provider,
            ),
            retries,
            received="".join(received),
        )

    def _stream_end(
        self, call: Call, item: Chunk | Response | None, retries: int, received: list[str]
    ) -> Response:
        if not isinstance(item, Response):
            text = "".join(received)
            error = IncompleteStreamError(
                f"{self.provider} stream ended without a final message, after {len(text)} "
                "characters of text",
                received=text,
                provider=self.provider,
            )
            raise self._fail(call, error, retries, received=text)
        return self._succeed(call, item, retries=retries, cache_hit=False)

    def _stream(self, call: Call) -> Iterator[Chunk | Response]:
        call.stream = True
        cached = self._cached(call)  # only the store lookup, when it is on
        if cached is not None:
            if cached.text:
                yield Chunk(cached.text)
            yield self._succeed(call, cached, retries=0, cache_hit=True)
            return

        def open_stream() -> tuple[Iterator[Chunk | Response], Chunk | Response | None]:
            it = _sync_iter(self.adapter, call.request)
            return it, next(it, None)

        try:
            with observing(call.ctx), watching(self._watch(call)):
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
            self._closed_early(call, retries, received)
            raise
        except Exception as exc:
            _close(it)
            error = self._fail(call, exc, retries, received="".join(received))
            raise error from error.__cause__
        yield self._stream_end(call, item, retries, received)

    async def _astream(self, call: Call) -> AsyncIterator[Chunk | Response]:
        """``_stream`` over asyncio: the adapter's ``astream``, else its ``stream`` in a thread."""
        call.stream = True
        cached = self._cached(call)
        if cached is not None:
            if cached.text:
                yield Chunk(cached.text)
            yield self._succeed(call, cached, retries=0, cache_hit=True)
            return

        async def open_stream() -> tuple[AsyncIterator[Chunk | Response], Chunk | Response | None]:
            it = _aiter(self.adapter, call.request)
            return it, await anext(it, None)

        try:
            with observing(call.ctx), watching(self._watch(call)):
                (it, first), retries = await acall_with_retries(
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
                item = await anext(it, None)
        except GeneratorExit:
            await _aclose(it)
            self._closed_early(call, retries, received)
            raise
        except Exception as exc:
            await _aclose(it)
            error = self._fail(call, exc, retries, received="".join(received))
            raise error from error.__cause__
        yield self._stream_end(call, item, retries, received)


def _message(error: BaseException) -> str:
    """An error as recorded: its type and text, escaped where it is not valid Unicode."""
    message = f"{type(error).__name__}: {error}"
    if text_problem(message) is not None:  # a provider's message may hold anything
        message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return message


async def _from_thread(adapter: Adapter, request: Request) -> AsyncIterator[Chunk | Response]:
    """An adapter's sync stream, each step run in a worker thread."""
    it = iter(adapter.stream(request))
    done = object()
    try:
        while True:
            item = await asyncio.to_thread(next, it, done)
            if item is done:
                return
            yield item  # type: ignore[misc]
    finally:
        _close(it)


def _whole(response: Response) -> Iterator[Chunk | Response]:
    """A whole answer as a stream: its text as one chunk, then the response."""
    if response.text:
        yield Chunk(response.text)
    yield response


def _sync_iter(adapter: Adapter, request: Request) -> Iterator[Chunk | Response]:
    """The adapter's stream; an adapter with only ``complete`` answers as one chunk."""
    stream = getattr(adapter, "stream", None)
    if stream is None:
        return _whole(adapter.complete(request))
    return iter(stream(request))


async def _awhole(adapter: Adapter, request: Request) -> AsyncIterator[Chunk | Response]:
    """``_whole`` over asyncio: the adapter's ``acomplete``, else ``complete`` in a thread."""
    acomplete = getattr(adapter, "acomplete", None)
    if acomplete is not None:
        response: Response = await acomplete(request)
    else:
        response = await asyncio.to_thread(adapter.complete, request)
    for item in _whole(response):
        yield item


def _aiter(adapter: Adapter, request: Request) -> AsyncIterator[Chunk | Response]:
    astream = getattr(adapter, "astream", None)
    if astream is not None:
        result: AsyncIterator[Chunk | Response] = astream(request)
        return result
    if getattr(adapter, "stream", None) is None:
        return _awhole(adapter, request)
    return _from_thread(adapter, request)


def _close(it: Iterator[Any]) -> None:
    close = getattr(it, "close", None)
    if callable(close):
        close()


async def _aclose(it: AsyncIterator[Any]) -> None:
    aclose = getattr(it, "aclose", None)
    if callable(aclose):
        await aclose()
