"""Incremental verification: a checkpoint, what changed since it, and ``--full``.

Sessions are recorded through real ``invoke`` calls on a real store with the
sealer installed; a verification records a checkpoint; more sessions are
recorded; then the store is tampered with the way someone with write access
would, and ``verify(incremental=True)`` / ``--full`` report what they catch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.evidence.test_ledger import LEDGER, change_a_literal, ledger_quads, one_session, seal_of

from trails.evidence.canonical import digest_ntriples, graph_digest, graph_digest_by_query
from trails.evidence.checkpoint import read_checkpoint, record_checkpoint
from trails.evidence.seal import install_sealer
from trails.evidence.verify import VerifyReport, verify
from trails.prov import Recorder
from trails.prov.vocab import T
from trails.store import IRI, Literal, Quad, Solutions, Store, open_store, set_default_store
from trails.testing import shacl_report

XSD = "http://www.w3.org/2001/XMLSchema#"


def checkpoint(recorder: Recorder, report: VerifyReport) -> IRI:
    assert report.ok, report.findings
    return record_checkpoint(
        recorder,
        mode=report.mode,
        seals=report.seals,
        graphs=report.graphs_checked + report.graphs_counted,
        verified=report.chain_tips,
        previous=report.checkpoint,
    )


def sealed_store(store: Store, old: int, new: int) -> tuple[Recorder, list[IRI], list[IRI]]:
    """``old`` sessions, a full verification and its checkpoint, then ``new`` sessions."""
    recorder = Recorder(store)
    install_sealer(recorder)
    before = [one_session(recorder) for _ in range(old)]
    checkpoint(recorder, verify(store))
    after = [one_session(recorder) for _ in range(new)]
    return recorder, before, after


def test_incremental_rehashes_only_what_was_sealed_since_the_checkpoint(store: Store) -> None:
    recorder, _before, _after = sealed_store(store, 4, 2)
    report = verify(store, incremental=True)
    assert report.ok, report.findings
    assert (report.mode, report.graphs_checked, report.graphs_counted) == ("incremental", 2, 4)
    assert report.checkpoint is not None and report.checkpoint.mode == "full"
    assert report.seals == 6 and report.heads == verify(store).heads
    # the next checkpoint follows the first; the one after that starts from it
    second = checkpoint(recorder, report)
    assert read_checkpoint(store, LEDGER).iri == second  # type: ignore[union-attr]
    again = verify(store, incremental=True)
    assert (again.graphs_checked, again.graphs_counted) == (0, 6)
    assert again.checkpoint is not None and again.checkpoint.iri == second
    assert again.checkpoint.previous is not None and again.checkpoint.intact()


def test_the_checkpoint_conforms_to_the_shapes(store: Store) -> None:
    recorder, _, _ = sealed_store(store, 2, 1)
    checkpoint(recorder, verify(store, incremental=True))
    conforms, text = shacl_report(store)
    assert conforms, text
    rows = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?c ?mode $ledger WHERE { GRAPH "
        "$ledger { ?c a trails:VerificationCheckpoint ; trails:verificationMode ?mode } }",
        {"ledger": LEDGER},
    )
    assert isinstance(rows, Solutions)
    modes = sorted(r["mode"].value for r in rows if isinstance(r["mode"], Literal))
    assert modes == ["full", "incremental"]
    pointers = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?c $ledger WHERE { GRAPH $ledger "
        "{ $ledger trails:latestCheckpoint ?c } }",
        {"ledger": LEDGER},
    )
    assert isinstance(pointers, Solutions) and len(pointers) == 1  # the pointer moved


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_incremental_catches_a_tampered_new_session(store: Store) -> None:
    _, _before, after = sealed_store(store, 3, 2)
    change_a_literal(store, after[1])
    report = verify(store, incremental=True)
    assert report.mode == "incremental"
    assert [(f.kind, f.subject) for f in report.findings] == [("altered", after[1])]


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_incremental_catches_a_broken_chain_link(store: Store) -> None:
    _, _before, after = sealed_store(store, 3, 2)
    seal = seal_of(store, after[1])
    old = [q for q in ledger_quads(store, seal.iri) if q.predicate == T.previousSealHash]
    store.write([Quad(seal.iri, T.previousSealHash, Literal("ab" * 32), LEDGER)], remove=old)
    report = verify(store, incremental=True)
    assert "chain" in {f.kind for f in report.findings}
    assert any(seal.iri in f.subject for f in report.findings)


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_incremental_still_walks_the_links_of_seals_verified_before(store: Store) -> None:
    _, before, _ = sealed_store(store, 3, 1)
    seal = seal_of(store, before[1])
    old = [q for q in ledger_quads(store, seal.iri) if q.predicate == T.quadCount]
    store.write([Quad(seal.iri, T.quadCount, Literal("7", XSD + "integer"), LEDGER)], remove=old)
    report = verify(store, incremental=True)
    assert ("chain", f"seal 2 ({seal.iri})") in {(f.kind, f.subject) for f in report.findings}


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_full_catches_a_tampered_old_graph_that_incremental_only_counts(store: Store) -> None:
    _, before, _ = sealed_store(store, 3, 1)
    change_a_literal(store, before[0])  # one quad replaced by another: same count
    assert verify(store, incremental=True).ok  # what incremental does not catch (docs/audit.md)
    report = verify(store)  # --full
    assert [(f.kind, f.subject) for f in report.findings] == [("altered", before[0])]


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_incremental_counts_catch_an_old_graph_that_lost_or_gained_quads(store: Store) -> None:
    _, before, _ = sealed_store(store, 3, 1)
    store.write([Quad(before[0], T.status, Literal("forged"), before[0])])
    store.clear(before[2])
    report = verify(store, incremental=True)
    assert report.mode == "incremental"
    assert sorted((f.kind, f.subject) for f in report.findings) == sorted(
        [("altered", before[0]), ("missing", before[2])]
    )


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_an_edited_checkpoint_is_a_finding_and_everything_is_rehashed(store: Store) -> None:
    _, before, _ = sealed_store(store, 3, 1)
    change_a_literal(store, before[0])
    c = read_checkpoint(store, LEDGER)
    assert c is not None
    old = [q for q in ledger_quads(store, c.iri) if q.predicate == T.graphsVerified]
    store.write([Quad(c.iri, T.graphsVerified, Literal("99", XSD + "integer"), LEDGER)], remove=old)
    report = verify(store, incremental=True)
    assert report.mode == "full"
    assert sorted((f.kind, f.subject) for f in report.findings) == [
        ("altered", before[0]),
        ("chain", f"checkpoint {c.iri}"),
    ]


def test_without_a_checkpoint_or_a_trusted_signature_incremental_rehashes_all(
    store: Store, tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    recorder = Recorder(store)
    install_sealer(recorder)
    one_session(recorder)
    first = verify(store, incremental=True)
    assert (first.mode, first.graphs_checked, first.note) == (
        "full",
        1,
        "no verification checkpoint recorded yet",
    )
    checkpoint(recorder, first)
    key = Ed25519PrivateKey.generate()
    untrusted = verify(store, incremental=True, public_key=key.public_key())
    assert untrusted.mode == "full" and "not signed by a trusted key" in untrusted.note
    record_checkpoint(
        recorder,
        mode="full",
        seals=1,
        graphs=1,
        verified=verify(store).chain_tips,
        previous=read_checkpoint(store, LEDGER),
        signing_key=key,
    )
    signed = verify(store, incremental=True, public_key=key.public_key())
    assert signed.mode == "incremental" and signed.graphs_counted == 1


def test_the_fast_digest_matches_the_reference_on_awkward_literals(store: Store) -> None:
    g, s, p = IRI("urn:trails:graph:awkward"), IRI("urn:x"), IRI("urn:p")
    values = [
        Literal("".join(chr(c) for c in range(0x80))),
        Literal("é 𝄞 \u2028 \u0085 \ufeff"),
        Literal("hi", language="EN-gb"),
        Literal('a"^^<http://www.w3.org/2001/XMLSchema#integer> .'),
        Literal("2024-01-01T10:00:00.100+00:00", XSD + "dateTime"),
        Literal("1", XSD + "boolean"),
        Literal("007", XSD + "integer"),
        Literal("1.50", XSD + "decimal"),
        Literal("1E-7", XSD + "double"),
        Literal("-0.0", XSD + "double"),
        Literal("abc", XSD + "integer"),
        Literal("x", "urn:custom"),
    ]
    store.write([Quad(s, p, v, g) for v in values] + [Quad(s, p, IRI("urn:a%20bé"), g)])
    for version in (1, 2):
        assert graph_digest(store, g, version=version) == graph_digest_by_query(
            store, g, version=version
        )
    store.clear(g)
    assert digest_ntriples(b"", g) == graph_digest_by_query(store, g)


def _trails(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).with_name("trails"))
    env = {**os.environ, "TRAILS_STORE": str(tmp_path / "store")}
    return subprocess.run(
        [exe, "verify", "--json", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )


@pytest.mark.allow_nonconforming  # tampered on purpose at the end
def test_the_command_is_incremental_and_records_checkpoints(store: Store, tmp_path: Path) -> None:
    disk = open_store(tmp_path / "store")
    set_default_store(disk)
    recorder = Recorder(disk)
    install_sealer(recorder)
    sessions = [one_session(recorder) for _ in range(3)]
    disk.close()
    set_default_store(None)

    def run(*args: str) -> tuple[int, dict[str, object]]:
        done = _trails(tmp_path, *args)
        return done.returncode, json.loads(done.stdout)

    code, first = run()
    assert code == 0 and first["mode"] == "full" and first["checkpoint"]
    code, second = run("--no-checkpoint")
    assert code == 0 and second["mode"] == "incremental" and second["checkpoint"] is None
    assert (second["graphs_checked"], second["graphs_counted"]) == (0, 3)
    disk = open_store(tmp_path / "store")
    change_a_literal(disk, sessions[0])
    disk.close()
    code, full = run("--full")
    assert code == 1 and full["mode"] == "full" and full["checkpoint"] is None
    assert [f["subject"] for f in full["findings"]] == [sessions[0]]  # type: ignore[index,union-attr]


def test_the_ledger_read_from_a_dump_equals_the_ledger_read_by_query(store: Store) -> None:
    from trails.evidence import ledger as ledger_module

    recorder = Recorder(store)
    install_sealer(recorder)
    for _ in range(3):
        one_session(recorder)
    odd = IRI("urn:trails:graph:ledger:odd")
    store.write(
        [
            Quad(odd, IRI("urn:p"), Literal('tab\t"quote" \\ back é \x01 \U0001d11e'), LEDGER),
            Quad(odd, IRI("urn:p"), Literal("hi", language="en"), LEDGER),
            Quad(odd, IRI("urn:p"), Literal("5", XSD + "integer"), LEDGER),
        ]
    )
    by_query = ledger_module._rows(store, ledger_module._ALL, {"ledger": LEDGER})
    by_dump = ledger_module._ntriples_rows(store.dump(format="ntriples", graph=LEDGER) or b"")
    assert sorted(map(repr, by_dump)) == sorted(repr(tuple(r[:3])) for r in by_query)
    assert (
        ledger_module.read_ledger(store, LEDGER).seals
        == ledger_module._parse(ledger_module._group(by_query), LEDGER).seals
    )
    store.write([], remove=[q for q in ledger_quads(store, odd)])
