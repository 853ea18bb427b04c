"""Checkpoints of a behaviour-tree run: its state saved as evidence, restored by a later run.

reactree's ``TreeConfig.Checkpointer`` saves a tree's execution state so a run that
stopped (a budget, a crash, a killed process) continues where it stopped. In trails
``behaviour_tree.run(..., checkpointer=Checkpointer("deploy-42"))`` does the same
through the store: after every leaf (an action or an agent node) ends, the run writes
one ``trails:TreeCheckpoint`` entity (one atomic write; a leaf starting writes one
too, its status ``Running``) holding the seed's state keys
as JSON (``reactree_goal``, ``reactree_node_status``: the last leaf's status,
``reactree_output``, ``reactree_working_memory``), every leaf's status by node id and
the tree itself. The JSON is the entity's ``prov:value`` in the content graph (working
memory may hold personal data); the session graph keeps its digest, its
``trails:checkpointId``, its ``trails:checkpointSeq``, the run that generated it and the
principal it is attributed to.

A later run given a checkpointer of the same id (in this process or another one, on the
same store) reads the newest checkpoint of that id saved for its own principal, records
that it ``prov:used`` it, restores the working memory, runs the checkpointed tree (when
none is given; a different given tree is refused) and does not tick again the leaves the
checkpoint says ended: their saved outcome stands. ``tree_state(id, principal=)`` reads
the saved state keys back.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from trails.agent.planners._bt_nodes import Node, build_tree, tree_to_dict
from trails.errors import UserError
from trails.kernel.context import now
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions
from trails.store.terms import IRI, Literal
from trails.text import check_text

if TYPE_CHECKING:
    from trails.agent.loop import PlanRun
    from trails.memory.working import WorkingMemory
    from trails.store.base import Store

__all__ = [
    "STATE_KEYS",
    "Checkpoint",
    "CheckpointRestored",
    "CheckpointSaved",
    "Checkpointer",
    "StateKeyGoal",
    "StateKeyIterationContext",
    "StateKeyIterationCount",
    "StateKeyNodeStatus",
    "StateKeyOutput",
    "StateKeyPreviousStageOutput",
    "StateKeyTaskCompleted",
    "StateKeyToolCallCounts",
    "StateKeyWorkingMemory",
    "TreeCheckpoints",
    "tree_state",
]

#: The seed's state keys (``reactree.StateKeyGoal`` ...), as a checkpoint holds them.
StateKeyGoal = "reactree_goal"
StateKeyNodeStatus = "reactree_node_status"
StateKeyOutput = "reactree_output"
StateKeyWorkingMemory = "reactree_working_memory"
StateKeyTaskCompleted = "reactree_task_completed"
StateKeyPreviousStageOutput = "reactree_previous_stage_output"
StateKeyIterationContext = "reactree_iteration_context"
StateKeyIterationCount = "reactree_iteration_count"
StateKeyToolCallCounts = "reactree_tool_call_counts"
STATE_KEYS = (
    StateKeyGoal,
    StateKeyNodeStatus,
    StateKeyOutput,
    StateKeyWorkingMemory,
    StateKeyTaskCompleted,
    StateKeyPreviousStageOutput,
    StateKeyIterationContext,
    StateKeyIterationCount,
    StateKeyToolCallCounts,
)


def _stage_keys(
    output: str | None, memory: WorkingMemory, no_tools: bool, iteration: int, calls: dict[str, int]
) -> dict[str, Any]:
    """The seed's stage and iteration keys after a leaf ended."""
    return {
        StateKeyTaskCompleted: no_tools,  # the leaf finished without a tool call
        StateKeyPreviousStageOutput: output,
        StateKeyIterationContext: memory.get("iteration"),
        StateKeyIterationCount: iteration - 1,  # 0-indexed, as the seed counts
        StateKeyToolCallCounts: dict(calls),
    }


_LATEST = f"""SELECT ?id ?principal ?cp ?seq ?json WHERE {{ GRAPH ?g {{
  ?cp a {T.TreeCheckpoint.n3()} ; {T.checkpointId.n3()} ?id ; {T.checkpointSeq.n3()} ?seq ;
      {PROV.wasAttributedTo.n3()} ?who .
  ?who {T.principalId.n3()} ?principal .
}} GRAPH ?c {{ ?cp {PROV.value.n3()} ?json }} }} ORDER BY DESC(?seq) LIMIT 1"""


class Checkpoint:
    """A saved state: the entity that holds it, its sequence number and its JSON."""

    def __init__(self, entity: str, seq: int, state: Mapping[str, Any]) -> None:
        self.entity = entity
        self.seq = seq
        self.state = dict(state)

    @property
    def leaves(self) -> dict[str, tuple[bool, str | None]]:
        """Each ended leaf's id -> (success, output)."""
        found = self.state.get("leaves") or {}
        ended = {k: v for k, v in found.items() if v["status"] in ("Success", "Failure")}
        return {k: (v["status"] == "Success", v.get("output")) for k, v in ended.items()}


class Checkpointer:
    """Where a behaviour-tree run saves its state and a later run restores it from.

    Args:
        checkpoint_id: the id runs of one task share (the seed's thread id): a run
            restores the newest checkpoint saved under it for its principal.

    Raises:
        UserError: an empty or non-str id.
    """

    def __init__(self, checkpoint_id: str) -> None:
        if not isinstance(checkpoint_id, str) or not checkpoint_id.strip():
            raise UserError(f"Checkpointer id must be a non-empty str, not {checkpoint_id!r}")
        check_text(checkpoint_id, "Checkpointer id")
        self.checkpoint_id = checkpoint_id
        self._lock = threading.Lock()
        self._seq = 0
        self._last: str | None = None

    def __repr__(self) -> str:
        return f"Checkpointer({self.checkpoint_id!r})"

    def restore(self, plan: PlanRun) -> Checkpoint | None:
        """The newest checkpoint of this id for the run's principal; its use is recorded."""
        found = latest(plan.ctx.recorder.store, self.checkpoint_id, plan.ctx.principal)
        with self._lock:
            self._seq = found.seq if found is not None else 0
            self._last = found.entity if found is not None else None
        if found is not None:
            plan.ctx.recorder.record(
                CheckpointRestored(
                    session=plan.ctx.session, run=plan.activity, checkpoint=found.entity
                )
            )
        return found

    def save(self, plan: PlanRun, state: Mapping[str, Any]) -> str:
        """Write one checkpoint of ``state`` (one atomic write); returns its entity IRI."""
        with self._lock:
            self._seq += 1
            entity = plan.ctx.recorder.minter.entity()
            plan.ctx.recorder.record(
                CheckpointSaved(
                    session=plan.ctx.session,
                    entity=entity,
                    run=plan.activity,
                    principal=plan.ctx.principal,
                    checkpoint_id=self.checkpoint_id,
                    seq=self._seq,
                    state=dict(state),
                    previous=self._last,
                    at=now(),
                )
            )
            self._last = entity
            return entity


def latest(store: Store, checkpoint_id: str, principal: str) -> Checkpoint | None:
    """The newest checkpoint saved under ``checkpoint_id`` for ``principal``, if any."""
    rows = store.query(_LATEST, {"id": Literal(checkpoint_id), "principal": Literal(principal)})
    for row in rows if isinstance(rows, Solutions) else ():
        seq, text = row["seq"], row["json"]
        if isinstance(seq, Literal) and isinstance(text, Literal):
            return Checkpoint(str(row["cp"]), int(seq.value), json.loads(text.value))
    return None


def tree_state(checkpoint_id: str, *, principal: str, store: Store | None = None) -> dict[str, Any]:
    """The seed's state keys of the newest checkpoint of ``checkpoint_id``, read from the store.

    Returns ``{"reactree_goal": ..., "reactree_node_status": "Running" | "Success" |
    "Failure", "reactree_output": ..., "reactree_working_memory": {...}}``, and after a leaf
    ended the seed's stage keys too (``reactree_task_completed``,
    ``reactree_previous_stage_output``, ``reactree_iteration_context``,
    ``reactree_iteration_count``, ``reactree_tool_call_counts``); empty when nothing was
    saved.

    Raises:
        UserError: ``checkpoint_id`` or ``principal`` is not a non-empty str.
    """
    if not isinstance(checkpoint_id, str) or not checkpoint_id:
        raise UserError(f"tree_state checkpoint id must be a non-empty str, not {checkpoint_id!r}")
    if not isinstance(principal, str) or not principal:
        raise UserError(f"tree_state principal= must be a non-empty str, not {principal!r}")
    if store is None:
        from trails.prov.recorder import default_recorder

        store = default_recorder().store
    found = latest(store, checkpoint_id, principal)
    return {} if found is None else {k: found.state[k] for k in STATE_KEYS if k in found.state}


class CheckpointSaved(Event):
    """A behaviour-tree run saved its state (``checkpointer=``): a ``trails:TreeCheckpoint``."""

    entity: str
    run: str
    principal: str
    checkpoint_id: str
    seq: int
    state: dict[str, Any]
    previous: str | None
    at: datetime

    def emit(self, b: QuadBuilder) -> None:
        e = IRI.trusted(self.entity)
        b.entity(e, T.TreeCheckpoint, self.state, generated_by=IRI.trusted(self.run), at=self.at)
        b.add(e, PROV.wasAttributedTo, b.agent(self.principal))
        b.value(e, T.checkpointId, self.checkpoint_id)
        b.value(e, T.checkpointSeq, self.seq)
        if self.previous is not None:
            b.add(e, PROV.wasDerivedFrom, IRI.trusted(self.previous))
        b.label(e, f"tree checkpoint {self.seq}")


class CheckpointRestored(Event):
    """A behaviour-tree run restored a checkpoint: the run ``prov:used`` it."""

    run: str
    checkpoint: str

    def emit(self, b: QuadBuilder) -> None:
        b.add(IRI.trusted(self.run), PROV.used, IRI.trusted(self.checkpoint))


class TreeCheckpoints:
    """One run's side of a checkpointer: what it restored, and a save after each leaf."""

    def __init__(self, checkpointer: Checkpointer | None) -> None:
        if checkpointer is not None and not isinstance(checkpointer, Checkpointer):
            raise UserError(f"checkpointer= must be a Checkpointer, not {checkpointer!r}")
        self.checkpointer = checkpointer
        self.restored: dict[str, tuple[bool, str | None]] = {}
        self.leaves: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def begin(self, plan: PlanRun, root: Node | None, memory: WorkingMemory) -> Node | None:
        """Restore the newest checkpoint (if any): working memory, leaves, and the tree.

        Raises:
            UserError: the given tree, or the run's goal, is not the checkpointed one.
        """
        if self.checkpointer is None:
            return root
        found = self.checkpointer.restore(plan)
        if found is None:
            return root
        goal = found.state.get(StateKeyGoal)
        if isinstance(goal, str) and goal != plan.goal:
            raise UserError(
                f"checkpoint {self.checkpointer.checkpoint_id!r} is of another goal ({goal!r}); "
                "resume it with the same goal, or use a new checkpoint id"
            )
        saved = found.state.get("tree")
        if root is None and isinstance(saved, dict):
            root = build_tree(saved)
        elif root is not None and saved is not None and tree_to_dict(root) != saved:
            raise UserError(
                f"checkpoint {self.checkpointer.checkpoint_id!r} holds another tree; "
                "resume it with the same tree (or none), or use a new checkpoint id"
            )
        memory.restore(found.state.get(StateKeyWorkingMemory) or {})
        self.restored = found.leaves
        self.leaves = dict(found.state.get("leaves") or {})
        return root

    def ended(
        self,
        plan: PlanRun,
        root: Node,
        node_id: str,
        success: bool | None,
        output: str | None,
        memory: WorkingMemory,
        stage: tuple[bool, int, dict[str, int]] | None = None,
    ) -> None:
        """Save the state as a leaf starts (``success`` None: ``Running``) or after it ended.

        Nothing without a checkpointer. A leaf saved ``Running`` and never ended (the
        process died in it) is ticked again by the run that restores the checkpoint.
        """
        if self.checkpointer is None:
            return
        status = "Running" if success is None else "Success" if success else "Failure"
        with self._lock:
            self.leaves[node_id] = {"status": status, "output": output}
            state = {
                StateKeyGoal: plan.goal,
                StateKeyNodeStatus: status,
                StateKeyOutput: output,
                StateKeyWorkingMemory: dict(memory.snapshot()),
                "leaves": dict(self.leaves),
                **(_stage_keys(output, memory, *stage) if stage is not None else {}),
                "tree": tree_to_dict(root),
            }
            self.checkpointer.save(plan, state)
