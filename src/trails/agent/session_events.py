"""A session's own actions as evidence: its trace metadata, each save and each load.

selectools users attach ``trace_metadata={"user_id": ..., "environment": ...}``
to their runs, and hear ``on_session_save`` / ``on_session_load`` when a
session store writes or restores a conversation. In trails a session is
recorded anyway, so these are recorded too, each as one atomic write in the
session's graph:

- ``Session(trace_metadata={...})`` becomes a ``trails:TraceMetadata`` entity
  the session generated when it started (its JSON kept in the content graph,
  since it may hold personal data; its digest in the session graph);
- ``session.persist()`` is a ``trails:SessionSave`` activity of the session, in
  the same write as the projection it saves, with ``trails:messageCount``;
- ``session.fork()`` of a replayed session (the trails way to load one and go
  on) is a ``trails:SessionLoad`` activity of the new session that
  ``prov:used`` the projection it read, in the same write as the fork.

Observers get ``session_save`` / ``session_load`` (``session_id``,
``message_count``), as seed 002's observers do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from trails.errors import UserError
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI
from trails.text import check_text

if TYPE_CHECKING:
    from trails.kernel.context import Context

__all__ = [
    "AgentNamed",
    "SessionLoaded",
    "SessionSaved",
    "TraceMetadataRecorded",
    "check_trace_metadata",
    "record_agent_name",
    "record_trace_metadata",
    "trace_metadata_iri",
]


def trace_metadata_iri(session: str) -> IRI:
    """The IRI of a session's ``trails:TraceMetadata`` entity."""
    return Minter.part(session, "trace-metadata")


def check_trace_metadata(value: Any) -> dict[str, Any]:
    """``trace_metadata=`` checked: a dict of str keys whose values JSON can hold.

    Raises:
        UserError: not a mapping, a key that is not a str, or a value JSON cannot hold.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise UserError(
            f"trace_metadata= must be a dict like {{'user_id': 'u123'}}, not {type(value).__name__}"
        )
    clean: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not key.strip():
            raise UserError(f"trace_metadata keys must be non-empty str, not {key!r}")
        check_text(key, "trace_metadata key")
        try:
            text = json.dumps(item, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise UserError(
                f"trace_metadata[{key!r}] must be JSON data (str, number, bool, list, dict), "
                f"not {type(item).__name__}"
            ) from exc
        check_text(text, f"trace_metadata[{key!r}]")
        clean[key] = item
    return clean


class TraceMetadataRecorded(Event):
    """The metadata a session was given (``Session(trace_metadata=...)``), at its start."""

    metadata: dict[str, Any]
    at: datetime

    def emit(self, b: QuadBuilder) -> None:
        s = self.graph
        m = trace_metadata_iri(str(s))
        b.entity(m, T.TraceMetadata, self.metadata, generated_by=s, at=self.at)
        b.label(m, f"trace metadata ({len(self.metadata)} keys)")


class AgentNamed(Event):
    """The agent a session runs as (``Session(name=...)``): a ``prov:SoftwareAgent``.

    It is ``<session>:agent``, labelled with the name, acting on behalf of the session's
    principal; the session is associated with it and carries the name as
    ``trails:agentName`` (as a received span's activity does), so "which agent did this"
    is a plain PROV-O question.
    """

    name: str
    principal: str

    def emit(self, b: QuadBuilder) -> None:
        s = self.graph
        agent = Minter.part(s, "agent")
        b.types(agent, PROV.SoftwareAgent, PROV.Agent)
        b.label(agent, self.name)
        b.add(agent, PROV.actedOnBehalfOf, b.agent(self.principal))
        b.add(s, PROV.wasAssociatedWith, agent)
        b.value(s, T.agentName, self.name)


def record_agent_name(ctx: Context, name: str | None) -> None:
    """Record the name a session's agent goes by (nothing when it has none).

    Raises:
        StoreError: the write failed; nothing was recorded.
    """
    if name:
        ctx.recorder.record(
            AgentNamed(session=str(ctx.session), name=name, principal=ctx.principal)
        )


class SessionSaved(Event):
    """``persist()``: the session saved its conversation as a projection."""

    activity: str
    at: datetime
    message_count: int
    target: str
    """The graph the projection was written into."""

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        b.activity(a, T.SessionSave, self.at, self.at)
        b.child_of(a, self.graph, self.graph)
        b.label(a, f"session save to {self.target}")
        b.value(a, T.messageCount, self.message_count)


class SessionLoaded(Event):
    """``fork()``: a new session loaded a replayed one's projection to go on with it."""

    activity: str
    at: datetime
    message_count: int
    projection: str

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        b.activity(a, T.SessionLoad, self.at, self.at)
        b.child_of(a, self.graph, self.graph)
        b.label(a, "session load")
        b.value(a, T.messageCount, self.message_count)
        b.add(a, PROV.used, IRI.trusted(self.projection))


def record_trace_metadata(ctx: Context, metadata: Mapping[str, Any], at: datetime) -> None:
    """Record a session's trace metadata (nothing when it has none).

    Raises:
        StoreError: the write failed; nothing was recorded.
    """
    if metadata:
        ctx.recorder.record(
            TraceMetadataRecorded(session=str(ctx.session), metadata=dict(metadata), at=at)
        )
