"""RDF terms that cross the store boundary, independent of any backend.

The recorder builds quads out of these, every ``Store`` accepts and returns
them, and each backend converts at its edge (pyoxigraph objects for the
embedded store, N-Triples text for a SPARQL server). Keeping them tiny keeps
recording cheap: an ``IRI`` is a ``str``, a ``Literal`` a slotted tuple.

``n3()`` gives the N-Triples form of a term. It is the single escaping routine
used wherever a term is written into SPARQL text, so it is strict: IRIs are
validated when built, literal lexical forms escape every character that could
end the string.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, NamedTuple

from trails.text import check_text

__all__ = [
    "IRI",
    "XSD",
    "BNode",
    "Literal",
    "Quad",
    "Term",
    "Triple",
    "check_term",
    "instant",
    "literal",
    "to_python",
    "to_rdflib",
]

XSD = "http://www.w3.org/2001/XMLSchema#"
_XSD_STRING = XSD + "string"
_RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"

# Characters RFC 3987 / N-Triples forbid inside an IRI reference.
_IRI_BAD = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_IRI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


class IRI(str):
    """An absolute IRI. Validated on construction; it *is* its string."""

    __slots__ = ()

    def __new__(cls, value: str) -> IRI:
        if not _IRI_SCHEME.match(value) or _IRI_BAD.search(value):
            raise ValueError(f"not an absolute IRI: {value!r}")
        return str.__new__(cls, value)

    @classmethod
    def trusted(cls, value: str) -> IRI:
        """Wrap a string already known to be a valid IRI (from a store or a minter)."""
        return str.__new__(cls, value)

    def n3(self) -> str:
        return f"<{self}>"

    def __repr__(self) -> str:
        return f"IRI({str.__repr__(self)})"


class BNode(str):
    """A blank node label. trails never writes them; imported data may hold them."""

    __slots__ = ()

    def n3(self) -> str:
        return f"_:{self}"


_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})


class Literal(NamedTuple):
    """An RDF literal: lexical form, datatype IRI, optional language tag."""

    value: str
    datatype: str = _XSD_STRING
    language: str | None = None

    def n3(self) -> str:
        text = '"' + self.value.translate(_ESCAPES) + '"'
        if self.language:
            if not re.fullmatch(r"[A-Za-z]+(-[A-Za-z0-9]+)*", self.language):
                raise ValueError(f"bad language tag: {self.language!r}")
            return f"{text}@{self.language}"
        if self.datatype == _XSD_STRING:
            return text
        return f"{text}^^{IRI(self.datatype).n3()}"

    def to_python(self) -> Any:
        return to_python(self)


Term = IRI | BNode | Literal


class Quad(NamedTuple):
    """One statement in a named graph. trails always names the graph."""

    subject: IRI | BNode
    predicate: IRI
    object: Term
    graph: IRI


class Triple(NamedTuple):
    subject: IRI | BNode
    predicate: IRI
    object: Term


def check_term(term: object, field: str, error: Callable[[str], Exception]) -> None:
    """Refuse a term whose text UTF-8 cannot hold (an unpaired surrogate), naming ``field``.

    Both store backends call it on every query parameter before converting it
    (to a pyoxigraph term, or to SPARQL text): the caller gets ``error``, not a
    ``UnicodeEncodeError`` from the conversion or the HTTP body.

    Args:
        term: an ``IRI``, ``BNode`` or ``Literal`` (anything else passes).
        field: what the term is, for the message (``"query parameter 'x'"``).
        error: builds the exception from the message.
    """
    if isinstance(term, Literal):
        check_text(term.value, field, error)
        check_text(term.datatype, f"{field} (its datatype)", error)
        check_text(term.language, f"{field} (its language tag)", error)
    else:
        check_text(term, field, error)


def _format_datetime(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.isoformat().replace("+00:00", "Z")


def literal(value: Any) -> Literal:
    """Build a typed literal from a Python value (str, bool, int, float, Decimal, datetime, date)."""
    if type(value) is datetime:  # every event's times: first, without the checks below
        return Literal(_format_datetime(value), XSD + "dateTime")
    if isinstance(value, str):
        return Literal(value)
    if isinstance(value, bool):
        return Literal("true" if value else "false", XSD + "boolean")
    if isinstance(value, int):
        return Literal(str(value), XSD + "integer")
    if isinstance(value, float):
        return Literal(repr(value), XSD + "double")
    if isinstance(value, Decimal):
        return Literal(format(value, "f"), XSD + "decimal")
    if isinstance(value, datetime):
        return Literal(_format_datetime(value), XSD + "dateTime")
    if isinstance(value, date):
        return Literal(value.isoformat(), XSD + "date")
    raise TypeError(f"no RDF literal for {type(value).__name__}")


def to_python(term: Term | None) -> Any:
    """Turn a term into the nearest Python value (IRIs stay ``IRI``)."""
    if not isinstance(term, Literal):
        return term
    dt = term.datatype
    if dt in (_XSD_STRING, _RDF_LANG_STRING):
        return term.value
    local = dt[len(XSD) :] if dt.startswith(XSD) else ""
    try:
        if local == "boolean":
            return term.value in ("true", "1")
        if local in ("integer", "int", "long", "short", "nonNegativeInteger", "positiveInteger"):
            return int(term.value)
        if local in ("double", "float"):
            return float(term.value)
        if local == "decimal":
            return Decimal(term.value)
        if local == "dateTime":
            return _datetime(term.value)
        if local == "date":
            return date.fromisoformat(term.value)
    except ValueError:
        return term.value
    return term.value


_NEVER = datetime.min.replace(tzinfo=UTC)


def instant(value: object) -> datetime:
    """The moment an ``xsd:dateTime`` (a literal, its lexical form, or a datetime) names,
    for putting records in time order; a missing or unreadable value sorts first.

    The lexical forms do not sort: stores hand dateTimes back in canonical form,
    which drops the fraction's trailing zeros (``03.12Z``, ``03.119Z``, ``03Z``).
    """
    if isinstance(value, Literal):
        value = value.value
    if isinstance(value, str):
        try:
            return _datetime(value)
        except ValueError:
            return _NEVER
    if not isinstance(value, datetime):
        return _NEVER
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _datetime(lexical: str) -> datetime:
    """An ``xsd:dateTime`` lexical form as an aware datetime (no zone: UTC).

    Raises:
        ValueError: it is not one.
    """
    parsed = datetime.fromisoformat(lexical.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def to_rdflib(term: Term) -> Any:
    """The same term as rdflib's (for pyshacl and other rdflib-based readers).

    An ``xsd:string`` literal becomes a simple literal, as rdflib's own parsers give it:
    rdflib tells ``"x"`` and ``"x"^^xsd:string`` apart, so a shape's ``sh:hasValue "x"``
    matches only the simple one.
    """
    import rdflib  # imported here: only readers that hand terms to rdflib pay for it

    if isinstance(term, Literal):
        if term.language:
            return rdflib.Literal(term.value, lang=term.language)
        if term.datatype == _XSD_STRING:
            return rdflib.Literal(term.value)
        return rdflib.Literal(term.value, datatype=_uriref(term.datatype))
    if isinstance(term, BNode):
        return rdflib.BNode(str(term))
    return _uriref(str(term))


@functools.lru_cache(maxsize=1 << 16)
def _uriref(iri: str) -> Any:
    """rdflib's ``URIRef`` of ``iri``, made once: a graph names the same few IRIs again and
    again, and rdflib checks every character of each one it makes."""
    import rdflib

    return rdflib.URIRef(iri)
