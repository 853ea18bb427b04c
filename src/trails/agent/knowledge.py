"""Entity and knowledge-graph memory: what a conversation taught, learned with provenance.

seed 002's ``EntityMemory`` extracts the named entities of each turn (people,
organisations, projects ...) and its ``KnowledgeGraphMemory`` the (subject,
relation, object) triples; both are shown to the model on the next turn as
``[Known Entities]`` and ``[Known Relationships]`` in its system prompt. In
trails they are not a second store: after each top-level run of a session
configured with ``Session(entity_memory=EntityMemory(llm=...))`` or
``Session(knowledge_graph=KnowledgeGraphMemory(llm=...))``:

- the extraction is a request to the given model, recorded in the session as a
  ``trails:LLMCompletion`` informed by the run;
- what it found is learned through ``memory.learn_many`` (one recorded
  invocation; each fact a ``trails:Memory`` of topic ``entity`` or
  ``relationship``, ``prov:wasDerivedFrom`` the completion's text, so every
  later recall leads back to the session and the completion that taught it);
  an entity already known under the same name with other details is
  superseded, one known as it is is not learned again;
- observers get ``entity_extraction`` (``entities``, ``relationships``,
  ``turn_count``).

Before each top-level run the known facts are listed (``memory.list``, recorded)
and put at the end of the system prompt the planners set, in seed 002's order.

seed 002's ``KnowledgeMemory`` (cross-session facts the agent saves with a
``remember`` tool, shown as ``[Long-term Memory]`` and ``[Recent Memory]``) is
``Session(knowledge_memory=KnowledgeMemory(recent_days=2))``: the tool is
``memory.learn``, offered like every registered capability, and before each
top-level run the principal's current memories (but entities and relationships,
which have their own sections) are listed in the same recorded ``memory.list``
way: those learned in the last ``recent_days`` days under ``[Recent Memory]``,
older ones under ``[Long-term Memory]``.
An extraction that fails (the provider, a reply that is not JSON) is logged on
the ``trails.agent`` logger and leaves the run's result as it was.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trails.errors import TrailsError, UserError
from trails.kernel.observe import notify
from trails.llm.types import Message
from trails.prov.iri import Minter
from trails.store.terms import IRI

if TYPE_CHECKING:
    from trails.agent.history import TokenWindow
    from trails.kernel.context import Context

__all__ = [
    "ENTITY_PROMPT",
    "RELATIONSHIP_PROMPT",
    "EntityMemory",
    "KnowledgeGraphMemory",
    "KnowledgeMemory",
    "SessionKnowledge",
]

log = logging.getLogger("trails.agent")


def _memory() -> Any:
    """``trails.memory.api``, imported when a session is given one of these memories: importing
    it registers the ``memory.*`` capabilities, which every planner then offers the model
    (a session without them keeps its tools and its prompt as they were)."""
    from trails.memory import api

    return api


ENTITY_PROMPT = (
    "Extract the named entities (people, organizations, projects, places, products) the "
    "conversation below mentions. Reply with a JSON array only, each item "
    '{"name": "...", "type": "person|organization|project|place|product|other", '
    '"attributes": "what the conversation says about it"}; reply [] when there are none.'
)
RELATIONSHIP_PROMPT = (
    "Extract the relationships the conversation below states, as (subject, relation, object) "
    "triples. Reply with a JSON array only, each item "
    '{"subject": "...", "relation": "...", "object": "..."}; reply [] when there are none.'
)

_SCOPES = ("private", "shared", "session")
_TYPE = re.compile(r"[^a-z0-9_-]+")


def _client(llm: Any, provider: Any, what: str) -> Any:
    client = llm if llm is not None else provider
    if client is not None and not callable(getattr(client, "complete", None)):
        raise UserError(f"{what}(llm=...) must be an LLM client with complete(), not {client!r}")
    return client


def _check(scope: str, limit: int, what: str) -> None:
    if scope not in _SCOPES:
        raise UserError(f"{what}(scope=...) must be one of {', '.join(_SCOPES)}, not {scope!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UserError(f"{what} limit must be a positive int, not {limit!r}")


@dataclass
class EntityMemory:
    """Entities extracted from each turn into trails memory (seed 002's ``EntityMemory``).

    Args:
        llm: the client asked for the extraction (default: the run's client).
        provider: seed 002's name for ``llm``.
        scope: the memory scope the entities are learned in (``private``: the
            session's principal, across its sessions; ``shared``; ``session``).
        max_entities: the most entities shown to the model, newest first.

    Raises:
        UserError: a client without ``complete``, an unknown scope, a bad limit.
    """

    llm: Any = None
    provider: Any = None
    scope: str = "private"
    max_entities: int = 50

    topic = "entity"
    heading = "[Known Entities]"
    prompt = ENTITY_PROMPT

    def __post_init__(self) -> None:
        self.llm = _client(self.llm, self.provider, "EntityMemory")
        _check(self.scope, self.max_entities, "EntityMemory")
        _memory()

    @property
    def limit(self) -> int:
        """How many entities the prompt shows."""
        return self.max_entities

    def items(self, parsed: list[Any]) -> list[tuple[str, str, list[str]]]:
        """(key, content, tags) of each well-formed entity of a reply."""
        out = []
        for item in parsed:
            if not isinstance(item, Mapping) or not _text(item.get("name")):
                continue
            name = str(item["name"]).strip()
            kind = _TYPE.sub("-", str(item.get("type") or "other").strip().lower()) or "other"
            attributes = item.get("attributes")
            if isinstance(attributes, Mapping):
                attributes = ", ".join(f"{k}: {v}" for k, v in attributes.items())
            content = f"{name} ({kind})"
            if _text(attributes):
                content += f": {str(attributes).strip()}"
            out.append((name.lower(), content, ["entity", kind[:40]]))
        return out

    @staticmethod
    def key(content: str) -> str:
        """The name an entity memory is known by (its text before `` (``)."""
        return content.split(" (", 1)[0].strip().lower()


@dataclass
class KnowledgeGraphMemory:
    """Relationship triples extracted from each turn into trails memory (seed 002's
    ``KnowledgeGraphMemory``).

    Args:
        llm: the client asked for the extraction (default: the run's client).
        provider: seed 002's name for ``llm``.
        scope: the memory scope the triples are learned in (as ``EntityMemory``).
        max_triples: the most relationships shown to the model, newest first.
        storage: seed 002's backend name: ``"memory"``, ``"sqlite"`` or ``"store"``. In
            trails every triple is a recorded memory in the trails store, whichever is
            named (durable, as selectools' ``"sqlite"``); the name is kept.

    Raises:
        UserError: a client without ``complete``, an unknown scope, a bad limit, an
            unknown ``storage``.
    """

    llm: Any = None
    provider: Any = None
    scope: str = "private"
    max_triples: int = 50
    storage: str = "store"

    topic = "relationship"
    heading = "[Known Relationships]"
    prompt = RELATIONSHIP_PROMPT

    def __post_init__(self) -> None:
        self.llm = _client(self.llm, self.provider, "KnowledgeGraphMemory")
        _check(self.scope, self.max_triples, "KnowledgeGraphMemory")
        if self.storage not in ("memory", "sqlite", "store"):
            raise UserError(
                f"KnowledgeGraphMemory(storage=...) must be memory, sqlite or store, "
                f"not {self.storage!r}"
            )
        _memory()

    @property
    def limit(self) -> int:
        """How many relationships the prompt shows."""
        return self.max_triples

    def items(self, parsed: list[Any]) -> list[tuple[str, str, list[str]]]:
        """(key, content, tags) of each well-formed triple of a reply."""
        out = []
        for item in parsed:
            if not isinstance(item, Mapping):
                continue
            parts = [item.get("subject"), item.get("relation"), item.get("object")]
            if not all(_text(p) for p in parts):
                continue
            content = "(" + ", ".join(str(p).strip() for p in parts) + ")"
            out.append((content.lower(), content, ["relationship"]))
        return out

    @staticmethod
    def key(content: str) -> str:
        """A triple is known by its whole text."""
        return content.strip().lower()


def _text(value: Any) -> bool:
    return isinstance(value, str | int | float) and bool(str(value).strip())


def _parse(text: str) -> list[Any]:
    """The JSON array of an extraction reply (fenced or not); [] when there is none."""
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end < start:
        return []
    try:
        parsed = json.loads(text[start : end + 1])
    except ValueError:
        return []
    return parsed if isinstance(parsed, list) else []


Extractor = EntityMemory | KnowledgeGraphMemory


@dataclass
class KnowledgeMemory:
    """What the principal learned, shown at the start of each run (seed 002's ``KnowledgeMemory``).

    Args:
        recent_days: memories learned within this many days are ``[Recent Memory]``;
            older ones ``[Long-term Memory]``.
        scope: the memory scope listed (``private``: the session's principal, across
            its sessions; ``shared``; ``session``).
        max_memories: the most memories shown, newest first.
        directory: seed 002's workspace folder: each run writes what it was shown there
            as plain text, ``MEMORY.md`` (long-term) and ``<date>.md`` (recent), a readable
            mirror of the recorded memories (the store stays the record).

    Raises:
        UserError: a negative ``recent_days``, an unknown scope, a bad limit.
    """

    recent_days: int = 2
    scope: str = "private"
    max_memories: int = 50
    directory: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        days = self.recent_days
        if isinstance(days, bool) or not isinstance(days, int) or days < 0:
            raise UserError(f"KnowledgeMemory(recent_days=...) must be an int >= 0, not {days!r}")
        _check(self.scope, self.max_memories, "KnowledgeMemory")
        _memory()  # its tool, memory.learn, is offered from now on

    def sections(self, ctx: Context) -> list[str]:
        """``[Long-term Memory]`` and ``[Recent Memory]``, from one recorded ``memory.list``."""
        listed = _memory().list_memories(scope=self.scope, limit=self.max_memories, ctx=ctx)
        since = datetime.now(UTC) - timedelta(days=self.recent_days)
        kept = [m for m in reversed(listed) if m.topic not in ("entity", "relationship")]
        older = [m.content for m in kept if m.recorded_at < since]
        recent = [m.content for m in kept if m.recorded_at >= since]
        if self.directory is not None:
            self._mirror(older, recent)
        return [
            heading + "\n" + "\n".join(f"- {c}" for c in contents)
            for heading, contents in (("[Long-term Memory]", older), ("[Recent Memory]", recent))
            if contents
        ]

    def _mirror(self, older: list[str], recent: list[str]) -> None:
        """Write the memories shown into ``directory`` (``MEMORY.md``, ``<date>.md``)."""
        folder = Path(self.directory)  # type: ignore[arg-type]
        folder.mkdir(parents=True, exist_ok=True)
        today = datetime.now(UTC).date().isoformat()
        for name, contents in (("MEMORY.md", older), (f"{today}.md", recent)):
            text = "".join(f"- {c}\n" for c in contents)
            (folder / name).write_text(text, encoding="utf-8")


@dataclass
class SessionKnowledge:
    """A session's entity, knowledge-graph and knowledge memory: listed before a run, learned after.

    Args:
        entity_memory: ``Session(entity_memory=...)``, or None.
        knowledge_graph: ``Session(knowledge_graph=...)``, or None.
        knowledge_memory: ``Session(knowledge_memory=...)``, or None (listed only).

    Raises:
        UserError: one of them is of the wrong type.
    """

    entity_memory: EntityMemory | None = None
    knowledge_graph: KnowledgeGraphMemory | None = None
    knowledge_memory: KnowledgeMemory | None = None
    turns: int = 0
    known: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.entity_memory is not None and not isinstance(self.entity_memory, EntityMemory):
            raise UserError(
                f"entity_memory= must be a trails.agent.knowledge.EntityMemory, "
                f"not {self.entity_memory!r}"
            )
        if self.knowledge_graph is not None and not isinstance(
            self.knowledge_graph, KnowledgeGraphMemory
        ):
            raise UserError(
                f"knowledge_graph= must be a trails.agent.knowledge.KnowledgeGraphMemory, "
                f"not {self.knowledge_graph!r}"
            )
        if self.knowledge_memory is not None and not isinstance(
            self.knowledge_memory, KnowledgeMemory
        ):
            raise UserError(
                f"knowledge_memory= must be a trails.agent.knowledge.KnowledgeMemory, "
                f"not {self.knowledge_memory!r}"
            )

    @classmethod
    def of(
        cls, entity_memory: Any, knowledge_graph: Any, knowledge_memory: Any = None
    ) -> SessionKnowledge | None:
        """The session's knowledge, or None when none of them is configured."""
        if entity_memory is None and knowledge_graph is None and knowledge_memory is None:
            return None
        return cls(entity_memory, knowledge_graph, knowledge_memory)

    @property
    def extractors(self) -> list[Extractor]:
        """The configured extractors, in seed 002's prompt order."""
        return [x for x in (self.entity_memory, self.knowledge_graph) if x is not None]

    def before_run(self, ctx: Context, history: TokenWindow) -> None:
        """List what is known (recorded ``memory.list`` calls) into the system prompt's end.

        Raises:
            TrailsError: the memory could not be read.
        """
        sections = []
        for x in self.extractors:
            memories = _memory().list_memories(scope=x.scope, topic=x.topic, limit=x.limit, ctx=ctx)
            self.known[x.topic] = [(m.id, m.content) for m in memories]
            if memories:
                lines = "\n".join(f"- {m.content}" for m in reversed(memories))
                sections.append(f"{x.heading}\n{lines}")
        if self.knowledge_memory is not None:
            sections += self.knowledge_memory.sections(ctx)
        history.system_suffix = "\n\n".join(sections)

    def after_run(self, ctx: Context, llm: Any, goal: str, answer: Any) -> None:
        """Extract this turn's entities and triples and learn them; failures are logged."""
        self.turns += 1
        text = f"user: {goal}\nassistant: {'' if answer is None else answer}"
        found: dict[str, list[str]] = {}
        for x in self.extractors:
            try:
                found[x.topic] = self._extract(ctx, x, x.llm if x.llm is not None else llm, text)
            except TrailsError as exc:
                log.warning("%s extraction failed: %s", type(x).__name__, exc)
        if found:
            notify(
                ctx,
                "entity_extraction",
                entities=found.get("entity", []),
                relationships=found.get("relationship", []),
                turn_count=self.turns,
            )

    def _extract(self, ctx: Context, x: Extractor, client: Any, text: str) -> list[str]:
        messages = [Message("system", x.prompt), Message("user", text)]
        response = client.complete(messages, ctx=ctx, max_tokens=512)
        source = (
            None
            if response.activity_iri is None
            else str(Minter.part(IRI.trusted(response.activity_iri), "completion"))
        )
        known = {x.key(content): (mid, content) for mid, content in self.known.get(x.topic, [])}
        items: dict[str, dict[str, Any]] = {}
        for key, content, tags in x.items(_parse(response.text or "")):
            old = known.get(key)
            if (old is not None and old[1] == content) or key in items:
                continue
            item: dict[str, Any] = {"content": content, "topic": x.topic, "tags": tags}
            if source is not None:
                item["derived_from"] = source
            if old is not None:
                item["supersedes"] = old[0]
            items[key] = item
        if not items:
            return []
        learned = _memory().learn_many(list(items.values()), scope=x.scope, ctx=ctx)
        for memory in learned:
            known[x.key(memory.content)] = (memory.id, memory.content)
        self.known[x.topic] = list(known.values())
        return [m.content for m in learned]
