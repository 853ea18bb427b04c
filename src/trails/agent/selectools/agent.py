"""``Agent``: selectools' one-object agent, running trails' ReAct planner with native tools.

A selectools program holds one ``Agent(tools=, provider=, config=, memory=)`` and calls
``run``, ``ask``, ``astream`` or ``batch`` on it. Here each call is a trails run: the
ReAct planner with ``tool_calling="native"`` (the provider says whether the model called a
tool; a reply without a tool call is the final answer, selectools' rule), in a ``Session``
that records every model call, tool call and decision as the rest of trails does. Without
memory each run is a session of its own (selectools: "history is local to each run");
with a ``ConversationMemory`` or a ``session_store`` the agent keeps one session and each
run continues it. ``AgentConfig`` fields become the session's and the planner's keywords;
``result.trace`` is read back from the recorded graph.
"""

from __future__ import annotations

import asyncio
import copy
import json
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from trails.agent.context import Session
from trails.agent.planners import react
from trails.agent.selectools.config import (
    DEFAULT_MODEL,
    AgentAnalytics,
    AgentConfig,
    AgentUsage,
    LinearRetry,
)
from trails.agent.selectools.memory import ConversationMemory, continue_chain
from trails.agent.selectools.observers import Bridge, in_async_run
from trails.agent.selectools.providers import check_provider
from trails.agent.selectools.trace import AgentResult, StreamChunk
from trails.config import load_settings
from trails.errors import UnknownCapability, UserError
from trails.kernel import capability, get_capability, invoke
from trails.llm.client import LLMClient
from trails.llm.types import Message

if TYPE_CHECKING:
    from trails.agent.result import PlanResult
    from trails.agent.selectools.structured import ResponseFormat
    from trails.store.base import Store

__all__ = ["MAX_ITERATIONS_MESSAGE", "REMEMBER", "Agent"]

#: What a run answers when ``max_iterations`` turns ended without a final answer.
MAX_ITERATIONS_MESSAGE = "Maximum iterations ({n}) reached without a final answer."


#: selectools' tool for saving a fact, offered with ``AgentConfig(knowledge_memory=...)``.
REMEMBER = "remember"


def _remember_tool() -> str:
    """Register ``remember`` (once): it learns the fact with ``memory.learn``, a call nested
    in its own, so the memory is recorded as derived from the agent's decision."""
    try:
        get_capability(REMEMBER)
    except UnknownCapability:

        @capability(
            id=REMEMBER,
            description="Save a fact to long-term memory, for this and later conversations.",
        )
        def remember(content: str) -> str:
            invoke("memory.learn", {"content": content})
            return f"Remembered: {content}"

    return REMEMBER


def _tool_id(tool: Any) -> str:
    if isinstance(tool, str):
        return tool
    spec = getattr(tool, "__trails_capability__", None)
    if spec is not None:
        return str(spec.id)
    if isinstance(getattr(tool, "id", None), str) and callable(getattr(tool, "validate", None)):
        return str(tool.id)
    raise UserError(f"Agent tools= takes capability ids or @capability functions, not {tool!r}")


def _split(messages: str | Sequence[Message]) -> tuple[str, list[Message]]:
    """The goal (the last user message) and the messages before it."""
    if isinstance(messages, str):
        return messages, []
    if not isinstance(messages, Sequence) or not messages:
        raise UserError("Agent.run takes a str or a non-empty list of Message")
    listed: list[Message] = [m for m in messages if not isinstance(m, str)]
    if len(listed) != len(messages):
        raise UserError("Agent.run takes a str or a list of Message, not a list of str")
    last = listed[-1]
    if not isinstance(last, Message) or str(last.role) != "user":
        raise UserError("the last message given to Agent.run must be a user Message")
    return last.content, listed[:-1]


def _copy_adapter(adapter: Any, model: str | None, timeout: float | None) -> Any:
    """``adapter`` with the config's model and request timeout, when they differ."""
    changes: dict[str, Any] = {}
    if model is not None and getattr(adapter, "model", model) != model:
        changes["model"] = model
    if timeout is not None and getattr(adapter, "timeout", timeout) != timeout:
        changes["timeout"] = float(timeout)
    http: Any = getattr(adapter, "_http", None)
    seconds = float(timeout) if timeout is not None else None
    http_timeout = seconds is not None and getattr(http, "timeout", seconds) != seconds
    if not changes and not http_timeout:
        return adapter
    new = copy.copy(adapter)
    for key, value in changes.items():
        setattr(new, key, value)
    if http_timeout:  # its HTTP client holds the timeout: a new one, same endpoint and headers
        new._http = type(http)(http.provider, http.base_url, seconds, http._headers)
    return new


class Agent:
    """selectools' ``Agent`` over trails' runtime.

    Args:
        tools: capability ids or ``@capability`` functions the model may call.
        provider: an ``LLMClient`` (``OpenAIProvider()``, ``LocalProvider()`` ... build
            one); default: the configured client (``TRAILS_LLM``).
        config: the ``AgentConfig``.
        memory: a ``ConversationMemory``: the runs continue one conversation.
        principal: whom the agent acts for (default: the configured principal).

    Raises:
        ProviderConfigurationError: the provider's API key is missing.
        UserError: a tool that is neither an id nor a capability, a bad memory.
    """

    def __init__(
        self,
        tools: Sequence[Any] | None = None,
        provider: LLMClient | None = None,
        config: AgentConfig | None = None,
        memory: ConversationMemory | None = None,
        *,
        principal: str | None = None,
    ) -> None:
        self.config = config if config is not None else AgentConfig()
        if not isinstance(self.config, AgentConfig):
            raise UserError(f"Agent config= must be an AgentConfig, not {self.config!r}")
        if memory is not None and not isinstance(memory, ConversationMemory):
            raise UserError(f"Agent memory= must be a ConversationMemory, not {memory!r}")
        if isinstance(tools, str | bytes):
            raise UserError(
                f"Agent tools= must be a list of capability ids or @capability functions, "
                f"not the one string {tools!r}"
            )
        self.tools = list(tools or [])
        self._tool_ids = [_tool_id(t) for t in self.tools]
        if self.config.knowledge_memory is not None and REMEMBER not in self._tool_ids:
            self._tool_ids.append(_remember_tool())
        self.provider = check_provider(provider) if provider is not None else None
        self.memory = memory
        self.principal = principal or load_settings().principal
        self.usage = AgentUsage()
        self.analytics = AgentAnalytics() if self.config.enable_analytics else None
        store = self.config.session_store
        if store is not None and not callable(getattr(store, "query", None)):
            raise UserError(f"AgentConfig session_store= must be a trails Store, not {store!r}")
        if store is not None and not self.config.session_id:
            raise UserError("AgentConfig session_store= needs a session_id= to save under")
        self._store: Store | None = store
        self._session: Session | None = None
        self._current: Session | None = None
        self._fresh = False
        self._bridge = Bridge(
            list(self.config.observers),
            self.config.hooks,
            lambda: self.usage,
            lambda: self.analytics,
            self.config.verbose,
            self._session_of,
        )
        self._live: weakref.WeakSet[Session] = weakref.WeakSet()
        self._client: LLMClient | None = None

    # -- the selectools surface --------------------------------------------------------

    @property
    def name(self) -> str:
        """``config.name`` (default ``"agent"``), recorded as the session's software agent."""
        return self.config.name

    @property
    def total_cost(self) -> float:
        return self.usage.total_cost_usd

    @property
    def total_tokens(self) -> int:
        return self.usage.total_tokens

    def get_usage_summary(self) -> str:
        return str(self.usage)

    def reset_usage(self) -> None:
        self.usage = AgentUsage()

    def get_analytics(self) -> AgentAnalytics | None:
        """Tool usage (``enable_analytics=True``), else None."""
        return self.analytics

    def reset(self) -> None:
        """Forget the conversation: the next run starts a new session with an empty history
        (the old one stays on record; a session store's saved history is not reloaded)."""
        if self._session is not None and self._store is None:
            self._session.close()
        self._session = None
        self._fresh = True
        if self.memory is not None:
            self.memory.clear()

    def __call__(self, messages: str | Sequence[Message], **kwargs: Any) -> AgentResult:
        return self.run(messages, **kwargs)

    def ask(self, prompt: str, **kwargs: Any) -> AgentResult:
        return self.run(prompt, **kwargs)

    async def aask(self, prompt: str, **kwargs: Any) -> AgentResult:
        return await self.arun(prompt, **kwargs)

    # -- runs --------------------------------------------------------------------------

    def run(
        self,
        messages: str | Sequence[Message],
        stream_handler: Callable[[str], None] | None = None,
        response_format: ResponseFormat | None = None,
        parent_run_id: str | None = None,
    ) -> AgentResult:
        """One run: the model and the tools until a reply with no tool call (the answer).

        Returns:
            The ``AgentResult``: the timeout message when ``max_iterations`` ran out,
            ``"Provider error: ..."`` when the provider failed after its retries.

        Raises:
            Whatever else the run raised (an unreachable provider, a bad keyword).
        """
        goal, earlier = _split(messages)
        session, keep = self._open(earlier, parent_run_id)
        options = self._options(response_format)
        try:
            if stream_handler is not None or self.config.stream:
                plan = None
                for event in react.stream(goal, llm=self.client, session=session, **options):
                    if event.kind == "token" and stream_handler is not None:
                        stream_handler(str(event.data.get("text", "")))
                    if event.kind == "run_end":
                        plan = event.data.get("result")
                assert plan is not None
            else:
                plan = react.run(goal, llm=self.client, session=session, **options)
            return self._finish(plan, session, parent_run_id)
        finally:
            self._close(session, keep)

    async def arun(
        self,
        messages: str | Sequence[Message],
        stream_handler: Callable[[str], None] | None = None,
        response_format: ResponseFormat | None = None,
        parent_run_id: str | None = None,
    ) -> AgentResult:
        """``run`` for asyncio; async observers are heard here."""
        token = in_async_run.set(True)
        try:
            goal, earlier = _split(messages)
            session, keep = self._open(earlier, parent_run_id)
            options = self._options(response_format)
            try:
                plan = None
                if stream_handler is not None:
                    async for event in react.astream(
                        goal, llm=self.client, session=session, **options
                    ):
                        if event.kind == "token":
                            stream_handler(str(event.data.get("text", "")))
                        if event.kind == "run_end":
                            plan = event.data.get("result")
                else:
                    plan = await react.arun(goal, llm=self.client, session=session, **options)
                assert plan is not None
                return self._finish(plan, session, parent_run_id)
            finally:
                self._close(session, keep)
        finally:
            in_async_run.reset(token)

    async def astream(
        self,
        messages: str | Sequence[Message],
        response_format: ResponseFormat | None = None,
        parent_run_id: str | None = None,
    ) -> AsyncIterator[StreamChunk | AgentResult]:
        """Each piece of model text as a ``StreamChunk``, then the ``AgentResult``."""
        token = in_async_run.set(True)
        try:
            goal, earlier = _split(messages)
            session, keep = self._open(earlier, parent_run_id)
            options = self._options(response_format)
            try:
                plan = None
                async for event in react.astream(goal, llm=self.client, session=session, **options):
                    if event.kind == "token":
                        yield StreamChunk(str(event.data.get("text", "")))
                    elif event.kind == "run_end":
                        plan = event.data.get("result")
                assert plan is not None
                yield self._finish(plan, session, parent_run_id)
            finally:
                self._close(session, keep)
        finally:
            in_async_run.reset(token)

    def batch(
        self,
        prompts: Sequence[str],
        max_concurrency: int = 5,
        on_progress: Callable[[int, int], None] | None = None,
        response_format: ResponseFormat | None = None,
    ) -> list[AgentResult]:
        """Each prompt in its own session, ``max_concurrency`` at a time, in order; a
        failure is that item's result (``content`` ``"Error: ..."``, ``error`` set)."""
        plans = react.batch(
            list(prompts),
            max_concurrency=max_concurrency,
            on_progress=on_progress,
            principal=self.principal,
            session_options=self._session_options(None),
            llm=self.client,
            **self._options(response_format),
        )
        return [self._batch_item(p) for p in plans]

    async def abatch(
        self,
        prompts: Sequence[str],
        max_concurrency: int = 10,
        on_progress: Callable[[int, int], None] | None = None,
        response_format: ResponseFormat | None = None,
    ) -> list[AgentResult]:
        """``batch`` for asyncio."""
        return await asyncio.to_thread(
            self.batch, prompts, max_concurrency, on_progress, response_format
        )

    # -- the trails run under it -------------------------------------------------------

    @property
    def client(self) -> LLMClient:
        """The agent's client: the provider with the config's model, timeout, retries and cache."""
        if self._client is None:
            cfg = self.config
            base = self.provider
            if base is None:
                from trails.llm.configured import configured_client

                base = configured_client(purpose="Agent has no provider=")
            model = None if cfg.model is DEFAULT_MODEL else cfg.model
            retry = LinearRetry(
                max_retries=cfg.max_retries,
                base_delay=cfg.retry_backoff_seconds,
                jitter=0.0,
                rate_limit_cooldown=cfg.rate_limit_cooldown_seconds,
                sleep=base.retry.sleep,
            )
            self._client = LLMClient(
                _copy_adapter(base.adapter, model, cfg.request_timeout),
                retry=retry,
                response_cache=cfg.cache if cfg.cache is not None else base.response_cache,
                store_cache=base.store_cache,
                catalogue=base.catalogue,
            )
        return self._client

    def _summarizer(self) -> Any:
        cfg = self.config
        if not cfg.summarize_on_trim:
            return None
        owner = self

        def summarize(entries: list[Any]) -> str:
            from trails.agent.evictions import SUMMARY_PROMPT

            client = cfg.summarize_provider or owner.client
            text = "\n".join(f"{e.role}: {e.content}" for e in entries)
            prompt = [Message("system", SUMMARY_PROMPT), Message("user", text)]
            session = owner._current
            ctx = session.context if session is not None and not session.closed else None
            reply = client.complete(
                prompt, ctx=ctx, max_tokens=cfg.summarize_max_tokens, model=cfg.summarize_model
            )
            return str(reply.text)

        return summarize

    def _session_options(self, parent_run_id: str | None) -> dict[str, Any]:
        cfg = self.config
        metadata = dict(cfg.trace_metadata or {})
        parent = parent_run_id or cfg.parent_run_id
        if parent:
            metadata["parent_run_id"] = parent
        options: dict[str, Any] = {
            "name": cfg.name,
            "strategy": "react",
            "observers": [self._bridge],
            "trace_metadata": metadata or None,
            "cost_warning_usd": cfg.cost_warning_threshold,
            "entity_memory": cfg.entity_memory,
            "knowledge_graph": cfg.knowledge_graph,
            "knowledge_memory": cfg.knowledge_memory,
            "summarize_on_trim": self._summarizer(),
        }
        if self._store is not None:
            options["store"] = self._store
        if self.memory is not None:
            options.update(self.memory.session_options())
        return options

    def _build(self, parent_run_id: str | None) -> Callable[[str | None], Session]:
        options = self._session_options(parent_run_id)

        def build(session_id: str | None) -> Session:
            return Session(
                principal=self.principal, llm=self.client, session_id=session_id, **options
            )

        return build

    def _open(self, earlier: list[Message], parent_run_id: str | None) -> tuple[Session, bool]:
        """The session of the next run, and whether the agent keeps it after the run."""
        keep = self.memory is not None or self._store is not None
        if not keep:
            session = self._build(parent_run_id)(None)
        elif self._session is None or self._session.closed:
            if self._store is not None:
                assert self.config.session_id is not None
                session = continue_chain(
                    self._store,
                    self.config.session_id,
                    self.principal,
                    self._build(parent_run_id),
                    load=not self._fresh,
                )
            else:
                session = self._build(parent_run_id)(None)
            self._session = session
        else:
            session = self._session
        if self.memory is not None and self.memory.session is not session:
            self.memory.bind(session)
        for message in earlier:
            role = str(message.role)
            content = message.content if role != "system" else f"System: {message.content}"
            session.history.append("user" if role == "system" else role, content)
        self._current = session
        self._live.add(session)
        self._bridge.hook("on_agent_start", session.history.messages())
        return session, keep

    def _session_of(self, iri: str | None) -> Session | None:
        """The agent's session named ``iri`` (its current one when ``iri`` is None)."""
        if iri is None:
            return self._current
        return next((s for s in list(self._live) if s.iri == iri), self._current)

    def _close(self, session: Session, keep: bool) -> None:
        if keep:
            if self._store is not None:
                session.persist()  # auto-save (a recorded trails:SessionSave)
        else:
            session.close()

    def _options(self, response_format: Any) -> dict[str, Any]:
        cfg = self.config
        options: dict[str, Any] = {
            "tools": list(self._tool_ids),
            "tool_calling": "native",
            "max_steps": cfg.max_iterations,
            "max_tokens_per_call": cfg.max_tokens,
            "temperature": cfg.temperature,
        }
        if not cfg.parallel_tool_execution:
            options["max_parallel_tools"] = 1
        if cfg.tool_timeout_seconds is not None:
            options["tool_timeout_s"] = cfg.tool_timeout_seconds
        if cfg.stop_condition is not None:
            options["stop_condition"] = cfg.stop_condition
        if cfg.routing_only:  # one turn, nothing run: the model's choice is the answer
            options["dry_run"] = True
            options["max_steps"] = 1
        if cfg.tool_policy is not None:
            options["policy"] = cfg.tool_policy
            options["approval_timeout_s"] = cfg.approval_timeout or None
        if cfg.confirm_action is not None:
            options["approver"] = _approver(cfg.confirm_action)
        if response_format is not None:
            options["output_type"] = response_format
        return options

    def _finish(self, plan: PlanResult, session: Session, parent_run_id: str | None) -> AgentResult:
        result = self._result(plan, session.iri, session, parent_run_id)
        self._bridge._tell("on_run_end", plan.activity_iri or "", result)
        self._bridge.hook("on_agent_end", result, self.usage)
        return result

    def _result(
        self,
        plan: PlanResult,
        session_iri: str | None,
        session: Session | None,
        parent_run_id: str | None,
    ) -> AgentResult:
        calls = [
            (s.action, dict(s.action_input or {}))
            for s in plan.steps
            if s.action not in ("finish", "answer", "")
        ]
        turns = len({s.activity_iri or str(i) for i, s in enumerate(plan.steps)}) or 1
        content, parsed = self._content(plan, session)
        store = self._store
        if store is None and session is not None and session.opened:
            store = session.context.store
        if store is None:
            from trails.store import default_store

            store = default_store()
        return AgentResult(
            content=content,
            parsed=parsed,
            iterations=turns,
            tool_calls=calls,
            reasoning=plan.reasoning,
            reasoning_history=plan.reasoning_history,
            run_id=plan.activity_iri,
            session=session_iri,
            plan=plan,
            store=store,
            parent_run_id=parent_run_id or self.config.parent_run_id,
        )

    def _content(self, plan: PlanResult, session: Session | None) -> tuple[str, Any]:
        answer = plan.answer
        chosen = [s for s in plan.steps if s.action not in ("finish", "answer", "")]
        if self.config.routing_only and chosen:
            return chosen[0].action, None
        if plan.stopped == "max_steps" and plan.terminated_by is None:
            return MAX_ITERATIONS_MESSAGE.format(n=self.config.max_iterations), None
        if plan.stopped == "error":
            if self._provider_failed(session):
                return f"Provider error: {plan.error or 'unknown error'}", None
            return f"Error: {plan.error or 'unknown error'}", None
        if answer is None or isinstance(answer, str):
            return str(answer or ""), None
        dump = getattr(answer, "model_dump_json", None)
        return (dump() if callable(dump) else json.dumps(answer, default=str)), answer

    @staticmethod
    def _provider_failed(session: Session | None) -> bool:
        """Whether the run's last model call failed (read from the recorded graph)."""
        if session is None or not session.opened:
            return False
        from trails.agent.selectools.trace import read_trace

        steps = read_trace(session.context.store, str(session.iri), None).steps
        calls = [s for s in steps if s.recorded == "LLMCompletion"]
        return bool(calls) and calls[-1].status == "error"

    def _batch_item(self, item: PlanResult | Exception) -> AgentResult:
        if isinstance(item, Exception):
            from trails.agent.result import PlanResult

            failed = PlanResult(answer=None, steps=[], stopped="error", error=str(item))
            result = self._result(failed, None, None, None)
            result.content = f"Error: {item}"
            result.error = item
            return result
        return self._result(item, None, None, None)


def _approver(confirm: Callable[..., Any]) -> Callable[..., Any]:
    """selectools' ``confirm_action(tool_name, tool_args, reason)`` as a trails approver."""
    if asyncio.iscoroutinefunction(confirm):

        async def approve_async(spec: Any, args: Any, reason: str) -> Any:
            return await confirm(spec.id, dict(args or {}), reason)

        return approve_async

    def approve(spec: Any, args: Any, reason: str) -> Any:
        return confirm(spec.id, dict(args or {}), reason)

    return approve
