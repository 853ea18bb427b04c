"""``trails verify`` against a SPARQL server looks everywhere, as it does on the embedded store.

A real ``oxigraph serve`` and a real Virtuoso (``tests/servers.py``) are recorded into
through ``invoke`` and ``memory.learn`` with the sealer installed
(``tests.evidence.test_content.record``), tampered with through the ``Store`` API (or the
server's own update endpoint, for what that API refuses), and the real ``trails`` CLI,
given the server as ``--store URL``, verifies them in a subprocess: each case exits 1 with
one finding that names the entity or graph, and an untouched store exits 0. The graphs a
server keeps of its own are its, not foreign; a default graph that is the union of the
graphs is not taken for triples there; a server's row limit neither fails a graph nor hides
one; a session sealed while verification runs is no finding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from tests.evidence.test_content import (
    Recorded,
    changed,
    memory_changed,
    record,
    structure_planted,
)
from tests.evidence.test_learned_memory import rewrite_text_and_digest
from tests.evidence.test_transparency import checkpoint
from tests.evidence.test_verify_full import catalogue_cost, catalogue_deleted, unknown_graph

from servers import VIRTUOSO_INSTALL, OxigraphServer, VirtuosoServer, virtuoso_installed
from trails.evidence.remote_sweep import BATCH_QUADS, Batches
from trails.evidence.seal import install_sealer
from trails.evidence.transparency import log_iri, node_iri
from trails.evidence.verify import verify
from trails.kernel import Context
from trails.prov import Minter, Recorder
from trails.prov.vocab import RDF, T
from trails.store import IRI, Literal, Quad, Solutions, Store, set_default_store
from trails.store.sparql import SERVER_GRAPHS, SparqlStore

pytestmark = pytest.mark.remote

Tamper = Callable[[Store, Recorded], tuple[str, str, str]]


def _default_graph_triple(store: Store, r: Recorded) -> tuple[str, str, str]:
    """A triple in the server's default graph (the ``Store`` API always names a graph)."""
    assert isinstance(store, SparqlStore) and store.update_url is not None
    text = f'INSERT DATA {{ {r.session.n3()} {T.status.n3()} "ok" }}'
    answer = httpx.post(
        store.update_url, content=text, headers={"Content-Type": "application/sparql-update"}
    )
    answer.raise_for_status()
    return "foreign", "the default graph", "the default graph"


def _unsealed_receipt(store: Store, r: Recorded) -> tuple[str, str, str]:
    graph = Minter().graph("erasure/forged")
    store.write([Quad(IRI("urn:trails:erasure:forged"), RDF.type, T.Erasure, graph)])
    return "foreign", graph, graph


def _log_node_edited(store: Store, r: Recorded) -> tuple[str, str, str]:
    """A checkpoint puts both seals in the transparency log; then a leaf's hash is edited."""
    checkpoint(Recorder(store))
    log = log_iri(Minter())
    node = node_iri(log, 0, 0)
    rows = store.query(
        "SELECT ?h $n $g WHERE { GRAPH $g { $n <https://w3id.org/trails/ns#nodeHash> ?h } }",
        {"n": node, "g": log},
    )
    assert isinstance(rows, Solutions)
    (h,) = [row["h"] for row in rows]
    store.write(
        [Quad(node, T.nodeHash, Literal("0" * 64), log)],
        remove=[Quad(node, T.nodeHash, h, log)],  # type: ignore[arg-type]
    )
    return "log", str(node), str(node)


def _memory_text_and_digest(store: Store, r: Recorded) -> tuple[str, str, str]:
    """A memory's text and its memory graph's digest rewritten together: only the digest
    its sealed learning session keeps tells."""
    rewrite_text_and_digest(store, r)
    return "content-altered", r.memory, r.session


TABLE: dict[str, Tamper] = {
    "catalogue cost edited": catalogue_cost,
    "catalogue entry deleted": catalogue_deleted,
    "an unknown named graph added": unknown_graph,
    "a default-graph triple added": _default_graph_triple,
    "structure planted in a content graph": structure_planted,
    "memory text edited": memory_changed,
    "memory text and digest rewritten": _memory_text_and_digest,
    "content changed": changed,
    "a receipt graph without a seal": _unsealed_receipt,
    "a transparency-log node edited": _log_node_edited,
}
#: Virtuoso keeps no triple outside a named graph (an INSERT without one is refused), so
#: the default-graph case is Oxigraph's alone
VIRTUOSO_TABLE = {k: v for k, v in TABLE.items() if v is not _default_graph_triple}


def _cli(store: SparqlStore, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The real ``trails`` with ``--store URL`` (form posts for Virtuoso, as it needs)."""
    exe = str(Path(sys.executable).with_name("trails"))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    if store.form_post:
        environ["TRAILS_STORE_FORM_POST"] = "1"
    return subprocess.run(
        [exe, "--store", store.query_url, *args],
        capture_output=True,
        text=True,
        env={**environ, **env},
        cwd=cwd,
        check=False,
        timeout=600,
    )


def _catches(store: SparqlStore, tmp_path: Path, case: Tamper) -> None:
    recorded = record(store)
    assert verify(store).ok
    kind, subject, graph = case(store, recorded)

    done = _cli(store, tmp_path, "verify", "--no-checkpoint")
    assert done.returncode == 1, done.stdout + done.stderr
    line = f"{kind.upper():<9} {subject}"
    named = [ln for ln in done.stdout.splitlines() if ln.startswith(line)]
    assert named, done.stdout
    assert subject == graph or named[0].startswith(f"{line} in {graph}: "), named
    assert "Traceback" not in done.stderr

    report = json.loads(_cli(store, tmp_path, "verify", "--no-checkpoint", "--json").stdout)
    assert not report["ok"] and report["mode"] == "full"
    found = [(f["kind"], f["subject"], f.get("session", f["subject"])) for f in report["findings"]]
    # the rest of the store reads as recorded (an edited log leaf is found twice: as a leaf
    # and as a node of the tree)
    assert set(found) == {(kind, subject, graph)}, found


@pytest.mark.allow_nonconforming  # tampered on purpose
@pytest.mark.parametrize("case", sorted(TABLE))
def test_verify_on_oxigraph_serve_catches_each_tampering(
    remote_store: SparqlStore, tmp_path: Path, case: str
) -> None:
    _catches(remote_store, tmp_path, TABLE[case])


@pytest.mark.virtuoso
@pytest.mark.allow_nonconforming  # tampered on purpose
@pytest.mark.parametrize("case", sorted(VIRTUOSO_TABLE))
def test_verify_on_virtuoso_catches_each_tampering(
    virtuoso_store: SparqlStore, tmp_path: Path, case: str
) -> None:
    _catches(virtuoso_store, tmp_path, VIRTUOSO_TABLE[case])


def _clean(store: SparqlStore, tmp_path: Path) -> dict[str, object]:
    record(store)
    done = _cli(store, tmp_path, "verify", "--no-checkpoint")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK." in done.stdout
    report = json.loads(_cli(store, tmp_path, "verify", "--no-checkpoint", "--json").stdout)
    assert report["ok"] and report["findings"] == []
    return report


def test_a_clean_store_on_oxigraph_serve_verifies(
    remote_store: SparqlStore, tmp_path: Path
) -> None:
    report = _clean(remote_store, tmp_path)
    assert report["content"]["values"] > 0  # the content was read, not passed over


@pytest.mark.virtuoso
def test_a_clean_store_on_virtuoso_verifies(virtuoso_store: SparqlStore, tmp_path: Path) -> None:
    report = _clean(virtuoso_store, tmp_path)
    assert report["content"]["values"] > 0


@pytest.mark.virtuoso
def test_virtuosos_own_graphs_are_not_foreign(virtuoso_store: SparqlStore, tmp_path: Path) -> None:
    record(virtuoso_store)
    own = IRI("http://www.w3.org/ns/ldp#")
    assert own in SERVER_GRAPHS["virtuoso"] and own in virtuoso_store.own_graphs()
    virtuoso_store.write([Quad(own, IRI("urn:example:p"), Literal("the server's"), own)])
    done = _cli(virtuoso_store, tmp_path, "verify", "--no-checkpoint")
    assert done.returncode == 0, done.stdout + done.stderr

    planted = IRI("urn:example:planted")  # a graph of no kind is still foreign there
    virtuoso_store.write([Quad(planted, IRI("urn:example:p"), Literal("x"), planted)])
    done = _cli(virtuoso_store, tmp_path, "verify", "--no-checkpoint")
    assert done.returncode == 1
    assert [ln for ln in done.stdout.splitlines() if ln.startswith("FOREIGN")] == [
        f"FOREIGN   {planted}: a named graph of 1 quad(s) that trails never writes: not a "
        "session, not sealed, of no kind trails records"
    ], done.stdout


def test_graphs_named_as_the_servers_own_are_not_foreign(
    remote_store: SparqlStore, tmp_path: Path
) -> None:
    record(remote_store)
    theirs = IRI("http://example.org/server/metadata")
    remote_store.write([Quad(theirs, IRI("urn:example:p"), Literal("config"), theirs)])
    done = _cli(remote_store, tmp_path, "verify", "--no-checkpoint")
    assert done.returncode == 1 and f"FOREIGN   {theirs}:" in done.stdout  # not Oxigraph's

    done = _cli(
        remote_store, tmp_path, "verify", "--no-checkpoint", TRAILS_STORE_SERVER_GRAPHS=theirs
    )
    assert done.returncode == 0, done.stdout + done.stderr

    (tmp_path / "trails.toml").write_text(f'[store]\nserver_graphs = ["{theirs}"]\n')
    done = _cli(remote_store, tmp_path, "verify", "--no-checkpoint")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "unknown setting" not in done.stderr

    done = _cli(
        remote_store, tmp_path, "verify", "--no-checkpoint", TRAILS_STORE_SERVER_GRAPHS="not an iri"
    )
    assert done.returncode == 2 and "server_graphs" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_a_union_default_graph_is_not_taken_for_triples_there(tmp_path: Path) -> None:
    """On a server whose default graph is the union of its graphs, the graphs' own triples
    are not foreign; a triple only the default graph holds still is."""
    server = OxigraphServer(tmp_path / "db", "--union-default-graph")
    url = server.start()
    try:
        with SparqlStore(f"{url}/query", f"{url}/update", f"{url}/store") as store:
            set_default_store(store)
            recorded = record(store)
            done = _cli(store, tmp_path, "verify", "--no-checkpoint")
            assert done.returncode == 0, done.stdout + done.stderr
            # the session's own status, copied into the default graph: the union holds it
            # anyway (no server of that kind tells the two apart); a forged one is found
            _default_graph_triple(store, recorded)
            text = f'INSERT DATA {{ {recorded.session.n3()} {T.status.n3()} "forged" }}'
            httpx.post(
                f"{url}/update", content=text, headers={"Content-Type": "application/sparql-update"}
            ).raise_for_status()
            done = _cli(store, tmp_path, "verify", "--no-checkpoint")
    finally:
        set_default_store(None)
        server.stop()
    assert done.returncode == 1, done.stdout
    assert (
        f'FOREIGN   the default graph: 1 triple(s) where trails writes nothing (the first: <{recorded.session}> <{T.status}> "forged")'
        in done.stdout
    ), done.stdout


@pytest.mark.virtuoso
@pytest.mark.allow_nonconforming  # tampered on purpose
def test_a_server_row_limit_cuts_no_graph_short(tmp_path: Path) -> None:
    """A Virtuoso that answers at most 300 rows (triples, for the batches' CONSTRUCT, four a
    quad): each batch cut short is read again, graph by graph and then in pages; nothing is
    taken for tampering, and tampering is still found. (300 rows hold any one graph of this
    store as a SELECT, as the rest of trails reads graphs.)"""
    if not virtuoso_installed():
        pytest.skip(f"virtuoso-t is not installed: {VIRTUOSO_INSTALL}")
    server = VirtuosoServer(tmp_path / "virtuoso", max_rows=300)
    server.start()
    try:
        with SparqlStore(server.url, server.url, None, form_post=True) as store:
            set_default_store(store)
            recorded = record(store)
            sizes = Batches(store, "urn:trails:").listed
            assert max(sizes.values()) > 300 // 4  # some graph cannot come in one answer
            done = _cli(store, tmp_path, "verify", "--no-checkpoint")
            assert done.returncode == 0, done.stdout + done.stderr
            changed(store, recorded)
            # more graphs than one answer lists, the planted ones named after trails' own
            planted = [IRI(f"urn:zz:planted:{i:03}") for i in range(320)]
            store.write([Quad(g, T.status, Literal("x"), g) for g in planted])
            done = _cli(store, tmp_path, "verify", "--no-checkpoint", "--json")
    finally:
        set_default_store(None)
        server.stop()
    found = [(f["kind"], f["subject"]) for f in json.loads(done.stdout)["findings"]]
    assert found == [("content-altered", recorded.input)] + [("foreign", g) for g in planted]


def test_a_session_sealed_while_verification_runs_is_no_finding(
    remote_store: SparqlStore,
) -> None:
    record(remote_store)
    recorder = Recorder(remote_store)
    install_sealer(recorder)
    ctx = Context.open("did:local:late", recorder=recorder)  # open when the graphs are listed
    late = IRI.trusted(str(ctx.session))
    sealed: list[int] = []

    def seal_it(done: int, total: int) -> None:
        if not sealed:
            ctx.close()  # its end and seal, after the ledger was read
            sealed.append(done)

    report = verify(remote_store, progress=seal_it)
    assert sealed and report.ok, report.findings
    again = verify(remote_store)
    assert again.ok and late not in again.open_sessions


def test_graphs_are_read_in_batches_and_a_short_answer_graph_by_graph(
    remote_store: SparqlStore,
) -> None:
    recorded = record(remote_store)
    big = IRI("urn:example:big")
    remote_store.write(
        [Quad(IRI(f"urn:example:s{i}"), T.status, Literal("x"), big) for i in range(BATCH_QUADS)]
    )
    sent: list[str] = []

    def count(request: httpx.Request) -> None:
        sent.append(request.url.path)

    batches = Batches(remote_store, "urn:trails:")
    assert batches.listed[str(big)] == BATCH_QUADS
    remote_store.client.event_hooks["request"].append(count)
    handed: dict[str, int] = {}
    batches.read(lambda graph, data, n: handed.__setitem__(graph, n))
    remote_store.client.event_hooks["request"].remove(count)
    assert handed == batches.listed  # every graph, whole, once (the ledger is read before)
    assert "urn:trails:graph:ledger" not in handed and str(recorded.session) in handed
    assert 1 < len(sent) < len(handed)  # a batch holds several graphs; the big one is alone

    batched = len(sent)
    batches.listed[str(recorded.session)] += 5  # as if the server's row limit cut the answer
    handed.clear()
    sent.clear()
    remote_store.client.event_hooks["request"].append(count)
    batches.read(lambda graph, data, n: handed.__setitem__(graph, n))
    remote_store.client.event_hooks["request"].remove(count)
    assert handed[str(recorded.session)] == batches.listed[str(recorded.session)] - 5
    assert set(handed) == set(batches.listed)
    assert len(sent) > batched  # the short batch read again, one graph a query
