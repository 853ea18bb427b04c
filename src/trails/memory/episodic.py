"""Episodic memory: finished sub-goal trajectories, kept for the next similar goal.

A planner that reached (or failed) a sub-goal stores the episode: the goal,
the steps it took, the outcome and the result. Before tackling a new goal it
retrieves the most similar past episodes and shows them to the model as
examples. Episodes are ordinary memories (topic ``episode``, tags
``episode`` and the outcome) learned and recalled through the ``memory.*``
capabilities, so each one is provenance like any other memory: who learned
it, in which session, and which later decisions used it.

``NoOpEpisodicMemory`` keeps nothing, for planners run without memory.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from trails.errors import MemoryInputError
from trails.kernel.context import Context
from trails.memory import api
from trails.prov.content import canonical_json

__all__ = [
    "EPISODE_TOPIC",
    "Episode",
    "EpisodicMemory",
    "NoOpEpisodicMemory",
    "StoreEpisodicMemory",
]

EPISODE_TOPIC = "episode"
Outcome = Literal["success", "failure"]


@dataclass(frozen=True)
class Episode:
    """One finished sub-goal: what was attempted, how, and how it ended.

    ``id`` and ``score`` are set on retrieved episodes (the memory id, the recall score).
    """

    goal: str
    steps: tuple[str, ...]
    outcome: Outcome
    result: str | None = None
    id: str | None = None
    score: float | None = None

    def render(self) -> str:
        """The episode as a short text for a prompt."""
        lines = [f"Goal: {self.goal}", f"Outcome: {self.outcome}"]
        lines += [f"  {i}. {step}" for i, step in enumerate(self.steps, start=1)]
        if self.result:
            lines.append(f"Result: {self.result}")
        return "\n".join(lines)


@runtime_checkable
class EpisodicMemory(Protocol):
    """Where a planner keeps and finds past episodes."""

    def store(self, episode: Episode) -> str | None:
        """Keep ``episode``; returns its id when it was stored."""
        ...

    def retrieve(self, goal: str, *, k: int = 3, outcome: Outcome | None = None) -> list[Episode]:
        """The ``k`` past episodes most similar to ``goal``."""
        ...


class NoOpEpisodicMemory:
    """Episodic memory that keeps nothing and finds nothing."""

    def store(self, episode: Episode) -> str | None:
        return None

    def retrieve(self, goal: str, *, k: int = 3, outcome: Outcome | None = None) -> list[Episode]:
        return []


class StoreEpisodicMemory:
    """Episodes as memories in the provenance store, found by ``memory.recall``.

    Args:
        ctx: the context to learn and recall in (default: the process session).
        scope: ``private`` (default: the agent's own experience), ``shared`` or ``session``.
        agent_did: the agent whose episodes these are (default: the context's principal).
        confidence: the confidence recorded for successful episodes (failures get half).
    """

    def __init__(
        self,
        ctx: Context | None = None,
        *,
        scope: str = "private",
        agent_did: str | None = None,
        confidence: float = 0.9,
    ) -> None:
        self.ctx = ctx
        self.scope = scope
        self.agent_did = agent_did
        self.confidence = confidence

    def store(self, episode: Episode) -> str | None:
        """Learn ``episode`` as a memory; returns the memory id.

        Raises:
            MemoryInputError: an empty goal or an unknown outcome.
        """
        if not episode.goal.strip():
            raise MemoryInputError("an episode needs a goal")
        if episode.outcome not in ("success", "failure"):
            raise MemoryInputError(
                f"episode outcome must be success or failure, not {episode.outcome!r}"
            )
        content = canonical_json(
            {
                "goal": episode.goal,
                "steps": list(episode.steps),
                "outcome": episode.outcome,
                "result": episode.result,
            }
        )
        confidence = self.confidence if episode.outcome == "success" else self.confidence / 2
        memory = api.learn(
            content,
            confidence=confidence,
            topic=EPISODE_TOPIC,
            tags=["episode", episode.outcome],
            scope=self.scope,
            agent_did=self.agent_did,
            ctx=self.ctx,
        )
        return memory.id

    def retrieve(self, goal: str, *, k: int = 3, outcome: Outcome | None = None) -> list[Episode]:
        """The ``k`` stored episodes most similar to ``goal`` (each recall is recorded)."""
        tags: Sequence[str] = ["episode", outcome] if outcome else ["episode"]
        found = api.recall(
            goal,
            scope=self.scope,
            topic=EPISODE_TOPIC,
            tags=tags,
            k=k,
            agent_did=self.agent_did,
            ctx=self.ctx,
        )
        episodes: list[Episode] = []
        for hit in found:
            try:
                data = json.loads(hit.content)
                episodes.append(
                    Episode(
                        goal=str(data["goal"]),
                        steps=tuple(str(s) for s in data.get("steps", ())),
                        outcome=data["outcome"],
                        result=data.get("result"),
                        id=hit.id,
                        score=hit.score,
                    )
                )
            except (ValueError, KeyError, TypeError):
                continue  # a memory tagged "episode" by hand, not one of ours
        return episodes
