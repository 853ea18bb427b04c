"""The quick verification: a checkpoint, what was sealed since it, and what it leaves.

Sessions are recorded through real ``invoke`` calls on a real store with the
sealer installed; a verification records a checkpoint; more sessions are
recorded; then the store is tampered with the way someone with write access
would, and ``verify(quick=True)`` (``trails verify --quick``) and the default,
full ``verify`` report what they catch. The quick mode reads only the seals after
the checkpoint (walking back from the ledger's newest-seal pointers), so what was
verified before is the full check's to catch.
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
from trails.evidence.checkpoint import INCREMENTAL, read_checkpoint, record_checkpoint
from trails.evidence.checks import checkpoint_report
from trails.evidence.quick import seal_position
from trails.evidence.seal import install_sealer
from trails.evidence.verify import VerifyReport, verify
from trails.prov import Recorder
from trails.prov.vocab import T
from trails.store import IRI, Literal, Quad, Solutions, Store, open_store, set_default_store
from trails.testing import shacl_report

XSD = "http://www.w3.org/2001/XMLSchema#"


def checkpoint(recorder: Recorder, report: VerifyReport) -> IRI:
    """Record what ``report`` verified, as ``trails verify`` does."""
    assert report.ok, report.findings
    return checkpoint_report(recorder, report)


def sealed_store(store: Store, old: int, new: int) -> tuple[Recorder, list[IRI], list[IRI]]:
    """``old`` sessions, a full verification and its checkpoint, then ``new`` sessions."""
    recorder = Recorder(store)
    install_sealer(recorder)
    before = [one_session(recorder) for _ in range(old)]
    checkpoint(recorder, verify(store))
    after = [one_session(recorder) for _ in range(new)]
    return recorder, before, after


def test_quick_rehashes_only_what_was_sealed_since_the_checkpoint(store: Store) -> None:
    recorder, _before, _after = sealed_store(store, 4, 2)
    first = read_checkpoint(store, LEDGER)
    assert first is not None and first.mode == "full"
    report = verify(store, quick=True)
    assert report.ok, report.findings
    assert (report.mode, report.graphs_checked, report.not_rechecked) == ("quick", 2, 4)
    assert report.checkpoint is not None and report.checkpoint.iri == first.iri
    assert report.last_full == first.at
    assert report.seals == 6 and report.heads == verify(store).heads
    assert report.chain_tips == verify(store).chain_tips
    # the next checkpoint follows the first, keeps when the full one ran, and the next
    # quick verification starts from it with nothing new to read
    second = checkpoint(recorder, report)
    latest = read_checkpoint(store, LEDGER)
    assert latest is not None and latest.iri == second and latest.intact()
    assert (latest.mode, latest.last_full, latest.seals, latest.graphs) == (
        INCREMENTAL, first.at, 6, 6
    )  # fmt: skip
    again = verify(store, quick=True)
    assert (again.graphs_checked, again.not_rechecked, again.seals) == (0, 6, 6)
    assert again.checkpoint is not None and again.checkpoint.iri == second
    assert again.last_full == first.at and again.ok


def test_the_quick_checkpoint_conforms_to_the_shapes(store: Store) -> None:
    recorder, _, _ = sealed_store(store, 2, 1)
    checkpoint(recorder, verify(store, quick=True))
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


def test_a_seal_names_its_writer_and_place(store: Store) -> None:
    recorder = Recorder(store)
    install_sealer(recorder)
    seal = seal_of(store, one_session(recorder))
    writer, sequence = seal_position(seal.iri, LEDGER) or ("", 0)
    assert sequence == seal.sequence == 1 and writer and str(seal.chain).endswith(writer)
    assert seal_position(IRI("urn:other:seal:1"), LEDGER) is None


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_quick_catches_a_tampered_new_session(store: Store) -> None:
    _, _before, after = sealed_store(store, 3, 2)
    change_a_literal(store, after[1])
    report = verify(store, quick=True)
    assert report.mode == "quick"
    assert [(f.kind, f.subject) for f in report.findings] == [("altered", after[1])]


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_quick_catches_a_broken_link_of_a_new_seal(store: Store) -> None:
    _, _before, after = sealed_store(store, 3, 2)
    seal = seal_of(store, after[1])
    old = [q for q in ledger_quads(store, seal.iri) if q.predicate == T.previousSealHash]
    store.write([Quad(seal.iri, T.previousSealHash, Literal("ab" * 32), LEDGER)], remove=old)
    report = verify(store, quick=True)
    assert "chain" in {f.kind for f in report.findings}
    assert any(seal.iri in f.subject for f in report.findings)


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_a_new_seal_linked_to_a_rewritten_verified_seal_is_caught_quickly(store: Store) -> None:
    """The first new seal links to the seal the checkpoint verified: its hash is compared
    with the hash the checkpoint recorded."""
    _, before, _ = sealed_store(store, 2, 1)
    seal = seal_of(store, before[1])
    old = [q for q in ledger_quads(store, seal.iri) if q.predicate == T.sealHash]
    store.write([Quad(seal.iri, T.sealHash, Literal("cd" * 32), LEDGER)], remove=old)
    report = verify(store, quick=True)
    assert any(str(seal.iri) in f.subject for f in report.findings if f.kind == "chain")


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_what_quick_leaves_the_default_full_check_catches(store: Store) -> None:
    _, before, _ = sealed_store(store, 4, 1)
    change_a_literal(store, before[0])  # one quad replaced by another: same count
    store.write([Quad(before[1], T.status, Literal("forged"), before[1])])  # one more quad
    store.clear(before[2])  # gone
    seal = seal_of(store, before[3])  # an old seal's field edited
    old = [q for q in ledger_quads(store, seal.iri) if q.predicate == T.quadCount]
    store.write([Quad(seal.iri, T.quadCount, Literal("7", XSD + "integer"), LEDGER)], remove=old)
    quick = verify(store, quick=True)
    assert quick.ok and quick.mode == "quick"  # what it does not recheck: it says so
    assert quick.not_rechecked == 4
    report = verify(store)
    assert report.mode == "full"
    assert sorted((f.kind, f.subject) for f in report.findings) == sorted(
        [
            ("altered", before[0]),
            ("altered", before[1]),  # (its catalogue entry is not another finding)
            ("missing", before[2]),
            ("altered", before[3]),  # against the edited count
            ("chain", f"seal 4 ({seal.iri})"),
        ]
    )


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_an_edited_checkpoint_is_a_finding_and_quick_becomes_full(store: Store) -> None:
    _, before, _ = sealed_store(store, 3, 1)
    change_a_literal(store, before[0])
    c = read_checkpoint(store, LEDGER)
    assert c is not None
    old = [q for q in ledger_quads(store, c.iri) if q.predicate == T.graphsVerified]
    store.write([Quad(c.iri, T.graphsVerified, Literal("99", XSD + "integer"), LEDGER)], remove=old)
    report = verify(store, quick=True)
    assert report.mode == "full"
    assert sorted((f.kind, f.subject) for f in report.findings) == [
        ("altered", before[0]),
        ("chain", f"checkpoint {c.iri}"),
    ]


def test_without_a_checkpoint_or_a_trusted_signature_quick_is_full(
    store: Store, tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    recorder = Recorder(store)
    install_sealer(recorder)
    one_session(recorder)
    first = verify(store, quick=True)
    assert (first.mode, first.graphs_checked, first.note) == (
        "full",
        1,
        "no verification checkpoint recorded yet",
    )
    checkpoint(recorder, first)
    key = Ed25519PrivateKey.generate()
    untrusted = verify(store, quick=True, public_key=key.public_key())
    assert untrusted.mode == "full" and untrusted.note
    record_checkpoint(
        recorder,
        mode="full",
        seals=1,
        graphs=1,
        verified=verify(store).chain_tips,
        previous=read_checkpoint(store, LEDGER),
        signing_key=key,
    )
    signed = verify(store, quick=True, public_key=key.public_key())
    assert signed.mode == "quick" and signed.not_rechecked == 1


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
        [exe, "verify", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )


@pytest.mark.allow_nonconforming  # tampered on purpose at the end
def test_the_command_is_full_by_default_and_quick_on_request(store: Store, tmp_path: Path) -> None:
    disk = open_store(tmp_path / "store")
    set_default_store(disk)
    recorder = Recorder(disk)
    install_sealer(recorder)
    sessions = [one_session(recorder) for _ in range(3)]
    disk.close()
    set_default_store(None)

    def run(*args: str) -> tuple[int, dict[str, object]]:
        done = _trails(tmp_path, "--json", *args)
        return done.returncode, json.loads(done.stdout)

    code, first = run()
    assert code == 0 and first["mode"] == "full" and first["checkpoint"]
    assert first["graphs_checked"] == 3 and first["last_full"] is None
    code, second = run("--quick", "--no-checkpoint")
    assert code == 0 and second["mode"] == "quick" and second["checkpoint"] is None
    assert (second["graphs_checked"], second["not_rechecked"]) == (0, 3)
    assert second["last_full"]
    done = _trails(tmp_path, "--quick", "--no-checkpoint")
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("NOT RECHECKED")]
    assert "3 graph(s)" in line and f"last full verification: {second['last_full']}" in line
    assert "(quick, since the checkpoint of" in done.stdout

    disk = open_store(tmp_path / "store")
    change_a_literal(disk, sessions[0])
    disk.close()
    code, quick = run("--quick")
    assert code == 0 and quick["mode"] == "quick"  # not rechecked, and it said so
    for args in ((), ("--full",)):
        code, full = run(*args)
        assert code == 1 and full["mode"] == "full" and full["checkpoint"] is None
        assert [f["subject"] for f in full["findings"]] == [sessions[0]]  # type: ignore[index,union-attr]
        plain = _trails(tmp_path, *args)
        assert plain.returncode == 1 and plain.stdout.splitlines()[-1].startswith("FAILED")


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
