"""A session's soft cost limit: one warning when what it spent passes a threshold.

seed 002's ``cost_warning_threshold`` alerts once an agent has spent more than a
given amount and lets it go on (``max_cost_usd=`` is the hard stop, recorded as a
budget breach). In trails it is ``Session(cost_warning_usd=0.50)``: an observer of
the session's own ``llm_end`` events adds up what its completions cost, and the
first time the sum reaches the threshold it logs a warning on the ``trails.agent``
logger and issues a ``CostWarning`` (a ``UserWarning``, so ``warnings`` filters can
silence it or turn it into an error). The spend is already evidence, on each
recorded completion (``trails:costUSD``); the warning is the live signal.
"""

from __future__ import annotations

import logging
import threading
import warnings
from typing import Any

from trails.errors import UserError
from trails.kernel.observe import ObserverBase, ObserverEvent

__all__ = ["CostWarning", "CostWatch", "cost_watch"]

log = logging.getLogger("trails.agent")


class CostWarning(UserWarning):
    """A session's spend reached its ``cost_warning_usd``."""


class CostWatch(ObserverBase):
    """Adds up the session's ``llm_end`` costs and warns once at ``threshold`` USD.

    Args:
        threshold: the spend, in USD, that earns the warning.
    """

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.spent = 0.0
        self.warned = False
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
