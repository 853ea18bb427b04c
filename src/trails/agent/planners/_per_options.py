"""Plan-Execute-Reflect's run options by the seed's names: memory, executor agents, filters, tenants.

Seed 003's agent takes ``memory_id`` (continue an earlier conversation),
``executor_agent_id`` (run the steps on another, registered agent),
``llm_response_filter`` (a JSONPath that extracts the response from the model's
output) and ``tenant_id``, and answers with ``memory_id`` and
``parent_interaction_id``. In trails:

- ``memory_id`` is a session's IRI (``PlanResult.memory_id`` of an earlier run). The
  run reads that conversation's top-level runs (goal and answer, in order) from the
  store, only when the session belongs to the run's own principal, puts them in the
  history before the goal, and records ``trails:continues`` from the run to it;
- ``executor_agent_id`` names an agent registered with ``register_executor_agent(id,
  llm=..., system_prompt=..., max_iterations=..., tools=...)``; every executor pass
  then runs on that agent's client and prompt, and each pass records the agent (a
  ``prov:SoftwareAgent`` named ``trails:agentName``) acting for the principal;
- ``llm_response_filter`` (JSONPath, ``jsonpath-ng``) is applied to each reply of the
  planner and of the executor that is a JSON document; the first match (text as
  is, other values as JSON) is what the planner reads. The completion keeps the whole
  reply; the run records the filter (``trails:responseFilter``);
- ``tenant_id`` is the principal: a run whose session belongs to another principal
  is refused before anything runs.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from trails.errors import UserError
from trails.llm.types import Response
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions
from trails.store.terms import IRI, Literal

if TYPE_CHECKING:
    from trails.agent.context import Session
    from trails.agent.loop import PlanRun

__all__ = [
    "ConversationContinued",
    "ExecutorAgent",
    "ResponseFilter",
    "ResponseFiltered",
    "check_tenant",
    "continue_conversation",
    "executor_agent",
    "filtered",
    "register_executor_agent",
]

_EARLIER = f"""SELECT ?memory ?principal ?run ?t ?goal ?answer WHERE {{
  GRAPH ?memory {{
    ?memory {PROV.wasAssociatedWith.n3()}/{T.principalId.n3()} ?principal .
    ?run a {T.PlanRun.n3()} ; {PROV.wasInformedBy.n3()} ?memory ; {PROV.startedAtTime.n3()} ?t .
  }}
  GRAPH ?c {{ ?run {T.goal.n3()} ?goal . OPTIONAL {{ ?run {T.answer.n3()} ?answer }} }}
}} ORDER BY ?t"""


def check_tenant(tenant_id: str | None, session: Session) -> None:
    """``tenant_id`` is the principal: refuse a session of another one."""
    if tenant_id is None:
        return
    if not isinstance(tenant_id, str) or not tenant_id.strip():
        raise UserError(f"tenant_id= must be a non-empty str, not {tenant_id!r}")
    if tenant_id != session.principal:
        raise UserError(
            f"tenant_id={tenant_id!r} is not the session's principal ({session.principal!r}): "
            "a tenant is the principal a run acts for; open the session for that tenant"
        )


class ConversationContinued(Event):
    """A run continued an earlier conversation (``memory_id=``): ``trails:continues`` it."""

    run: str
    memory: str

    def emit(self, b: QuadBuilder) -> None:
        b.add(IRI.trusted(self.run), T.continues, IRI.trusted(self.memory))


def continue_conversation(plan: PlanRun, memory_id: str | None) -> int:
    """Load the conversation ``memory_id`` into the run's history; how many runs it held.

    Raises:
        UserError: not a conversation of the run's principal in this store.
    """
    if memory_id is None:
        return 0
    if not isinstance(memory_id, str) or not memory_id.strip():
        raise UserError(f"memory_id= must be a session IRI, not {memory_id!r}")
    try:
        rows = plan.ctx.recorder.store.query(
            _EARLIER, {"memory": IRI(memory_id), "principal": Literal(plan.ctx.principal)}
        )
    except ValueError as exc:
        raise UserError(f"memory_id= must be a session IRI, not {memory_id!r}") from exc
    found = list(rows) if isinstance(rows, Solutions) else []
    if not found:
        raise UserError(
            f"memory_id={memory_id!r} is no conversation of {plan.ctx.principal!r} in this store"
        )
    for row in found:
        goal, answer = row.get("goal"), row.get("answer")
        if isinstance(goal, Literal):
            plan.session.history.append("user", goal.value)
        if isinstance(answer, Literal):
            plan.session.history.append("assistant", answer.value)
    plan.ctx.recorder.record(
        ConversationContinued(session=plan.ctx.session, run=plan.activity, memory=memory_id)
    )
    return len(found)


@dataclasses.dataclass(frozen=True)
class ExecutorAgent:
    """An agent the steps of a Plan-Execute-Reflect run may be executed on, by id."""

    agent_id: str
    llm: Any
    system_prompt: str | None = None
    max_iterations: int | None = None
    tools: tuple[str, ...] | None = None


_agents: dict[str, ExecutorAgent] = {}
_agents_lock = threading.Lock()


def register_executor_agent(
    agent_id: str,
    *,
    llm: Any,
    system_prompt: str | None = None,
    max_iterations: int | None = None,
    tools: Sequence[str] | None = None,
) -> ExecutorAgent:
    """Register the agent ``executor_agent_id=agent_id`` runs steps on (replacing one of that id).

    Raises:
        UserError: an empty id, or ``llm`` without ``complete()``.
    """
    if not isinstance(agent_id, str) or not agent_id.strip():
        raise UserError(f"executor agent id must be a non-empty str, not {agent_id!r}")
    if llm is None or not callable(getattr(llm, "complete", None)):
        raise UserError(f"executor agent {agent_id!r} needs an LLM client, not {llm!r}")
    if max_iterations is not None and (
        isinstance(max_iterations, bool)
        or not isinstance(max_iterations, int)
        or max_iterations < 1
    ):
        raise UserError(
            f"executor agent {agent_id!r}: max_iterations must be an int >= 1 or None, "
            f"not {max_iterations!r}"
        )
    agent = ExecutorAgent(
        agent_id, llm, system_prompt, max_iterations, None if tools is None else tuple(tools)
    )
    with _agents_lock:
        _agents[agent_id] = agent
    return agent


def executor_agent(agent_id: str | None) -> ExecutorAgent | None:
    """The registered agent ``agent_id`` (None for None).

    Raises:
        UserError: no agent of that id is registered.
    """
    if agent_id is None:
        return None
    with _agents_lock:
        found = _agents.get(agent_id)
    if found is None:
        known = ", ".join(sorted(_agents)) or "none"
        raise UserError(
            f"executor_agent_id={agent_id!r} names no registered agent (registered: {known}); "
            "register it with register_executor_agent(id, llm=...)"
        )
    return found


class ResponseFiltered(Event):
    """A run read its replies through a JSONPath (``llm_response_filter=``)."""

    run: str
    expression: str

    def emit(self, b: QuadBuilder) -> None:
        b.value(IRI.trusted(self.run), T.responseFilter, self.expression)


class ResponseFilter:
    """An LLM client whose replies are read through a JSONPath (the seed's response filter).

    A reply that is a JSON document and matches gives its first match (a str as is,
    anything else as JSON); any other reply is left as it came.
    """

    def __init__(self, llm: Any, expression: str) -> None:
        from jsonpath_ng.exceptions import JsonPathParserError
        from jsonpath_ng.ext.parser import parse

        if not isinstance(expression, str) or not expression.strip():
            raise UserError(f"llm_response_filter= must be a JSONPath, not {expression!r}")
        try:
            self._path = parse(expression)
        except (JsonPathParserError, Exception) as exc:  # the parser raises several kinds
            raise UserError(f"llm_response_filter={expression!r} is no JSONPath: {exc}") from exc
        self.expression = expression
        self.llm = llm

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)

    def extract(self, response: Response) -> Response:
        try:
            document = json.loads(response.text)
        except ValueError:
            return response
        matches = [m.value for m in self._path.find(document)]
        if not matches:
            return response
        first = matches[0]
        text = first if isinstance(first, str) else json.dumps(first)
        return dataclasses.replace(response, text=text)

    def complete(self, *args: Any, **kwargs: Any) -> Response:
        return self.extract(self.llm.complete(*args, **kwargs))

    async def acomplete(self, *args: Any, **kwargs: Any) -> Response:
        return self.extract(await self.llm.acomplete(*args, **kwargs))


def filtered(llm: Any, expression: str | None) -> Any:
    """``llm`` read through ``expression`` (itself without one)."""
    return llm if expression is None else ResponseFilter(llm, expression)
