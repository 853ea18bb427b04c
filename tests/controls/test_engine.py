"""The engine: control files loaded or refused before anything runs, evaluated per session
and over the store with bound parameters, a time-out never reported as passed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.controls.conftest import EXAMPLE, World

from trails.controls import (
    ControlError,
    builtin_controls,
    evaluate_session,
    evaluate_store,
    load_controls,
)
from trails.controls.model import builtin_dir


def test_the_example_set_loads_with_digests() -> None:
    controls = load_controls(EXAMPLE)
    assert [(c.id, c.kind, c.scope, c.severity) for c in controls] == [
        ("failed-call", "sparql", "session", "medium"),
        ("labelled-session", "shacl", "session", "low"),
        ("unsealed-session", "sparql", "store", "high"),
    ]
    assert all(len(c.digest) == 64 for c in controls)
    assert controls[0].references == ("ISO/IEC 42001 A.6.2.6",)
    assert controls[0].params == {"failed": "error"}


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "set"
    shutil.copytree(EXAMPLE, folder)
    return folder


BAD = [
    ("unsealed-session.rq", "SELECT ?subject WHERE { ?subject ex:p ?o }", "Prefix not found"),
    ("failed-call.rq", "SELECT ?subject WHERE { ?subject ?p ?o }", "does not use ?failed"),
    ("failed-call.rq", "SELECT ?subject WHERE { ?subject ", "failed-call.rq"),
    (
        "failed-call.rq",
        "PREFIX t: <urn:x#> DELETE WHERE { ?s t:p ?o }",
        "must be a SPARQL SELECT",
    ),
    ("failed-call.rq", "ASK { ?s ?p ?o }", "a ASK"),
    ("failed-call.toml", 'id = "failed-call"\ntitle = "t"\n', "severity"),
    ("failed-call.toml", "id = [", "TOML syntax error"),
    ("labelled-session.ttl", "ex:a ex:b ex:c .", 'Prefix "ex:" not bound'),
    # shapes that target nothing validate nothing: every session would pass unevaluated
    ("labelled-session.ttl", "", "declares no shape with a target"),
    ("labelled-session.ttl", "<urn:a> <urn:b> <urn:c> .", "declares no shape with a target"),
    (
        "labelled-session.ttl",
        "@prefix sh: <http://www.w3.org/ns/shacl#> .\n<urn:s> a sh:NodeShape ; sh:closed true .",
        "declares no shape with a target",
    ),
]


@pytest.mark.parametrize(("name", "text", "said"), BAD)
def test_a_bad_file_is_refused_in_one_line(tmp_path: Path, name: str, text: str, said: str) -> None:
    folder = _copy(tmp_path)
    (folder / name).write_text(text)
    with pytest.raises(ControlError) as caught:
        load_controls(folder)
    message = str(caught.value)
    assert said in message and "\n" not in message


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('severity = "urgent"', "severity 'urgent'"),
        ('scope = "fleet"', "scope 'fleet'"),
        ('check = "missing.rq"', "check file 'missing.rq' is missing"),
        ('check = "../failed-call.rq"', "'../failed-call.rq' is a path, not a file name"),
        ('check = "/etc/hostname"', "'/etc/hostname' is a path, not a file name"),
    ],
)
def test_bad_fields_are_refused(tmp_path: Path, line: str, said: str) -> None:
    folder = _copy(tmp_path)
    toml = folder / "failed-call.toml"
    key = line.split(" ")[0]
    text = "\n".join(
        line if row.startswith(f"{key} =") else row for row in toml.read_text().splitlines()
    )
    toml.write_text(text)
    with pytest.raises(ControlError, match=said):
        load_controls(folder)


def test_a_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ControlError, match="no such controls directory"):
        load_controls(tmp_path / "nope")


def test_builtin_controls_are_the_top_level_folder() -> None:
    folder = builtin_dir()
    assert folder is not None and folder.name == "controls"
    assert [c.id for c in builtin_controls()] == sorted(p.stem for p in folder.glob("*.toml"))


def test_session_controls_find_the_failed_call_and_pass_the_clean_session(world: World) -> None:
    controls = load_controls(EXAMPLE)
    failing = evaluate_session(world.store, world.failing, controls)
    outcomes = {o.control.id: o for o in failing.outcomes}
    assert set(outcomes) == {"failed-call", "labelled-session"}  # store scope skipped
    assert outcomes["failed-call"].status == "violated"
    [v] = outcomes["failed-call"].violations
    assert v.session == world.failing and v.message == "the call failed"
    assert v.subject is not None and v.subject.startswith("urn:trails:activity:")
    assert outcomes["labelled-session"].status == "passed"  # the sample names its domain
    assert outcomes["failed-call"].graphs == (world.failing, f"{world.failing}:content")

    clean = evaluate_session(world.store, world.clean, controls)
    by_id = {o.control.id: o for o in clean.outcomes}
    assert by_id["failed-call"].status == "passed"
    # SHACL: the clean session names no domain, so the shape's result is the violation
    [shacl] = by_id["labelled-session"].violations
    assert shacl.subject == world.clean and shacl.message == "the session names no domain"


def test_a_shape_compares_a_string_value_as_written_in_turtle(world: World, tmp_path: Path) -> None:
    """A string the store holds (``"testing"``, an ``xsd:string``) equals the ``"testing"``
    a shape writes: the data reaches pyshacl as rdflib's own parsers give it."""
    (tmp_path / "domain.ttl").write_text(
        "@prefix sh: <http://www.w3.org/ns/shacl#> .\n"
        "@prefix trails: <https://w3id.org/trails/ns#> .\n"
        "[] a sh:NodeShape ; sh:targetClass trails:Session ;\n"
        '    sh:property [ sh:path trails:domain ; sh:hasValue "testing" ] .\n'
    )
    (tmp_path / "domain.toml").write_text(
        'id = "domain"\ntitle = "Sessions of the testing domain"\nseverity = "low"\n'
        'scope = "session"\nshapes = "domain.ttl"\n'
    )
    [outcome] = evaluate_session(world.store, world.failing, load_controls(tmp_path)).outcomes
    assert outcome.status == "passed", outcome.violations
    [other] = evaluate_session(world.store, world.clean, load_controls(tmp_path)).outcomes
    assert other.status == "violated"  # the clean session names no domain


def test_the_session_is_a_bound_parameter_not_text(world: World) -> None:
    controls = [c for c in load_controls(EXAMPLE) if c.id == "failed-call"]
    hostile = world.failing + "> } UNION { ?subject ?p ?o"
    with pytest.raises(ValueError):
        evaluate_session(world.store, hostile, controls)
    # another session's rows never leak: the clean session sees none of the failing one's
    assert evaluate_session(world.store, world.clean, controls).violations == []


def test_store_controls_run_over_everything(world: World) -> None:
    evaluation = evaluate_store(world.store, load_controls(EXAMPLE))
    [outcome] = evaluation.outcomes
    assert outcome.control.id == "unsealed-session" and outcome.status == "passed"


def test_a_control_past_its_time_is_timed_out_never_passed(world: World, tmp_path: Path) -> None:
    folder = tmp_path / "slow"
    folder.mkdir()
    (folder / "slow.toml").write_text(
        'id = "slow"\ntitle = "slow"\nseverity = "info"\nscope = "store"\ncheck = "slow.rq"\n'
    )
    # the store's quads times themselves: tens of milliseconds of work, no row
    (folder / "slow.rq").write_text(
        "SELECT ?subject WHERE { GRAPH ?g { ?subject ?p ?o } GRAPH ?h { ?a ?b ?c } "
        "FILTER(STRLEN(CONCAT(STR(?o), STR(?c))) < 0) }"
    )
    evaluation = evaluate_store(world.store, load_controls(folder), timeout=0.001)
    [outcome] = evaluation.outcomes
    assert outcome.status == "timed out" and outcome.failed
    assert evaluation.failing("critical") == [outcome]  # counted whatever the level


def test_a_batch_runs_on_past_a_control_that_timed_out(world: World, tmp_path: Path) -> None:
    """The controls of one evaluation share a worker: one past its limit is timed out,
    the ones before and after it still run and keep their order."""
    folder = tmp_path / "batch"
    folder.mkdir()
    for name, query in [
        ("a-quick", "SELECT ?subject WHERE { FILTER(false) }"),
        (
            "b-slow",
            # every pair of the store's quads hashed: a fraction of a second, no row
            "SELECT ?subject WHERE { GRAPH ?g { ?subject ?p ?o } GRAPH ?h { ?a ?b ?c } "
            "FILTER(STRLEN(SHA256(CONCAT(STR(?o), STR(?c)))) < 0) }",
        ),
        ("c-quick", "SELECT ?subject WHERE { FILTER(false) }"),
        ("d-finds", "SELECT ?subject WHERE { BIND(<urn:x:at-fault> AS ?subject) }"),
    ]:
        (folder / f"{name}.toml").write_text(
            f'id = "{name}"\ntitle = "{name}"\nseverity = "low"\nscope = "store"\n'
            f'check = "{name}.rq"\n'
        )
        (folder / f"{name}.rq").write_text(query)
    evaluation = evaluate_store(world.store, load_controls(folder), timeout=0.05)
    assert [(o.control.id, o.status) for o in evaluation.outcomes] == [
        ("a-quick", "passed"),
        ("b-slow", "timed out"),
        ("c-quick", "passed"),
        ("d-finds", "violated"),
    ]
    assert evaluation.outcomes[3].violations[0].subject == "urn:x:at-fault"
    # without a limit the slow one runs to its end and passes
    unlimited = evaluate_store(world.store, load_controls(folder)[1:2], timeout=None)
    assert [o.status for o in unlimited.outcomes] == ["passed"]
