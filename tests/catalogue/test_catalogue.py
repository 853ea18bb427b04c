"""The session catalogue: one summary per session, written with its start and its end and seal.

Known values from the audit fixture (``tests/known_store.py``), the pack's
catalogue queries against the same questions asked of the full session graphs,
paging and filters of ``trails sessions``, and the rebuild of stores recorded
without the sealer.
"""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from tests.known_store import ALICE, BOB, CAROL, Fixture, build, late_completion

from trails.audit.querypack import get_query, parse_query
from trails.catalogue.entries import catalogue_iri, entry_iri, has_entries, rebuild
from trails.prov.iri import Minter
from trails.prov.vocab import T
from trails.store import Store
from trails.store.terms import to_python

FULL = Path(__file__).with_name("full_graph_queries")


def _rows(store: Store, name: str, **values: Any) -> list[dict[str, Any]]:
    return [
        {k: to_python(v) for k, v in row.items()} for row in get_query(name).run(store, **values)
    ]


def _full(store: Store, name: str, **values: Any) -> list[dict[str, Any]]:
    query = parse_query((FULL / f"{name}.rq").read_text(), name=name)
    return [{k: to_python(v) for k, v in row.items()} for row in query.run(store, **values)]


def _entry(store: Store, session: str) -> dict[str, list[Any]]:
    rows = store.query(
        "SELECT ?p ?o $g $e WHERE { GRAPH $g { $e ?p ?o } }",
        {"g": catalogue_iri(Minter()), "e": entry_iri(session)},
    )
    found: dict[str, list[Any]] = {}
    for row in rows:  # type: ignore[union-attr]
        found.setdefault(str(row["p"]).rsplit("#", 1)[-1], []).append(to_python(row["o"]))
    return found


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys()
        for k in x:
            if isinstance(x[k], float | Decimal):  # the full graphs sum doubles
                assert float(x[k]) == pytest.approx(float(y[k])), k
            else:
                assert x[k] == y[k], k


def test_entries_hold_known_values(fx: Fixture) -> None:
    a = _entry(fx.store, fx.sessions["A"])
    assert a["summaryOf"] == [fx.sessions["A"]]
    assert a["wasAttributedTo"] == [ALICE]
    assert a["sessionStatus"] == ["ok"] and a["sessionStopReason"] == ["goal_achieved"]
    assert a["planner"] == ["react"] and a["sealed"] == [True]
    assert a["completionCount"] == [4] and a["unpricedCount"] == [0]
    assert a["totalCostUSD"] == [Decimal("0.065")]  # 0.01 + 0.02 + 0.03 + 0.005, exactly
    assert a["totalInputTokens"] and a["totalOutputTokens"]
    assert sorted(map(str, a["usedModel"])) == [
        "urn:trails:model:anthropic:claude-haiku",
        "urn:trails:model:anthropic:claude-sonnet",
    ]
    b = _entry(fx.store, fx.sessions["B"])
    assert b["sessionStatus"] == ["error"] and b["sessionStopReason"] == ["max_cost"]
    assert b["planner"] == ["plan_and_execute"]
    assert b["completionCount"] == [2] and b["unpricedCount"] == [1]
    assert b["totalCostUSD"] == [Decimal("0.5")]
    c = _entry(fx.store, fx.sessions["C"])
    assert c["sessionStopReason"] == ["max_steps"] and c["totalCostUSD"] == [Decimal("0.04")]
    d = _entry(fx.store, fx.sessions["D"])  # never ended: only its start
    assert d["wasAttributedTo"] == [CAROL] and "sessionEnded" not in d and "sealed" not in d


def test_catalogue_answers_equal_the_full_graph_answers(fx: Fixture) -> None:
    for name in ("cost-by-model", "cost-by-principal", "agents"):
        _same(_rows(fx.store, name), _full(fx.store, name))
    full = _full(fx.store, "sessions")
    mine = _rows(fx.store, "sessions")
    assert [r["session"] for r in mine] == [r["session"] for r in full]
    for x, y in zip(mine, full, strict=True):
        for k in ("principal", "label", "started", "ended", "endStatus"):
            assert x.get(k) == y.get(k), k
        if "ended" in x:
            assert x["activities"] == y["activities"]
    # the catalogue selects sessions by their start: a range no session straddles agrees
    when = {"since": "2025-03-02T00:00:00Z", "until": "2025-03-04T00:00:00Z"}
    for name in ("cost-by-model", "cost-by-principal"):
        _same(_rows(fx.store, name, **when), _full(fx.store, name, **when))
    _same(
        _rows(fx.store, "cost-by-principal", principal=ALICE),
        _full(fx.store, "cost-by-principal", principal=ALICE),
    )
    _same(
        _rows(fx.store, "agents", session=fx.sessions["A"]),
        _full(fx.store, "agents", session=fx.sessions["A"]),
    )


def test_sessions_filters_keep_the_pack_semantics(fx: Fixture) -> None:
    for values in (
        {"principal": ALICE},
        {"status": "error"},
        {"since": "2025-03-02T00:00:00Z"},
        {"until": "2025-03-03T00:00:00Z"},
        {"principal": BOB, "status": "ok"},
    ):
        mine = [r["session"] for r in _rows(fx.store, "sessions", **values)]
        assert mine == [r["session"] for r in _full(fx.store, "sessions", **values)], values


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from trails.cli import main

    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_sessions_command_pages_newest_first(
    fx: Fixture, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _cli(capsys, "sessions", "--limit", "2", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert status == 0 and [r["session"] for r in rows] == [fx.sessions["D"], fx.sessions["C"]]
    assert rows[1]["planner"] == "reflexion" and rows[1]["stopReason"] == "max_steps"
    assert rows[1]["sealed"] == "true" and float(rows[1]["costUSD"]) == pytest.approx(0.04)
    status, out, _ = _cli(capsys, "sessions", "--all", "--format", "csv")
    assert len(list(csv.DictReader(io.StringIO(out)))) == 4
    status, out, _ = _cli(
        capsys, "sessions", "--format", "csv", "--principal", ALICE, "--limit", "1"
    )
    assert [r["session"] for r in csv.DictReader(io.StringIO(out))] == [fx.sessions["C"]]
    for bad, says in (
        (("--limit", "0"), "at least 1"),
        (("--limit", "2", "--all"), "not allowed with"),
    ):
        with pytest.raises(SystemExit) as exc:
            _cli(capsys, "sessions", *bad)
        assert exc.value.code == 2 and says in capsys.readouterr().err


def test_rebuild_backfills_a_store_recorded_without_the_sealer(
    store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fx = build(store, monkeypatch, seal=False)
    assert has_entries(store) == (False, True)
    status, out, err = _cli(capsys, "sessions", "--format", "csv")
    assert status == 0 and "trails catalogue rebuild" in err and len(out.strip().splitlines()) == 1
    status, out, _ = _cli(capsys, "catalogue", "rebuild", "--json")
    assert status == 0 and sorted(json.loads(out)) == sorted(fx.sessions.values())
    assert has_entries(store) == (True, True)
    b = _entry(store, fx.sessions["B"])
    assert b["sealed"] == [False] and b["sessionStatus"] == ["error"] and b["unpricedCount"] == [1]
    for name in ("cost-by-model", "cost-by-principal", "agents"):
        _same(_rows(store, name), _full(store, name))
    # a second rebuild reproduces every entry exactly (nothing to write), never doubles;
    # --missing finds nothing to do
    assert rebuild(store) == [] and _entry(store, fx.sessions["B"]) == b
    status, out, _ = _cli(capsys, "catalogue", "rebuild", "--missing")
    assert status == 0 and "0 catalogue entries written" in out


def test_recovery_and_late_writes_keep_the_entry_current(fx: Fixture) -> None:
    from datetime import timedelta

    from trails.evidence.recovery import recover

    report = recover(fx.recorder, older_than=timedelta(0))
    assert fx.sessions["D"] in report.interrupted
    d = _entry(fx.store, fx.sessions["D"])
    assert d["sessionStatus"] == ["interrupted"] and d["sealed"] == [True] and d["sessionEnded"]
    # a completion written after B ended: B is resealed and its entry rewritten in that write
    fx.recorder.record(late_completion(fx, "B", BOB))
    b = _entry(fx.store, fx.sessions["B"])
    assert b["completionCount"] == [3] and b["totalCostUSD"] == [0.75]
    _same(_rows(fx.store, "cost-by-model"), _full(fx.store, "cost-by-model"))


def test_the_end_adds_to_the_entry_its_start_wrote_without_repeating_it() -> None:
    """A session started here: the write that ends it holds none of the catalogue quads
    its start wrote, and the entry it leaves is the one a rebuild makes."""
    from tests.evidence.test_ledger import Spy

    from trails.kernel import Context, capability, invoke
    from trails.prov import Recorder
    from trails.store.oxigraph import OxigraphStore

    @capability(id="catalogue.echo")
    def echo(x: int) -> int:
        return x

    store = Spy(OxigraphStore(None))
    catalogue = catalogue_iri(Minter())
    with Context.open(ALICE, recorder=Recorder.from_settings(store=store)) as ctx:
        invoke("catalogue.echo", {"x": 1}, ctx=ctx)
        session = ctx.session
    start = {q for q in store.writes[0] if q.graph == catalogue}
    # the end write is the one with the seal (a rollup of the days that are over may follow)
    ending = next(w for w in reversed(store.writes) if any(q.predicate == T.sealedGraph for q in w))
    end = {q for q in ending if q.graph == catalogue}
    assert start and end and not start & end
    entry = _entry(store, session)
    assert entry["sessionStarted"] and entry["sessionEnded"] and entry["sealed"] == [True]
    assert rebuild(store) == [] and _entry(store, session) == entry  # the same, exactly
