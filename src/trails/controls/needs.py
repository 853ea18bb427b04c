"""What a control's query cannot find a row without: the triples its every row needs.

A session's end evaluates each session-scoped control over that session's graphs. Most
sessions never touch most controls' subject (no high-risk capability, no failed call, no
grant), and a query whose mandatory triple patterns match nothing has no row, whatever the
rest of it says. ``needs(sparql)`` reads a control's ``SELECT`` once and answers the triple
patterns every row of it needs, as clauses: each clause lists patterns ``(predicate,
object)`` (``object`` None: any object) of which at least one must be in the graphs the
query reads. The evaluation looks those up in the store's indexes (``Store.has_triple``), a few
microseconds each, and runs the query only when each clause holds; otherwise the control
passed over that session, exactly as running the query would have answered, at a fraction of
the cost (parsing and planning a query cost more than evaluating it over one session).

The reading is conservative: it only ever leaves a pattern out. Needed are the triple
patterns of the query's WHERE group outside OPTIONAL, MINUS, NOT EXISTS and expressions,
including nested groups, ``GRAPH`` groups (the query's named graphs are the session's own)
and ``FILTER EXISTS`` groups; a ``UNION`` needs one of its branches (each clause of the
union is one pattern from each branch's clause). A query this reading is not sure of needs
nothing, and always runs: aggregates and ``GROUP BY`` (an aggregate of no row is a row),
``FROM``, ``SERVICE``, sub-SELECTs (they need nothing), property paths, blank node
property lists and collections, typed or language-tagged literals, numbers, escapes,
prefixed names without a declared prefix, relative IRIs.

Why a reading of its own rather than rdflib's SPARQL algebra (``translateQuery``), which
answers the same from a full parse: measured in one process, rdflib's SPARQL modules cost
0.17 s of CPU to import and its parser about 27 ms a query, so the first evaluation of the
8 built-in session controls took about 0.4 s against 3 ms, where a 10-step ReAct session
records in about 10 ms and its whole evaluation costs 1.5 ms. The reading only has to find
triple patterns and give up on anything else, and
``tests/controls/test_needs.py::test_the_look_up_answers_what_the_query_answers`` holds it
to what the store's own evaluation answers, over generated queries and data.
"""

from __future__ import annotations

import re
from functools import lru_cache

from trails.store.terms import IRI, Literal, Term

__all__ = ["Clause", "Needs", "Pattern", "needs"]

Pattern = tuple[IRI, Term | None]
"""``(predicate, object)``: some triple of the graphs read has this predicate (and object)."""
Clause = tuple[Pattern, ...]
"""At least one of these patterns must hold."""
Needs = tuple[Clause, ...]
"""Every clause must hold for the query to have a row (``()``: nothing is known)."""

_RDF_TYPE = IRI("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
_XSD = "http://www.w3.org/2001/XMLSchema#"
_MAX_CLAUSES = 16  # a UNION's clauses are products of its branches': past this, none

_TOKEN = re.compile(
    r'(?P<long>"""|\'\'\')'
    r'|(?P<str>"(?:[^"\\\n\r])*"|\'(?:[^\'\\\n\r])*\')'
    r'|(?P<bad>["\'])'
    r"|(?P<iri><[^<>\"{}|^`\\\x00-\x20]*>)"
    r"|(?P<comment>\#[^\n]*)"
    r"|(?P<var>[?$][\w\u00B7\u0300-\u036F\u203F\u2040]+)"
    r"|(?P<word>[A-Za-z_][\w\-]*(?::[\w\-.%:]*)?)"
    r"|(?P<ws>\s+)"
    r"|(?P<other>.)",
    re.DOTALL,
)

#: words that make a query one this reading does not answer for (it then needs nothing)
_GIVE_UP = frozenset(
    {
        "GROUP", "HAVING", "COUNT", "SUM", "AVG", "MIN", "MAX", "SAMPLE", "GROUP_CONCAT",
        "FROM", "SERVICE", "BASE", "ASK", "CONSTRUCT", "DESCRIBE", "LATERAL",
    }
)  # fmt: skip
#: words that start something other than triples inside a group
_PROJECTION = ("DISTINCT", "REDUCED", "WHERE")
_ITEMS = frozenset({"OPTIONAL", "MINUS", "GRAPH", "FILTER", "BIND", "VALUES", "UNION"})


class _Unsure(Exception):
    """The query holds something this reading does not answer for."""


def needs(sparql: str) -> Needs:
    """The clauses every row of the ``SELECT`` ``sparql`` needs (``()``: nothing known),
    those naming an object first.

    Never raises: a text it cannot read (or a query it is not sure of) needs nothing.
    """
    try:
        return _needs(sparql)
    except (_Unsure, IndexError, ValueError):
        return ()


@lru_cache(maxsize=1024)
def _needs(sparql: str) -> Needs:
    tokens: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(sparql):
        kind = m.lastgroup or "other"
        if kind in ("long", "bad"):
            raise _Unsure
        if kind in ("ws", "comment"):
            continue
        if kind == "word" and m.group().upper() in _GIVE_UP:
            raise _Unsure
        tokens.append((kind, m.group()))
    found = _Reader(tokens).query()
    # patterns with an object first: the likelier to be missing, so looked up first
    return tuple(sorted(dict.fromkeys(found), key=lambda c: any(o is None for _, o in c)))


class _Reader:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.at = 0
        self.prefixes: dict[str, str] = {}

    # -- tokens ---------------------------------------------------------------

    def peek(self, ahead: int = 0) -> tuple[str, str]:
        i = self.at + ahead
        return self.tokens[i] if i < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token[0] == "end":
            raise _Unsure
        self.at += 1
        return token

    def keyword(self, ahead: int = 0) -> str:
        kind, text = self.peek(ahead)
        return text.upper() if kind == "word" and ":" not in text else ""

    def expect(self, text: str) -> None:
        if self.take()[1] != text:
            raise _Unsure

    def skip_balanced(self, opener: str, closer: str) -> None:
        self.expect(opener)
        depth = 1
        while depth:
            text = self.take()[1]
            depth += (text == opener) - (text == closer)

    # -- the query --------------------------------------------------------------

    def query(self) -> Needs:
        while self.keyword() == "PREFIX":
            self.take()
            kind, name = self.take()
            iri = self.take()[1]
            if kind != "word" or not name.endswith(":") or name.count(":") != 1:
                raise _Unsure
            self.prefixes[name[:-1]] = _absolute(iri[1:-1])
        if self.keyword() != "SELECT":
            raise _Unsure
        self.take()
        while self.peek()[1] != "{":  # the projection: variables, *, DISTINCT, WHERE
            kind, text = self.take()
            if not (kind == "var" or text == "*" or self.is_word(text, *_PROJECTION)):
                raise _Unsure  # an expression in the projection
        found = self.group()
        depth = 0  # what follows (ORDER BY, LIMIT, VALUES) removes rows only, if well formed
        for _kind, text in self.tokens[self.at :]:
            depth += (text in ("(", "{")) - (text in (")", "}"))
            if depth < 0:
                raise _Unsure
        if depth:
            raise _Unsure
        return found

    @staticmethod
    def is_word(text: str, *words: str) -> bool:
        return text.upper() in words

    def group(self) -> Needs:
        """Read ``{ ... }`` (at its ``{``): the clauses every row of it needs."""
        self.expect("{")
        if self.keyword() == "SELECT":  # a sub-SELECT: needs nothing this reading vouches for
            self.at -= 1
            self.skip_balanced("{", "}")
            return ()
        found: list[Clause] = []
        while True:
            kind, text = self.peek()
            word = self.keyword()
            if text == "}":
                self.take()
                return tuple(found)
            if text == "." and kind == "other":
                self.take()
            elif text == "{":
                branches = [self.group()]
                while self.keyword() == "UNION":
                    self.take()
                    branches.append(self.group())
                found += branches[0] if len(branches) == 1 else _either(branches)
            elif word in ("OPTIONAL", "MINUS"):
                self.take()
                self.skip_balanced("{", "}")
            elif word == "GRAPH":
                self.take()
                self.take()  # the graph: a variable or a name, one of the session's graphs
                found += self.group()
            elif word == "FILTER":
                self.take()
                found += self.filter()
            elif word == "BIND":
                self.take()
                self.skip_balanced("(", ")")
            elif word == "VALUES":
                self.take()
                if self.peek()[1] == "(":
                    self.skip_balanced("(", ")")
                else:
                    self.take()
                self.skip_balanced("{", "}")
            elif word:
                raise _Unsure  # a word this reading does not know (UNION first, ...)
            else:
                found += [(p,) for p in self.triples()]

    def filter(self) -> Needs:
        """After FILTER: a positive EXISTS group needs its patterns; anything else nothing."""
        if self.keyword() == "EXISTS":
            self.take()
            return self.group()
        if self.keyword() == "NOT":
            self.take()
            if self.keyword() != "EXISTS":
                raise _Unsure
            self.take()
            self.skip_balanced("{", "}")
            return ()
        if self.peek()[1] == "(":
            if self.keyword(1) == "EXISTS" and self.peek(2)[1] == "{":
                self.take()
                self.take()
                found = self.group()
                if self.take()[1] == ")":
                    return found
                raise _Unsure  # EXISTS { } && ...: read no further than that
            self.skip_balanced("(", ")")
            return ()
        self.take()  # a function call: its name, then its arguments
        self.skip_balanced("(", ")")
        return ()

    # -- triples ----------------------------------------------------------------

    def triples(self) -> list[Pattern]:
        """Triples up to the next item of the group: their ``(predicate, object)``."""
        found: list[Pattern] = []
        while True:
            text = self.peek()[1]
            if text in ("{", "}") or self.keyword() in _ITEMS:
                return found
            self.term(subject=True)
            while True:
                predicate = self.verb()
                while True:
                    obj = self.term(subject=False)
                    found.append((predicate, obj))
                    if self.peek()[1] != ",":
                        break
                    self.take()
                if self.peek()[1] != ";":
                    break
                while self.peek()[1] == ";":
                    self.take()
                if self.peek()[1] in (".", "}"):
                    break
            if self.peek()[1] == ".":
                self.take()
                continue
            return found

    def verb(self) -> IRI:
        kind, text = self.take()
        if kind == "word" and text == "a":
            value = _RDF_TYPE
        elif kind in ("word", "iri"):
            value = self.name(kind, text)
        else:
            raise _Unsure  # a variable predicate, or a path (^, !, (...))
        if self.peek()[0] == "other" and self.peek()[1] in "/|*+?^":
            raise _Unsure  # a property path
        return value

    def term(self, *, subject: bool) -> Term | None:
        """One subject or object: its term, None for a variable or a blank node."""
        kind, text = self.take()
        if kind == "var":
            return None
        if kind == "word" and text.startswith("_:"):
            return None
        if kind == "word" and text in ("true", "false") and not subject:
            return Literal(text, _XSD + "boolean")
        if kind in ("word", "iri"):
            return self.name(kind, text)
        if kind == "str" and not subject:
            if self.peek()[1] in ("^", "@"):
                raise _Unsure  # a typed or language-tagged literal
            return Literal(text[1:-1], _XSD + "string")
        raise _Unsure  # a number, a blank node property list, a collection, a quoted triple

    def name(self, kind: str, text: str) -> IRI:
        if kind == "iri":
            return IRI(_absolute(text[1:-1]))
        prefix, _, local = text.partition(":")
        if not _ or prefix not in self.prefixes or "%" in local or local.startswith("."):
            raise _Unsure
        if local.endswith("."):  # the triple's full stop, read into the name: put it back
            stripped = local.rstrip(".")
            self.tokens[self.at : self.at] = [("other", ".")] * (len(local) - len(stripped))
            local = stripped
        return IRI(self.prefixes[prefix] + local)


def _absolute(iri: str) -> str:
    if not re.match(r"[A-Za-z][A-Za-z0-9+.\-]*:", iri):
        raise _Unsure  # relative: it resolves against a base this reading does not know
    return iri


def _either(branches: list[Needs]) -> list[Clause]:
    """The clauses a UNION needs: one pattern of one clause of each branch, every way."""
    if any(not b for b in branches):
        return []
    combined: list[Clause] = [()]
    for branch in branches:
        combined = [c + clause for c in combined for clause in branch]
        if len(combined) > _MAX_CLAUSES:
            return []
    return [tuple(dict.fromkeys(c)) for c in combined]
