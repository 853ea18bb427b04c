"""What the endpoint must know about a query before any store sees it.

The SPARQL endpoint refuses updates and ``SERVICE`` (it never makes an outbound
request), picks a response format by the query form, and narrows the dataset
by the query's own ``FROM`` / ``FROM NAMED``. All of that is decided here,
before evaluation.

Refusals come from a deliberately conservative scan. It first applies SPARQL's
codepoint escapes (``\\u0053ERVICE`` is ``SERVICE``), blanks out strings and
comments, and then looks at tokens: the word ``SERVICE`` anywhere outside an
IRI, a string or a comment refuses the query, even where the parser might have
read it differently.

The dataset comes from a real SPARQL 1.1 parser (rdflib's grammar), so a
``FROM`` is found wherever the grammar allows one: after a projection that
holds braces (``SELECT (EXISTS { ... } AS ?e) FROM <g>``), after a
``CONSTRUCT`` template, in ``DESCRIBE``. The scan tells whether the parse is
needed at all: a dataset clause needs the keyword ``FROM``, so a query whose
tokens hold no ``FROM`` has none, and costs no parse. A query that holds
``FROM`` but does not parse is refused (400, with the parser's line and
column) rather than run over a dataset the endpoint could not read from it.
Relative IRIs resolve against the query's ``BASE``, itself resolved against
the endpoint's base IRI: the base every store resolves the query with. The
dataset found can only narrow what a token may read (the evaluator intersects
it with the allowed graphs), so a mistake here can never widen access.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from typing import Any

from trails.errors import QueryRefused
from trails.store.base import DEFAULT_BASE_IRI
from trails.store.oxigraph import resolve_iri
from trails.store.terms import IRI

__all__ = ["UPDATE_KEYWORDS", "QueryInfo", "analyse", "parse_graph_iri"]

UPDATE_KEYWORDS = frozenset(
    {"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH"}
)
_FORMS = frozenset({"SELECT", "ASK", "CONSTRUCT", "DESCRIBE"})

_CODEPOINT = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
# Strings (long and short, both quotes) and comments; IRIs are kept as tokens.
_STRINGS_AND_COMMENTS = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n\r]|\\.)*"'
    r"|'(?:[^'\\\n\r]|\\.)*'"
    r"|<[^<>\"{}|^`\\\x00-\x20]*>"
    r"|#[^\n\r]*"
)
_TOKEN = re.compile(
    r"(?P<iri><[^<>\"{}|^`\\\x00-\x20]*>)"
    r"|(?P<pname>(?:[A-Za-z\u00C0-\uFFFF][\w\-.\u00B7-\uFFFF]*)?:[\w\-.:%\\\u00B7-\uFFFF]*)"
    r"|(?P<var>[?$][\w\u00B7-\uFFFF]+)"
    r"|(?P<word>[A-Za-z_][\w\u00B7-\uFFFF]*)"
    r"|(?P<other>\S)"
)


@dataclass(frozen=True)
class QueryInfo:
    """What the scan found: the query form and the dataset the query names itself.

    ``default_graphs`` / ``named_graphs`` are ``None`` when the query has no
    ``FROM`` / ``FROM NAMED`` clause at all; when it has either, the other one is
    an empty tuple (SPARQL: a dataset clause replaces the whole dataset).
    """

    form: str
    default_graphs: tuple[IRI, ...] | None = None
    named_graphs: tuple[IRI, ...] | None = None


def _unescape(text: str) -> str:
    def sub(match: re.Match[str]) -> str:
        code = int(match.group(1) or match.group(2), 16)
        return chr(code) if code <= 0x10FFFF else match.group(0)

    return _CODEPOINT.sub(sub, text)


def _blank(match: re.Match[str]) -> str:
    token = match.group(0)
    # IRIs stay (FROM <iri> is needed); strings and comments become spaces.
    return token if token.startswith("<") else " " * len(token)


def parse_graph_iri(value: str, what: str) -> IRI:
    """A graph IRI from a request parameter or a FROM clause.

    Args:
        value: the IRI text.
        what: where it came from, for the error message.

    Returns:
        The validated absolute IRI.

    Raises:
        QueryRefused: 400, the value is not an absolute IRI.
    """
    try:
        return IRI(value)
    except ValueError:
        raise QueryRefused(f"{what} {value!r} is not an absolute IRI", status=400) from None


def analyse(text: str, base_iri: str = DEFAULT_BASE_IRI) -> QueryInfo:
    """Refuse updates and SERVICE, find the query's form and its dataset clauses.

    Args:
        text: the SPARQL query as received.
        base_iri: the base relative IRIs resolve against (the stores' base IRI).

    Returns:
        The query form (``SELECT`` when the scan cannot tell; the parser will
        then report the syntax error) and its ``FROM`` / ``FROM NAMED`` graphs.

    Raises:
        QueryRefused: 403 for SPARQL Update (``LOAD`` included) and ``SERVICE``;
            400 for a query with ``FROM`` that does not parse, or whose ``FROM``
            names no IRI.
    """
    if len(text) <= _KEPT_TEXT:
        return _analysed(text, base_iri)
    return _analyse(text, base_iri)


#: texts up to this many characters have their analysis kept (the 256 latest)
_KEPT_TEXT = 16 * 1024


@functools.lru_cache(maxsize=256)
def _analysed(text: str, base_iri: str) -> QueryInfo:
    """``_analyse``, kept per text: a dashboard asks the same queries again and again
    (a refusal raises, and is not kept)."""
    return _analyse(text, base_iri)


def _analyse(text: str, base_iri: str) -> QueryInfo:
    scrubbed = _STRINGS_AND_COMMENTS.sub(_blank, _unescape(text))
    tokens = [(m.lastgroup or "other", m.group(0)) for m in _TOKEN.finditer(scrubbed)]
    words = {value.upper() for kind, value in tokens if kind == "word"}
    if "SERVICE" in words:
        raise QueryRefused(
            "SERVICE (federated query) is refused: this endpoint never makes outbound requests"
        )
    form = ""
    position = 0
    while position < len(tokens):
        kind, value = tokens[position]
        upper = value.upper() if kind == "word" else ""
        if upper == "BASE" and position + 1 < len(tokens) and tokens[position + 1][0] == "iri":
            position += 2
        elif (
            upper == "PREFIX"
            and position + 2 < len(tokens)
            and tokens[position + 1][0] == "pname"
            and tokens[position + 2][0] == "iri"
        ):
            position += 3
        else:
            if upper in UPDATE_KEYWORDS:
                raise QueryRefused(
                    f"SPARQL Update ({upper}) is refused: this endpoint is read-only"
                )
            form = upper if upper in _FORMS else ""
            break
    form = form or "SELECT"
    if "FROM" not in words:  # no dataset clause is possible without the keyword
        return QueryInfo(form)
    return _parsed(text, base_iri)


_PARSE_LOCK = threading.Lock()
_FORM_OF = {
    "SelectQuery": "SELECT",
    "ConstructQuery": "CONSTRUCT",
    "AskQuery": "ASK",
    "DescribeQuery": "DESCRIBE",
}


@functools.lru_cache(maxsize=512)
def _parsed(text: str, base_iri: str) -> QueryInfo:
    """Form and dataset clauses by rdflib's SPARQL 1.1 parser (cached: pack queries repeat)."""
    from pyparsing import ParseBaseException
    from rdflib.plugins.sparql.parser import parseQuery

    try:
        with _PARSE_LOCK:  # pyparsing's packrat cache is shared by every thread
            parsed = parseQuery(text)
    except ParseBaseException as exc:
        message = re.sub(r"\s*\(at char \d+\).*$", "", str(exc.msg))
        raise QueryRefused(
            f"the query does not parse: {message} at line {exc.lineno}, column {exc.col}",
            status=400,
        ) from None
    prologue, query = parsed[0], parsed[1]
    base = base_iri
    prefixes: dict[str, str] = {}
    for decl in prologue:
        if decl.name == "Base":
            base = _absolute(str(decl.iri), base, "BASE")
        elif decl.name == "PrefixDecl":
            prefixes[str(decl.prefix or "")] = _absolute(str(decl.iri), base, "PREFIX")
    default: list[IRI] = []
    named: list[IRI] = []
    clauses = query.get("datasetClause") or []
    for clause in clauses:
        target, value = (
            (named, clause["named"]) if "named" in clause else (default, clause["default"])
        )
        target.append(_graph(value, base, prefixes))
    form = _FORM_OF.get(query.name, "SELECT")
    if not clauses:
        return QueryInfo(form)
    return QueryInfo(form, tuple(default), tuple(named))


def _absolute(reference: str, base: str, what: str) -> str:
    try:
        return resolve_iri(reference, base)
    except ValueError:
        raise QueryRefused(f"{what} <{reference}> is not a valid IRI", status=400) from None


def _graph(value: Any, base: str, prefixes: dict[str, str]) -> IRI:
    if getattr(value, "name", None) == "pname":
        prefix, local = str(value.prefix or ""), str(value.localname or "")
        if prefix not in prefixes:
            raise QueryRefused(f"FROM {prefix}:{local} uses an undeclared prefix", status=400)
        return parse_graph_iri(prefixes[prefix] + local, "FROM")
    return parse_graph_iri(_absolute(str(value), base, "FROM"), "FROM")
