"""The nodes of a behaviour tree and how a tree is read from JSON or built in code.

The behaviour-tree planner runs a tree of control nodes (``Sequence``,
``Fallback``, ``Parallel``) over leaves (``Action``: one capability dispatch;
``AgentNode``: a ReAct-style sub-goal). A tree comes either from the caller,
as node objects or as a dict, or from the model, as a fenced JSON block; both
are read by one parser here so they obey the same rules (known node types,
non-empty children, a bounded size and depth). Keeping the node types apart
from the run loop keeps each module small and lets callers import the node
classes without the loop.

New node types are compositions: ``register_node_type(name, build)`` teaches
the reader a JSON ``type`` whose ``build(spec)`` returns the built-in nodes
(objects or dicts) standing for it, read with the usual checks. A custom control flow ("retry three times", "ask two
experts, then a judge") and a custom agent node ("a reviewer with these tools
and this instruction") are written that way, and every node that runs is one
of the built-in kinds, so each is recorded like any other (no Python code runs
between the nodes outside the evidence).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeAlias

from trails.agent.loop import (
    json_candidates,
)
from trails.errors import ReplyParseError, TrailsError, UserError
from trails.llm.catalogue import ModelSpec

__all__ = [
    "CONTROL_TYPES",
    "LEAF_TYPES",
    "MAX_DEPTH",
    "MAX_NODES",
    "Action",
    "AgentNode",
    "DefaultTreeConfig",
    "Fallback",
    "Node",
    "NodeStatus",
    "Parallel",
    "Sequence",
    "SequenceWithEarlyExit",
    "Stage",
    "TreeConfig",
    "build_tree",
    "check_node_tools",
    "child_id",
    "count_nodes",
    "iter_nodes",
    "node_types",
    "parse_tree_reply",
    "register_node_type",
    "staged_tree",
    "tree_to_dict",
    "unregister_node_type",
]

#: The most nodes a tree may hold (controls and leaves).
MAX_NODES = 64

#: The deepest a tree may nest (the root is depth 1).
MAX_DEPTH = 8

#: The JSON ``type`` of each control node.
CONTROL_TYPES: tuple[str, ...] = ("sequence", "sequence_early_exit", "fallback", "parallel")


@dataclass(frozen=True)
class Stage:
    """One stage of a tree built from stages (seed 004's ``StageConfig``).

    Attributes:
        name: the stage's name (shown to its agent node).
        instruction: what this stage does with the goal.
        model: the model of its turns (seed's ``TaskType``; None: the client's own).
    """

    name: str
    instruction: str
    model: str | ModelSpec | None = None

    def __post_init__(self) -> None:
        for what in ("name", "instruction"):
            value = getattr(self, what)
            if not isinstance(value, str) or not value.strip():
                raise UserError(f"Stage {what} must be a non-empty str, not {value!r}")


@dataclass(frozen=True)
class TreeConfig:
    """The limits of one behaviour-tree run (seed 004's ``TreeConfig``).

    Attributes:
        max_depth: how deep a tree may nest (the root is depth 1).
        max_decisions_per_node: the LLM-turn cap of an agent node without its own
            ``max_turns`` (a node's own ``max_turns`` is capped by it too).
        max_total_nodes: how many nodes a tree may hold.
        stages: without ``tree=``, run these stages in order instead of asking the
            model for a tree: a ``SequenceWithEarlyExit`` of one agent node per
            stage, each working on the goal under its stage's instruction and
            seeing the earlier stages' results (a stage that finishes without a
            tool call completes the task; the rest are skipped).
        max_iterations: the adaptive loop: tick the whole tree again, up to this
            many times, while the last pass called a tool and succeeded (a pass
            without a tool call has nothing left to do); 1: tick once.
        checkpointer: the seed's ``Checkpointer``: a ``behaviour_tree.Checkpointer``
            the run saves its state to and restores it from (``checkpointer=`` of
            ``run`` takes precedence).

    The defaults are trails' long-standing limits (8, 5, 64), not the seed's
    ``DefaultTreeConfig`` (3, 10, 20): a model-built tree of three levels is
    tight for ``sequence`` / ``fallback`` nesting, and runs are bounded by
    ``max_steps`` and budgets anyway. ``TreeConfig.seed_defaults()`` gives the
    seed's.

    Raises:
        UserError: a limit that is not an int >= 1.
    """

    max_depth: int = 8
    max_decisions_per_node: int = 5
    max_total_nodes: int = 64
    stages: tuple[Stage, ...] = ()
    max_iterations: int = 1
    checkpointer: Any = None

    def __post_init__(self) -> None:
        for name in ("max_depth", "max_decisions_per_node", "max_total_nodes", "max_iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"TreeConfig {name} must be an int >= 1, not {value!r}")
        stages = tuple(self.stages)
        if not all(isinstance(st, Stage) for st in stages):
            raise UserError(f"TreeConfig stages must be Stage objects, not {self.stages!r}")
        object.__setattr__(self, "stages", stages)

    @classmethod
    def seed_defaults(cls) -> TreeConfig:
        """The seed's ``DefaultTreeConfig``: depth 3, 10 decisions per node, 20 nodes."""
        return cls(max_depth=3, max_decisions_per_node=10, max_total_nodes=20)


def DefaultTreeConfig() -> TreeConfig:
    """Seed 004's ``reactree.DefaultTreeConfig()``: depth 3, 10 decisions per node, 20 nodes.

    ``TreeConfig()`` keeps trails' own limits (8, 5, 64; see ``TreeConfig``); this is the
    seed's, under the seed's name.
    """
    return TreeConfig.seed_defaults()


class NodeStatus(StrEnum):
    """Seed 004's ``NodeStatus``: a node is Running, then ends in Success or Failure.

    The values are the ``trails:nodeOutcome`` a node's activity records (``NodeStatus(
    outcome)`` reads one back; a node a run's stop cut short or never reached records
    ``stopped`` or ``skipped``, which are not statuses of a node that ran). ``str()`` is
    the seed's ``String()``: ``Running``, ``Success``, ``Failure``.
    """

    Running = "running"
    Success = "success"
    Failure = "failure"

    def __str__(self) -> str:
        return self.name

    def String(self) -> str:
        """The seed's ``String()``: ``Running``, ``Success`` or ``Failure``."""
        return self.name


#: The JSON ``type`` of each leaf.
LEAF_TYPES: tuple[str, ...] = ("action", "agent")


@dataclass(frozen=True)
class Action:
    """A leaf that dispatches one capability; it fails when dispatch fails.

    Attributes:
        action: the capability id.
        action_input: its arguments.
    """

    action: str
    action_input: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentNode:
    """A leaf that works on a sub-goal with ReAct-style turns until finish or fail.

    Attributes:
        goal: the sub-goal text.
        max_turns: the node's cap on LLM turns (None: the run's ``agent_max_turns``).
        tools: the capability ids this node may call, a subset of the run's (None:
            all of them); a call of another is refused and recorded as refused.
        instruction: the node's own system instruction, added to its prompt.
        model: the model this node's turns use (a cheaper or a stronger one than the
            run's): a model id the run's client is asked for, or a ``ModelSpec``,
            which may name another provider (served by the client configured for
            it: ``[llm.providers]``); in a dict tree ``{"provider": P, "model": M}``.
            None: the client's own model.
    """

    goal: str
    max_turns: int | None = None
    model: str | ModelSpec | None = None
    tools: tuple[str, ...] | None = None
    instruction: str | None = None


@dataclass(frozen=True, init=False)
class _Control:
    """A control node: its children, in order (at least one)."""

    children: tuple[Node, ...]
    type_name = ""

    def __init__(self, *children: Node) -> None:
        object.__setattr__(self, "children", tuple(children))


@dataclass(frozen=True, init=False)
class Sequence(_Control):
    """Succeeds when every child succeeds; stops at the first failing child."""

    type_name = "sequence"


@dataclass(frozen=True, init=False)
class SequenceWithEarlyExit(_Control):
    """A sequence that also stops, successfully, when a child completes the task.

    Seed 004's ``BuildSequenceWithEarlyExit``: like ``Sequence`` it stops at the
    first failing child; in addition, an agent child that finishes without calling
    any tool has completed the task, and the remaining children are skipped.
    """

    type_name = "sequence_early_exit"


@dataclass(frozen=True, init=False)
class Fallback(_Control):
    """Succeeds at the first succeeding child; fails when every child fails."""

    type_name = "fallback"


@dataclass(frozen=True, init=False)
class Parallel(_Control):
    """Runs every child (one after another) and succeeds when a strict majority succeed."""

    type_name = "parallel"


Node: TypeAlias = Sequence | SequenceWithEarlyExit | Fallback | Parallel | Action | AgentNode
"""Any node of a behaviour tree."""

_CONTROLS: dict[str, type[_Control]] = {
    "sequence": Sequence,
    "sequence_early_exit": SequenceWithEarlyExit,
    "fallback": Fallback,
    "parallel": Parallel,
}


NodeBuilder = Callable[[Mapping[str, Any]], Any]
"""``build(spec)``: a custom JSON node as built-in nodes (node objects or dicts)."""

_CUSTOM: dict[str, NodeBuilder] = {}


def register_node_type(name: str, build: NodeBuilder) -> None:
    """Teach tree reading a new JSON ``type``, built from the built-in nodes.

    Args:
        name: the ``type`` value (not a built-in one).
        build: ``build(spec)`` returns the node standing for ``spec`` (a node
            object or a dict, its children may be either); it is read with the
            usual checks, and counts as one more node against ``max_total_nodes``.

    Raises:
        UserError: a built-in or already registered name, or ``build`` not callable.
    """
    if not isinstance(name, str) or not name.strip():
        raise UserError(f"a node type name must be a non-empty str, not {name!r}")
    if name in (*CONTROL_TYPES, *LEAF_TYPES) or name in _CUSTOM:
        raise UserError(f"node type {name!r} already exists")
    if not callable(build):
        raise UserError(f"build must be callable, not {build!r}")
    _CUSTOM[name] = build


def unregister_node_type(name: str) -> None:
    """Forget a type ``register_node_type`` added (a no-op for an unknown name)."""
    _CUSTOM.pop(name, None)


def node_types() -> tuple[str, ...]:
    """Every JSON ``type`` a tree may use: built-in, then registered."""
    return (*CONTROL_TYPES, *LEAF_TYPES, *_CUSTOM)


def child_id(parent: str, index: int) -> str:
    """The id of a parent's ``index``-th child (0-based): ``"1.2"`` for ``("1", 1)``."""
    return f"{parent}.{index + 1}"


class _Reader:
    """Reads one tree, counting nodes; errors are raised as ``error`` (UserError or parse)."""

    def __init__(self, error: type[TrailsError], config: TreeConfig | None = None) -> None:
        self.error = error
        self.config = config if config is not None else TreeConfig()
        self.nodes = 0

    def fail(self, where: str, message: str) -> TrailsError:
        return self.error(f"tree node {where}: {message}")

    def read(self, value: Any, where: str, depth: int) -> Node:
        self.nodes += 1
        limit, deepest = self.config.max_total_nodes, self.config.max_depth
        if self.nodes > limit:
            raise self.error(f"the tree has more than {limit} nodes")
        if depth > deepest:
            raise self.fail(where, f"the tree is deeper than {deepest} levels")
        if isinstance(value, _Control):
            return self._control(type(value), value.children, where, depth)
        if isinstance(value, Action):
            return self._action(value.action, value.action_input, where)
        if isinstance(value, AgentNode):
            return self._agent(value.goal, value.max_turns, where, value.model, value)
        if not isinstance(value, Mapping):
            raise self.fail(where, f"must be a node or a JSON object, not {value!r}")
        kind = value.get("type")
        if kind in _CONTROLS:
            children = value.get("children")
            if not isinstance(children, list | tuple):
                raise self.fail(where, f"'children' must be a list, not {children!r}")
            return self._control(_CONTROLS[kind], children, where, depth)
        if kind == "action":
            return self._action(value.get("action"), value.get("action_input", {}), where)
        if kind == "agent":
            goal, turns, model = value.get("goal"), value.get("max_turns"), value.get("model")
            return self._agent(goal, turns, where, model, value)
        if isinstance(kind, str) and kind in _CUSTOM:
            try:
                built = _CUSTOM[kind](value)
            except TrailsError:
                raise
            except Exception as exc:  # a builder's bug, told as this node's problem
                raise self.fail(where, f"node type {kind!r} failed: {exc}") from exc
            return self.read(built, where, depth)
        known = ", ".join(node_types())
        raise self.fail(where, f"'type' must be one of {known}, not {kind!r}")

    def _control(self, cls: type[_Control], children: Any, where: str, depth: int) -> Node:
        if not children:
            raise self.fail(where, f"a {cls.type_name} needs at least one child")
        read = [self.read(c, child_id(where, i), depth + 1) for i, c in enumerate(children)]
        node = cls(*read)
        assert isinstance(node, Sequence | SequenceWithEarlyExit | Fallback | Parallel)
        return node

    def _action(self, action: Any, action_input: Any, where: str) -> Action:
        if not isinstance(action, str) or not action.strip():
            raise self.fail(where, f"'action' must be a non-empty string, not {action!r}")
        if action_input is None:
            action_input = {}
        if not isinstance(action_input, Mapping):
            raise self.fail(where, f"'action_input' must be a JSON object, not {action_input!r}")
        return Action(action.strip(), dict(action_input))

    def _agent(
        self, goal: Any, max_turns: Any, where: str, model: Any = None, given: Any = None
    ) -> AgentNode:
        if not isinstance(goal, str) or not goal.strip():
            raise self.fail(where, f"'goal' must be a non-empty string, not {goal!r}")
        if max_turns is not None and (
            isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1
        ):
            raise self.fail(where, f"'max_turns' must be an int >= 1, not {max_turns!r}")
        tools, instruction = _field(given, "tools"), _field(given, "instruction")
        if tools is not None and (
            isinstance(tools, str)
            or not isinstance(tools, list | tuple)
            or not all(isinstance(t, str) and t.strip() for t in tools)
        ):
            raise self.fail(where, f"'tools' must be a list of capability ids, not {tools!r}")
        if instruction is not None and (
            not isinstance(instruction, str) or not instruction.strip()
        ):
            raise self.fail(where, f"'instruction' must be a non-empty string, not {instruction!r}")
        return AgentNode(
            goal.strip(),
            max_turns,
            self._model(model, where),
            None if tools is None else tuple(t.strip() for t in tools),
            None if instruction is None else instruction.strip(),
        )

    def _model(self, model: Any, where: str) -> str | ModelSpec | None:
        if model is None or isinstance(model, ModelSpec):
            return model
        if isinstance(model, str) and model.strip():
            return model.strip()
        if isinstance(model, Mapping) and set(model) == {"provider", "model"}:
            provider, name = model["provider"], model["model"]
            if all(isinstance(v, str) and v.strip() for v in (provider, name)):
                return ModelSpec(provider.strip(), name.strip())
        raise self.fail(
            where,
            '\'model\' must be a non-empty string or {"provider": ..., "model": ...}, '
            f"not {model!r}",
        )


def build_tree(
    value: Any, *, error: type[TrailsError] = UserError, config: TreeConfig | None = None
) -> Node:
    """Check a tree given as node objects or as a dict (or a mix) and return it as nodes.

    Args:
        value: the root: a node object, or ``{"type": ..., ...}``.
        error: the exception class of a malformed tree.
        config: the limits (default ``TreeConfig()``).

    Returns:
        The root node.

    Raises:
        UserError: (or ``error``) an unknown node type, an empty control node, a leaf
            without its action or goal, or a tree past ``MAX_NODES`` / ``MAX_DEPTH``.
    """
    return _Reader(error, config).read(value, "1", 1)


def parse_tree_reply(text: str, config: TreeConfig | None = None) -> Node:
    """Extract a behaviour tree from a model reply: ``{"tree": {...}}`` or the root itself.

    Args:
        text: the raw reply.

    Returns:
        The root node.

    Raises:
        ReplyParseError: no JSON object with ``type`` (or ``tree``), or a malformed tree.
    """
    if not isinstance(text, str):
        raise ReplyParseError(f"the reply must be text, not {type(text).__name__}")
    for value in json_candidates(text):
        if isinstance(value, dict) and isinstance(value.get("tree"), dict):
            value = value["tree"]
        if isinstance(value, dict) and "type" in value:
            return build_tree(value, error=ReplyParseError, config=config)
    raise ReplyParseError('no JSON tree found; expected {"type": ..., "children": [...]}')


def tree_to_dict(node: Node, node_id: str = "1") -> dict[str, Any]:
    """The tree as plain JSON data, each node carrying its ``id`` (``"1"``, ``"1.2"`` ...).

    Args:
        node: the root.
        node_id: the root's id.

    Returns:
        The dict the planner records as the run's ``PlanDocument``.
    """
    if isinstance(node, Action):
        return {
            "id": node_id,
            "type": "action",
            "action": node.action,
            "action_input": dict(node.action_input),
        }
    if isinstance(node, AgentNode):
        out: dict[str, Any] = {"id": node_id, "type": "agent", "goal": node.goal}
        if node.max_turns is not None:
            out["max_turns"] = node.max_turns
        if isinstance(node.model, ModelSpec):
            out["model"] = {"provider": node.model.provider, "model": node.model.model}
        elif node.model is not None:
            out["model"] = node.model
        if node.tools is not None:
            out["tools"] = list(node.tools)
        if node.instruction is not None:
            out["instruction"] = node.instruction
        return out
    return {
        "id": node_id,
        "type": node.type_name,
        "children": [tree_to_dict(c, child_id(node_id, i)) for i, c in enumerate(node.children)],
    }


def count_nodes(node: Node) -> int:
    """How many nodes the tree holds."""
    return sum(1 for _ in iter_nodes(node))


def iter_nodes(node: Node) -> Iterator[Node]:
    """Every node of the tree, the root first (depth first, in child order)."""
    yield node
    if not isinstance(node, Action | AgentNode):
        for child in node.children:
            yield from iter_nodes(child)


def _field(given: Any, name: str) -> Any:
    """A field of a node given as a dict or as an object (None when it has none)."""
    if isinstance(given, Mapping):
        return given.get(name)
    return getattr(given, name, None)


def staged_tree(goal: str, stages: tuple[Stage, ...]) -> Node:
    """The tree of ``TreeConfig.stages``: one agent node per stage, exiting early when done."""
    return SequenceWithEarlyExit(
        *(
            AgentNode(
                goal, model=st.model, instruction=f"You are the {st.name} stage. {st.instruction}"
            )
            for st in stages
        )
    )


def check_node_tools(root: Node | None, offered: list[str]) -> None:
    """Refuse a tree whose agent node names a tool the run does not offer.

    Raises:
        UserError: naming the node and the tools it may not have.
    """
    for node in iter_nodes(root) if root is not None else ():
        if isinstance(node, AgentNode) and node.tools is not None:
            missing = [t for t in node.tools if t not in offered]
            if missing:
                raise UserError(
                    f"agent node {node.goal!r} names tools the run does not offer: "
                    f"{', '.join(missing)} (offered: {', '.join(offered) or 'none'})"
                )
