"""``ReplayLLM``: answer a re-executed run with the completions a recorded run got.

A recorded run is a regression test only if the model is taken out of it.
``ReplayLLM.from_session(iri)`` reads every completion recorded in a session's
graph (request hash, prompt, reply, token counts, cost) and answers each new
request with the reply recorded for the same canonical request hash
(``trails.llm.request_hash``: model, messages, parameters). It fails closed:
a request the recording does not hold raises ``ReplayMismatch`` naming the
planner step that asked, the nearest recorded request and the first message
that differs, so a changed prompt, tool catalogue or observation is caught
where it first changes what the model would have seen. A completion that
failed when recorded fails again, with the same message.

Identical requests recorded more than once are answered in recorded order;
the last answer is reused after that. Replies carry the recorded token counts
and cost, so budgets stop a re-executed run where they stopped the original.
A structured call's response format is part of its request hash: asked in the
recorded form it gets the recorded answers (an ``invalid`` one again, so the
validation retries repeat), asked in another it is a ``ReplayMismatch`` whose
first difference is the parameters.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict, deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trails.errors import ContentErased, ModelAPIError, ReplayMismatch, SessionError
from trails.kernel.context import Context
from trails.llm.cache import request_hash, request_params_of
from trails.llm.catalogue import ModelSpec
from trails.llm.client import LLMClient, Prompt
from trails.llm.envelope import Call
from trails.llm.retry import RetryPolicy
from trails.llm.structured import OutputFormat
from trails.llm.types import Chunk, Request, Response, ToolCall, ToolSpec
from trails.prov.content import erasure_of
from trails.prov.iri import Minter
from trails.prov.projection import find_projection
from trails.prov.vocab import PROV, T
from trails.store import default_store
from trails.store.base import Store, ask, select
from trails.store.terms import IRI, Term, to_python

__all__ = [
    "RecordedCompletion",
    "ReplayAdapter",
    "ReplayLLM",
    "recorded_completions",
    "resolve_session",
]

_COMPLETIONS = f"""
SELECT ?g ?a ?hash ?status ?error ?text ?prompt ?provider ?model ?in ?out ?cr ?cw ?usd ?step
       ?started
WHERE {{
  GRAPH ?g {{
    ?a a {T.LLMCompletion.n3()} ;
       {T.inSession.n3()} ?g ;
       {T.requestHash.n3()} ?hash ;
       {T.status.n3()} ?status ;
       {PROV.startedAtTime.n3()} ?started ;
       {PROV.used.n3()} ?p ;
       {PROV.wasAssociatedWith.n3()} ?m .
    ?p a {T.Prompt.n3()} .
    ?m a {T.Model.n3()} ; {T.provider.n3()} ?provider ; {T.modelId.n3()} ?model .
    OPTIONAL {{ GRAPH ?cg1 {{ ?p {PROV.value.n3()} ?prompt }} }}
    OPTIONAL {{
      ?c {PROV.wasGeneratedBy.n3()} ?a ; a {T.Completion.n3()} .
      OPTIONAL {{ GRAPH ?cg2 {{ ?c {PROV.value.n3()} ?text }} }}
    }}
    OPTIONAL {{ GRAPH ?errorMessageGraph1 {{ ?a {T.errorMessage.n3()} ?error }} }}
    OPTIONAL {{ ?a {T.inputTokens.n3()} ?in }}
    OPTIONAL {{ ?a {T.outputTokens.n3()} ?out }}
    OPTIONAL {{ ?a {T.cacheReadTokens.n3()} ?cr }}
    OPTIONAL {{ ?a {T.cacheWriteTokens.n3()} ?cw }}
    OPTIONAL {{ ?a {T.costUSD.n3()} ?usd }}
    OPTIONAL {{ ?a {T.stepIndex.n3()} ?step }}
    # the calls as their callers saw them: not the failed attempts of a fallback chain
    # inside a call (a switch or the call's own completion follows each), not a call a
    # budget refused (nothing was asked)
    FILTER NOT EXISTS {{
      ?after {PROV.wasInformedBy.n3()} ?a .
      {{ ?after a {T.ProviderFallback.n3()} }} UNION {{ ?after a {T.LLMCompletion.n3()} }}
    }}
    FILTER (?status != "refused")
  }}
}} ORDER BY ?started ?a
"""

_TOOL_CALLS = f"""
SELECT ?g ?a ?r ?value WHERE {{
  GRAPH ?g {{
    ?r a {T.ToolCallRequest.n3()} ; {PROV.wasGeneratedBy.n3()} ?a .
  }}
  GRAPH ?cg {{ ?r {PROV.value.n3()} ?value }}
}}
"""

_IS_SESSION = f"ASK {{ GRAPH ?iri {{ ?iri a {T.Session.n3()} }} }}"

_ERROR_PREFIX = re.compile(r"^[A-Za-z_][\w.]*: ")


@dataclass(frozen=True)
class RecordedCompletion:
    """One recorded completion, as the replay needs it.

    Attributes:
        activity: the completion activity IRI.
        position: its index among the session's completions (oldest first).
        request_hash: its canonical request hash.
        status: ``ok``, ``invalid`` (a structured answer that failed validation) or ``error``.
        text: the reply (None when it failed).
        error: the recorded error (``"<Type>: <message>"``) when it failed.
        messages: the request's messages as dicts (empty when only hashes were recorded).
        params: the request's parameters.
        provider: the recorded provider.
        model: the recorded model id.
        input_tokens: prompt tokens.
        output_tokens: completion tokens.
        cache_read_tokens: cached prompt tokens read.
        cache_write_tokens: prompt tokens written to the cache.
        usd: the recorded cost, when known.
        step: the planner step index, when recorded.
        tool_calls: the tool calls the model asked for (native tool calling).
    """

    activity: str
    position: int
    request_hash: str
    status: str
    text: str | None
    error: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    provider: str = ""
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    usd: float | None = None
    step: int | None = None
    has_prompt: bool = True
    tool_calls: tuple[ToolCall, ...] = ()


def resolve_session(iri: str, store: Store) -> IRI:
    """The session IRI behind ``iri``: a persisted graph, a projected session, or a session graph.

    Args:
        iri: a graph a session was persisted into, or a session IRI.
        store: the store.

    Returns:
        The session IRI (which names its provenance graph).

    Raises:
        SessionError: ``iri`` names no session (the message says what is missing).
    """
    try:
        return find_projection(store, iri)[1]
    except SessionError:
        try:
            target = IRI(iri)
        except (TypeError, ValueError):
            raise
        if ask(store, _IS_SESSION, {"iri": target}):
            return target
        raise


def _py(row: Mapping[str, Term], name: str) -> Any:
    term = row.get(name)
    return None if term is None else to_python(term)


def recorded_completions(store: Store, session: str) -> list[RecordedCompletion]:
    """Every completion recorded in a session's graph, oldest first.

    Args:
        store: the store.
        session: the session IRI.

    Returns:
        The completions.
    """
    out: list[RecordedCompletion] = []
    calls = _tool_calls(store, session)
    for i, row in enumerate(select(store, _COMPLETIONS, {"g": IRI.trusted(session)})):
        prompt = _py(row, "prompt")
        body: dict[str, Any] = json.loads(prompt) if prompt is not None else {}
        out.append(
            RecordedCompletion(
                activity=str(_py(row, "a")),
                position=i,
                request_hash=str(_py(row, "hash")),
                status=str(_py(row, "status")),
                text=_py(row, "text"),
                error=_py(row, "error"),
                messages=list(body.get("messages", [])),
                params=dict(body.get("params", {})),
                provider=str(_py(row, "provider")),
                model=str(_py(row, "model")),
                input_tokens=int(_py(row, "in") or 0),
                output_tokens=int(_py(row, "out") or 0),
                cache_read_tokens=int(_py(row, "cr") or 0),
                cache_write_tokens=int(_py(row, "cw") or 0),
                usd=None if _py(row, "usd") is None else float(_py(row, "usd")),
                step=_py(row, "step"),
                has_prompt=prompt is not None,
                tool_calls=calls.get(str(_py(row, "a")), ()),
            )
        )
    return out


def _tool_calls(store: Store, session: str) -> dict[str, tuple[ToolCall, ...]]:
    """The recorded tool calls of each completion of a session, in the order asked."""
    found: dict[str, list[tuple[int, ToolCall]]] = defaultdict(list)
    for row in select(store, _TOOL_CALLS, {"g": IRI.trusted(session)}):
        call = json.loads(str(_py(row, "value")))
        index = str(_py(row, "r")).rsplit(":toolcall", 1)[-1]
        found[str(_py(row, "a"))].append(
            (
                int(index) if index.isdigit() else 0,
                ToolCall(str(call["id"]), str(call["name"]), dict(call.get("arguments") or {})),
            )
        )
    return {a: tuple(c for _, c in sorted(pairs, key=lambda p: p[0])) for a, pairs in found.items()}


def _clip(text: str, at: int, width: int = 120) -> str:
    start = max(0, at - width // 2)
    piece = text[start : start + width]
    return ("..." if start else "") + piece + ("..." if start + width < len(text) else "")


def _first_difference(
    recorded: RecordedCompletion, model: str, messages: list[dict[str, Any]], params: dict[str, Any]
) -> str:
    for i, (old, new) in enumerate(zip(recorded.messages, messages, strict=False)):
        if old == new:
            continue
        if old.get("role") != new.get("role"):
            return f"message #{i}: recorded role {old.get('role')!r}, now {new.get('role')!r}"
        a, b = str(old.get("content", "")), str(new.get("content", ""))
        at = next(
            (k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        if a == b:
            return f"message #{i} ({new.get('role')}): cache flag recorded {old.get('cache', False)}, now {new.get('cache', False)}"
        return (
            f"message #{i} ({new.get('role')}) differs at character {at}: "
            f"recorded {_clip(a, at)!r}, now {_clip(b, at)!r}"
        )
    if len(recorded.messages) != len(messages):
        return f"recorded {len(recorded.messages)} messages, now {len(messages)}"
    if recorded.params != params:
        keys = sorted(
            k for k in {*recorded.params, *params} if recorded.params.get(k) != params.get(k)
        )
        return "parameters differ: " + "; ".join(
            f"{k} recorded {_clip(repr(recorded.params.get(k)), 0, 300)}, "
            f"now {_clip(repr(params.get(k)), 0, 300)}"
            for k in keys
        )
    return f"model: recorded requests hash with another model id, now {model!r}"


def _prefix(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class ReplayAdapter:
    """An adapter answering from recorded completions by request hash (see the module doc).

    Args:
        completions: the recorded completions, oldest first.
        model: the model id requests are made with (and hashed under).
        session: the recorded session IRI (for messages).
    """

    provider = "replay"
    local = True
    accepts_images = True  # matched by their digests in the request hash

    def __init__(
        self, completions: Sequence[RecordedCompletion], *, model: str, session: str
    ) -> None:
        self.model = model
        self.session = session
        self.recorded = list(completions)
        self._by_hash: dict[str, deque[RecordedCompletion]] = defaultdict(deque)
        for c in self.recorded:
            self._by_hash[c.request_hash].append(c)
        self.requests: list[Request] = []
        self.step: int | None = None

    def _nearest(
        self, messages: list[dict[str, Any]], params: dict[str, Any], call: int
    ) -> RecordedCompletion | None:
        best: tuple[int, int, int, int] | None = None
        found = None
        for c in self.recorded:
            if not c.has_prompt:
                continue
            same = _prefix(c.messages, messages)
            score = (
                same,
                int(same == len(c.messages) == len(messages)),  # the very same messages
                int(c.params == params),
                -abs(c.position - call),
            )
            if best is None or score > best:
                best, found = score, c
        return found

    def complete(self, request: Request) -> Response:
        """Answer ``request`` with the recorded reply of the same request hash.

        Raises:
            ReplayMismatch: no recorded completion has this request hash.
            ModelAPIError: the recorded completion failed (the same message).
        """
        call = len(self.requests)
        self.requests.append(request)
        messages = [m.as_dict() for m in request.messages]
        params = request_params_of(request)  # as the envelope hashed it when recording
        key = request_hash(request.model, messages, params)
        queue = self._by_hash.get(key)
        if not queue:
            raise self._mismatch(messages, params, call, request.model)
        recorded = queue[0] if len(queue) == 1 else queue.popleft()
        # an ``invalid`` completion answered, in a form that failed validation: the same
        # answer fails it again, and the envelope asks again as it did when recording
        if recorded.status not in ("ok", "invalid") or recorded.text is None:
            message = _ERROR_PREFIX.sub("", recorded.error or "recorded completion failed", count=1)
            raise ModelAPIError(message, provider=recorded.provider)
        return Response(
            text=recorded.text,
            model=recorded.model,
            input_tokens=recorded.input_tokens,
            output_tokens=recorded.output_tokens,
            cache_read_tokens=recorded.cache_read_tokens,
            cache_write_tokens=recorded.cache_write_tokens,
            usd=recorded.usd,
            provider=recorded.provider,
            stop_reason="tool_use" if recorded.tool_calls else "end_turn",
            tool_calls=recorded.tool_calls,
        )

    def _mismatch(
        self, messages: list[dict[str, Any]], params: dict[str, Any], call: int, model: str
    ) -> ReplayMismatch:
        step = self.step
        where = f"step {step}" if step is not None else "an unknown step"
        nearest = self._nearest(messages, params, call)
        if nearest is None:
            return ReplayMismatch(
                f"replay of session {self.session}: {where} (request #{call}) asked for a "
                "completion the recording does not hold, and the recording has no prompts "
                "to compare with",
                step=step,
            )
        differing = _first_difference(nearest, model, messages, params)
        recorded_step = "" if nearest.step is None else f", step {nearest.step}"
        return ReplayMismatch(
            f"replay of session {self.session}: {where} (request #{call}) asked for a "
            f"completion the recording does not hold; nearest recorded request: "
            f"#{nearest.position} ({nearest.activity}{recorded_step}); first difference: "
            f"{differing}",
            step=step,
            nearest=nearest.activity,
            differing=differing,
        )

    def stream(self, request: Request) -> Iterator[Chunk | Response]:
        """The recorded reply as one chunk, then the response."""
        response = self.complete(request)
        if response.text:
            yield Chunk(response.text)
        yield response


class ReplayLLM(LLMClient):
    """An ``LLMClient`` whose model is a recording (see the module docstring).

    Build it with ``ReplayLLM.from_session(iri)``. Calls are still booked and
    recorded like any other client's, into whatever context the caller passes.
    """

    adapter: ReplayAdapter

    def __init__(self, adapter: ReplayAdapter) -> None:
        super().__init__(adapter, retry=RetryPolicy(max_retries=0, base_delay=0.0))

    @classmethod
    def from_session(
        cls, iri: str, *, store: Store | None = None, model: str | None = None
    ) -> ReplayLLM:
        """A client answering from the completions recorded in session ``iri``.

        Args:
            iri: the session IRI, or the graph it was persisted into.
            store: the store to read (default: the process default store).
            model: the model id requests are made with (default: the recorded
                one whose request hashes match).

        Returns:
            The client.

        Raises:
            SessionError: ``iri`` names no session, the session recorded no
                completion, or it recorded hashes only (nothing to answer with).
        """
        source = store if store is not None else default_store()
        session = resolve_session(iri, source)
        completions = recorded_completions(source, session)
        if not completions:
            raise SessionError(f"session {session} recorded no LLM completion to replay")
        _refuse_erased(source, session, completions)
        if not any(c.has_prompt for c in completions):
            raise SessionError(
                f"session {session} recorded hashes only (record_content = 'hash'): "
                "its completions hold no prompts or replies to replay"
            )
        if not any(c.text is not None for c in completions):
            failed = next((c for c in completions if c.error), None)
            cause = f": {failed.error}" if failed is not None else ""
            raise SessionError(
                f"session {session} has no reply to replay: every completion it recorded "
                f"failed{cause}"
            )
        return cls(
            ReplayAdapter(completions, model=model or _model_of(completions), session=session)
        )

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
        """Every call starts here (``complete``, ``acomplete``, ``stream``, ``astream``,
        each attempt of a structured one): note the caller's step, which a mismatch names."""
        self.adapter.step = None if ctx is None else ctx.step
        return super()._begin(
            messages,
            max_tokens,
            temperature,
            ctx=ctx,
            model=model,
            stop=stop,
            extra=extra,
            tools=tools,
            output=output,
        )


def _refuse_erased(store: Store, session: str, completions: Sequence[RecordedCompletion]) -> None:
    """Fail closed on a completion whose prompt or reply was erased (naming the step)."""
    for c in completions:
        missing = [] if c.has_prompt else ["prompt"]
        if c.text is None and c.status == "ok":
            missing.append("completion")
        for part in missing:
            erased = erasure_of(store, Minter.part(c.activity, part))
            if erased is not None:
                step = f"step {c.step}" if c.step is not None else f"completion #{c.position}"
                raise ContentErased(
                    f"session {session} cannot be replayed: the {part} of {step} "
                    f"({c.activity}) was {erased}"
                )


def _model_of(completions: Sequence[RecordedCompletion]) -> str:
    """The model id the recorded requests were hashed under (checked against a hash)."""
    for c in completions:
        if not c.has_prompt:
            continue
        for candidate in (c.model, *{x.model for x in completions}):
            if request_hash(candidate, c.messages, c.params) == c.request_hash:
                return candidate
    return completions[0].model
