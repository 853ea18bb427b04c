"""Retention: how long recorded content and structure are kept, and their removal past it.

The EU AI Act asks deployers to keep the automatically generated logs for at
least six months (Art. 19(1), 26(6)); data protection asks that personal data
is not kept longer than needed. ``[retention]`` in ``trails.toml`` sets both
periods, counted from a session's end::

    [retention]
    content_days = 90           # prompts, completions, inputs, outputs (prov:value)
    structure_days = 730        # the whole session graph
    allow_short_structure = false
    [retention.principals."did:example:alice"]
    content_days = 30
    [retention.planners.react]
    structure_days = 365

A principal's override wins over a planner's, a planner's over the defaults,
key by key; a session run by several planners keeps the longest of their
periods. A structure period under 183 days is refused unless the override is
explicit (``allow_short_structure = true`` or ``--i-know-this-breaks-article-19``).
No period set means kept for ever.

``plan(...)`` lists what is due: for each ended session past a period, its
content or (past the structure period) its whole graph, with why; sessions
under an active legal hold (``trails.compliance.holds``) are skipped and each hold
is named. ``apply(...)`` first records a ``trails:RetentionRun`` in a graph of
its own (``<base>graph:retention:<id>``), sealed: who, when, why, and one
``trails:RetentionRemoval`` per removal (``trails:removedGraph``,
``trails:removedPart`` ``content``/``structure``, the rule, the seal hash the
graph had), each ``prov:wasInvalidatedBy`` the run. Then it removes: structure
by dropping the session graph (its seals stay in the ledger, so the chains
still verify and ``trails verify`` lists the graph as removed by retention);
content by ``_remove_content``. On the embedded store it then compacts, so
removed values do not stay in the store's files.

Content is removed through the erasure API (``trails.compliance.erasure``): the
session's content graph is emptied, its digests and every seal stay, and the
erasure's sealed receipt names the retention run; dropping a graph drops its
content graph too.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from trails.catalogue.days import day_totals
from trails.catalogue.entries import catalogue_iri, existing_entry
from trails.compliance.erasure import erase
from trails.compliance.holds import Hold, active_holds_for, list_holds
from trails.errors import ConfigError, UserError
from trails.evidence.ledger import ledger_iri
from trails.evidence.recovery import recovered_here
from trails.evidence.seal import install_sealer
from trails.prov.builder import QuadBuilder
from trails.prov.content import CONTENT_DIGESTS, content_graph
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI
from trails.store.terms import Literal as RDFLiteral
from trails.text import check_text

if TYPE_CHECKING:
    from trails.prov.recorder import Recorder

__all__ = [
    "MIN_STRUCTURE_DAYS",
    "Period",
    "Removal",
    "RetentionApplied",
    "RetentionPlan",
    "RetentionPolicy",
    "RetentionResult",
    "Skipped",
    "apply",
    "plan",
    "retention_graph",
]

MIN_STRUCTURE_DAYS = 183
"""Six months: the shortest structure period accepted without an explicit override."""

_KEYS = ("content_days", "structure_days")


@dataclass(frozen=True)
class Period:
    """Content and structure periods in days (None: kept for ever)."""

    content_days: int | None = None
    structure_days: int | None = None


@dataclass(frozen=True)
class RetentionPolicy:
    """The ``[retention]`` settings: defaults and per-principal / per-planner overrides.

    Raises:
        ConfigError: a period that is not a whole number of days >= 0, or a
            structure period under 183 days without ``allow_short_structure``.
    """

    default: Period = Period()
    principals: Mapping[str, Period] = field(default_factory=dict)
    planners: Mapping[str, Period] = field(default_factory=dict)
    allow_short_structure: bool = False

    def __post_init__(self) -> None:
        scopes = [("[retention]", self.default)]
        scopes += [(f"[retention.principals.{k!r}]", p) for k, p in self.principals.items()]
        scopes += [(f"[retention.planners.{k!r}]", p) for k, p in self.planners.items()]
        for where, period in scopes:
            for key in _KEYS:
                days = getattr(period, key)
                if days is None:
                    continue
                if type(days) is not int or days < 0:
                    raise ConfigError(f"{where} {key} must be a whole number of days >= 0")
            short = period.structure_days
            if short is not None and short < MIN_STRUCTURE_DAYS and not self.allow_short_structure:
                raise ConfigError(
                    f"{where} structure_days = {short} is under {MIN_STRUCTURE_DAYS} days: the "
                    "EU AI Act asks for logs to be kept at least six months (Art. 19(1), "
                    "26(6)). Set allow_short_structure = true in [retention] or pass "
                    "--i-know-this-breaks-article-19 if you really mean it"
                )

    @property
    def configured(self) -> bool:
        """Whether any period is set at all."""
        periods = [self.default, *self.principals.values(), *self.planners.values()]
        return any(getattr(p, k) is not None for p in periods for k in _KEYS)

    @classmethod
    def from_settings(
        cls, settings: Any, *, allow_short_structure: bool = False
    ) -> RetentionPolicy:
        """Read ``[retention]`` of the settings (``allow_short_structure`` adds the override)."""
        return cls.from_table(settings.section("retention"), allow_short_structure)

    @classmethod
    def from_table(
        cls, table: Mapping[str, Any], allow_short_structure: bool = False
    ) -> RetentionPolicy:
        """Build the policy from a ``[retention]`` table.

        Raises:
            ConfigError: a malformed table or period (see the class).
        """
        allow = table.get("allow_short_structure", False)
        if not isinstance(allow, bool):
            raise ConfigError("[retention] allow_short_structure must be true or false")
        return cls(
            default=_period(table, "[retention]"),
            principals=_scopes(table, "principals"),
            planners=_scopes(table, "planners"),
            allow_short_structure=allow or allow_short_structure,
        )

    def period_for(
        self, principals: Sequence[str], planners: Sequence[str]
    ) -> tuple[Period, dict[str, str]]:
        """The periods of a session and, for each key, the setting that gave it."""
        values: dict[str, int | None] = {}
        where: dict[str, str] = {}
        for key in _KEYS:
            values[key], where[key] = getattr(self.default, key), "[retention]"
            planned = [(getattr(self.planners[p], key), p) for p in planners if p in self.planners]
            known = [(d, p) for d, p in planned if d is not None]
            if known:
                values[key], name = max(known)
                where[key] = f"[retention.planners.{name}]"
            for principal in principals:
                override = self.principals.get(principal)
                if override is not None and getattr(override, key) is not None:
                    values[key] = getattr(override, key)
                    where[key] = f'[retention.principals."{principal}"]'
        return Period(values["content_days"], values["structure_days"]), where


def _period(table: Mapping[str, Any], where: str) -> Period:
    values: dict[str, Any] = {}
    for key in _KEYS:
        value = table.get(key)
        if value is not None and (type(value) is not int or value < 0):
            raise ConfigError(f"{where} {key} must be a whole number of days >= 0, not {value!r}")
        values[key] = value
    return Period(**values)


def _scopes(table: Mapping[str, Any], name: str) -> dict[str, Period]:
    scopes = table.get(name, {})
    if not isinstance(scopes, dict):
        raise ConfigError(f"[retention.{name}] must be a table of tables")
    out = {}
    for key, value in scopes.items():
        where = f"[retention.{name}.{key!r}]"
        if not isinstance(value, dict):
            raise ConfigError(f"{where} must be a table (content_days, structure_days)")
        unknown = sorted(set(value) - set(_KEYS))
        if unknown:
            raise ConfigError(f"{where} holds unknown keys {unknown}")
        out[str(key)] = _period(value, where)
    return out


# -- the plan ---------------------------------------------------------------------


@dataclass(frozen=True)
class Removal:
    """One thing retention removes: a session's content, or its whole graph."""

    session: str
    started: str
    ended: str
    principal: str
    what: Literal["content", "structure"]
    why: str


@dataclass(frozen=True)
class Skipped:
    """A session that was due but is held: the removal it was spared and the holds."""

    removal: Removal
    holds: tuple[Hold, ...]

    def describe(self) -> str:
        return "; ".join(h.describe() for h in self.holds)


@dataclass
class RetentionPlan:
    """What retention would remove now, and what it skips because it is held."""

    now: datetime
    removals: list[Removal] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


_SESSIONS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?started ?ended ?principal WHERE { GRAPH ?g {
  ?g a trails:Session ; prov:startedAtTime ?started ; prov:endedAtTime ?ended .
  OPTIONAL { ?g prov:wasAssociatedWith/trails:principalId ?principal }
} }
"""

_PLANNERS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT DISTINCT ?g ?planner WHERE { GRAPH ?g { ?run trails:inSession ?g ; trails:strategy ?planner } }
"""

# every kind of content (a prompt's value, an error message, a session's label ...): its
# digest in the graph, its value in the content graph (or, before migration, ?g itself)
_WITH_CONTENT = (
    "SELECT DISTINCT ?g WHERE {\n  VALUES (?p ?dp) { "
    + " ".join(f"({p.n3()} {d.n3()})" for p, d in CONTENT_DIGESTS.items())
    + " }\n  GRAPH ?g { ?e ?dp ?digest }\n  GRAPH ?c { ?e ?p ?value }\n}"
)


def _when(term: Any) -> datetime | None:
    if not isinstance(term, RDFLiteral):
        return None
    try:
        value = datetime.fromisoformat(term.value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _solutions(store: Store, sparql: str) -> Solutions:
    result = store.query(sparql)
    assert isinstance(result, Solutions)
    return result


def plan(
    store: Store,
    minter: Minter,
    policy: RetentionPolicy,
    *,
    now: datetime | None = None,
) -> RetentionPlan:
    """What retention removes at ``now`` (default: the current time).

    Periods count from a session's end; open sessions are never due. A session
    past its structure period is removed whole; one past its content period
    only loses its content (when it still has some). Held sessions are skipped.

    Args:
        store: the store.
        minter: names the holds graph.
        policy: the periods.
        now: the time to plan for.

    Returns:
        The plan, sessions in the order they started.
    """
    now = now or datetime.now(UTC)
    result = RetentionPlan(now)
    if not policy.configured:
        return result
    sessions: dict[str, dict[str, Any]] = {}
    for row in _solutions(store, _SESSIONS):
        g = str(row["g"])
        info = sessions.setdefault(
            g, {"started": row["started"], "ended": row["ended"], "principals": set()}
        )
        principal = row.get("principal")
        if isinstance(principal, RDFLiteral):
            info["principals"].add(principal.value)
    planners: dict[str, set[str]] = defaultdict(set)
    if policy.planners:
        for row in _solutions(store, _PLANNERS):
            planner = row.get("planner")
            if isinstance(planner, RDFLiteral):
                planners[str(row["g"])].add(planner.value)
    with_content = {str(r["g"]) for r in _solutions(store, _WITH_CONTENT)}
    holds = list_holds(store, minter)
    due: list[tuple[datetime, Removal]] = []
    for g, info in sessions.items():
        ended, started = _when(info["ended"]), _when(info["started"])
        if ended is None or started is None:
            continue
        principals = sorted(info["principals"])
        period, where = policy.period_for(principals, sorted(planners.get(g, ())))
        age = now - ended
        removal = None
        base = {
            "session": g,
            "started": started.isoformat(),
            "ended": ended.isoformat(),
            "principal": ", ".join(principals),
        }
        if period.structure_days is not None and age > timedelta(days=period.structure_days):
            why = (
                f"ended {age.days} days ago, over structure_days = {period.structure_days} "
                f"of {where['structure_days']}"
            )
            removal = Removal(**base, what="structure", why=why)
        elif (
            period.content_days is not None
            and age > timedelta(days=period.content_days)
            and g in with_content
        ):
            why = (
                f"ended {age.days} days ago, over content_days = {period.content_days} "
                f"of {where['content_days']}"
            )
            removal = Removal(**base, what="content", why=why)
        if removal is not None:
            due.append((started, removal))
    due.sort(key=lambda item: (item[0], item[1].session))
    for _, removal in due:
        covering = active_holds_for(store, minter, IRI.trusted(removal.session), holds=holds)
        if covering:
            result.skipped.append(Skipped(removal, tuple(covering)))
        else:
            result.removals.append(removal)
    return result


# -- applying it ------------------------------------------------------------------


def retention_graph(minter: Minter, run_id: str) -> IRI:
    """The graph one retention run is recorded in (``<base>graph:retention:<id>``)."""
    return minter.graph(f"retention:{run_id}")


class RetentionApplied(Event):
    """A retention run and what it removes (``session`` is the run's own graph)."""

    activity: str
    by: str
    reason: str
    started: datetime
    ended: datetime
    removals: tuple[tuple[str, str, str, str, str | None], ...]
    """(removal entity, session graph, content|structure, why, seal hash it had)."""
    skipped: int = 0

    @property
    def completes_graph(self) -> bool:
        """The run's graph is whole in this one write: sealed in it, never after it."""
        return True

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        b.activity(a, T.RetentionRun, self.started, self.ended)
        b.label(a, f"retention run: {len(self.removals)} removed, {self.skipped} held")
        b.add(a, PROV.wasAssociatedWith, b.agent(self.by))
        b.value(a, T.retentionReason, self.reason)
        for entity, graph, part, why, seal_hash in self.removals:
            e = IRI.trusted(entity)
            b.types(e, T.RetentionRemoval, PROV.Entity)
            b.label(e, f"{part} of {graph} removed by retention")
            b.add(e, T.removedGraph, IRI.trusted(graph))
            b.value(e, T.removedPart, part)
            b.value(e, T.retentionRule, why)
            b.value(e, T.removedSealHash, seal_hash)
            b.add(a, PROV.invalidated, e)
            b.add(e, PROV.wasInvalidatedBy, a)
            b.value(e, PROV.invalidatedAtTime, self.ended)


@dataclass
class RetentionResult:
    """What ``apply`` did: the run's IRI and graph, the removals, the holds it skipped."""

    run: str | None
    graph: str | None
    plan: RetentionPlan
    content_values: int = 0
    compacted: bool = False
    recovered: list[Removal] = field(default_factory=list)
    """Removals left for a later run: their sessions were ended as interrupted by this
    process's recovery (the recorder's), after the plan it applies was read."""

    @property
    def removed(self) -> list[Removal]:
        return self.plan.removals


_SEAL_HASHES = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?seal ?graph ?hash ?revises ?at $ledger WHERE { GRAPH $ledger {
  ?seal trails:sealedGraph ?graph ; trails:sealHash ?hash ; prov:generatedAtTime ?at .
  OPTIONAL { ?seal prov:wasRevisionOf ?revises }
} }
"""


def _latest_seal_hashes(store: Store, ledger: IRI) -> dict[IRI, str]:
    """Each sealed graph's newest seal hash: the seal no other seal revises (the latest in
    time, should two writers have revised the same one), as ``latest_of`` decides."""
    result = store.query(_SEAL_HASHES, {"ledger": ledger})
    assert isinstance(result, Solutions)
    revised = {str(r["revises"]) for r in result if "revises" in r}
    newest: dict[IRI, tuple[str, str]] = {}
    for r in result:
        if str(r["seal"]) in revised:
            continue
        graph = IRI.trusted(str(r["graph"]))
        at, digest = r["at"], r["hash"]
        key = (at.value if isinstance(at, RDFLiteral) else "", str(getattr(digest, "value", "")))
        if graph not in newest or key > newest[graph]:
            newest[graph] = key
    return {g: digest for g, (_, digest) in newest.items()}


def _remove_content(recorder: Recorder, sessions: Sequence[str], *, by: str, reason: str) -> int:
    """Remove the content of ``sessions`` through the erasure API: their content graphs are
    emptied, the digests and every seal stay, and a sealed ``trails:Erasure`` receipt names
    the retention run as its reason. Returns how many values were removed.

    Raises:
        UserError: the store keeps content inside its sealed graphs (written before
            content was kept apart): ``trails migrate`` first.
    """
    if not sessions:
        return 0
    receipt = erase(recorder, session=list(sessions), reason=reason, by=by, compact=False)
    return receipt.erased


def _remove_structure(store: Store, sessions: Sequence[str], catalogue: IRI) -> None:
    """Drop the session graphs and their content graphs (the seals stay in the ledger) and
    their catalogue entries (``trails sessions`` lists what the store holds)."""
    for session in sessions:
        graph = IRI.trusted(session)
        store.clear(content_graph(graph))
        store.clear(graph)
        entry = existing_entry(store, graph, catalogue)
        if entry:  # the totals of the entry's day no longer hold: removed with it
            days = [IRI.trusted(str(q.object)) for q in entry if q.predicate == T.endedOn]
            store.write([], remove=[*entry, *day_totals(store, catalogue, days)])


def apply(
    recorder: Recorder,
    policy: RetentionPolicy,
    *,
    by: str,
    reason: str = "retention period passed",
    now: datetime | None = None,
    compact: bool = True,
) -> RetentionResult:
    """Remove what ``plan`` lists, recorded and sealed first; held sessions are skipped,
    and so are sessions the recorder's recovery ended as interrupted when it was opened
    (``RetentionResult.recovered``: they were open when the plan was shown).

    Args:
        recorder: writes the run and removes (its store and minter).
        policy: the periods.
        by: the principal applying it.
        reason: why (recorded with the run).
        now: the time to apply at (default: now).
        compact: compact the embedded store afterwards (removed data leaves its files).

    Returns:
        The result; ``run`` is None when nothing was due.

    Raises:
        UserError: an empty reason.
        StoreError: the store failed; what was recorded before says what was intended.
    """
    check_text(reason, "reason")
    check_text(by, "by")
    reason = reason.strip()
    if not reason:
        raise UserError("a retention run needs a reason")
    store, minter = recorder.store, recorder.minter
    the_plan = plan(store, minter, policy, now=now)
    # sessions the recorder's recovery just ended were open when `plan` was shown: never
    # removed by the run that ended them (their interruption has not been seen yet)
    ended_now = recovered_here(store)
    recovered = [r for r in the_plan.removals if r.session in ended_now]
    the_plan.removals = [r for r in the_plan.removals if r.session not in ended_now]
    result = RetentionResult(None, None, the_plan, recovered=recovered)
    if not the_plan.removals:
        return result
    run_id = str(uuid.uuid4())
    graph = retention_graph(minter, run_id)
    activity = Minter.part(graph, "run")
    latest = _latest_seal_hashes(store, ledger_iri(minter))
    removals = tuple(
        (
            str(Minter.part(graph, f"removal:{i}")),
            r.session,
            r.what,
            r.why,
            latest.get(IRI.trusted(r.session)),
        )
        for i, r in enumerate(the_plan.removals, start=1)
    )
    started = datetime.now(UTC)
    install_sealer(recorder)  # the run is recorded and sealed in one write
    recorder.record(
        RetentionApplied(
            session=graph,
            activity=activity,
            by=by,
            reason=reason,
            started=started,
            ended=started,
            removals=removals,
            skipped=len(the_plan.skipped),
        )
    )
    content = [r.session for r in the_plan.removals if r.what == "content"]
    structure = [r.session for r in the_plan.removals if r.what == "structure"]
    result.content_values = _remove_content(
        recorder, content, by=by, reason=f"retention run {activity}: {reason}"
    )
    _remove_structure(store, structure, catalogue_iri(recorder.minter))
    if compact:
        compactor = getattr(store, "compact", None)
        if callable(compactor):
            compactor()
            result.compacted = True
    result.run, result.graph = str(activity), str(graph)
    return result
