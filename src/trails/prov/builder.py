"""A small writer of PROV-O quads into one named graph.

Events describe themselves through this builder (``event.emit(builder)``), so
the PROV-O rules live in one place:

- every resource gets its PROV-O class as well as its trails subclass
  (SPARQL engines do no inference; a plain ``prov:Activity`` query must match);
- a trails property that specialises a PROV-O property is written with both;
- content is ``prov:value`` (canonical JSON when structured) plus
  ``trails:sha256``, or the hash alone when the settings say ``hash``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trails.prov.content import canonical_json, sha256_hex
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, RDF, RDFS, T
from trails.store.terms import IRI, Literal, Quad, Term, literal

__all__ = ["QuadBuilder"]

_TYPE = RDF.type
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


class QuadBuilder:
    """Collects the quads of one event for one graph.

    Args:
        graph: the named graph the event belongs to.
        minter: IRI minter under the configured base.
        content: ``"full"`` to record values, ``"hash"`` to record hashes only.
    """

    __slots__ = ("content", "graph", "minter", "quads")

    def __init__(self, graph: IRI, minter: Minter, content: str = "full") -> None:
        self.graph = graph
        self.minter = minter
        self.content = content
        self.quads: list[Quad] = []

    def add(self, s: IRI, p: IRI, o: Term) -> None:
        self.quads.append(Quad(s, p, o, self.graph))

    def value(self, s: IRI, p: IRI, value: Any) -> None:
        """Add a literal property unless ``value`` is None."""
        if value is None:
            return
        o = Literal(value, _XSD_STRING) if type(value) is str else literal(value)
        self.quads.append(Quad(s, p, o, self.graph))

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
    ) -> str | None:
        """An entity typed ``cls`` and ``prov:Entity`` carrying ``content``.

        ``content`` is recorded as canonical JSON, or as plain text when
        ``as_json`` is false (completions, goals). Returns the sha256 of the
        recorded text (None without content).
        """
        self.types(s, cls, PROV.Entity)
        digest = None
        if has_content:
            text = canonical_json(content) if as_json else str(content)
            digest = sha256_hex(text)
            if self.content == "full":
                self.value(s, PROV.value, text)
            self.value(s, T.sha256, digest)
        if generated_by is not None:
            self.add(s, PROV.wasGeneratedBy, generated_by)
            self.value(s, PROV.generatedAtTime, at)
        if used_by is not None:
            self.add(used_by, PROV.used, s)
        return digest
