"""The Article 12 map's queries (docs/compliance.md), each with known answers on the fixture."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from tests.known_store import Fixture

from trails.audit.querypack import get_query
from trails.kernel import Context, capability, invoke
from trails.prov import SessionEnded, SessionStarted
from trails.store import IRI, to_python


def rows(fx: Fixture, name: str, **params: object) -> list[dict[str, object]]:
    return [
        {k: to_python(v) for k, v in r.items()} for r in get_query(name).run(fx.store, **params)
    ]


def _add_accidents(fx: Fixture, status: str = "error") -> IRI:
    """Session E (dave, 2025-03-05): a side-effecting wire transfer fails; it ends ``status``."""

    @capability(id="wire", description="Wire money", side_effects=True)
    def wire(amount: float) -> str:
        raise RuntimeError("bank refused the transfer")

    session = fx.recorder.minter.session("session-E")
    fx.clock.set(datetime(2025, 3, 5, 9, 0, tzinfo=UTC))
    fx.recorder.record(
        SessionStarted(session=session, principal="did:local:dave", started=fx.clock())
    )
    ctx = Context(principal="did:local:dave", session=session, recorder=fx.recorder, parent=session)
    with pytest.raises(Exception, match="bank refused"):
        invoke("wire", {"amount": 100.0}, ctx=ctx)
    fx.recorder.record(SessionEnded(session=session, ended=fx.clock(), status=status))
    return session


def test_risk_situations(fx: Fixture) -> None:
    e = _add_accidents(fx)
    found = [(r["session"], r["kind"], r.get("detail")) for r in rows(fx, "risk-situations")]
    assert found == [
        (fx.sessions["A"], "policy-denial", "payments need a human"),
        (fx.sessions["B"], "termination", "max_cost"),
        (fx.sessions["C"], "termination", "max_steps"),
        (fx.sessions["D"], "termination", "ModelAPIError: 503"),
        (e, "side-effect-failed", "RuntimeError: bank refused the transfer"),
    ]
    # the memory C used was learned with confidence 0.9: low under a 0.95 threshold only
    low = [
        r
        for r in rows(fx, "risk-situations", below=Decimal("0.95"))
        if r["kind"] == "low-confidence-memory"
    ]
    assert [(r["session"], str(fx.memory) in str(r["detail"])) for r in low] == [
        (fx.sessions["C"], True)
    ]


@pytest.mark.allow_nonconforming  # "interrupted" is recovery's status; its shape comes with it
def test_an_interrupted_session_is_a_risk_situation(fx: Fixture) -> None:
    e = _add_accidents(fx, status="interrupted")
    found = [(r["session"], r["kind"]) for r in rows(fx, "risk-situations") if r["session"] == e]
    assert found == [(e, "side-effect-failed"), (e, "interrupted")]


def test_operations_by_day_and_model(fx: Fixture) -> None:
    found = [
        (
            r["day"],
            r["model"],
            r["completions"],
            r["failures"],
            r["sessions"],
            r["costUSD"],
            r["unpriced"],
        )
        for r in rows(fx, "operations-by-day")
    ]
    assert found == [
        # exact sums (each cost read as a decimal): the same whatever order rows come in
        ("2025-03-01", "claude-haiku", 1, 0, 1, Decimal("0.005"), 0),
        ("2025-03-01", "claude-sonnet", 3, 0, 1, Decimal("0.06"), 0),
        ("2025-03-02", "gpt-4o", 2, 0, 1, Decimal("0.5"), 1),
        ("2025-03-03", "claude-sonnet", 1, 0, 1, Decimal("0.04"), 0),
    ]
    later = rows(fx, "operations-by-day", since=datetime(2025, 3, 2, tzinfo=UTC))
    assert [r["day"] for r in later] == ["2025-03-02", "2025-03-03"]


def test_the_article_12_map_names_only_pack_queries() -> None:
    """Every query docs/compliance.md cites for an obligation exists in the pack."""
    import re
    from pathlib import Path

    from trails.audit.querypack import load_pack

    text = (Path(__file__).parents[2] / "docs" / "compliance.md").read_text()
    section = text.split("## The Article 12 map", 1)[1]
    rows = [line.split("|") for line in section.splitlines() if line.startswith("| Art.")]
    cited = {name for cells in rows for name in re.findall(r"`([a-z0-9-]+)`", cells[4])}
    assert len(rows) == 9 and {"risk-situations", "operations-by-day", "legal-holds"} <= cited
    assert "retention-runs" in cited
    assert cited <= set(load_pack()), cited - set(load_pack())


def test_session_overview_per_session(fx: Fixture) -> None:
    """Art. 12(2)(c): one session at a glance, one row per plan run."""
    (b,) = rows(fx, "session-overview", session=fx.sessions["B"])
    assert (str(b["principal"]), b["status"], b["domain"], b["assuranceLevel"]) == (
        "did:local:bob",
        "error",
        "health",
        "L1",
    )
    assert (b["strategy"], b["goal"], b["stopReason"], b.get("answer")) == (
        "plan_and_execute",
        "triage the inbox",
        "max_cost",
        None,
    )
    assert b["started"] == datetime(2025, 3, 2, 10, 0, tzinfo=UTC) and b["run"] == fx.runs["B"]
    (a,) = rows(fx, "session-overview", session=fx.sessions["A"])
    assert (a["strategy"], a["stopReason"], a["answer"]) == (
        "react",
        "goal_achieved",
        "the summary was sent",
    )
    # D never ended: no end, no status; its run stopped on an error
    (d,) = rows(fx, "session-overview", session=fx.sessions["D"])
    assert "ended" not in d and "status" not in d and d["stopReason"] == "error"


def test_every_query_the_map_cites_is_tested_with_known_answers() -> None:
    """Each pack query docs/compliance.md cites is run and its answers asserted in a test of
    the rooms that answer it (tests/audit, tests/evidence, tests/compliance, tests/catalogue;
    by name, through ``rows(..., "name"`` or ``get_query("name")``)."""
    import re
    from pathlib import Path

    root = Path(__file__).parents[2]
    section = (root / "docs" / "compliance.md").read_text().split("## The Article 12 map", 1)[1]
    cited = {
        name
        for line in section.splitlines()
        if line.startswith("| Art.")
        for name in re.findall(r"`([a-z0-9-]+)`", line.split("|")[4])
    }
    rooms = ("audit", "evidence", "compliance", "catalogue")
    tests = "\n".join(
        p.read_text() for room in rooms for p in (root / "tests" / room).glob("test_*.py")
    )
    untested = {
        name
        for name in cited
        if not re.search(rf'(rows\([^)]*|get_query\()\s*"{re.escape(name)}"', tests)
    }
    assert not untested, untested
