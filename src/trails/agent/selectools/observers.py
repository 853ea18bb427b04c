"""selectools' observers and hooks, heard from trails' lifecycle events.

A selectools observer writes ``on_tool_end(self, run_id, call_id, tool_name, result,
duration_ms)``; a trails observer gets one ``ObserverEvent``. ``Bridge`` is the one trails
observer an ``Agent`` attaches to its runs: it turns each event into the seed's call, with
the seed's arguments, for every ``AgentObserver`` / ``AsyncAgentObserver`` in
``AgentConfig(observers=...)``, for the deprecated ``hooks`` dict, for the usage
counters and for analytics. The events are the same moments the graph records, so what an
observer hears and what an auditor reads agree.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from trails.agent.selectools.config import AgentAnalytics, AgentUsage, UsageStats
from trails.kernel.observe import ObserverEvent

if TYPE_CHECKING:
    from trails.agent.context import Session

__all__ = ["AgentObserver", "AsyncAgentObserver", "Bridge", "LoggingObserver", "in_async_run"]

log = logging.getLogger("trails.agent")

#: True inside ``arun`` / ``astream``: async observers are heard there only, as the seed says.
in_async_run: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "trails_selectools_async", default=False
)


class AgentObserver:
    """selectools' observer: override the ``on_*`` methods you need (all do nothing here).

    Every method gets the ``run_id`` first (the run's activity IRI in the graph; a batch's
    id for the batch events), tool methods a ``call_id`` (the invocation's activity IRI).
    """

    def on_run_start(self, run_id: str, messages: list[Any], system_prompt: str) -> None: ...
    def on_run_end(self, run_id: str, result: Any) -> None: ...
    def on_error(self, run_id: str, error: Any, context: dict[str, Any]) -> None: ...
    def on_llm_start(
        self, run_id: str, messages: list[Any], model: str, system_prompt: str
    ) -> None: ...
    def on_llm_end(self, run_id: str, response: Any, usage: UsageStats) -> None: ...
    def on_cache_hit(self, run_id: str, model: str, response: Any) -> None: ...
    def on_usage(self, run_id: str, usage: UsageStats) -> None: ...
    def on_llm_retry(
        self, run_id: str, attempt: int, max_retries: int, error: Any, backoff_seconds: float
    ) -> None: ...
    def on_tool_start(
        self, run_id: str, call_id: str, tool_name: str, tool_args: dict[str, Any]
    ) -> None: ...
    def on_tool_end(
        self, run_id: str, call_id: str, tool_name: str, result: Any, duration_ms: float
    ) -> None: ...
    def on_tool_error(
        self,
        run_id: str,
        call_id: str,
        tool_name: str,
        error: Any,
        tool_args: dict[str, Any],
        duration_ms: float,
    ) -> None: ...
    def on_tool_chunk(self, run_id: str, call_id: str, tool_name: str, chunk: Any) -> None: ...
    def on_iteration_start(self, run_id: str, iteration: int, messages: list[Any]) -> None: ...
    def on_iteration_end(self, run_id: str, iteration: int, response: Any) -> None: ...
    def on_batch_start(self, batch_id: str, prompts_count: int) -> None: ...
    def on_batch_end(
        self, batch_id: str, results_count: int, errors_count: int, total_duration_ms: float
    ) -> None: ...
    def on_policy_decision(
        self, run_id: str, tool_name: str, decision: str, reason: str, tool_args: dict[str, Any]
    ) -> None: ...
    def on_structured_validate(
        self, run_id: str, success: bool, attempt: int, error: str | None
    ) -> None: ...
    def on_provider_fallback(
        self, run_id: str, failed_provider: str, next_provider: str, error: Any
    ) -> None: ...
    def on_memory_trim(
        self, run_id: str, messages_removed: int, messages_remaining: int, reason: str
    ) -> None: ...
    def on_memory_summarize(self, run_id: str, summary: str, messages_summarized: int) -> None: ...
    def on_session_load(self, run_id: str, session_id: str, message_count: int) -> None: ...
    def on_session_save(self, run_id: str, session_id: str, message_count: int) -> None: ...
    def on_entity_extraction(self, run_id: str, entities: list[Any], turn_count: int) -> None: ...
    def on_budget(self, run_id: str, reason: str, limit: Any, observed: Any) -> None: ...


class AsyncAgentObserver:
    """selectools' async observer: ``async def a_on_<event>(...)`` with the sync arguments.

    ``blocking = True``: each call is awaited before the run goes on; ``False`` (the
    default): it is scheduled on the run's loop, fire and forget. Heard in ``arun`` and
    ``astream`` only.
    """

    blocking: bool = False


class LoggingObserver(AgentObserver):
    """selectools' ``LoggingObserver``: trails' JSON-line logger of every event
    (``trails.kernel.observe.LoggingObserver``, logger ``trails.events``)."""

    def __init__(self, level: int = logging.INFO, logger: str = "trails.events") -> None:
        from trails.kernel.observe import LoggingObserver as Lines

        self.lines = Lines(level=level, logger=logger)


#: The deprecated hooks a hooks dict may hold, and the seed method each one mirrors.
HOOKS = (
    "on_agent_start",
    "on_agent_end",
    "on_iteration_start",
    "on_iteration_end",
    "on_tool_start",
    "on_tool_chunk",
    "on_tool_end",
    "on_tool_error",
    "on_llm_start",
    "on_llm_end",
    "on_error",
)


class Bridge:
    """The trails observer of one agent: each event as the seed's observer calls and hooks.

    Args:
        observers: ``AgentConfig.observers``.
        hooks: ``AgentConfig.hooks`` (deprecated; warned about once, at construction).
        usage: the agent's usage counter.
        analytics: the agent's analytics, or None.
        verbose: print a line per model call, tool call and cache hit.
        session: a function returning the agent's session of a session IRI (None: unknown).
    """

    def __init__(
        self,
        observers: list[Any],
        hooks: Mapping[str, Callable[..., Any]] | None,
        usage: Callable[[], AgentUsage],
        analytics: Callable[[], AgentAnalytics | None],
        verbose: bool,
        session: Callable[[str | None], Session | None],
    ) -> None:
        if hooks:
            warnings.warn(
                "AgentConfig(hooks=...) is deprecated: use AgentConfig(observers=[...])",
                DeprecationWarning,
                stacklevel=4,
            )
        self.observers = list(observers)
        self.lines = [o.lines for o in self.observers if isinstance(o, LoggingObserver)]
        self.hooks = dict(hooks or {})
        self.usage = usage
        self.analytics = analytics
        self.verbose = verbose
        self.session = session
        self.iterations: dict[str, int] = {}
        self._here = threading.local()  # the session IRI of the event being delivered

    # -- delivery ----------------------------------------------------------------------

    def _tell(self, method: str, *args: Any) -> None:
        for obs in self.observers:
            if isinstance(obs, AsyncAgentObserver):
                self._tell_async(obs, method, args)
                continue
            handler = getattr(obs, method, None)
            if handler is None:
                continue
            try:
                handler(*args)
            except Exception:  # an observer never breaks a run
                log.warning("observer %r raised in %s; ignored", obs, method, exc_info=True)

    def _tell_async(self, obs: AsyncAgentObserver, method: str, args: tuple[Any, ...]) -> None:
        handler = getattr(obs, f"a_{method}", None)
        if handler is None or not in_async_run.get():
            return
        from trails.kernel.observe import _home

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        try:
            if loop is not None:  # on the run's loop: a task (it cannot wait on itself)
                loop.create_task(handler(*args))
            elif (home := _home.get()) is not None and home.is_running():
                future = asyncio.run_coroutine_threadsafe(handler(*args), home)
                if obs.blocking:
                    future.result(timeout=60)
            else:
                asyncio.run(handler(*args))
        except Exception:
            log.warning("async observer %r raised in %s; ignored", obs, method, exc_info=True)

    def hook(self, name: str, *args: Any) -> None:
        """Call the deprecated hook ``name`` with the seed's arguments (errors ignored)."""
        fn = self.hooks.get(name)
        if fn is None:
            return
        try:
            fn(*args)
        except Exception:
            log.warning("hook %s raised; ignored", name, exc_info=True)

    def _say(self, text: str) -> None:
        if self.verbose:
            print(f"[agent] {text}")

    # -- events ------------------------------------------------------------------------

    def on_event(self, event: ObserverEvent) -> None:
        for lines in self.lines:
            lines.on_event(event)
        handler = getattr(self, f"_{event.kind}", None)
        if handler is not None:
            self._here.iri = event.session
            handler(event.run_id or "", event.call_id or "", event.data)

    def _session(self) -> Session | None:
        """The agent's session the event being delivered belongs to."""
        return self.session(getattr(self._here, "iri", None))

    def _messages(self) -> tuple[list[Any], str]:
        session = self._session()
        if session is None:
            return [], ""
        messages = session.history.messages()
        system = next((m.content for m in messages if m.role == "system"), "")
        return messages, system

    @property
    def listening(self) -> bool:
        """Whether any observer or hook hears the seed's calls (else only usage is counted)."""
        return bool(self.observers or self.hooks)

    def _run_start(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        self.iterations[run_id] = 0
        if not self.listening:
            return
        messages, system = self._messages()
        self._tell("on_run_start", run_id, messages, system)

    def _run_end(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        self.iterations.pop(run_id, None)

    def _error(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        context = {"goal": data.get("goal"), "strategy": data.get("strategy")}
        self._tell("on_error", run_id, data.get("error"), context)
        self.hook("on_error", data.get("error"), context)

    def _llm_start(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        if not self.listening:
            if run_id:
                self.iterations[run_id] = self.iterations.get(run_id, 0) + 1
            return
        messages, system = self._messages()
        model = str(data.get("model", ""))
        if run_id:
            iteration = self.iterations[run_id] = self.iterations.get(run_id, 0) + 1
            self._tell("on_iteration_start", run_id, iteration, messages)
            self.hook("on_iteration_start", iteration, messages)
        self._tell("on_llm_start", run_id, messages, model, system)
        self.hook("on_llm_start", messages, model)

    def _llm_end(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        usage = UsageStats(
            prompt_tokens=int(data.get("input_tokens") or 0),
            completion_tokens=int(data.get("output_tokens") or 0),
            cost_usd=float(data.get("usd") or 0.0),
            model=str(data.get("model", "")),
        )
        if data.get("status") != "error":
            self.usage().add_usage(usage)
        response = data.get("error") if data.get("status") == "error" else data.get("status")
        self._tell("on_llm_end", run_id, response, usage)
        self._tell("on_usage", run_id, usage)
        self.hook("on_llm_end", response, usage)
        self._say(
            f"llm {usage.model}: {usage.prompt_tokens}+{usage.completion_tokens} tokens, "
            f"${usage.cost_usd:.6f}"
        )

    def _cache_hit(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        self._tell("on_cache_hit", run_id, data.get("model"), None)
        self._say("cache hit -- skipping provider call")

    def _llm_retry(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        self._tell(
            "on_llm_retry",
            run_id,
            data.get("attempt"),
            data.get("max_retries"),
            data.get("error"),
            data.get("delay_s"),
        )

    def _tool_start(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        args = dict(data.get("args") or {})
        self._tell("on_tool_start", run_id, call_id, data.get("capability"), args)
        self.hook("on_tool_start", data.get("capability"), args)
        self._say(f"tool {data.get('capability')} {args}")

    def _args_of(self, call_id: str) -> dict[str, Any]:
        session = self._session()
        for record in reversed(session.invocations if session is not None else []):
            if str(record.activity) == call_id:
                return dict(record.args or {})
        return {}

    def _tool_end(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        name, ms = data.get("capability"), float(data.get("duration_ms") or 0.0)
        result = data.get("result")
        self._tell("on_tool_end", run_id, call_id, name, result, ms)
        self.hook("on_tool_end", name, result, ms / 1000.0)
        if (analytics := self.analytics()) is not None:
            analytics.record(str(name), ok=True, duration_ms=ms)

    def _tool_error(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        name, ms = data.get("capability"), float(data.get("duration_ms") or 0.0)
        args = self._args_of(call_id)
        self._tell("on_tool_error", run_id, call_id, name, data.get("error"), args, ms)
        self.hook("on_tool_error", name, data.get("error"), args)
        if (analytics := self.analytics()) is not None:
            analytics.record(str(name), ok=False, duration_ms=ms)

    def _tool_chunk(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        self._tell("on_tool_chunk", run_id, call_id, data.get("capability"), data.get("chunk"))
        self.hook("on_tool_chunk", data.get("capability"), data.get("chunk"))

    def _step_end(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        step = data.get("step")
        response = getattr(step, "observation", None) or getattr(step, "thought", None)
        iteration = self.iterations.get(run_id, 0)
        self._tell("on_iteration_end", run_id, iteration, response)
        self.hook("on_iteration_end", iteration, response)

    def _batch_start(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        self._tell("on_batch_start", data.get("batch_id"), data.get("prompts_count"))

    def _batch_end(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        self._tell(
            "on_batch_end",
            data.get("batch_id"),
            data.get("results_count"),
            data.get("errors_count"),
            data.get("total_duration_ms"),
        )

    def _policy_decision(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        args = dict(data.get("args") or {})
        self._tell(
            "on_policy_decision",
            run_id,
            data.get("capability"),
            data.get("decision"),
            data.get("reason"),
            args,
        )

    def _structured_validate(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        self._tell(
            "on_structured_validate",
            run_id,
            data.get("success"),
            data.get("attempt"),
            data.get("error"),
        )

    def _fallback(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        failed, nxt, error = data.get("failed"), data.get("next"), data.get("error")
        self._tell("on_provider_fallback", run_id, failed, nxt, error)

    def _budget(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        reason, limit, seen = data.get("reason"), data.get("limit"), data.get("observed")
        self._tell("on_budget", run_id, reason, limit, seen)

    def _history_trim(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        session = self._session()
        remaining = len(session.history) if session is not None else 0
        removed = int(data.get("evicted") or 0)
        self._tell("on_memory_trim", run_id, removed, remaining, "window")
        if data.get("summarized"):
            self._tell("on_memory_summarize", run_id, data.get("summary") or "", removed)

    def _session_save(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        sid, count = data.get("session_id"), data.get("message_count")
        self._tell("on_session_save", run_id, sid, count)

    def _session_load(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        sid, count = data.get("session_id"), data.get("message_count")
        self._tell("on_session_load", run_id, sid, count)

    def _entity_extraction(self, run_id: str, call_id: str, data: Mapping[str, Any]) -> None:
        entities, turns = list(data.get("entities") or []), data.get("turn_count")
        self._tell("on_entity_extraction", run_id, entities, turns)
