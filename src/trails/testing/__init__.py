"""Test support for trails and for applications built on it.

``assert_conforms`` and ``assert_prov_readable`` check that recorded
provenance satisfies ``ontologies/shapes.ttl`` and is read correctly by the
``prov`` package; ``record_sample_session`` records one session holding every
kind of event, for tests of anything that reads provenance. See
``trails.testing.conformance``. ``ReplayLLM`` and ``rerun`` turn a persisted
session into a regression test (``trails.testing.replay``,
``trails.testing.rerun``; the pytest plugin is ``trails.testing.pytest_plugin``).
"""

from __future__ import annotations

from trails.testing.conformance import (
    ProvSummary,
    assert_conforms,
    assert_prov_readable,
    ontology_dir,
    prov_document,
    record_sample_session,
    shacl_report,
    shapes_graph,
)
from trails.testing.prov_constraints import (
    Violation,
    assert_prov_constraints,
    prov_constraint_violations,
)
from trails.testing.replay import ReplayLLM
from trails.testing.rerun import Activity, Divergence, RerunReport, compare, rerun, trajectory

__all__ = [
    "Activity",
    "Divergence",
    "ProvSummary",
    "ReplayLLM",
    "RerunReport",
    "Violation",
    "assert_conforms",
    "assert_prov_constraints",
    "assert_prov_readable",
    "compare",
    "ontology_dir",
    "prov_constraint_violations",
    "prov_document",
    "record_sample_session",
    "rerun",
    "shacl_report",
    "shapes_graph",
    "trajectory",
]
