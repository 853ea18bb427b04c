"""``AgentConfig``, ``Role`` and the usage counters of a selectools-shaped ``Agent``.

selectools users configure an agent with one ``AgentConfig`` dataclass; this module keeps
its field names and defaults as seed 002 writes them, so their configurations run
unchanged. ``Agent`` (``trails.agent.selectools.agent``) maps each field onto the trails
run it starts: the session's keywords, the planner's keywords and the client's retry
policy. ``LinearRetry`` is selectools' retry rule (a linear backoff, a longer cooldown
after a rate limit) as a trails ``RetryPolicy``, so each attempt is still a recorded
completion. ``AgentUsage`` and ``AgentAnalytics`` count what the agent's runs reported.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trails.errors import UserError
from trails.kernel.policy import RulePolicy
from trails.llm.cache import ResponseCache
from trails.llm.errors import ModelRateLimitError
from trails.llm.retry import RetryPolicy

__all__ = [
    "DEFAULT_MODEL",
    "AgentAnalytics",
    "AgentConfig",
    "AgentUsage",
    "InMemoryCache",
    "LinearRetry",
    "Role",
    "ToolPolicy",
    "UsageStats",
    "is_rate_limit",
]

#: selectools' ``ToolPolicy(allow=, review=, deny=, deny_when=)``: trails' ``RulePolicy``.
ToolPolicy = RulePolicy


class InMemoryCache(ResponseCache):
    """selectools' ``InMemoryCache(max_size=1000, default_ttl=300)``: trails' LRU + TTL
    ``ResponseCache`` (answers kept per principal; ``cache.stats`` as selectools')."""

    def __init__(self, max_size: int = 1000, default_ttl: float | None = 300) -> None:
        super().__init__(max_size=max_size, ttl_seconds=default_ttl)


class Role(enum.StrEnum):
    """A message's role, as selectools names them (``Role.USER == "user"``)."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class _DefaultModel(str):
    """``"gpt-5-mini"`` that also says "nobody chose it" (compared by identity)."""

    __slots__ = ()


#: ``AgentConfig.model``'s default, as the seed writes it. Left as it is, the agent's
#: provider answers with its own model (a mock, a local Ollama model ...).
DEFAULT_MODEL: str = _DefaultModel("gpt-5-mini")


@dataclass
class AgentConfig:
    """Every ``AgentConfig`` field of seed 002, with its name and default.

    ``max_tokens`` caps **one reply** (the run's token budget stays ``max_tokens=`` of
    ``react.run``); ``max_iterations`` caps the model turns of a run. See docs/agent.md
    ("The selectools Agent") for what each field does in trails.
    """

    name: str = "agent"
    model: str = DEFAULT_MODEL
    temperature: float = 0.0
    max_tokens: int = 1000
    max_iterations: int = 6
    max_retries: int = 2
    retry_backoff_seconds: float = 1.0
    rate_limit_cooldown_seconds: float = 5.0
    request_timeout: float | None = 30.0
    tool_timeout_seconds: float | None = None
    cost_warning_threshold: float | None = None
    verbose: bool = False
    enable_analytics: bool = False
    hooks: Mapping[str, Callable[..., Any]] | None = None
    observers: list[Any] = field(default_factory=list)
    routing_only: bool = False
    parallel_tool_execution: bool = True
    stream: bool = False
    cache: Any = None
    tool_policy: Any = None
    confirm_action: Callable[..., Any] | None = None
    approval_timeout: float = 60.0
    stop_condition: Callable[[str, str], bool] | None = None
    session_store: Any = None
    session_id: str | None = None
    summarize_on_trim: bool = False
    summarize_provider: Any = None
    summarize_model: str | None = None
    summarize_max_tokens: int = 150
    entity_memory: Any = None
    knowledge_graph: Any = None
    knowledge_memory: Any = None
    parent_run_id: str | None = None
    trace_metadata: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for key in ("max_tokens", "max_iterations", "summarize_max_tokens"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"AgentConfig {key}= must be an int >= 1, not {value!r}")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int):
            raise UserError(f"AgentConfig max_retries= must be an int, not {self.max_retries!r}")
        if self.max_retries < 0:
            raise UserError(f"AgentConfig max_retries= must be >= 0, not {self.max_retries}")
        for key in ("retry_backoff_seconds", "rate_limit_cooldown_seconds", "approval_timeout"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise UserError(f"AgentConfig {key}= must be a number >= 0, not {value!r}")
        if self.hooks is not None and not isinstance(self.hooks, Mapping):
            raise UserError(f"AgentConfig hooks= must be a dict of callables, not {self.hooks!r}")
        if not isinstance(self.name, str) or not self.name.strip():
            raise UserError(f"AgentConfig name= must be a non-empty str, not {self.name!r}")
        self._check_types()

    def _check_types(self) -> None:
        """The other fields' types, each refused with one line naming the field."""
        if not isinstance(self.model, str) or not self.model.strip():
            raise UserError(f"AgentConfig model= must be a non-empty str, not {self.model!r}")
        temperature = self.temperature
        if isinstance(temperature, bool) or not isinstance(temperature, int | float):
            raise UserError(f"AgentConfig temperature= must be a number >= 0, not {temperature!r}")
        if temperature < 0:
            raise UserError(f"AgentConfig temperature= must be a number >= 0, not {temperature!r}")
        for key in ("request_timeout", "tool_timeout_seconds", "cost_warning_threshold"):
            value = getattr(self, key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or value <= 0
            ):
                raise UserError(f"AgentConfig {key}= must be a number > 0 or None, not {value!r}")
        if not isinstance(self.observers, list | tuple):
            raise UserError(
                f"AgentConfig observers= must be a list of observers, not {self.observers!r}"
            )
        if self.trace_metadata is not None and not isinstance(self.trace_metadata, Mapping):
            raise UserError(
                f"AgentConfig trace_metadata= must be a dict, not {self.trace_metadata!r}"
            )
        for key in ("session_id", "parent_run_id", "summarize_model"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise UserError(
                    f"AgentConfig {key}= must be a non-empty str or None, not {value!r}"
                )
        if self.confirm_action is not None and not callable(self.confirm_action):
            raise UserError(
                "AgentConfig confirm_action= must be a function (tool_name, tool_args, reason), "
                f"not {self.confirm_action!r}"
            )
        for key in (
            "verbose",
            "enable_analytics",
            "routing_only",
            "parallel_tool_execution",
            "stream",
            "summarize_on_trim",
        ):
            value = getattr(self, key)
            if not isinstance(value, bool):
                raise UserError(f"AgentConfig {key}= must be True or False, not {value!r}")


def is_rate_limit(error: BaseException) -> bool:
    """selectools' rate-limit test: a 429, or "rate limit" / "429" in the message."""
    if isinstance(error, ModelRateLimitError):
        return True
    lowered = str(error).lower()
    return "rate limit" in lowered or "429" in lowered


@dataclass(frozen=True)
class LinearRetry(RetryPolicy):
    """selectools' retries: wait ``base_delay × attempt``, plus ``rate_limit_cooldown ×
    attempt`` after a rate limit (no jitter). Which failures are retried, and the record of
    each attempt, are trails' (``trails.llm.retry``)."""

    rate_limit_cooldown: float = 5.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        return self.base_delay * attempt

    def wait(self, error: BaseException, attempt: int) -> float:
        wait = self.base_delay * attempt
        if is_rate_limit(error):
            wait += self.rate_limit_cooldown * attempt
        return wait


@dataclass(frozen=True)
class UsageStats:
    """One model call's usage, as ``on_usage`` hands it to observers."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    model: str = ""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class AgentUsage:
    """The tokens and cost of an agent's model calls, summed as they end (``agent.usage``)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add_usage(self, usage: UsageStats) -> None:
        """Count one call."""
        self.calls += 1
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.total_cost_usd += usage.cost_usd

    def __str__(self) -> str:
        return (
            f"{self.calls} calls, {self.total_tokens} tokens ({self.prompt_tokens} prompt, "
            f"{self.completion_tokens} completion), ${self.total_cost_usd:.6f}"
        )


@dataclass
class AgentAnalytics:
    """Tool usage of an agent's runs (``AgentConfig(enable_analytics=True)``)."""

    tools: dict[str, dict[str, float]] = field(default_factory=dict)

    def record(self, tool: str, *, ok: bool, duration_ms: float) -> None:
        """Count one call of ``tool``."""
        row = self.tools.setdefault(tool, {"calls": 0, "successes": 0, "failures": 0, "ms": 0.0})
        row["calls"] += 1
        row["successes" if ok else "failures"] += 1
        row["ms"] += duration_ms

    def summary(self) -> str:
        """One line per tool, most called first: calls, successes, failures, mean duration."""
        lines = []
        for name, row in sorted(self.tools.items(), key=lambda kv: (-kv[1]["calls"], kv[0])):
            mean = row["ms"] / row["calls"] if row["calls"] else 0.0
            lines.append(
                f"{name}: {int(row['calls'])} calls, {int(row['successes'])} ok, "
                f"{int(row['failures'])} failed, {mean:.1f} ms mean"
            )
        return "\n".join(lines) or "no tool calls"
