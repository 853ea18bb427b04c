"""The console's pages at a cost that does not follow the store: what they read, and that it is right.

The sessions page walks the catalogue's start days and takes every session's totals
from the daily totals (saying what its totals cover); a session's page checks the
grant for that one graph and never waits for a list of the store's graphs; search
reads a full-text index that follows recording (a session is found once it has
ended), erasure (erased words are gone from the index) and grants (a reader finds
only sessions it may read).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from tests.known_store import ALICE, BOB, Fixture, build

from trails.agent import Session
from trails.agent.planners import react
from trails.audit.querypack import get_query
from trails.audit.report import report_data
from trails.audit.search import FILE_NAME, SearchIndex
from trails.compliance.erasure import erase
from trails.llm import LLMClient
from trails.prov.vocab import T
from trails.server import create_app
from trails.server.app import Endpoint
from trails.server.auth import Grant, load_tokens, token_entry
from trails.server.console import pages as console_pages
from trails.server.console import sessions as console_sessions
from trails.server.graphs import GraphCache
from trails.store import IRI, Literal, Quad, Solutions, Store, literal, to_python

ROOT = Path(__file__).resolve().parents[2]
TOKENS = {
    "auditor": "auditor-flat-token-0123456789abcdef",
    "alice": "alice-flat-token-0123456789abcdefg",
    "bob": "bob-flat-token-0123456789abcdefghi",
}
LATER = datetime.now(UTC) + timedelta(days=2)  # every day the sessions ended on is over


def _answer(text: str) -> str:
    turn = {"thought": "done", "action": "finish", "action_input": {}, "final_answer": text}
    return "```json\n" + json.dumps(turn) + "\n```"


@pytest.fixture
def fx(store: Store, monkeypatch: pytest.MonkeyPatch) -> Fixture:
    """The four-session store of ``tests/known_store.py``."""
    return build(store, monkeypatch)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def console_app(fx: Fixture) -> AsyncIterator[Endpoint]:
    table = (
        token_entry(TOKENS["auditor"], "did:example:auditor", ["*"])
        + token_entry(TOKENS["alice"], ALICE)
        + token_entry(TOKENS["bob"], BOB)
    )
    served = create_app(fx.store, load_tokens(tomllib.loads(table)), access_log="memory:")
    await served.start()
    yield served
    served.close()


@contextlib.asynccontextmanager
async def _client(endpoint: Endpoint, who: str) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=endpoint.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as client:
        login = await client.post("/console/login", data={"token": TOKENS[who]})
        assert login.status_code == 303
        yield client


def _listed(html: str) -> list[str]:
    return re.findall(r'href="/console/session\?s=([^"]+)"', html)


def _hits(html: str) -> list[str]:
    return re.findall(r"<mark>([^<]*)</mark>", html)


def _catalogue_sum(store: Store) -> Decimal:
    found = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?c WHERE { "
        "GRAPH ?g { ?e a trails:SessionSummary ; trails:totalCostUSD ?c } }"
    )
    assert isinstance(found, Solutions)
    return sum((Decimal(str(to_python(r[0]))) for r in found.rows), Decimal(0))


@pytest.mark.anyio
async def test_the_sessions_page_walks_the_days_and_says_what_its_totals_cover(
    fx: Fixture, console_app: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    newest_first = [quote(str(fx.sessions[k]), safe="") for k in ("D", "C", "B", "A")]
    async with _client(console_app, "auditor") as client:
        page = (await client.get("/console/")).text
        assert _listed(page) == newest_first  # four start days, newest first
        total = _catalogue_sum(fx.store)
        assert f"4 session(s) · {total.normalize():f} USD" in page
        assert "from the catalogue&#39;s daily totals" in page
        # a filter the days cannot narrow reads every entry, and the page says so
        filtered = (await client.get("/console/", params={"status": "ok"})).text
        # A's outcome is ok; C ended ok but its run stopped at its step limit (stopped)
        assert _listed(filtered) == [newest_first[3]]
        assert "1 session(s)" in filtered
        assert "filtered by outcome: the page and its totals read every catalogue entry" in filtered
        # a time range alone: walked within its days, totals of the range's entries
        ranged = (
            await client.get(
                "/console/",
                params={"since": "2025-03-02T00:00:00Z", "until": "2025-03-04T00:00:00Z"},
            )
        ).text
        assert _listed(ranged) == newest_first[1:3]
        assert "2 session(s)" in ranged and "started in the time range" in ranged
        # pages of one: each day gives the next session
        monkeypatch.setattr(console_sessions, "PAGE_SIZE", 1)
        pages = [
            _listed((await client.get("/console/", params={"page": n})).text) for n in (1, 2, 3, 4)
        ]
        assert pages == [[s] for s in newest_first]
        assert 'rel="next"' not in (await client.get("/console/", params={"page": 4})).text


@pytest.mark.anyio
async def test_a_token_on_its_own_sessions_lists_only_them(
    fx: Fixture, console_app: Endpoint
) -> None:
    async with _client(console_app, "bob") as client:
        page = (await client.get("/console/")).text
        assert _listed(page) == [quote(str(fx.sessions["B"]), safe="")]
        assert "1 session(s) · 0.5 USD" in page
        assert "this token reads part of the store" in page


@pytest.mark.anyio
async def test_a_session_page_lists_no_graphs(fx: Fixture, console_app: Endpoint) -> None:
    graphs = console_app.evaluator.graphs  # type: ignore[attr-defined]
    before = graphs.listings
    async with _client(console_app, "auditor") as client:
        seen = await client.get("/console/session", params={"s": str(fx.sessions["A"])})
        assert seen.status_code == 200 and "polished" in seen.text
        saved = await client.get(
            "/console/download", params={"s": str(fx.sessions["A"]), "format": "trig"}
        )
        assert saved.status_code == 200 and b"polished" in saved.content  # its content graph
    async with _client(console_app, "alice") as client:
        own = await client.get("/console/session", params={"s": str(fx.sessions["A"])})
        other = await client.get("/console/session", params={"s": str(fx.sessions["B"])})
        assert own.status_code == 200 and other.status_code == 404
    assert graphs.listings == before  # the grant was checked for the one graph asked


def test_batches_are_read_from_the_session_outward(store: Store) -> None:
    react.batch(["a", "b"], llm=LLMClient.mock(response=_answer("ok")), principal=ALICE, tools=[])
    found = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> "
        "SELECT ?g WHERE { GRAPH ?g { ?g a trails:Session } } ORDER BY ?g"
    )
    assert isinstance(found, Solutions) and len(found.rows) == 2
    session = str(found.rows[0][0])
    expected = get_query("batches").run(store, session=session)
    assert isinstance(expected, Solutions) and len(expected.rows) == 1
    rows = report_data(store, session)["batches"]
    assert [r["informed"] for r in rows] == [session]
    assert [r["batchId"] for r in rows] == [str(to_python(expected.rows[0][3]))]


@pytest.mark.anyio
async def test_search_follows_grants_recording_and_erasure(
    fx: Fixture, console_app: Endpoint
) -> None:
    async def search(who: str, words: str) -> list[str]:
        async with _client(console_app, who) as client:
            return _hits((await client.get("/console/search", params={"q": words})).text)

    assert "polished" in await search("auditor", "polished")  # alice's session A
    assert await search("bob", "polished") == []  # not bob's to read
    assert "inbox" in await search("bob", "inbox")  # his own
    assert await search("alice", "inbox") == []

    # a session is found once it has ended, not before
    running = Session(principal=BOB, store=fx.store, llm=LLMClient.mock(response=_answer("done")))
    running.run("file the zanzibarish invoices", tools=[])
    assert await search("auditor", "zanzibarish") == []
    running.close()
    assert set(await search("auditor", "zanzibarish")) == {"zanzibarish"}
    assert set(await search("bob", "zanzibar")) == {"zanzibar"}  # the last word may go on
    assert await search("alice", "zanzibarish") == []

    # erased words are gone: from the page and from the index itself
    erase(fx.recorder, session=str(fx.sessions["A"]), reason="request", by="did:example:dpo")
    assert await search("auditor", "polished") == []
    index: SearchIndex = console_app.console.search_index()
    assert not any("polished" in hit.value for hit in index)
    assert "inbox" in await search("auditor", "inbox")  # the rest is still found


@pytest.mark.anyio
async def test_goals_and_answers_follow_grants_and_erasure(
    fx: Fixture, console_app: Endpoint
) -> None:
    a = quote(str(fx.sessions["A"]), safe="")
    async with _client(console_app, "bob") as client:
        page = (await client.get("/console/")).text
        assert "triage the inbox" in page  # his own
        assert "email the summary" not in page and "follow up with the CFO" not in page
        assert _listed((await client.get("/console/", params={"text": "summary"})).text) == []
    async with _client(console_app, "auditor") as client:
        page = (await client.get("/console/")).text
        assert "email the summary" in page and "the summary was sent" in page
        assert _listed((await client.get("/console/", params={"text": "summary"})).text) == [a]
        erase(fx.recorder, session=str(fx.sessions["A"]), reason="request", by="did:example:dpo")
        page = (await client.get("/console/")).text
        assert "email the summary" not in page and "the summary was sent" not in page
        assert a in _listed(page)  # the session is still listed, without what was erased
        assert _listed((await client.get("/console/", params={"text": "summary"})).text) == []
        session = (await client.get("/console/session", params={"s": str(fx.sessions["A"])})).text
        assert "email the summary" not in session


def test_the_index_rebuilds_to_the_same_answers(fx: Fixture) -> None:
    index = SearchIndex(None)
    first = index.catch_up(fx.store)
    assert first == index.sessions() == 3  # A, B and C ended; D never did
    found = [h.session for h in index.search("polished", 10)]
    assert index.catch_up(fx.store) == 0  # nothing new: nothing read again
    assert index.rebuild(fx.store) == 3
    assert [h.session for h in index.search("polished", 10)] == found == [str(fx.sessions["A"])]
    assert index.search("!!!", 10) == []  # no word: nothing, never an error


def test_the_command_builds_the_index_beside_the_store(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRAILS_FORBID_REAL_MODELS": "1"}
    env.pop("TRAILS_STORE", None)
    folder = tmp_path / "store"
    recorded = subprocess.run(
        [sys.executable, "-m", "tests.console.record", str(folder)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert recorded.returncode == 0, recorded.stderr
    trails = str(Path(sys.executable).with_name("trails"))
    done = subprocess.run(
        [trails, "--store", str(folder), "catalogue", "search-index", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said == {"sessions": 3, "file": str(folder / FILE_NAME)}
    index = SearchIndex(folder / FILE_NAME)
    try:
        assert {h.session.rsplit(":", 1)[-1] for h in index.search("polished", 5)} == {
            line.split(" ", 1)[1].rsplit(":", 1)[-1]
            for line in recorded.stdout.splitlines()
            if line.startswith("A ")
        }
    finally:
        index.close()


def test_a_grant_on_everything_runs_without_a_graph_list(fx: Fixture) -> None:
    cache = GraphCache(fx.store)
    star = Grant("did:example:auditor", ("*",))
    assert cache.readable(star, None, "urn:trails:").everything and cache.listings == 0
    # a request that names its own dataset is intersected with the list
    listed = cache.readable(star, None, "urn:trails:", listed=True)
    assert cache.listings == 1 and fx.sessions["A"] in listed.graphs
    # a token on its own sessions is resolved against the list, as before
    alice = cache.readable(Grant(ALICE, ("own-sessions",)), None, "urn:trails:")
    assert fx.sessions["A"] in alice.graphs and fx.sessions["B"] not in alice.graphs


def _total_count(page: str) -> int:
    found = re.search(r'<p class="totals">(\d+) session\(s\)', page)
    assert found, page[-2000:]
    return int(found.group(1))


@pytest.mark.anyio
async def test_the_session_count_comes_from_the_daily_counts(
    fx: Fixture, console_app: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trails.catalogue.totals import rollup
    from trails.compliance.retention import _remove_structure

    # an entry count that would say 999: the page never asks it once entries are dated
    monkeypatch.setattr(console_sessions, "_COUNT", "SELECT (999 AS ?n) WHERE { }")
    assert rollup(fx.store).totalled == []  # entries dated; today is not over
    async with _client(console_app, "auditor") as client:
        # A, B and C ended today (not totalled: their entries counted), D never ended
        assert _total_count((await client.get("/console/")).text) == 4
        # a running session is counted from its start day, then from its end day
        running = Session(principal=BOB, store=fx.store, llm=LLMClient.mock(response=_answer("x")))
        running.run("count me", tools=[])
        assert _total_count((await client.get("/console/")).text) == 5
        running.close()
        assert _total_count((await client.get("/console/")).text) == 5

        rollup(fx.store, now=LATER)  # the day they ended on is over: counted
        counts = fx.store.query(
            "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?n WHERE { GRAPH ?g {"
            " ?g trails:runningSessions ?n } }"
        )
        assert isinstance(counts, Solutions)
        assert [to_python(r[0]) for r in counts.rows] == [4]
        assert _total_count((await client.get("/console/")).text) == 5

        # erasure leaves the session (its entry, its count); retention removes both
        erase(fx.recorder, session=str(fx.sessions["A"]), reason="request", by="did:example:dpo")
        assert _total_count((await client.get("/console/")).text) == 5
        catalogue = IRI.trusted("urn:trails:graph:catalogue")
        _remove_structure(fx.store, [str(fx.sessions["B"])], catalogue)
        assert _total_count((await client.get("/console/")).text) == 4
        rollup(fx.store, now=LATER)  # the day counted again, without B
        assert _total_count((await client.get("/console/")).text) == 4


@pytest.mark.anyio
async def test_days_totalled_before_counts_are_counted_by_entry_until_rollup(
    fx: Fixture, console_app: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trails.catalogue.totals import rollup

    rollup(fx.store, now=LATER)
    counts = fx.store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?s ?p ?o ?g WHERE { GRAPH ?g {"
        " ?s ?p ?o VALUES ?p { trails:sessionCount trails:runningSessions } } }"
    )
    assert isinstance(counts, Solutions) and len(counts.rows) == 2  # the day, the running
    fx.store.write([], remove=[Quad(*r) for r in counts.rows])  # type: ignore[misc]
    async with _client(console_app, "auditor") as client:
        assert _total_count((await client.get("/console/")).text) == 4  # the entry count
        monkeypatch.setattr(console_sessions, "_COUNT", "SELECT (999 AS ?n) WHERE { }")
        assert _total_count((await client.get("/console/")).text) == 999  # it was asked
        assert rollup(fx.store, now=LATER).counted == 1  # the totalled day given its count
        assert _total_count((await client.get("/console/")).text) == 4  # and it is not


@pytest.mark.anyio
async def test_a_session_that_never_ended_is_counted_however_long_ago_it_started(
    fx: Fixture, console_app: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trails.catalogue.entries import catalogue_iri, start_quads
    from trails.catalogue.totals import rollup
    from trails.prov.iri import Minter

    # an entry count that would say 999: the page never asks it once entries are typed
    monkeypatch.setattr(console_sessions, "_COUNT", "SELECT (999 AS ?n) WHERE { }")
    rollup(fx.store)
    catalogue = catalogue_iri(Minter())
    # what the sealer writes when a session starts, a year before the fixture's sessions;
    # its process died, so nothing ended it (and many days of sessions started since)
    old = IRI.trusted("urn:trails:session:started-long-ago")
    started = datetime(2024, 3, 1, 10, 0, tzinfo=UTC)
    fx.store.write(start_quads(old, IRI.trusted(ALICE), started, label="old", catalogue=catalogue))
    async with _client(console_app, "auditor") as client:
        assert _total_count((await client.get("/console/")).text) == 5  # A, B, C, D, it
        # a catalogue from before summaries were typed open is counted entry by entry
        typed = Quad(catalogue, T.openSummariesTyped, literal(True), catalogue)
        fx.store.write([], remove=[typed])
        assert _total_count((await client.get("/console/")).text) == 999


@pytest.mark.anyio
async def test_search_pages_follow_each_other_within_the_grant(
    fx: Fixture, console_app: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(5):
        who = BOB if n % 2 else ALICE
        session = Session(principal=who, store=fx.store, llm=LLMClient.mock(response=_answer("x")))
        session.run(f"quokkas counted {n}", tools=[])
        session.close()

    async def pages(who: str) -> list[list[str]]:
        out: list[list[str]] = []
        url: str | None = "/console/search?q=quokka"
        async with _client(console_app, who) as client:
            while url is not None:
                page = (await client.get(url)).text
                out.append(re.findall(r"</mark>s counted (\d)", page))
                following = re.search(r'<a rel="next" href="([^"]+)"', page)
                url = following.group(1).replace("&amp;", "&") if following else None
        return out

    everything = [hit for page in await pages("auditor") for hit in page]
    monkeypatch.setattr(console_pages, "SEARCH_LIMIT", 2)
    auditor = await pages("auditor")
    assert all(len(page) <= 2 for page in auditor) and len(auditor) >= 3
    assert [hit for page in auditor for hit in page] == everything  # newest first, no gap
    assert everything[0] == "4" and sorted(set(everything)) == list("01234")
    bob = [hit for page in await pages("bob") for hit in page]
    assert set(bob) == {"1", "3"}  # his own sessions, on every page
    async with _client(console_app, "auditor") as client:
        wrong = await client.get("/console/search", params={"q": "quokka", "before": "x"})
        assert wrong.status_code == 400 and "before is the row" in wrong.text


NS = "https://w3id.org/trails/ns#"


def _usage_cost(store: Store, session: IRI) -> tuple[Quad, Quad]:
    """Session ``session``'s cost on the usage node of its first priced model, and its end:
    the two catalogue quads as stored."""
    found = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?e ?u ?c ?end ?g $s WHERE {"
        " GRAPH ?g { ?e trails:summaryOf $s ; trails:usage ?u ; trails:sessionEnded ?end ."
        " ?u trails:usedAgent ?m ; trails:totalCostUSD ?c . ?m trails:modelId ?id } } ORDER BY ?u",
        {"s": session},
    )
    assert isinstance(found, Solutions) and found.rows, "no priced usage"
    e, u, c, end, g, _ = found.rows[0]
    cost = Quad(u, IRI(NS + "totalCostUSD"), c, g)  # type: ignore[arg-type]
    return cost, Quad(e, IRI(NS + "sessionEnded"), end, g)  # type: ignore[arg-type]


def _entry_cost(store: Store, session: IRI) -> Decimal:
    found = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?c $s WHERE { GRAPH ?g {"
        " ?e trails:summaryOf $s ; trails:totalCostUSD ?c } }",
        {"s": session},
    )
    assert isinstance(found, Solutions) and len(found.rows) == 1
    return Decimal(str(to_python(found.rows[0][0])))


@pytest.mark.anyio
@pytest.mark.parametrize("one_by_one", [0, 8], ids=["day-read-whole", "entries-one-by-one"])
async def test_todays_figures_follow_every_change_of_the_day(
    fx: Fixture, console_app: Endpoint, monkeypatch: pytest.MonkeyPatch, one_by_one: int
) -> None:
    """Today's figures are kept between pages: each page reads the day's entries and their
    ends again, and the figures of an entry that is new or summarised again (its end moved)."""
    from trails.catalogue.totals import rollup
    from trails.compliance.retention import _remove_structure

    monkeypatch.setattr(console_sessions, "ONE_BY_ONE", one_by_one)
    assert rollup(fx.store).totalled == []  # entries dated; today, when they ended, not over

    def usd(page: str) -> Decimal:
        found = re.search(r"session\(s\) · ([0-9.]+) USD", page)
        assert found, page[-2000:]
        return Decimal(found.group(1))

    async with _client(console_app, "auditor") as client:
        first = usd((await client.get("/console/")).text)
        assert first == _catalogue_sum(fx.store)
        kept = console_app.console.open_days
        assert len(kept) == 1 and len(next(iter(kept.values()))) == 3  # today's A, B and C
        # A summarised again: one USD more on a model's usage, its end a second later
        cost, end = _usage_cost(fx.store, fx.sessions["A"])
        more = literal(Decimal(str(to_python(cost.object))) + 1)
        when = to_python(end.object)
        assert isinstance(when, datetime)
        moved = literal(when + timedelta(seconds=1))
        fx.store.write([cost._replace(object=more), end._replace(object=moved)], remove=[cost, end])
        assert usd((await client.get("/console/")).text) == first + 1
        # B's entry removed by retention: its figures leave today's totals
        b_cost = _entry_cost(fx.store, fx.sessions["B"])
        assert b_cost > 0
        _remove_structure(fx.store, [str(fx.sessions["B"])], IRI("urn:trails:graph:catalogue"))
        assert usd((await client.get("/console/")).text) == first + 1 - b_cost
        # once the day is totalled, the page reads its totals and forgets the entries
        rollup(fx.store, now=LATER)
        assert usd((await client.get("/console/")).text) == first + 1 - b_cost
        assert console_app.console.open_days == {}


@pytest.mark.anyio
async def test_the_page_walks_a_days_minutes_newest_first(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many sessions on one day: the page reads the newest minutes, a run at a time, and
    reads the next run when a minute's entries are gone."""
    from trails.catalogue.entries import catalogue_iri, entry_iri, start_quads
    from trails.prov.iri import Minter

    catalogue = catalogue_iri(Minter())
    starts = {
        "old": datetime(2025, 5, 31, 23, 59, 30, tzinfo=UTC),
        "a": datetime(2025, 6, 1, 10, 0, 5, tzinfo=UTC),
        "b": datetime(2025, 6, 1, 10, 0, 40, tzinfo=UTC),  # a's minute
        "c": datetime(2025, 6, 1, 10, 3, 0, tzinfo=UTC),
        "d": datetime(2025, 6, 1, 10, 3, 30, tzinfo=UTC),  # c's minute
        "e": datetime(2025, 6, 1, 10, 7, 0, tzinfo=UTC),
        "f": datetime(2025, 6, 1, 11, 0, 0, tzinfo=UTC),
    }
    sessions = {
        k: IRI(f"urn:trails:session:00000000-0000-4000-8000-00000000000{i}")
        for i, k in enumerate(starts)
    }
    for name, started in starts.items():
        store.write(
            start_quads(
                sessions[name],
                IRI(ALICE),
                started,
                label=name,
                catalogue=catalogue,
                principal_id=Literal(ALICE),
            )
        )
    served = create_app(
        store,
        load_tokens(tomllib.loads(token_entry(TOKENS["auditor"], "did:example:auditor", ["*"]))),
        access_log="memory:",
    )
    await served.start()
    monkeypatch.setattr(console_sessions, "PAGE_SIZE", 2)

    def names(html: str) -> list[str]:
        by_iri = {quote(str(v), safe=""): k for k, v in sessions.items()}
        return [by_iri[s] for s in _listed(html)]

    try:
        async with _client(served, "auditor") as client:
            pages = [
                names((await client.get("/console/", params={"page": n})).text)
                for n in (1, 2, 3, 4)
            ]
            assert pages == [["f", "e"], ["d", "c"], ["b", "a"], ["old"]]
            # e's entry gone, its minute left: the walk reads on to the next minutes
            gone = store.query(
                "SELECT ?p ?o ?g $e WHERE { GRAPH ?g { $e ?p ?o } }",
                {"e": entry_iri(sessions["e"])},
            )
            assert isinstance(gone, Solutions) and gone.rows
            store.write(
                [],
                remove=[Quad(entry_iri(sessions["e"]), p, o, g) for p, o, g, _ in gone.rows],  # type: ignore[arg-type]
            )
            first = names((await client.get("/console/", params={"page": 1})).text)
            assert first == ["f", "d"]
            # a time range within the day
            ranged = await client.get(
                "/console/",
                params={"since": "2025-06-01T10:00:30Z", "until": "2025-06-01T10:03:15Z"},
            )
            assert names(ranged.text) == ["c", "b"]
    finally:
        served.close()
