"""Evidence of a model call that did not simply answer: a provider failover, a budget refusal.

Both are events of the LLM room (``trails.prov.events`` says rooms add their
own), each written in one atomic write:

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

from datetime import datetime

from trails.prov.builder import QuadBuilder
from trails.prov.events import Event, LLMCompleted, Terminated
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI

__all__ = ["BudgetRefused", "ProviderFellBack"]


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
