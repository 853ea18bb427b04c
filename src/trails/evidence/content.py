"""Content is evidence: every content value checked against the digest its graph recorded.

Content lives in content graphs (``trails.prov.content``), which no seal covers so that it
can be erased; the structure graph next to it, which the seal covers, keeps each value's
sha256 (``CONTENT_DIGESTS``: ``trails:sha256`` for ``prov:value``, ``trails:goalSha256``,
``trails:answerSha256``, ``trails:argumentsSha256``, ``trails:resultSha256``). The sealed
digest is what proves a value; this module recomputes each value's digest exactly as the
recorder did and compares:

- ``prov:value``, ``trails:goal``, ``trails:answer``: SHA-256 of the value's UTF-8 text
  (``sha256_hex``: for structured content that text is already its canonical JSON);
- ``trails:arguments``, ``trails:result`` (a persisted envelope's, kept in their original
  key order): SHA-256 of the canonical JSON of the value they hold (``json_sha256``).

Each graph is read with one query (its content graph whole, and the digests of its
structure graph), so a graph is checked in one consistent read, whoever writes meanwhile.
A full verification on the embedded store has just dumped each sealed graph to hash it:
the digests are taken from that dump and only the content graph is queried (should the
two reads disagree, the graph is read again in one query before anything is reported).
Nothing is read per value.
The findings (``trails.evidence.findings``) name the content entity, as an erasure
receipt names it (``content_entity``: the subject for ``prov:value``, else the subject's
``:goal``, ``:answer``, ``:arguments`` or ``:result`` part), and the graph it belongs to:

- ``content-altered``: a value's digest differs from the recorded one, or the value is not
  a plain string any more;
- ``content-missing``: a recorded digest has no value, and no *sealed* receipt accounts
  for it: an erasure (``trails.compliance.erasure``) that names the entity, or a retention
  run (``trails.compliance.retention``) that removed the graph's content. Neither is a
  finding when sealed: the value is counted against its receipt (``ContentTally.accounted``);
  a receipt found unsealed is asked about again before its values are called missing (an
  erasure seals its receipt right after removing the values).
  Nor is an entity recorded with ``record_content = "hash"``: the recorder marks it
  ``trails:contentPolicy "hash"`` in the sealed graph, so its missing value is expected;
- ``content-foreign``: a value whose graph records no digest for it, a second value for one
  entity, a value an erasure receipt says is gone (content put back), a value on an entity
  recorded as a hash only, or anything in a content graph that is not a content value
  (structure planted there, where no seal looks).

A store written before content was kept apart holds values inside its sealed graphs; they
count as present (the seal covers them) and are checked the same way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace

from trails.evidence.findings import CONTENT_ALTERED, CONTENT_FOREIGN, CONTENT_MISSING, Finding
from trails.prov.content import (
    CONTENT_DIGESTS,
    CONTENT_PROPERTIES,
    is_content_graph,
    json_sha256,
    sha256_hex,
    structure_graph,
)
from trails.prov.content import content_graph as _content_graph
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Term

__all__ = [
    "HASH_ONLY",
    "Accounts",
    "ContentChecker",
    "ContentTally",
    "Receipt",
    "check_session_content",
    "check_store_content",
    "content_entity",
    "read_accounts",
    "receipt_graphs",
    "structure_from_ntriples",
    "value_digest",
]

HASH_ONLY = "hash"
"""The ``trails:contentPolicy`` of an entity recorded with its digest alone."""

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_PROPERTY_OF: dict[IRI, IRI] = {d: p for p, d in CONTENT_DIGESTS.items()}
_JSON = frozenset({T.arguments, T.result})
_READ = (*CONTENT_DIGESTS.values(), T.contentPolicy, *CONTENT_PROPERTIES)
_PREDICATES = " ".join(p.n3() for p in _READ)

# the content graph whole (?in bound), and what the structure graph records of content
_GRAPH = f"""
SELECT ?in ?s ?p ?o $g $cg WHERE {{
  {{ GRAPH $cg {{ ?s ?p ?o }} BIND(true AS ?in) }}
  UNION
  {{ VALUES ?p {{ {_PREDICATES} }} GRAPH $g {{ ?s ?p ?o }} }}
}}
"""

# the content graph alone, for a graph whose digests were read from its dump
_CONTENT = "SELECT ?s ?p ?o $cg WHERE { GRAPH $cg { ?s ?p ?o } }"

# the predicates of the digest and policy lines of a graph as Oxigraph writes it (N-Triples
# in canonical form: `<s> <p> "o" .`), and those of content kept inside a graph
_MARKERS = tuple((f" <{p}> ".encode(), p) for p in (*CONTENT_DIGESTS.values(), T.contentPolicy))
_INLINE = tuple(f" <{p}> ".encode() for p in CONTENT_PROPERTIES)

_ERASED = f"""
SELECT ?r ?x ?e ?d WHERE {{ GRAPH ?r {{
  ?x a {T.Erasure.n3()} . ?e {PROV.wasInvalidatedBy.n3()} ?x .
  OPTIONAL {{ ?e {T.sha256.n3()} ?d }}
}} }}
"""

_ERASED_IN = f"""
SELECT ?r ?x ?e ?d $session WHERE {{ GRAPH ?r {{
  ?x a {T.Erasure.n3()} ; {T.erasedSession.n3()} $session . ?e {PROV.wasInvalidatedBy.n3()} ?x .
  OPTIONAL {{ ?e {T.sha256.n3()} ?d }}
}} }}
"""

_RETAINED = f"""
SELECT ?r ?run ?graph WHERE {{ GRAPH ?r {{
  ?e a {T.RetentionRemoval.n3()} ; {T.removedGraph.n3()} ?graph ; {T.removedPart.n3()} "content" ;
     {PROV.wasInvalidatedBy.n3()} ?run .
}} }}
"""

_RETAINED_OF = f"""
SELECT ?r ?run $graph WHERE {{ GRAPH ?r {{
  ?e a {T.RetentionRemoval.n3()} ; {T.removedGraph.n3()} $graph ; {T.removedPart.n3()} "content" ;
     {PROV.wasInvalidatedBy.n3()} ?run .
}} }}
"""


def content_entity(subject: str, prop: str) -> IRI:
    """The content entity a value is: ``subject`` for ``prov:value``, else its part named
    after the property (``<activity>:goal``), as erasure receipts name it."""
    if prop == PROV.value:
        return IRI.trusted(subject)
    return Minter.part(subject, prop.rsplit("#", 1)[-1])


def value_digest(prop: str, text: str) -> str:
    """The digest of ``text`` held by content property ``prop``, computed as the recorder
    computed the digest it recorded (``json_sha256`` for an envelope's arguments and
    result, ``sha256_hex`` for every other value)."""
    return json_sha256(text) if prop in _JSON else sha256_hex(text)


@dataclass(frozen=True)
class Receipt:
    """A sealed record that content was removed on purpose."""

    iri: str
    """The ``trails:Erasure`` activity, or the ``trails:RetentionRun``."""
    graph: str
    """The graph that holds it (sealed)."""
    kind: str
    """``erasure`` or ``retention``."""


@dataclass
class Accounts:
    """What sealed receipts say was removed: the content whose absence is lawful."""

    erased: dict[str, tuple[Receipt, str]] = field(default_factory=dict)
    """Erased content entity -> its receipt and the digest the receipt recorded."""
    retained: dict[str, Receipt] = field(default_factory=dict)
    """Graph whose content a retention run removed -> the run."""
    unsealed: set[str] = field(default_factory=set)
    """Receipt graphs found without a seal: what they say is not taken into account."""
    pending: dict[str, Receipt] = field(default_factory=dict)
    """Erased content entity -> the receipt naming it that had no seal when read."""
    recheck: Callable[[str], bool] | None = None
    """Whether a receipt graph is sealed now: a receipt sealed while verification ran (an
    erasure seals its receipt right after its removal) is taken into account."""

    @property
    def receipt_graphs(self) -> set[str]:
        """The graphs holding the receipts taken into account."""
        return {r.graph for r, _ in self.erased.values()} | {
            r.graph for r in self.retained.values()
        }


def _rows(store: Store, sparql: str, params: Mapping[str, Term] | None = None) -> Solutions:
    result = store.query(sparql, params)
    assert isinstance(result, Solutions)
    return result


def read_accounts(
    store: Store,
    sealed: Callable[[str], bool],
    *,
    session: IRI | None = None,
    recheck: Callable[[str], bool] | None = None,
) -> Accounts:
    """The erasure and retention receipts that account for removed content.

    Args:
        store: the store.
        sealed: whether a graph is sealed (a receipt counts only in a sealed graph).
        session: only the receipts about this session (default: every receipt).
        recheck: whether a graph is sealed now, asked again before an unsealed erasure
            receipt leaves the value it names missing (default: ``sealed``).

    Returns:
        The accounts.
    """
    accounts = Accounts(recheck=recheck or sealed)
    erased = (
        _rows(store, _ERASED_IN, {"session": session})
        if session is not None
        else _rows(store, _ERASED)
    )
    for row in erased:
        graph = str(row["r"])
        if not sealed(graph):
            accounts.unsealed.add(graph)
            accounts.pending[str(row["e"])] = Receipt(str(row["x"]), graph, "erasure")
            continue
        digest = row.get("d")
        accounts.erased[str(row["e"])] = (
            Receipt(str(row["x"]), graph, "erasure"),
            digest.value if isinstance(digest, Literal) else "",
        )
    retained = (
        _rows(store, _RETAINED_OF, {"graph": session})
        if session is not None
        else _rows(store, _RETAINED)
    )
    for row in retained:
        graph = str(row["r"])
        if not sealed(graph):
            accounts.unsealed.add(graph)
            continue
        target = str(row.get("graph", session))
        accounts.retained[target] = Receipt(str(row["run"]), graph, "retention")
    return accounts


@dataclass
class ContentTally:
    """What the content check looked at."""

    graphs: int = 0
    """Graphs whose content was read and checked value by value."""
    values: int = 0
    """Values whose digest was recomputed and compared."""
    hash_only: int = 0
    """Entities recorded as a digest alone (``record_content = "hash"``)."""
    accounted: dict[tuple[str, str], int] = field(default_factory=dict)
    """(graph, receipt) -> values absent because that sealed receipt removed them."""

    def lines(self) -> list[str]:
        """One line per graph and receipt that accounts for its removed content."""
        return [
            f"{graph}: {n} content value(s) removed on record by {receipt}"
            for (graph, receipt), n in sorted(self.accounted.items())
        ]


@dataclass
class _Graph:
    """One graph's content as read: digests and markers of its structure, its values."""

    digests: dict[tuple[str, IRI], set[str]] = field(default_factory=lambda: defaultdict(set))
    hash_only: set[str] = field(default_factory=set)
    values: dict[tuple[str, IRI], list[Term]] = field(default_factory=lambda: defaultdict(list))
    inline: dict[tuple[str, IRI], list[Term]] = field(default_factory=lambda: defaultdict(list))
    """Values still inside the structure graph (a store written before content moved)."""
    planted: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    """Subject -> predicates of quads in the content graph that are not content values."""


class ContentChecker:
    """Checks graphs' content and collects findings and the tally.

    Args:
        accounts: the sealed receipts of removed content (``read_accounts``).
        findings: where findings go (a report's list).
        tally: what was checked (a report's tally).
    """

    def __init__(self, accounts: Accounts, findings: list[Finding], tally: ContentTally) -> None:
        self.accounts = accounts
        self.findings = findings
        self.tally = tally

    def check(
        self, store: Store, graph: IRI, *, sealed: bool, ntriples: bytes | None = None
    ) -> None:
        """Read ``graph``'s content graph and digests in one query and check them.

        Args:
            store: the store.
            graph: the structure graph (a session's, a memory graph ...).
            sealed: whether ``graph`` is sealed (its digests are then sealed evidence).
            ntriples: the graph as the embedded store dumped it, when it was just read
                (to hash it): its digests are taken from there and only the content
                graph is queried; should that find anything, the graph is read again
                in one query, so that a write between the two reads is never a finding.
        """
        read = structure_from_ntriples(ntriples) if ntriples is not None else None
        if read is not None:  # the digests are read: the content graph alone is queried
            result = _rows(store, _CONTENT, {"cg": _content_graph(graph)})
            mark, tally = (
                len(self.findings),
                replace(self.tally, accounted=dict(self.tally.accounted)),
            )
            self.judge(graph, read, _triples(result, None), sealed=sealed)
            if len(self.findings) == mark:
                return
            # two reads: a write between them (a late write to a sealed graph) must not pass
            # for tampering, so what they disagree on is read again, as one
            del self.findings[mark:]
            for name in (f.name for f in fields(ContentTally)):
                setattr(self.tally, name, getattr(tally, name))
        result = _rows(store, _GRAPH, {"g": graph, "cg": _content_graph(graph)})
        self.judge(graph, _triples(result, False), _triples(result, True), sealed=sealed)

    def judge(
        self,
        graph: IRI,
        structure: Iterable[tuple[Term, Term, Term]],
        content: Iterable[tuple[Term, Term, Term]],
        *,
        sealed: bool,
    ) -> None:
        """Check one graph's content as already read (a reader that passes over the store
        once hands each graph's quads here).

        Args:
            graph: the structure graph.
            structure: its quads (only those of ``CONTENT_DIGESTS``' digest properties,
                ``trails:contentPolicy`` and content properties are looked at).
            content: every quad of its content graph.
            sealed: whether ``graph`` is sealed.
        """
        read = _Graph()
        for s, p, o in content:
            if p in CONTENT_PROPERTIES:  # text, or whatever was put where text belongs
                read.values[(str(s), IRI.trusted(p))].append(o)
            else:
                read.planted[str(s)].add(str(p))
        for s, p, o in structure:
            if p in _PROPERTY_OF and isinstance(o, Literal):
                read.digests[(str(s), IRI.trusted(p))].add(o.value)
            elif p == T.contentPolicy:
                if isinstance(o, Literal) and o.value == HASH_ONLY:
                    read.hash_only.add(str(s))
            elif p in CONTENT_PROPERTIES:
                read.inline[(str(s), IRI.trusted(p))].append(o)
        self.tally.graphs += 1
        self._judge(str(graph), read, sealed)

    def _add(self, kind: str, entity: str, graph: str, detail: str) -> None:
        self.findings.append(Finding(kind, entity, detail, session=graph))

    def _judge(self, graph: str, read: _Graph, sealed: bool) -> None:
        recorded = "sealed" if sealed else "recorded"
        for (s, dp), digests in sorted(read.digests.items()):
            prop = _PROPERTY_OF[dp]
            entity = content_entity(s, prop)
            values = read.values.get((s, prop)) or read.inline.get((s, prop), [])
            if not values:
                if prop == PROV.value and s in read.hash_only:
                    self.tally.hash_only += 1
                else:
                    self._absent(graph, entity, digests, recorded)
                continue
            erased = self.accounts.erased.get(entity)
            if len(values) > 1:
                self._add(
                    CONTENT_FOREIGN,
                    entity,
                    graph,
                    f"{len(values)} values for one entity; its {recorded} digest proves one",
                )
                continue
            value = values[0]
            self.tally.values += 1
            if not isinstance(value, Literal) or value.datatype != _XSD_STRING or value.language:
                self._add(
                    CONTENT_ALTERED, entity, graph, "its value is no longer a plain string literal"
                )
                continue
            digest = value_digest(prop, value.value)
            if digest not in digests:
                self._add(
                    CONTENT_ALTERED,
                    entity,
                    graph,
                    f"its value hashes to {digest[:16]}…, its "
                    f"{recorded} digest is {min(digests)[:16]}…",
                )
            elif erased is not None and erased[1] in digests:
                self._add(
                    CONTENT_FOREIGN,
                    entity,
                    graph,
                    f"holds a value that erasure {erased[0].iri} removed (content put back)",
                )
            elif prop == PROV.value and s in read.hash_only:
                self._add(
                    CONTENT_FOREIGN,
                    entity,
                    graph,
                    "recorded as a digest alone (record_content = hash), yet a value is there",
                )
        for (s, prop), values in sorted(read.values.items()):
            if (s, CONTENT_DIGESTS[prop]) not in read.digests:
                self._add(
                    CONTENT_FOREIGN,
                    content_entity(s, prop),
                    graph,
                    f"{len(values)} value(s) in its content graph, and no digest in its graph "
                    "accounts for them",
                )
        for s, predicates in sorted(read.planted.items()):
            self._add(
                CONTENT_FOREIGN,
                s,
                graph,
                "quads that are not content values in the content graph, where no seal looks "
                f"({', '.join(sorted(predicates))})",
            )

    def _absent(self, graph: str, entity: IRI, digests: set[str], recorded: str) -> None:
        """A recorded digest without its value: accounted for by a sealed receipt, or missing."""
        accounts = self.accounts
        erased = accounts.erased.get(entity)
        receipt = erased[0] if erased is not None else accounts.retained.get(graph)
        pending = accounts.pending.get(entity)
        recheck = accounts.recheck
        if receipt is None and pending is not None and recheck and recheck(pending.graph):
            receipt = pending  # its receipt was sealed since it was read
        if receipt is not None:
            key = (graph, receipt.iri)
            self.tally.accounted[key] = self.tally.accounted.get(key, 0) + 1
            return
        why = (
            f"only erasure {pending.iri} names it, and its receipt is not sealed"
            if pending is not None
            else "no sealed erasure or retention receipt names it"
        )
        self._add(
            CONTENT_MISSING,
            entity,
            graph,
            f"its {recorded} digest {min(digests)[:16]}… has no value, and {why}",
        )


def _triples(result: Solutions, content: bool | None) -> list[tuple[Term, Term, Term]]:
    """The (s, p, o) rows of ``result``: all of them (``content`` None), or those of the
    content graph (True) or of the structure graph (False) of the ``_GRAPH`` query."""
    names = result.variables
    i_s, i_p, i_o = (names.index(n) for n in ("s", "p", "o"))
    i_in = names.index("in") if content is not None else -1
    out: list[tuple[Term, Term, Term]] = []
    for row in result.rows:
        s, p, o = row[i_s], row[i_p], row[i_o]
        if s is None or p is None or o is None:
            continue
        if content is None or (row[i_in] is not None) == content:
            out.append((s, p, o))
    return out


def structure_from_ntriples(data: bytes) -> list[tuple[Term, Term, Term]] | None:
    """The digest and ``trails:contentPolicy`` quads of a graph given as the embedded
    store's N-Triples dump; None when it holds what this reader leaves to a query
    (content kept inside the graph, a digest that is not a plain string)."""
    if any(m in data for m in _INLINE):
        return None
    found: list[tuple[Term, Term, Term]] = []
    for marker, prop in _MARKERS:
        at = data.find(marker)
        while at >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end
            subject, value = data[start:at], data[at + len(marker) : end]
            if not (subject[:1] == b"<" and subject[-1:] == b">" and value[:1] == b'"'):
                return None
            if not value.endswith(b'" .') or b'"' in value[1:-3] or b"\\" in value:
                return None
            found.append((IRI.trusted(subject[1:-1].decode()), prop, Literal(value[1:-3].decode())))
            at = data.find(marker, end)
    return found


def check_store_content(
    store: Store,
    *,
    sealed: set[IRI],
    sessions: set[IRI],
    memory: str,
    checker: ContentChecker,
    done: Collection[IRI] = (),
) -> None:
    """The content of every graph that records content, against its digests.

    The graphs are the sealed ones still present, the sessions (open ones too), the
    memory graphs (``memory``: their IRIs' prefix) and the graph of every content graph
    in the store (so content whose graph never was, or is no longer, sealed or recorded
    is read too, and found foreign). Not read: the graphs of sealed receipts (what they
    hold are the digests of what they erased), and sealed graphs that are gone (verify
    reports them missing; their content cannot be checked without them). Every mode of
    verification reads all of it: content is not sealed, so no checkpoint vouches for it.

    Args:
        store: the store.
        sealed: the sealed graphs.
        sessions: the session graphs.
        memory: the prefix of the memory graphs' IRIs.
        checker: the checker (its receipts read with ``read_accounts``).
        done: graphs already checked (with the dump that hashed them).
    """
    accounts = checker.accounts
    present = set(store.graphs())
    graphs = {g for g in sealed if g in present} | sessions
    graphs |= {structure_graph(g) for g in present if is_content_graph(g)}
    graphs |= {g for g in present if g.startswith(memory) and not is_content_graph(g)}
    graphs -= {IRI.trusted(g) for g in accounts.receipt_graphs | accounts.unsealed}
    graphs -= sealed - present  # a sealed graph that is gone is a finding of its own (missing)
    graphs -= set(done)
    for graph in sorted(graphs):
        checker.check(store, graph, sealed=graph in sealed)


def check_session_content(
    store: Store,
    session: IRI,
    *,
    sealed: bool,
    is_sealed: Callable[[str], bool],
    findings: list[Finding],
    tally: ContentTally,
) -> Accounts:
    """One session's content against its digests.

    Args:
        store: the store.
        session: the session graph.
        sealed: whether it is sealed.
        is_sealed: whether a graph is sealed (for the receipts about the session).
        findings: where findings go.
        tally: what was checked.

    Returns:
        The receipts taken into account (their graphs are worth rehashing).
    """
    accounts = read_accounts(store, is_sealed, session=session)
    ContentChecker(accounts, findings, tally).check(store, session, sealed=sealed)
    return accounts


_RECEIPTS = f"""
SELECT ?r ?about WHERE {{ GRAPH ?r {{
  {{ ?x a {T.Erasure.n3()} ; {T.erasedSession.n3()} ?about }}
  UNION
  {{ ?e a {T.RetentionRemoval.n3()} ; {T.removedGraph.n3()} ?about ; {T.removedPart.n3()} "content" }}
}} }}
"""


def receipt_graphs(store: Store, graphs: Iterable[str]) -> set[IRI]:
    """The graphs of the erasure and retention receipts about the content of ``graphs``
    (what an evidence bundle carries with them, so their removed content is accounted for)."""
    wanted = {str(g) for g in graphs}
    return {
        IRI.trusted(str(row["r"])) for row in _rows(store, _RECEIPTS) if str(row["about"]) in wanted
    }
