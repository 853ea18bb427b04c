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

Parameters follow the embedded store's semantics (pyoxigraph
``substitutions``, SPARQL SEP-0007): the variable is pre-bound to the term
for the whole evaluation, so FILTERs in nested groups, OPTIONALs, EXISTS and
subqueries see the value, and a SELECT returns it in its column. That is
reproduced on the text, outside strings, IRIs and comments:

- inside a query pattern (the WHERE group and everything nested in it, the
  CONSTRUCT template, DESCRIBE targets) each ``?name`` / ``$name`` is
  replaced by the term, so the server sees a constant exactly where the
  embedded store sees a pre-bound variable;
- a SELECT (the outer one and every subquery) keeps the variable in its
  projection and solution modifiers (GROUP BY, HAVING, ORDER BY) and gets
  ``BIND(<term> AS ?name)`` as the first element of its WHERE group, so the
  column exists, holds the term on every row and can be grouped on.

Not expressible that way, and refused with ``QueryParameterError`` rather than
silently changed: a parameter the query assigns itself (``BIND(... AS
?name)``, ``(... AS ?name)``) or lists in a ``VALUES`` clause. As on the
embedded store, a parameter must occur in the query, and a SELECT must
project it. Blank nodes cannot be parameters: a label in query text names a
fresh variable-like node on the server, not a stored blank node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from trails.errors import QueryParameterError
from trails.store.terms import BNode, Literal, Quad, Term

__all__ = ["bind_params", "quad_ntriples", "query_form", "term_n3"]

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


@dataclass
class _Frame:
    kind: str  # "top", "head", "body", "template", "describe", "mods", "values"
    depth: int  # brace depth of the frame's own group (its closing brace ends it)
    paren: int = 0  # paren depth where a SELECT head started
    select: bool = False  # a SELECT body: gets the BIND prelude, then solution modifiers


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


def bind_params(sparql: str, params: Mapping[str, Term] | None) -> str:
    """Rewrite ``sparql`` so that each parameter is bound to its term (see the module docstring).

    Args:
        sparql: the query text, with parameters written ``?name`` or ``$name``.
        params: variable name (without ``?``/``$``) to term.

    Returns:
        The query text to send; ``sparql`` unchanged when there are no params.

    Raises:
        QueryParameterError: a bad name or term, a parameter the query does not use
            or a SELECT does not project, or one the query assigns itself.
    """
    if not params:
        return sparql
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
    tokens = [(m.lastgroup or "other", m.group()) for m in _TOKEN.finditer(sparql)]
    return _Rewriter(values, tokens).run()


class _Rewriter:
    """One pass over the tokens with a stack of syntactic regions."""

    def __init__(self, values: dict[str, str], tokens: list[tuple[str, str]]) -> None:
        self.values = values
        self.tokens = tokens
        self.used: set[str] = set()
        self.projected: set[str] = set()
        self.star = False
        self.top_form = ""

    def _prelude(self) -> str:
        return "".join(f" BIND({self.values[n]} AS ?{n})" for n in sorted(self.values))

    def run(self) -> str:
        out: list[str] = []
        stack = [_Frame("top", 0)]
        depth = paren = 0
        previous = ""  # last significant token, upper-cased
        in_values = False  # between VALUES and its data block
        for kind, text in self.tokens:
            frame = stack[-1]
            if kind in ("ws", "skip"):
                out.append(text)
                continue
            upper = text.upper()
            if kind == "word":
                if upper == "SELECT":
                    self.top_form = self.top_form or "SELECT"
                    stack.append(_Frame("head", depth, paren=paren, select=True))
                elif upper in ("ASK", "CONSTRUCT", "DESCRIBE") and frame.kind == "top":
                    self.top_form = self.top_form or upper
                    if upper == "DESCRIBE":
                        stack.append(_Frame("describe", depth))
                elif upper == "VALUES":
                    in_values = True
                elif upper == "WHERE" and frame.kind == "describe":
                    stack.pop()
            elif kind == "var":
                text = self._var(text, frame, previous, in_values, paren)
            elif text == "*" and frame.kind == "head" and frame.depth == 0:
                self.star = True
            elif text == "(":
                paren += 1
            elif text == ")":
                paren -= 1
            elif text == "{":
                depth += 1
                if in_values:
                    in_values = False
                    stack.append(_Frame("values", depth))
                elif frame.kind == "head" and paren == frame.paren:
                    stack[-1] = _Frame("body", depth, select=True)
                    text += self._prelude()
                elif frame.kind == "describe":
                    stack[-1] = _Frame("body", depth)
                elif frame.kind == "top":
                    region = "template" if previous == "CONSTRUCT" else "body"
                    stack.append(_Frame(region, depth))
            elif text == "}":
                if frame.depth == depth and frame.kind in ("body", "template", "values"):
                    stack.pop()
                    if frame.select:
                        stack.append(_Frame("mods", depth - 1))
                elif frame.kind == "mods" and frame.depth == depth:
                    stack.pop()  # the group around a subquery closes
                depth -= 1
            out.append(text)
            previous = upper
        self._check()
        return "".join(out)

    def _check(self) -> None:
        missing = sorted(set(self.values) - self.used)
        if missing:
            raise QueryParameterError(
                f"query parameters rejected: the query does not use "
                f"{', '.join('?' + m for m in missing)}"
            )
        if self.top_form == "SELECT" and not self.star:
            unprojected = sorted(set(self.values) - self.projected)
            if unprojected:
                raise QueryParameterError(
                    f"query parameters rejected: a SELECT must project its parameters to bind "
                    f"them; add {', '.join('?' + u for u in unprojected)} to the SELECT clause"
                )

    def _var(self, text: str, frame: _Frame, previous: str, in_values: bool, paren: int) -> str:
        name = text[1:]
        if name not in self.values:
            return text
        self.used.add(name)
        if previous == "AS":
            raise QueryParameterError(
                f"query parameters rejected: the query assigns ?{name} itself "
                f"(... AS ?{name}); a parameter cannot also be computed"
            )
        if in_values:
            raise QueryParameterError(
                f"query parameters rejected: ?{name} is listed in a VALUES clause; "
                f"bind it as a parameter or list it in VALUES, not both"
            )
        if frame.kind == "head":
            if frame.depth == 0 and paren == frame.paren:
                self.projected.add(name)
            return "?" + name
        if frame.kind in ("mods", "top"):
            return "?" + name
        return self.values[name]
