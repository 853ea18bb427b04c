"""Evidence of a model call beyond its prompt and answer: the images it sent, a failover, a refusal.

These are events of the LLM room (``trails.prov.events`` says rooms add their
own), each written in one atomic write:

- ``SentCompletion``: the ``LLMCompleted`` the envelope records for every call,
  which also names the images its request showed the model. The completion
  ``prov:used`` each one: the entity already recorded for it (a behaviour-tree
  run's ``trails:Attachment``, named by ``Image.entity``), else a
  ``trails:Attachment`` recorded with the completion (media type, size,
  sha256 marked ``trails:contentPolicy "hash"``: the bytes are never recorded,
  and verification expects no value). The prompt's messages name them the same
  way, so the request hash, the response cache and replay tell two images apart.
- ``ProviderFellBack``: a member of a fallback chain failed. Its attempt is a
  failed ``trails:LLMCompletion`` (status ``error``, its error message, the
  model that failed) and, when another member is tried, the switch is a
  ``trails:ProviderFallback`` activity ``prov:wasInformedBy`` that completion,
  naming the failed and the next provider. The next attempt (failed again, or
  the answer) is ``prov:wasInformedBy`` the switch.
- ``BudgetRefused``: a principal's budget refused a call before anything was
  sent. The call is a ``trails:LLMCompletion`` with status ``refused`` that
  ``trails:wasTerminatedBy`` (and ``prov:wasEndedBy``) a ``trails:BudgetBreach``
  naming the budget (``trails:budgetKind``), its limit and what was spent: the
  same termination a planner records when a run budget stops it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import Field

from trails.llm.types import Message
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event, LLMCompleted, Terminated
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI

__all__ = ["BudgetRefused", "ProviderFellBack", "SentCompletion", "attachment", "images_sent"]

HASH_ONLY = "hash"
"""The ``trails:contentPolicy`` of an entity recorded by its digest alone (as verification
reads it: ``trails.evidence.content.HASH_ONLY``)."""


def images_sent(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The images a request shows the model, each once: ``Image.as_dict()`` plus its ``entity``."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for message in messages:
        for image in message.images:
            key = image.entity or image.sha256
            if key in seen:
                continue
            seen.add(key)
            sent = image.as_dict()
            if image.entity is not None:
                sent["entity"] = image.entity
            out.append(sent)
    return out


class SentCompletion(LLMCompleted):
    """A model call (``LLMCompleted``) that also names the images it sent (``images_sent``)."""

    images: list[dict[str, Any]] = Field(default_factory=list)

    def emit(self, b: QuadBuilder) -> None:
        super().emit(b)
        a = IRI.trusted(self.activity)
        for i, image in enumerate(self.images):
            entity = image.get("entity")
            if entity:
                b.add(a, PROV.used, IRI.trusted(str(entity)))
                continue
            e = Minter.part(a, f"image{i + 1}")
            media_type = str(image["media_type"])
            label = f"image {i + 1} ({media_type})"
            size, digest = int(image["size"]), str(image["sha256"])
            attachment(b, e, label=label, media_type=media_type, size=size, digest=digest)
            b.add(a, PROV.used, e)


def attachment(
    b: QuadBuilder, e: IRI, *, label: str, media_type: str, size: int, digest: str
) -> None:
    """The quads of a ``trails:Attachment``: media type, size and the sha256 of bytes that are
    never recorded (``trails:contentPolicy "hash"``: verification expects no value)."""
    b.entity(e, T.Attachment, has_content=False)
    b.label(e, label)
    b.value(e, T.mediaType, media_type)
    b.value(e, T.byteSize, size)
    b.value(e, T.sha256, digest)
    b.value(e, T.contentPolicy, HASH_ONLY)


class ProviderFellBack(Event):
    """A failed attempt of a fallback chain and, when one is tried, the switch to the next."""

    failed: LLMCompleted
    switch: str | None = None
    next_provider: str | None = None
    at: datetime

    def emit(self, b: QuadBuilder) -> None:
        self.failed.emit(b)
        if self.switch is None or self.next_provider is None:
            return  # the last member failed: nothing to switch to
        s = IRI.trusted(self.switch)
        failed = f"{self.failed.provider}:{self.failed.model}"
        b.activity(s, T.ProviderFallback, self.at, self.at)
        b.add(s, PROV.wasInformedBy, IRI.trusted(self.failed.activity))
        b.add(s, T.inSession, self.graph)
        b.add(s, PROV.wasAssociatedWith, b.agent(self.failed.principal))
        b.value(s, T.failedProvider, failed)
        b.value(s, T.nextProvider, self.next_provider)
        b.content_text(s, T.errorMessage, self.failed.error)
        b.value(s, T.stepIndex, self.failed.step)
        b.label(s, f"fallback from {failed} to {self.next_provider}")


class ProviderSkipped(Event):
    """A member of a fallback chain passed over, unasked, because its circuit was open."""

    activity: str
    principal: str
    skipped: str
    next_provider: str | None = None
    open_until: datetime
    at: datetime
    call: str
    step: int | None = None

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        b.activity(a, T.CircuitSkip, self.at, self.at)
        b.add(a, T.inSession, self.graph)
        b.add(a, PROV.wasAssociatedWith, b.agent(self.principal))
        b.value(a, T.skippedProvider, self.skipped)
        b.value(a, T.askedInstead, self.next_provider)
        b.value(a, T.circuitOpenUntil, self.open_until)
        b.add(a, T.skippedFor, IRI.trusted(self.call))
        b.value(a, T.stepIndex, self.step)
        b.label(a, f"skipped {self.skipped}: its circuit is open")


class BudgetRefused(Event):
    """A call a principal's budget refused: a ``refused`` completion ended by a budget breach."""

    refused: LLMCompleted
    budget: str
    limit: float
    observed: float

    def emit(self, b: QuadBuilder) -> None:
        self.refused.emit(b)
        who = self.refused.principal
        Terminated(
            session=self.session,
            activity=self.refused.activity,
            kind="budget",
            reason=f"the {self.budget} budget of {who} is spent",
            limit=float(self.limit),
            observed=float(self.observed),
            at=self.refused.ended,
        ).emit(b)
        termination = Minter.part(IRI.trusted(self.refused.activity), "termination")
        b.value(termination, T.budgetKind, self.budget)
