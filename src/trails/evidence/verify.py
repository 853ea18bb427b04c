"""Verification: recompute sealed graphs, walk every seal chain, check signatures and anchors.

``verify(store)`` answers the auditor's question "was anything changed after
it was recorded?". It is the full check: every sealed graph rehashed, every
content value recomputed, every chain walked, every graph of the store accounted
for. It returns every finding rather than stopping at the first, each naming the
graph or seal and what no longer matches:

- ``altered``: the graph's canonical hash or quad count differs from its
  latest seal (a literal changed, a quad deleted or added);
- ``missing``: a sealed graph no longer exists;
- ``unsealed``: a session graph that has ended but has no seal;
- ``chain``: a seal's own hash does not recompute, its link to the previous
  seal of its chain or to an anchored seal does not match, a sequence number
  is missing or repeated, a seal holds two values for one field, the ledger's
  newest-seal pointer names a removed seal, or an expected head is absent;
- ``signature``: a signature does not verify, or (with a trusted key) a seal
  is unsigned or signed by a key that neither is the trusted key nor was
  rotated to from it by a recorded, signed ``trails:KeyRotation``;
- ``content-altered``, ``content-missing``, ``content-foreign``: a content value
  against the digest its sealed graph keeps (``trails.evidence.content``; each
  names the entity and its session), and a memory's digest against the one its
  sealed learning session keeps (``trails.evidence.learned``);
- ``catalogue``: a sealed session's catalogue entry (status, cost, tokens ...) is
  not the one its sealed graph gives, or is gone (``trails.evidence.sweep``), or an
  entry names a session of which the store holds neither a graph nor a seal;
- ``foreign``: something trails does not write: a named graph of no kind trails
  writes (``trails.evidence.sweep.graph_kind``), an unsealed receipt graph, or
  triples in the default graph.

On the embedded store the whole dataset is read in one pass (``trails.evidence.sweep``):
one N-Quads stream, cut into graphs as it arrives, so every graph, the ledger and the
sessions' state are read at once. A graph that does not match its seal, or a session
that ended without one, is read again with the ledger before it is reported: a writer
that seals or reseals while verification runs is never a finding. A SPARQL server is
read in batches of graphs (``trails.evidence.remote_sweep``), each graph handed to the
same checks, and re-read the same way.

Sessions that have not ended (``open``) and sessions ended as interrupted
(``interrupted``, by recovery) are listed, not findings: an accident is not
tampering. Neither is retention (``trails.compliance.retention``): a sealed graph
that a recorded, sealed ``trails:RetentionRun`` names as removed (with the
seal hash it had) is listed in ``removed`` with who, when and why. Nor is an
erasure: seals cover structure graphs, erased content was in content graphs, and
each erasure's sealed receipt is listed (``erasures``). ``VerifyReport.heads`` are
the ledger's heads: the seals no other seal links to (by previous seal or anchor).

``verify(store, quick=True)`` is the quick mode (``trails.evidence.quick``): it
reads only what was sealed since the latest verification checkpoint, and says what
it did not recheck. ``verify(store, session=IRI)`` checks one session in time
independent of the ledger's size: its seals, the previous seal and the anchors of
its newest seal, signatures, the graph and its content, and each memory it learned against
the digest it sealed (``trails.evidence.learned``).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from trails.catalogue.entries import catalogue_iri, entry_iri
from trails.errors import SessionError
from trails.evidence.canonical import canonical_term
from trails.evidence.checkpoint import read_checkpoint
from trails.evidence.checks import (
    INTERRUPTED,
    Removed,
    VerifyReport,
    check_anchors,
    check_chains,
    check_graph,
    check_link,
    check_seal,
    load_public_key,
    removals,
    seal_name,
    sort_sessions,
    trusted_keys,
)
from trails.evidence.content import (
    ContentChecker,
    check_session_content,
    read_accounts,
)
from trails.evidence.erasures import list_erasures
from trails.evidence.findings import Finding
from trails.evidence.graphwork import Graph, GraphRead, Judge, Shared, Workers, jobs_for
from trails.evidence.learned import check_learned, check_learned_by
from trails.evidence.ledger import (
    LedgerContents,
    SealRecord,
    latest_of,
    ledger_iri,
    read_ledger,
    read_rotations,
    read_seal,
    seals_of_graph,
)
from trails.evidence.quick import verify_quick
from trails.evidence.remote_sweep import Batches, default_graph_finding, own_graphs
from trails.evidence.sweep import (
    CATALOGUE,
    FOREIGN,
    RECEIPT_KINDS,
    Scattered,
    Sweep,
    check_entry,
    graph_kind,
)
from trails.evidence.transparency import check_log, extends
from trails.prov.content import structure_graph
from trails.prov.iri import Minter
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Term

__all__ = [
    "Finding",
    "Removed",
    "VerifyReport",
    "check_seal",
    "load_public_key",
    "trusted_keys",
    "verify",
]

_check_seal = check_seal  # the bundle verifier's name for it

_DEFAULT_GRAPH = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"

Progress = Callable[[int, int], None]
"""Called as the full pass goes: (graphs read, graphs in the store)."""

_SESSION = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT $g ?ended ?status WHERE {
  GRAPH $g { $g a trails:Session .
             OPTIONAL { $g prov:endedAtTime ?ended }
             OPTIONAL { $g trails:status ?status } }
}
"""

_HASH_PRESENT = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $ledger { ?seal a trails:Seal ; trails:sealHash $hash } }
"""


def verify(
    store: Store,
    *,
    session: IRI | None = None,
    minter: Minter | None = None,
    public_key: Any = None,
    expect_heads: list[str] | None = None,
    quick: bool = False,
    incremental: bool = False,
    progress: Progress | None = None,
    jobs: int | None = None,
) -> VerifyReport:
    """Recompute sealed graphs and content, check the seal chains, account for every graph.

    Args:
        store: the store to check.
        session: check only this session graph, its seals and their links.
        minter: the minter whose base names the ledger (default ``urn:trails:``).
        public_key: a trusted Ed25519 public key. With it, every seal checked must
            be signed by it or by a key rotated to from it; without it each
            signature is checked against the key recorded in its seal.
        expect_heads: seal hashes kept elsewhere (an earlier report's ``heads``);
            each must still be in the ledger.
        quick: the quick mode (``trails.evidence.quick``): only what was sealed since
            the latest checkpoint (the full check when there is no usable one).
        incremental: the quick mode's former name.
        progress: called as the full pass reads graphs (graphs read, graphs in all).
        jobs: worker processes for the full pass on the embedded store
            (``trails.evidence.graphwork``; 1: all in this process). By default every
            core, for a store of ``graphwork.POOL_FROM`` graphs or more.

    Returns:
        The report; ``report.ok`` is False when anything does not match.

    Raises:
        SessionError: ``session`` is neither a session graph nor sealed.
        StoreError: the store could not be read.
    """
    began = time.perf_counter()
    minter = minter or Minter()
    ledger = ledger_iri(minter)
    if session is not None:
        return _verify_session(store, ledger, session, public_key, expect_heads)
    report = None
    if quick or incremental:
        report = verify_quick(store, ledger, minter, public_key, expect_heads)
    if report is None:
        note = _no_checkpoint(store, ledger) if quick or incremental else ""
        from trails.store.oxigraph import OxigraphStore  # loaded when such a store is open

        if isinstance(store, OxigraphStore):
            try:
                report = _verify_full(
                    store, ledger, minter, public_key, expect_heads, progress, jobs=jobs
                )
            except Scattered:  # not each graph's quads together (the in-memory store)
                report = _verify_full(
                    store, ledger, minter, public_key, expect_heads, progress, whole=True,
                    jobs=jobs,
                )  # fmt: skip
        else:
            report = _verify_by_graph(store, ledger, minter, public_key, expect_heads, progress)
        report.note = note
    checkpoint = read_checkpoint(store, ledger)
    if checkpoint is not None and not checkpoint.intact():
        report.findings.append(
            Finding(
                "chain",
                f"checkpoint {checkpoint.iri}",
                "its fields do not hash to its recorded checkpoint hash",
            )
        )
    elif checkpoint is not None and checkpoint.log is not None:  # the log written with it
        what = f"the checkpoint of {checkpoint.at}"
        report.findings.extend(extends(store, minter, *checkpoint.log, what))
    report.erasures = [e.describe() for e in list_erasures(store)]
    report.seconds = time.perf_counter() - began
    return report


def _no_checkpoint(store: Store, ledger: IRI) -> str:
    if read_checkpoint(store, ledger) is None:
        return "no verification checkpoint recorded yet"
    return "the latest checkpoint could not be used"


def _start(
    store: Store, ledger: IRI, public_key: Any, expect_heads: list[str] | None
) -> tuple[VerifyReport, LedgerContents, dict[IRI, SealRecord]]:
    """The ledger read and its chains walked: the report so far, and each graph's newest seal."""
    contents = read_ledger(store, ledger)
    trusted = trusted_keys(public_key, contents.rotations) if public_key is not None else None
    report = VerifyReport(seals=len(contents.seals))
    check_chains(contents, trusted, report)
    present = {s.seal_hash for s in contents.seals}
    for head in expect_heads or []:
        if head not in present:
            report.findings.append(
                Finding("chain", head, "the expected head is not in the ledger (seals removed?)")
            )
    per_graph: dict[IRI, list[SealRecord]] = defaultdict(list)
    for seal in contents.seals:
        per_graph[seal.graph].append(seal)
    latest = {g: s for g, seals in per_graph.items() if (s := latest_of(seals)) is not None}
    return report, contents, latest


def _verify_by_graph(
    store: Store,
    ledger: IRI,
    minter: Minter,
    public_key: Any,
    expect_heads: list[str] | None,
    progress: Progress | None = None,
) -> VerifyReport:
    """The full check on a store that is not the embedded one (a SPARQL server): its graphs
    listed once and read in batches (``trails.evidence.remote_sweep``), each through the
    same checks as the embedded store's one pass."""
    report, _, latest = _start(store, ledger, public_key, expect_heads)
    removed = removals(store)

    def sealed_now(graph: str) -> bool:  # an erasure seals its receipt right after removing
        return bool(seals_of_graph(store, ledger, IRI.trusted(graph)))

    accounts = read_accounts(store, latest.__contains__, recheck=sealed_now)
    checker = ContentChecker(accounts, report.findings, report.content)
    batches = Batches(store, minter.base, skip=own_graphs(store))
    loose = batches.default_graph()
    if (finding := default_graph_finding(loose)) is not None:
        report.findings.append(finding)
    state = _Pass(store, report, latest, checker, minter, progress, batches.total)
    batches.read(state.graph)
    if progress is not None:
        progress(state.total, state.total)
    report.quads_read = batches.quads + len(loose)
    state.finish(ledger, removed)
    report.findings.extend(check_log(store, minter))  # the log's own check: every node again
    report.sessions_checked = len(state.sessions)
    report.findings.sort(key=lambda f: (f.kind, f.session, f.subject))
    return report


class _Pass:
    """What the full pass keeps while the store streams by (small: digests and states, and
    a content graph's text only until its structure graph has come by)."""

    def __init__(
        self,
        store: Store,
        report: VerifyReport,
        latest: dict[IRI, SealRecord],
        checker: ContentChecker,
        minter: Minter,
        progress: Progress | None,
        total: int,
        *,
        jobs: int = 1,
    ) -> None:
        self.store, self.report, self.latest, self.checker = store, report, latest, checker
        self.skip = checker.accounts.receipt_graphs | checker.accounts.unsealed
        self.base = minter.base
        self.catalogue = str(catalogue_iri(minter))
        self.progress, self.total, self.done = progress, total, 0
        self.seen: set[str] = set()
        self.suspects: list[str] = []  # graphs not matching their seal: read again
        self.sessions: dict[str, tuple[bool, str]] = {}
        self.unsealed_receipts: list[str] = []
        self.structure: dict[str, list[tuple[Term, Term, Term]]] = {}
        self.content: dict[str, tuple[bytes, bool]] = {}
        self.by_query: set[str] = set()  # graphs whose digests the stream cannot read
        self.entries: dict[str, str] = {}  # session -> digest of the entry its graph gives
        self.stored: dict[str, str] | None = None
        accounts = replace(checker.accounts, recheck=None)  # a worker has no store to ask
        shared = Shared(self.base, self.catalogue, frozenset(self.skip), accounts)
        self.workers = Workers(shared, checker, jobs)

    def graph(self, graph: str, ntriples: bytes, quads: int) -> None:
        """Take one graph, given as N-Triples."""
        self._take(graph, ntriples, quads, nquads=False)

    def graph_nquads(self, graph: str, nquads: bytes, quads: int) -> None:
        """Take one graph, given as the embedded store dumps it (N-Quads naming it)."""
        self._take(graph, nquads, quads, nquads=True)

    def close(self) -> None:
        """Stop the worker processes (``finish`` does; this is for a pass cut short)."""
        self.workers.close()

    def _take(self, graph: str, data: bytes, quads: int, *, nquads: bool) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total)
        self.seen.add(graph)
        kind = graph_kind(graph, self.base)
        if kind == "content":
            self._content(structure_graph(graph), data, nquads)
            return
        if kind == "ledger":
            return
        seal = self.latest.get(IRI.trusted(graph))
        if seal is not None:
            self.report.graphs_checked += 1
        # a seal of an older canonical form (not version 2): read again for it
        expect = (seal.graph_hash, seal.quad_count) if seal and seal.version == 2 else None
        task = Graph(graph, data, nquads, quads, kind, expect, seal is not None)
        for read in self.workers.submit(task):
            self._read(read)

    def _read(self, read: GraphRead) -> None:
        """What reading a graph told (in the order the graphs came)."""
        graph = read.graph
        if read.sealed and not read.matches:
            self.suspects.append(graph)
        if read.is_session:
            self.sessions[graph] = (read.ended, read.status)
            if read.entry is not None:
                self.entries[graph] = read.entry
        elif read.stored is not None:
            self.stored = read.stored
        elif not read.sealed and read.kind in RECEIPT_KINDS.values():
            self.unsealed_receipts.append(graph)
        elif read.projection:
            # a session's projection persisted into a graph of the user's own
            # (``Session.persist(graph=...)``): a copy for replay, not sealed evidence;
            # its values carry the projection's own digests, which replay checks
            self.skip.add(graph)
            self.report.projections.append(IRI.trusted(graph))
        elif not read.sealed and read.kind == "other":
            self.report.findings.append(
                Finding(
                    FOREIGN,
                    graph,
                    f"a named graph of {read.quads} quad(s) that trails never writes: not a "
                    "session, not sealed, of no kind trails records",
                )
            )
        if not read.wants_content:
            return
        if read.structure is None:
            self.by_query.add(graph)
        elif graph in self.content:
            self._judge(graph, read.structure, *self.content.pop(graph))
        else:
            self.structure[graph] = read.structure

    def _content(self, graph: str, data: bytes, nquads: bool) -> None:
        if graph in self.structure:
            self._judge(graph, self.structure.pop(graph), data, nquads)
        else:
            self.content[graph] = (data, nquads)

    def _judge(
        self, graph: str, structure: list[tuple[Term, Term, Term]], data: bytes, nquads: bool
    ) -> None:
        sealed = IRI.trusted(graph) in self.latest
        for read in self.workers.submit(Judge(graph, structure, data, nquads, sealed)):
            self._read(read)

    def _settle(self) -> None:
        """Every graph read and every content checked: the workers' last results."""
        for read in self.workers.drain():
            self._read(read)
        for graph in sorted(self.structure):  # a graph with digests and no content graph
            self._judge(graph, self.structure.pop(graph), b"", False)
        for graph, (text, nquads) in sorted(self.content.items()):  # content of no graph read
            g = IRI.trusted(graph)
            if graph in self.by_query or graph in self.skip:
                continue
            if g in self.latest and graph not in self.seen:
                continue  # its sealed graph is gone: reported missing below
            self._judge(graph, [], text, nquads)
        for read in self.workers.drain():
            self._read(read)
        self.workers.close()

    def finish(self, ledger: IRI, removed: dict[IRI, list[Removed]]) -> None:
        """What the stream could not settle: graphs absent or not matching (read again
        with their seals now), sessions without a seal, content left unpaired."""
        store, report, checker = self.store, self.report, self.checker
        self._settle()
        for graph in sorted(self.by_query):
            checker.check(store, IRI.trusted(graph), sealed=IRI.trusted(graph) in self.latest)
        for g, done in removed.items():
            if str(g) in self.seen and str(g) not in self.suspects:
                report.removed.extend(r for r in done if r.part == "content")
        for graph, seal in sorted(self.latest.items()):
            if str(graph) in self.seen and str(graph) not in self.suspects:
                continue
            newest = latest_of(seals_of_graph(store, ledger, graph)) or seal
            if str(graph) in self.seen:
                report.graphs_checked -= 1  # counted again by the check
            data = check_graph(store, graph, newest, report, removed)
            if data is not None and str(graph) in self.suspects and graph not in self.skip:
                checker.check(store, graph, sealed=True)
        for graph, (ended, status) in sorted(self.sessions.items()):
            g = IRI.trusted(graph)
            if status == INTERRUPTED:
                report.interrupted_sessions.append(g)
            if g in self.latest:
                continue
            now = latest_of(seals_of_graph(store, ledger, g))  # sealed since the ledger's read?
            if now is not None:
                check_graph(store, g, now, report, removed)
            elif ended:
                report.findings.append(
                    Finding("unsealed", g, "the session ended but its graph has no seal")
                )
            else:
                report.open_sessions.append(g)
        for graph in self.unsealed_receipts:
            if not seals_of_graph(store, ledger, IRI.trusted(graph)):
                report.findings.append(
                    Finding(
                        FOREIGN,
                        graph,
                        "a receipt graph without a seal: what it says does not count, "
                        "and nothing else may be kept there",
                    )
                )
        self._learned()
        self._entries(ledger)

    def _learned(self) -> None:
        """Each memory's digest against the one its sealed, intact learning session keeps
        (``trails.evidence.learned``)."""
        broken = {f.subject for f in self.report.findings if f.kind in ("altered", "missing")}

        def trusted(session: str) -> bool:
            return IRI.trusted(session) in self.latest and session not in broken

        check_learned(
            self.store, trusted, self.checker.accounts, self.report.findings, self.report.content
        )

    def _entries(self, ledger: IRI) -> None:
        if self.stored is None:
            return  # a store written before the catalogue: nothing to compare
        # a graph that does not match its seal is that finding; its entry is not another
        broken = {f.subject for f in self.report.findings if f.kind in ("altered", "missing")}
        for session, expected in sorted(self.entries.items()):
            if self.stored.get(session) == expected or session in broken:
                continue
            check_entry(self.store, ledger, IRI.trusted(session), self.report)
        for session in sorted(set(self.stored) - set(self.sessions)):
            g = IRI.trusted(session)  # sealed and gone: MISSING says so
            if g in self.latest or seals_of_graph(self.store, ledger, g):
                continue
            now = self.store.query(_SESSION, {"g": g})  # started since the graphs were read?
            if isinstance(now, Solutions) and len(now):
                continue
            self.report.findings.append(
                Finding(
                    CATALOGUE,
                    entry_iri(g),
                    "a catalogue entry for a session the store holds neither a graph nor a "
                    "seal of (forged?)",
                    session=session,
                )
            )


def _verify_full(
    store: Any,
    ledger: IRI,
    minter: Minter,
    public_key: Any,
    expect_heads: list[str] | None,
    progress: Progress | None,
    *,
    whole: bool = False,
    jobs: int | None = None,
) -> VerifyReport:
    """The full check on the embedded store, in one pass (see the module docstring)."""
    report, _, latest = _start(store, ledger, public_key, expect_heads)
    removed = removals(store)

    def sealed_now(graph: str) -> bool:  # an erasure seals its receipt right after removing
        return bool(seals_of_graph(store, ledger, IRI.trusted(graph)))

    accounts = read_accounts(store, latest.__contains__, recheck=sealed_now)
    checker = ContentChecker(accounts, report.findings, report.content)
    result = store.query(_DEFAULT_GRAPH)  # the store's default graph, not their union
    assert isinstance(result, Solutions)
    loose = [" ".join(canonical_term(t) for t in row if t is not None) for row in result.rows]
    if loose:
        report.findings.append(
            Finding(
                FOREIGN,
                "the default graph",
                f"{len(loose)} triple(s) where trails writes nothing (the first: {loose[0]})",
            )
        )
    total = len(store.graphs())
    state = _Pass(
        store, report, latest, checker, minter, progress, total, jobs=jobs_for(jobs, total)
    )
    try:
        skip = frozenset(f"{t} .".encode() for t in loose)
        sweep = Sweep(state.graph_nquads, skip=skip, whole=whole, nquads=True)
        store.dump(sweep, format="nquads")  # a binary file, written to as the store reads
        sweep.close()
        if progress is not None:
            progress(state.total, state.total)  # done (the store may have listed a graph more)
        report.quads_read = sweep.quads + len(loose)
        state.finish(ledger, removed)
    finally:
        state.close()
    report.findings.extend(check_log(store, minter))  # the log's own check: every node again
    report.sessions_checked = len(state.sessions)
    report.findings.sort(key=lambda f: (f.kind, f.session, f.subject))
    return report


def _verify_session(
    store: Store,
    ledger: IRI,
    session: IRI,
    public_key: Any,
    expect_heads: list[str] | None,
) -> VerifyReport:
    """One session: its seals and what proves their place, read by index."""
    seals = seals_of_graph(store, ledger, session)
    result = store.query(_SESSION, {"g": session})
    assert isinstance(result, Solutions)
    if not seals and not len(result):
        raise SessionError(f"{session} is neither a session graph nor sealed")
    trusted = None
    if public_key is not None:
        trusted = trusted_keys(public_key, read_rotations(store, ledger))
    report = VerifyReport(seals=len(seals))
    latest = latest_of(seals)
    intact = False
    for seal in seals:
        check_seal(seal, trusted, report)
    if latest is not None:
        previous = read_seal(store, ledger, latest.previous) if latest.previous else None
        if latest.previous is not None and previous is None:
            report.findings.append(
                Finding("chain", seal_name(latest), "the seal before it is not in the ledger")
            )
        elif previous is not None:
            check_seal(previous, trusted, report)
            if previous.chain != latest.chain:
                report.findings.append(
                    Finding("chain", seal_name(latest), "its previous seal is in another chain")
                )
        check_link(latest, previous, (previous.sequence + 1) if previous else 1, report)
        if latest.anchors or latest.anchor_hashes:
            anchored = {a: read_seal(store, ledger, a) for a in latest.anchors}
            check_anchors(latest, anchored, report)
        report.heads = [latest.seal_hash]
        before = len(report.findings)
        check_graph(store, session, latest, report, removals(store, session))
        intact = len(report.findings) == before
    _session_content(store, ledger, session, latest is not None, report)
    if latest is not None and intact:  # the memories it learned, against what it sealed
        check_learned_by(
            store,
            [session],
            lambda g: bool(seals_of_graph(store, ledger, IRI.trusted(g))),
            report.findings,
            report.content,
        )
    for head in expect_heads or []:
        if not store.query(_HASH_PRESENT, {"ledger": ledger, "hash": Literal(head)}):
            report.findings.append(
                Finding("chain", head, "the expected head is not in the ledger (seals removed?)")
            )
    sort_sessions(result, {session: latest} if latest is not None else {}, report)
    report.erasures = [e.describe() for e in list_erasures(store, session=str(session))]
    return report


def _session_content(
    store: Store, ledger: IRI, session: IRI, sealed: bool, report: VerifyReport
) -> None:
    """One session's content against its digests; the sealed receipts that account for
    removed content are rehashed against their own seals too."""
    accounts = check_session_content(
        store,
        session,
        sealed=sealed,
        is_sealed=lambda g: bool(seals_of_graph(store, ledger, IRI.trusted(g))),
        findings=report.findings,
        tally=report.content,
    )
    for graph in sorted(accounts.receipt_graphs):
        receipt_seal = latest_of(seals_of_graph(store, ledger, IRI.trusted(graph)))
        if receipt_seal is not None:
            check_graph(store, IRI.trusted(graph), receipt_seal, report)
