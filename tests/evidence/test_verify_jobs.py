"""The full verification's work on every core finds what one process finds.

Each tampering of the full-verification table is verified by the real ``trails verify``
twice, with ``--jobs 1`` (all in one process) and ``--jobs 2`` (worker processes): both
name the tampering, and their findings are the same, word for word. Beneath that: the
canonical hash read from the store's N-Quads lines is the reference hash whatever the
lexical forms, the stream is cut into the same graphs whatever the size of the blocks it
arrives in (and a graph that comes back is still caught), a content check that would have
to ask the store is judged again where the store is. Writers sealing sessions while a pool
verifies: ``test_verify_live.py``, with and without the pool.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from tests.evidence.test_content import record, trails_cli
from tests.evidence.test_verify_full import FULL_TABLE

from trails.evidence import sweep
from trails.evidence.canonical import _canonical_already, digest_nquads, digest_ntriples
from trails.evidence.content import Accounts, ContentChecker, ContentTally, Receipt
from trails.evidence.graphwork import POOL_FROM, Judge, Shared, Workers, jobs_for
from trails.evidence.sweep import Scattered, Sweep
from trails.prov.vocab import T
from trails.store import IRI, Literal, open_store, set_default_store


def _findings(path: Path, jobs: int) -> tuple[int, list[dict[str, str]]]:
    done = trails_cli(path, "verify", "--no-checkpoint", "--json", "--jobs", str(jobs))
    return done.returncode, json.loads(done.stdout)["findings"]


@pytest.mark.allow_nonconforming  # tampered on purpose
@pytest.mark.parametrize("case", sorted(FULL_TABLE))
def test_one_job_and_two_find_the_same_tampering(tmp_path: Path, case: str) -> None:
    path = tmp_path / "store"
    store = open_store(path)
    try:
        recorded = record(store)
        kind, subject, graph = FULL_TABLE[case](store, recorded)
    finally:
        set_default_store(None)
        store.close()
    code_1, one = _findings(path, 1)
    code_2, two = _findings(path, 2)
    assert code_1 == code_2 == 1
    found = [(f["kind"], f["subject"], f.get("session", f["subject"])) for f in two]
    assert found == [(kind, subject, graph)], found
    assert two == one  # kind, subject, session and detail, in the same order


def test_a_bad_jobs_count_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "store"
    open_store(path).close()
    done = trails_cli(path, "verify", "--jobs", "0")
    assert done.returncode == 2
    assert "--jobs 0 must be 1 or more" in done.stderr and "Traceback" not in done.stderr


def test_jobs_default_to_every_core_for_a_store_worth_it() -> None:
    assert jobs_for(3, 1) == 3 and jobs_for(1, 10**6) == 1
    assert jobs_for(None, POOL_FROM - 1) == 1
    assert jobs_for(None, POOL_FROM) >= 1


_XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.mark.parametrize(
    ("value", "datatype"),
    [
        ("2026-01-02T03:04:05.120Z", "dateTime"),  # canonical: the fast path
        ("2026-01-02T03:04:05.1200Z", "dateTime"),
        ("2026-01-02T03:04:05+00:00", "dateTime"),
        ("1", "boolean"),
        ("007", "integer"),
        ("-0", "integer"),
        ("1.50", "decimal"),
        ("0.25", "decimal"),
        ("1e3", "double"),
        ("0.00233", "double"),
        ("١٢", "integer"),  # digits that are not ASCII
    ],
)
def test_the_nquads_hash_is_the_canonical_hash(value: str, datatype: str) -> None:
    graph = IRI("urn:example:g")
    ntriples = (
        f'<urn:example:b> <urn:example:p> "{value}"^^<{_XSD}{datatype}> .\n'
        '<urn:example:a> <urn:example:q> "text \\"quoted\\" 1"^^<' + _XSD + "integer> .\n"
        "<urn:example:a> <urn:example:p> <urn:example:o> .\n"
    ).encode()
    nquads = ntriples.replace(b" .\n", f" <{graph}> .\n".encode())
    assert digest_nquads(nquads, ntriples, graph) == digest_ntriples(ntriples, graph)
    assert digest_ntriples(ntriples, graph)[1] == 3


def _stream(text: bytes, size: int, *, whole: bool = False) -> list[tuple[str, bytes, int]]:
    got: list[tuple[str, bytes, int]] = []
    sweep = Sweep(lambda g, d, n: got.append((g, d, n)), whole=whole, nquads=True)
    for at in range(0, len(text), size):
        sweep.write(text[at : at + size])
    sweep.close()
    return got


def _lines(graph: str, n: int) -> bytes:
    return b"".join(f'<urn:s:{i}> <urn:p> "v {i}" <{graph}> .\n'.encode() for i in range(n))


@pytest.mark.parametrize("block", [1, 50, 200, 1 << 20])
@pytest.mark.parametrize("size", [1, 7, 64, 4096])
def test_the_stream_is_cut_into_the_same_graphs_whatever_the_blocks(
    size: int, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweep, "BLOCK", block)  # bytes gathered before they are cut
    a, b = _lines("urn:g:a", 40), _lines("urn:g:b", 3)
    assert _stream(a + b, size) == [("urn:g:a", a, 40), ("urn:g:b", b, 3)]
    with pytest.raises(Scattered):  # a graph that comes back, inside one block or across
        _stream(a + b + _lines("urn:g:a", 2), size)
    cut = a.index(b"\n", 100) + 1  # a graph written in two places: kept whole
    kept = _stream(a[:cut] + b + a[cut:], size, whole=True)
    assert kept == [("urn:g:a", a, 40), ("urn:g:b", b, 3)]


def test_a_content_check_that_asks_about_a_receipt_is_judged_where_the_store_is() -> None:
    """In a worker, a digest whose value an unsealed erasure names cannot be settled (is
    the receipt sealed now?): the process that holds the store judges it again, asking."""
    graph, entity = "urn:example:session", "urn:example:entity"
    receipt = Receipt("urn:example:erasure", "urn:example:erasure-graph", "erasure")
    accounts = Accounts(pending={entity: receipt})
    structure = [(IRI(entity), T.sha256, Literal("ab" * 32))]
    asked: list[str] = []

    def sealed_now(g: str) -> bool:
        asked.append(g)
        return True

    for jobs in (1, 2):
        findings: list[object] = []
        tally = ContentTally()
        checker = ContentChecker(
            Accounts(pending={entity: receipt}, recheck=sealed_now),
            findings,
            tally,  # type: ignore[arg-type]
        )
        workers = Workers(Shared("urn:trails:", "urn:c", frozenset(), accounts), checker, jobs)
        try:
            workers.submit(Judge(graph, structure, b"", False, True))
            workers.drain()
        finally:
            workers.close()
        assert findings == []  # the receipt was sealed meanwhile: no content-missing
        assert tally.accounted == {(graph, receipt.iri): 1}
    assert asked == [receipt.graph, receipt.graph]


@pytest.mark.parametrize(
    ("value", "datatype", "canonical"),
    [
        ("2026-01-02T03:04:05.12Z", "dateTime", True),
        ("2026-01-02T03:04:05.120Z", "dateTime", False),
        ("2026-01-02T03:04:05+00:00", "dateTime", False),
        ("true", "boolean", True),
        ("1", "boolean", False),
        ("-12", "integer", True),
        ("007", "integer", False),
        ("0.25", "decimal", True),
        ("1.50", "decimal", False),
        ("2.5", "double", True),
        ("1e3", "double", False),
        ("1000.0", "double", False),
        ("١٢", "integer", False),
    ],
)
def test_a_graph_is_hashed_from_its_lines_only_when_every_form_is_canonical(
    value: str, datatype: str, canonical: bool
) -> None:
    """The hash from the N-Quads lines as they came is taken only when no line would be
    rewritten; either way it is the canonical hash."""
    graph = IRI("urn:example:g")
    ntriples = (
        f'<urn:example:b> <urn:example:p> "{value}"^^<{_XSD}{datatype}> .\n'
        f'<urn:example:a> <urn:example:q> "3"^^<{_XSD}integer> .\n'
        '<urn:example:a> <urn:example:r> "a \\"quoted\\" text" .\n'
    ).encode()
    nquads = ntriples.replace(b" .\n", f" <{graph}> .\n".encode())
    assert _canonical_already(ntriples) is canonical
    assert digest_nquads(nquads, ntriples, graph) == digest_ntriples(ntriples, graph)
    if not canonical:  # the lines as they came would hash otherwise
        lines = sorted(set(nquads.split(b"\n")) - {b""})
        assert (
            hashlib.sha256(b"\n".join([*lines, b""])).hexdigest()
            != digest_ntriples(ntriples, graph)[0]
        )


def test_the_entry_from_the_summary_lines_is_the_entry_from_every_triple(tmp_path: Path) -> None:
    """``summary_triples`` reads only the lines an entry is made of (of the types, those
    ``summarise`` asks about): the entry is the one the whole graph gives, for a session
    holding every kind of event and for one that learns a memory."""
    store = open_store(tmp_path / "store")
    try:
        r = record(store)
        catalogue = "urn:trails:graph:catalogue"
        for session in (r.session, r.sample["session"]):
            data = store.dump(format="ntriples", graph=session) or b""
            every = sweep.entry_lines(session, sweep.ntriples_rows(data), catalogue)
            summary = sweep.summary_triples(data)
            assert sweep.entry_lines(session, summary, catalogue) == every
            assert len(every) > 20 and len(summary) < len(sweep.ntriples_rows(data))
    finally:
        set_default_store(None)
        store.close()
