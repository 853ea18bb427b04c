"""The outside tampering table: what an attacker with write access does to a signed store.

Each ``Scenario`` tampers with a file copy of the prepared store (``tests.evidence.
tamper_store``) the way someone holding pyoxigraph (through ``open_store(...).raw`` where
the ``Store`` API refuses), trails' own library, a zip tool and a text editor would, and
says which verification must catch it and what its output must name:

- ``plain``: ``trails verify`` with no option (or ``--bundle``/``--proof`` with the
  publisher's key, for files handed out);
- ``--key``: only a trusted key tells (the attacker sealed with a key of their own what
  trails would seal the same way for the publisher);
- ``--since-head`` / ``--expect-head``: only a head kept elsewhere tells (the store was
  rolled back to a consistent earlier state).

The scenarios on the files handed out (bundle, proof) are in ``tests.evidence.tamper_files``.
``tests/evidence/test_tamper_table.py`` runs each as a test; ``benchmarks/bench_tamper.py``
runs the whole table and prints it. ``GAPS`` lists what no mode catches yet, and why.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox
import pytest
from tests.evidence.tamper_files import (
    bundle_answer_edited,
    bundle_byte_flipped,
    bundle_content_deleted,
    bundle_content_edited,
    bundle_graphs_swapped,
    bundle_proof_edited,
    bundle_seal_edited,
    bundle_session_smuggled,
    proof_session_file_edited,
    proof_sibling_flipped,
    proof_wrong_index,
    proof_wrong_root,
    proof_wrong_size,
)
from tests.evidence.tamper_store import (
    ALICE,
    MODES,
    Case,
    Prepared,
    copy_case,
    drop,
    move,
    quads_of,
    seal_of,
    swap,
    text,
    the,
    trails_cli,
)

from trails.evidence.content import content_entity
from trails.evidence.ledger import ledger_iri, read_seal
from trails.prov import Minter
from trails.prov.content import content_graph
from trails.prov.vocab import PROV, RDF, T
from trails.store import IRI, Literal, Quad, Store, open_store

__all__ = ["GAPS", "MODES", "SCENARIOS", "Case", "Outcome", "Scenario", "run"]

LEDGER = ledger_iri(Minter())
LOG = IRI.trusted("urn:trails:graph:transparency")
CATALOGUE = IRI.trusted("urn:trails:graph:catalogue")
COMMENT = IRI.trusted("http://www.w3.org/2000/01/rdf-schema#comment")
DECIMAL = "http://www.w3.org/2001/XMLSchema#decimal"
INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"


@dataclass(frozen=True)
class Scenario:
    """What is done, to which family it belongs, which mode must catch it, and the finding
    kind whose line must name the subject ``tamper`` returns."""

    name: str
    family: str
    mode: str
    kind: str
    tamper: Callable[[Case], str]
    why: str = ""


_FINDING = re.compile(r"^([A-Z][A-Z-]+) +\S")
_NOT_FINDINGS = {"ERASED", "ACCOUNTED", "OPEN", "INTERRUPTED", "REMOVED", "PROJECTION"}


@dataclass(frozen=True)
class Outcome:
    """What ``trails verify`` said about one tampered copy."""

    returncode: int
    codes: list[str]  # the finding codes printed, in order
    named: list[str]  # the lines of the scenario's kind that name its subject
    output: str

    @property
    def caught(self) -> bool:
        return self.returncode == 1 and bool(self.named)


def run(scenario: Scenario, prepared: Prepared, folder: Path) -> Outcome:
    """Copy the prepared folder to ``folder``, tamper, and verify in the scenario's mode."""
    case = Case(prepared, copy_case(prepared, folder))
    subject = scenario.tamper(case)
    done = trails_cli(case.dir, "verify", "--no-checkpoint", *case.args(scenario.mode))
    lines = done.stdout.splitlines()
    codes = [m[1] for ln in lines if (m := _FINDING.match(ln)) and m[1] not in _NOT_FINDINGS]
    kind = scenario.kind.upper() + " "
    named = [ln for ln in lines if ln.startswith(kind) and subject in ln]
    return Outcome(done.returncode, codes, named, done.stdout + done.stderr)


# -- structure: the sealed session graphs ------------------------------------------------


def literal_changed(c: Case) -> str:
    with c.store() as s:
        swap(s, the(s, c.p.session, c.p.session, T.status), Literal("error"))
    return c.p.session


def triple_added(c: Case) -> str:
    with c.store() as s:
        s.write([Quad(IRI(c.p.session), COMMENT, Literal("approved"), IRI(c.p.session))])
    return c.p.session


def triple_deleted(c: Case) -> str:
    with c.store() as s:
        s.write([], remove=[the(s, c.p.session, c.p.session, PROV.wasAssociatedWith)])
    return c.p.session


def graph_deleted(c: Case) -> str:
    with c.store() as s:
        drop(s, c.p.session)
    return c.p.session


def graph_and_content_deleted(c: Case) -> str:
    with c.store() as s:
        drop(s, c.p.session, content_graph(c.p.session))
    return c.p.session


def graph_renamed(c: Case) -> str:
    with c.store() as s:
        move(s, c.p.session, "urn:trails:session:renamed")
    return c.p.session


def graphs_swapped(c: Case) -> str:
    with c.store() as s:
        move(s, c.p.session, "urn:trails:session:swap")
        move(s, c.p.sample, c.p.session)
        move(s, "urn:trails:session:swap", c.p.sample)
    return c.p.session


def digest_and_value_changed(c: Case) -> str:
    from trails.evidence.ledger import sha256_hex

    with c.store() as s:
        value = the(s, content_graph(c.p.session), c.p.input, PROV.value)
        forged = text(value).replace("urgent", "routine")
        swap(s, value, Literal(forged))
        swap(s, the(s, c.p.session, c.p.input, T.sha256), Literal(sha256_hex(forged.encode())))
    return c.p.session


def receipt_edited(c: Case) -> str:
    with c.store() as s:
        reason = the(s, c.p.receipt, None, T.erasureReason)
        swap(s, reason, Literal("the data subject asked nothing"))
    return c.p.receipt


# -- content: the content graphs no seal covers ------------------------------------------


def content_changed(c: Case) -> str:
    with c.store() as s:
        value = the(s, content_graph(c.p.session), c.p.input, PROV.value)
        swap(s, value, Literal(text(value).replace("urgent", "routine")))
    return c.p.input


def content_deleted(c: Case) -> str:
    with c.store() as s:
        s.write([], remove=[the(s, content_graph(c.p.session), c.p.input, PROV.value)])
    return c.p.input


def content_graph_deleted(c: Case) -> str:
    with c.store() as s:
        drop(s, content_graph(c.p.session))
    return c.p.input


def content_added(c: Case) -> str:
    forged = "urn:trails:entity:forged"
    with c.store() as s:
        value = Literal("approved by the CFO")
        s.write([Quad(IRI(forged), PROV.value, value, content_graph(c.p.session))])
    return forged


def second_value(c: Case) -> str:
    with c.store() as s:
        value = Literal('{"priority":"routine"}')
        s.write([Quad(IRI(c.p.input), PROV.value, value, content_graph(c.p.session))])
    return c.p.input


def language_tagged(c: Case) -> str:
    with c.store() as s:
        value = the(s, content_graph(c.p.session), c.p.input, PROV.value)
        swap(s, value, Literal(text(value), language="en"))
    return c.p.input


def goal_changed(c: Case) -> str:
    goal = content_entity(c.p.sample_run, T.goal)
    with c.store() as s:
        value = the(s, content_graph(c.p.sample), c.p.sample_run, T.goal)
        swap(s, value, Literal(text(value) + " (and transfer the funds)"))
    return goal


def forged_onto_erased(c: Case) -> str:
    with c.store() as s:
        value = Literal('{"priority":"low"}')  # the very value that was erased
        s.write([Quad(IRI(c.p.erased_input), PROV.value, value, content_graph(c.p.erased_session))])
    return c.p.erased_input


def structure_in_content(c: Case) -> str:
    forged = IRI("urn:trails:activity:forged")
    with c.store() as s:
        cg = content_graph(c.p.session)
        s.write([Quad(forged, RDF.type, PROV.Activity, cg),
                 Quad(forged, PROV.wasAssociatedWith, IRI(ALICE), cg)])  # fmt: skip
    return forged


def structure_in_new_content_graph(c: Case) -> str:
    forged = IRI("urn:trails:activity:forged")
    with c.store() as s:
        cg = content_graph(c.p.last_session)  # a session that kept no content
        s.write([Quad(forged, RDF.type, T.CapabilityInvocation, cg),
                 Quad(forged, T.inSession, IRI(c.p.last_session), cg)])  # fmt: skip
    return forged


def content_graph_of_nothing(c: Case) -> str:
    ghost = IRI("urn:trails:session:ghost")
    with c.store() as s:
        s.write([Quad(ghost, RDF.type, T.Session, content_graph(ghost))])
    return ghost


# -- the ledger ---------------------------------------------------------------------------


def seal_field_edited(c: Case) -> str:
    with c.store() as s:
        seal = seal_of(s, c.p.session)
        count = the(s, LEDGER, seal, T.quadCount)
        swap(s, count, Literal(str(int(text(count)) + 1), datatype=INTEGER))
    return seal


def seal_deleted(c: Case) -> str:
    with c.store() as s:
        seal = seal_of(s, c.p.session)
        s.write([], remove=[q for q in quads_of(s, LEDGER) if q.subject == seal])
    return c.p.session


def seals_reordered(c: Case) -> str:
    with c.store() as s:
        first = seal_of(s, c.p.session)
        record = read_seal(s, LEDGER, first)
        assert record is not None
        others = [
            r
            for r in (read_seal(s, LEDGER, q.subject) for q in quads_of(s, LEDGER))  # type: ignore[arg-type]
            if r is not None and r.chain == record.chain and r.iri != first
        ]
        second = others[0].iri
        a, b = the(s, LEDGER, first, T.sealSequence), the(s, LEDGER, second, T.sealSequence)
        s.write(
            [Quad(a.subject, a.predicate, b.object, a.graph),
             Quad(b.subject, b.predicate, a.object, b.graph)],
            remove=[a, b],
        )  # fmt: skip
    return first


def seal_rehashed(c: Case) -> str:
    """The graph edited, its seal's graph hash, count and seal hash recomputed (no key)."""
    from trails.evidence.canonical import graph_digest_read

    with c.store() as s:
        s.write([Quad(IRI(c.p.session), COMMENT, Literal("approved"), IRI(c.p.session))])
        seal = seal_of(s, c.p.session)
        digest, count, _ = graph_digest_read(s, IRI(c.p.session), version=2)
        swap(s, the(s, LEDGER, seal, T.graphHash), Literal(digest))
        swap(s, the(s, LEDGER, seal, T.quadCount), Literal(str(count), datatype=INTEGER))
        record = read_seal(s, LEDGER, seal)
        assert record is not None
        swap(s, the(s, LEDGER, seal, T.sealHash), Literal(record.recomputed_hash()))
    return seal


def signature_stripped(c: Case) -> str:
    """A seal's signature and key removed and its hash recomputed, as an unsigned seal: the
    next seal of its chain no longer links to it."""
    with c.store() as s:
        seal = seal_of(s, c.p.session)
        (after,) = [q.subject for q in quads_of(s, str(LEDGER)) if q.object == seal
                    and q.predicate == T.previousSeal]  # fmt: skip
        s.write([], remove=[the(s, LEDGER, seal, T.signature), the(s, LEDGER, seal, T.signingKey)])
        record = read_seal(s, LEDGER, seal)
        assert record is not None
        swap(s, the(s, LEDGER, seal, T.sealHash), Literal(record.recomputed_hash()))
    return str(after)


def signatures_stripped(c: Case) -> str:
    """Only the signature quads of every seal removed: hashes untouched, each seal still
    naming the key that should have signed it."""
    with c.store() as s:
        signatures = [q for q in quads_of(s, str(LEDGER)) if q.predicate == T.signature]
        s.write([], remove=signatures)
        seal = seal_of(s, c.p.session)
    return str(seal)


def anchor_removed(c: Case) -> str:
    with c.store() as s:
        anchored = the(s, LEDGER, None, T.anchorHash)
        s.write([], remove=[anchored])
    return str(anchored.subject)


def resealed_with_other_key(c: Case) -> str:
    """A triple deleted and the graph resealed by trails' own sealer, with another key: a
    revision seal, as a late write gets."""
    from trails.evidence.seal import install_sealer
    from trails.prov import Recorder

    with c.store() as s, pytest.MonkeyPatch.context() as env:
        env.setenv("TRAILS_AUDIT_SIGNING_KEY", str(c.dir / "attacker.pem"))
        recorder = Recorder(s)
        sealer = install_sealer(recorder)
        gone = the(s, c.p.session, c.p.session, PROV.wasAssociatedWith)
        seal = sealer.reseal(recorder, IRI(c.p.session), [gone])
    return seal


def forged_session(c: Case) -> str:
    """A whole session recorded and sealed by trails, with the attacker's key."""
    from trails.evidence.seal import install_sealer
    from trails.kernel import Context
    from trails.prov import Recorder

    with c.store() as s, pytest.MonkeyPatch.context() as env:
        env.setenv("TRAILS_AUDIT_SIGNING_KEY", str(c.dir / "attacker.pem"))
        recorder = Recorder(s)
        install_sealer(recorder)
        with Context.open(ALICE, recorder=recorder, label="refund approved") as ctx:
            pass
        return seal_of(s, str(ctx.session))


def newest_seal_cut(c: Case) -> str:
    with c.store() as s:
        seal = seal_of(s, c.p.last_session)
        s.write([], remove=[q for q in quads_of(s, LEDGER) if q.subject == seal])
    return seal


def last_session_cut(c: Case) -> str:
    """The newest session, its content, its seal and its catalogue entry removed."""
    from trails.catalogue.entries import entry_iri

    with c.store() as s:
        seal = seal_of(s, c.p.last_session)
        entry = str(entry_iri(IRI(c.p.last_session)))
        s.write(
            [],
            remove=[
                *quads_of(s, c.p.last_session),
                *[q for q in quads_of(s, LEDGER) if q.subject == seal],
                *[q for q in quads_of(s, CATALOGUE) if str(q.subject).startswith(entry)],
            ],
        )
    return seal


def kept_head(c: Case) -> str:
    """How a finding names the tree head the publisher kept (``kept-head.json``)."""
    head = json.loads((c.dir / "kept-head.json").read_text())
    return f"tree head {head['size']}@{head['time']}"


def rolled_back(c: Case) -> str:
    """The store replaced by the copy taken before the newest session: consistent, older."""
    shutil.rmtree(c.dir / "store")
    shutil.copytree(c.dir / "before", c.dir / "store")
    return kept_head(c)


def rolled_back_head(c: Case) -> str:
    rolled_back(c)
    return c.p.head


def checkpoint_edited(c: Case) -> str:
    with c.store() as s:
        newest = the(s, LEDGER, LEDGER, T.latestCheckpoint).object
        count = the(s, LEDGER, str(newest), T.sealsVerified)
        swap(s, count, Literal("2", datatype=INTEGER))
    return str(newest)


# -- the catalogue -------------------------------------------------------------------------


def _entry(s: Store, session: str, predicate: str) -> Quad:
    from trails.catalogue.entries import entry_iri

    return the(s, CATALOGUE, str(entry_iri(IRI(session))), predicate)


def catalogue_cost(c: Case) -> str:
    with c.store() as s:
        quad = _entry(s, c.p.sample, T.totalCostUSD)
        swap(s, quad, Literal("0.000001", datatype=DECIMAL))
    return str(quad.subject)


def catalogue_tokens(c: Case) -> str:
    with c.store() as s:
        quad = _entry(s, c.p.sample, T.totalInputTokens)
        swap(s, quad, Literal("1", datatype=INTEGER))
    return str(quad.subject)


def catalogue_status(c: Case) -> str:
    with c.store() as s:
        quad = _entry(s, c.p.session, T.sessionStatus)
        swap(s, quad, Literal("error"))
    return str(quad.subject)


def catalogue_deleted(c: Case) -> str:
    from trails.catalogue.entries import entry_iri

    entry = str(entry_iri(IRI(c.p.session)))
    with c.store() as s:
        s.write([], remove=[q for q in quads_of(s, CATALOGUE) if str(q.subject).startswith(entry)])
    return entry


def catalogue_forged(c: Case) -> str:
    """An entry copied from a real one, for a session the store does not hold."""
    from trails.catalogue.entries import entry_iri

    ghost = IRI("urn:trails:session:ghost")
    real, forged = str(entry_iri(IRI(c.p.sample))), str(entry_iri(ghost))
    with c.store() as s:
        copied = []
        for q in quads_of(s, CATALOGUE):
            if not str(q.subject).startswith(real):
                continue
            subject = IRI(str(q.subject).replace(real, forged))
            obj = ghost if q.object == c.p.sample else q.object
            if isinstance(obj, IRI) and str(obj).startswith(real):
                obj = IRI(str(obj).replace(real, forged))
            copied.append(Quad(subject, q.predicate, obj, CATALOGUE))
        s.write(copied)
    return forged


# -- memory --------------------------------------------------------------------------------


def memory_text(c: Case) -> str:
    with c.store() as s:
        value = the(s, content_graph(c.p.memory_graph), c.p.memory, PROV.value)
        swap(s, value, Literal(text(value).replace("e-mail", "phone")))
    return c.p.memory


def memory_topic(c: Case) -> str:
    with c.store() as s:
        topic = the(s, content_graph(c.p.topic_graph), c.p.topic_memory, T.topic)
        swap(s, topic, Literal("complaints"))
    return str(content_entity(c.p.topic_memory, T.topic))


def memory_deleted_text(c: Case) -> str:
    with c.store() as s:
        s.write([], remove=[the(s, content_graph(c.p.memory_graph), c.p.memory, PROV.value)])
    return c.p.memory


def memory_text_and_digest(c: Case) -> str:
    from trails.evidence.ledger import sha256_hex

    with c.store() as s:
        value = the(s, content_graph(c.p.memory_graph), c.p.memory, PROV.value)
        forged = text(value).replace("e-mail", "phone")
        swap(s, value, Literal(forged))
        swap(
            s, the(s, c.p.memory_graph, c.p.memory, T.sha256), Literal(sha256_hex(forged.encode()))
        )
    return c.p.memory


# -- erasure -------------------------------------------------------------------------------


def _forged_receipt(c: Case, s: Store) -> str:
    """The real receipt copied into a graph of its own, made to name A's input instead."""
    graph = "urn:trails:graph:erasure/forged"
    names = {
        c.p.receipt: graph,
        c.p.erased_session: c.p.session,
        c.p.erased_input: c.p.input,
    }

    def renamed(term: IRI | Literal) -> IRI | Literal:
        if not isinstance(term, IRI):
            return term
        for old, new in names.items():
            if str(term).startswith(old):
                return IRI(new + str(term)[len(old) :])
        return term

    digest = the(s, c.p.session, c.p.input, T.sha256).object
    copied = [
        Quad(renamed(q.subject), q.predicate, renamed(q.object), IRI(graph))  # type: ignore[arg-type]
        for q in quads_of(s, c.p.receipt)
    ]
    s.write([q for q in copied if not (q.subject == c.p.input and q.predicate == T.sha256)]
            + [Quad(IRI(c.p.input), T.sha256, digest, IRI(graph))])  # fmt: skip
    return graph


def unsealed_receipt_and_deleted(c: Case) -> str:
    with c.store() as s:
        s.write([], remove=[the(s, content_graph(c.p.session), c.p.input, PROV.value)])
        return _forged_receipt(c, s)


def receipt_for_kept_content(c: Case) -> str:
    with c.store() as s:
        return _forged_receipt(c, s)


def receipt_deleted(c: Case) -> str:
    with c.store() as s:
        drop(s, c.p.receipt)
    return c.p.receipt


def receipt_and_seal_deleted(c: Case) -> str:
    with c.store() as s:
        seal = seal_of(s, c.p.receipt)
        drop(s, c.p.receipt)
        s.write([], remove=[q for q in quads_of(s, LEDGER) if q.subject == seal])
    return c.p.erased_input


def erased_with_other_key(c: Case) -> str:
    """Content erased by trails' own ``erase``, its receipt sealed with the attacker's key."""
    from trails.compliance.erasure import erase
    from trails.evidence.seal import install_sealer
    from trails.prov import Recorder

    with c.store() as s, pytest.MonkeyPatch.context() as env:
        env.setenv("TRAILS_AUDIT_SIGNING_KEY", str(c.dir / "attacker.pem"))
        recorder = Recorder(s)
        install_sealer(recorder)
        receipt = erase(recorder, session=c.p.session, reason="routine clean-up", by=ALICE)
        return seal_of(s, str(receipt.graph))


def retention_forged(c: Case) -> str:
    """A session deleted under a retention record written into a graph of its own."""
    graph = IRI("urn:trails:graph:retention:forged")
    run, removal = IRI(f"{graph}:run"), IRI(f"{graph}:removal")
    with c.store() as s:
        drop(s, c.p.session, content_graph(c.p.session))
        s.write(
            [
                Quad(removal, RDF.type, T.RetentionRemoval, graph),
                Quad(removal, T.removedGraph, IRI(c.p.session), graph),
                Quad(removal, T.removedPart, Literal("structure"), graph),
                Quad(removal, PROV.wasInvalidatedBy, run, graph),
                Quad(removal, PROV.invalidatedAtTime, Literal("2026-01-01T00:00:00Z"), graph),
                Quad(run, RDF.type, T.RetentionRun, graph),
                Quad(run, T.retentionReason, Literal("expired"), graph),
            ]
        )
    return str(graph)


# -- the transparency log -----------------------------------------------------------------


def _node(level: int, index: int) -> str:
    return f"{LOG}:node:{level}:{index}"


def _head(s: Store) -> str:
    return str(the(s, LOG, LOG, T.latestTreeHead).object)


def log_leaf_edited(c: Case) -> str:
    with c.store() as s:
        swap(s, the(s, LOG, _node(0, 1), T.nodeHash), Literal("0" * 64))
    return _node(0, 1)


def log_node_edited(c: Case) -> str:
    with c.store() as s:
        swap(s, the(s, LOG, _node(1, 0), T.nodeHash), Literal("f" * 64))
    return _node(1, 0)


def log_leaf_rewritten(c: Case) -> str:
    """A leaf pointed at another seal (the first leaf's seal twice)."""
    with c.store() as s:
        first = the(s, LOG, _node(0, 0), T.leafSeal).object
        swap(s, the(s, LOG, _node(0, 1), T.leafSeal), first)  # type: ignore[arg-type]
    return _node(0, 1)


def head_size_edited(c: Case) -> str:
    with c.store() as s:
        head = _head(s)
        swap(s, the(s, LOG, head, T.treeSize), Literal("4", datatype=INTEGER))
    return head


def head_root_edited(c: Case) -> str:
    with c.store() as s:
        head = _head(s)
        swap(s, the(s, LOG, head, T.rootHash), Literal("a" * 64))
    return head


def log_truncated(c: Case) -> str:
    """The log graph replaced by the one of the copy taken before the newest session."""
    older = open_store(c.dir / "before")
    try:
        kept = quads_of(older, str(LOG))
    finally:
        older.close()
    with c.store() as s:
        s.write(kept, remove=quads_of(s, str(LOG)))
    return str(LOG)  # the latest checkpoint names the longer tree it was written with


def log_deleted(c: Case) -> str:
    """The log's graph dropped: the latest checkpoint names the tree head written with it."""
    with c.store() as s:
        drop(s, str(LOG))
    return str(LOG)


def head_signature_stripped(c: Case) -> str:
    """The tree head's signature removed, its hash untouched (it still names its key)."""
    with c.store() as s:
        head = _head(s)
        s.write([], remove=[the(s, LOG, head, T.signature)])
    return head


# -- foreign data --------------------------------------------------------------------------


def unknown_graph(c: Case) -> str:
    graph = "urn:example:planted"
    with c.store() as s:
        s.write([Quad(IRI(c.p.session), T.status, Literal("approved"), IRI(graph))])
    return graph


def default_graph(c: Case) -> str:
    with c.store() as s:
        raw = s.raw  # type: ignore[attr-defined]  # the Store API always names a graph
        raw.add(ox.Quad(ox.NamedNode(c.p.session), ox.NamedNode(str(T.status)),
                        ox.Literal("ok"), ox.DefaultGraph()))  # fmt: skip
    return "the default graph"


def unsealed_session(c: Case) -> str:
    ghost = IRI("urn:trails:session:planted")
    with c.store() as s:
        ended = Literal("2026-01-01T00:00:00Z", datatype=DATETIME)
        s.write([Quad(ghost, RDF.type, T.Session, ghost),
                 Quad(ghost, PROV.endedAtTime, ended, ghost)])  # fmt: skip
    return ghost


_ONLY_KEY = "trails seals this the same way for the publisher: only a trusted key tells who sealed"
_ONLY_HEAD = "a consistent earlier state of the store: only a head kept elsewhere tells"

SCENARIOS: list[Scenario] = [
    Scenario("a literal changed in a sealed graph", "structure", "plain", "altered", literal_changed),
    Scenario("a triple added to a sealed graph", "structure", "plain", "altered", triple_added),
    Scenario("a triple deleted from a sealed graph", "structure", "plain", "altered", triple_deleted),
    Scenario("a sealed graph deleted", "structure", "plain", "missing", graph_deleted),
    Scenario("a sealed graph deleted with its content", "structure", "plain", "missing", graph_and_content_deleted),
    Scenario("a sealed graph renamed", "structure", "plain", "missing", graph_renamed),
    Scenario("two sealed graphs swapped", "structure", "plain", "altered", graphs_swapped),
    Scenario("a digest and its value changed together", "structure", "plain", "altered", digest_and_value_changed),
    Scenario("a sealed erasure receipt edited", "structure", "plain", "altered", receipt_edited),
    Scenario("content changed", "content", "plain", "content-altered", content_changed),
    Scenario("content deleted", "content", "plain", "content-missing", content_deleted),
    Scenario("a whole content graph deleted", "content", "plain", "content-missing", content_graph_deleted),
    Scenario("content added", "content", "plain", "content-foreign", content_added),
    Scenario("a second value for one entity", "content", "plain", "content-foreign", second_value),
    Scenario("the same text, now language-tagged", "content", "plain", "content-altered", language_tagged),
    Scenario("a goal changed", "content", "plain", "content-altered", goal_changed),
    Scenario("content forged back onto an erased entity", "content", "plain", "content-foreign", forged_onto_erased),
    Scenario("structure planted in a content graph", "content", "plain", "content-foreign", structure_in_content),
    Scenario("structure planted in a new <session>:content graph", "content", "plain", "content-foreign", structure_in_new_content_graph),
    Scenario("a content graph of no session", "content", "plain", "content-foreign", content_graph_of_nothing),
    Scenario("a seal's field edited", "ledger", "plain", "chain", seal_field_edited),
    Scenario("a seal deleted", "ledger", "plain", "unsealed", seal_deleted),
    Scenario("two seals reordered", "ledger", "plain", "chain", seals_reordered),
    Scenario("a graph edited, its seal rehashed without the key", "ledger", "plain", "signature", seal_rehashed),
    Scenario("a seal's signature stripped, its hash recomputed", "ledger", "plain", "chain", signature_stripped),
    Scenario("every seal's signature stripped, hashes untouched", "ledger", "plain", "signature", signatures_stripped),
    Scenario("an anchor removed from a seal", "ledger", "plain", "chain", anchor_removed),
    Scenario("the newest seal cut from its chain", "ledger", "plain", "chain", newest_seal_cut),
    Scenario("the newest session, seal and entry cut", "ledger", "plain", "chain", last_session_cut),
    Scenario("the checkpoint edited", "ledger", "plain", "chain", checkpoint_edited),
    Scenario("a graph edited and resealed with another key", "ledger", "--key", "signature", resealed_with_other_key, _ONLY_KEY),
    Scenario("a forged session sealed with another key", "ledger", "--key", "signature", forged_session, _ONLY_KEY),
    Scenario("the store rolled back (last entries cut), against the kept head", "ledger", "--since-head", "head", rolled_back, _ONLY_HEAD),
    Scenario("the store rolled back (last entries cut), against the head hash", "ledger", "--expect-head", "chain", rolled_back_head, _ONLY_HEAD),
    Scenario("a catalogue cost edited", "catalogue", "plain", "catalogue", catalogue_cost),
    Scenario("a catalogue token count edited", "catalogue", "plain", "catalogue", catalogue_tokens),
    Scenario("a catalogue status edited", "catalogue", "plain", "catalogue", catalogue_status),
    Scenario("a catalogue entry deleted", "catalogue", "plain", "catalogue", catalogue_deleted),
    Scenario("a catalogue entry forged for a session that does not exist", "catalogue", "plain", "catalogue", catalogue_forged),
    Scenario("a memory's text edited", "memory", "plain", "content-altered", memory_text),
    Scenario("a memory's topic edited", "memory", "plain", "content-altered", memory_topic),
    Scenario("a memory's text deleted", "memory", "plain", "content-missing", memory_deleted_text),
    Scenario("a memory's text and digest edited together", "memory", "plain", "content-altered", memory_text_and_digest),
    Scenario("an unsealed forged erasure receipt and deleted content", "erasure", "plain", "foreign", unsealed_receipt_and_deleted),
    Scenario("an erasure receipt for content that still exists", "erasure", "plain", "foreign", receipt_for_kept_content),
    Scenario("a sealed erasure receipt deleted", "erasure", "plain", "missing", receipt_deleted),
    Scenario("a sealed erasure receipt and its seal deleted", "erasure", "plain", "content-missing", receipt_and_seal_deleted),
    Scenario("content erased with a receipt sealed by another key", "erasure", "--key", "signature", erased_with_other_key, _ONLY_KEY),
    Scenario("a session deleted under a forged retention record", "erasure", "plain", "foreign", retention_forged),
    Scenario("a log leaf's hash edited", "transparency log", "plain", "log", log_leaf_edited),
    Scenario("a log node edited", "transparency log", "plain", "log", log_node_edited),
    Scenario("a log leaf rewritten to another seal", "transparency log", "plain", "log", log_leaf_rewritten),
    Scenario("the tree head's size edited", "transparency log", "plain", "head", head_size_edited),
    Scenario("the tree head's root edited", "transparency log", "plain", "head", head_root_edited),
    Scenario("the log truncated to an older head", "transparency log", "plain", "log", log_truncated),
    Scenario("the log deleted", "transparency log", "plain", "log", log_deleted),
    Scenario("the tree head's signature stripped", "transparency log", "plain", "head", head_signature_stripped),
    Scenario("an unknown named graph added", "foreign data", "plain", "foreign", unknown_graph),
    Scenario("a default-graph triple added", "foreign data", "plain", "foreign", default_graph),
    Scenario("an ended session planted without a seal", "foreign data", "plain", "unsealed", unsealed_session),
    Scenario("bundle: content edited, manifest, answers and zip recomputed", "bundle", "--bundle --key", "content-altered", bundle_content_edited),
    Scenario("bundle: content deleted, manifest, answers and zip recomputed", "bundle", "--bundle --key", "content-missing", bundle_content_deleted),
    Scenario("bundle: a fabricated session smuggled into a session file", "bundle", "--bundle --key", "foreign", bundle_session_smuggled),
    Scenario("bundle: two sessions' graphs swapped", "bundle", "--bundle --key", "altered", bundle_graphs_swapped),
    Scenario("bundle: a log proof edited", "bundle", "--bundle --key", "proof", bundle_proof_edited),
    Scenario("bundle: a seal in the segment edited", "bundle", "--bundle --key", "chain", bundle_seal_edited),
    Scenario("bundle: an answer edited", "bundle", "--bundle --key", "answers", bundle_answer_edited),
    Scenario("bundle: one byte flipped", "bundle", "--bundle --key", "archive", bundle_byte_flipped),
    Scenario("proof: a sibling flipped", "proof", "--proof --key", "proof", proof_sibling_flipped),
    Scenario("proof: the head's size edited", "proof", "--proof --key", "head", proof_wrong_size),
    Scenario("proof: the head's root edited", "proof", "--proof --key", "head", proof_wrong_root),
    Scenario("proof: the leaf index edited", "proof", "--proof --key", "proof", proof_wrong_index),
    Scenario("proof: the session file's content edited", "proof", "--proof --key", "content-altered", proof_session_file_edited),
]  # fmt: skip

#: what no mode catches yet, with why: each is checked to be NOT caught, so that the day
#: verification catches it the test says to move it into ``SCENARIOS``
GAPS: list[Scenario] = []
assert len({s.name for s in SCENARIOS + GAPS}) == len(SCENARIOS) + len(GAPS)
