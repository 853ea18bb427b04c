"""What the endpoint must know about a query before any store sees it.

The SPARQL endpoint refuses updates and ``SERVICE`` (it never makes an outbound
request), picks a response format by the query form, and narrows the dataset
by the query's own ``FROM`` / ``FROM NAMED``. All of that is decided here, on
the text alone, before evaluation: the store's parser then gives the precise
syntax errors (line and column) for everything this scan lets through.

The scan is deliberately conservative. It first applies SPARQL's codepoint
escapes (``\\u0053ERVICE`` is ``SERVICE``), blanks out strings and comments,
and then looks at tokens: the word ``SERVICE`` anywhere outside an IRI, a
string or a comment refuses the query, even where the parser might have read
it differently. The dataset it extracts can only narrow what a token may read
(the evaluator intersects it with the allowed graphs), so a mistake here can
never widen access.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin

from trails.errors import QueryRefused
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


def analyse(text: str) -> QueryInfo:
    """Scan query text: refuse updates and SERVICE, find the form and its dataset clauses.

    Args:
        text: the SPARQL query as received.

    Returns:
        The query form (``SELECT`` when the scan cannot tell; the parser will
        then report the syntax error) and its ``FROM`` / ``FROM NAMED`` graphs.

    Raises:
        QueryRefused: 403 for SPARQL Update (``LOAD`` included) and ``SERVICE``;
            400 for a ``FROM`` that names no absolute IRI.
    """
    scrubbed = _STRINGS_AND_COMMENTS.sub(_blank, _unescape(text))
    tokens = [(m.lastgroup or "other", m.group(0)) for m in _TOKEN.finditer(scrubbed)]
    words = {value.upper() for kind, value in tokens if kind == "word"}
    if "SERVICE" in words:
        raise QueryRefused(
            "SERVICE (federated query) is refused: this endpoint never makes outbound requests"
        )
    base = ""
    prefixes: dict[str, str] = {}
    form = ""
    position = 0
    while position < len(tokens):
        kind, value = tokens[position]
        upper = value.upper() if kind == "word" else ""
        if upper == "BASE" and position + 1 < len(tokens) and tokens[position + 1][0] == "iri":
            base = urljoin(base, tokens[position + 1][1][1:-1])
            position += 2
        elif (
            upper == "PREFIX"
            and position + 2 < len(tokens)
            and tokens[position + 1][0] == "pname"
            and tokens[position + 2][0] == "iri"
        ):
            name = tokens[position + 1][1].split(":", 1)[0]
            prefixes[name] = urljoin(base, tokens[position + 2][1][1:-1])
            position += 3
        else:
            if upper in UPDATE_KEYWORDS:
                raise QueryRefused(
                    f"SPARQL Update ({upper}) is refused: this endpoint is read-only"
                )
            form = upper if upper in _FORMS else ""
            break
    default: list[IRI] = []
    named: list[IRI] = []
    seen_clause = False
    index = position + 1
    if form == "CONSTRUCT" and index < len(tokens) and tokens[index][1] == "{":
        depth = 0  # skip the template: dataset clauses come after it
        while index < len(tokens):
            depth += {"{": 1, "}": -1}.get(tokens[index][1], 0)
            index += 1
            if depth == 0:
                break
    while index < len(tokens) and tokens[index][1] != "{":
        kind, value = tokens[index]
        if kind == "word" and value.upper() == "FROM":
            seen_clause = True
            target = default
            index += 1
            if index < len(tokens) and tokens[index][1].upper() == "NAMED":
                target = named
                index += 1
            if index < len(tokens):
                target.append(_resolve(tokens[index], base, prefixes))
        index += 1
    if not seen_clause:
        return QueryInfo(form or "SELECT")
    return QueryInfo(form or "SELECT", tuple(default), tuple(named))


def _resolve(token: tuple[str, str], base: str, prefixes: dict[str, str]) -> IRI:
    kind, value = token
    if kind == "iri":
        return parse_graph_iri(urljoin(base, value[1:-1]) if base else value[1:-1], "FROM")
    if kind == "pname":
        prefix, local = value.split(":", 1)
        if prefix in prefixes:
            return parse_graph_iri(prefixes[prefix] + local, "FROM")
    raise QueryRefused(f"FROM {value!r} does not name a graph IRI", status=400)
