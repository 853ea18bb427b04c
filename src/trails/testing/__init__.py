"""Test support for trails and for applications built on it.

``assert_conforms`` and ``assert_prov_readable`` check that recorded
provenance satisfies ``ontologies/shapes.ttl`` and is read correctly by the
``prov`` package; ``record_sample_session`` records one session holding every
kind of event, for tests of anything that reads provenance. See
``trails.testing.conformance``.
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

__all__ = [
    "ProvSummary",
    "assert_conforms",
    "assert_prov_readable",
    "ontology_dir",
    "prov_document",
    "record_sample_session",
    "shacl_report",
    "shapes_graph",
]
