"""PROV-N and PROV-JSON written straight from N-Quads, one bundle per session.

The ``prov`` package reads an export's PROV-O through rdflib and builds its own
object model before writing PROV-N or PROV-JSON; for a whole store that costs
about ten times the TriG export. This module writes the same documents from the
(already redacted) N-Quads of an export in one pass per session, following the
decoding the ``prov`` package applies to PROV-O (its ``provrdf`` reader), so
that reading our PROV-JSON back with ``ProvDocument.deserialize(format="json")``
gives the document the ``prov`` package builds from the same TriG:

- a subject typed with a PROV class (``prov:Entity``, ``prov:Activity``,
  ``prov:Agent``, a qualified influence such as ``prov:Association`` or
  ``prov:Usage``) is a record; its other ``rdf:type`` objects become
  ``prov:type`` attributes, ``rdfs:label`` becomes ``prov:label``, and its
  other triples its attributes (``prov:startedAtTime`` and the like its
  formal attributes);
- a binary PROV-O relation (``prov:used``, ``prov:wasGeneratedBy``,
  ``prov:wasAssociatedWith``, ``prov:wasInformedBy``, ``prov:wasAttributedTo``,
  ``prov:actedOnBehalfOf``, ``prov:wasDerivedFrom``, ``prov:wasInvalidatedBy``,
  ``prov:wasStartedBy``, ``prov:wasEndedBy``, ``prov:hadMember``,
  ``prov:specializationOf``, ``prov:alternateOf``, ``prov:wasInfluencedBy``) is
  a relation record, or, for the kinds PROV-O qualifies with the influencer on
  the node (association, delegation, attribution, communication, influence),
  fills the subject's ``prov:qualified*`` node (an association with its
  ``prov:hadPlan``).

A graph this writer does not map exactly the way the ``prov`` package would
(blank nodes, ``prov:mentionOf``, a subject of two PROV classes, a formal
attribute with two values ...) raises ``Unsupported``, and the export falls
back to the ``prov`` package for the whole document.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, timedelta
from functools import lru_cache
from typing import IO, Any, BinaryIO

from trails.prov.content import is_content_graph, structure_graph

__all__ = ["ProvWriter", "Unsupported", "Whole", "bundle_triples", "write_prov"]

_P = "http://www.w3.org/ns/prov#"
_XSD = "http://www.w3.org/2001/XMLSchema#"
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
_XSD_STRING = _XSD + "string"
_XSD_DATETIME = _XSD + "dateTime"
_BUILT_IN = {"prov": _P, "xsd": _XSD}  # the prov package's own prefixes, never declared

# record type -> (PROV-N / PROV-JSON keyword, formal attributes in order)
_RECORDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "Entity": ("entity", ()),
    "Activity": ("activity", ("startTime", "endTime")),
    "Agent": ("agent", ()),
    "Generation": ("wasGeneratedBy", ("entity", "activity", "time")),
    "Usage": ("used", ("activity", "entity", "time")),
    "Communication": ("wasInformedBy", ("informed", "informant")),
    "Start": ("wasStartedBy", ("activity", "trigger", "starter", "time")),
    "End": ("wasEndedBy", ("activity", "trigger", "ender", "time")),
    "Invalidation": ("wasInvalidatedBy", ("entity", "activity", "time")),
    "Derivation": (
        "wasDerivedFrom",
        ("generatedEntity", "usedEntity", "activity", "generation", "usage"),
    ),
    "Attribution": ("wasAttributedTo", ("entity", "agent")),
    "Association": ("wasAssociatedWith", ("activity", "agent", "plan")),
    "Delegation": ("actedOnBehalfOf", ("delegate", "responsible", "activity")),
    "Influence": ("wasInfluencedBy", ("influencee", "influencer")),
    "Alternate": ("alternateOf", ("alternate1", "alternate2")),
    "Specialization": ("specializationOf", ("specificEntity", "generalEntity")),
    "Membership": ("hadMember", ("collection", "entity")),
}
_TIMES = frozenset({"startTime", "endTime", "time"})

# PROV class -> record type it makes a subject (its subclasses, such as prov:Plan or
# prov:SoftwareAgent, are only prov:type attributes, as in the prov package)
_CLASSES = {_P + name: name for name in _RECORDS}
_DERIVATION_SUBTYPES = {_P + n for n in ("Revision", "Quotation", "PrimarySource")}

# binary relation predicate -> record type
_RELATIONS = {
    _P + "actedOnBehalfOf": "Delegation",
    _P + "alternateOf": "Alternate",
    _P + "specializationOf": "Specialization",
    _P + "wasAssociatedWith": "Association",
    _P + "wasDerivedFrom": "Derivation",
    _P + "wasAttributedTo": "Attribution",
    _P + "wasInformedBy": "Communication",
    _P + "wasGeneratedBy": "Generation",
    _P + "wasInfluencedBy": "Influence",
    _P + "wasInvalidatedBy": "Invalidation",
    _P + "wasEndedBy": "End",
    _P + "wasStartedBy": "Start",
    _P + "hadMember": "Membership",
    _P + "used": "Usage",
}
# relation kinds whose binary triple fills the subject's qualified node, and the
# predicate carrying the influencer on that node
_QUALIFIED = {
    "Delegation": ("qualifiedDelegation", _P + "agent"),
    "Association": ("qualifiedAssociation", _P + "agent"),
    "Attribution": ("qualifiedAttribution", _P + "agent"),
    "Communication": ("qualifiedCommunication", _P + "activity"),
    "Influence": ("qualifiedInfluence", _P + "influencer"),
}
# predicates read as a named PROV attribute (the prov package's PREDICATE_MAP)
_RENAMED = {
    _RDFS_LABEL: "label",
    _P + "atLocation": "location",
    _P + "startedAtTime": "startTime",
    _P + "endedAtTime": "endTime",
    _P + "atTime": "time",
    _P + "hadRole": "role",
    _P + "hadPlan": "plan",
    _P + "hadUsage": "usage",
    _P + "hadGeneration": "generation",
    _P + "hadActivity": "activity",
}
# per record type, (needle, attribute): a predicate whose name holds the needle
# is read as that formal attribute (the prov package's decode rewrites)
_REWRITES: dict[str, tuple[tuple[str, str], ...]] = {
    "Communication": (("activity", "informant"),),
    "Delegation": (("agent", "responsible"),),
    "End": (("entity", "trigger"), ("activity", "ender"), ("endTime", "time")),
    "Start": (("entity", "trigger"), ("activity", "starter"), ("startTime", "time")),
    "Derivation": (("entity", "usedEntity"),),
}

_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")
_SIMPLE_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'"}


class Unsupported(Exception):
    """A graph this writer cannot map exactly as the ``prov`` package would."""


class Whole(Exception):
    """A part of a bundle that cannot be written apart from the rest of it."""


@dataclass(frozen=True)
class _Lit:
    lexical: str
    datatype: str | None = None
    language: str | None = None


_Value = str | _Lit  # an IRI, or a literal


@dataclass
class _Record:
    kind: str
    ident: str | None
    formal: dict[str, _Value] = field(default_factory=dict)
    attrs: list[tuple[str, _Value]] = field(default_factory=list)


def _unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        if code[0] in "uU" and len(code) > 1:
            return chr(int(code[1:], 16))
        return _SIMPLE_ESCAPES.get(code, code)

    if "\\" not in text:
        return text
    if "\\U" not in text and "\\'" not in text:  # JSON's escapes, unescaped in C
        try:
            value = json.loads(f'"{text}"', strict=False)
        except ValueError:
            pass
        else:
            if isinstance(value, str):
                return value
    return _ESCAPE.sub(one, text)


@lru_cache(maxsize=4096)
def _datetime_text(lexical: str) -> str | None:
    """The ``prov`` package's text for an ``xsd:dateTime`` (None: it would not parse it)."""
    from prov.model import parse_xsd_datetime

    value = parse_xsd_datetime(lexical)
    if value is None:
        return None
    offset = value.utcoffset()
    if offset is not None:
        if abs(offset) > timedelta(hours=14):
            return None
        if offset.total_seconds() % 60 or offset.microseconds:
            value = value.astimezone(UTC)
    return value.isoformat()


def _double_text(lexical: str) -> str:
    try:
        value = float(lexical)
    except ValueError:
        return lexical
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "INF" if value > 0 else "-INF"
    return repr(value)


def _integer_text(lexical: str) -> str:
    try:
        return str(int(lexical))
    except ValueError:
        return lexical


def _boolean_text(lexical: str) -> str:
    return {"1": "true", "0": "false"}.get(lexical.strip(), lexical.strip())


# lexical forms as the prov package writes them back (it reads these through rdflib's
# Python value for the datatype)
_CANONICAL: dict[str, Callable[[str], str]] = {
    _XSD_DATETIME: lambda lexical: _datetime_text(lexical) or lexical,
    _XSD + "double": _double_text,
    _XSD + "integer": _integer_text,
    _XSD + "int": _integer_text,
    _XSD + "long": _integer_text,
    _XSD + "boolean": _boolean_text,
}


def _term(text: str) -> _Value:
    if text[0] == "<":
        return text[1:-1]
    if text[0] == "_":
        raise Unsupported("blank node")
    end = text.rindex('"')
    lexical = _unescape(text[1:end])
    rest = text[end + 1 :]
    if rest.startswith("^^"):
        datatype = rest[3:-1]
        if datatype in _CANONICAL:
            lexical = _CANONICAL[datatype](lexical)
        return _Lit(lexical, None if datatype == _XSD_STRING else datatype)
    if rest.startswith("@"):
        return _Lit(lexical, None, rest[1:])
    return _Lit(lexical)


def _parse(nquads: bytes, bundles: list[str]) -> dict[str, list[tuple[str, str, _Value]]]:
    """Triples per bundle: a content graph's go to its session's bundle; no duplicates.

    The lines are the store's own N-Quads (``<s> <p> o <g> .``, one quad a line), so
    they are cut at their IRIs' brackets; any other shape is refused."""
    seen: dict[str, dict[tuple[str, str, _Value], None]] = {b: {} for b in bundles}
    objects: dict[str, _Value] = {}
    bundle_of: dict[str, str] = {}
    for line in nquads.decode("utf-8").splitlines():
        if not line:
            continue
        s_end = line.find("> <")
        p_end = line.find("> ", s_end + 3)
        g_start = line.rfind(" <")
        if line[0] != "<" or s_end < 0 or p_end < 0 or g_start <= p_end or line[-3:] != "> .":
            raise Unsupported(f"unexpected line {line[:80]!r}")
        graph = line[g_start + 2 : -3]
        bundle = bundle_of.get(graph)
        if bundle is None:
            bundle = str(structure_graph(graph)) if is_content_graph(graph) else graph
            bundle_of[graph] = bundle
        text = line[p_end + 2 : g_start]
        o = objects.get(text)
        if o is None:
            o = objects[text] = _term(text)
        seen.setdefault(bundle, {})[(line[1:s_end], line[s_end + 3 : p_end], o)] = None
    return {b: list(triples) for b, triples in seen.items()}


def _decode(triples: list[tuple[str, str, _Value]]) -> list[_Record]:
    """The records the ``prov`` package reads from one graph's PROV-O."""
    records: dict[str, _Record] = {}
    types: list[tuple[str, str]] = []
    for s, p, o in triples:
        if p != _RDF_TYPE:
            continue
        if not isinstance(o, str):
            raise Unsupported("literal type")
        if o == _P + "Mention" or o == _P + "Bundle":
            raise Unsupported(o)
        kind = _CLASSES.get(o) or ("Derivation" if o in _DERIVATION_SUBTYPES else None)
        if kind is not None:
            if s in records:
                if records[s].kind != kind:
                    raise Unsupported(f"{s} has two PROV classes")
                types.append((s, o))
                continue
            records[s] = _Record(kind, s)
            if o in _DERIVATION_SUBTYPES:
                types.append((s, o))
        else:
            types.append((s, o))
    for s, o in types:
        if s in records:
            records[s].attrs.append((_P + "type", o))
    anonymous: list[_Record] = []
    qualifiers: dict[tuple[str, str], list[str]] = {}
    present: set[tuple[str, str, _Value]] = set()
    for s, p, o in triples:
        if p.startswith(_P + "qualified"):
            qualifiers.setdefault((s, p), []).append(o if isinstance(o, str) else "")
        present.add((s, p, o))
    counts: dict[tuple[str, str], int] = {}
    for s, p, o in triples:
        if p == _RDF_TYPE:
            continue
        if p == _P + "mentionOf" or p == _P + "asInBundle":
            raise Unsupported(p)
        kind = _RELATIONS.get(p)
        if kind is not None:
            if not isinstance(o, str):
                raise Unsupported("relation to a literal")
            first, second = _RECORDS[kind][1][:2]
            if kind in _QUALIFIED:
                link, influencer = _QUALIFIED[kind]
                nodes = qualifiers.get((s, _P + link), [])
                if nodes:
                    chosen = [q for q in nodes if (q, influencer, o) in present]
                    if len(nodes) > 1 and len(chosen) != 1:
                        raise Unsupported("ambiguous qualified node")
                    node = records.get(chosen[0] if chosen else nodes[0])
                    if node is None:
                        raise Unsupported("untyped qualified node")
                    _formal(node, _formal_names(node.kind)[0], s, counts)
                    _formal(node, _formal_names(node.kind)[1], o, counts)
                    continue
            anonymous.append(_Record(kind, None, {first: s, second: o}))
        elif s in records:
            _attribute(records[s], p, o, counts)
        if isinstance(o, str) and o in records and "qualified" in p:
            node = records[o]
            node.formal[_formal_names(node.kind)[0]] = s
    return [*anonymous, *records.values()]


def _formal_names(kind: str) -> tuple[str, ...]:
    return _RECORDS[kind][1]


def _attribute(record: _Record, p: str, o: _Value, counts: dict[tuple[str, str], int]) -> None:
    """One triple about a record: a formal attribute or an extra one."""
    names = _formal_names(record.kind)
    renamed = _RENAMED.get(p)
    if renamed is not None:  # read as prov:<name>, formal if the record has it
        for needle, rewritten in _REWRITES.get(record.kind, ()):
            if needle in "prov:" + renamed:
                renamed = rewritten
        if renamed in names:
            _formal(record, renamed, o, counts)
        elif "qualified" not in renamed:
            record.attrs.append((_P + renamed, o))
        return
    name: str | None = None
    for needle, rewritten in _REWRITES.get(record.kind, ()):
        if needle in p:
            name = rewritten
    if name is None and p.startswith(_P) and p[len(_P) :] in names:
        name = p[len(_P) :]
    if name is not None and name in names:
        _formal(record, name, o, counts)
    elif name is not None:  # rewritten to a name the record does not have
        raise Unsupported(f"{p} on a {record.kind}")
    elif "qualified" not in p and "asInBundle" not in p:
        record.attrs.append((p, o))


def _formal(record: _Record, name: str, value: _Value, counts: dict[tuple[str, str], int]) -> None:
    key = (record.ident or "", name)
    counts[key] = counts.get(key, 0) + 1
    if counts[key] > 1 and record.formal.get(name) != value:
        raise Unsupported(f"{name} of {record.ident} has two values")
    if name in _TIMES:
        if not (
            isinstance(value, _Lit)
            and value.datatype == _XSD_DATETIME
            and _datetime_text(value.lexical) == value.lexical
        ):
            raise Unsupported(f"{name} is not an xsd:dateTime")
    elif not isinstance(value, str):
        raise Unsupported(f"{name} is a literal")
    record.formal[name] = value


class _Names:
    """Qualified names for IRIs: the export's prefixes, then ``nsN`` for new namespaces."""

    def __init__(self, prefixes: dict[str, str], avoid: frozenset[str]) -> None:
        self.prefixes = {p: ns for p, ns in prefixes.items() if p not in _BUILT_IN}
        for p, ns in _BUILT_IN.items():
            self.prefixes[p] = ns
        self.avoid = avoid
        self._by_length = sorted(self.prefixes.items(), key=lambda kv: -len(kv[1]))
        self._cache: dict[str, tuple[str, str]] = {}
        self._provn: dict[str, tuple[str, str]] = {}

    def forget(self) -> None:
        """Forget the qualified names found so far (kept within a bundle, so a whole
        store's names are never all held at once); the prefixes stay."""
        self._cache.clear()
        self._provn.clear()

    def split(self, iri: str) -> tuple[str, str]:
        """``(prefix, local)`` for ``iri``."""
        hit = self._cache.get(iri)
        if hit is not None:
            return hit
        for prefix, ns in self._by_length:
            if iri.startswith(ns) and len(iri) > len(ns):
                hit = (prefix, iri[len(ns) :])
                break
        else:
            cut = max(iri.rfind("#"), iri.rfind("/"), iri.rfind(":"))
            if cut <= 0 or cut + 1 == len(iri):
                raise Unsupported(f"cannot name {iri}")
            ns = iri[: cut + 1]
            n, prefix = len(self.prefixes) + 1, ""
            while not prefix or prefix.lower() in self.avoid or prefix in self.prefixes:
                prefix = f"ns{n}"
                n += 1
            self.prefixes[prefix] = ns
            self._by_length = sorted(self.prefixes.items(), key=lambda kv: -len(kv[1]))
            hit = (prefix, iri[len(ns) :])
        self._cache[iri] = hit
        return hit

    def plain(self, iri: str, used: set[str]) -> str:
        prefix, local = self.split(iri)
        used.add(prefix)
        return f"{prefix}:{local}"

    def provn(self, iri: str, used: set[str]) -> str:
        hit = self._provn.get(iri)
        if hit is None:
            prefix, local = self.split(iri)
            hit = self._provn[iri] = (prefix, _provn_name(prefix, self.prefixes[prefix], local))
        used.add(hit[0])
        return hit[1]


_PLAIN_LOCAL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.:-]*[A-Za-z0-9_])?")


def _provn_name(prefix: str, namespace: str, local: str) -> str:
    """``prefix:local`` as PROV-N writes it (the ``prov`` package's escaping; ``:`` in a
    plain local part is the only character it escapes, so that case is done here)."""
    if _PLAIN_LOCAL.fullmatch(local):
        return prefix + ":" + local.replace(":", "\\:")
    from prov.identifier import Namespace, QualifiedName

    return QualifiedName(Namespace(prefix, namespace), local).provn_bare_representation()


def _provn_string(value: str) -> str:
    s = value.replace("\\", "\\\\").replace('"', '\\"')
    if "\n" in s:
        return f'"""{s}"""'
    return '"' + s.replace("\r", "\\r") + '"'


def _provn_record(record: _Record, names: _Names, used: set[str]) -> str:
    keyword, formal_names = _RECORDS[record.kind]
    items: list[str] = []
    ident = ""
    if record.ident is not None:
        if record.kind in ("Entity", "Activity", "Agent"):
            items.append(names.provn(record.ident, used))
        else:
            ident = names.provn(record.ident, used) + "; "
    for name in formal_names:
        value = record.formal.get(name)
        if value is None:
            items.append("-")
        elif isinstance(value, _Lit):
            items.append(value.lexical)
        else:
            items.append(names.provn(value, used))
    extra = []
    for key, value in record.attrs:
        if isinstance(value, _Lit):
            text = _provn_string(value.lexical)
            if value.language:
                text += "@" + value.language
            elif value.datatype:
                text += " %% " + names.provn(value.datatype, used)
        else:
            text = "'" + names.provn(value, used) + "'"
        extra.append(f"{names.provn(key, used)}={text}")
    if extra:
        items.append("[" + ", ".join(extra) + "]")
    return f"{keyword}({ident}{', '.join(items)})"


def _json_record(record: _Record, names: _Names, used: set[str]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for name, value in record.formal.items():
        body["prov:" + name] = (
            value.lexical if isinstance(value, _Lit) else names.plain(value, used)
        )
    extra: dict[str, list[Any]] = {}
    for key, value in record.attrs:
        if isinstance(value, _Lit):
            if value.language:
                encoded: Any = {"$": value.lexical, "lang": value.language}
            elif value.datatype:
                encoded = {"$": value.lexical, "type": names.plain(value.datatype, used)}
            else:
                encoded = value.lexical
        else:
            encoded = {"$": names.plain(value, used), "type": "xsd:QName"}
        extra.setdefault(names.plain(key, used), []).append(encoded)
    for name, values in extra.items():
        body[name] = values[0] if len(values) == 1 else values
    return body


def write_prov(
    nquads: bytes,
    out: BinaryIO,
    *,
    format: str,
    bundles: list[str],
    prefixes: dict[str, str],
    avoid: frozenset[str] = frozenset(),
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Write the graphs of ``nquads`` as PROV-N or PROV-JSON, one bundle per session.

    Args:
        nquads: the export's N-Quads (already redacted); a content graph's quads go
            into its session's bundle.
        out: a binary stream.
        format: ``provn`` or ``provjson``.
        bundles: the bundles (structure graph IRIs), in order.
        prefixes: prefix -> namespace, declared where used (new namespaces get ``nsN``).
        avoid: IRI schemes no prefix may be named like (lower case).
        progress: called with ``(bundles_done, bundles_total)`` after each bundle.

    Raises:
        Unsupported: a graph the ``prov`` package would read otherwise than this writer.
    """
    triples = _parse(nquads, bundles)
    writer = ProvWriter(out, format=format, bundles=list(triples), prefixes=prefixes, avoid=avoid)
    for done, (bundle, rows) in enumerate(triples.items(), 1):
        writer.add(bundle, rows)
        if progress is not None:
            progress(done, len(triples))
    writer.close()


def bundle_triples(nquads: bytes, bundle: str) -> list[tuple[str, str, _Value]]:
    """The triples of one bundle from the N-Quads of its graphs (its session's graph and
    content graph), without duplicates."""
    return _parse(nquads, [bundle]).get(bundle, [])


class ProvWriter:
    """PROV-N or PROV-JSON written bundle by bundle, so a whole store's document is never
    held in memory: the document's prefixes (those its bundles' names need) first, each
    bundle as it is added, with the prefixes it uses, and the end of the document on
    ``close``. Qualified names are remembered within a bundle only (prefixes for ever)."""

    def __init__(
        self,
        out: IO[bytes],
        *,
        format: str,
        bundles: Iterable[str],
        prefixes: dict[str, str],
        avoid: frozenset[str] = frozenset(),
    ) -> None:
        self.out, self.provn = out, format == "provn"
        self.names = _Names(prefixes, avoid)
        self.counter = 0  # PROV-JSON's anonymous records: _:id1, _:id2 ... over the document
        self.first = True
        self._parts: _BundleParts | None = None
        top: set[str] = set()
        self.titles = {
            b: (self.names.provn(b, top) if self.provn else self.names.plain(b, top))
            for b in bundles
        }
        declared = _declare(top, self.names)
        if self.provn:
            head = "".join(f"  prefix {p} <{ns}>\n" for p, ns in declared)
            out.write(f"document\n{head}  \n".encode())
        else:
            head = json.dumps(dict(declared), indent=2, ensure_ascii=False).replace("\n", "\n  ")
            out.write(("{\n" + (f'  "prefix": {head},\n' if declared else "")).encode())
            out.write(b'  "bundle": {')

    def add(self, bundle: str, triples: list[tuple[str, str, _Value]]) -> None:
        """Write one bundle (its session graph's and content graph's triples).

        Raises:
            Unsupported: a graph the ``prov`` package would read otherwise.
        """
        records = _decode(triples)
        names = self.names
        names.forget()
        used: set[str] = set()
        title = self.titles.get(bundle)
        if title is None:  # a bundle not announced: named here (the document names it)
            title = names.provn(bundle, set()) if self.provn else names.plain(bundle, set())
        if self.provn:
            body = "".join(f"    {_provn_record(r, names, used)}\n" for r in records)
            declared = "".join(f"    prefix {p} <{ns}>\n" for p, ns in _declare(used, names))
            self.out.write(f"  bundle {title}\n{declared}    \n{body}  endBundle\n".encode())
            return
        content: dict[str, Any] = {}
        for record in records:
            section = content.setdefault(_RECORDS[record.kind][0], {})
            if record.ident is None:
                self.counter += 1
                key = f"_:id{self.counter}"
            else:
                key = names.plain(record.ident, used)
            section[key] = _json_record(record, names, used)
        prefixes = dict(_declare(used, names))
        piece = {"prefix": prefixes, **content} if prefixes else content
        text = json.dumps(piece, indent=2, ensure_ascii=False).replace("\n", "\n    ")
        sep = "\n" if self.first else ",\n"
        self.first = False
        self.out.write(f"{sep}    {json.dumps(title, ensure_ascii=False)}: {text}".encode())

    def begin(self, bundle: str) -> None:
        """Start a bundle written in parts (``part``, then ``end``): for a graph too large to
        decode whole, such as the ledger or the catalogue of a large store. The parts are
        cut between subjects; the records go to spill files, and ``end`` writes the bundle
        exactly as ``add`` would have written it from all the parts at once.

        ``add`` reads relations across subjects only through ``prov:qualified*`` nodes, and
        names a namespace without a prefix ``nsN`` in the order it meets them (all the
        anonymous records first), so a part holding ``qualified``, or an anonymous record
        naming a new namespace after a named record of an earlier part did, raises
        ``Whole``: the caller calls ``rollback`` and writes the bundle with ``add``."""
        self._parts = _BundleParts(bundle, dict(self.names.prefixes), self.counter)

    def part(self, triples: list[tuple[str, str, _Value]]) -> None:
        """Decode and write one part of the bundle begun (whole subjects only).

        Raises:
            Whole: this part cannot be written apart from the rest (see ``begin``).
            Unsupported: a graph the ``prov`` package would read otherwise.
        """
        parts = self._parts
        assert parts is not None
        if any("qualified" in p for _, p, _ in triples):
            raise Whole("a qualified influence")
        names = self.names
        names.forget()
        for record in _decode(triples):  # the anonymous records first, as ``add`` writes them
            known = len(names.prefixes)
            # PROV-N: the anonymous records, then the named ones, each in the order met;
            # PROV-JSON: grouped by kind as well
            keyword = "" if self.provn else _RECORDS[record.kind][0]
            spill = parts.spill(keyword, record.ident is None)
            if self.provn:
                spill.write(f"    {_provn_record(record, names, parts.used)}\n".encode())
            else:
                if record.ident is None:
                    self.counter += 1
                    key = f"_:id{self.counter}"
                else:
                    key = names.plain(record.ident, parts.used)
                body = _json_record(record, names, parts.used)
                text = json.dumps(body, indent=2, ensure_ascii=False)
                entry = f"{json.dumps(key, ensure_ascii=False)}: {text}".replace("\n", "\n        ")
                spill.write(("" if not spill.tell() else ",\n        ").encode() + entry.encode())
            if len(names.prefixes) != known:  # a namespace named nsN here, in the order met
                if record.ident is not None:
                    parts.named_first = True
                elif parts.named_first:  # ``add`` would have met this one before
                    raise Whole("a new namespace")

    def rollback(self) -> None:
        """Forget the bundle begun (nothing of it was written): ``add`` writes it instead."""
        parts, self._parts = self._parts, None
        if parts is not None:
            self.names.prefixes = parts.prefixes
            self.names._by_length = sorted(parts.prefixes.items(), key=lambda kv: -len(kv[1]))
            self.names.forget()
            self.counter = parts.counter
            parts.close()

    def end(self) -> None:
        """Write the bundle begun, from its parts."""
        parts, self._parts = self._parts, None
        assert parts is not None
        try:
            self._write_parts(parts)
        finally:
            parts.close()

    def _write_parts(self, parts: _BundleParts) -> None:
        title = self.titles.get(parts.bundle)
        if title is None:
            names = self.names
            title = (
                names.provn(parts.bundle, set()) if self.provn else names.plain(parts.bundle, set())
            )
        declared = _declare(parts.used, self.names)
        out = self.out
        if self.provn:
            head = "".join(f"    prefix {p} <{ns}>\n" for p, ns in declared)
            out.write(f"  bundle {title}\n{head}    \n".encode())
            for spill in parts.ordered():
                spill.seek(0)
                shutil.copyfileobj(spill, out)
            out.write(b"  endBundle\n")
            return
        sep = "\n" if self.first else ",\n"
        self.first = False
        sections = parts.sections()
        if not declared and not sections:
            out.write(f"{sep}    {json.dumps(title, ensure_ascii=False)}: {{}}".encode())
            return
        out.write(f"{sep}    {json.dumps(title, ensure_ascii=False)}: {{".encode())
        items = []
        if declared:
            prefixes = json.dumps(dict(declared), indent=2, ensure_ascii=False)
            items.append(f'"prefix": {prefixes}'.replace("\n", "\n      ").encode())
        first = True
        for item in items:
            out.write(b"\n      " + item)
            first = False
        for keyword, spills in sections:
            out.write(("\n      " if first else ",\n      ").encode())
            first = False
            out.write(f"{json.dumps(keyword)}: {{\n        ".encode())
            for i, spill in enumerate(spills):
                if i:
                    out.write(b",\n        ")
                spill.seek(0)
                shutil.copyfileobj(spill, out)
            out.write(b"\n      }")
        out.write(b"\n    }")

    def close(self) -> None:
        """End the document."""
        if self.provn:
            self.out.write(b"endDocument")
        else:
            self.out.write(b"\n  }\n}" if not self.first else b"}\n}")


def _declare(used: Iterable[str], names: _Names) -> list[tuple[str, str]]:
    return [(p, names.prefixes[p]) for p in sorted(used) if p not in _BUILT_IN]


class _BundleParts:
    """A bundle written in parts: its records' text in spill files, one per record kind and
    per anonymous or named record (``add`` writes the anonymous records first, and PROV-JSON
    groups the records by kind in the order the kinds first occur), and the prefixes used."""

    def __init__(self, bundle: str, prefixes: dict[str, str], counter: int) -> None:
        self.bundle, self.prefixes, self.counter = bundle, prefixes, counter
        self.used: set[str] = set()
        self.named_first = False  # a named record met a new namespace
        self._spills: dict[tuple[bool, str], IO[bytes]] = {}

    def spill(self, keyword: str, anonymous: bool) -> IO[bytes]:
        key = (not anonymous, keyword)
        spill = self._spills.get(key)
        if spill is None:
            spill = tempfile.SpooledTemporaryFile(max_size=_PART_SPILL)  # noqa: SIM115 (closed by close)
            self._spills[key] = spill
        return spill

    def ordered(self) -> list[IO[bytes]]:
        """The spills in the order ``add`` writes PROV-N records: anonymous ones first."""
        return [s for (named, _), s in self._spills.items() if not named] + [
            s for (named, _), s in self._spills.items() if named
        ]

    def sections(self) -> list[tuple[str, list[IO[bytes]]]]:
        """PROV-JSON's sections in order, each with its spills (anonymous records first)."""
        out: dict[str, list[IO[bytes]]] = {}
        for named in (False, True):
            for (is_named, keyword), spill in self._spills.items():
                if is_named == named:
                    out.setdefault(keyword, []).append(spill)
        return list(out.items())

    def close(self) -> None:
        for spill in self._spills.values():
            spill.close()


_PART_SPILL = 1 << 20
"""Bytes of a bundle part's records held in memory before they spill to a file."""
