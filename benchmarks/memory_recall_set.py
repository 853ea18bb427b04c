"""A labelled recall set for agent memory, generated deterministically from a seed.

Facts about invented services, projects and people (names are made of
syllables, so they are rare words as real names are), each written with one
of several phrasings, plus unrelated notes as noise. Queries are paraphrases:
they name the entity but ask in other words ("which team maintains X" for
"the platform team owns X"), so ranking must pick the right fact among the
entity's other facts. Some facts are later superseded (the port changed):
their queries expect the new version, or, asked ``as_of`` before the change,
the old one.

``generate(seed)`` returns the memories in learning order (phase 1, then the
updates of phase 2) and the queries with the key of their relevant memory.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["LabelledQuery", "RecallSet", "SetMemory", "generate"]

_SYL = ["ka", "vor", "mi", "zel", "tran", "bo", "qui", "dra", "sen", "lo", "phi", "rax", "ul",
        "ne", "gor", "thi", "ma", "kes", "ori", "van", "ty", "bel", "cu", "dro", "ess", "fen"]  # fmt: skip
_TEAMS = ["platform", "payments", "search", "identity", "data", "mobile", "infra", "growth"]
_DBS = ["PostgreSQL", "Cassandra", "Redis", "SQLite", "MongoDB", "ClickHouse"]
_REGIONS = ["eu-west", "us-east", "ap-south", "eu-central", "us-west"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
_MONTHS = ["January", "March", "May", "July", "September", "November"]
_CITIES = [
    ("Lisbon", "WET"),
    ("Berlin", "CET"),
    ("Tokyo", "JST"),
    ("Austin", "CST"),
    ("Pune", "IST"),
]
_CHANNELS = ["Slack", "a phone call", "Signal", "the pager"]
_NOISE = ["logs", "backups", "tickets", "invoices", "laptops", "badges", "meetings", "dashboards",
          "alerts", "runbooks", "budgets", "licences", "reviews", "releases", "vendors"]  # fmt: skip
_VERBS = ["rotate", "archive", "review", "renew", "audit", "clean", "check", "label"]
_WHEN = ["weekly", "monthly", "every quarter", "before each release", "on Fridays", "daily"]

# kind -> (memory phrasings, query paraphrases); {e} entity, {v} value, {w} second value
_SERVICE = {
    "port": (
        ["The {e} service listens on port {v}.", "{e} accepts connections on port {v}."],
        ["which port does {e} use", "what port number is {e} bound to", "{e} network port"],
    ),
    "owner": (
        ["The {v} team owns the {e} service.", "{e} is maintained by the {v} team."],
        ["who is responsible for {e}", "which team maintains {e}", "{e} service owner"],
    ),
    "database": (
        ["{e} stores its data in {v}.", "The {e} backend keeps its records in {v}."],
        ["what database backs {e}", "where does {e} keep its data", "{e} storage engine"],
    ),
    "deploy": (
        ["{e} is deployed to {v} every {w}.", "Releases of {e} go out to {v} on {w}s."],
        ["when does {e} get released", "{e} deployment schedule", "which region hosts {e}"],
    ),
    "limit": (
        [
            "The {e} API allows {v} requests per minute per client.",
            "{e} throttles clients above {v} requests a minute.",
        ],
        [
            "{e} rate limit",
            "how many calls per minute can a client make to {e}",
            "is {e} throttled",
        ],
    ),
}
_PROJECT = {
    "deadline": (
        ["Project {e} must ship before {v} {w}.", "The {e} project is due in {v} {w}."],
        ["when is {e} due", "{e} deadline", "by when must project {e} be delivered"],
    ),
    "budget": (
        ["Project {e} has a budget of {v} thousand euros.", "{e} was granted {v}k EUR of funding."],
        ["how much money does {e} have", "{e} project funding", "what is the budget for {e}"],
    ),
    "lead": (
        ["{v} leads project {e}.", "The {e} project is run by {v}."],
        ["who runs project {e}", "{e} project lead", "who is in charge of {e}"],
    ),
}
_PERSON = {
    "location": (
        ["{e} works from {v} in the {w} timezone.", "{e} is based in {v} ({w})."],
        ["where is {e} based", "{e} time zone", "which city does {e} work from"],
    ),
    "contact": (
        [
            "{e} prefers {v} over email for urgent issues.",
            "For anything urgent, reach {e} via {v}.",
        ],
        [
            "how should I reach {e} urgently",
            "best way to contact {e}",
            "{e} urgent contact channel",
        ],
    ),
}


@dataclass(frozen=True)
class SetMemory:
    """One memory to learn; ``supersedes`` is the key of the version it replaces."""

    key: str
    content: str
    topic: str
    phase: int = 1
    supersedes: str | None = None


@dataclass(frozen=True)
class LabelledQuery:
    """A query and the key of its one relevant memory; ``as_of_phase1`` asks before phase 2."""

    text: str
    relevant: str
    kind: str
    as_of_phase1: bool = False


@dataclass
class RecallSet:
    memories: list[SetMemory] = field(default_factory=list)
    queries: list[LabelledQuery] = field(default_factory=list)


def _names(rng: random.Random, n: int) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        name = "".join(rng.choice(_SYL) for _ in range(rng.choice((2, 3)))).capitalize()
        if name not in seen and len(name) > 3:
            seen.add(name)
            out.append(name)
    return out


def _value(rng: random.Random, kind: str, people: list[str]) -> tuple[str, str]:
    if kind == "port":
        return str(rng.randrange(1024, 65000)), ""
    if kind == "owner":
        return rng.choice(_TEAMS), ""
    if kind == "database":
        return rng.choice(_DBS), ""
    if kind == "deploy":
        return rng.choice(_REGIONS), rng.choice(_DAYS)
    if kind == "limit":
        return str(rng.choice((60, 100, 300, 600, 1200))), ""
    if kind == "deadline":
        return rng.choice(_MONTHS), str(rng.choice((2025, 2026, 2027)))
    if kind == "budget":
        return str(rng.randrange(20, 900)), ""
    if kind == "lead":
        return rng.choice(people), ""
    if kind == "location":
        return rng.choice(_CITIES)
    return rng.choice(_CHANNELS), ""


def generate(
    seed: int = 7,
    *,
    entities: int = 520,
    noise: int = 600,
    queries: int = 300,
    update_share: float = 0.15,
) -> RecallSet:
    """The labelled set: memories in learning order and labelled queries.

    Args:
        seed: the random seed (same seed, same set).
        entities: how many services, projects and people facts are about.
        noise: unrelated notes added as distractors.
        queries: how many labelled queries.
        update_share: share of facts superseded by a newer version in phase 2.

    Returns:
        The recall set.
    """
    rng = random.Random(seed)
    names = _names(rng, entities)
    people = names[: entities // 4]
    kinds: list[tuple[str, dict[str, tuple[list[str], list[str]]]]] = []
    for i, _ in enumerate(names):
        kinds.append(
            ("person", _PERSON)
            if i < len(people)
            else rng.choice((("service", _SERVICE), ("project", _PROJECT)))
        )
    out = RecallSet()
    facts: list[tuple[str, str, str, str]] = []  # key, entity, kind, template family
    for name, (family, table) in zip(names, kinds, strict=True):
        for kind in rng.sample(sorted(table), k=min(len(table), rng.choice((2, 3, 4)))):
            v, w = _value(rng, kind, people)
            text = rng.choice(table[kind][0]).format(e=name, v=v, w=w)
            key = f"{name}:{kind}"
            out.memories.append(SetMemory(key, text, family))
            facts.append((key, name, kind, family))
    for i in range(noise):
        text = f"Remember to {rng.choice(_VERBS)} the {rng.choice(_NOISE)} {rng.choice(_WHEN)}."
        out.memories.append(SetMemory(f"noise:{i}", text, "ops"))
    rng.shuffle(out.memories)
    updated: dict[str, str] = {}
    for key, name, kind, family in rng.sample(facts, k=int(len(facts) * update_share)):
        table = {"service": _SERVICE, "project": _PROJECT, "person": _PERSON}[family]
        v, w = _value(rng, kind, people)
        text = rng.choice(table[kind][0]).format(e=name, v=v, w=w)
        out.memories.append(SetMemory(key + ":v2", text, family, phase=2, supersedes=key))
        updated[key] = key + ":v2"
    tables = {"service": _SERVICE, "project": _PROJECT, "person": _PERSON}
    picked = rng.sample(facts, k=min(queries, len(facts)))
    stale = [f for f in facts if f[0] in updated]
    n_as_of = min(len(stale), queries // 10)
    for i, (key, name, kind, family) in enumerate(picked):
        text = rng.choice(tables[family][kind][1]).format(e=name)
        if key in updated:
            out.queries.append(LabelledQuery(text, updated[key], "superseded"))
        else:
            out.queries.append(LabelledQuery(text, key, "paraphrase"))
        if i < n_as_of:
            s_key, s_name, s_kind, s_family = stale[i]
            s_text = rng.choice(tables[s_family][s_kind][1]).format(e=s_name)
            out.queries.append(LabelledQuery(s_text, s_key, "as_of", as_of_phase1=True))
    return out
