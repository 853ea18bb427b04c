"""Behaviour tree: run a goal as a tree of sequence, fallback and parallel nodes.

Some goals have a shape a flat loop hides: "try the cache, else the index, else
ask", "do these three things and go on if most of them worked". A behaviour
tree states that shape. Control nodes: a ``sequence`` fails at its first
failing child; a ``fallback`` succeeds at its first succeeding child; a
``parallel`` runs its children concurrently (one ``Gather`` request: worker
threads under ``run``, asyncio tasks under ``arun``; at most
``PARALLEL_CHILDREN`` at a time; their steps join the trajectory in child
order) and succeeds when a strict majority succeeded. Leaves: an
``action`` dispatches one capability and fails when dispatch raises a
``TrailsError`` (the observation is ``"error: <message>"``, as in ReAct); an
``agent`` node works on its sub-goal with ReAct-style turns until the model
says ``finish`` (success) or ``fail`` (failure), or its turns run out (failure).

The tree comes from the caller (``tree=``: node objects or a dict), or, when
none is given, from one LLM call that decomposes the goal into a fenced JSON
tree (one nudge-retry on a malformed tree). ``max_steps`` counts every LLM turn
and every action dispatch in the run; budgets are checked before each of them.
A run whose root succeeds ends ``goal_achieved`` with the root's output as the
answer (a sequence's last child, a fallback's succeeding child, a parallel's
last succeeding child; an action's observation, an agent's final answer): no
summarising turn is added, as no other planner adds one. A run whose root fails
ends ``stopped="error"``, naming the failed leaf. A successful call of a
``terminal=True`` capability, by an action leaf or an agent node, ends the run
at once with ``goal_achieved`` and its result as the answer. Leaf results are written to a
working memory (``trails.memory.WorkingMemory``) shown to every agent node;
given ``episodic=``, agent nodes see past episodes of similar sub-goals and
keep their own.

Provenance: one ``trails:BehaviourTreePlan`` activity per run; the tree, each
node with its id (``"1"``, ``"1.2"`` ...), a ``trails:PlanDocument`` generated
by the decomposing completion (or by the run for a given tree); each LLM turn a
``trails:LLMCompletion`` informed by the run; each invocation informed by the
completion that chose it: the agent turn, the decomposing completion for an
action leaf of a model-built tree, or the run itself for one of a given tree.
Completions and invocations are numbered in one ``trails:stepIndex`` sequence.
Every node is a ``trails:TreeNode`` activity written when it ends (``_bt_evidence``):
its id, kind and outcome (success, failure, skipped, stopped), informed by its
children (a control node) or by the calls and completions it made (a leaf), a
parallel node with its vote tally.

Seed 004's agent-node options: an ``AgentNode`` may name its own ``tools`` (a
call of another is refused, and recorded as refused) and ``instruction``; its
prompt is rebuilt every turn, so a tool whose ``tool_budgets`` share is spent
leaves it (named under "Budget exhausted"). ``TreeConfig(stages=...)`` runs
stages instead of a model-built tree; ``TreeConfig(max_iterations=N)`` ticks the
tree again while a pass called a tool. ``session.metadata["node_count"]`` holds
the tree's size; new node types are registered compositions (``_bt_nodes``).
"""

from __future__ import annotations

import contextvars
import json
import sys
import threading
from collections.abc import Callable, Generator, Mapping
from collections.abc import Sequence as Seq
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeAlias

from trails.agent.loop import (
    DEFAULT_MAX_PARALLEL_TOOLS,
    Breach,
    Gather,
    Limits,
    Loop,
    PlanRun,
    Request,
    ToolFilter,
    ToolsSpec,
    abatch_entry,
    activity_of,
    arun_entry,
    astream_entry,
    batch_entry,
    check_guards,
    check_limits,
    check_output,
    check_positive_int,
    check_tool_calling,
    governance,
    guarded,
    offered_tools,
    parse_step,
    per_call_tokens,
    record_refused,
    render_catalogue,
    run_entry,
    stream_entry,
    stringify,
)
from trails.agent.planners._attachments import (
    Attachment,
    AttachmentsGiven,
    attachment_images,
    check_attachments,
    render_attachments,
)
from trails.agent.planners._bt_checkpoint import (
    STATE_KEYS,
    Checkpointer,
    StateKeyGoal,
    StateKeyNodeStatus,
    StateKeyOutput,
    StateKeyWorkingMemory,
    TreeCheckpoints,
    tree_state,
)
from trails.agent.planners._bt_evidence import NodeEvidence, majority
from trails.agent.planners._bt_nodes import (
    Action,
    AgentNode,
    DefaultTreeConfig,
    Fallback,
    Node,
    NodeStatus,
    Parallel,
    Sequence,
    SequenceWithEarlyExit,
    Stage,
    TreeConfig,
    build_tree,
    check_node_tools,
    child_id,
    count_nodes,
    parse_tree_reply,
    register_node_type,
    staged_tree,
    tree_to_dict,
    unregister_node_type,
)
from trails.agent.planners._bt_prompts import AGENT_PROMPT, DECOMPOSE_PROMPT, STEP_NUDGE, TREE_NUDGE
from trails.agent.planners._bt_validators import DeterministicValidator, NewDeterministicValidator
from trails.agent.planners.base import PlanStep, StopReason
from trails.agent.strategies import register_strategy
from trails.errors import ModelAPIError, ReplyParseError, UserError
from trails.kernel.context import now
from trails.llm.catalogue import ModelSpec
from trails.llm.types import Message, Response

if TYPE_CHECKING:
    from trails.agent.context import Session
    from trails.kernel.context import Context, ToolPolicy
    from trails.kernel.policy import Approver
    from trails.memory.episodic import EpisodicMemory
    from trails.memory.working import WorkingMemory

__all__ = [
    "AGENT_PROMPT",
    "DECOMPOSE_PROMPT",
    "NAME",
    "PARALLEL_CHILDREN",
    "STATE_KEYS",
    "Action",
    "ActionValidator",
    "AgentNode",
    "Attachment",
    "Checkpointer",
    "DefaultTreeConfig",
    "DeterministicValidator",
    "Fallback",
    "NewDeterministicValidator",
    "Node",
    "NodeStatus",
    "Parallel",
    "Sequence",
    "SequenceWithEarlyExit",
    "Stage",
    "StateKeyGoal",
    "StateKeyNodeStatus",
    "StateKeyOutput",
    "StateKeyWorkingMemory",
    "TreeConfig",
    "abatch",
    "arun",
    "astream",
    "batch",
    "build_tree",
    "parse_tree_reply",
    "register_node_type",
    "run",
    "stream",
    "tree_state",
    "tree_to_dict",
    "unregister_node_type",
]

#: The strategy name (``Session(strategy=...)``, ``trails:strategy``).
NAME = "behaviour_tree"

#: How many children of one ``parallel`` node run at once.
PARALLEL_CHILDREN = 8

#: Where a ``parallel`` child's steps go until they join the trajectory in child order.
_steps_sink: contextvars.ContextVar[list[PlanStep] | None] = contextvars.ContextVar(
    "trails_bt_steps", default=None
)

_Share: TypeAlias = "tuple[_Outcome | None, list[PlanStep], _Stop | None]"
"""A ``parallel`` child's end: its outcome (None when it stopped the run), its steps, the stop."""

ActionValidator: TypeAlias = Callable[[str, dict[str, Any]], str | None]
"""``validate_action(capability_id, action_input)``: None to allow, a reason to refuse."""


def _steps(
    goal: str,
    *,
    llm: Any,
    session: Session,
    ctx: Context | None = None,
    max_steps: int = 10,
    tools: ToolsSpec = None,
    tool_filter: ToolFilter = None,
    tree: Node | Mapping[str, Any] | None = None,
    agent_max_turns: int = 5,
    working_memory: WorkingMemory | None = None,
    episodic: EpisodicMemory | None = None,
    tool_budgets: Mapping[str, int] | None = None,
    validate_action: ActionValidator | Seq[ActionValidator] | None = None,
    max_tokens_per_call: int | None = None,
    temperature: float = 0.0,
    max_cost_usd: float | None = None,
    max_tokens: int | None = None,
    max_wall_time_s: float | None = None,
    max_tokens_per_step: int | None = None,
    reflect_before_action: Any = None,
    dry_run: bool = False,
    stop_condition: Callable[[str, str], bool] | None = None,
    tree_config: TreeConfig | None = None,
    policy: ToolPolicy | None = None,
    approver: Approver | None = None,
    approval_timeout_s: float | None = None,
    observers: Seq[Any] | None = None,
    output_type: Any = None,
    output_retries: int = 2,
    tool_timeout_s: float | None = None,
    attachments: Seq[Attachment] | None = None,
    checkpointer: Checkpointer | None = None,
) -> Loop:
    """Run ``goal`` as a behaviour tree: the given one, or one the model decomposes it into.

    Args:
        goal: what the agent should achieve.
        llm: the LLM client (decomposition and agent nodes).
        session: the conversation to continue (the goal is appended to its history).
        ctx: the caller's context (default: the session's own).
        max_steps: the cap on LLM turns plus action dispatches, over the whole run.
        tools: which capabilities the tree may use (see ``discover_tools``).
        tool_filter: a post-filter on them.
        tree: the tree to run (node objects, or a dict of the JSON shape); None asks
            the model for one.
        agent_max_turns: the LLM-turn cap of an agent node without its own ``max_turns``.
        working_memory: the scratchpad leaf results are written to and agent nodes
            read (default: a fresh one; pass one to read it after the run).
        episodic: where agent nodes find past episodes of similar sub-goals (shown
            in their prompt) and keep their own when they end (None: no episodes).
        tool_budgets: capability id -> how many times the run may dispatch it; past
            that, the action fails with ``"error: tool budget ..."`` and agent nodes
            no longer see the tool.
        validate_action: called before every dispatch; a returned reason refuses the
            action, which fails with ``"error: refused: <reason>"``, nothing invoked.
        max_tokens_per_call: the completion-token cap of each LLM call (default 1024).
        temperature: the sampling temperature.
        max_cost_usd: USD the run may spend, sampled before every turn and dispatch.
        max_tokens: tokens the run may use, sampled likewise.
        max_wall_time_s: seconds the run may take, sampled likewise.
        max_tokens_per_step: another name for ``max_tokens_per_call``.
        tree_config: the tree's limits (``TreeConfig``: depth, decisions per agent
            node, total nodes); its ``max_decisions_per_node`` replaces
            ``agent_max_turns`` and caps each node's own ``max_turns``.
        reflect_before_action: True (the run's model) or an LLM client asked about
            every action before it runs; it may veto it with a reason (recorded).
        dry_run: True: nothing is executed; the model sees a simulated observation
            and the graph records each action as an invocation with status ``dry_run``.
        stop_condition: a function ``(tool_name, result) -> bool`` asked after each
            successful call (``result`` as the model reads it, a str); True ends the
            run there with that result as the answer, like a ``terminal=True``
            capability, and the graph links the run to that call.
        policy: a tool policy for this run's calls (replaces the session's).
        approver: who is asked when the policy says review (replaces the session's).
        approval_timeout_s: seconds the approver has before the call is denied.
        observers: lifecycle observers of this run (added to the session's).
        output_type: a pydantic model class or a JSON schema: the final answer is
            asked for once more in that form, validated (``PlanResult.answer`` is
            then the validated object; see ``trails.agent.loop.outcome``).
        output_retries: how many more attempts an answer failing validation gets.
        tool_timeout_s: seconds each tool call may run (capping a capability's
            own ``timeout_s``); a call past it is recorded as failed and the model
            sees the error.
        attachments: files given with the goal (``Attachment``), recorded by digest
            and shown to every agent node, an image as an image (``_attachments``).
        checkpointer: a ``Checkpointer``: the run's state is saved in the store after
            every leaf, and a run stopped earlier under its id goes on where it stopped
            (``_bt_checkpoint``); default: ``tree_config``'s.

    Returns:
        The ``PlanResult``: ``goal_achieved`` with the root's output when the root
        succeeds; ``error`` when it fails (or on a malformed tree after a retry, a
        provider failure, a malformed agent reply after a retry); a budget or
        ``max_steps`` stop with the last observation as best-effort answer. Its steps
        are every action dispatch and agent turn, in order.

    Raises:
        UserError: a bad argument or a malformed given tree (nothing is recorded then).
        StoreError: provenance could not be recorded.
    """
    per_call = per_call_tokens(max_tokens_per_step, max_tokens_per_call)
    tooling = check_tool_calling("json", DEFAULT_MAX_PARALLEL_TOOLS, tool_timeout_s)
    limits = check_limits(
        max_cost_usd=max_cost_usd,
        max_tokens=max_tokens,
        max_wall_time_s=max_wall_time_s,
        per_call=per_call,
    )
    max_steps = check_positive_int("max_steps", max_steps)
    agent_turns = check_positive_int("agent_max_turns", agent_max_turns)
    if tree_config is not None and not isinstance(tree_config, TreeConfig):
        raise UserError(f"tree_config= must be a TreeConfig, not {tree_config!r}")
    if tree_config is not None:
        agent_turns = tree_config.max_decisions_per_node
    root = None if tree is None else build_tree(tree, config=tree_config)
    if root is None and tree_config is not None and tree_config.stages:
        root = build_tree(staged_tree(goal, tree_config.stages), config=tree_config)
    tool_specs = offered_tools(session, tools, tool_filter)
    check_node_tools(root, [cid for cid, _ in tool_specs])
    memory = _working_memory(working_memory)
    given = check_attachments(attachments)
    if episodic is not None and not (
        callable(getattr(episodic, "store", None)) and callable(getattr(episodic, "retrieve", None))
    ):
        raise UserError(f"episodic= must be an EpisodicMemory, not {type(episodic).__name__}")
    plan = PlanRun(
        NAME,
        goal,
        llm=llm,
        session=session,
        ctx=ctx,
        tools=[cid for cid, _ in tool_specs],
        governance=governance(policy, approver, approval_timeout_s, observers),
        guards=check_guards(
            validate_action,
            tool_budgets,
            reflect_before_action,
            dry_run,
            stop_condition=stop_condition,
        ),
        output=check_output(output_type, output_retries, per_call),
    )
    tooling.apply(plan)  # tool_timeout_s caps every call the run makes
    runner = _TreeRun(
        plan,
        Limits(plan.ctx.tracker, **limits),
        tool_specs=tool_specs,
        max_steps=max_steps,
        agent_turns=agent_turns,
        config=tree_config,
        per_call=per_call,
        temperature=temperature,
        memory=memory,
        episodic=episodic,
    )
    runner.attachments = given
    if checkpointer is None and tree_config is not None:
        checkpointer = tree_config.checkpointer
    runner.checkpoints = TreeCheckpoints(checkpointer)
    return guarded(plan, runner.execute(root))


run = run_entry(_steps)
arun = arun_entry(_steps, NAME)
stream = stream_entry(_steps, NAME)
astream = astream_entry(_steps, NAME)
batch = batch_entry(_steps, NAME)
abatch = abatch_entry(_steps, NAME)


def _working_memory(given: Any) -> WorkingMemory:
    # imported on use: importing trails.memory registers the memory.* capabilities
    from trails.memory.working import WorkingMemory

    if given is None:
        return WorkingMemory()
    if not isinstance(given, WorkingMemory):
        raise UserError(f"working_memory= must be a WorkingMemory, not {type(given).__name__}")
    return given


class _Stop(Exception):
    """Unwinds the tree walk when the run must stop (a limit, a fatal reply, a provider)."""

    def __init__(
        self,
        reason: StopReason,
        *,
        breach: Breach | None = None,
        error: str | None = None,
        answer: str | None = None,
        provider: ModelAPIError | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason: StopReason = reason
        self.breach = breach
        self.error = error
        self.answer = answer
        self.provider = provider


@dataclass(frozen=True)
class _Outcome:
    """A node's result: success or failure, its output text, and the leaf that failed."""

    success: bool
    output: str | None
    failed_leaf: str | None = None
    no_tools: bool = False  # an agent node that finished without calling a tool
    ran: int | None = None  # a control node's children ticked (the rest were skipped)
    votes: tuple[int, int] | None = None  # a parallel node's successes and failures


class _TreeRun:
    """One walk of a tree: the shared step count, tool counts and working memory."""

    def __init__(
        self,
        plan: PlanRun,
        budget: Limits,
        *,
        tool_specs: list[tuple[str, dict[str, Any]]],
        max_steps: int,
        agent_turns: int,
        config: TreeConfig | None,
        per_call: int,
        temperature: float,
        memory: WorkingMemory,
        episodic: EpisodicMemory | None,
    ) -> None:
        self.plan = plan
        self.budget = budget
        self.tool_specs = tool_specs
        self.max_steps = max_steps
        self.agent_turns = agent_turns
        self.config = config
        self.per_call = per_call
        self.temperature = temperature
        self.memory = memory
        self.episodic = episodic
        self.used = 0
        self.budgets = plan.guards.budgets
        self.calls = plan.guards.calls  # counted by the run's guards at each dispatch
        self.tree_by: str | None = None
        self.dispatched = 0  # dispatches so far: the adaptive loop stops at a pass with none
        self._claiming = threading.Lock()  # parallel children claim steps concurrently
        self.evidence = NodeEvidence(plan)
        self.attachments: tuple[Attachment, ...] = ()
        self.checkpoints = TreeCheckpoints(None)
        self.root: Node | None = None
        self.iteration = 1

    # -- the run ----------------------------------------------------------------

    def execute(self, root: Node | None) -> Loop:
        """Build (when needed) and record the tree, walk it, end the run."""
        plan = self.plan
        plan.session.history.append("user", f"Goal: {plan.goal}")
        if self.attachments:
            done = tuple((a.media_type, a.size, a.sha256) for a in self.attachments)
            given = AttachmentsGiven(session=plan.ctx.session, run=plan.activity, attachments=done)
            plan.ctx.recorder.record(given)
        try:
            root = self.checkpoints.begin(plan, root, self.memory)
            if root is None:
                root, index = yield from self._decompose()
            else:
                index = 0
            document = tree_to_dict(root)
            self.root = root
            plan.session.metadata.setdefault("plans", []).append(document)
            plan.session.metadata["node_count"] = count_nodes(root)
            plan.record_entity("PlanDocument", document, generated_by=self.tree_by, index=index)
            passes = self.config.max_iterations if self.config is not None else 1
            for iteration in range(1, passes + 1):
                self.iteration, dispatched = iteration, self.dispatched
                if iteration > 1:
                    self.evidence.next_pass(iteration)
                    self.checkpoints.restored = {}  # a restored leaf stands in the first pass
                outcome = yield from self._tick(root, "1")
                if not outcome.success or self.dispatched == dispatched:
                    break  # failed, or nothing left to do: no tool was called
                if iteration < passes:
                    self.memory.set("iteration", f"{iteration} of {passes} done: {outcome.output}")
        except _Stop as stop:
            if stop.provider is not None:
                return plan.provider_failed(stop.provider)
            return plan.finish(
                stop.reason, breach=stop.breach, error=stop.error, answer=stop.answer
            )
        if outcome.success:
            return plan.finish("goal_achieved", answer=outcome.output)
        kind = document["type"]
        error = f"the behaviour tree failed: its root {kind} failed"
        if outcome.failed_leaf is not None:
            error += f" (last failing leaf: node {outcome.failed_leaf})"
        return plan.finish("error", answer=outcome.output, error=error)

    def _claim(self) -> int:
        """Claim the next step (an LLM turn or a dispatch): budgets, then ``max_steps``."""
        with self._claiming:
            breach = self.budget.breach()
            if breach is not None:
                raise _Stop(breach.reason, breach=breach)
            if self.used >= self.max_steps:
                raise _Stop("max_steps", breach=Breach("max_steps", self.max_steps, self.used))
            index, self.used = self.used, self.used + 1
            return index

    def _step(self, step: PlanStep) -> None:
        """Add a step to the trajectory (or to the running ``parallel`` child's share)."""
        sink = _steps_sink.get()
        if sink is None:
            self.plan.add_step(step)
        else:
            sink.append(step)

    def _complete(
        self, messages: list[Message], model: str | ModelSpec | None = None
    ) -> Generator[Request, Any, tuple[Response, int]]:
        index = self._claim()
        try:
            response = yield self.plan.ask(
                messages,
                step=index,
                max_tokens=self.per_call,
                temperature=self.temperature,
                model=model,
            )
        except ModelAPIError as exc:
            raise _Stop("error", error=str(exc), provider=exc) from exc
        return response, index

    def _decompose(self) -> Generator[Request, Any, tuple[Node, int]]:
        """Ask the model for the tree: one call, one nudge-retry on a malformed reply."""
        system = f"{DECOMPOSE_PROMPT}\n\nTools:\n{render_catalogue(self.tool_specs)}"
        messages = [Message("system", system), Message("user", f"Goal: {self.plan.goal}")]
        nudged = False
        while True:
            response, index = yield from self._complete(messages)
            try:
                root = parse_tree_reply(response.text, self.config)
            except ReplyParseError as exc:
                if nudged:
                    raise _Stop("error", error=f"malformed tree after a retry: {exc}") from exc
                nudged = True
                messages = [
                    *messages,
                    Message("assistant", response.text),
                    Message("user", TREE_NUDGE.format(problem=exc)),
                ]
                continue
            self.plan.session.history.append("assistant", response.text)
            self.tree_by = activity_of(response)
            return root, index

    # -- nodes --------------------------------------------------------------------

    def _tick(self, node: Node, node_id: str) -> Generator[Request, Any, _Outcome]:
        """Tick a node and record its end (``trails:TreeNode``), stopped or not."""
        started = now()
        made: list[str] = []
        restored = self.checkpoints.restored.get(node_id)
        leaf = isinstance(node, Action | AgentNode)
        if leaf and restored is None and self.root is not None:  # saved as Running
            self.checkpoints.ended(self.plan, self.root, node_id, None, None, self.memory)
        try:
            if leaf and restored is not None:
                outcome = _Outcome(restored[0], restored[1], None if restored[0] else node_id)
            elif isinstance(node, Action):
                outcome = yield from self._action(node, node_id, made)
            elif isinstance(node, AgentNode):
                outcome = yield from self._agent(node, node_id, made)
            else:
                outcome = yield from self._control(node, node_id)
        except _Stop:
            self.evidence.record(node, node_id, started=started, outcome="stopped", made=(*made,))
            raise
        self.evidence.record(
            node,
            node_id,
            started=started,
            outcome="success" if outcome.success else "failure",
            made=tuple(made),
            ran=outcome.ran,
            votes=outcome.votes,
        )
        if isinstance(node, Action | AgentNode):
            status = "success" if outcome.success else "failure"
            self.memory.set(node_id, f"{status}: {outcome.output}")
            if restored is None and self.root is not None:
                self.checkpoints.ended(
                    self.plan, self.root, node_id, outcome.success, outcome.output, self.memory,
                    stage=(outcome.no_tools, self.iteration, dict(self.calls)),
                )  # fmt: skip
        return outcome

    def _parallel(self, node: Parallel, node_id: str) -> Generator[Request, Any, list[_Outcome]]:
        """Tick every child concurrently; their steps join in child order, then any stop.

        One ``Gather`` request: ``run`` ticks the children in worker threads,
        ``arun`` as asyncio tasks; each child's steps wait in its own share.
        """
        children = [self._child(c, child_id(node_id, i)) for i, c in enumerate(node.children)]
        results: list[_Share] = yield Gather(children, PARALLEL_CHILDREN)
        for _, share, _ in results:
            for step in share:
                self._step(step)
        for _, _, stop in results:
            if stop is not None:
                raise stop
        return [outcome for outcome, _, _ in results if outcome is not None]

    def _child(self, node: Node, node_id: str) -> Generator[Request, Any, _Share]:
        """One ``parallel`` child's tick, its steps kept apart (in its own context copy)."""
        share: list[PlanStep] = []
        _steps_sink.set(share)
        try:
            return (yield from self._tick(node, node_id)), share, None
        except _Stop as stop:
            return None, share, stop

    def _control(
        self, node: Sequence | SequenceWithEarlyExit | Fallback | Parallel, node_id: str
    ) -> Generator[Request, Any, _Outcome]:
        if isinstance(node, Parallel):
            voted = yield from self._parallel(node, node_id)
            wins = sum(o.success for o in voted)
            won = wins >= majority(len(voted))
            last = [o for o in voted if o.success == won][-1]
            failed = next((o.failed_leaf for o in reversed(voted) if not o.success), None)
            votes = (wins, len(voted) - wins)
            return _Outcome(won, last.output, None if won else failed, votes=votes)
        outcomes: list[_Outcome] = []
        for i, child in enumerate(node.children):
            outcome = yield from self._tick(child, child_id(node_id, i))
            outcomes.append(outcome)
            ends = (
                (isinstance(node, Sequence | SequenceWithEarlyExit) and not outcome.success)
                # an early exit: the task is complete, the remaining stages are skipped
                or (isinstance(node, SequenceWithEarlyExit) and outcome.no_tools)
                or (isinstance(node, Fallback) and outcome.success)
            )
            if ends:
                break
        # the deciding child: the last one ticked
        return replace(outcomes[-1], ran=len(outcomes), votes=None)

    def _action(
        self, node: Action, node_id: str, made: list[str]
    ) -> Generator[Request, Any, _Outcome]:
        informed_by = self.tree_by
        observation, activity, failed = yield from self._dispatch(
            node.action, dict(node.action_input), informed_by=informed_by
        )
        if activity is not None:
            made.append(activity)
        self._step(
            PlanStep(
                f"behaviour tree node {node_id}",
                node.action,
                dict(node.action_input),
                observation,
                activity or informed_by or str(self.plan.activity),
            )
        )
        self._end_if_terminal(observation)
        return _Outcome(not failed, stringify(observation), node_id if failed else None)

    def _dispatch(
        self, action: str, action_input: dict[str, Any], *, informed_by: str | None
    ) -> Generator[Request, Any, tuple[Any, str | None, bool]]:
        index = self._claim()
        self.dispatched += 1
        found: tuple[Any, str | None, bool] = yield self.plan.act(
            action, action_input, informed_by=informed_by, step=index
        )
        return found

    def _end_if_terminal(self, observation: Any) -> None:
        """Unwind the walk when the dispatch just made ran a ``terminal=True`` capability."""
        if self.plan.terminal is not None:  # (a parallel sibling's, possibly)
            raise _Stop("goal_achieved", answer=stringify(self.plan.terminal[1]))

    def _agent_system(self, node: AgentNode) -> str:
        """An agent node's system prompt as of now: a tool whose budget is spent leaves it."""
        mine = [(c, m) for c, m in self.tool_specs if node.tools is None or c in node.tools]
        spent = [c for c, _ in mine if c in self.budgets and self.calls[c] >= self.budgets[c]]
        specs = [(c, m) for c, m in mine if c not in spent]
        system = AGENT_PROMPT
        if node.instruction is not None:
            system += f"\n\nInstruction: {node.instruction}"
        system += (
            f"\n\nOverall goal: {self.plan.goal}\nYour sub-goal: {node.goal}"
            f"\n\nTools:\n{render_catalogue(specs)}"
        )
        if spent:
            system += f"\n\nBudget exhausted (do not call): {', '.join(spent)}"
        return system

    def _agent_context(self, node: AgentNode) -> str:
        """What an agent node is shown once, after its system prompt: memory and episodes."""
        extra = render_attachments(self.attachments)
        if len(self.memory):
            extra += f"\n\nWorking memory (results of earlier nodes):\n{self.memory.render()}"
        episodes = self.episodic.retrieve(node.goal, k=3) if self.episodic is not None else []
        if episodes:
            past = "\n\n".join(e.render() for e in episodes)
            extra += f"\n\nPast episodes of similar sub-goals:\n{past}"
        return extra

    def _agent(
        self, node: AgentNode, node_id: str, made: list[str]
    ) -> Generator[Request, Any, _Outcome]:
        tried: list[str] = []
        outcome = yield from self._agent_turns(node, node_id, tried, made)
        if self.episodic is not None:
            from trails.memory.episodic import Episode

            self.episodic.store(
                Episode(
                    goal=node.goal,
                    steps=tuple(tried),
                    outcome="success" if outcome.success else "failure",
                    result=outcome.output,
                )
            )
        return outcome

    def _agent_turns(
        self, node: AgentNode, node_id: str, tried: list[str], made: list[str]
    ) -> Generator[Request, Any, _Outcome]:
        extra = self._agent_context(node)
        images = attachment_images(str(self.plan.activity), self.attachments)  # shown as images
        messages = [Message("system", ""), Message("user", f"Sub-goal: {node.goal}", images=images)]
        turns = node.max_turns or self.agent_turns
        if self.config is not None:
            turns = min(turns, self.config.max_decisions_per_node)
        nudged = False
        last: str | None = None
        for _ in range(turns):
            # rebuilt every turn: a tool whose budget ran out leaves the prompt at once
            messages[0] = Message("system", self._agent_system(node) + extra)
            response, _index = yield from self._complete(messages, node.model)
            messages.append(Message("assistant", response.text))
            try:
                parsed = parse_step(response.text)
            except ReplyParseError as exc:
                if nudged:
                    raise _Stop("error", error=f"malformed reply after a retry: {exc}") from exc
                nudged = True
                messages.append(Message("user", STEP_NUDGE.format(problem=exc)))
                continue
            nudged = False
            completion = activity_of(response)
            if completion is not None:
                made.append(completion)
            thought, action, action_input = (
                parsed["thought"],
                parsed["action"],
                parsed["action_input"],
            )
            if action in ("finish", "fail"):
                self._step(PlanStep(thought, action, action_input, None, completion))
                if action == "finish":
                    return _Outcome(True, parsed["final_answer"], no_tools=not tried)
                reason = stringify(action_input.get("reason") or thought or "failed")
                return _Outcome(False, reason, node_id)
            activity: str | None
            if node.tools is not None and action not in node.tools:
                reason = f"capability {action!r} is not among node {node_id}'s tools"
                observation, activity, _failed = record_refused(
                    self.plan,
                    action,
                    action_input,
                    reason=f"{reason} ({', '.join(node.tools) or 'none'})",
                    informed_by=completion,
                    step=self._claim(),
                )
            else:
                observation, activity, _failed = yield from self._dispatch(
                    action, action_input, informed_by=completion
                )
            if activity is not None:
                made.append(activity)
            self._step(PlanStep(thought, action, action_input, observation, activity or completion))
            self._end_if_terminal(observation)
            last = stringify(observation)
            tried.append(f"{action} {json.dumps(action_input, sort_keys=True, default=str)}")
            messages.append(Message("user", f"Observation: {last}"))
        return _Outcome(False, last or f"sub-goal not reached in {turns} turns", node_id)


register_strategy(NAME, sys.modules[__name__])
