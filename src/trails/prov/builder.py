"""A small writer of PROV-O quads into one named graph.

Events describe themselves through this builder (``event.emit(builder)``), so
the PROV-O rules live in one place:

- every resource gets its PROV-O class as well as its trails subclass
  (SPARQL engines do no inference; a plain ``prov:Activity`` query must match);
- a trails property that specialises a PROV-O property is written with both;
- content is ``prov:value`` (canonical JSON when structured) plus
  ``trails:sha256``, or the hash alone when the settings say ``hash`` (marked
  ``trails:contentPolicy "hash"``, so verification knows no value is due); the
  content quads go to the graph's *content graph* (``trails.prov.content``),
  the digest stays with the structure, in the same list of quads (so in the
  same atomic write): seals cover the structure, erasure removes the content;
- with masking rules (``trails.prov.masking``), every text is masked before it
  becomes a literal, digests are of the masked text, and each masking is
  recorded as a ``trails:Masking`` next to the value (rule, property, matches).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trails.prov.content import CONTENT_DIGESTS, canonical_json, content_graph, sha256_hex
from trails.prov.iri import Minter
from trails.prov.masking import Masking
from trails.prov.vocab import PROV, RDF, RDFS, T
from trails.store.terms import IRI, Literal, Quad, Term, literal

__all__ = ["QuadBuilder"]

_TYPE = RDF.type
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
# Identifiers, digests and keys: never masked (a digest is not personal data, and a
# masked seal field would break the ledger).
_UNMASKED = frozenset(
    {
        T.sha256,
        T.contentPolicy,
        T.argumentsSha256,
        T.resultSha256,
        T.requestHash,
        T.graphHash,
        T.sealHash,
        T.previousSealHash,
        T.anchorHash,
        T.signature,
        T.signingKey,
        T.fromKey,
        T.toKey,
        T.rotationHash,
        T.writerId,
        T.maskingRule,
        T.memoryRevision,
        T.erasedDigest,
        *CONTENT_DIGESTS.values(),
    }
)


class QuadBuilder:
    """Collects the quads of one event for one graph.

    Args:
        graph: the named graph the event belongs to.
        minter: IRI minter under the configured base.
        content: ``"full"`` to record values, ``"hash"`` to record hashes only.
        masking: rules applied to every text before it is recorded (None: none).
    """

    __slots__ = ("content", "content_graph", "graph", "masking", "minter", "quads")

    def __init__(
        self,
        graph: IRI,
        minter: Minter,
        content: str = "full",
        masking: Masking | None = None,
    ) -> None:
        self.graph = graph
        self.content_graph = content_graph(graph)
        self.minter = minter
        self.content = content
        self.masking = masking if masking else None
        self.quads: list[Quad] = []

    def sibling(self, graph: IRI) -> QuadBuilder:
        """A builder for another graph with the same minter, content policy and masking."""
        return QuadBuilder(graph, self.minter, self.content, self.masking)

    def add(self, s: IRI, p: IRI, o: Term) -> None:
        self.quads.append(Quad(s, p, o, self.graph))

    def value(self, s: IRI, p: IRI, value: Any) -> None:
        """Add a literal property unless ``value`` is None (text is masked first)."""
        if value is None:
            return
        if type(value) is not str:
            self.quads.append(Quad(s, p, literal(value), self.graph))
            return
        if self.masking is not None:
            value = self.masked(s, p, value)
        self.quads.append(Quad(s, p, Literal(value, _XSD_STRING), self.graph))

    def masked(self, s: IRI, p: IRI, text: str) -> str:
        """``text`` with the masking rules applied; records a ``trails:Masking`` per rule
        that matched (``s``'s property ``p``)."""
        if self.masking is None or p in _UNMASKED:
            return text
        masked, found = self.masking.mask(text)
        for rule, count in found:
            name = p.rsplit("#", 1)[-1].rsplit("/", 1)[-1]
            m = Minter.part(s, f"masking:{name}:{rule}")
            self.types(m, T.Masking, PROV.Entity)
            self.quads.append(Quad(m, RDFS.label, Literal(f"{rule} masked in {name}"), self.graph))
            self.add(s, T.masking, m)
            self.quads.append(Quad(m, T.maskingRule, Literal(rule), self.graph))
            self.add(m, T.maskedProperty, p)
            self.quads.append(Quad(m, T.matchCount, literal(count), self.graph))
        return masked

    def content_value(self, s: IRI, text: str) -> str:
        """``prov:value`` and ``trails:sha256`` of ``text`` (masked first, whatever the
        content policy); returns the digest."""
        text = self.masked(s, PROV.value, text)
        digest = sha256_hex(text)
        self.quads.append(Quad(s, PROV.value, Literal(text, _XSD_STRING), self.content_graph))
        self.value(s, T.sha256, digest)
        return digest

    def content_text(self, s: IRI, p: IRI, text: str | None, *, digest: bool = True) -> str | None:
        """A content property (``trails:goal``, ``trails:answer``, ``trails:arguments`` ...):
        the text (masked) in the content graph and, with ``digest``, its sha256 on the
        structure property ``CONTENT_DIGESTS[p]``. Nothing when ``text`` is None.
        Returns the text recorded (masked), for a caller that records its own digest."""
        if text is None:
            return None
        text = self.masked(s, p, text)
        self.quads.append(Quad(s, p, Literal(text, _XSD_STRING), self.content_graph))
        if digest:
            self.value(s, CONTENT_DIGESTS[p], sha256_hex(text))
        return text

    def types(self, s: IRI, *classes: IRI) -> None:
        for cls in classes:
            self.quads.append(Quad(s, _TYPE, cls, self.graph))

    def label(self, s: IRI, text: str) -> None:
        self.value(s, RDFS.label, text)

    def activity(self, s: IRI, cls: IRI, started: datetime, ended: datetime | None = None) -> None:
        """An activity typed ``cls`` and ``prov:Activity``, with its times."""
        self.types(s, cls, PROV.Activity)
        self.value(s, PROV.startedAtTime, started)
        self.value(s, PROV.endedAtTime, ended)

    def child_of(self, s: IRI, parent: IRI | None, session: IRI) -> None:
        """Link an activity to its parent activity and its session."""
        if parent is not None:
            self.add(s, PROV.wasInformedBy, parent)
        self.add(s, T.inSession, session)

    def agent(self, principal: str) -> IRI:
        """Declare a principal as ``prov:Agent`` and return its IRI."""
        iri = self.minter.agent(principal)
        self.types(iri, T.Principal, PROV.Agent)
        self.value(iri, T.principalId, principal)
        return iri

    def associate(self, activity: IRI, agent: IRI, plan: IRI | None = None) -> None:
        """``prov:wasAssociatedWith`` plus, with a plan, the qualified association."""
        self.add(activity, PROV.wasAssociatedWith, agent)
        if plan is not None:
            assoc = Minter.part(activity, "association")
            self.types(assoc, PROV.Association)
            self.add(activity, PROV.qualifiedAssociation, assoc)
            self.add(assoc, PROV.agent, agent)
            self.add(assoc, PROV.hadPlan, plan)

    def entity(
        self,
        s: IRI,
        cls: IRI,
        content: Any = None,
        *,
        generated_by: IRI | None = None,
        used_by: IRI | None = None,
        at: datetime | None = None,
        has_content: bool = True,
        as_json: bool = True,
        text: str | None = None,
    ) -> str | None:
        """An entity typed ``cls`` and ``prov:Entity`` carrying ``content``.

        ``content`` is recorded as canonical JSON, or as plain text when
        ``as_json`` is false (completions, goals); ``text``, when given, is that
        form already made (``invoke`` encodes arguments and results once, to check
        them). Returns the sha256 of the recorded text (None without content).
        """
        self.types(s, cls, PROV.Entity)
        digest = None
        if has_content:
            if text is None:
                text = canonical_json(content) if as_json else str(content)
            text = self.masked(s, PROV.value, text)
            digest = sha256_hex(text)
            if self.content == "full":
                self.quads.append(
                    Quad(s, PROV.value, Literal(text, _XSD_STRING), self.content_graph)
                )
            else:  # sealed with the digest: verification expects no value, and finds none
                self.value(s, T.contentPolicy, self.content)
            self.value(s, T.sha256, digest)
        if generated_by is not None:
            self.add(s, PROV.wasGeneratedBy, generated_by)
            self.value(s, PROV.generatedAtTime, at)
        if used_by is not None:
            self.add(used_by, PROV.used, s)
        return digest
