"""The regulator query pack: ``queries/*.rq`` loaded by name, parameters checked at load.

Each file starts with a header of ``#`` comment lines::

    # title: Sessions
    # description: Every session, who ran it, when it started and ended.
    # param: principal iri optional -- only sessions of this principal
    # param: since datetime optional -- started at or after this time

Parameters are written ``$name`` in the body (ordinary variables use
``?name``; to SPARQL both are the same variable). Values are bound as RDF
terms by pre-binding the variable (SPARQL SEP-0007 substitution), never
formatted into the text. So an equality filter is just the variable in a
pattern (``?s prov:wasAssociatedWith $principal``), and a parameter left out
stays a free variable, or unbound in a ``FILTER(!BOUND($since) || ...)``.
Pre-binding requires a SELECT query to project every parameter.

Loading fails, naming the file, when a declared parameter is not used, a
``$name`` is not declared, or a SELECT does not project a parameter.
``check_syntax`` parses the text with the store's SPARQL parser and reports
the file, line and column of a syntax error; pack files and ad-hoc queries
given to ``resolve`` are checked that way before they run.

``resolve(spec)`` is what ``trails query`` calls: a pack name, a path to a
``.rq`` file, or inline SPARQL text, in that order.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from trails.errors import QueryParameterError, QuerySyntaxError, UnknownQuery
from trails.store.base import QueryResult, Store
from trails.store.terms import IRI, Literal, Term, literal

__all__ = [
    "PARAM_TYPES",
    "Param",
    "Query",
    "check_syntax",
    "find_pack_dir",
    "get_query",
    "load_pack",
    "load_query",
    "parse_query",
    "resolve",
]

PARAM_TYPES = ("iri", "string", "datetime", "date", "integer", "decimal", "boolean")

_HEADER = re.compile(r"^#\s*(title|description|param)\s*:\s*(.*)$")
_PARAM = re.compile(
    r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s+(?P<type>\w+)(?P<optional>\s+optional)?\s*(?:--\s*(?P<doc>.*))?$"
)
# Things inside which a "$name" is not a parameter: IRIs, strings, comments.
_SCRUB = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)*'"
    r"|<[^<>\"{}|^`\\\s]*>"
    r"|#[^\n]*"
)
_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    optional: bool = False
    description: str = ""


@dataclass(frozen=True)
class Query:
    """One pack query: its header and SPARQL text."""

    name: str
    path: Path | None
    text: str
    title: str = ""
    description: str = ""
    params: Mapping[str, Param] = field(default_factory=dict)
    # values given as text -> their terms, for a query asked again with the same values
    _bound: dict[tuple[tuple[str, str], ...], dict[str, Term]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def form(self) -> str:
        """SELECT, ASK, CONSTRUCT or DESCRIBE."""
        body = _SCRUB.sub(" ", self.text)
        match = re.search(r"\b(SELECT|ASK|CONSTRUCT|DESCRIBE)\b", body, re.IGNORECASE)
        return match.group(1).upper() if match else "SELECT"

    def bind(self, values: Mapping[str, Any]) -> dict[str, Term]:
        """Turn parameter values (strings from a CLI, or Python values) into RDF terms.

        Raises:
            QueryParameterError: unknown parameter, missing required one, or a value
                that is not of the declared type.
        """
        texts = all(type(v) is str for v in values.values())
        if texts:  # from a CLI or a request: the same text always binds the same way
            key = tuple(values.items())
            hit = self._bound.get(key)
            if hit is not None:
                return dict(hit)
        bound = self._bind(values)
        if texts:
            if len(self._bound) >= 64:
                self._bound.clear()
            self._bound[key] = dict(bound)
        return bound

    def _bind(self, values: Mapping[str, Any]) -> dict[str, Term]:
        unknown = sorted(set(values) - set(self.params))
        if unknown:
            known = ", ".join(self.params) or "none"
            raise QueryParameterError(
                f"query {self.name!r} has no parameter {', '.join(unknown)} (parameters: {known})"
            )
        bound: dict[str, Term] = {}
        for name, param in self.params.items():
            if name not in values or values[name] is None:
                if not param.optional:
                    raise QueryParameterError(
                        f"query {self.name!r} needs parameter {name!r} ({param.type})"
                    )
                continue
            bound[name] = _convert(self.name, param, values[name])
        return bound

    def text_for(self, given: Collection[str]) -> str:
        """The text to run when only the parameters ``given`` have values.

        A parameter that the query only compares (in FILTERs) but also projects, so a
        reader sees what was asked, would be an empty column when it is not given;
        such parameters are left out of the projection (table, CSV, TSV, JSON, XML
        and HTTP answers alike). Parameters that patterns can bind stay.

        Args:
            given: the names of the parameters that have values.

        Returns:
            The SPARQL text.
        """
        missing = [n for n in self.params if n not in given]
        if not missing or self.form != "SELECT":
            return self.text
        masked = _SCRUB.sub(lambda m: " " * len(m.group()), self.text)
        select = re.search(r"\bSELECT\b", masked, re.IGNORECASE)
        if select is None:
            return self.text
        start = end = select.end()
        depth = 0
        while end < len(masked):
            ch = masked[end]
            depth += (ch == "(") - (ch == ")")
            if depth == 0 and (ch == "{" or _CLAUSE.match(masked, end)):
                break
            end += 1
        where = _without_filters(_balanced(masked, masked.find("{", end)))
        # a sub-SELECT's projection passes a parameter in to its FILTERs: it binds nothing
        where = re.sub(r"\bSELECT\b[^{]*", " ", where, flags=re.IGNORECASE)
        cut: list[tuple[int, int]] = []
        for name in missing:
            if re.search(rf"[?$]{re.escape(name)}\b", where):
                continue  # a pattern binds it: a column of data, not of the question
            depth = 0
            for i in range(start, end):
                depth += (masked[i] == "(") - (masked[i] == ")")
                found = re.match(rf"[?$]{re.escape(name)}\b", masked[i:end])
                if depth == 0 and found and not masked[i - 1].isalnum():
                    cut.append((i, i + found.end()))
        kept = masked[start:end]
        for a, b in cut:
            kept = kept[: a - start] + " " * (b - a) + kept[b - start :]
        if not cut or not re.search(r"[?$\w(*]", kept):
            return self.text
        text = self.text
        for a, b in sorted(cut, reverse=True):
            text = text[:a] + text[b:]
        return text

    def run(self, store: Store, **values: Any) -> QueryResult:
        """Bind ``values`` and evaluate on ``store``.

        Raises:
            QueryParameterError: see ``bind``.
        """
        return store.query(self.text, self.bind(values))

    def run_to(self, store: Store, values: Mapping[str, Any], *, format: str = "json") -> bytes:
        """Bind ``values``, evaluate, and return the result serialised in ``format``.

        Raises:
            QueryParameterError: see ``bind``.
        """
        return store.query_to(self.text, self.bind(values), format=format)


_CLAUSE = re.compile(r"(?i)(WHERE|FROM)\b")
_FILTER = re.compile(r"(?i)\bFILTER\s*(?:[A-Za-z_]\w*\s*)?\(")


def _balanced(text: str, start: int) -> str:
    """The bracketed span that opens at ``start`` (to the end of ``text`` if unclosed)."""
    if start < 0:
        return ""
    opening = text[start]
    closing = {"{": "}", "(": ")"}[opening]
    depth = 0
    for i in range(start, len(text)):
        depth += (text[i] == opening) - (text[i] == closing)
        if depth == 0:
            return text[start : i + 1]
    return text[start:]


def _without_filters(text: str) -> str:
    """``text`` with every ``FILTER (...)`` expression left out."""
    while (match := _FILTER.search(text)) is not None:
        expression = _balanced(text, match.end() - 1)
        text = text[: match.start()] + " " + text[match.end() - 1 + len(expression) :]
    return text


def _convert(query: str, param: Param, value: Any) -> Term:
    where = f"query {query!r} parameter {param.name!r}"
    try:
        if param.type == "iri":
            return IRI(str(value))
        if param.type == "string":
            return Literal(str(value))
        if param.type == "datetime":
            if isinstance(value, str):
                value = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if not isinstance(value, datetime):
                raise ValueError("not a datetime")
            return literal(value)
        if param.type == "date":
            if isinstance(value, str):
                value = date.fromisoformat(value)
            return literal(value)
        if param.type == "integer":
            if isinstance(value, bool):
                raise ValueError("a boolean is not an integer")
            return literal(int(value))
        if param.type == "decimal":
            return literal(Decimal(str(value)))
        if param.type == "boolean":
            if isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0"):
                    raise ValueError("expected true or false")
                value = value.lower() in ("true", "1")
            return literal(bool(value))
    except (ValueError, InvalidOperation, TypeError) as exc:
        raise QueryParameterError(f"{where} expects {param.type}, got {value!r}: {exc}") from exc
    raise QueryParameterError(f"{where} has unknown type {param.type!r}")  # pragma: no cover


_cache: dict[Path, tuple[int, int, Query]] = {}
_cache_lock = threading.Lock()


def load_query(path: str | Path, *, name: str | None = None) -> Query:
    """Load one ``.rq`` file (or any SPARQL file) and check its parameters.

    Parsed files are cached by path, modification time and size, so serving a
    pack query costs a ``stat``, not a parse.

    Args:
        path: the file.
        name: the query's name (default: the file stem).

    Returns:
        The checked query.

    Raises:
        QueryParameterError: a declared parameter is unused or a used one undeclared.
        UnknownQuery: the file cannot be read.
    """
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as exc:
        raise UnknownQuery(f"cannot read query file {path}: {exc}") from exc
    key = path if path.is_absolute() else path.absolute()
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None and hit[0] == stat.st_mtime_ns and hit[1] == stat.st_size:
        query = hit[2]
        return query if name is None or name == query.name else _renamed(query, name)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UnknownQuery(f"cannot read query file {path}: {exc}") from exc
    query = parse_query(text, name=name or path.stem, path=path)
    with _cache_lock:
        _cache[key] = (stat.st_mtime_ns, stat.st_size, query)
    return query


def _renamed(query: Query, name: str) -> Query:
    return Query(name, query.path, query.text, query.title, query.description, query.params)


def parse_query(text: str, *, name: str = "inline", path: Path | None = None) -> Query:
    """Parse header and parameters of query text (see the module docstring).

    Args:
        text: SPARQL, optionally preceded by the ``#`` header.
        name: the query's name.
        path: the file it came from, for messages.

    Returns:
        The query with its declared parameters (the SPARQL itself is not parsed;
        see ``check_syntax``).

    Raises:
        QueryParameterError: a bad declaration, or declared and used parameters differ.
    """
    title = description = ""
    params: dict[str, Param] = {}
    source = str(path) if path else name
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        match = _HEADER.match(stripped)
        if not match:
            continue
        key, value = match.group(1), match.group(2).strip()
        if key == "title":
            title = value
        elif key == "description":
            description = f"{description} {value}".strip()
        else:
            pm = _PARAM.match(value)
            if not pm or pm.group("type") not in PARAM_TYPES:
                raise QueryParameterError(
                    f"{source}: bad parameter declaration {value!r}; write "
                    f"'# param: NAME TYPE [optional] [-- description]' with TYPE one of "
                    f"{', '.join(PARAM_TYPES)}"
                )
            params[pm.group("name")] = Param(
                pm.group("name"),
                pm.group("type"),
                bool(pm.group("optional")),
                pm.group("doc") or "",
            )
    used = set(_DOLLAR.findall(_SCRUB.sub(" ", text)))
    unused = sorted(set(params) - used)
    undeclared = sorted(used - set(params))
    if unused:
        raise QueryParameterError(
            f"{source}: parameter(s) declared but not used: {', '.join(unused)}"
        )
    if undeclared:
        raise QueryParameterError(
            f"{source}: parameter(s) used but not declared: "
            f"{', '.join('$' + u for u in undeclared)}"
        )
    query = Query(name, path, text, title, description, params)
    if params and query.form == "SELECT":
        scrubbed = _SCRUB.sub(" ", text)
        head = re.search(r"\bSELECT\b(.*?)(?:\bWHERE\b|\{)", scrubbed, re.IGNORECASE | re.DOTALL)
        projection = head.group(1) if head else ""
        # an expression "(... AS ?x)" projects ?x only, not the variables inside it
        while True:
            flattened = re.sub(
                r"\([^()]*\)",
                lambda m: " " + " ".join(re.findall(r"\bAS\s+([?$]\w+)", m.group(0), re.I)) + " ",
                projection,
            )
            if flattened == projection:
                break
            projection = flattened
        projected = set(re.findall(r"[?$]([A-Za-z_][A-Za-z0-9_]*)", projection))
        missing = sorted(set(params) - projected) if "*" not in projection else []
        if missing:
            raise QueryParameterError(
                f"{source}: a SELECT must project its parameters to bind them; "
                f"add {', '.join('$' + m for m in missing)} to the SELECT clause"
            )
    return query


def find_pack_dir() -> Path:
    """The folder of the shipped query pack (installed package, else the source tree).

    Returns:
        The folder (looked up once per process).

    Raises:
        UnknownQuery: the installation has no pack.
    """
    return _pack_dir()


@functools.lru_cache(maxsize=1)
def _pack_dir() -> Path:
    here = Path(__file__).resolve()
    for candidate in (
        here.parent.parent / "_data" / "queries",
        here.parents[3] / "queries",
    ):
        if candidate.is_dir():
            return candidate
    raise UnknownQuery("the query pack folder is missing from this installation")


def load_pack(folder: str | Path | None = None) -> dict[str, Query]:
    """Every ``*.rq`` query of the pack, by name (file stem), checked.

    Args:
        folder: the pack folder (default: the shipped pack).

    Returns:
        Queries by name, sorted by name.
    """
    base = Path(folder) if folder is not None else find_pack_dir()
    return {p.stem: load_query(p) for p in sorted(base.glob("*.rq"))}


def get_query(name: str, folder: str | Path | None = None) -> Query:
    """The pack query ``name``.

    A query is parsed once and served from memory while its file is unchanged: a
    file of ``folder`` is checked at every call, a file of the shipped pack (which
    changes only when trails is upgraded, or edited in a source checkout) at most
    once every ``SHIPPED_RECHECK_S`` seconds.

    Args:
        name: the query name (file stem).
        folder: the pack folder (default: the shipped pack).

    Returns:
        The checked query.

    Raises:
        UnknownQuery: no such query; the message lists the pack.
    """
    key = (name, None if folder is None else str(folder))
    hit = _by_name.get(key)
    if hit is not None:
        path_text, query, mtime, size = hit
        if folder is None and time.monotonic() < _shipped_fresh.get(name, 0.0):
            return query
        try:
            stat = os.stat(path_text)
        except OSError:
            stat = None
        if stat is not None and stat.st_mtime_ns == mtime and stat.st_size == size:
            if folder is None:
                _shipped_fresh[name] = time.monotonic() + SHIPPED_RECHECK_S
            return query  # served from memory: one stat, no path parsing
    base = Path(folder) if folder is not None else find_pack_dir()
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name.startswith("."):
        raise UnknownQuery(f"no query named {name!r} in the pack (available: {_names(base)})")
    path = base / f"{name}.rq"
    try:
        query = load_query(path)
        stat = path.stat()
    except (UnknownQuery, OSError):
        raise UnknownQuery(
            f"no query named {name!r} in the pack (available: {_names(base)})"
        ) from None
    _by_name[key] = (str(path), query, stat.st_mtime_ns, stat.st_size)
    return query


# name (and folder) -> (file, parsed query, mtime, size): the fast path of get_query
# shipped pack query name -> when its file is next checked for a change
_shipped_fresh: dict[str, float] = {}
SHIPPED_RECHECK_S = 1.0
_by_name: dict[tuple[str, str | None], tuple[str, Query, int, int]] = {}


def _names(base: Path) -> str:
    return ", ".join(sorted(p.stem for p in base.glob("*.rq")))


_checker: Store | None = None
_checked: set[str] = set()


def check_syntax(query: Query) -> None:
    """Parse ``query`` with the store's SPARQL parser (on an empty in-memory store).

    Args:
        query: the query to check.

    Raises:
        QuerySyntaxError: the text does not parse; names the file (or ``inline``),
            the line and the column.
    """
    global _checker
    if query.text in _checked:
        return
    if _checker is None:
        from trails.store import open_store

        _checker = open_store("memory:")
    try:
        _checker.query(query.text)
    except QuerySyntaxError as exc:
        message = re.sub(r"^.*?SPARQL syntax error(?: at line \d+, column \d+)?: ", "", str(exc))
        message = re.sub(r"^error at \d+:\d+: ", "", message)
        line, column = exc.line, exc.column
        located = _locate(query.text)
        if located is not None:
            message, line, column = located
        source = str(query.path) if query.path else query.name
        raise QuerySyntaxError(message, source=source, line=line, column=column) from exc
    except QueryParameterError:
        pass  # parses; parameters are checked by bind()
    _checked.add(query.text)


def _locate(text: str) -> tuple[str, int, int] | None:
    """A second opinion on where a syntax error is: rdflib's parser points at the token.

    The store's parser decides whether the query is valid; when it is not, rdflib's
    parser usually names the first offending token, where the store's often names
    the end of the input.
    """
    try:
        from pyparsing import ParseBaseException
        from rdflib.plugins.sparql.parser import parseQuery
    except ImportError:  # pragma: no cover - rdflib is a dependency
        return None
    try:
        parseQuery(text)
    except ParseBaseException as exc:
        message = re.sub(r"\s*\(at char \d+\).*$", "", str(exc.msg))
        found = text[exc.loc : exc.loc + 20].split("\n")[0].strip()
        if found:
            message = f"{message}, found {found!r}"
        return message, exc.lineno, exc.col
    except Exception:
        return None
    return None


_LOOKS_LIKE_SPARQL = re.compile(r"\b(SELECT|ASK|CONSTRUCT|DESCRIBE)\b|\{", re.IGNORECASE)


def resolve(spec: str, folder: str | Path | None = None) -> Query:
    """The query ``spec`` names: a pack name, a SPARQL file, or inline SPARQL text.

    Args:
        spec: ``sessions``, ``./my.rq`` or ``SELECT ...``.
        folder: the pack folder (default: the shipped pack).

    Returns:
        The query, its parameters checked and its syntax parsed.

    Raises:
        UnknownQuery: not a pack name, not a file, and not SPARQL text.
        QuerySyntaxError: the SPARQL does not parse (with line and column).
        QueryParameterError: the header and the body disagree.
    """
    base = Path(folder) if folder is not None else find_pack_dir()
    if re.fullmatch(r"[A-Za-z0-9_.-]+", spec) and (base / f"{spec}.rq").is_file():
        query = load_query(base / f"{spec}.rq")
    elif "\n" not in spec and len(spec) < 4096 and Path(spec).is_file():
        query = load_query(spec)
    elif _LOOKS_LIKE_SPARQL.search(spec):
        query = parse_query(spec, name="inline")
    else:
        names = ", ".join(sorted(p.stem for p in base.glob("*.rq")))
        raise UnknownQuery(
            f"{spec!r} is not a query in the pack, a file, or SPARQL text (pack: {names})"
        )
    check_syntax(query)
    return query
