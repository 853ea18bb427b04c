"""The same evaluation on the embedded store and on a real SPARQL server (oxigraph serve):
session scoping by dataset, bound parameters, SHACL, sealed findings that verify."""

from __future__ import annotations

from pathlib import Path

from tests.controls.conftest import EXAMPLE, record_clean_session

from trails.config import load_settings
from trails.controls import (
    evaluate_session,
    evaluate_store,
    load_controls,
    record_evaluation,
    recorded_results,
)
from trails.evidence import verify
from trails.prov.recorder import Recorder
from trails.store import Store
from trails.testing.conformance import record_sample_session


def test_controls_on_every_backend(any_store: Store, tmp_path: Path) -> None:
    recorder = Recorder.from_settings(load_settings(environ={}, cwd=tmp_path), store=any_store)
    failing = str(record_sample_session(recorder)["session"])
    clean = record_clean_session(recorder)
    controls = load_controls(EXAMPLE)
    outcomes = {}
    for session in (failing, clean):
        evaluation = evaluate_session(any_store, session, controls)
        outcomes.update({(session, o.control.id): o.status for o in evaluation.outcomes})
        record_evaluation(recorder, evaluation, by="did:example:auditor")
    assert outcomes == {
        (failing, "failed-call"): "violated",
        (failing, "labelled-session"): "passed",
        (clean, "failed-call"): "passed",  # the failing session's call never leaks in
        (clean, "labelled-session"): "violated",
    }
    [store_wide] = evaluate_store(any_store, controls).outcomes
    assert store_wide.status == "passed"
    assert len(recorded_results(any_store)) == 4
    assert verify(any_store).ok
