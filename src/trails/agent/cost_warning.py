"""A session's soft cost limit: one warning when what it spent passes a threshold.

seed 002's ``cost_warning_threshold`` alerts once an agent has spent more than a
given amount and lets it go on (``max_cost_usd=`` is the hard stop, recorded as a
budget breach). In trails it is ``Session(cost_warning_usd=0.50)``: an observer of
the session's own ``llm_end`` events adds up what its completions cost, and the
first time the sum reaches the threshold it logs a warning on the ``trails.agent``
logger and issues a ``CostWarning`` (a ``UserWarning``, so ``warnings`` filters can
silence it or turn it into an error). The spend is evidence on each recorded
completion (``trails:costUSD``), and so is the crossing: a ``trails:CostWarningIssued``
activity in the session's graph (``CostWarned``) with the threshold
(``trails:costWarningUSD``), what had been spent (``trails:spentUSD``) and the
completion that crossed it (``prov:wasInformedBy``), written as one atomic write when the
warning is issued.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable
from datetime import datetime
from typing import Any

from trails.errors import TrailsError, UserError
from trails.kernel.observe import ObserverBase, ObserverEvent
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI

__all__ = ["CostWarned", "CostWarning", "CostWatch", "cost_watch"]

log = logging.getLogger("trails.agent")


class CostWarning(UserWarning):
    """A session's spend reached its ``cost_warning_usd``."""


class CostWarned(Event):
    """A session's spend reached its ``cost_warning_usd``: the warning, as evidence."""

    activity: str
    at: datetime
    threshold: float
    spent: float
    completion: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        b.activity(a, T.CostWarningIssued, self.at, self.at)
        b.child_of(a, None, self.graph)
        b.label(a, f"cost warning at ${self.threshold:.4f}")
        b.value(a, T.costWarningUSD, float(self.threshold))
        b.value(a, T.spentUSD, float(self.spent))
        if self.completion is not None:
            b.add(a, PROV.wasInformedBy, IRI.trusted(self.completion))


class CostWatch(ObserverBase):
    """Adds up the session's ``llm_end`` costs and warns once at ``threshold`` USD.

    Args:
        threshold: the spend, in USD, that earns the warning.
        record: records the warning's ``CostWarned`` event (a ``Session`` sets it).
        mint: a new activity IRI for it.
    """

    def __init__(
        self,
        threshold: float,
        *,
        record: Callable[[Event], Any] | None = None,
        mint: Callable[[], str] | None = None,
    ) -> None:
        self.threshold = threshold
        self.spent = 0.0
        self.warned = False
        self.record = record
        self.mint = mint
        self._lock = threading.Lock()

    def on_llm_end(self, event: ObserverEvent) -> None:
        usd = event.data.get("usd")
        if not isinstance(usd, int | float) or usd <= 0:
            return
        with self._lock:
            self.spent += usd
            if self.warned or self.spent < self.threshold:
                return
            self.warned = True
            spent = self.spent
        message = (
            f"session {event.session} has spent ${spent:.4f}, reaching its cost warning "
            f"of ${self.threshold:.4f} (cost_warning_usd=); max_cost_usd= stops a run"
        )
        log.warning(message)
        if self.record is not None and self.mint is not None and event.session is not None:
            warned = CostWarned(
                session=IRI.trusted(event.session),
                activity=self.mint(),
                at=event.at,
                threshold=self.threshold,
                spent=spent,
                completion=event.call_id,
            )
            try:
                self.record(warned)
            except TrailsError:  # the warning still goes out; the spend is on record
                log.warning("could not record the cost warning of %s", event.session)
        warnings.warn(message, CostWarning, stacklevel=2)


def cost_watch(threshold: Any) -> CostWatch | None:
    """The observer for ``Session(cost_warning_usd=threshold)``, or None when it is None.

    Raises:
        UserError: the threshold is not a positive number.
    """
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or threshold <= 0:
        raise UserError(f"cost_warning_usd= must be a positive number of USD, not {threshold!r}")
    return CostWatch(float(threshold))
