"""The session catalogue: one small summary per session, so store-wide listings stay small.

Listing the sessions of a store, or summing cost per model, over the full
session graphs reads every quad of the store. The catalogue is a named graph of
its own (``<base>graph:catalogue``, ``catalogue_iri``) holding one
``trails:SessionSummary`` per session: when it started and ended, its principal
(``prov:wasAttributedTo``), planner, status, stop reason, cost, tokens, the
models it used and whether it is sealed, plus one ``trails:AgentUsage`` per
agent the session was associated with (activities, completions, tokens and
cost on that agent's account). The agents themselves are described as in the
session graphs (type, label, principal id, provider, model id, on whose behalf),
so the graph conforms to ``shapes.ttl`` like every other.

It is maintained atomically with the session: the sealer writes the start of an
entry (``start_quads``) in the write that starts the session, and the whole
entry (``summary_quads``, built from the graph it reads to seal anyway) in the
write that ends and seals it. A late write to an ended session reseals it and
rewrites its entry in that same write. Sessions recorded without the sealer
(``[audit] seal = false``, stores written before the catalogue) get their entries
from ``rebuild`` (``trails catalogue rebuild``); sessions that recovery ends
or seals later get theirs from the seal that recovery writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from trails.catalogue.days import (
    cost_literal,
    cost_of,
    dated_mark,
    day_iri,
    day_quads,
    day_totals,
    ended_day,
    exact_sum,
    hour_links,
    start_quads_of,
    stored_quads,
    typed_mark,
)
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, RDF, RDFS, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Quad, Term, instant, literal, to_python

__all__ = [
    "CATALOGUE_TERMS",
    "FAILED_STATUSES",
    "OUTCOMES",
    "OUTCOME_FILTER",
    "OUTCOME_SPARQL",
    "catalogue_iri",
    "entry_iri",
    "entry_quads",
    "existing_entry",
    "has_entries",
    "open_mark",
    "outcome_of",
    "rebuild",
    "session_outcome",
    "start_quads",
    "summarise",
]

SessionSummary = T.SessionSummary
AgentUsage = T.AgentUsage
summaryOf = T.summaryOf
sessionStarted = T.sessionStarted
sessionEnded = T.sessionEnded
sessionStatus = T.sessionStatus
sessionStopReason = T.sessionStopReason
sessionOutcome = T.sessionOutcome
outcomeReason = T.outcomeReason
planner = T.planner
usedModel = T.usedModel
sealed = T.sealed
usage = T.usage
usedAgent = T.usedAgent
actingFor = T.actingFor
activityCount = T.activityCount
completionCount = T.completionCount
unpricedCount = T.unpricedCount
totalInputTokens = T.totalInputTokens
totalOutputTokens = T.totalOutputTokens
totalCostUSD = T.totalCostUSD

CATALOGUE_TERMS: tuple[IRI, ...] = (
    SessionSummary,
    AgentUsage,
    summaryOf,
    sessionStarted,
    sessionEnded,
    sessionStatus,
    sessionStopReason,
    sessionOutcome,
    outcomeReason,
    planner,
    usedModel,
    sealed,
    usage,
    usedAgent,
    actingFor,
    activityCount,
    completionCount,
    unpricedCount,
    totalInputTokens,
    totalOutputTokens,
    totalCostUSD,
    T.CatalogueDay,
    T.startedInMinute,
    T.StartMinute,
    T.StartDay,
    T.minuteOf,
    T.startedInSecond,
    T.StartSecond,
    T.secondOf,
    T.StartHour,
    T.hourOf,
    T.minuteOfHour,
    T.DailyTotal,
    T.endedOn,
    T.day,
    T.totalsOf,
    T.totalAgent,
    T.totalledAt,
    T.entriesDated,
    T.OpenSessionSummary,
    T.openSummariesTyped,
    T.RunningTotal,
    T.runningThrough,
)
"""The trails terms the catalogue writes (declared in trails.ttl, shaped in shapes.ttl)."""

# what of an agent's description the catalogue copies from the session graph
_AGENT_PREDICATES = frozenset(
    {RDF.type, RDFS.label, T.principalId, T.provider, T.modelId, PROV.actedOnBehalfOf}
)
_AGENT_KINDS = (T.Principal, T.Model, T.Policy)
#: the predicates ``summarise`` reads from a session graph (the rest is not indexed)
_READ = _AGENT_PREDICATES | {
    PROV.startedAtTime,
    PROV.endedAtTime,
    PROV.wasAssociatedWith,
    PROV.wasInformedBy,
    T.status,
    T.strategy,
    T.stopReason,
    T.inSession,
    T.inputTokens,
    T.outputTokens,
    T.costUSD,
    T.wasTerminatedBy,
    T.reason,
}

OUTCOMES = ("ok", "failed", "stopped", "interrupted", "open")
"""A session's outcome (``trails:sessionOutcome``): it ended and its runs reached their goal
(or it had none and no call of it failed); a run failed, a call failed, or it ended with an
error; a run stopped at a limit (steps, cost, tokens, wall time); it was cut short; it has
not ended."""

CLEAN_STOPS = frozenset({"goal_achieved"})
LIMIT_STOPS = frozenset({"max_steps", "max_cost", "max_tokens", "max_wall_time"})
FAILED_STATUSES = frozenset({"error", "invalid"})
"""The statuses of a call (a capability invocation, an LLM completion) that failed."""


def outcome_of(
    *,
    ended: bool,
    status: str | None = None,
    stops: Sequence[tuple[str, str]] = (),
    failed_calls: Sequence[str] = (),
) -> tuple[str, str]:
    """A session's outcome (one of ``OUTCOMES``) and the reason, in a sentence.

    Args:
        ended: whether the session has ended.
        status: its end status (``trails:status``: ok, error, interrupted).
        stops: ``(stop reason, why)`` of each run that decides (the top-level ones).
        failed_calls: the labels of the calls that failed and that nothing followed up
            (no fallback), read only when no run decides.

    Returns:
        ``(outcome, reason)``: the worst of the end status and the runs' stops decides.
    """
    if not ended:
        return "open", "the session has not ended"
    if status == "interrupted" or any(stop == "interrupted" for stop, _ in stops):
        return "interrupted", "the session was cut short before it ended"
    if status and status != "ok":
        return "failed", f"the session ended {status}"

    def said(found: Sequence[tuple[str, str]]) -> str:
        return "; ".join(
            sorted({f"{stop}: {why}" if why and why != stop else stop for stop, why in found})
        )

    bad = [(stop, why) for stop, why in stops if stop not in CLEAN_STOPS | LIMIT_STOPS]
    if bad:
        return "failed", f"a run stopped: {said(bad)}"
    limited = [(stop, why) for stop, why in stops if stop in LIMIT_STOPS]
    if limited:
        return "stopped", f"a run stopped at a limit: {said(limited)}"
    if stops:
        return "ok", "the session ended ok and its runs reached their goal"
    if failed_calls:
        named = ", ".join(sorted(set(failed_calls)))
        return "failed", f"{len(failed_calls)} call(s) failed: {named}"
    return "ok", "the session ended ok"


def _outcome_sparql() -> str:
    limits = ", ".join(f'"{s}"' for s in sorted(LIMIT_STOPS))
    clean = ", ".join(f'"{s}"' for s in sorted(CLEAN_STOPS | LIMIT_STOPS))
    return (
        'COALESCE(?storedOutcome, IF(!BOUND(?ended), "open", '
        'IF(COALESCE(?endStatus = "interrupted" || ?stopReason = "interrupted", false), '
        '"interrupted", IF(COALESCE(?endStatus != "ok", false) || '
        f'COALESCE(!(?stopReason IN ({clean})), false), "failed", '
        f'IF(COALESCE(?stopReason IN ({limits}), false), "stopped", "ok")))))'
    )


OUTCOME_SPARQL = _outcome_sparql()
"""A SPARQL expression of an entry's outcome: its ``trails:sessionOutcome`` (``?storedOutcome``),
or for an entry written before outcomes were, derived from its end (``?ended``), end status
(``?endStatus``) and stop reason (``?stopReason``) as ``outcome_of`` does (such an entry
does not say whether a call failed: ``trails catalogue rebuild`` writes its outcome)."""

OUTCOME_FILTER = (
    """FILTER EXISTS {
        GRAPH ?catalogue { ?entry trails:sessionStarted ?startedToo
          OPTIONAL { ?entry trails:sessionOutcome ?storedOutcome }
          OPTIONAL { ?entry trails:sessionEnded ?ended }
          OPTIONAL { ?entry trails:sessionStatus ?endStatus }
          OPTIONAL { ?entry trails:sessionStopReason ?stopReason } }
        FILTER("""
    + OUTCOME_SPARQL
    + """ = IF($status = "error", "failed", $status)) }"""
)
"""A filter keeping the entry ``?entry`` whose outcome is ``$status`` (``error``: failed), as the
``sessions`` pack query filters: its written outcome, or the one its end gives."""


def catalogue_iri(minter: Minter) -> IRI:
    """The catalogue graph's IRI under the minter's base (``<base>graph:catalogue``)."""
    return minter.graph("catalogue")


def entry_iri(session: str) -> IRI:
    """The IRI of a session's summary (``<session>:summary``)."""
    return Minter.part(session, "summary")


def _usage_iri(entry: IRI, agent: str) -> IRI:
    return Minter.part(entry, "usage:" + hashlib.sha256(agent.encode()).hexdigest()[:16])


def open_mark(entry: IRI, catalogue: IRI) -> Quad:
    """The type of the summary of a session that has not ended (``trails:OpenSessionSummary``):
    written with its start, removed in the write that ends it, so the sessions without an
    end are counted by one index lookup per such session."""
    return Quad(entry, RDF.type, T.OpenSessionSummary, catalogue)


def start_quads(
    session: IRI,
    principal: IRI,
    started: Any,
    *,
    label: str,
    catalogue: IRI,
    principal_id: Term | None = None,
    ended: bool = False,
) -> list[Quad]:
    """The entry of a session that has just started (written with its start): typed
    ``trails:OpenSessionSummary`` until the write that ends the session (``open_mark``);
    ``ended``: the start of the entry of a session that has ended, without that type."""
    entry = entry_iri(session)
    opened = [] if ended else [Quad(entry, sessionOutcome, Literal("open"), catalogue)]
    described = (
        [] if principal_id is None else [Quad(principal, T.principalId, principal_id, catalogue)]
    )
    return [
        *described,
        *start_quads_of(catalogue, entry, started),
        Quad(entry, RDF.type, SessionSummary, catalogue),
        *([] if ended else [open_mark(entry, catalogue)]),
        *opened,
        Quad(entry, RDF.type, PROV.Entity, catalogue),
        Quad(entry, RDFS.label, Literal(f"summary of {label}"), catalogue),
        Quad(entry, summaryOf, session, catalogue),
        Quad(
            entry,
            sessionStarted,
            started if isinstance(started, Literal) else literal(started),
            catalogue,
        ),
        Quad(entry, PROV.wasAttributedTo, principal, catalogue),
        Quad(principal, RDF.type, T.Principal, catalogue),
        Quad(principal, RDF.type, PROV.Agent, catalogue),
    ]


@dataclass
class _Account:
    activities: set[Any]
    completions: int = 0
    unpriced: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)
    """Summed exactly from each cost's lexical form: the same total in any order."""


def _number(term: Any) -> Any:
    value = to_python(term) if isinstance(term, Literal) else None
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def summarise(
    session: IRI,
    triples: Iterable[Sequence[Any]],
    catalogue: IRI,
    *,
    is_sealed: bool,
    before_outcomes: bool = False,
) -> list[Quad]:
    """The whole catalogue entry of ``session`` from the triples of its graph.

    Args:
        session: the session (its graph's IRI).
        triples: every (subject, predicate, object) of the session graph.
        catalogue: the catalogue graph's IRI.
        is_sealed: whether the session is sealed (with this write or before).
        before_outcomes: the entry as written before outcomes were (a failed completion
            counted unpriced), which verification holds such an entry to.

    Returns:
        The entry's quads (none when the graph holds no ``trails:Session``).
    """
    # only what an entry is made of is indexed: values, hashes and usages are most of a graph
    by_subject: dict[Any, dict[Any, list[Any]]] = {}
    for s, p, o in triples:
        if p in _READ:
            props = by_subject.get(s)
            if props is None:
                props = by_subject[s] = {}
            values = props.get(p)
            if values is None:
                props[p] = [o]
            else:
                values.append(o)
    me = by_subject.get(str(session), {})
    nothing: dict[Any, list[Any]] = {}

    def typed(subject: Any, cls: IRI) -> bool:
        # an IRI equals its text; a literal (a tuple) never equals a class
        return cls in by_subject.get(subject, nothing).get(RDF.type, ())

    if not typed(str(session), T.Session) or not me.get(PROV.startedAtTime):
        return []
    entry = entry_iri(session)

    def first(subject: Any, predicate: IRI) -> Any:
        values = by_subject.get(subject, nothing).get(predicate, ())
        return min(values, key=str) if values else None

    principal = next(
        (
            o
            for o in sorted(me.get(PROV.wasAssociatedWith, []), key=str)
            if typed(str(o), T.Principal)
        ),
        None,
    )
    label = first(str(session), RDFS.label)
    ended = first(str(session), PROV.endedAtTime)
    out = start_quads(
        session,
        IRI.trusted(str(principal)) if principal is not None else IRI.trusted(str(session)),
        first(str(session), PROV.startedAtTime),
        label=label.value if isinstance(label, Literal) else str(session),
        catalogue=catalogue,
        principal_id=first(str(principal), T.principalId) if principal is not None else None,
        ended=ended is not None,
    )
    if principal is None:  # a session always has its principal: keep the entry well-formed
        out = [q for q in out if q.predicate != PROV.wasAttributedTo and q.subject != session]
    if ended is None:
        return out  # still running: its start only; the rest is written with its end

    def add(s: IRI, p: IRI, o: Term) -> None:
        out.append(Quad(s, p, o, catalogue))

    for predicate, target in (
        (PROV.endedAtTime, sessionEnded),
        (T.status, sessionStatus),
    ):
        value = first(str(session), predicate)
        if value is not None:
            add(entry, target, value)
    day = ended_day(ended)
    if day is not None:
        add(entry, T.endedOn, day_iri(catalogue, day))
        out.extend(day_quads(catalogue, day))
    add(entry, sealed, literal(is_sealed))

    # planner and stop reason: the plan runs the session ran (the newest top-level one decides)
    runs = [s for s in by_subject if typed(s, T.PlanRun)]
    for strategy in sorted({str(first(r, T.strategy).value) for r in runs if first(r, T.strategy)}):
        add(entry, planner, Literal(strategy))
    top = [
        r
        for r in runs
        if str(session) in {str(o) for o in by_subject[r].get(PROV.wasInformedBy, [])}
    ]
    stopped = [r for r in (top or runs) if first(r, T.stopReason) is not None]
    if stopped:
        newest = max(stopped, key=lambda r: (instant(first(r, PROV.startedAtTime)), r))
        add(entry, sessionStopReason, first(newest, T.stopReason))
    status = first(str(session), T.status)
    # a run a fallback followed (a run informed by it, started once it ended) is decided by
    # the fallback; nested runs (started while their parent ran) are not followers
    deciding = [_followed(by_subject, runs, r, first) for r in stopped]
    deciding = [r for r in dict.fromkeys(deciding) if first(r, T.stopReason) is not None]
    _outcome(
        add,
        entry,
        outcome_of(
            ended=True,
            status=str(status.value) if isinstance(status, Literal) else None,
            stops=[(str(first(r, T.stopReason).value), _why(by_subject, r)) for r in deciding],
            failed_calls=_failed_calls(by_subject, str(session)),
        ),
    )

    # accounts: activities associated with each agent, completions on its account
    activities = {
        s for s, props in by_subject.items() if str(session) in map(str, props.get(T.inSession, []))
    }
    accounts: dict[str, _Account] = {}
    for s, props in by_subject.items():
        for agent in props.get(PROV.wasAssociatedWith, []):
            accounts.setdefault(str(agent), _Account(set())).activities.add(s)
    totals = _Account(set())
    for s, props in by_subject.items():
        if not typed(s, T.LLMCompletion):
            continue
        tokens_in = _number(first(s, T.inputTokens)) or 0
        tokens_out = _number(first(s, T.outputTokens)) or 0
        cost = cost_of(first(s, T.costUSD))
        # a failed completion was never answered: it has no price to miss (not unpriced)
        failed = _text(first(s, T.status)) in FAILED_STATUSES and not before_outcomes
        for account in [
            totals,
            *(accounts[str(a)] for a in set(map(str, props.get(PROV.wasAssociatedWith, [])))),
        ]:
            account.completions += 1
            account.input_tokens += int(tokens_in)
            account.output_tokens += int(tokens_out)
            if cost is None:
                account.unpriced += 0 if failed else 1
            else:
                account.cost = exact_sum((account.cost, cost))
    _counts(out, entry, totals, catalogue)
    add(entry, activityCount, literal(len(activities)))

    for agent in sorted(accounts):
        if not typed(agent, PROV.Agent):
            continue
        a = IRI.trusted(agent)
        for p, values in by_subject[agent].items():
            if p in _AGENT_PREDICATES:
                out.extend(Quad(a, IRI.trusted(p), v, catalogue) for v in values)
        if typed(agent, T.Model):
            add(entry, usedModel, a)
        u = _usage_iri(entry, agent)
        add(entry, usage, u)
        add(u, RDF.type, AgentUsage)
        add(u, RDF.type, PROV.Entity)
        add(u, usedAgent, a)
        for behalf in by_subject[agent].get(PROV.actedOnBehalfOf, []):
            add(u, actingFor, behalf)
        add(u, activityCount, literal(len(accounts[agent].activities)))
        _counts(out, u, accounts[agent], catalogue)
    # the agents the copied descriptions act for are described too (shapes ask it)
    described = {str(q.subject) for q in out if q.predicate == RDF.type}
    for q in list(out):
        if q.predicate == PROV.actedOnBehalfOf and str(q.object) not in described:
            described.add(str(q.object))
            for p, values in by_subject.get(str(q.object), {}).items():
                if p in _AGENT_PREDICATES:
                    out.extend(
                        Quad(IRI.trusted(str(q.object)), IRI.trusted(p), v, catalogue)
                        for v in values
                    )
    return list(dict.fromkeys(out))


def _outcome(add: Any, entry: IRI, found: tuple[str, str]) -> None:
    add(entry, sessionOutcome, Literal(found[0]))
    add(entry, outcomeReason, Literal(found[1]))


def _text(term: Any) -> str:
    return str(term.value) if isinstance(term, Literal) else ""


def _followed(
    by_subject: dict[Any, dict[Any, list[Any]]], runs: list[Any], run: Any, first: Any
) -> Any:
    """The run that decides for ``run``: itself, or the newest run that followed it up (a
    fallback: informed by it, started at or after its end), and so on."""
    seen = {run}
    while True:
        ended = _moment(first(run, PROV.endedAtTime))
        followers = [
            f
            for f in runs
            if f not in seen
            and str(run) in map(str, by_subject[f].get(PROV.wasInformedBy, ()))
            and ended is not None
            and (_moment(first(f, PROV.startedAtTime)) or ended) >= ended
        ]
        if not followers:
            return run
        run = max(followers, key=lambda f: (instant(first(f, PROV.startedAtTime)), f))
        seen.add(run)


def _moment(term: Any) -> Any:
    value = to_python(term) if isinstance(term, Literal) else None
    return value if isinstance(value, datetime) else None


def _why(by_subject: dict[Any, dict[Any, list[Any]]], run: Any) -> str:
    """What ended a run, as its termination says (``trails:reason``; structure, not content)."""
    for t in sorted(map(str, by_subject[run].get(T.wasTerminatedBy, []))):
        reasons = by_subject.get(t, {}).get(T.reason, [])
        if reasons:
            return min(map(_text, reasons))
    return ""


def _failed_calls(by_subject: dict[Any, dict[Any, list[Any]]], session: str) -> list[str]:
    """The labels of the session's calls that failed and that nothing followed up (a provider
    fallback is ``prov:wasInformedBy`` the attempt that failed)."""
    informing = {str(o) for props in by_subject.values() for o in props.get(PROV.wasInformedBy, ())}
    failed = []
    for s, props in by_subject.items():
        if s == session or str(s) in informing:
            continue
        if any(_text(v) in FAILED_STATUSES for v in props.get(T.status, ())):
            labels = props.get(RDFS.label, ())
            failed.append(min(map(_text, labels)) if labels else str(s))
    return sorted(failed)


def _counts(out: list[Quad], node: IRI, account: _Account, catalogue: IRI) -> None:
    out.append(Quad(node, completionCount, literal(account.completions), catalogue))
    out.append(Quad(node, unpricedCount, literal(account.unpriced), catalogue))
    out.append(Quad(node, totalInputTokens, literal(account.input_tokens), catalogue))
    out.append(Quad(node, totalOutputTokens, literal(account.output_tokens), catalogue))
    out.append(Quad(node, totalCostUSD, cost_literal(account.cost), catalogue))


_EXISTING = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?s ?p ?o $catalogue $entry WHERE {
  GRAPH $catalogue {
    { $entry ?p ?o BIND($entry AS ?s) }
    UNION
    { $entry trails:usage ?s . ?s ?p ?o }
  }
}
"""


def existing_entry(store: Store, session: IRI, catalogue: IRI) -> list[Quad]:
    """The quads of ``session``'s entry as stored (the entry and its usage nodes).

    Agent descriptions are shared between entries and never removed.
    """
    result = store.query(_EXISTING, {"catalogue": catalogue, "entry": entry_iri(session)})
    return stored_quads(result, catalogue)


def entry_quads(
    store: Store,
    session: IRI,
    triples: Iterable[Sequence[Any]],
    catalogue: IRI,
    *,
    is_sealed: bool,
    replace: bool,
) -> tuple[list[Quad], list[Quad]]:
    """``(add, remove)`` that make the stored entry of ``session`` the one its triples give.

    With ``replace``, the stored entry is read and what the new one no longer
    says is removed (a session ended again, a rebuild); without, the entry is
    only added to (a session's first end: its stored entry is its start).
    """
    add = summarise(session, triples, catalogue, is_sealed=is_sealed)
    stored = existing_entry(store, session, catalogue) if replace else []
    # the totals of the days the entry leaves or joins no longer hold: removed in this write.
    # A session that ends today (the writer's clock) joins a day no rollup has totalled
    # (``trails.catalogue.totals`` totals a day an hour after it is over): nothing to read.
    today = day_iri(catalogue, datetime.now(UTC).date())
    days = [
        IRI.trusted(str(q.object))
        for q in (*stored, *add)
        if q.predicate == T.endedOn and (replace or str(q.object) < str(today))
    ]
    stale = day_totals(store, catalogue, days) if days else []
    if not replace:  # a first end: the start typed the entry open, the end removes that
        ended = any(q.predicate == sessionEnded for q in add)
        entry = entry_iri(session)
        opened = [
            open_mark(entry, catalogue),
            Quad(entry, sessionOutcome, Literal("open"), catalogue),
        ]
        return add, [*stale, *opened] if ended else stale
    keep, have = set(add), set(stored)
    return [q for q in add if q not in have], [*(q for q in stored if q not in keep), *stale]


_SESSIONS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g WHERE { GRAPH ?g { ?g a trails:Session } }
"""

_GRAPH = "SELECT ?s ?p ?o $g WHERE { GRAPH $g { ?s ?p ?o } }"

_SEALED = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT DISTINCT ?g WHERE { GRAPH ?ledger { ?seal a trails:Seal ; trails:sealedGraph ?g } }
"""

_HAS_ENTRY = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT DISTINCT ?session $catalogue WHERE { GRAPH $catalogue { ?entry trails:summaryOf ?session ; trails:sealed ?sealed } }
"""


def rebuild(store: Store, minter: Minter | None = None, *, missing_only: bool = False) -> list[IRI]:
    """Write (or rewrite) the catalogue entry of every session in ``store``.

    One write per session (its entry, replacing what was stored). For stores
    recorded without the sealer or before the catalogue existed; the sealer
    keeps entries current from then on.

    Args:
        store: the store.
        minter: names the catalogue graph (default ``urn:trails:``).
        missing_only: only sessions with no complete entry (backfill).

    Returns:
        The sessions whose entries were written.

    Raises:
        StoreError: the store could not be read or written.
    """
    minter = minter or Minter()
    catalogue = catalogue_iri(minter)
    result = store.query(_SESSIONS)
    assert isinstance(result, Solutions)
    sessions = sorted({IRI.trusted(str(r[0])) for r in result.rows if r[0] is not None})
    sealed_rows = store.query(_SEALED)
    assert isinstance(sealed_rows, Solutions)
    is_sealed = {str(r[0]) for r in sealed_rows.rows}
    if missing_only:
        have = store.query(_HAS_ENTRY, {"catalogue": catalogue})
        assert isinstance(have, Solutions)
        done = {str(r[0]) for r in have.rows}
        sessions = [s for s in sessions if str(s) not in done]
    written = []
    for session in sessions:
        rows = store.query(_GRAPH, {"g": session})
        assert isinstance(rows, Solutions)
        add, remove = entry_quads(
            store,
            session,
            [r[:3] for r in rows.rows],
            catalogue,
            is_sealed=str(session) in is_sealed,
            replace=True,
        )
        entry = str(entry_iri(session))
        if remove or any(str(q.subject).startswith(entry) for q in add):
            store.write(add, remove=remove)
            written.append(session)
    linked, unlinked = hour_links(store, catalogue)  # minutes written before hours existed
    if linked or unlinked:
        store.write(linked, remove=unlinked)
    if not missing_only:  # every entry was written with its day, and typed open or not
        store.write([dated_mark(catalogue), typed_mark(catalogue)])
    return written


_ANY_ENTRY = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH ?catalogue { ?entry a trails:SessionSummary } }
"""

_ANY_SESSION = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH ?g { ?g a trails:Session } }
"""


def has_entries(store: Store) -> tuple[bool, bool]:
    """``(catalogued, recorded)``: whether the store holds any entry, and any session graph."""
    entries = bool(store.query(_ANY_ENTRY))
    return entries, entries or bool(store.query(_ANY_SESSION))


_OUTCOME = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?outcome ?reason $entry WHERE {
  GRAPH ?catalogue { $entry trails:sessionOutcome ?outcome OPTIONAL { $entry trails:outcomeReason ?reason } }
}
"""


def session_outcome(store: Store, session: IRI) -> tuple[str, str]:
    """``(outcome, reason)`` of ``session`` as its catalogue entry says, or (no entry, or one
    written before outcomes were) as ``summarise`` finds it in the session's graph: every
    listing, the report and ``trails logs`` say the same of a session.

    Raises:
        StoreError: the store could not be read.
    """
    found = store.query(_OUTCOME, {"entry": entry_iri(session)})
    assert isinstance(found, Solutions)
    for outcome, reason, _ in found.rows:
        if isinstance(outcome, Literal) and outcome.value in OUTCOMES:
            return outcome.value, reason.value if isinstance(reason, Literal) else ""
    rows = store.query(_GRAPH, {"g": session})
    assert isinstance(rows, Solutions)
    derived = summarise(session, [r[:3] for r in rows.rows], session, is_sealed=False)
    said = {
        q.predicate: q.object for q in derived if q.predicate in (sessionOutcome, outcomeReason)
    }
    outcome, reason = said.get(sessionOutcome), said.get(outcomeReason)
    if not isinstance(outcome, Literal):
        return "open", "the session has not ended"
    return outcome.value, reason.value if isinstance(reason, Literal) else ""
