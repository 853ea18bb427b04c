"""The Controls page's data, read from recorded evaluations on a real store.

A store holds a session that fails a call and a clean one; the example controls are
evaluated on both (and the store-wide one once) and recorded as evidence. The page's
counts (controls x passed / violated / not evaluated), its trend per day, its
drill-down, a scoped reader's view and a session's own controls are read back.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from tests.controls.conftest import EXAMPLE, World, record_clean_session

from trails.config import load_settings
from trails.controls import evaluate_session, evaluate_store, load_controls, record_evaluation
from trails.prov.recorder import Recorder
from trails.server.console.base import ConsoleError
from trails.server.console.controls import overview, parse_period, session_controls
from trails.store import open_store
from trails.store.terms import IRI

BY = "did:example:auditor"
NO_DOMAIN = (
    'id = "no-domain"\ntitle = "A session names no domain"\nseverity = "low"\n'
    'scope = "store"\ncheck = "no-domain.rq"\n'
)
NO_DOMAIN_RQ = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session ?subject ?message WHERE {
  GRAPH ?session { ?session a trails:Session . FILTER NOT EXISTS { ?session trails:domain ?d } }
  BIND(?session AS ?subject) BIND("no domain" AS ?message)
}
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """Both sessions evaluated and recorded; ``failed-call`` left out of the clean one."""
    store = open_store("memory:")
    settings = load_settings(environ={}, cwd=tmp_path_factory.mktemp("cwd"))
    world = World(store, Recorder.from_settings(settings, store=store))
    mine = tmp_path_factory.mktemp("controls")
    (mine / "no-domain.toml").write_text(NO_DOMAIN)
    (mine / "no-domain.rq").write_text(NO_DOMAIN_RQ)
    controls = load_controls(EXAMPLE) + load_controls(mine)  # a store-wide one that names both
    session = [c for c in controls if c.scope == "session"]
    for done in (
        evaluate_session(store, world.failing, session),
        evaluate_session(store, world.clean, [c for c in session if c.id != "failed-call"]),
        evaluate_store(store, controls),
    ):
        record_evaluation(world.recorder, done, by=BY)
    yield world
    store.close()


def test_controls_by_outcome_over_all_sessions(checked: World) -> None:
    seen = overview(checked.store, None)
    assert seen.sessions == 2
    rows = {r.id: r for r in seen.controls}
    failed = rows["failed-call"]
    assert (failed.passed, failed.violated, failed.not_evaluated) == (0, 1, 1)
    assert failed.findings >= 1 and failed.severity == "medium"
    labelled = rows["labelled-session"]
    assert (labelled.violated + labelled.passed, labelled.not_evaluated) == (2, 0)
    store_wide = rows["unsealed-session"]
    assert store_wide.scope == "store" and store_wide.not_evaluated is None
    assert store_wide.passed + store_wide.violated == 1
    # the most violated first
    assert seen.controls[0].violated >= seen.controls[-1].violated
    # findings name the session at fault and its subject
    mine = [f for f in seen.findings if f.control == "failed-call"]
    assert mine and {f.session for f in mine} == {checked.failing}
    assert all(f.subject.startswith("urn:") for f in mine)
    # the trend: per day of session start, passed and violated outcomes
    assert sum(p + v for _, p, v in seen.days) == sum(
        r.passed + r.violated for r in seen.controls if r.scope == "session"
    )
    assert sum(v for _, _, v in seen.days) >= 1


def test_drill_down_and_period(checked: World) -> None:
    one = overview(checked.store, None, control="failed-call")
    assert one.findings and {f.control for f in one.findings} == {"failed-call"}
    assert one.violating == [(checked.failing, len(one.findings))]
    assert [(p, v) for _, p, v in one.days] == [(0, 1)]  # its own trend: one violation
    # a period that holds no session: nothing counted, nothing listed
    empty = overview(checked.store, None, date(1990, 1, 1), date(1990, 1, 31))
    assert empty.sessions == 0 and empty.findings == [] and empty.days == []
    assert all(r.scope == "store" for r in empty.controls)


def test_a_scoped_reader_sees_only_its_sessions(checked: World) -> None:
    clean = overview(checked.store, {checked.clean})
    assert clean.sessions == 1
    assert clean.findings == [f for f in clean.findings if f.session == checked.clean]
    assert all(f.session != checked.failing for f in clean.findings)
    rows = {r.id: r for r in clean.controls}
    assert "unsealed-session" not in rows  # a store-wide outcome is not a scoped reader's
    # failed-call ran on the other session only: nothing of it is this reader's
    assert "failed-call" not in rows
    assert rows["labelled-session"].passed + rows["labelled-session"].violated == 1
    # a store-wide control's findings: only those naming the reader's session
    named = [f for f in clean.findings if f.control == "no-domain"]
    assert [f.session for f in named] == [checked.clean]
    everyone = [f for f in overview(checked.store, None).findings if f.control == "no-domain"]
    assert [f.session for f in everyone] == [checked.clean]  # the sampled one has a domain
    other = overview(checked.store, {checked.failing})
    assert not [f for f in other.findings if f.control == "no-domain"]
    nobody = overview(checked.store, set())
    assert (nobody.sessions, nobody.findings, nobody.days) == (0, [], [])


def test_a_sessions_own_controls(checked: World) -> None:
    rows = session_controls(checked.store, IRI(checked.failing))
    outcomes = {(r["control"], r["outcome"]) for r in rows}
    assert ("failed-call", "violated") in outcomes
    assert all(r["subject"] for r in rows if r["outcome"] == "violated")
    clean = session_controls(checked.store, IRI(checked.clean))
    assert "failed-call" not in {r["control"] for r in clean}
    wide = [r for r in clean if r["control"] == "no-domain"]
    assert [(r["scope"], r["outcome"], r["subject"]) for r in wide] == [
        ("store", "violated", checked.clean)
    ]


@pytest.mark.parametrize(
    ("start", "end", "said"),
    [("2026-13-01", "", "not a date"), ("2026-02-01", "2026-01-01", "ends before")],
)
def test_a_bad_period_is_refused(start: str, end: str, said: str) -> None:
    with pytest.raises(ConsoleError, match=said):
        parse_period(start, end)
    assert parse_period("", "2026-01-31") == (None, date(2026, 1, 31))


QUIET = (
    'id = "quiet"\ntitle = "Nothing is ever wrong"\nseverity = "info"\n'
    'scope = "session"\ncheck = "quiet.rq"\n'
)
QUIET_RQ = """SELECT ?session ?subject ?message WHERE {
  ?session ?p ?o FILTER(false) BIND(?session AS ?subject) BIND("" AS ?message)
}
"""


def test_controls_that_passed_together_each_count(tmp_path: Path) -> None:
    """The controls of one evaluation that passed share one recorded activity: the page and
    a session's own controls still count and list each of them."""
    store = open_store("memory:")
    recorder = Recorder.from_settings(load_settings(environ={}, cwd=tmp_path), store=store)
    session = record_clean_session(recorder)
    (tmp_path / "quiet.toml").write_text(QUIET)
    (tmp_path / "quiet.rq").write_text(QUIET_RQ)
    controls = [c for c in load_controls(EXAMPLE) if c.id == "failed-call"]
    controls += load_controls(tmp_path)
    done = evaluate_session(store, session, controls)
    assert [o.status for o in done.outcomes] == ["passed", "passed"]
    record_evaluation(recorder, done, by=BY)
    rows = {r.id: (r.passed, r.violated, r.not_evaluated) for r in overview(store, None).controls}
    assert rows == {"failed-call": (1, 0, 0), "quiet": (1, 0, 0)}
    listed = session_controls(store, IRI(session))
    assert sorted((r["control"], r["outcome"]) for r in listed) == [
        ("failed-call", "passed"),
        ("quiet", "passed"),
    ]
    store.close()
