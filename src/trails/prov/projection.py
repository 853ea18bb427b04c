"""The persisted projection of a session: its RDF form, written and read back.

``Session.persist`` writes a session's replayable state as one
``trails:SessionProjection`` (a ``prov:Collection``) in a named graph, and
``Session.replay`` rebuilds the session from it with SPARQL alone. This module
owns that format, both ways, so the writer and the reader cannot drift apart:

- the projection ``<session>:projection`` carries the format version, the
  session id, the principal (``prov:wasAttributedTo``), strategy, budget,
  metadata and agent card (canonical JSON), and the window settings;
- its members (``prov:hadMember``) are ``trails:HistoryEntry`` (role, content,
  token count, pinned), ``trails:InvocationEnvelope`` (capability, arguments
  and result with their hashes, status, error, times, activity) and
  ``trails:CompletionReference`` (the LLM completion activities, with request
  hash and step), each ordered by ``trails:position`` (no ``rdf:List``: that
  would need blank nodes);
- ``SessionForked`` records that a new session continues a replayed one.

``FORMAT_VERSION`` is a file format: a reader refuses a projection written in
another version, naming it, instead of misreading it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic_core import to_jsonable_python

from trails.errors import ContentErased, SessionError
from trails.prov.builder import QuadBuilder
from trails.prov.content import content_graph, erasure_of, json_sha256
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.masking import Masking
from trails.prov.vocab import PROV, T
from trails.store.base import Store, ask, select
from trails.store.terms import IRI, Quad, Term, to_python

__all__ = [
    "FORMAT_VERSION",
    "ProjectedCompletion",
    "ProjectedEntry",
    "ProjectedInvocation",
    "Projection",
    "SessionForked",
    "find_projection",
    "fork_iri",
    "projection_iri",
    "projection_quads",
    "read_projection",
    "recorded_completion_refs",
    "stored_projection_quads",
]

#: The version of the projection format this module writes and reads.
FORMAT_VERSION = 1


@dataclass(frozen=True)
class ProjectedEntry:
    """One history entry: role, content, token count, pinned flag."""

    role: str
    content: str
    tokens: int
    pinned: bool


@dataclass(frozen=True)
class ProjectedInvocation:
    """One invocation envelope (the fields of ``InvocationRecord``)."""

    capability: str
    args: Any
    result: Any
    args_sha256: str
    result_sha256: str | None
    status: str
    activity: str
    error: str | None
    started: datetime
    ended: datetime


@dataclass(frozen=True)
class ProjectedCompletion:
    """A reference to one recorded LLM completion activity of the session."""

    activity: str
    request_hash: str
    step: int | None = None


@dataclass(frozen=True)
class Projection:
    """Everything a session projection holds, as plain data.

    Attributes:
        session: the projected session's IRI (which names its provenance graph).
        session_id: its id.
        principal: who it acted for.
        strategy: its default strategy, or None.
        budget: its default run budget.
        metadata: its metadata (plans, critiques ...).
        card: its agent card, or None.
        window_tokens: the history window's token budget.
        pin_head: how many leading history entries are pinned.
        history: the history window, oldest first.
        invocations: the invocation envelopes, in order.
        completions: the LLM completion activities, in order.
        graph: the graph the projection was read from (None before it is written).
        version: the format version.
    """

    session: str
    session_id: str
    principal: str
    strategy: str | None
    budget: dict[str, float]
    metadata: dict[str, Any]
    card: Any
    window_tokens: int
    pin_head: int
    history: tuple[ProjectedEntry, ...]
    invocations: tuple[ProjectedInvocation, ...]
    completions: tuple[ProjectedCompletion, ...]
    graph: str | None = None
    version: int = FORMAT_VERSION

    @property
    def iri(self) -> IRI:
        """The projection's IRI."""
        return projection_iri(self.session)


def projection_iri(session: str) -> IRI:
    """The IRI of a session's projection (the same in whichever graph it is written)."""
    return Minter.part(session, "projection")


def fork_iri(session: str) -> IRI:
    """The IRI of the fork entity a forked session starts from."""
    return Minter.part(session, "fork")


def _jsonable(value: Any) -> Any:
    try:
        return to_jsonable_python(value)
    except Exception:  # pydantic raises its own error for unknown types
        return str(value)


def _json(value: Any) -> str:
    """JSON that keeps key order (a replayed observation must print as the original did).

    Hashes are still taken over ``canonical_json``; this text only has to load back
    into an equal value with the same key order.
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_jsonable)


def projection_quads(
    projection: Projection,
    graph: IRI,
    minter: Minter,
    at: datetime,
    *,
    masking: Masking | None = None,
) -> list[Quad]:
    """The quads of ``projection`` in ``graph``.

    Args:
        projection: the session state to write.
        graph: the named graph to write it into.
        minter: mints the principal's IRI.
        at: when it was persisted (``prov:generatedAtTime``).
        masking: the recorder's PII masking rules (texts are masked as events are).

    Returns:
        The quads (one projection entity, its members, the principal agent).
    """
    b = QuadBuilder(graph, minter, masking=masking)
    session = IRI.trusted(projection.session)
    p = projection_iri(session)
    b.types(p, T.SessionProjection, PROV.Collection, PROV.Entity)
    b.label(p, f"projection of session {projection.session_id}")
    b.value(p, T.formatVersion, projection.version)
    b.add(p, T.projectionOf, session)
    b.add(p, PROV.wasGeneratedBy, session)
    b.value(p, PROV.generatedAtTime, at)
    b.value(p, T.sessionId, projection.session_id)
    b.add(p, PROV.wasAttributedTo, b.agent(projection.principal))
    b.value(p, T.sessionStrategy, projection.strategy)
    b.value(p, T.budget, _json(projection.budget))
    b.value(p, T.metadata, _json(projection.metadata))
    if projection.card is not None:
        b.value(p, T.agentCard, _json(projection.card))
    b.value(p, T.windowTokens, projection.window_tokens)
    b.value(p, T.pinHead, projection.pin_head)
    for i, entry in enumerate(projection.history):
        e = Minter.part(p, f"history:{i}")
        b.add(p, PROV.hadMember, e)
        b.entity(e, T.HistoryEntry, entry.content, as_json=False)
        b.value(e, T.position, i)
        b.value(e, T.role, entry.role)
        b.value(e, T.tokenCount, entry.tokens)
        b.value(e, T.pinned, entry.pinned)
    for i, inv in enumerate(projection.invocations):
        e = Minter.part(p, f"invocation:{i}")
        b.add(p, PROV.hadMember, e)
        b.types(e, T.InvocationEnvelope, PROV.Entity)
        b.value(e, T.position, i)
        b.value(e, T.capabilityId, inv.capability)
        b.add(e, T.ofActivity, IRI.trusted(inv.activity))
        # the digests are of what is recorded (masked, keys as JSON holds them), so that
        # verification recomputes them from the values: the call's own when nothing changed
        args = b.content_text(e, T.arguments, _json(inv.args), digest=False)
        b.value(e, T.argumentsSha256, json_sha256(args) if args is not None else None)
        if inv.result_sha256 is not None:
            result = b.content_text(e, T.result, _json(inv.result), digest=False)
            b.value(e, T.resultSha256, json_sha256(result) if result is not None else None)
        b.value(e, T.invocationStatus, inv.status)
        b.value(e, T.invocationError, inv.error)
        b.value(e, T.startedAt, inv.started)
        b.value(e, T.endedAt, inv.ended)
    for i, ref in enumerate(projection.completions):
        e = Minter.part(p, f"completion:{i}")
        b.add(p, PROV.hadMember, e)
        b.types(e, T.CompletionReference, PROV.Entity)
        b.value(e, T.position, i)
        b.add(e, T.ofActivity, IRI.trusted(ref.activity))
        b.value(e, T.requestHash, ref.request_hash)
        b.value(e, T.stepIndex, ref.step)
    return b.quads


class SessionForked(Event):
    """A new session continues a replayed one: its fork entity derives from the projection."""

    projection: str
    origin: str
    at: datetime

    def emit(self, b: QuadBuilder) -> None:
        s = self.graph
        f = fork_iri(s)
        b.types(f, T.SessionFork, PROV.Entity)
        b.add(f, PROV.wasDerivedFrom, IRI.trusted(self.projection))
        b.add(f, PROV.wasGeneratedBy, s)
        b.value(f, PROV.generatedAtTime, self.at)
        b.label(f, f"fork of {self.origin}")
        b.add(s, PROV.used, f)


# -- reading ------------------------------------------------------------------------

_OLD = f"""
SELECT ?g ?proj ?s ?p ?o WHERE {{
  GRAPH ?g {{
    {{ ?proj ?p ?o . BIND(?proj AS ?s) }}
    UNION
    {{ ?proj {PROV.hadMember.n3()} ?s . ?s ?p ?o }}
  }}
}}
"""

_OLD_CONTENT = f"""
SELECT ?g ?cg ?proj ?s ?p ?o WHERE {{
  GRAPH ?g {{ ?proj {PROV.hadMember.n3()} ?s }}
  GRAPH ?cg {{ ?s ?p ?o }}
}}
"""

# the projections in the graph ?iri, and the projections of the session ?iri wherever they are;
# ?iri stays out of the GRAPH ?g group (a bound parameter there is a pass over every graph)
_FIND = f"""
SELECT ?iri ?proj ?g ?session WHERE {{
  {{ GRAPH ?iri {{ ?proj a {T.SessionProjection.n3()} ; {T.projectionOf.n3()} ?session }}
     BIND(?iri AS ?g) }}
  UNION
  {{ GRAPH ?g {{ ?proj {T.projectionOf.n3()} ?iri ; a {T.SessionProjection.n3()} }}
     BIND(?iri AS ?session) }}
}} ORDER BY ?g ?proj
"""

_GRAPH_EXISTS = "ASK { GRAPH ?iri { ?s ?p ?o } }"

_SESSION_EXISTS = f"ASK {{ GRAPH ?g {{ ?iri a {T.Session.n3()} }} }}"

_HEAD = f"""
SELECT ?g ?proj ?session ?version ?sid ?principal ?strategy ?budget ?metadata ?card ?window ?pin WHERE {{
  GRAPH ?g {{
    ?proj {T.projectionOf.n3()} ?session .
    OPTIONAL {{ ?proj {T.formatVersion.n3()} ?version }}
    OPTIONAL {{ ?proj {T.sessionId.n3()} ?sid }}
    OPTIONAL {{ ?proj {PROV.wasAttributedTo.n3()} ?agent . ?agent {T.principalId.n3()} ?principal }}
    OPTIONAL {{ ?proj {T.sessionStrategy.n3()} ?strategy }}
    OPTIONAL {{ ?proj {T.budget.n3()} ?budget }}
    OPTIONAL {{ ?proj {T.metadata.n3()} ?metadata }}
    OPTIONAL {{ ?proj {T.agentCard.n3()} ?card }}
    OPTIONAL {{ ?proj {T.windowTokens.n3()} ?window }}
    OPTIONAL {{ ?proj {T.pinHead.n3()} ?pin }}
  }}
}}
"""

_HISTORY = f"""
SELECT ?g ?cg ?proj ?pos ?role ?content ?tokens ?pinned WHERE {{
  GRAPH ?g {{
    ?proj {PROV.hadMember.n3()} ?e .
    ?e a {T.HistoryEntry.n3()} ; {T.position.n3()} ?pos .
    OPTIONAL {{ ?e {T.role.n3()} ?role }}
    OPTIONAL {{ GRAPH $cg {{ ?e {PROV.value.n3()} ?content }} }}
    OPTIONAL {{ ?e {PROV.value.n3()} ?content }}
    OPTIONAL {{ ?e {T.tokenCount.n3()} ?tokens }}
    OPTIONAL {{ ?e {T.pinned.n3()} ?pinned }}
  }}
}} ORDER BY ?pos
"""

_INVOCATIONS = f"""
SELECT ?g ?cg ?proj ?pos ?cap ?activity ?args ?argsHash ?result ?resultHash ?status ?error ?started
       ?ended
WHERE {{
  GRAPH ?g {{
    ?proj {PROV.hadMember.n3()} ?e .
    ?e a {T.InvocationEnvelope.n3()} ; {T.position.n3()} ?pos .
    OPTIONAL {{ ?e {T.capabilityId.n3()} ?cap }}
    OPTIONAL {{ ?e {T.ofActivity.n3()} ?activity }}
    OPTIONAL {{ GRAPH $cg {{ ?e {T.arguments.n3()} ?args }} }}
    OPTIONAL {{ ?e {T.arguments.n3()} ?args }}
    OPTIONAL {{ ?e {T.argumentsSha256.n3()} ?argsHash }}
    OPTIONAL {{ GRAPH $cg {{ ?e {T.result.n3()} ?result }} }}
    OPTIONAL {{ ?e {T.result.n3()} ?result }}
    OPTIONAL {{ ?e {T.resultSha256.n3()} ?resultHash }}
    OPTIONAL {{ ?e {T.invocationStatus.n3()} ?status }}
    OPTIONAL {{ ?e {T.invocationError.n3()} ?error }}
    OPTIONAL {{ ?e {T.startedAt.n3()} ?started }}
    OPTIONAL {{ ?e {T.endedAt.n3()} ?ended }}
  }}
}} ORDER BY ?pos
"""

_COMPLETION_REFS = f"""
SELECT ?g ?proj ?pos ?activity ?hash ?step WHERE {{
  GRAPH ?g {{
    ?proj {PROV.hadMember.n3()} ?e .
    ?e a {T.CompletionReference.n3()} ; {T.position.n3()} ?pos .
    OPTIONAL {{ ?e {T.ofActivity.n3()} ?activity }}
    OPTIONAL {{ ?e {T.requestHash.n3()} ?hash }}
    OPTIONAL {{ ?e {T.stepIndex.n3()} ?step }}
  }}
}} ORDER BY ?pos
"""

_RECORDED_COMPLETIONS = f"""
SELECT ?g ?a ?hash ?step ?started WHERE {{
  GRAPH ?g {{
    ?a a {T.LLMCompletion.n3()} ;
       {T.inSession.n3()} ?g ;
       {T.requestHash.n3()} ?hash ;
       {PROV.startedAtTime.n3()} ?started .
    OPTIONAL {{ ?a {T.stepIndex.n3()} ?step }}
  }}
}} ORDER BY ?started ?a
"""


def _py(row: Mapping[str, Term], name: str) -> Any:
    term = row.get(name)
    return None if term is None else to_python(term)


def stored_projection_quads(store: Store, graph: IRI, session: str) -> list[Quad]:
    """The quads of a projection of ``session`` already in ``graph`` (to replace them).

    Args:
        store: the store.
        graph: the graph the projection is in.
        session: the projected session's IRI.

    Returns:
        The projection's own quads and its members' quads.
    """
    rows = select(store, _OLD, {"g": graph, "proj": projection_iri(session)})
    out: list[Quad] = []
    for row in rows:
        out.append(Quad(row["s"], row["p"], row["o"], graph))  # type: ignore[arg-type]
    cg = content_graph(graph)  # the members' content (history text, arguments, results)
    for row in select(store, _OLD_CONTENT, {"g": graph, "cg": cg, "proj": projection_iri(session)}):
        out.append(Quad(row["s"], row["p"], row["o"], cg))  # type: ignore[arg-type]
    return out


def recorded_completion_refs(store: Store, session: str) -> list[ProjectedCompletion]:
    """The LLM completion activities recorded in a session's graph, oldest first.

    Args:
        store: the store.
        session: the session IRI (which names its graph).

    Returns:
        One reference per recorded completion.
    """
    rows = select(store, _RECORDED_COMPLETIONS, {"g": IRI.trusted(session)})
    return [
        ProjectedCompletion(str(_py(r, "a")), str(_py(r, "hash")), _py(r, "step")) for r in rows
    ]


def find_projection(store: Store, iri: str) -> tuple[IRI, IRI]:
    """Resolve a graph IRI or a session IRI to one stored projection.

    Args:
        store: the store to look in.
        iri: the graph a projection was persisted into, or the projected session's IRI.

    Returns:
        ``(graph, session)``: where the projection is and which session it projects.

    Raises:
        SessionError: ``iri`` names no session or graph; the graph holds no
            projection; or it holds projections of several sessions.
    """
    try:
        target = IRI(iri)
    except (ValueError, TypeError) as exc:
        raise SessionError(f"{iri!r} is not an absolute IRI naming a session") from exc
    rows = [
        (IRI.trusted(str(_py(r, "g"))), IRI.trusted(str(_py(r, "session"))))
        for r in select(store, _FIND, {"iri": target})
    ]
    if not rows:
        if ask(store, _GRAPH_EXISTS, {"iri": target}) or ask(
            store, _SESSION_EXISTS, {"iri": target}
        ):
            raise SessionError(
                f"{target} holds no session projection (trails:SessionProjection): the "
                "session was not persisted; call session.persist() to make it replayable"
            )
        raise SessionError(
            f"{target} names no session: the store has no graph and no trails:Session with that IRI"
        )
    in_graph = [r for r in rows if r[0] == target]
    if in_graph:
        sessions = sorted({s for _, s in in_graph})
        if len(sessions) > 1:
            raise SessionError(
                f"graph {target} holds projections of {len(sessions)} sessions "
                f"({', '.join(sessions)}); replay one of them by its session IRI"
            )
        return in_graph[0]
    own = [r for r in rows if r[0] == r[1]]
    return own[0] if own else rows[0]


def _require(value: Any, what: str, projection: IRI, graph: IRI) -> Any:
    if value is None:
        raise SessionError(f"projection {projection} in graph {graph} has no {what}")
    return value


def _loads(text: Any, what: str, projection: IRI, graph: IRI) -> Any:
    try:
        return json.loads(_require(text, what, projection, graph))
    except (TypeError, ValueError) as exc:
        raise SessionError(
            f"projection {projection} in graph {graph}: {what} is not JSON ({exc})"
        ) from exc


def _contiguous(positions: Iterable[int], kind: str, projection: IRI, graph: IRI) -> None:
    for expected, pos in enumerate(positions):
        if pos != expected:
            raise SessionError(
                f"projection {projection} in graph {graph} is missing {kind} #{expected}"
            )


def _fail_if_erased(store: Store, entity: str, what: str, graph: IRI) -> None:
    """Fail closed, naming the step, when content the projection needs was erased."""
    erased = erasure_of(store, entity)
    if erased is not None:
        raise ContentErased(
            f"session in graph {graph} cannot be replayed: the content of {what} ({entity}) "
            f"was {erased}"
        )


def read_projection(store: Store, graph: IRI, session: IRI) -> Projection:
    """Read the projection of ``session`` from ``graph`` with SPARQL.

    Args:
        store: the store.
        graph: the graph holding the projection (from ``find_projection``).
        session: the projected session's IRI.

    Returns:
        The projection.

    Raises:
        SessionError: the projection was written by another format version, or
            lacks a property it must have (the message names which).
    """
    p = projection_iri(session)
    params: dict[str, Term] = {"g": graph, "proj": p, "session": session}
    heads = list(select(store, _HEAD, params))
    # the content graph named, not any graph: a projection persisted into two graphs
    # has the same member IRIs in both
    params = {"g": graph, "proj": p, "cg": content_graph(graph)}
    if not heads:
        raise SessionError(f"graph {graph} holds no projection {p}")
    head = heads[0]
    version = _py(head, "version")
    if version is None:
        raise SessionError(
            f"projection {p} in graph {graph} has no trails:formatVersion; "
            "it was not written by Session.persist"
        )
    if version != FORMAT_VERSION:
        raise SessionError(
            f"projection {p} in graph {graph} is in format version {version}; this trails "
            f"reads version {FORMAT_VERSION} only (persist the session again with it)"
        )
    principal = _require(_py(head, "principal"), "principal (prov:wasAttributedTo)", p, graph)
    history: list[ProjectedEntry] = []
    positions: list[int] = []
    for row in select(store, _HISTORY, params):
        positions.append(int(_py(row, "pos")))
        n = positions[-1]
        if _py(row, "content") is None:
            _fail_if_erased(store, Minter.part(p, f"history:{n}"), f"history entry #{n}", graph)
        history.append(
            ProjectedEntry(
                role=str(_require(_py(row, "role"), f"trails:role on history #{n}", p, graph)),
                content=str(_require(_py(row, "content"), f"prov:value on history #{n}", p, graph)),
                tokens=int(
                    _require(_py(row, "tokens"), f"trails:tokenCount on history #{n}", p, graph)
                ),
                pinned=bool(
                    _require(_py(row, "pinned"), f"trails:pinned on history #{n}", p, graph)
                ),
            )
        )
    _contiguous(positions, "history entry", p, graph)
    invocations: list[ProjectedInvocation] = []
    positions = []
    for row in select(store, _INVOCATIONS, params):
        positions.append(int(_py(row, "pos")))
        n = positions[-1]

        def need(name: str, what: str, row: Mapping[str, Term] = row, n: int = n) -> Any:
            return _require(_py(row, name), f"{what} on invocation #{n}", p, graph)

        result_hash = _py(row, "resultHash")
        if _py(row, "args") is None:
            envelope = Minter.part(p, f"invocation:{n}")
            _fail_if_erased(store, Minter.part(envelope, "arguments"), f"invocation #{n}", graph)
        invocations.append(
            ProjectedInvocation(
                capability=str(need("cap", "trails:capabilityId")),
                args=_loads(
                    need("args", "trails:arguments"), f"invocation #{n} arguments", p, graph
                ),
                result=(
                    _loads(_py(row, "result"), f"trails:result on invocation #{n}", p, graph)
                    if result_hash is not None
                    else None
                ),
                args_sha256=str(need("argsHash", "trails:argumentsSha256")),
                result_sha256=None if result_hash is None else str(result_hash),
                status=str(need("status", "trails:invocationStatus")),
                activity=str(need("activity", "trails:ofActivity")),
                error=_py(row, "error"),
                started=need("started", "trails:startedAt"),
                ended=need("ended", "trails:endedAt"),
            )
        )
    _contiguous(positions, "invocation envelope", p, graph)
    completions: list[ProjectedCompletion] = []
    positions = []
    for row in select(store, _COMPLETION_REFS, {"g": graph, "proj": p}):
        positions.append(int(_py(row, "pos")))
        n = positions[-1]
        completions.append(
            ProjectedCompletion(
                activity=str(
                    _require(
                        _py(row, "activity"), f"trails:ofActivity on completion #{n}", p, graph
                    )
                ),
                request_hash=str(
                    _require(_py(row, "hash"), f"trails:requestHash on completion #{n}", p, graph)
                ),
                step=_py(row, "step"),
            )
        )
    _contiguous(positions, "completion reference", p, graph)
    card = _py(head, "card")
    return Projection(
        session=str(session),
        session_id=str(_require(_py(head, "sid"), "trails:sessionId", p, graph)),
        principal=str(principal),
        strategy=_py(head, "strategy"),
        budget=_loads(_py(head, "budget"), "trails:budget", p, graph),
        metadata=_loads(_py(head, "metadata"), "trails:metadata", p, graph),
        card=None if card is None else _loads(card, "trails:agentCard", p, graph),
        window_tokens=int(_require(_py(head, "window"), "trails:windowTokens", p, graph)),
        pin_head=int(_require(_py(head, "pin"), "trails:pinHead", p, graph)),
        history=tuple(history),
        invocations=tuple(invocations),
        completions=tuple(completions),
        graph=str(graph),
        version=int(version),
    )
