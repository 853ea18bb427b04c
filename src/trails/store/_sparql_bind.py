"""Safe SPARQL text for a remote server: term serialisation and parameter binding.

A SPARQL server only takes text, so everything the remote store sends is
built here from validated terms, never by formatting caller input.

Terms are written in their N-Triples form (``.n3()``) after re-validation:
an ``IRI`` may have been made with ``IRI.trusted`` and a ``BNode`` label is
not checked at construction, so both are checked again before they reach the
wire. Literal lexical forms escape backslash, quote and line breaks, so no
value can end the string it is written in; because every backslash of a value
is doubled, even a server that expands ``\\uXXXX`` escapes before parsing (as
the SPARQL grammar allows) only ever sees an escaped character, never a
closing quote.

Parameters are the query's own variable pre-bound to a term, with SPARQL's
scoping. Both stores run the same rewritten text (docs/remote-store.md says
why pyoxigraph's own ``substitutions`` are not used in general); the embedded
one pre-binds itself only where ``prebinds`` finds the query outside every case
where the two differ. The query is read into scopes (the query and
each sub-SELECT) and brace blocks (groups, VALUES data, templates), outside
strings, IRIs and comments; then, per parameter ``?x`` bound to ``t``:

- every group that mentions ``?x`` in the query's scope (directly, in a nested
  group, in an EXISTS, or through a sub-SELECT that projects it) starts with
  ``BIND(t AS ?x)``, and ``?x`` in its triple patterns becomes ``t``: FILTERs,
  ``BOUND``, aggregates, ``GROUP BY`` and ``MINUS`` see a bound variable, and
  the server can use the constant to find the triples;
- the WHERE group of the query always gets it, so a SELECT returns the column;
- a sub-SELECT that does not project ``?x`` has a ``?x`` of its own: untouched;
  one that projects it (or ``*`` with ``?x`` in scope) is bound inside, before
  its LIMIT, as pyoxigraph does;
- the right side of a ``MINUS`` that never mentions ``?x`` is not bound (bound,
  it would share ``?x`` with every row and remove them all);
- ``VALUES ?x { ... }`` is joined with the bound value; ``CONSTRUCT WHERE { T }``
  becomes ``CONSTRUCT { T } WHERE { ... }``; ``DESCRIBE ?x`` without WHERE
  describes ``t``.

Refused with ``QueryParameterError`` rather than silently changed: a
parameter the query assigns itself (``BIND(... AS ?x)``, ``(... AS ?x)``), one
the query does not use (or only inside a sub-SELECT of its own), one a SELECT
does not project, a blank node, unbalanced braces.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from trails.errors import QueryParameterError
from trails.store.terms import BNode, Literal, Quad, Term

__all__ = ["bind_params", "prebinds", "quad_ntriples", "query_form", "term_n3"]

_IRI_OK = re.compile(r'[A-Za-z][A-Za-z0-9+.\-]*:[^\x00-\x20<>"{}|^`\\]*')
_BNODE_OK = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?")
_VARNAME = re.compile(r"[A-Za-z0-9_\u00C0-\uFFFF]+")

_TOKEN = re.compile(
    r'(?P<skip>"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n\r]|\\.)*"'
    r"|'(?:[^'\\\n\r]|\\.)*'"
    r"|<[^<>\"{}|^`\\\x00-\x20]*>"
    r"|\#[^\n]*)"
    r"|(?P<var>[?$][\w\u00B7\u0300-\u036F\u203F\u2040]+)"
    r"|(?P<word>[A-Za-z_][\w\-]*(?::[\w\-.%:]*)?)"
    r"|(?P<punct>[{}()])"
    r"|(?P<ws>\s+)"
    r"|(?P<other>.)",
    re.DOTALL,
)
_FORMS = ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")


def term_n3(term: Term) -> str:
    """The N-Triples form of ``term``, validated for use in SPARQL text.

    Args:
        term: an ``IRI``, ``BNode`` or ``Literal``.

    Returns:
        Text that the SPARQL grammar reads as exactly that one term.

    Raises:
        ValueError: the IRI, blank node label, datatype or language tag is invalid.
    """
    if isinstance(term, Literal):
        if not _IRI_OK.fullmatch(term.datatype):
            raise ValueError(f"not an absolute IRI: {term.datatype!r}")
        return term.n3()
    if isinstance(term, BNode):
        if not _BNODE_OK.fullmatch(term):
            raise ValueError(f"bad blank node label: {str(term)!r}")
        return f"_:{term}"
    if isinstance(term, str) and _IRI_OK.fullmatch(term):
        return f"<{term}>"
    raise ValueError(f"not an absolute IRI: {term!r}")


def quad_ntriples(quad: Quad) -> str:
    """``s p o .`` of one quad, every term validated (the graph is written by the caller).

    Raises:
        ValueError: a term is invalid.
    """
    s, p, o, _ = quad
    if isinstance(p, BNode | Literal):
        raise ValueError(f"a predicate must be an IRI, not {p!r}")
    if isinstance(s, Literal):
        raise ValueError(f"a subject cannot be a literal: {s!r}")
    return f"{term_n3(s)} {term_n3(p)} {term_n3(o)} ."


def query_form(sparql: str) -> str:
    """SELECT, ASK, CONSTRUCT or DESCRIBE: the first form keyword outside strings, IRIs, comments.

    Returns:
        The upper-case keyword, or ``""`` when there is none (an update, or not SPARQL).
    """
    for match in _TOKEN.finditer(sparql):
        word = match.group("word")
        if word and word.upper() in _FORMS:
            return word.upper()
    return ""


def _checked_values(params: Mapping[str, Term]) -> dict[str, str]:
    values: dict[str, str] = {}
    for name, term in params.items():
        if not isinstance(name, str) or not _VARNAME.fullmatch(name):
            raise QueryParameterError(f"bad parameter name {name!r}")
        if isinstance(term, BNode):
            raise QueryParameterError(
                f"parameter {name!r} is a blank node; a SPARQL server cannot match a "
                f"stored blank node by label, bind an IRI or a literal"
            )
        try:
            values[name] = term_n3(term)
        except (ValueError, TypeError) as exc:
            raise QueryParameterError(f"parameter {name!r} is not a valid RDF term: {exc}") from exc
    return values


def bind_params(
    sparql: str, params: Mapping[str, Term] | None, *, close_groups: bool = False
) -> str:
    """Rewrite ``sparql`` so that each parameter is bound to its term (see the module docstring).

    Args:
        sparql: the query text, with parameters written ``?name`` or ``$name``.
        params: variable name (without ``?``/``$``) to term.
        close_groups: put a group's ``BIND`` at its end when nothing in the group binds
            or reads the parameter before (Oxigraph then starts from the constant
            instead of evaluating an empty pattern once per graph; the same answers by
            SPARQL's semantics, but Virtuoso 7.2 answers some such texts wrongly, so
            the remote store keeps the BIND first).

    Returns:
        The query text to send; ``sparql`` unchanged when there are no params.

    Raises:
        QueryParameterError: a bad name or term, a parameter the query does not use
            or a SELECT does not project, or one the query assigns itself.
    """
    if not params:
        return sparql
    values = _checked_values(params)
    parsed = _parsed(sparql, frozenset(values))
    rewrite = parsed.rewrites.get(close_groups)
    if rewrite is None:  # where each value goes depends on the names only: once
        slots = {name: f"{_SLOT}{name}{_SLOT}" for name in values}
        rewrite = _Binder(parsed, slots, close_groups).text().split(_SLOT)
        parsed.rewrites[close_groups] = rewrite
    # text and parameter names alternate: the values go where the names are
    return "".join(values[p] if i % 2 else p for i, p in enumerate(rewrite))


#: words that put a query outside the class where pre-binding is the rewrite's answer
_NOT_PREBOUND = frozenset(
    {
        "MINUS", "EXISTS", "BOUND", "VALUES", "SERVICE", "UNION", "GROUP", "HAVING",
        "COUNT", "SUM", "AVG", "MIN", "MAX", "SAMPLE", "GROUP_CONCAT",
    }
)  # fmt: skip


def prebinds(sparql: str, params: Mapping[str, Term]) -> bool:
    """Whether pyoxigraph's own pre-binding (``substitutions``) answers ``sparql`` with
    ``params`` exactly as the rewritten text does, so the embedded store may use it.

    It does for a SELECT that projects each parameter and binds it in a triple pattern
    outside OPTIONAL, with no MINUS, EXISTS, BOUND, VALUES, SERVICE, UNION, sub-SELECT,
    GROUP BY or aggregate: the constructs where the two differ (docs/remote-store.md)
    or where the rewrite places the value itself. The per-session queries of the pack
    are of this kind; pre-bound, Oxigraph plans them as it plans the raw query.

    Raises:
        QueryParameterError: as ``bind_params`` (a parameter the query assigns itself,
            unbalanced braces).
    """
    if not params:
        return False
    parsed = _parsed(sparql, frozenset(params))
    if parsed.prebound is None:
        parsed.prebound = _prebound(parsed)
    return parsed.prebound


def _prebound(parsed: _Parser) -> bool:
    top = parsed.top
    if top.form != "SELECT" or top.where is None or any(b.subselect for b in parsed.blocks):
        return False
    if any(k == "word" and t.upper() in _NOT_PREBOUND for k, t in parsed.tokens):
        return False
    names = parsed.names
    if not top.star and not names <= top.projected:
        return False
    return names <= _required(top.where)


def _required(block: _Block) -> set[str]:
    """Parameters a triple pattern binds on every row of ``block`` (not in OPTIONAL)."""
    found = set(block.pattern)
    for child in block.children:
        if child.scope is block.scope and not child.in_expr and child.opener != "OPTIONAL":
            found |= _required(child)
    return found


#: marks where a value goes in a cached rewrite (no query text can hold it: NUL + a nonce)
_SLOT = f"\x00{uuid.uuid4().hex}\x00"


@lru_cache(maxsize=512)
def _parsed(sparql: str, names: frozenset[str]) -> _Parser:
    """The query read once per text and parameter names (the query pack repeats them)."""
    tokens = [(m.lastgroup or "other", m.group()) for m in _TOKEN.finditer(sparql)]
    parsed = _Parser(set(names), tokens)
    parsed.parse()
    return parsed


@dataclass(eq=False)
class _Scope:
    """The query itself or one sub-SELECT: a scope of variables."""

    parent: _Scope | None
    form: str = ""
    projected: set[str] = field(default_factory=set)
    star: bool = False
    where: _Block | None = None
    outside: set[str] = field(default_factory=set)  # used outside the WHERE group


@dataclass(eq=False)
class _Block:
    """One ``{ ... }``: a group graph pattern, a VALUES data block or a CONSTRUCT template."""

    kind: str  # "group", "values", "template", "short" (the group of CONSTRUCT WHERE { })
    scope: _Scope
    open: int  # token index of its ``{``
    paren: int  # parenthesis depth at the brace
    opener: str = ""  # the significant token before the brace (OPTIONAL, MINUS, ...)
    opener_at: int = -1
    in_expr: bool = False  # inside parentheses of its parent (EXISTS in a FILTER or BIND)
    close: int = -1
    seen: bool = False  # a significant token followed the brace
    subselect: _Scope | None = None  # the braces hold one sub-SELECT
    children: list[_Block] = field(default_factory=list)
    mentions: set[str] = field(default_factory=set)  # parameters written directly in it
    pattern: set[str] = field(default_factory=set)  # ... outside parentheses (in scope)
    terms: list[tuple[int, str]] = field(default_factory=list)  # (token, name) in triple patterns


class _Parser:
    """Scopes and brace blocks of a query, read from its tokens in one pass."""

    def __init__(self, names: set[str], tokens: list[tuple[str, str]]) -> None:
        self.names = names
        self.tokens = tokens
        self.top = _Scope(None)
        self.blocks: list[_Block] = []
        self.describe_vars: list[int] = []
        self.template = False
        #: the rewritten text, split at the parameters' values (see ``bind_params``)
        self.rewrites: dict[bool, list[str]] = {}
        self.prebound: bool | None = None  # see ``prebinds``

    def parse(self) -> None:
        scopes = [self.top]
        stack: list[_Block] = []
        heads: list[tuple[_Scope, int]] = []  # SELECT clauses being read, with their paren depth
        paren = 0
        previous = ""
        values_head = False
        for index, (kind, text) in enumerate(self.tokens):
            if kind in ("ws", "skip"):
                continue
            block = stack[-1] if stack else None
            upper = text.upper()
            if kind == "word":
                if upper == "SELECT":
                    if block is None:
                        self.top.form = self.top.form or "SELECT"
                        heads.append((self.top, paren))
                    else:
                        if block.seen:
                            raise _refuse("a sub-SELECT must be alone in its braces")
                        sub = _Scope(scopes[-1])
                        sub.form = "SELECT"
                        block.subselect = sub
                        scopes.append(sub)
                        heads.append((sub, paren))
                elif upper in ("ASK", "CONSTRUCT", "DESCRIBE") and block is None:
                    self.top.form = self.top.form or upper
                elif upper == "VALUES":
                    values_head = True
            elif kind == "var":
                self._var(
                    text[1:],
                    index,
                    block,
                    scope=scopes[-1],
                    heads=heads,
                    paren=paren,
                    previous=previous,
                    values_head=values_head,
                )
            elif text == "*" and heads and paren == heads[-1][1]:
                heads[-1][0].star = True
            elif text == "(":
                paren += 1
            elif text == ")":
                paren -= 1
            elif text == "{":
                if block is not None:
                    block.seen = True
                new = self._open(
                    index,
                    block,
                    scope=scopes[-1],
                    heads=heads,
                    paren=paren,
                    previous=previous,
                    values_head=values_head,
                )
                values_head = False
                stack.append(new)
                previous = "{"
                continue
            elif text == "}":
                if block is None:
                    raise _refuse("unbalanced braces")
                block.close = index
                stack.pop()
                if block.subselect is not None:
                    scopes.pop()
            if block is not None:
                block.seen = True
            previous = upper
        if stack or heads or paren:
            raise _refuse("the query is incomplete (unbalanced braces or parentheses)")

    def _open(
        self,
        index: int,
        block: _Block | None,
        *,
        scope: _Scope,
        heads: list[tuple[_Scope, int]],
        paren: int,
        previous: str,
        values_head: bool,
    ) -> _Block:
        """The block a ``{`` at token ``index`` opens inside ``block`` (None: at the top).

        The keywords are ``parse``'s state at that token: the innermost scope, the
        SELECT clauses being read, the parenthesis depth, the significant token
        before it, and whether it follows ``VALUES``.
        """
        opener_at = self._previous_index(index)
        if values_head:
            new = _Block("values", scope, index, paren)
        elif heads and paren == heads[-1][1]:
            owner = heads.pop()[0]
            new = _Block("group", owner, index, paren, opener="WHERE")
            owner.where = new
        elif block is None and previous == "CONSTRUCT":
            new = _Block("template", scope, index, paren)
            self.template = True
        elif block is None:
            short = previous == "WHERE" and self.top.form == "CONSTRUCT" and not self.template
            new = _Block("short" if short else "group", scope, index, paren, opener=previous)
            self.top.where = new
        else:
            new = _Block("group", scope, index, paren, opener=previous)
        new.opener_at = opener_at
        if block is not None:
            new.in_expr = paren > block.paren or previous == "EXISTS"
            block.children.append(new)
        self.blocks.append(new)
        return new

    def _previous_index(self, index: int) -> int:
        for i in range(index - 1, -1, -1):
            if self.tokens[i][0] not in ("ws", "skip"):
                return i
        return -1

    def _var(
        self,
        name: str,
        index: int,
        block: _Block | None,
        *,
        scope: _Scope,
        heads: list[tuple[_Scope, int]],
        paren: int,
        previous: str,
        values_head: bool,
    ) -> None:
        """Note where ``?name`` (token ``index``, inside ``block``) is used, if a parameter.

        The keywords are ``parse``'s state at that token, as for ``_open``.
        """
        if name not in self.names:
            return
        if previous == "AS":
            raise _refuse(
                f"the query assigns ?{name} itself (... AS ?{name}); a parameter cannot also "
                f"be computed"
            )
        if heads and heads[-1][0] is scope:
            if paren == heads[-1][1]:
                scope.projected.add(name)
            else:
                scope.outside.add(name)
            return
        if block is None or block.scope is not scope or block.kind == "template":
            scope.outside.add(name)  # solution modifiers, a template, DESCRIBE targets
            if block is None and self.top.form == "DESCRIBE":
                self.describe_vars.append(index)
            return
        block.mentions.add(name)
        if paren == block.paren or values_head:
            block.pattern.add(name)
        if paren == block.paren and not values_head and block.kind in ("group", "short"):
            block.terms.append((index, name))


def _refuse(why: str) -> QueryParameterError:
    return QueryParameterError(f"query parameters rejected: {why}")


class _Binder:
    """Decides, per parameter, which groups bind it, and writes the query text."""

    def __init__(self, parsed: _Parser, values: dict[str, str], close_groups: bool) -> None:
        self.p = parsed
        self.values = values
        self.close_groups = close_groups

    def binds(self, scope: _Scope, name: str) -> bool:
        """Whether ``?name`` in ``scope`` is the query's own ``?name`` (the parameter)."""
        if scope.parent is None:
            return True
        if not self.binds(scope.parent, name):
            return False
        if name in scope.projected:
            return True
        return scope.star and scope.where is not None and name in self.in_scope(scope.where)

    def in_scope(self, block: _Block) -> set[str]:
        """Parameters in scope of a group: written in its patterns, not in FILTER or MINUS."""
        found = set(block.pattern)
        if block.subselect is not None:
            sub = block.subselect
            found |= sub.projected
            if sub.star and sub.where is not None:
                found |= self.in_scope(sub.where)
        for child in block.children:
            if child.scope is block.scope and not child.in_expr and child.opener != "MINUS":
                found |= self.in_scope(child)
        return found

    def mentions(self, block: _Block, name: str) -> bool:
        if name in block.mentions:
            return True
        if block.subselect is not None and self.binds(block.subselect, name):
            return True
        return any(c.scope is block.scope and self.mentions(c, name) for c in block.children)

    def text(self) -> str:
        top = self.p.top
        for name in sorted(self.values):
            used = name in top.projected or name in top.outside
            if top.where is not None and self.mentions(top.where, name):
                used = True
            if not used:
                raise _refuse(f"the query does not use ?{name}")
        if top.form == "SELECT":
            projected = top.projected
            if top.star:  # SELECT * projects the variables in scope of its WHERE group
                projected = self.in_scope(top.where) if top.where is not None else set()
            unprojected = sorted(set(self.values) - projected)
            if unprojected:
                raise _refuse(
                    f"a SELECT must project its parameters to bind them (not in its projection); add "
                    f"{', '.join('?' + u for u in unprojected)} to the SELECT clause"
                )
        after: dict[int, str] = {}
        before: dict[int, str] = {}
        constant: dict[int, str] = {}
        for block in self.p.blocks:
            if block.kind not in ("group", "short"):
                continue
            for index, name in block.terms:
                if self.binds(block.scope, name):
                    constant[index] = self.values[name]
            names = [
                n
                for n in sorted(self.values)
                if self.binds(block.scope, n)
                and (block is block.scope.where or self.mentions(block, n))
            ]
            if not names:
                continue
            data = "".join(f" BIND({self.values[n]} AS ?{n})" for n in names)
            if block.subselect is not None:  # a sub-SELECT is alone in its braces: wrap it
                after[block.open] = data + " {"
                before[block.close] = "} "
            elif (
                self.close_groups
                and block.kind == "group"
                and not any(self.mentions(c, n) for c in block.children for n in names)
                and not any(
                    t.upper() in ("VALUES", "BIND")
                    for _, t in self.p.tokens[block.open : block.close]
                )
            ):
                # nothing in the group binds or reads the parameter before its end (its
                # triple patterns hold the constant; no nested group, VALUES or BIND: a
                # BIND reads it where it stands, so it must be bound before), so
                # the BIND may close the group: the same
                # answers, and the engine starts from the constant instead of evaluating
                # an empty pattern first (inside GRAPH ?g that is one row per graph)
                before[block.close] = data + " "
            else:
                after[block.open] = data
            if block.kind == "short":  # CONSTRUCT WHERE { T } -> CONSTRUCT { T } WHERE { ... T }
                original = "".join(t for _, t in self.p.tokens[block.open : block.close + 1])
                before[block.opener_at] = original + " "
        out: list[str] = []
        if top.where is None:
            constant.update((i, self.values[self.p.tokens[i][1][1:]]) for i in self.p.describe_vars)
        for index, (_, token) in enumerate(self.p.tokens):
            out.append(before.get(index, ""))
            token = constant.get(index, token)
            out.append(token)
            out.append(after.get(index, ""))
        return "".join(out)
