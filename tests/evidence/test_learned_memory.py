"""A memory is checked against the digest its sealed learning session keeps.

Memory graphs are not sealed; the session that learned a memory seals the digest of the
text it learned (``trails:learnedSha256``). A real on-disk store is recorded through
``memory.learn`` with the sealer installed (``tests.evidence.test_content.record``), tampered
with through the ``Store`` API, and the real ``trails verify`` checks it in a subprocess: a
memory's text rewritten together with its digest, or the memory removed, is a finding naming
the memory and its session; an erased memory is listed with its receipt; a memory learned
before the learned digest was recorded still verifies as before. ``trails verify --session``
of the learning session, and ``--quick`` after a checkpoint taken before it was sealed, find
the same tampering; other sessions' checks do not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.evidence.test_content import (
    ALICE,
    Recorded,
    record,
    replace_text,
    trails_cli,
    value_of,
)

from trails.compliance.erasure import erase
from trails.evidence.checks import checkpoint_report
from trails.evidence.findings import Finding
from trails.evidence.seal import install_sealer
from trails.evidence.verify import verify
from trails.kernel import Context
from trails.memory.events import MemoryLearned
from trails.prov import Recorder
from trails.prov.builder import QuadBuilder
from trails.prov.vocab import PROV, T
from trails.store import IRI, Literal, Quad, Solutions, Store, open_store, set_default_store


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[tuple[Path, Store, Recorded]]:
    path = tmp_path / "store"
    store = open_store(path)
    try:
        yield path, store, record(store)
    finally:
        set_default_store(None)
        store.close()


def _digest_quad(store: Store, r: Recorded) -> Quad:
    rows = store.query(
        "SELECT ?d $m $g WHERE { GRAPH $g { $m <https://w3id.org/trails/ns#sha256> ?d } }",
        {"m": r.memory, "g": r.memory_graph},
    )
    assert isinstance(rows, Solutions)
    (digest,) = [row["d"] for row in rows]
    assert digest is not None
    return Quad(r.memory, T.sha256, digest, r.memory_graph)


def rewrite_text_and_digest(store: Store, r: Recorded) -> None:
    """What someone with write access does to leave the memory consistent with itself."""
    value = value_of(store, r.memory_graph, r.memory)
    assert isinstance(value.object, Literal)
    forged = value.object.value.replace("e-mail", "phone")
    digest = hashlib.sha256(forged.encode()).hexdigest()
    store.write(
        [
            Quad(r.memory, PROV.value, Literal(forged), value.graph),
            Quad(r.memory, T.sha256, Literal(digest), r.memory_graph),
        ],
        remove=[value, _digest_quad(store, r)],
    )


def _findings(path: Path) -> list[tuple[str, str, str]]:
    done = trails_cli(path, "verify", "--no-checkpoint", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    return [(f["kind"], f["subject"], f.get("session", "")) for f in report["findings"]]


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_text_and_digest_rewritten_together_is_caught_naming_memory_and_session(
    folder: tuple[Path, Store, Recorded],
) -> None:
    path, store, r = folder
    assert verify(store).ok
    rewrite_text_and_digest(store, r)
    # the same findings from one process and from two
    one, two = verify(store, jobs=1), verify(store, jobs=2)
    assert one.findings == two.findings
    assert [(f.kind, f.subject, f.session) for f in one.findings] == [
        ("content-altered", str(r.memory), str(r.session))
    ]
    assert "its learning session sealed" in one.findings[0].detail
    done = trails_cli(path, "verify", "--no-checkpoint")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"CONTENT-ALTERED {r.memory} in {r.session}: " in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_a_memory_removed_from_its_graph_is_missing(folder: tuple[Path, Store, Recorded]) -> None:
    path, store, r = folder
    rows = store.query(
        "SELECT ?p ?o $m $g WHERE { GRAPH $g { $m ?p ?o } }",
        {"m": r.memory, "g": r.memory_graph},
    )
    assert isinstance(rows, Solutions)
    gone = [Quad(r.memory, row["p"], row["o"], r.memory_graph) for row in rows]  # type: ignore[arg-type]
    store.write([], remove=[*gone, value_of(store, r.memory_graph, r.memory)])
    assert _findings(path) == [("content-missing", str(r.memory), str(r.session))]


def test_an_erased_memory_is_listed_with_its_receipt(
    folder: tuple[Path, Store, Recorded],
) -> None:
    path, store, r = folder
    recorder = Recorder(store)
    install_sealer(recorder)
    receipt = erase(recorder, memory=str(r.memory), reason="GDPR art. 17", by=ALICE)
    assert receipt.erased == 1 and receipt.seal is not None
    report = verify(store)
    assert report.ok, report.findings
    assert report.content.accounted == {(str(r.memory_graph), receipt.erasure): 1}
    done = trails_cli(path, "verify", "--no-checkpoint")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        f"ACCOUNTED {r.memory_graph}: 1 content value(s) removed on record by {receipt.erasure}"
        in done.stdout
    )


def test_a_memory_learned_without_the_learned_digest_still_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written before the learned digest: its memories are checked as before."""
    emit = MemoryLearned.emit

    def old_emit(self: MemoryLearned, b: QuadBuilder) -> None:
        emit(self, b)
        b.quads[:] = [q for q in b.quads if q.predicate != T.learnedSha256]

    monkeypatch.setattr(MemoryLearned, "emit", old_emit)
    path = tmp_path / "store"
    store = open_store(path)
    try:
        r = record(store)
        assert not store.query(
            "ASK { GRAPH ?g { ?m <https://w3id.org/trails/ns#learnedSha256> ?d } }"
        )
        assert verify(store).ok
        value = value_of(store, r.memory_graph, r.memory)  # its text is still checked
        assert isinstance(value.object, Literal)
        store.write(
            [Quad(r.memory, PROV.value, Literal("the CFO prefers phone"), value.graph)],
            remove=[value],
        )
    finally:
        set_default_store(None)
        store.close()
    assert _findings(path) == [("content-altered", str(r.memory), str(r.memory_graph))]


def test_a_learned_digest_in_an_unsealed_graph_is_not_taken_for_evidence(
    folder: tuple[Path, Store, Recorded],
) -> None:
    """Only a sealed session's learned digest counts: one planted elsewhere compares nothing
    (the graph itself is foreign)."""
    path, store, r = folder
    planted = IRI.trusted("urn:example:planted")
    store.write([Quad(r.memory, T.learnedSha256, Literal("0" * 64), planted)])
    assert _findings(path) == [("foreign", str(planted), "")]


@pytest.fixture
def after_checkpoint(tmp_path: Path) -> Iterator[tuple[Path, Store, Recorded]]:
    """A session, a full verification's checkpoint, then the sessions ``record`` writes
    (the one that learns a memory among them): all sealed after the checkpoint."""
    path = tmp_path / "store"
    store = open_store(path)
    try:
        recorder = Recorder(store)
        install_sealer(recorder)
        with Context.open(ALICE, recorder=recorder):
            pass
        full = verify(store)
        assert full.ok, full.findings
        checkpoint_report(recorder, full)
        r = record(store)
        quick = verify(store, quick=True)
        assert quick.ok and quick.mode == "quick", quick.findings
        yield path, store, r
    finally:
        set_default_store(None)
        store.close()


def _run(path: Path, *args: str) -> tuple[int, str]:
    done = trails_cli(path, "verify", "--no-checkpoint", *args)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout


def _kinds(findings: list[Finding]) -> list[tuple[str, str, str]]:
    return [(f.kind, f.subject, f.session) for f in findings]


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_session_and_quick_catch_text_and_digest_rewritten_together(
    after_checkpoint: tuple[Path, Store, Recorded],
) -> None:
    path, store, r = after_checkpoint
    assert verify(store, session=r.session).ok
    rewrite_text_and_digest(store, r)
    expected = [("content-altered", str(r.memory), str(r.session))]
    assert _kinds(verify(store, session=r.session).findings) == expected
    assert _kinds(verify(store, quick=True).findings) == expected
    line = f"CONTENT-ALTERED {r.memory} in {r.session}: "
    for args in (("--session", str(r.session)), ("--quick",)):
        code, out = _run(path, *args)
        assert code == 1 and line in out, out
    # a session that did not learn the memory has nothing to say about it
    assert verify(store, session=r.sample["session"]).ok
    code, out = _run(path, "--session", str(r.sample["session"]))
    assert code == 0 and str(r.memory) not in out, out


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_session_and_quick_catch_a_memory_text_edited_alone(
    after_checkpoint: tuple[Path, Store, Recorded],
) -> None:
    """The memory graph's digest left as it was: the text no longer hashes to it."""
    path, store, r = after_checkpoint
    replace_text(store, value_of(store, r.memory_graph, r.memory), "e-mail", "phone")
    for report in (verify(store, session=r.session), verify(store, quick=True)):
        assert _kinds(report.findings) == [("content-altered", str(r.memory), str(r.session))]
        assert "its text hashes to" in report.findings[0].detail
    code, out = _run(path, "--session", str(r.session))
    assert code == 1 and f"CONTENT-ALTERED {r.memory} in {r.session}: " in out, out
    assert _run(path, "--session", str(r.sample["session"]))[0] == 0


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_session_and_quick_find_a_removed_memory_missing(
    after_checkpoint: tuple[Path, Store, Recorded],
) -> None:
    path, store, r = after_checkpoint
    rows = store.query(
        "SELECT ?p ?o $m $g WHERE { GRAPH $g { $m ?p ?o } }",
        {"m": r.memory, "g": r.memory_graph},
    )
    assert isinstance(rows, Solutions)
    gone = [Quad(r.memory, row["p"], row["o"], r.memory_graph) for row in rows]  # type: ignore[arg-type]
    store.write([], remove=[*gone, value_of(store, r.memory_graph, r.memory)])
    expected = [("content-missing", str(r.memory), str(r.session))]
    assert _kinds(verify(store, session=r.session).findings) == expected
    assert _kinds(verify(store, quick=True).findings) == expected
    code, out = _run(path, "--quick")
    assert code == 1 and f"CONTENT-MISSING {r.memory} in {r.session}: " in out, out


def test_session_and_quick_count_an_erased_memory_against_its_receipt(
    after_checkpoint: tuple[Path, Store, Recorded],
) -> None:
    path, store, r = after_checkpoint
    recorder = Recorder(store)
    install_sealer(recorder)
    receipt = erase(recorder, memory=str(r.memory), reason="GDPR art. 17", by=ALICE)
    assert receipt.erased == 1 and receipt.seal is not None
    for report in (verify(store, session=r.session), verify(store, quick=True)):
        assert report.ok, report.findings
        assert report.content.accounted[(str(r.session), receipt.erasure)] == 1
    assert _run(path, "--session", str(r.session))[0] == 0


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_quick_after_a_checkpoint_that_covers_the_learning_session_does_not_reread_it(
    after_checkpoint: tuple[Path, Store, Recorded],
) -> None:
    """Only the sessions sealed since the checkpoint are asked about what they learned: the
    full check (and ``--session``) still find the edit."""
    path, store, r = after_checkpoint
    recorder = Recorder(store)
    full = verify(store)
    assert full.ok, full.findings
    checkpoint_report(recorder, full)
    install_sealer(recorder)
    with Context.open(ALICE, recorder=recorder):
        pass  # an unrelated session sealed since
    rewrite_text_and_digest(store, r)
    quick = verify(store, quick=True)
    assert quick.ok and quick.mode == "quick" and quick.graphs_checked == 1, quick.findings
    assert _run(path, "--quick")[0] == 0
    expected = [("content-altered", str(r.memory), str(r.session))]
    assert _kinds(verify(store).findings) == expected
    assert _kinds(verify(store, session=r.session).findings) == expected
