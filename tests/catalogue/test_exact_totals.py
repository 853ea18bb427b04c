"""Catalogue totals are exact and kept up to date as sessions end.

Costs are summed in ``Decimal`` from each cost's lexical form and stored as
``xsd:decimal``, so the order completions are read in never changes a total: a
rebuild reproduces every entry bit for bit, and the daily and running totals
(SPARQL ``SUM`` over decimals) equal the sums over the full session graphs
exactly. The sealer totals the days that are over as sessions end, so a store
answers the cost queries from its totals without ``trails catalogue rollup``.
"""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from trails.catalogue.days import keep_through
from trails.catalogue.entries import catalogue_iri, entry_iri, rebuild
from trails.catalogue.totals import keep_up
from trails.prov import Recorder
from trails.prov.events import LLMCompleted, SessionEnded, SessionStarted
from trails.prov.iri import Minter
from trails.store import Store
from trails.store.terms import to_python

from .test_catalogue import _rows

CATALOGUE = catalogue_iri(Minter())
COSTS = ("0.0008", "0.004", "0.0025", "0.0001", "0.0003")
MODELS = ("claude-haiku", "gpt-4o")
PRINCIPALS = ("did:local:alice", "did:local:bob")


def _session(recorder: Recorder, n: int, day: date, costs: tuple[str, ...]) -> str:
    """One session ended on ``day``, a completion per cost (in the order given)."""
    principal = PRINCIPALS[n % 2]
    start = datetime(day.year, day.month, day.day, 9, tzinfo=UTC) + timedelta(seconds=n)
    session = recorder.minter.session(f"exact-{n}")
    recorder.record(SessionStarted(session=session, principal=principal, started=start))
    for i, usd in enumerate(costs):
        at = start + timedelta(milliseconds=10 * (i + 1))
        recorder.record(
            LLMCompleted(
                session=session,
                activity=recorder.minter.activity(),
                parent=None,
                principal=principal,
                provider="mock",
                model=MODELS[(n + i) % 2],
                started=at,
                ended=at + timedelta(milliseconds=5),
                messages=[{"role": "user", "content": f"prompt {n}.{i}"}],
                request_hash=f"h-{n}-{i}",
                text="ok",
                input_tokens=10,
                output_tokens=2,
                usd=float(usd),
            )
        )
    recorder.record(SessionEnded(session=session, ended=start + timedelta(seconds=1)))
    return str(session)


def _record(store: Store) -> dict[str, list[str]]:
    """Sessions on three March 2025 days, each with the costs in another order."""
    recorder = Recorder.from_settings(store=store)
    orders = [*itertools.permutations(COSTS[:3]), COSTS, COSTS[::-1]]
    made: dict[str, list[str]] = {}
    for n, costs in enumerate(orders * 2):
        day = date(2025, 3, 1 + n % 3)
        made[_session(recorder, n, day, costs)] = list(costs)
    return made


def _graph_costs(store: Store) -> list[tuple[str, str, str, Any]]:
    """(session, model, principal, cost text) of every completion, from the session graphs."""
    rows = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> PREFIX prov: <http://www.w3.org/ns/prov#> "
        "SELECT ?g ?model ?principal ?usd WHERE { GRAPH ?g { ?g a trails:Session . "
        "?c a trails:LLMCompletion ; trails:costUSD ?usd ; prov:wasAssociatedWith ?model , ?principal ."
        " ?model a trails:Model . ?principal a trails:Principal } }"
    )
    return [(str(r["g"]), str(r["model"]), str(r["principal"]), r["usd"]) for r in rows]  # type: ignore[union-attr]


def _entry_cost(store: Store, session: str) -> Any:
    rows = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> "
        "SELECT ?usd $g $e WHERE { GRAPH $g { $e trails:totalCostUSD ?usd } }",
        {"g": CATALOGUE, "e": entry_iri(session)},
    )
    [row] = list(rows)  # type: ignore[arg-type]
    return row["usd"]


def _entries(store: Store) -> set[tuple[str, str, str]]:
    rows = store.query("SELECT ?s ?p ?o $g WHERE { GRAPH $g { ?s ?p ?o } }", {"g": CATALOGUE})
    # the entries and their usage nodes (the days' totals are derived from them)
    return {
        (str(r["s"]), str(r["p"]), str(r["o"]))
        for r in rows  # type: ignore[union-attr]
        if ":summary" in str(r["s"])
    }


def test_entries_sum_costs_exactly_in_any_order_and_rebuild_reproduces_them(
    store: Store,
) -> None:
    made = _record(store)
    for session, costs in made.items():
        stored = _entry_cost(store, session)
        assert stored.datatype.endswith("#decimal")
        assert Decimal(stored.value) == sum(map(Decimal, costs)), session
    # every permutation of the same three costs gives the same lexical total
    totals = {_entry_cost(store, s).value for s, c in made.items() if len(c) == 3}
    assert totals == {"0.0073"}
    before = _entries(store)
    # a rebuild writes one session a day (the write that removes that day's totals); every
    # other entry it recomputes is the stored one, bit for bit: nothing to write
    assert len(rebuild(store)) == 3
    assert _entries(store) == before  # every entry recomputed from its graph is the one stored


def test_sessions_that_end_total_the_days_over_and_answers_equal_the_graphs(
    store: Store,
) -> None:
    _record(store)
    # no rollup was run: the days are over (the clock is now), so the sealer totalled them
    days = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> "
        "SELECT ?date $g WHERE { GRAPH $g { ?d trails:totalledAt ?at ; trails:day ?date } }",
        {"g": CATALOGUE},
    )
    assert {str(r["date"].value) for r in days} == {  # type: ignore[union-attr]
        "2025-03-01",
        "2025-03-02",
        "2025-03-03",
    }
    running = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> "
        "SELECT ?through $g WHERE { GRAPH $g { $g trails:runningThrough ?through } }",
        {"g": CATALOGUE},
    )
    assert [str(r["through"].value) for r in running] == ["2025-03-03"]  # type: ignore[union-attr]
    by_model: dict[str, Decimal] = {}
    by_principal: dict[str, Decimal] = {}
    for _, model, principal, usd in _graph_costs(store):
        by_model[model] = by_model.get(model, Decimal(0)) + Decimal(usd.value)
        by_principal[principal] = by_principal.get(principal, Decimal(0)) + Decimal(usd.value)
    assert by_model and by_principal
    # the totals the queries read equal the full-graph sums exactly (no approx)
    model_rows = {str(r["model"]): to_python(r["costUSD"]) for r in _rows(store, "cost-by-model")}
    assert model_rows == by_model
    principal_rows = {
        str(r["principal"]): to_python(r["costUSD"]) for r in _rows(store, "cost-by-principal")
    }
    assert principal_rows == by_principal


def test_keep_up_totals_a_few_days_at_a_time_and_then_only_compares_dates(
    store: Store,
) -> None:
    recorder = Recorder.from_settings(store=store)
    keep_through(store, CATALOGUE, date(2100, 1, 1))  # as if this process had looked
    for n in range(10):
        _session(recorder, n, date(2025, 4, 1) + timedelta(days=n), COSTS[:1])
    assert keep_up(store) is None  # known: no read at all
    keep_through(store, CATALOGUE, None)
    now = datetime(2025, 5, 1, tzinfo=UTC)
    first = keep_up(store, now=now, limit=7)
    assert first is not None and len(first.totalled) == 7 and len(first.left) == 3
    assert first.running_through == date(2025, 4, 7)
    second = keep_up(store, now=now, limit=7)  # some were left: it looks again
    assert second is not None and [d.day for d in second.totalled] == [8, 9, 10]
    assert second.running_through == date(2025, 4, 10)
    assert keep_up(store, now=now, limit=7) is None  # all totalled through the newest day over
