"""Behaviour-tree nodes as evidence: each node a recorded activity with its outcome.

A tree run's leaves record themselves (their invocations and completions), but
which control node succeeded, how a parallel vote went and which children were
never ticked are decisions the tree makes; without a record of them an auditor
cannot tell an ``error`` invocation a fallback tolerated from one that failed the
run. This module writes one ``trails:TreeNode`` per node as it ends (one atomic
write each): its id, kind, outcome and span, informed by its children (a control
node) or by the calls and completions it made (a leaf), with the children it
skipped and a parallel node's vote in the same write, and tells the run's observers
(a ``node_end`` event per node, skipped ones included), so a node's outcome can be
watched live as well as audited. It is kept apart from the run loop so that loop stays
about running the tree.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from trails.agent.planners._bt_nodes import Action, AgentNode, Node, child_id
from trails.kernel.context import now
from trails.kernel.observe import notify
from trails.prov.events import TreeNodeEnded, TreeNodeSkipped
from trails.prov.iri import Minter

if TYPE_CHECKING:
    from trails.agent.loop.run import PlanRun

__all__ = ["VOTE_POLICY", "NodeEvidence", "kind_of", "majority"]

#: The rule a ``parallel`` node's vote follows.
VOTE_POLICY = "strict_majority"


def kind_of(node: Node) -> str:
    """A node's kind as recorded: its JSON ``type`` (``action``, ``agent``, ``sequence`` ...)."""
    if isinstance(node, Action):
        return "action"
    if isinstance(node, AgentNode):
        return "agent"
    return node.type_name


def majority(children: int) -> int:
    """How many of ``children`` votes a strict majority needs."""
    return children // 2 + 1


class NodeEvidence:
    """Records the nodes of one tree run, each once, as it ends.

    Args:
        plan: the run the nodes belong to.
    """

    def __init__(self, plan: PlanRun) -> None:
        self.plan = plan
        self._recorded: set[str] = set()
        self._lock = threading.Lock()  # parallel children end concurrently
        self._pass = ""
        self._iteration = 1

    def next_pass(self, number: int) -> None:
        """Start pass ``number`` of the adaptive loop: its nodes are new activities."""
        with self._lock:
            self._recorded.clear()
            self._pass = f"pass{number}-"
            self._iteration = number

    def iri(self, node_id: str) -> str:
        """The IRI of the node ``node_id`` of this run (of this pass, after the first)."""
        return str(Minter.part(str(self.plan.activity), f"{self._pass}node{node_id}"))

    def record(
        self,
        node: Node,
        node_id: str,
        *,
        started: datetime,
        outcome: Literal["success", "failure", "stopped"],
        made: tuple[str, ...] = (),
        ran: int | None = None,
        votes: tuple[int, int] | None = None,
    ) -> None:
        """Write the node's end: what informed it, the children it skipped, its vote.

        Args:
            node: the node.
            node_id: its id (``"1"``, ``"1.2"`` ...).
            started: when it was ticked.
            outcome: how it ended.
            made: a leaf's invocations and completions.
            ran: a control node's count of children ticked (the rest were skipped;
                ignored for a stopped node, whose remaining children were never reached).
            votes: a parallel node's successes and failures.
        """
        informed = list(made)
        skipped: list[TreeNodeSkipped] = []
        if not isinstance(node, Action | AgentNode):
            with self._lock:
                done = set(self._recorded)
            for i, child in enumerate(node.children):
                cid = child_id(node_id, i)
                if cid in done:
                    informed.append(self.iri(cid))
                elif outcome != "stopped" and ran is not None and i >= ran:
                    skipped.append(
                        TreeNodeSkipped(activity=self.iri(cid), node_id=cid, kind=kind_of(child))
                    )
        successes, failures = votes if votes is not None else (None, None)
        plan = self.plan
        plan.ctx.recorder.record(
            TreeNodeEnded(
                session=plan.ctx.session,
                activity=self.iri(node_id),
                run=str(plan.activity),
                node_id=node_id,
                kind=kind_of(node),
                outcome=outcome,
                started=started,
                ended=now(),
                root=node_id == "1",
                informed_by=tuple(dict.fromkeys(informed)),
                skipped=tuple(skipped),
                successes=successes,
                failures=failures,
                threshold=None if votes is None else majority(sum(votes)),
                policy=None if votes is None else VOTE_POLICY,
            )
        )
        with self._lock:
            self._recorded.add(node_id)
            self._recorded.update(s.node_id for s in skipped)
        ends = [(s.node_id, s.kind, "skipped") for s in skipped]
        for nid, kind, how in [*ends, (node_id, kind_of(node), outcome)]:
            notify(
                plan.ctx,
                "node_end",
                call_id=self.iri(nid),
                node_id=nid,
                node_kind=kind,
                outcome=how,
                iteration=self._iteration,
            )
