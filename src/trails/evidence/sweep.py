"""The full verification's one pass: every quad of the store read once, in one stream.

Rehashing each sealed graph with a read of its own costs a call, a decoding and a
conversion per graph. On the embedded store the full verification instead asks the
store for its whole dataset as N-Quads, once (``Sweep``: a file-like object the store
writes into, so memory holds one graph at a time, not the dump). The embedded store
writes each named graph's quads together, so the stream is cut into graphs as it
arrives and each graph is handed on as canonical N-Triples (what ``digest_ntriples``
hashes, what ``structure_from_ntriples`` reads digests from): the same bytes, the same
hash as a dump of that graph alone.

This module also says what every graph of a trails store is (``graph_kind``), so that
nothing in the store goes unaccounted: a graph that is none of the kinds trails writes
is ``FOREIGN``. And it recomputes a session's catalogue entry from the session graph
(``entry_lines``, ``stored_entries``), so an edited or deleted entry is a finding.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from trails.catalogue.entries import catalogue_iri, entry_iri, existing_entry, summarise
from trails.evidence.canonical import canonical_term
from trails.evidence.checks import VerifyReport
from trails.evidence.findings import Finding
from trails.evidence.ledger import _term as _ledger_term
from trails.evidence.ledger import _unescape
from trails.prov.content import is_content_graph
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, RDF, T
from trails.store.base import Store
from trails.store.terms import IRI, Literal, Term

__all__ = [
    "BLOCK",
    "CATALOGUE",
    "FOREIGN",
    "SUMMARY_PREDICATES",
    "SUMMARY_TYPES",
    "Scattered",
    "Sweep",
    "check_entry",
    "entry_lines",
    "graph_kind",
    "ntriples_rows",
    "session_state",
    "stored_entries",
    "summary_triples",
]

FOREIGN = "foreign"
"""The finding kind of something in the store that trails did not write there: a graph of
no known kind, triples in the default graph."""

#: the graphs trails writes besides sessions, their content graphs and the ledger, by the
#: name that follows ``<base>graph:`` (``trails.prov.iri.Minter.graph``): what each is and
#: how verification checks it
UNSEALED_KINDS: dict[str, str] = {
    "catalogue": "catalogue",  # each entry recomputed from its sealed session
    "memory/": "memory",  # memory text checked against its digests
    "memory-state": "memory-state",  # the memory index's position: derived, rebuilt
    "session-claims": "claims",  # session ids claimed at start
    "open-sessions": "open-sessions",  # sessions recovery is to end
    "holds": "holds",  # legal holds (what they hold is sealed elsewhere)
    "access-log": "access-log",  # who asked the SPARQL endpoint what
    "otlp-refusals": "otlp-refusals",  # spans the OTLP receiver refused (trails.otel.refusals)
    "batch/": "batch",  # a planner batch's bookkeeping
    "transparency": "transparency",  # the log over the seals (its own proofs check it)
}
#: graphs that are receipts: each must be sealed
RECEIPT_KINDS: dict[str, str] = {
    "erasure/": "erasure",
    "retention:": "retention",
    "migration/": "migration",
    "controls/": "controls",  # a control evaluation's findings (trails.controls.record)
    "llm-tokens/": "token-trace",  # a streamed completion's opt-in token trace (offsets, times)
}


def graph_kind(graph: str, base: str) -> str:
    """What ``graph`` is by its name: ``ledger``, ``content``, one of ``UNSEALED_KINDS``'
    and ``RECEIPT_KINDS``' values, or ``other`` (a session graph, or something unknown:
    the graph itself tells which)."""
    if is_content_graph(graph):
        return "content"
    prefix = f"{base}graph:"
    if not graph.startswith(prefix):
        return "other"
    name = graph[len(prefix) :]
    if name == "ledger":
        return "ledger"
    for table in (UNSEALED_KINDS, RECEIPT_KINDS):
        for start, kind in table.items():
            if name == start or (start[-1] in "/:" and name.startswith(start)):
                return kind
    return "other"


_TYPE = f" <{RDF.type}> <{T.Session}> .".encode()
_ENDED = f" <{PROV.endedAtTime}> ".encode()
_STATUS = f" <{T.status}> ".encode()


def session_state(graph: str, ntriples: bytes) -> tuple[bool, bool, str]:
    """``(is a session, has ended, status)`` of a graph from its N-Triples: the session's
    own ``a trails:Session``, ``prov:endedAtTime`` and ``trails:status`` lines."""
    me = f"<{graph}>".encode()
    if me + _TYPE not in ntriples:
        return False, False, ""
    ended = me + _ENDED in ntriples
    status = ""
    at = ntriples.find(me + _STATUS)
    if at >= 0:
        start = at + len(me) + len(_STATUS)
        end = ntriples.find(b"\n", start)
        text = ntriples[start : end if end >= 0 else len(ntriples)]
        if text.startswith(b'"') and text.endswith(b'" .'):
            status = text[1:-3].decode("utf-8", "replace")
    return True, ended, status


SUMMARY_PREDICATES = frozenset(
    f"<{p}>".encode()
    for p in (
        RDF.type,
        *(
            PROV.startedAtTime,
            PROV.endedAtTime,
            PROV.wasAssociatedWith,
            PROV.wasInformedBy,
            PROV.actedOnBehalfOf,
            T.status,
            T.strategy,
            T.stopReason,
            T.inSession,
            T.inputTokens,
            T.outputTokens,
            T.costUSD,
            T.principalId,
            T.provider,
            T.modelId,
            IRI.trusted("http://www.w3.org/2000/01/rdf-schema#label"),
        ),
    )
)


#: the classes ``summarise`` asks a node's type about for the entry and its usage nodes
#: (``typed``): of the ``rdf:type`` lines, only these are read for ``entry_lines`` (most
#: lines of a session graph type an entity of no use to its entry). An entry found to
#: differ is read again from the whole graph (``check_entry``); a test keeps this set
#: complete against ``summarise`` given every triple.
SUMMARY_TYPES = frozenset(
    f"<{c}>".encode() for c in (T.Session, T.Principal, T.PlanRun, T.LLMCompletion, T.Model)
) | {f"<{PROV.Agent}>".encode()}
_RDF_TYPE = f"<{RDF.type}>".encode()


def summary_triples(ntriples: bytes) -> list[tuple[str, str, str | Term]]:
    """The triples of a session graph that its catalogue entry is made of (only those lines
    are decoded; of its types, ``SUMMARY_TYPES``)."""
    # a line is ``<s> <p> o .``: its predicate is its second word (a subject holds no
    # space); splitting each line is cheaper than a regular expression over the graph.
    # IRIs stay plain text (an IRI equals its text; ``summarise`` compares them as such)
    wanted, types, rdf_type = SUMMARY_PREDICATES, SUMMARY_TYPES, _RDF_TYPE
    out: list[tuple[str, str, str | Term]] = []
    for line in ntriples.split(b"\n"):
        parts = line.split(b" ", 2)
        if len(parts) < 3 or parts[1] not in wanted or not parts[2].endswith(b" ."):
            continue
        s, p, o = parts[0], parts[1], parts[2][:-2]
        if p == rdf_type and o not in types:
            continue
        out.append(
            (
                s[1:-1].decode(),
                p[1:-1].decode(),
                o[1:-1].decode() if o[:1] == b"<" else _term(o.decode()),
            )
        )
    return out


_JSON = json.JSONDecoder(strict=False)


def _unescaped(text: str) -> str:
    """An N-Triples string's text. Its escapes are JSON's (``\\uXXXX``, ``\\n``, ``\\"`` ...)
    but for ``\\UXXXXXXXX`` and ``\\'``: those go to the ledger's general reader, the rest
    is decoded as a JSON string, at C speed."""
    if "\\" not in text:
        return text
    if "\\U" in text or "\\'" in text:
        return _unescape(text)
    try:
        value = _JSON.decode('"' + text + '"')
    except ValueError:
        return _unescape(text)
    return value if isinstance(value, str) else _unescape(text)


def _term(text: str) -> Term:
    if text[:1] == '"' and text[-1:] == '"':
        return Literal(_unescaped(text[1:-1]))
    return _ledger_term(text)


def ntriples_rows(ntriples: bytes) -> list[tuple[Term, Term, Term]]:
    """``(s, p, o)`` of canonical N-Triples (as the embedded store writes them)."""
    rows: list[tuple[Term, Term, Term]] = []
    for line in ntriples.decode("utf-8").split("\n"):
        if line:
            s, p, o = line[:-2].split(" ", 2)
            rows.append((_term(s), _term(p), _term(o)))
    return rows


CATALOGUE = "catalogue"
"""The finding kind of a catalogue entry that is not what its sealed session gives."""

#: what an entry says (and its usage nodes): the predicates ``summarise`` writes for them
#: (its label is not: the start of a session may name it otherwise than its graph does)
_ENTRY = frozenset(
    str(p)
    for p in (
        RDF.type,
        PROV.wasAttributedTo,
        T.summaryOf,
        T.sessionStarted,
        T.sessionEnded,
        T.sessionStatus,
        T.sessionStopReason,
        T.endedOn,
        T.sealed,
        T.planner,
        T.usedModel,
        T.usage,
        T.usedAgent,
        T.actingFor,
        T.activityCount,
        T.completionCount,
        T.unpricedCount,
        T.totalInputTokens,
        T.totalOutputTokens,
        T.totalCostUSD,
    )
)


def _lines(quads: Iterable[Sequence[Any]]) -> frozenset[str]:
    written: dict[tuple[type, Any], str] = {}  # an entry names few terms, many times

    def term(t: Any) -> str:
        key = (t.__class__, t)
        text = written.get(key)
        if text is None:
            text = written[key] = canonical_term(t, normalise=True)
        return text

    return frozenset(
        f"{term(q[0])} {term(q[1])} {term(q[2])}" for q in quads if str(q[1]) in _ENTRY
    )


_INTEGER = '"^^<http://www.w3.org/2001/XMLSchema#integer>'
_DECIMAL = '"^^<http://www.w3.org/2001/XMLSchema#decimal>'


def _as_decimals(lines: frozenset[str]) -> frozenset[str]:
    """Lines with every integer written as the decimal it is: Virtuoso answers a stored
    ``"0"^^xsd:decimal`` as an ``xsd:integer``, the same value."""
    return frozenset(
        line[: -len(_INTEGER)] + _DECIMAL if line.endswith(_INTEGER) else line for line in lines
    )


def _names(lines: Iterable[str]) -> list[str]:
    """The local names of the predicates of canonical lines."""
    return sorted({line.split(" ", 2)[1].rstrip(">").rsplit("#", 1)[-1] for line in lines})


def check_entry(store: Store, ledger: IRI, session: IRI, report: VerifyReport) -> None:
    """A sealed session's catalogue entry, read now, against the one its graph gives now
    (read again, so that an entry rewritten with a reseal meanwhile is no finding)."""
    base = str(ledger)[: -len("graph:ledger")]
    catalogue = catalogue_iri(Minter(base))
    data = store.dump(format="ntriples", graph=session) or b""
    stored = existing_entry(store, session, catalogue)
    # an entry written before outcomes were counted a failed completion unpriced
    before = bool(stored) and not any(q.predicate == T.sessionOutcome for q in stored)
    expected = entry_lines(session, ntriples_rows(data), catalogue, before_outcomes=before)
    have = _lines((q.subject, q.predicate, q.object) for q in stored)
    if have == expected or _as_decimals(have) == _as_decimals(expected):
        return
    entry = entry_iri(session)
    if not have:
        detail = "the catalogue has no entry for this sealed session (deleted?)"
    else:
        changed = _names(have ^ expected)
        detail = (
            "the catalogue entry is not the one its sealed graph gives "
            f"(differs in {', '.join(changed)})"
        )
    report.findings.append(Finding(CATALOGUE, entry, detail, session=session))


def _owned(entry: str, subject: str) -> bool:
    return subject == entry or subject.startswith(entry + ":usage:")


def entry_lines(
    session: IRI,
    triples: Iterable[Sequence[Any]],
    catalogue: str,
    *,
    before_outcomes: bool = False,
) -> frozenset[str]:
    """The entry a sealed session's graph gives (the entry and its usage nodes, as
    canonical lines; agent descriptions and day totals, shared by entries, are left out);
    ``before_outcomes``: as trails wrote it before entries had outcomes."""
    entry = str(entry_iri(session))
    quads = summarise(
        session, triples, IRI.trusted(catalogue), is_sealed=True, before_outcomes=before_outcomes
    )
    return _lines((q.subject, q.predicate, q.object) for q in quads if _owned(entry, q.subject))


def stored_entries(ntriples: bytes) -> dict[str, frozenset[str]]:
    """The entries of the catalogue graph (given as the embedded store's N-Triples) by
    session: the lines of the entry and its usage nodes, as written (the store writes terms
    in canonical form; a line that ``entry_lines`` would write otherwise makes the entry
    read again, term by term, by ``check_entry``)."""
    owned: dict[str, list[str]] = defaultdict(list)
    sessions: dict[str, str] = {}
    summary_of = f"<{T.summaryOf}>"
    for line in ntriples.decode("utf-8").split("\n"):
        if not line:
            continue
        s, p, o = line[:-2].split(" ", 2)
        if p[1:-1] not in _ENTRY:
            continue
        owned[s[1:-1].split(":usage:", 1)[0]].append(line[:-2])
        if p == summary_of:
            sessions[s[1:-1]] = o[1:-1]
    return {session: frozenset(owned[entry]) for entry, session in sessions.items()}


BLOCK = 1 << 20
"""How many bytes of the stream ``Sweep`` gathers before cutting them into graphs."""


def _run_end(block: bytes, mark: bytes, good: int, bad: int) -> int:
    """Where the lines ending in ``mark`` that start ``block`` end, found by halving:
    ``good`` is the end of one of them, ``bad`` the start of a line that is not (or the
    end of the block). The caller checks the run holds nothing else."""
    while good < bad:
        mid = (good + bad) // 2
        start = block.rfind(b"\n", good - 1, mid) + 1
        stop = block.index(b"\n", mid) + 1 if mid < bad else bad
        if start >= bad or stop > bad:
            break
        if block.endswith(mark, start, stop):
            good = stop
        else:
            bad = start
    return good


class Scattered(Exception):
    """The store wrote a graph's quads in several places: read it again, kept ``whole``."""


class Sweep:
    """A binary file the embedded store dumps N-Quads into; calls ``on_graph(graph,
    ntriples, quads)`` once per named graph as soon as its quads have all arrived.

    Args:
        on_graph: what to do with each graph (its IRI, its quads as N-Triples, how many).
        skip: the lines to pass over (the default graph's triples, as N-Triples lines).
        whole: keep every graph's lines until ``close`` (for a store that does not write
            each graph's quads together, as the in-memory one); by default a graph that
            comes back after another raises ``Scattered``.
        nquads: hand on each graph's lines as they came (N-Quads, each naming the graph)
            rather than as N-Triples, for a receiver that converts them elsewhere.
    """

    def __init__(
        self,
        on_graph: Callable[[str, bytes, int], None],
        *,
        skip: frozenset[bytes] = frozenset(),
        whole: bool = False,
        nquads: bool = False,
    ) -> None:
        self.on_graph = on_graph
        self.skip = skip
        self.whole = whole
        self.nquads = nquads
        self.rest = b""
        self.pending: list[bytes] = []  # what came since the last block was cut
        self.size = 0
        self.tail = b""
        self.parts: list[bytes] = []  # the current graph's lines, in blocks ending in b"\n"
        self.count = 0  # ... and how many
        self.kept: dict[bytes, tuple[list[bytes], list[int]]] = {}
        self.done: set[bytes] = set()
        self.quads = 0
        self.bytes = 0

    def write(self, data: bytes) -> int:
        """Take the next bytes of the dump; returns how many (all of them). They are
        cut into graphs a block of about ``BLOCK`` bytes at a time."""
        self.bytes += len(data)
        self.pending.append(data)
        self.size += len(data)
        if self.size >= BLOCK:
            self._block()
        return len(data)

    def _block(self) -> None:
        data = self.rest + b"".join(self.pending)
        self.pending, self.size = [], 0
        cut = data.rfind(b"\n")
        if cut < 0:
            self.rest = data
            return
        self.rest = data[cut + 1 :]
        self._cut(data[: cut + 1])

    def _cut(self, block: bytes) -> None:
        """Whole lines into graphs: a graph's lines are found together by their common
        end (a line feed ends only lines), each run checked to hold nothing else."""
        if self.skip:
            self._lines(block)
            return
        pos, size = 0, len(block)
        while pos < size:
            first = block.index(b"\n", pos) + 1
            if not (self.tail and block.endswith(self.tail + b"\n", pos, first)):
                line = block[pos : first - 1]  # the first line of another graph
                self._flush()
                self.tail = line[line.rindex(b" <", 0, len(line) - 2) :]
            mark = self.tail + b"\n"
            end = _run_end(block, mark, first, size)
            run = block[pos:end]
            lines = run.count(b"\n")
            if run.count(mark) != lines:  # another graph in between: line by line
                self._lines(block[pos:])
                return
            self.parts.append(run)
            self.count += lines
            pos = end

    def _lines(self, block: bytes) -> None:
        tail, run = self.tail, []
        for line in block[:-1].split(b"\n"):
            if self.skip and line in self.skip:
                continue
            if tail and line.endswith(tail):
                run.append(line)
                continue
            self._add(run)
            self._flush()
            at = line.rindex(b" <", 0, len(line) - 2)
            tail = self.tail = line[at:]
            run = [line]
        self._add(run)

    def _add(self, run: list[bytes]) -> None:
        if run:
            self.parts.append(b"\n".join(run) + b"\n")
            self.count += len(run)

    def flush(self) -> None:
        """Nothing to do: graphs are handed on when complete (``close``)."""

    def close(self) -> None:
        """Hand on the last graph (every graph, when kept ``whole``)."""
        self._block()
        if self.rest:
            self.rest += b"\n"
            self._block()
        self._flush()
        for tail, (parts, counts) in sorted(self.kept.items()):
            self._hand_on(tail, parts, sum(counts))
        self.kept = {}

    def _flush(self) -> None:
        if not self.parts:
            return
        tail, parts, count = self.tail, self.parts, self.count
        self.parts, self.count = [], 0
        if self.whole:
            kept = self.kept.setdefault(tail, ([], []))
            kept[0].extend(parts)
            kept[1].append(count)
            return
        if tail in self.done:
            raise Scattered(tail[2:-3].decode("utf-8", "replace"))
        self.done.add(tail)
        self._hand_on(tail, parts, count)

    def _hand_on(self, tail: bytes, parts: list[bytes], count: int) -> None:
        graph = tail[2:-3].decode("utf-8")
        joined = b"".join(parts)
        self.quads += count
        if self.nquads:
            self.on_graph(graph, joined, count)
        else:
            self.on_graph(graph, joined.replace(tail + b"\n", b" .\n"), count)
