"""``rerun``: re-execute a recorded session and name the first activity that differs.

A recorded session becomes a regression test: ``rerun(iri)`` runs each of its
recorded plan runs again (same goal, strategy, parameters and budgets) with
a ``ReplayLLM`` as the model, and capabilities either live (the code under
test) or answered from their recorded envelopes. The re-execution records
into a scratch in-memory store, or, with ``into=`` (``trails replay --rerun``),
as a new session of that store marked ``trails:rerunOf`` the recorded one. Both
trajectories are then read back with the same SPARQL query (LLM completions
and capability invocations, in order) and compared activity by activity:
the report is identical, or names the first activity whose action, inputs or
observation differ, with both sides. ``trajectory`` and ``compare`` are also
what ``trails diff`` uses to compare two recorded sessions.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections import defaultdict, deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from trails.agent.context import BUDGET_KEYS, Session
from trails.agent.loop.outcome import answer_text
from trails.agent.persistence import replay
from trails.agent.planners import STRATEGIES
from trails.agent.planners.base import PlanResult
from trails.agent.projection import projected_invocations
from trails.errors import ReplayMismatch, RunError, SessionError, UserError
from trails.kernel import registry as _registry
from trails.kernel.context import Context
from trails.kernel.cost import CostTracker
from trails.llm.structured import OutputFormat
from trails.llm.types import Response
from trails.prov.projection import ProjectedInvocation
from trails.prov.recorder import Recorder
from trails.prov.vocab import PROV, T
from trails.store import default_store, open_store
from trails.store.base import Store, select
from trails.store.terms import IRI, Term, to_python
from trails.testing.replay import RecordedCompletion, ReplayLLM, recorded_completions

__all__ = [
    "Activity",
    "Divergence",
    "RerunReport",
    "compare",
    "recorded_catalogue",
    "rerun",
    "trajectory",
]

_TRAJECTORY = f"""
SELECT ?g ?a ?kind ?started ?step ?status ?action ?input ?inputHash ?output ?outputHash ?error
WHERE {{
  GRAPH ?g {{
    {{
      ?a a {T.CapabilityInvocation.n3()} ; {T.capability.n3()} ?cap ; {PROV.used.n3()} ?in .
      ?cap {T.capabilityId.n3()} ?action .
      ?in a {T.CapabilityInput.n3()} ; {T.sha256.n3()} ?inputHash .
      OPTIONAL {{ GRAPH ?cg1 {{ ?in {PROV.value.n3()} ?input }} }}
      OPTIONAL {{
        ?out {PROV.wasGeneratedBy.n3()} ?a ; a {T.CapabilityOutput.n3()} ; {T.sha256.n3()} ?outputHash .
        OPTIONAL {{ GRAPH ?cg2 {{ ?out {PROV.value.n3()} ?output }} }}
      }}
      BIND ("invocation" AS ?kind)
    }} UNION {{
      ?a a {T.LLMCompletion.n3()} ; {PROV.used.n3()} ?p ; {PROV.wasAssociatedWith.n3()} ?m .
      ?m a {T.Model.n3()} ; {T.modelId.n3()} ?action .
      ?p a {T.Prompt.n3()} ; {T.sha256.n3()} ?inputHash .
      OPTIONAL {{ GRAPH ?cg3 {{ ?p {PROV.value.n3()} ?input }} }}
      OPTIONAL {{
        ?out {PROV.wasGeneratedBy.n3()} ?a ; a {T.Completion.n3()} ; {T.sha256.n3()} ?outputHash .
        OPTIONAL {{ GRAPH ?cg4 {{ ?out {PROV.value.n3()} ?output }} }}
      }}
      BIND ("completion" AS ?kind)
    }}
    ?a {T.inSession.n3()} ?g ; {PROV.startedAtTime.n3()} ?started ; {T.status.n3()} ?status .
    OPTIONAL {{ ?a {T.stepIndex.n3()} ?step }}
    OPTIONAL {{ GRAPH ?errorMessageGraph1 {{ ?a {T.errorMessage.n3()} ?error }} }}
  }}
}} ORDER BY ?started ?a
"""

_RUNS = f"""
SELECT ?g ?run ?parent ?strategy ?goal ?started ?stop ?answer ?error ?limit WHERE {{
  GRAPH ?g {{
    ?run a {T.PlanRun.n3()} ; {T.inSession.n3()} ?g ; {T.strategy.n3()} ?strategy ;
         {PROV.startedAtTime.n3()} ?started ;
         {PROV.wasInformedBy.n3()} ?parent .
    OPTIONAL {{ GRAPH ?cg1 {{ ?run {T.goal.n3()} ?goal }} }}
    OPTIONAL {{ ?run {T.stopReason.n3()} ?stop }}
    OPTIONAL {{ GRAPH ?cg2 {{ ?run {T.answer.n3()} ?answer }} }}
    OPTIONAL {{ GRAPH ?errorMessageGraph2 {{ ?run {T.errorMessage.n3()} ?error }} }}
    OPTIONAL {{ ?run {T.wasTerminatedBy.n3()} ?t . ?t {T.limit.n3()} ?limit }}
  }}
}} ORDER BY ?started ?run
"""

_RUN_COMPLETIONS = f"""
SELECT ?g ?c ?run ?plan WHERE {{
  GRAPH ?g {{
    ?c a {T.LLMCompletion.n3()} ; {PROV.wasInformedBy.n3()} ?run .
    ?run a {T.PlanRun.n3()} .
    OPTIONAL {{ ?plan a {T.PlanDocument.n3()} ; {PROV.wasGeneratedBy.n3()} ?c }}
  }}
}}
"""

_ERROR_PREFIX = re.compile(r"^[A-Za-z_][\w.]*: ")
# how the envelope records an answer that failed validation (``LLMCompleted.error``)
_INVALID = re.compile(
    r"^invalid answer \(attempt \d+ of (\d+)\): (.*?)(?:; no attempts left)?$", re.S
)

Capabilities = Literal["live", "recorded"]


@dataclass(frozen=True)
class Activity:
    """One step of a trajectory, as compared: an LLM completion or a capability invocation.

    Attributes:
        index: its position in the session's trajectory.
        kind: ``completion`` or ``invocation``.
        activity: its activity IRI.
        step: the planner step index, when recorded.
        action: the capability id, or the model id of a completion.
        status: how it ended.
        inputs: the arguments or the prompt (canonical JSON; None when hashes only).
        inputs_sha256: their hash.
        observation: the result or the reply (None when it failed or hashes only).
        observation_sha256: its hash.
        error: the error message of a failure.
    """

    index: int
    kind: str
    activity: str
    step: int | None
    action: str
    status: str
    inputs: str | None
    inputs_sha256: str
    observation: str | None
    observation_sha256: str | None
    error: str | None

    def outcome(self) -> tuple[str, str | None, str | None]:
        """What the activity observed: status, output hash, error without its type prefix."""
        error = None if self.error is None else _ERROR_PREFIX.sub("", self.error, count=1)
        return self.status, self.observation_sha256, error

    def describe(self) -> str:
        """One readable block: what was done, with what, and what came back."""
        step = "" if self.step is None else f" step {self.step}"
        seen = self.observation if self.observation is not None else self.error
        return (
            f"#{self.index} {self.kind} {self.action}{step} [{self.status}] {self.activity}\n"
            f"      inputs: {_short(self.inputs or self.inputs_sha256)}\n"
            f"      observation: {_short(seen or self.observation_sha256 or '(none)')}"
        )


def _short(text: str, width: int = 400) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass(frozen=True)
class Divergence:
    """The first difference between two trajectories.

    Attributes:
        index: the position of the first differing activity.
        field: ``action``, ``inputs``, ``observation``, ``missing`` (the second
            run stopped short), ``extra`` (it went further) or ``outcome`` (the
            runs' stop reasons or answers differ).
        recorded: the activity on the recorded side (None when ``extra``).
        rerun: the activity on the other side (None when ``missing``).
        detail: a one-line explanation.
    """

    index: int
    field: str
    recorded: Activity | None
    rerun: Activity | None
    detail: str = ""

    def describe(self, left: str = "recorded", right: str = "rerun") -> str:
        """The divergence as text, both sides shown."""
        lines = [f"first divergence at activity #{self.index} ({self.field}): {self.detail}"]
        lines.append(f"  {left}: " + (self.recorded.describe() if self.recorded else "(nothing)"))
        lines.append(f"  {right}: " + (self.rerun.describe() if self.rerun else "(nothing)"))
        return "\n".join(lines)


@dataclass
class RerunReport:
    """What ``rerun`` found.

    Attributes:
        session: the recorded session IRI.
        divergence: the first difference, or None when the runs are identical.
        recorded: the recorded trajectory.
        rerun: the re-executed trajectory.
        mismatch: the ``ReplayMismatch`` message when the model was asked
            something the recording does not hold.
        results: the planner results of the re-execution.
        capabilities: ``live`` or ``recorded``.
        recorded_as: the new session the re-execution was recorded as (``into=``), or None
            (a scratch store, gone).
    """

    session: str
    divergence: Divergence | None
    recorded: list[Activity]
    rerun: list[Activity]
    mismatch: str | None = None
    results: list[PlanResult] = field(default_factory=list)
    capabilities: str = "live"
    recorded_as: str | None = None

    @property
    def identical(self) -> bool:
        """Whether the re-execution did exactly what the recording did."""
        return self.divergence is None

    def describe(self) -> str:
        """A human summary: identical, or the first divergence with both sides."""
        head = (
            f"rerun of {self.session} ({self.capabilities} capabilities): "
            f"{len(self.recorded)} recorded activities, {len(self.rerun)} re-executed"
        )
        if self.divergence is None:
            return f"{head}: identical"
        text = f"{head}: DIVERGED\n{self.divergence.describe()}"
        if self.mismatch:
            text += f"\n  model: {self.mismatch}"
        return text


def _py(row: Mapping[str, Term], name: str) -> Any:
    term = row.get(name)
    return None if term is None else to_python(term)


def trajectory(store: Store, session: str) -> list[Activity]:
    """The completions and invocations recorded in a session's graph, in start order.

    Args:
        store: the store.
        session: the session IRI (which names its graph).

    Returns:
        The activities.
    """
    rows = select(store, _TRAJECTORY, {"g": IRI.trusted(session)})
    return [
        Activity(
            index=i,
            kind=str(_py(r, "kind")),
            activity=str(_py(r, "a")),
            step=_py(r, "step"),
            action=str(_py(r, "action")),
            status=str(_py(r, "status")),
            inputs=_py(r, "input"),
            inputs_sha256=str(_py(r, "inputHash")),
            observation=_py(r, "output"),
            observation_sha256=_py(r, "outputHash"),
            error=_py(r, "error"),
        )
        for i, r in enumerate(rows)
    ]


def compare(left: Sequence[Activity], right: Sequence[Activity]) -> Divergence | None:
    """The first activity whose action, inputs or observation differ (None: identical).

    Args:
        left: the reference trajectory (the recording).
        right: the trajectory to check.

    Returns:
        The first divergence, or None.
    """
    for i, (a, b) in enumerate(zip(left, right, strict=False)):
        if (a.kind, a.action) != (b.kind, b.action):
            detail = f"{a.kind} {a.action!r} vs {b.kind} {b.action!r}"
            return Divergence(i, "action", a, b, detail)
        if a.inputs_sha256 != b.inputs_sha256:
            what = "arguments" if a.kind == "invocation" else "prompt"
            return Divergence(i, "inputs", a, b, f"the {what} of {a.action!r} differ")
        if a.outcome() != b.outcome():
            what = "result" if a.kind == "invocation" else "reply"
            return Divergence(i, "observation", a, b, f"the {what} of {a.action!r} differs")
    if len(left) > len(right):
        n = len(right)
        return Divergence(
            n, "missing", left[n], None, f"stopped after {n} of {len(left)} activities"
        )
    if len(right) > len(left):
        n = len(left)
        return Divergence(n, "extra", None, right[n], f"went on past {n} activities")
    return None


@dataclass(frozen=True)
class _Run:
    iri: str
    parent: str
    strategy: str
    goal: str
    stop: str | None
    answer: str | None
    error: str | None
    limit: float | None


def _runs(store: Store, session: str) -> list[_Run]:
    return [
        _Run(
            iri=str(_py(r, "run")),
            parent=str(_py(r, "parent")),
            strategy=str(_py(r, "strategy")),
            goal=str(_py(r, "goal")),
            stop=_py(r, "stop"),
            answer=_py(r, "answer"),
            error=_py(r, "error"),
            limit=_py(r, "limit"),
        )
        for r in select(store, _RUNS, {"g": IRI.trusted(session)})
    ]


def _accepts(planner: Any, name: str) -> bool:
    try:
        params = inspect.signature(planner.run).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _options(
    run: _Run,
    runs: list[_Run],
    planner: Any,
    *,
    budget: Mapping[str, float],
    first_params: Mapping[str, Any],
    plans: Mapping[str, int],
    bound: int,
) -> dict[str, Any]:
    """The planner keywords that reproduce ``run``: its parameters, budgets and limits."""
    options: dict[str, Any] = {BUDGET_KEYS[k]: v for k, v in budget.items()}
    if "max_tokens" in first_params:
        options["max_tokens_per_call"] = int(first_params["max_tokens"])
    if "temperature" in first_params:
        options["temperature"] = float(first_params["temperature"])
    if run.stop in ("max_cost", "max_tokens", "max_wall_time") and run.limit is not None:
        key = {"max_cost": "max_cost_usd", "max_tokens": "max_tokens"}.get(
            run.stop, "max_wall_time_s"
        )
        options[key] = run.limit if key != "max_tokens" else int(run.limit)
    inner = [r for r in runs if r.parent == run.iri]
    steps = bound
    if run.strategy == "reflexion":
        inner_limits = [r.limit for r in inner if r.stop == "max_steps" and r.limit is not None]
        if inner_limits:
            steps = int(inner_limits[0])
        outer = len(inner) + 1
        if run.stop == "max_steps" and run.limit is not None:
            outer = int(run.limit)
        if _accepts(planner, "max_outer_iterations"):
            options["max_outer_iterations"] = outer
    elif run.stop == "max_steps" and run.limit is not None:
        steps = int(run.limit)
    options["max_steps"] = steps
    if run.strategy == "plan_and_execute" and _accepts(planner, "max_replans"):
        options["max_replans"] = max(0, plans.get(run.iri, 0) - 1)
    return {k: v for k, v in options.items() if _accepts(planner, k)}


def _rebuild_error(message: str | None) -> BaseException:
    """An exception that ``invoke`` turns back into the recorded error message."""
    text = message or "error"
    match = re.match(r"^([A-Za-z_]\w*): (.*)$", text, re.S)
    if match:
        kind: type[Exception] = type(match.group(1), (Exception,), {})
        return kind(match.group(2))
    return RunError(text)


@contextmanager
def _recorded_capabilities(invocations: Sequence[ProjectedInvocation]) -> Iterator[None]:
    """Answer each invoked capability from its recorded envelopes, in order, for a while."""
    queues: dict[str, deque[ProjectedInvocation]] = defaultdict(deque)
    for inv in invocations:
        if inv.status in ("ok", "error"):
            queues[inv.capability].append(inv)
    missing = sorted(cid for cid in queues if cid not in _registry._handlers)
    if missing:
        raise SessionError(
            f"rerun with recorded capabilities still needs {', '.join(missing)} registered "
            "(their descriptions are part of the prompt): import the module that defines them"
        )
    saved: dict[str, _registry.CapabilitySpec] = {}

    def stub(cid: str) -> Any:
        def answer(**_kwargs: Any) -> Any:
            queue = queues[cid]
            if not queue:
                raise RunError(f"no recorded invocation of {cid!r} is left to answer with")
            envelope = queue.popleft()
            if envelope.status != "ok":
                raise _rebuild_error(envelope.error)
            return envelope.result

        return answer

    with _registry._lock:
        for cid in queues:
            spec = _registry._handlers[cid]
            saved[cid] = spec
            _registry._handlers[cid] = dataclasses.replace(
                spec, handler=stub(cid), takes_ctx=False, output_adapter=None
            )
    try:
        yield
    finally:
        with _registry._lock:
            for cid, spec in saved.items():
                if cid in _registry._handlers:
                    _registry._handlers[cid] = spec


def _planner(name: str, planner: Any) -> Any:
    if planner is None:
        if name not in STRATEGIES:
            raise SessionError(f"the recorded strategy {name!r} has no planner in this trails")
        return STRATEGIES[name]
    if isinstance(planner, str):
        key = planner.strip().lower().replace("-", "_")
        if key not in STRATEGIES:
            raise UserError(f"unknown planner {planner!r}; choose one of {', '.join(STRATEGIES)}")
        return STRATEGIES[key]
    if not callable(getattr(planner, "run", None)):
        raise UserError(f"planner= must be a strategy name or a planner module, not {planner!r}")
    return planner


def rerun(
    iri: str,
    *,
    planner: Any = None,
    tools: Any = None,
    capabilities: Capabilities = "live",
    store: Store | None = None,
    output_type: Any = None,
    into: Store | None = None,
) -> RerunReport:
    """Re-execute a persisted session with its recorded completions and compare.

    Args:
        iri: the persisted session (its graph or its IRI).
        planner: a strategy name or planner module to use for every run
            (default: each run's recorded strategy).
        tools: ``tools=`` for the planners (default: the tool catalogue the session's
            recorded prompts offered, read back from them, so capabilities registered
            since, or by other modules, do not change the prompts; every registered
            capability when the prompts were recorded as hashes only).
        capabilities: ``"live"`` runs the registered capabilities;
            ``"recorded"`` answers them from the recorded envelopes.
        store: the store holding the recording (default: the process default store).
        output_type: ``output_type=`` for every run (default: each run's recorded
            response format, its name and JSON schema as its answer turn asked, and as
            many answer attempts as it was given); a changed one is a divergence.
        into: record the re-execution there, as a new session marked ``trails:rerunOf``
            the recorded one (ended when the rerun ends), so it can be read and compared
            later (``trails diff``, the console); default: a scratch in-memory store.

    Returns:
        The report: identical, or the first divergence with both sides.

    Raises:
        SessionError: ``iri`` names no persisted session, or a recorded
            capability is not registered (``recorded`` mode).
        UserError: a bad ``planner`` or ``capabilities``.
    """
    if capabilities not in ("live", "recorded"):
        raise UserError(f"capabilities must be 'live' or 'recorded', not {capabilities!r}")
    source = store if store is not None else default_store()
    original = replay(iri, store=source)
    origin = original.replayed_from
    assert origin is not None
    session_iri = str(origin.session)
    recorded = trajectory(source, session_iri)
    runs = _runs(source, session_iri)
    tops = [r for r in runs if r.parent == session_iri]
    llm = ReplayLLM.from_session(session_iri, store=source)
    completions = recorded_completions(source, session_iri)
    by_activity = {c.activity: c for c in completions}
    first_prompt: dict[str, tuple[int, list[dict[str, Any]]]] = {}
    first_params: dict[str, dict[str, Any]] = {}
    formats: dict[str, tuple[_RecordedFormat, int]] = {}
    plans: dict[str, int] = defaultdict(int)
    owner = {r.iri: (r.parent if r.parent != session_iri else r.iri) for r in runs}
    for row in select(source, _RUN_COMPLETIONS, {"g": IRI.trusted(session_iri)}):
        c, run = str(_py(row, "c")), str(_py(row, "run"))
        root = owner.get(run, run)
        if _py(row, "plan") is not None:
            plans[run] += 1
        completion = by_activity.get(c)
        if completion is None:
            continue
        if root not in first_params:
            first_params[root] = completion.params
        _note_format(formats, root, completion)
        if root not in first_prompt or completion.position < first_prompt[root][0]:
            first_prompt[root] = (completion.position, completion.messages)
    bound = len(recorded) + 1

    projected = projected_invocations(original)
    # a strategy with no planner, or a capability not registered, is refused before the
    # rerun records anything (no empty session is left in the store)
    modules = {top.iri: _planner(top.strategy, planner) for top in tops}
    results: list[PlanResult] = []
    mismatch: str | None = None
    with _recorded_capabilities(projected) if capabilities == "recorded" else _nothing():
        scratch = into if into is not None else open_store("memory:")
        session = Session(
            principal=original.principal,
            max_tokens=original.history.max_tokens,
            pin_head=original.history.pin_head,
            card=original.card,
            strategy=original.strategy,
            budget=original.budget,
            store=scratch,
        )
        ctx = Context.open(
            original.principal,
            # a new session of the store is sealed and catalogued as the settings say
            recorder=Recorder(scratch) if into is None else Recorder.from_settings(store=into),
            tracker=CostTracker(),
            invocations=session.invocations,
            rerun_of=session_iri if into is not None else None,
        )
        try:
            for top in tops:
                module = modules[top.iri]
                options = _options(
                    top,
                    runs,
                    module,
                    budget=original.budget,
                    first_params=first_params.get(top.iri, {}),
                    plans=plans,
                    bound=bound,
                )
                options.update(_output_options(module, top.iri, formats, output_type))
                offered = tools
                if offered is None and top.iri in first_prompt:
                    offered = recorded_catalogue(first_prompt[top.iri][1])
                try:
                    results.append(
                        module.run(
                            top.goal, llm=llm, session=session, ctx=ctx, tools=offered, **options
                        )
                    )
                except ReplayMismatch as exc:
                    mismatch = str(exc)
                    break
            if into is not None:
                ctx.close("ok")
            again = trajectory(scratch, str(ctx.session))
        finally:
            if into is None:
                scratch.close()
            elif not ctx.ended:
                ctx.close("error")
    divergence = compare(recorded, again)
    if divergence is None and mismatch is None:
        divergence = _outcome(tops, results, recorded)
    if divergence is None and mismatch is not None:
        n = len(recorded)
        divergence = Divergence(n, "inputs", None, None, mismatch)
    return RerunReport(
        session=session_iri,
        divergence=divergence,
        recorded=recorded,
        rerun=again,
        mismatch=mismatch,
        results=results,
        capabilities=capabilities,
        recorded_as=str(ctx.session) if into is not None else None,
    )


@dataclass(frozen=True)
class _RecordedFormat(OutputFormat):
    """A recorded response format: its name and schema, and the answers found invalid.

    An answer the recording found invalid gets the problem recorded for it, word
    for word (the retry prompt shows it, so it must read as it did: the original
    may have been checked by a pydantic model the recording does not hold); any
    other answer is checked against the schema.
    """

    problems: tuple[tuple[str, str], ...] = ()

    def check(self, response: Response) -> tuple[Any, str | None]:
        raw = self.raw(response)
        for text, problem in self.problems:
            if text == raw:
                return None, problem
        return super().check(response)


def _note_format(
    formats: dict[str, tuple[_RecordedFormat, int]], run: str, completion: RecordedCompletion
) -> None:
    """Note the response format a run's answer turn asked for, its attempts and problems."""
    asked = completion.params.get("response_format")
    if not isinstance(asked, Mapping):
        return
    known = formats.get(run)
    attempts, problems = (known[1], known[0].problems) if known else (0, ())
    found = _INVALID.match(completion.error or "")
    if completion.status == "invalid" and found and completion.text is not None:
        attempts = max(attempts, int(found.group(1)))
        problems = (*problems, (completion.text, found.group(2)))
    schema = dict(asked.get("schema") or {})
    formats[run] = (_RecordedFormat(str(asked.get("name")), schema, problems=problems), attempts)


def _output_options(
    module: Any, run: str, formats: Mapping[str, tuple[_RecordedFormat, int]], given: Any
) -> dict[str, Any]:
    """``output_type=`` (and ``output_retries=``) that ask a run's answer turn as recorded."""
    recorded = formats.get(run)
    if given is None and recorded is None:
        return {}
    options: dict[str, Any] = {"output_type": given if given is not None else recorded[0]}  # type: ignore[index]
    if recorded is not None and recorded[1] > 0:
        options["output_retries"] = recorded[1] - 1
    return {k: v for k, v in options.items() if _accepts(module, k)}


@contextmanager
def _nothing() -> Iterator[None]:
    yield


_CATALOGUE_LINE = re.compile(r"(?m)^- ([^\s:]+)(?:: | \(unregistered\)$)")
_NO_TOOLS = re.compile(r"(?m)^Tools:\n\(none\)$")


def recorded_catalogue(messages: Sequence[Mapping[str, Any]]) -> list[str] | None:
    """The capability ids a recorded planner prompt offered, in the order it listed them.

    Planners write their tool list with ``render_catalogue`` (``- id: description``)
    into the system message; the ids found there that are registered now, or that
    the prompt marked ``(unregistered)``, are the run's catalogue.

    Args:
        messages: the recorded request's messages (role / content dicts).

    Returns:
        The ids (empty when the prompt offered no tools), or None when the prompt
        holds no catalogue (or only hashes were recorded).
    """
    system = [m for m in messages if m.get("role") == "system"] or list(messages[:1])
    ids: list[str] = []
    for message in system:
        content = message.get("content")
        if not isinstance(content, str):
            continue
        if _NO_TOOLS.search(content):
            return []
        for match in _CATALOGUE_LINE.finditer(content):
            cid = match.group(1)
            try:
                _registry.get_capability(cid)
                known = True
            except UserError:  # UnknownCapability
                known = False
            if (known or match.group(0).endswith("(unregistered)")) and cid not in ids:
                ids.append(cid)
    return ids or None


def _outcome(
    tops: Sequence[_Run], results: Sequence[PlanResult], recorded: Sequence[Activity]
) -> Divergence | None:
    for run, result in zip(tops, results, strict=False):
        if (run.stop, run.answer) != (result.stopped, answer_text(result.answer)):
            last = recorded[-1] if recorded else None
            return Divergence(
                len(recorded),
                "outcome",
                last,
                None,
                f"run {run.iri} stopped {run.stop!r} with answer {run.answer!r}; "
                f"the rerun stopped {result.stopped!r} with answer {result.answer!r}",
            )
    if len(results) < len(tops):
        return Divergence(
            len(recorded),
            "outcome",
            None,
            None,
            f"{len(tops) - len(results)} run(s) not re-executed",
        )
    return None
