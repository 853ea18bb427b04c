"""The search index's word list: a word's beginning found newest first, a page at a time.

FTS5 answers a word's beginning by merging the row lists of every word that begins
so; the index keeps its own words (``words``) and asks for each whole, so a page of
hits reads a page of rows. These tests hold the answers to FTS5's own (the same hits,
in the same order), the word list to the index (erased words leave it too), grants
and paging.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from tests.known_store import ALICE, BOB, Fixture, build

from trails.agent import Session
from trails.audit import search as search_module
from trails.audit.search import FILE_NAME, Scope, SearchIndex
from trails.compliance.erasure import erase
from trails.llm import LLMClient
from trails.prov.vocab import T
from trails.store import IRI, Literal, Quad, Store, open_store


def _answer(text: str) -> str:
    turn = {"thought": "done", "action": "finish", "action_input": {}, "final_answer": text}
    return "```json\n" + json.dumps(turn) + "\n```"


def _record(store: Store, principal: str, goal: str) -> None:
    session = Session(principal=principal, store=store, llm=LLMClient.mock(response=_answer(goal)))
    session.run(goal, tools=[])
    session.close()


@pytest.fixture
def fx(store: Store, monkeypatch: pytest.MonkeyPatch) -> Fixture:
    """The four-session store of ``tests/known_store.py``, and sessions whose words share
    beginnings (each goal is also its answer)."""
    fixture = build(store, monkeypatch)
    for n, goal in enumerate(
        ["file the zanzibar invoices", "zanzibarish receipts", "the zanzibari fund"]
        + [f"note {n} on Zanzíbar" for n in range(6)]
    ):
        _record(store, ALICE if n % 2 else BOB, goal)
    return fixture


def _words(path: Path) -> tuple[dict[str, int], dict[str, int]]:
    """The file's word list, and the words the full-text table itself holds (row counts)."""
    db = sqlite3.connect(path)
    try:
        db.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, content, 'row')")
        listed = {str(w): int(n) for w, n in db.execute("SELECT word, rows FROM words")}
        held = {str(w): int(n) for w, n in db.execute("SELECT term, doc FROM temp.terms")}
        return listed, held
    finally:
        db.close()


def test_a_beginning_finds_the_same_hits_as_fts5_newest_first(
    fx: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = SearchIndex(tmp_path / FILE_NAME)
    try:
        index.catch_up(fx.store)
        for words in ("zanzib", "zanzibar", "ZANZIBARI", "the zanz", "on zanzíbar", "pol"):
            expanded = index.search(words, 100)
            monkeypatch.setattr(search_module, "_EXPANSIONS", 0)  # FTS5's own prefix match
            native = index.search(words, 100)
            monkeypatch.undo()
            assert expanded == native, words
        found = index.search("zanzib", 100)
        assert {h.value for h in found} >= {"zanzibarish receipts", "note 5 on Zanzíbar"}
        rows = [h.row for h in found]
        assert rows == sorted(rows, reverse=True) and len(set(rows)) == len(rows)  # newest first
        assert index.search("zanzibarz", 10) == [] and index.search("qqqq", 10) == []
        assert index.search("the zanzibari", 10)[0].value == "the zanzibari fund"
    finally:
        index.close()


def test_pages_follow_each_other_and_grants_hold(fx: Fixture, tmp_path: Path) -> None:
    index = SearchIndex(tmp_path / FILE_NAME)
    try:
        index.catch_up(fx.store)
        everything = index.search("zanzib", 1000)
        pages, before = [], None
        while True:
            page = index.search("zanzib", 4, before=before)
            if not page:
                break
            assert len(page) <= 4
            pages.append(page)
            before = page[-1].row
        assert [h for page in pages for h in page] == everything
        bob = index.search("zanzib", 1000, Scope(agent="urn:trails:agent:nobody"))
        assert bob == []  # a scope reads only its sessions
        alice = Scope(patterns=("urn:trails:session:session-A*",))
        assert {h.session for h in index.search("pol", 100, alice)} == {str(fx.sessions["A"])}
    finally:
        index.close()


def test_the_word_list_follows_the_index_and_forgets_erased_words(
    fx: Fixture, tmp_path: Path
) -> None:
    path = tmp_path / FILE_NAME
    index = SearchIndex(path)
    try:
        index.catch_up(fx.store)
        listed, held = _words(path)
        assert listed == held and "polished" in listed
        _record(fx.store, BOB, "zanzibarish again")
        index.catch_up(fx.store)  # a session indexed after the first build
        listed, held = _words(path)
        assert listed == held and listed["zanzibarish"] == held["zanzibarish"]
        erase(fx.recorder, session=str(fx.sessions["A"]), reason="request", by="did:example:dpo")
        index.catch_up(fx.store)
        listed, held = _words(path)
        assert listed == held and "polished" not in listed  # gone from the list too
        assert index.search("polish", 10) == []
    finally:
        index.close()


def test_an_index_from_before_the_word_list_gets_one(fx: Fixture, tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    index = SearchIndex(path)
    index.catch_up(fx.store)
    first = index.search("zanzib", 100)
    index.close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE words")  # as an index written before the word list
    db.execute("DELETE FROM meta WHERE key = 'words'")
    db.commit()
    db.close()
    index = SearchIndex(path)
    try:
        assert index.search("zanzib", 100) == first  # FTS5's own match meanwhile
        index.catch_up(fx.store)  # fills the list from the index
        listed, held = _words(path)
        assert listed == held and index.search("zanzib", 100) == first
    finally:
        index.close()


class _Counting:
    """The store, counting the catalogue reads of one end day's entries."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.day_reads = 0

    def query(self, sparql: str, params: object = None) -> object:
        if sparql == search_module._ENDED_ON:
            self.day_reads += 1
        return self.store.query(sparql, params)  # type: ignore[arg-type]


def test_a_day_read_once_is_read_again_only_when_it_changes(fx: Fixture) -> None:
    index = SearchIndex(None)
    counting = _Counting(fx.store)
    index.catch_up(counting)  # type: ignore[arg-type]
    first = counting.day_reads
    assert first >= 1
    assert index.catch_up(counting) == 0  # type: ignore[arg-type]
    assert counting.day_reads == first  # nothing ended since: no day's entries read
    _record(fx.store, BOB, "walrus minutes")
    assert index.catch_up(counting) == 1  # type: ignore[arg-type]
    assert counting.day_reads == first + 1  # the day a session ended on, read again
    found = index.search("walrus", 10)
    assert "walrus minutes" in {h.value for h in found} and len({h.session for h in found}) == 1


def test_a_day_whose_latest_end_moves_later_is_read_again_whatever_its_spelling() -> None:
    # a late write rewrites an entry's end from 03.05 to 03.12; as canonical strings the
    # day's latest end (03.1Z) would not move, and the day would not be read again
    store = open_store("memory:")
    day, cat = IRI("urn:x:day"), IRI("urn:x:catalogue")

    def entry(name: str, ended: str) -> list[Quad]:
        e = IRI(f"urn:x:{name}")
        when = Literal(f"2026-12-07T01:02:{ended}Z", "http://www.w3.org/2001/XMLSchema#dateTime")
        return [Quad(e, T.endedOn, day, cat), Quad(e, T.sessionEnded, when, cat)]

    store.write(entry("a", "03.1") + entry("b", "03.05"))
    before = SearchIndex._day_mark(store, day)
    store.write(entry("b", "03.12"), remove=entry("b", "03.05")[1:])
    after = SearchIndex._day_mark(store, day)
    assert after != before
    store.write(entry("b", "03.12"))  # the same entry again: nothing moved
    assert SearchIndex._day_mark(store, day) == after
    store.close()
