"""The HTML report's seal badge says "verified" only when the session's content checks out too."""

from __future__ import annotations

import pytest
from tests.evidence.test_content import replace_text
from tests.known_store import ALICE, Fixture

from trails.audit.report import render_report, report_data
from trails.compliance.erasure import erase
from trails.prov.content import content_graph
from trails.prov.vocab import PROV
from trails.store import IRI, Quad, Solutions


def a_value(fx: Fixture, session: IRI, needle: str) -> Quad:
    """A content quad of ``session`` whose text holds ``needle`` (the first by entity)."""
    rows = fx.store.query(
        "SELECT ?e ?v $g WHERE { GRAPH $g { ?e <http://www.w3.org/ns/prov#value> ?v } }",
        {"g": content_graph(session)},
    )
    assert isinstance(rows, Solutions)
    row = min((r for r in rows if needle in r["v"].value), key=lambda r: str(r["e"]))  # type: ignore[union-attr]
    return Quad(row["e"], PROV.value, row["v"], content_graph(session))  # type: ignore[arg-type]


def test_the_badge_is_verified_when_graph_and_content_match(fx: Fixture) -> None:
    seal = report_data(fx.store, fx.sessions["A"])["seal"]
    assert seal["state"] == "verified"
    assert "content value(s) match their sealed digests" in seal["detail"]


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_altered_content_is_not_verified(fx: Fixture) -> None:
    quad = a_value(fx, fx.sessions["A"], '"to":"cfo@example.com')
    replace_text(fx.store, quad, "cfo@example.com", "ceo@example.com")
    seal = report_data(fx.store, fx.sessions["A"])["seal"]
    assert seal["state"] == "content-altered"
    assert seal["detail"].startswith(f"{quad.subject}: its value hashes to")
    html = render_report(fx.store, fx.sessions["A"])
    assert '<div class="seal s-content-altered">' in html and 'class="badge s-verified"' not in html


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_deleted_content_is_not_verified(fx: Fixture) -> None:
    fx.store.write([], remove=[a_value(fx, fx.sessions["A"], '"to":"cfo@example.com')])
    assert report_data(fx.store, fx.sessions["A"])["seal"]["state"] == "content-missing"


def test_erased_content_is_verified_with_its_receipt(fx: Fixture) -> None:
    receipt = erase(fx.recorder, session=fx.sessions["A"], reason="GDPR art. 17", by=ALICE)
    seal = report_data(fx.store, fx.sessions["A"])["seal"]
    assert seal["state"] == "verified", seal
    assert f"{receipt.erased} removed on record (sealed receipt)" in seal["detail"]
