"""Findings are evidence: each evaluation recorded in plain PROV, sealed in its own write,
conforming to the shapes and PROV-CONSTRAINTS, and any edit or deletion a verify finding."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.controls.conftest import EXAMPLE, World

from trails.audit.bundle import verify_bundle, write_bundle
from trails.audit.querypack import get_query
from trails.audit.report import render_report
from trails.controls import (
    definition_changes,
    evaluate_session,
    evaluate_store,
    load_controls,
    record_evaluation,
    recorded_results,
)
from trails.controls.record import control_iri, definition_graph
from trails.evidence import verify
from trails.store import IRI, Literal, Quad, Solutions
from trails.testing import assert_conforms
from trails.testing.prov_constraints import assert_prov_constraints

AUDITOR = "did:example:auditor"


@pytest.fixture(scope="module")
def recorded(world: World) -> Iterator[tuple[IRI, IRI]]:
    controls = load_controls(EXAMPLE)
    failing = record_evaluation(
        world.recorder, evaluate_session(world.store, world.failing, controls), by=AUDITOR
    )
    passed = record_evaluation(world.recorder, evaluate_store(world.store, controls), by=AUDITOR)
    assert failing is not None and passed is not None
    yield failing, passed


def _quads(world: World, graph: IRI) -> list[Quad]:
    result = world.store.query("SELECT ?s ?p ?o $g WHERE { GRAPH $g { ?s ?p ?o } }", {"g": graph})
    assert isinstance(result, Solutions)
    return [Quad(r["s"], r["p"], r["o"], graph) for r in result]  # type: ignore[arg-type]


PLAIN_PROV = """
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT ?evaluation ?definition ?agent ?finding ?session $g WHERE {
  GRAPH ?g {
    ?evaluation a prov:Activity ; prov:used ?definition ; prov:wasAssociatedWith ?agent ;
                prov:wasInformedBy ?session .
    OPTIONAL { ?finding prov:wasGeneratedBy ?evaluation }
  }
  FILTER(?g = $g)
}
"""


def test_an_evaluation_is_plain_prov_with_one_entity_per_finding(
    world: World, recorded: tuple[IRI, IRI]
) -> None:
    failing, _ = recorded
    result = world.store.query(PLAIN_PROV, {"g": failing})
    assert isinstance(result, Solutions)
    rows = list(result)
    assert {str(r["session"]) for r in rows} == {world.failing}
    assert len({r["evaluation"] for r in rows}) == 2  # the violated control, the passed one
    assert len([r for r in rows if "finding" in r]) == 1  # the failed call
    assert all(str(r["definition"]).startswith("urn:trails:control:") for r in rows)
    assert_conforms(world.store, graph=failing)
    assert_prov_constraints(world.store, graph=failing)


def test_passed_evaluations_are_recorded_too(world: World, recorded: tuple[IRI, IRI]) -> None:
    _, passed = recorded
    results = {r.control: r for r in recorded_results(world.store) if r.graph == str(passed)}
    assert results["unsealed-session"].outcome == "passed"
    assert results["unsealed-session"].findings == 0
    assert results["unsealed-session"].session is None  # store scope
    [newest] = recorded_results(world.store, "failed-call", limit=1)
    assert newest.outcome == "violated" and newest.findings == 1
    assert_conforms(world.store, graph=passed)


def test_findings_graphs_are_sealed_and_verify_clean(
    world: World, recorded: tuple[IRI, IRI]
) -> None:
    report = verify(world.store)
    assert report.ok, report.findings


def test_deleting_or_editing_a_finding_is_a_verify_finding(
    world: World, recorded: tuple[IRI, IRI]
) -> None:
    failing, _ = recorded
    quads = _quads(world, failing)
    severity = next(q for q in quads if str(q.predicate).endswith("#severity"))
    edited = severity._replace(object=Literal("info"))
    world.store.write([edited], remove=[severity])
    try:
        report = verify(world.store)
        assert [(f.kind, str(f.subject)) for f in report.findings] == [("altered", str(failing))]
    finally:
        world.store.write([severity], remove=[edited])
    assert verify(world.store).ok
    world.store.clear(failing)
    try:
        report = verify(world.store)
        assert not report.ok and any(str(failing) in str(f) for f in report.findings)
    finally:
        world.store.write(quads)
    assert verify(world.store).ok


def test_a_definition_is_recorded_once_per_version_in_a_sealed_graph_of_its_own(
    world: World, recorded: tuple[IRI, IRI]
) -> None:
    failing, _ = recorded
    controls = load_controls(EXAMPLE)
    defined = [definition_graph(world.recorder.minter, c) for c in controls]
    described = "SELECT ?c $g WHERE { GRAPH $g { ?c a <https://w3id.org/trails/ns#Control> } }"
    for c, g in zip(controls, defined, strict=True):
        [row] = world.store.query(described, {"g": g})  # type: ignore[misc]
        assert str(row["c"]) == str(control_iri(world.recorder.minter, c))
        assert_conforms(world.store, graph=g)
    # the findings graph names the definitions, it does not restate them
    assert not list(world.store.query(described, {"g": failing}))  # type: ignore[arg-type]
    before = set(world.store.graphs())
    again = record_evaluation(
        world.recorder, evaluate_session(world.store, world.clean, controls), by=AUDITOR
    )
    assert again is not None
    assert set(world.store.graphs()) - before == {again}  # one findings graph, no definition
    quads = {g: _quads(world, g) for g in defined}
    assert verify(world.store).ok
    severity = next(q for q in quads[defined[0]] if str(q.predicate).endswith("#severity"))
    edited = severity._replace(object=Literal("info"))
    world.store.write([edited], remove=[severity])
    try:
        report = verify(world.store)
        assert [(f.kind, str(f.subject)) for f in report.findings] == [("altered", str(defined[0]))]
    finally:
        world.store.write([severity], remove=[edited])
    world.store.clear(defined[1])
    try:
        report = verify(world.store)
        assert not report.ok and any(str(defined[1]) in str(f) for f in report.findings)
    finally:
        world.store.write(quads[defined[1]])
    assert verify(world.store).ok
    assert {r.graph for r in recorded_results(world.store, "failed-call")} >= {
        str(failing),
        str(again),
    }


QUIET = 'id = "quiet"\ntitle = "Never wrong"\nseverity = "info"\nscope = "session"\ncheck = "quiet.rq"\n'
QUIET_RQ = "SELECT ?session ?subject WHERE { ?session ?p ?subject FILTER(false) }\n"


def test_the_controls_that_passed_share_one_activity(
    world: World, recorded: tuple[IRI, IRI], tmp_path: Path
) -> None:
    (tmp_path / "quiet.toml").write_text(QUIET)
    (tmp_path / "quiet.rq").write_text(QUIET_RQ)
    controls = [c for c in load_controls(EXAMPLE) if c.id == "failed-call"]
    controls += load_controls(tmp_path)
    evaluation = evaluate_session(world.store, world.clean, controls)
    assert [o.status for o in evaluation.outcomes] == ["passed", "passed"]
    graph = record_evaluation(world.recorder, evaluation, by=AUDITOR)
    assert graph is not None
    used = world.store.query(
        "PREFIX prov: <http://www.w3.org/ns/prov#> SELECT ?a ?c $g WHERE { GRAPH $g { "
        "?a a <https://w3id.org/trails/ns#ControlEvaluation> ; prov:used ?c } }",
        {"g": graph},
    )
    assert isinstance(used, Solutions)
    pairs = [(str(r["a"]), str(r["c"])) for r in used]
    assert len({a for a, _ in pairs}) == 1  # one activity for both passes
    assert sorted(c for _, c in pairs) == sorted(
        str(control_iri(world.recorder.minter, c)) for c in controls
    )
    mine = {r.control: r for r in recorded_results(world.store) if r.graph == str(graph)}
    assert {k: (r.outcome, r.findings, r.session) for k, r in mine.items()} == {
        c.id: ("passed", 0, world.clean) for c in controls
    }
    assert_conforms(world.store, graph=graph)
    assert_prov_constraints(world.store, graph=graph)
    assert verify(world.store).ok


def test_a_definition_edited_after_it_ran_is_named(
    world: World, recorded: tuple[IRI, IRI], tmp_path: Path
) -> None:
    controls = load_controls(EXAMPLE)
    assert definition_changes(world.store, controls) == []
    folder = tmp_path / "edited"
    folder.mkdir()
    for p in EXAMPLE.iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    rq = folder / "failed-call.rq"
    rq.write_text(rq.read_text().replace('"the call failed"', '"no failure"'))
    edited = load_controls(folder)
    [(cid, before, after)] = definition_changes(world.store, edited)
    assert cid == "failed-call" and before == controls[0].digest and after != before


def test_the_pack_lists_findings_by_control_and_session(
    world: World, recorded: tuple[IRI, IRI]
) -> None:
    rows = list(
        get_query("control-findings").run(world.store, session=IRI(world.failing))  # type: ignore[arg-type]
    )
    by_control = {str(r["control"].value): r for r in rows}  # type: ignore[union-attr]
    assert set(by_control) == {"failed-call", "labelled-session"}
    failed = by_control["failed-call"]
    assert str(failed["outcome"].value) == "violated"  # type: ignore[union-attr]
    assert str(failed["message"].value) == "the call failed"  # type: ignore[union-attr]
    assert "finding" not in by_control["labelled-session"]  # passed: a row, no finding
    only = list(get_query("control-findings").run(world.store, control="unsealed-session"))
    assert [str(r["outcome"].value) for r in only] == ["passed"]  # type: ignore[union-attr]


def test_findings_show_in_the_report_and_travel_in_bundles(
    world: World, recorded: tuple[IRI, IRI], tmp_path: Path
) -> None:
    failing, _ = recorded
    html = render_report(world.store, world.failing)
    assert "<h2>Controls</h2>" in html and "the call failed" in html
    path = tmp_path / "b.zip"
    write_bundle(world.store, path, [IRI(world.failing)])
    with zipfile.ZipFile(path) as z:
        bundled = "".join(z.read(n).decode() for n in z.namelist() if n.startswith("sessions/"))
    assert str(failing) in bundled
    # the definitions its evaluations used travel with it
    assert str(definition_graph(world.recorder.minter, load_controls(EXAMPLE)[0])) in bundled
    report = verify_bundle(path)
    assert not report.findings, report.findings


def test_a_forged_unsealed_findings_graph_stands_for_no_recorded_run(
    world: World, recorded: tuple[IRI, IRI], tmp_path: Path
) -> None:
    """A findings graph and the definition it names copied under new names with the edited
    control's digest and a later date (no seal names them) neither hide the edit nor show as
    a recorded run."""
    from trails.evidence.seal import ledger_iri

    failing, _ = recorded
    ledger = ledger_iri(world.recorder.minter)
    folder = tmp_path / "edited"
    folder.mkdir()
    for p in EXAMPLE.iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    rq = folder / "failed-call.rq"
    rq.write_text(rq.read_text().replace('"the call failed"', '"no failure"'))
    edited = load_controls(folder)
    before = load_controls(EXAMPLE)[0].digest
    forged = IRI(str(failing) + "-forged")
    minter = world.recorder.minter
    defined = definition_graph(minter, load_controls(EXAMPLE)[0])
    forged_definition = IRI(str(defined) + "-forged")
    old_iri = str(control_iri(minter, load_controls(EXAMPLE)[0]))
    new_iri = str(control_iri(minter, edited[0]))

    def forge(term: Any) -> Any:
        if isinstance(term, Literal) and term.value == before:
            return Literal(edited[0].digest)
        return IRI(new_iri) if str(term) == old_iri else term

    copy = []
    for q in _quads(world, failing):
        o = forge(q.object)
        if str(q.predicate).endswith("#endedAtTime"):
            o = Literal("2999-01-01T00:00:00Z", datatype=o.datatype)
        copy.append(Quad(forge(q.subject), q.predicate, o, forged))
    for q in _quads(world, defined):  # the definition it names, forged beside it
        copy.append(Quad(forge(q.subject), q.predicate, forge(q.object), forged_definition))
    world.store.write(copy)
    try:
        # read naively (no ledger), the forgery is the newest run and hides the edit
        assert definition_changes(world.store, edited) == []
        # read as trails reads it (sealed runs only), the edit is named and the forgery absent
        [(cid, _, after)] = definition_changes(world.store, edited, ledger=ledger)
        assert cid == "failed-call" and after == edited[0].digest
        graphs = {r.graph for r in recorded_results(world.store, ledger=ledger)}
        assert str(failing) in graphs and str(forged) not in graphs
        assert str(forged) in {r.graph for r in recorded_results(world.store)}
    finally:
        world.store.clear(forged)
        world.store.clear(forged_definition)
