"""A full-text index of recorded content, kept beside the store, in step with recording and erasure.

Searching recorded content (prompts, completions, capability inputs and
outputs, goals, answers, error messages) by a query over the store reads every
literal it may match: its cost grows with the store. ``SearchIndex`` keeps that
content in an SQLite FTS5 table (the standard library's ``sqlite3``; words of
letters and digits, case and accents aside, a search's last word matched as a
beginning), in a file beside a directory store (``trails-search.sqlite``) or
in memory.

It follows the store through what the store itself records, never through a
hook in the writers:

- sessions are indexed once they have ended: ``catch_up`` reads the catalogue's
  end days from the newest it has seen (``trails:endedOn``, an index lookup per
  day) and indexes each ended session it does not hold yet (its content graph
  and its structure graph, one query per session);
- erasure: each ``trails:Erasure`` receipt names the sessions it erased content
  of (``trails:erasedSession``): those sessions are indexed again from what
  the store still holds, so erased content is gone from the index
  and the file is rewritten so the deleted text leaves it too (``trails
  erase`` calls ``forget_erased`` before it reports);
- retention: each ``trails:RetentionRemoval`` names a graph it removed: its
  rows are deleted.

A search reads a page of rows, however many values match: the index keeps a
list of its own words (``words``, each with how many rows hold it, kept through
the index's own tokenizer as rows come and go, so an erased word leaves it too),
a search's last word is asked as each whole word that begins so, and FTS5 reads
the matching rows newest first (sessions in the order they ended) up to the
page (``search``'s ``limit``; ``before`` a row for the next page).

``catch_up`` runs before every search, so a session's words are found once it
has ended and erased words are never found again; ``rebuild`` empties the
index and reads every ended session again (a session whose catalogue entry
was written to a day before the newest one seen, by recovery for instance, is
found after a rebuild). Deleting the file rebuilds it on the next search.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from trails.prov.content import (
    CONTENT_PROPERTIES,
    content_graph,
    structure_graph,
)
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, literal, to_python

__all__ = ["FILE_NAME", "Hit", "Scope", "SearchIndex", "utc_text"]

FILE_NAME = "trails-search.sqlite"
"""The index's file in a directory store's folder."""

_TOKENIZE = "tokenize = 'unicode61 remove_diacritics 2'"
_SCHEMA = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS content USING fts5(
    value, session UNINDEXED, graph UNINDEXED, subject UNINDEXED, property UNINDEXED,
    principal UNINDEXED, started UNINDEXED, {_TOKENIZE});
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY, ended TEXT NOT NULL, started TEXT, principal TEXT);
CREATE TABLE IF NOT EXISTS rows_of (session TEXT NOT NULL, row INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS rows_of_session ON rows_of (session);
CREATE TABLE IF NOT EXISTS seen (kind TEXT, item TEXT, PRIMARY KEY (kind, item));
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS words (word TEXT PRIMARY KEY, rows INTEGER NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS temp.scratch USING fts5(value, content='', {_TOKENIZE});
CREATE VIRTUAL TABLE IF NOT EXISTS temp.scratch_terms USING fts5vocab(temp, scratch, 'row');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.scratch_tokens USING fts5vocab(temp, scratch, 'instance');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.all_terms USING fts5vocab(main, content, 'row');
"""

_VALUES = " ".join(f"<{p}>" for p in sorted(CONTENT_PROPERTIES))
_DAYS = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?day ?date $since WHERE {
  GRAPH ?catalogue { ?day a trails:CatalogueDay ; trails:day ?date }
  FILTER(COALESCE(?date >= $since, true))
}"""
_ENDED_ON = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session ?ended ?started ?principal $day WHERE {
  GRAPH ?catalogue {
    ?entry trails:endedOn $day ; trails:summaryOf ?session ; trails:sessionEnded ?ended .
    OPTIONAL { ?entry trails:sessionStarted ?started }
    OPTIONAL { ?entry prov:wasAttributedTo ?principal }
  }
}"""
_DAY_MARK = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT (COUNT(?entry) AS ?n) (MAX(?ended) AS ?last) $day WHERE {
  GRAPH ?catalogue { ?entry trails:endedOn $day ; trails:sessionEnded ?ended }
}
GROUP BY $day"""
_UNDATED = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session ?ended ?started ?principal WHERE {
  GRAPH ?catalogue {
    ?entry trails:sessionEnded ?ended ; trails:summaryOf ?session .
    FILTER NOT EXISTS { ?entry trails:endedOn ?anyDay }
    OPTIONAL { ?entry trails:sessionStarted ?started }
    OPTIONAL { ?entry prov:wasAttributedTo ?principal }
  }
}"""
_CONTENT_OF = (
    """SELECT ?g ?s ?p ?o $session $content WHERE {
  VALUES ?p { """
    + _VALUES
    + """ }
  { GRAPH $content { ?s ?p ?o } BIND($content AS ?g) }
  UNION { GRAPH $session { ?s ?p ?o } BIND($session AS ?g) }
}"""
)
_ERASED = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?erasure ?session WHERE { GRAPH ?receipt { ?erasure trails:erasedSession ?session } }"""
_REMOVED = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?removal ?graph WHERE { GRAPH ?receipt { ?removal trails:removedGraph ?graph } }"""


@dataclass(frozen=True)
class Scope:
    """Which sessions a search may return: those matching a pattern, or attributed to an agent.

    ``patterns`` are grant patterns (``*`` matches any run of characters); ``agent`` is
    the IRI a session's catalogue entry is attributed to (``own-sessions``), or None.
    """

    patterns: tuple[str, ...] = ()
    agent: str | None = None


@dataclass(frozen=True)
class Hit:
    """One content value that matched: where it is recorded, the value, and its row (the
    next page of a search starts ``before`` the last hit's row)."""

    session: str
    graph: str
    subject: str
    property: str
    value: str
    row: int = 0


_EXPANSIONS = 200
"""The most words a search's last word is expanded to (past it, FTS5's own prefix match)."""


def _hit(row: Sequence[Any]) -> Hit:
    """A hit from a row of ``session, graph, subject, property, value, rowid``."""
    session, graph, subject, prop, value, rowid = row
    return Hit(str(session), str(graph), str(subject), str(prop), str(value), int(rowid))


def _text(term: object) -> str:
    return term.value if isinstance(term, Literal) else str(term or "")


def _moment(term: object) -> str:
    """A start time as the index compares it: UTC, ISO 8601, to the microsecond ("" if none)."""
    value = to_python(term) if isinstance(term, Literal) else None
    return utc_text(value) if isinstance(value, datetime) else ""


def utc_text(moment: datetime) -> str:
    """``moment`` in UTC as the index stores start times (naive means UTC)."""
    at = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")


def _glob(pattern: str) -> str:
    """A grant pattern as an SQLite GLOB (``*`` kept, GLOB's other wildcards escaped)."""
    return "".join(f"[{c}]" if c in "?[]" else c for c in pattern)


def _phrase(text: str) -> str:
    """``text`` as one FTS5 phrase (its quotes doubled) whose last word may go on: its words
    in order, the last one as typed or longer (``polish`` finds "polished")."""
    return '"' + text.replace('"', '""') + '"*'


def _after(prefix: str) -> str:
    """The least text greater than every text starting with ``prefix`` (a word range's end)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


class SearchIndex:
    """The full-text index of one store's recorded content (see the module docstring).

    Args:
        path: the SQLite file (created when missing), or None for an index in memory.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            ":memory:" if path is None else str(path), check_same_thread=False
        )
        self._db.executescript(_SCHEMA)
        self._words = self._meta("words") is not None

    @classmethod
    def beside(cls, location: str | Path | None) -> SearchIndex:
        """The index of the store at ``location``: a file in a directory store's folder
        (``FILE_NAME``), else (memory, a SPARQL server, a folder it cannot write) in memory."""
        if location is not None and not str(location).startswith(("http://", "https://")):
            folder = Path(location)
            if str(location) != "memory:" and folder.is_dir():
                with contextlib.suppress(sqlite3.Error, OSError):
                    return cls(folder / FILE_NAME)
        return cls(None)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()

    # -- keeping up ---------------------------------------------------------------

    def catch_up(self, store: Store) -> int:
        """Index the sessions that ended since the last call; forget erased and removed content.

        Args:
            store: the store (any ``Store``: the console's reads go through its evaluator).

        Returns:
            How many sessions were indexed (again).
        """
        with self._lock:
            done = self._removals(store)
            erased = self._erasures(store)
            done += erased + self._ended(store)
            if not self._words:  # a new index, or one from before the word list
                self._db.execute("DELETE FROM words")
                self._db.execute("INSERT INTO words SELECT term, doc FROM temp.all_terms")
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('words', '1')")
                self._words = True
            self._db.commit()
            if erased:
                self._scrub()
            return done

    def _scrub(self) -> None:
        """Rewrite the file so no deleted row's text survives in it: FTS5's segments
        merged into one, the file vacuumed (SQLite keeps deleted text in free pages)."""
        self._db.execute("INSERT INTO content(content) VALUES ('optimize')")
        self._db.commit()
        self._db.execute("VACUUM")

    def forget_erased(self, store: Store) -> int:
        """``catch_up``: erased content leaves the index and, when an erasure it had not
        seen touched a session it holds, the file is rewritten so no deleted row's text
        survives in it. ``trails erase`` calls it before it reports."""
        return self.catch_up(store)

    def rebuild(self, store: Store) -> int:
        """Empty the index and read every ended session again; how many were indexed."""
        with self._lock:
            for table in ("content", "rows_of", "sessions", "seen", "meta", "words"):
                self._db.execute(f"DELETE FROM {table}")  # constant table names
            self._db.commit()
            self._words = False
        return self.catch_up(store)

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _seen(self, kind: str, items: Sequence[str]) -> set[str]:
        known = {
            str(r[0]) for r in self._db.execute("SELECT item FROM seen WHERE kind = ?", (kind,))
        }
        return {i for i in items if i in known}

    def _ended(self, store: Store) -> int:
        """Index the sessions of the end days from the newest seen (that day included)."""
        through = self._meta("through")
        since = date.fromisoformat(through) - timedelta(days=1) if through else None
        days = store.query(_DAYS, {"since": literal(since)} if since else {})
        assert isinstance(days, Solutions)
        found: list[tuple[date, IRI]] = []
        for day, value, *_ in days.rows:
            when = to_python(value) if isinstance(value, Literal) else None
            if day is not None and isinstance(when, date):
                found.append((when, IRI.trusted(str(day))))
        found.sort()
        indexed = 0
        if through is None:  # the first time: entries written before days, too
            undated = store.query(_UNDATED)
            assert isinstance(undated, Solutions)
            indexed += self._index_entries(store, undated, None)
        for when, day in found:
            mark = self._day_mark(store, day)
            if mark not in self._seen("day", [mark]):
                entries = store.query(_ENDED_ON, {"day": day})
                assert isinstance(entries, Solutions)
                indexed += self._index_entries(store, entries, day)
                self._db.execute(
                    "DELETE FROM seen WHERE kind = 'day' AND item GLOB ?", (_glob(f"{day} ") + "*",)
                )
                self._db.execute("INSERT OR IGNORE INTO seen VALUES ('day', ?)", (mark,))
            if through is None or when.isoformat() > through:
                through = when.isoformat()
        if through is not None:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('through', ?)", (through,))
        return indexed

    @staticmethod
    def _day_mark(store: Store, day: IRI) -> str:
        """What an end day holds, in short: its entries' count and latest end (an aggregate
        in the store, no row read here). A day whose mark is unchanged is not read again
        (an entry rewritten by a late write ends later, so the latest end moves)."""
        rows = store.query(_DAY_MARK, {"day": day})
        assert isinstance(rows, Solutions)
        return f"{day} " + " ".join(_text(v) for row in rows.rows for v in row[:2])

    def _index_entries(self, store: Store, entries: Solutions, day: IRI | None) -> int:
        """Index the entries' sessions this index does not hold as they ended."""
        new: dict[str, tuple[str, str, str]] = {}
        for row in entries:
            session, ended = _text(row.get("session")), _text(row.get("ended"))
            held = self._db.execute(
                "SELECT ended FROM sessions WHERE session = ?", (session,)
            ).fetchone()
            if session and (held is None or held[0] != ended):
                new[session] = (ended, _moment(row.get("started")), _text(row.get("principal")))
        if not new:
            return 0
        for session, facts in sorted(new.items(), key=lambda item: item[1][0]):  # by end
            self._put(session, facts, self._content(store, session))
        return len(new)

    @staticmethod
    def _content(store: Store, session: str) -> list[tuple[Any, ...]]:
        params = {"session": IRI.trusted(session), "content": content_graph(session)}
        rows = store.query(_CONTENT_OF, params)
        assert isinstance(rows, Solutions)
        return [tuple(r[:4]) for r in rows.rows]

    def _put(
        self, session: str, facts: tuple[str, str, str], values: list[tuple[Any, ...]]
    ) -> None:
        """Replace what the index holds of ``session`` with ``values`` (g, s, p, o rows)."""
        ended, started, principal = facts
        self._forget(session)
        kept: list[str] = []
        for g, s, p, o in values:
            if isinstance(o, Literal) and o.value:
                cursor = self._db.execute(
                    "INSERT INTO content (value, session, graph, subject, property, principal, "
                    "started) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (_text(o), session, _text(g), _text(s), _text(p), principal, started),
                )
                self._db.execute("INSERT INTO rows_of VALUES (?, ?)", (session, cursor.lastrowid))
                kept.append(_text(o))
        self._count_words(kept, 1)
        self._db.execute(
            "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?)",
            (session, ended, started, principal),
        )

    def _forget(self, session: str) -> None:
        """Delete every value of ``session`` (by row id: a lookup, never a pass over the index)."""
        rows = [
            (r[0],)
            for r in self._db.execute("SELECT row FROM rows_of WHERE session = ?", (session,))
        ]
        if rows and self._words:
            old = self._db.execute(
                "SELECT value FROM content WHERE rowid IN "
                "(SELECT row FROM rows_of WHERE session = ?)",
                (session,),
            )
            self._count_words([str(r[0]) for r in old], -1)
        if rows:
            self._db.executemany("DELETE FROM content WHERE rowid = ?", rows)
            self._db.execute("DELETE FROM rows_of WHERE session = ?", (session,))

    def _count_words(self, values: list[str], sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) the rows holding each word of ``values`` in the
        word list (words are the index's own: ``values`` go through its tokenizer); a word
        no row holds any longer leaves the list (erased words are not kept even there)."""
        if not self._words or not values:
            return
        self._db.executemany("INSERT INTO temp.scratch (value) VALUES (?)", [(v,) for v in values])
        self._db.execute(
            "INSERT INTO words SELECT term, ? * doc FROM temp.scratch_terms WHERE true "
            "ON CONFLICT (word) DO UPDATE SET rows = rows + excluded.rows",
            (sign,),
        )
        if sign < 0:
            self._db.execute(
                "DELETE FROM words WHERE word IN (SELECT term FROM temp.scratch_terms) "
                "AND rows <= 0"
            )
        self._db.execute("INSERT INTO temp.scratch (scratch) VALUES ('delete-all')")

    def _erasures(self, store: Store) -> int:
        """Index again, from what the store still holds, each session an erasure touched."""
        rows = store.query(_ERASED)
        assert isinstance(rows, Solutions)
        pairs = [f"{_text(r[0])} {_text(r[1])}" for r in rows.rows]
        known = self._seen("erased", pairs)
        again = 0
        for pair in pairs:
            if pair in known:
                continue
            session = pair.split(" ", 1)[1]
            held = self._db.execute(
                "SELECT ended, started, principal FROM sessions WHERE session = ?", (session,)
            ).fetchone()
            if held is not None:  # one not indexed yet is read as it is once it has ended
                facts = (str(held[0]), str(held[1] or ""), str(held[2] or ""))
                self._put(session, facts, self._content(store, session))
                again += 1
            self._db.execute("INSERT OR IGNORE INTO seen VALUES ('erased', ?)", (pair,))
        return again

    def _removals(self, store: Store) -> int:
        """Forget the graphs retention removed."""
        rows = store.query(_REMOVED)
        assert isinstance(rows, Solutions)
        pairs = [f"{_text(r[0])} {_text(r[1])}" for r in rows.rows]
        known = self._seen("removed", pairs)
        for pair in pairs:
            if pair in known:
                continue
            graph = pair.split(" ", 1)[1]
            self._forget(str(structure_graph(graph)))  # its content goes with either part
            self._db.execute(
                "DELETE FROM sessions WHERE session = ?", (str(structure_graph(graph)),)
            )
            self._db.execute("INSERT OR IGNORE INTO seen VALUES ('removed', ?)", (pair,))
        return 0

    # -- searching ----------------------------------------------------------------

    def search(
        self,
        text: str,
        limit: int,
        scope: Scope | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        before: int | None = None,
    ) -> list[Hit]:
        """The newest ``limit`` values holding the words of ``text``, within ``scope``.

        Words are compared as the index keeps them (letters and digits, case and accents
        aside); the words of ``text`` must follow each other, the last one may go on.

        Args:
            text: what to find (nothing is found for text without a letter or digit).
            limit: the most hits.
            scope: which sessions may be returned (None: every session).
            since: only sessions started at or after this (an ``xsd:dateTime`` text).
            until: only sessions started before this.
            before: only rows before this one (the last hit's ``row``: the next page).

        Returns:
            The hits, the most recently indexed first: FTS5 reads the matching rows newest
            first and stops at ``limit`` (a page costs a page, however many values match;
            the scope is checked on each row read, so a narrow scope reads the rows of the
            sessions outside it that come first).
        """
        if not any(c.isalnum() for c in text):
            return []
        low = None if since is None else utc_text(since)
        high = None if until is None else utc_text(until)
        with self._lock:
            match = self._match(text)
            if match is None:
                return []
            where, args = self._where(match, scope, low, high)
            if before is not None:
                where.append("rowid < ?")
                args.append(int(before))
            sql = (
                "SELECT session, graph, subject, property, value, rowid FROM content WHERE "
                + " AND ".join(where)
                + " ORDER BY rowid DESC LIMIT ?"
            )
            rows = self._db.execute(sql, [*args, int(limit)]).fetchall()
        return [_hit(row) for row in rows]

    def _match(self, text: str) -> str | None:
        """The FTS5 query of ``text``'s words in order, the last one as typed or longer; None
        when no value can hold them.

        FTS5 answers a word's beginning (``"polish"*``) by merging the row lists of every
        word that begins so, all of them, before the newest row comes out: a common word
        costs as many rows as hold it. The word list (``words``, the index's own words)
        names the words that begin so; the query asks for each whole (``"polish" OR
        "polished"``), which FTS5 reads newest first and stops at ``LIMIT``. Beyond
        ``_EXPANSIONS`` words (a beginning of a letter or two), FTS5's own match.
        """
        if not self._words:
            return _phrase(text)
        self._db.execute("INSERT INTO temp.scratch (value) VALUES (?)", (text,))
        tokens = [
            str(r[0])
            for r in self._db.execute("SELECT term FROM temp.scratch_tokens ORDER BY offset")
        ]
        self._db.execute("INSERT INTO temp.scratch (scratch) VALUES ('delete-all')")
        if not tokens:
            return None
        last = tokens[-1]
        words = [
            str(r[0])
            for r in self._db.execute(
                "SELECT word FROM words WHERE word >= ? AND word < ? LIMIT ?",
                (last, _after(last), _EXPANSIONS + 1),
            )
        ]
        if not words:
            return None
        if len(words) > _EXPANSIONS:
            return _phrase(text)
        return " OR ".join('"' + " ".join([*tokens[:-1], w]) + '"' for w in words)

    @staticmethod
    def _where(
        match: str, scope: Scope | None, since: str | None, until: str | None
    ) -> tuple[list[str], list[object]]:
        where: list[str] = []
        args: list[object] = []
        where.append("content MATCH ?")
        args.append(match)
        if scope is not None:
            ors = ["session GLOB ?"] * len(scope.patterns)
            args += [_glob(p) for p in scope.patterns]
            if scope.agent is not None:
                ors.append("principal = ?")
                args.append(scope.agent)
            where.append("(" + (" OR ".join(ors) or "0") + ")")
        if since:
            where.append("started >= ?")
            args.append(since)
        if until:
            where.append("started < ?")
            args.append(until)
        return where, args

    def sessions(self) -> int:
        """How many sessions the index holds."""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0])

    def __iter__(self) -> Iterator[Hit]:
        """Every value the index holds (tests, diagnostics)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT session, graph, subject, property, value, rowid FROM content"
            ).fetchall()
        return iter([_hit(row) for row in rows])
