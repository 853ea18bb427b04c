"""A labelled recall set for agent memory, generated deterministically from a seed.

The set is built to be hard in the ways real agent memory is hard:

- **Many memories per entity, sharing their vocabulary.** Each invented
  service (names are made of syllables, so they are rare words as real names
  are) has thirty facts: the same few attributes (port, replicas,
  timeout, log retention, rate limit, deploy day, owner, database,
  certificate renewal) for two of its components in staging and production.
  The fact asked about has near-duplicate distractors that differ only in the
  one detail asked about ("the Kavor worker listens on port 8080 in staging"
  against "... in production" and "the Kavor API listens on ... in staging").
  Projects have the same shape: four attributes per milestone.
- **Paraphrased queries.** ``direct`` queries reuse the memory's key words
  (a control); ``word_form`` queries ask with other forms of the same words
  ("deployment" for "deployed", "renewal" for "renewed", "maintainers" for
  "maintained"); ``synonym`` queries replace the attribute's words with other
  words altogether ("which socket does it bind to" for "listens on port"),
  keeping only the entity, component and environment.
- **Superseded facts.** Some facts are later replaced by a new version (the
  port changed); ``superseded`` queries expect the current version (the old one
  is retired and must not come back), ``as_of`` queries, asked as memory stood
  before the change, expect the old one.
- **Facts valid only in an interval.** On-call rotations: four people per
  service, each on call for one week (``valid_from`` / ``valid_until``);
  ``valid_at`` queries ask who is on call at a time inside one week.
- **Noise.** Unrelated operational notes written with the same vocabulary
  (ports, staging, logs, certificates, teams) but about no named entity.
- **Varied confidence**, 0.55..1.0, so a distractor may be more confident than
  the right answer.

Query phrasings are drawn for ``superseded``, ``as_of`` and ``valid_at`` from
the same mix of direct, word-form and synonym phrasings. No query contains the
value it asks for.

``generate(seed)`` returns the memories in learning order (phase 1, then the
updates of phase 2) and the queries, each with the key of its one relevant
memory.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

__all__ = [
    "KINDS",
    "ROTATION_START",
    "Attribute",
    "LabelledQuery",
    "Phrasing",
    "RecallSet",
    "SetMemory",
    "generate",
]

KINDS = ("direct", "word_form", "synonym", "superseded", "as_of", "valid_at")
_PHRASINGS = ("direct", "word_form", "synonym")

_SYL = ["ka", "vor", "mi", "zel", "tran", "bo", "qui", "dra", "sen", "lo", "phi", "rax", "ul",
        "ne", "gor", "thi", "ma", "kes", "ori", "van", "ty", "bel", "cu", "dro", "ess", "fen"]  # fmt: skip
_COMPONENTS = ["API", "worker", "scheduler", "gateway", "indexer"]
_ENVS = ["staging", "production"]
_MILESTONES = ["pilot", "beta", "launch"]
_TEAMS = ["platform", "payments", "search", "identity", "data", "mobile", "infra", "growth"]
_DBS = ["PostgreSQL", "Cassandra", "Redis", "SQLite", "MongoDB", "ClickHouse"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
_MONTHS = ["January", "March", "May", "July", "September", "November"]

# Templates: {e} entity, {c} component, {n} environment, {m} milestone, {v} value.
# Each attribute has memory phrasings, each with its own direct and word-form
# queries (relative to that phrasing), and synonym queries sharing no
# attribute word with any of its phrasings.


@dataclass(frozen=True)
class Phrasing:
    """One way of writing a fact, and queries for it that keep or change its words."""

    memory: str
    direct: tuple[str, ...]
    word_form: tuple[str, ...]


@dataclass(frozen=True)
class Attribute:
    """The phrasings of one attribute and its synonym queries."""

    phrasings: tuple[Phrasing, ...]
    synonym: tuple[str, ...]


def _attr(
    synonym: tuple[str, ...], *phrasings: tuple[str, tuple[str, ...], tuple[str, ...]]
) -> Attribute:
    return Attribute(tuple(Phrasing(*p) for p in phrasings), synonym)


_SERVICE_ENV: dict[str, Attribute] = {
    "port": _attr(
        (
            "which socket does the {e} {c} bind to in {n}",
            "what address number is the {n} {e} {c} reachable at",
        ),
        (
            "The {e} {c} listens on port {v} in {n}.",
            ("which port does the {e} {c} listen on in {n}", "{e} {c} port in {n}"),
            ("what is the {e} {c} listening on in {n}", "{e} {c} listener ports in {n}"),
        ),
        (
            "In {n}, the {e} {c} accepts connections on port {v}.",
            ("on which port does the {e} {c} accept connections in {n}",),
            ("{e} {c} accepting connection in {n}", "{n} {e} {c} connecting port"),
        ),
    ),
    "replicas": _attr(
        ("how many copies of the {e} {c} are up in {n}", "{e} {c} horizontal size in {n}"),
        (
            "The {e} {c} runs {v} replicas in {n}.",
            ("how many replicas does the {e} {c} run in {n}",),
            ("{e} {c} replica count in {n}", "how many replica is the {e} {c} running in {n}"),
        ),
        (
            "In {n}, the {e} {c} is scaled to {v} instances.",
            ("how many instances is the {e} {c} scaled to in {n}",),
            ("{n} scaling of the {e} {c}", "{e} {c} instance scale in {n}"),
        ),
    ),
    "timeout": _attr(
        (
            "how long will the {e} {c} wait for an answer in {n}",
            "{e} {c} deadline for calls in {n}",
        ),
        (
            "Requests to the {e} {c} time out after {v} seconds in {n}.",
            ("when do requests to the {e} {c} time out in {n}",),
            (
                "{e} {c} requests timing out in {n}",
                "after how long is a {n} {e} {c} request timed out",
            ),
        ),
        (
            "In {n}, the {e} {c} has a {v} second timeout.",
            ("{e} {c} timeout in {n}",),
            ("{e} {c} timeouts in {n}", "timeout seconds of the {n} {e} {c}"),
        ),
    ),
    "retention": _attr(
        ("when are old {e} {c} records purged in {n}", "{e} {c} history lifetime in {n}"),
        (
            "Logs of the {e} {c} are retained for {v} days in {n}.",
            ("how long are {e} {c} logs retained in {n}",),
            ("how long does the {n} {e} {c} retain its logging", "{e} {c} log retaining in {n}"),
        ),
        (
            "In {n}, the {e} {c} keeps its logs for {v} days.",
            ("how many days does the {e} {c} keep logs in {n}",),
            ("{e} {c} log keeping in {n}", "how long is {n} {e} {c} logging kept"),
        ),
    ),
    "rate_limit": _attr(
        ("{e} {c} rate limit in {n}", "how hard can one caller hit the {e} {c} in {n}"),
        (
            "The {e} {c} allows {v} requests per minute per client in {n}.",
            ("how many requests per minute does the {e} {c} allow in {n}",),
            (
                "requests allowed per client by the {n} {e} {c}",
                "{e} {c} allowance per minute in {n}",
            ),
        ),
        (
            "In {n}, the {e} {c} throttles clients above {v} requests a minute.",
            ("above how many requests a minute does the {e} {c} throttle clients in {n}",),
            ("is the {e} {c} throttling clients in {n}", "{e} {c} client throttle in {n}"),
        ),
    ),
    "deploy": _attr(
        ("what day does the {e} {c} ship to {n}", "{e} {c} rollout schedule for {n}"),
        (
            "The {e} {c} is deployed to {n} every {v}.",
            ("which day is the {e} {c} deployed to {n}",),
            ("{e} {c} deployment day for {n}", "when does the {e} {c} deploy to {n}"),
        ),
        (
            "Releases of the {e} {c} go out to {n} on {v}s.",
            ("when do releases of the {e} {c} go out to {n}",),
            ("when does the {e} {c} get released to {n}", "{e} {c} release day for {n}"),
        ),
    ),
}
_SERVICE_COMPONENT: dict[str, Attribute] = {
    "owner": _attr(
        ("who is responsible for the {e} {c}", "which group looks after the {e} {c}"),
        (
            "The {v} team owns the {e} {c}.",
            ("which team owns the {e} {c}",),
            ("who is the owner of the {e} {c}", "{e} {c} owning team"),
        ),
        (
            "The {e} {c} is maintained by the {v} team.",
            ("which team is the {e} {c} maintained by",),
            ("{e} {c} maintainers", "who does maintenance of the {e} {c}"),
        ),
    ),
    "database": _attr(
        ("which datastore backs the {e} {c}", "{e} {c} persistence engine"),
        (
            "The {e} {c} stores its data in {v}.",
            ("where does the {e} {c} store its data",),
            ("where is the {e} {c} data stored", "{e} {c} data storage"),
        ),
        (
            "The {e} {c} keeps its records in a {v} database.",
            ("which database keeps the {e} {c} records",),
            ("what databases hold the {e} {c} record", "{e} {c} recording database"),
        ),
    ),
    "certificate": _attr(
        ("when do the {e} {c} keys expire", "{e} {c} cert lifetime"),
        (
            "The TLS certificate of the {e} {c} is renewed every {v} days.",
            ("how often is the {e} {c} TLS certificate renewed",),
            ("{e} {c} certificate renewal period", "{e} {c} renewing certificates"),
        ),
        (
            "Certificates of the {e} {c} are rotated every {v} days.",
            ("how often are {e} {c} certificates rotated",),
            ("{e} {c} certificate rotation", "{e} {c} rotating certificate"),
        ),
    ),
}
_PROJECT: dict[str, Attribute] = {
    "deadline": _attr(
        ("{e} {m} deadline", "target date for the {e} {m}"),
        (
            "The {m} of project {e} is due in {v}.",
            ("when is the {m} of project {e} due",),
            ("{e} {m} due date", "when is project {e} {m} coming due"),
        ),
        (
            "Project {e} must reach {m} by {v}.",
            ("when must project {e} reach {m}",),
            ("when is project {e} reaching {m}", "{e} {m} reached by when"),
        ),
    ),
    "lead": _attr(
        ("who is in charge of the {e} {m}", "who runs the {e} {m}"),
        (
            "{v} leads the {m} of project {e}.",
            ("who leads the {m} of project {e}",),
            ("who is leading the {e} {m}", "{e} {m} lead"),
        ),
        (
            "The {e} {m} is led by {v}.",
            ("who is the {e} {m} led by",),
            ("who is leading the {e} {m}", "{e} {m} leader"),
        ),
    ),
    "budget": _attr(
        ("how much money does {e} have for the {m}", "{e} {m} spending cap"),
        (
            "The {m} of project {e} has a budget of {v} thousand euros.",
            ("{e} {m} budget",),
            ("{e} {m} budgeting", "budgets of project {e} for the {m}"),
        ),
        (
            "Project {e} was granted {v}k EUR for the {m}.",
            ("how much was project {e} granted for the {m}",),
            ("{e} {m} grant", "what grants does {e} have for the {m}"),
        ),
    ),
    "reviewer": _attr(
        ("who signs off on the {e} {m}", "{e} {m} gatekeeper"),
        (
            "{v} reviews design changes for the {e} {m}.",
            ("who reviews design changes for the {e} {m}",),
            ("who is the reviewer of {e} {m} designs", "{e} {m} design reviewing"),
        ),
        (
            "Design changes to the {e} {m} need approval from {v}.",
            ("who gives approval for design changes to the {e} {m}",),
            ("who approves {e} {m} design changes", "{e} {m} design approver"),
        ),
    ),
}
_ON_CALL = _attr(
    ("who should I page about {e}", "{e} duty engineer right now"),
    (
        "{v} is on call for {e} this week.",
        ("who is on call for {e} this week",),
        ("{e} on-call engineer this week", "who is taking calls for {e} this week"),
    ),
    (
        "{v} carries the {e} pager this week.",
        ("who carries the {e} pager this week",),
        ("who is carrying the {e} pager", "{e} pager carrier this week"),
    ),
    (
        "Escalations for {e} go to {v} this week.",
        ("where do escalations for {e} go this week",),
        ("who handles {e} escalation this week", "who is {e} escalated to this week"),
    ),
)
# noise: {c} component, {n} environment, {t} team, {w} when
_NOISE = [
    "Remember to check the {n} {c} dashboards {w}.",
    "The {t} team reviews {c} timeouts {w}.",
    "Old {c} logs in {n} are archived to cold storage {w}.",
    "Ask the {t} team before changing {c} replicas in {n}.",
    "Certificates for internal tools are renewed {w}.",
    "Port scans against {n} run {w}.",
    "Database migrations in {n} need a ticket for the {t} team.",
    "Rate limits for {n} clients are reviewed {w}.",
    "The {t} team deploys the {c} fleet to {n} {w}.",
    "Nobody on call may change {n} {c} settings without a review.",
]
_WHEN = ["weekly", "monthly", "every quarter", "before each release", "on Fridays", "daily"]

ROTATION_START = datetime(2025, 3, 3, tzinfo=UTC)
"""Monday of the first on-call week (each rotation lasts seven days)."""


@dataclass(frozen=True)
class SetMemory:
    """One memory to learn; ``supersedes`` is the key of the version it replaces."""

    key: str
    content: str
    topic: str
    confidence: float = 1.0
    phase: int = 1
    supersedes: str | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None


@dataclass(frozen=True)
class LabelledQuery:
    """A query and the key of its one relevant memory.

    ``as_of_phase1`` asks as memory stood before phase 2; ``valid_at`` asks
    for the facts valid at that time; ``phrasing`` is direct, word_form or
    synonym.
    """

    text: str
    relevant: str
    kind: str
    phrasing: str
    as_of_phase1: bool = False
    valid_at: datetime | None = None


@dataclass
class RecallSet:
    """The memories (in learning order) and the labelled queries."""

    memories: list[SetMemory] = field(default_factory=list)
    queries: list[LabelledQuery] = field(default_factory=list)


@dataclass(frozen=True)
class _Fact:
    key: str
    family: str
    attribute: str
    slots: dict[str, str]


def _names(rng: random.Random, n: int) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        name = "".join(rng.choice(_SYL) for _ in range(rng.choice((2, 3)))).capitalize()
        if name not in seen and len(name) > 3:
            seen.add(name)
            out.append(name)
    return out


def _value(rng: random.Random, attribute: str, people: list[str]) -> str:
    if attribute == "port":
        return str(rng.randrange(1024, 65000))
    if attribute == "replicas":
        return str(rng.randrange(2, 40))
    if attribute in ("timeout", "certificate"):
        return str(rng.choice((5, 10, 15, 30, 45, 60, 90)))
    if attribute == "retention":
        return str(rng.choice((7, 14, 30, 60, 90, 365)))
    if attribute == "rate_limit":
        return str(rng.choice((60, 100, 300, 600, 1200)))
    if attribute == "deploy":
        return rng.choice(_DAYS)
    if attribute == "owner":
        return rng.choice(_TEAMS)
    if attribute == "database":
        return rng.choice(_DBS)
    if attribute == "deadline":
        return f"{rng.choice(_MONTHS)} {rng.choice((2025, 2026, 2027))}"
    if attribute == "budget":
        return str(rng.randrange(20, 900))
    return rng.choice(people)  # lead, reviewer, on call


def _attribute(fact: _Fact) -> Attribute:
    if fact.family == "on_call":
        return _ON_CALL
    if fact.family == "project":
        return _PROJECT[fact.attribute]
    return {**_SERVICE_ENV, **_SERVICE_COMPONENT}[fact.attribute]


def _confidence(rng: random.Random) -> float:
    return round(rng.uniform(0.55, 1.0), 2)


def generate(
    seed: int = 7,
    *,
    services: int = 60,
    projects: int = 50,
    on_call_services: int = 50,
    noise: int = 400,
    queries: int = 360,
    update_share: float = 0.08,
) -> RecallSet:
    """The labelled set: memories in learning order and labelled queries.

    Args:
        seed: the random seed (same seed, same set).
        services: services with thirty facts each.
        projects: projects with four attributes for two or three milestones.
        on_call_services: services with a four-week on-call rotation.
        noise: unrelated notes written with the same vocabulary.
        queries: about how many labelled queries (split evenly across ``KINDS``).
        update_share: share of service and project facts superseded in phase 2.

    Returns:
        The recall set.
    """
    rng = random.Random(seed)
    names = _names(rng, services + projects + max(services // 2, 40))
    service_names = names[:services]
    project_names = names[services : services + projects]
    people = names[services + projects :]
    facts: list[_Fact] = []
    for name in service_names:
        components = rng.sample(_COMPONENTS, 2)
        for attribute in sorted(_SERVICE_ENV):
            for c in components:
                for n in _ENVS:
                    key = f"{name}:{c}:{n}:{attribute}"
                    facts.append(_Fact(key, "service", attribute, {"e": name, "c": c, "n": n}))
        for attribute in sorted(_SERVICE_COMPONENT):
            for c in components:
                key = f"{name}:{c}:{attribute}"
                facts.append(_Fact(key, "service", attribute, {"e": name, "c": c}))
    for name in project_names:
        for m in rng.sample(_MILESTONES, rng.choice((2, 3))):
            for attribute in sorted(_PROJECT):
                key = f"{name}:{m}:{attribute}"
                facts.append(_Fact(key, "project", attribute, {"e": name, "m": m}))
    out = RecallSet()
    written: dict[str, Phrasing] = {}  # memory key -> the phrasing it was written with

    def write(key: str, fact: _Fact, value: str) -> str:
        phrasing = rng.choice(_attribute(fact).phrasings)
        written[key] = phrasing
        return phrasing.memory.format(v=value, **fact.slots)

    for fact in facts:
        text = write(fact.key, fact, _value(rng, fact.attribute, people))
        out.memories.append(SetMemory(fact.key, text, fact.family, _confidence(rng)))
    rotation: list[tuple[_Fact, int]] = []
    for name in rng.sample(service_names, min(on_call_services, len(service_names))):
        for week, person in enumerate(rng.sample(people, 4)):
            fact = _Fact(f"{name}:on_call:{week}", "on_call", "on_call", {"e": name})
            start = ROTATION_START + timedelta(weeks=week)
            out.memories.append(
                SetMemory(
                    fact.key,
                    write(fact.key, fact, person),
                    "service",
                    _confidence(rng),
                    valid_from=start,
                    valid_until=start + timedelta(weeks=1),
                )
            )
            rotation.append((fact, week))
    for i in range(noise):
        text = rng.choice(_NOISE).format(
            c=rng.choice(_COMPONENTS),
            n=rng.choice(_ENVS),
            t=rng.choice(_TEAMS),
            w=rng.choice(_WHEN),
        )
        out.memories.append(SetMemory(f"noise:{i}", text, "ops", _confidence(rng)))
    rng.shuffle(out.memories)

    stale = rng.sample(facts, k=int(len(facts) * update_share))
    for fact in stale:
        key = fact.key + ":v2"
        text = write(key, fact, _value(rng, fact.attribute, people))
        out.memories.append(
            SetMemory(key, text, fact.family, _confidence(rng), phase=2, supersedes=fact.key)
        )

    def ask(fact: _Fact, key: str, phrasing: str | None = None) -> tuple[str, str]:
        phrasing = phrasing or rng.choice(_PHRASINGS)
        if phrasing == "synonym":
            options = _attribute(fact).synonym
        else:
            options = getattr(written[key], phrasing)
        return rng.choice(options).format(**fact.slots), phrasing

    share = max(queries // len(KINDS), 1)
    current = [f for f in facts if f not in stale]
    for kind in _PHRASINGS:
        for fact in rng.sample(current, k=min(share, len(current))):
            text, phrasing = ask(fact, fact.key, kind)
            out.queries.append(LabelledQuery(text, fact.key, kind, phrasing))
    for fact in rng.sample(stale, k=min(share, len(stale))):
        text, phrasing = ask(fact, fact.key + ":v2")
        out.queries.append(LabelledQuery(text, fact.key + ":v2", "superseded", phrasing))
    for fact in rng.sample(stale, k=min(share, len(stale))):
        text, phrasing = ask(fact, fact.key)
        out.queries.append(LabelledQuery(text, fact.key, "as_of", phrasing, as_of_phase1=True))
    for fact, week in rng.sample(rotation, k=min(share, len(rotation))):
        text, phrasing = ask(fact, fact.key)
        at = ROTATION_START + timedelta(weeks=week, days=rng.randrange(7), hours=rng.randrange(24))
        out.queries.append(LabelledQuery(text, fact.key, "valid_at", phrasing, valid_at=at))
    return out
