"""The cost tracker: envelopes of spend, budgets per principal, totals that never double count.

An envelope records one spend: who (principal), on what (``llm:<model>`` or a
capability id), how much (usd, which may be unknown, and tokens), and the
activity that spent it. Cost lives on the leaf that spent it. When a spend is
also reported by an enclosing scope (a capability that wraps its own LLM
call and books a summary), that outer row is booked with ``dedupe="child"``
against the inner call's id and is excluded from the totals, so each dollar
counts once however calls nest.

Every ``invoke()`` books an envelope too, tagged with the capability id (the trails
guide: each invoke "emits its own prov:Activity and cost envelope"). Envelopes booked
while its handler ran name the invocation as their ``parent``; the invocation's own
envelope carries their sum (``settle``) and is booked ``dedupe="child"`` when it has one,
so it shows what the call cost without counting it twice. A call that spent nothing
books a counted envelope of 0.

Budgets are per principal (``usd`` and/or ``tokens``). ``check`` raises
``BudgetExceeded`` *before* a spend that would start past the budget.

A process may run for months: the tracker keeps running totals (per principal
and overall) that ``book`` updates, so a budget check costs the same after a
million calls as after one, and it keeps only the newest ``KEEP`` envelopes
(``envelopes()`` lists those; the totals count every envelope ever booked).
The store keeps the full record of every spend.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field

from trails.errors import BudgetExceeded

__all__ = ["KEEP", "Budget", "CostTracker", "Envelope", "default_tracker"]

KEEP = 10_000
"""How many of the newest envelopes a tracker keeps (its totals count them all)."""


@dataclass(frozen=True)
class Envelope:
    """One booked spend."""

    tag: str
    principal: str
    usd: float | None
    input_tokens: int = 0
    output_tokens: int = 0
    activity: str | None = None
    call_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    parent_call_id: str | None = None
    dedupe: str | None = None
    at: float = field(default_factory=time.time)
    parent: str | None = None
    """The invocation whose handler made this spend (its envelope sums this one)."""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def counted(self) -> bool:
        """False for rows that repeat a child's spend (``dedupe="child"``)."""
        return self.dedupe != "child"


@dataclass(frozen=True)
class Budget:
    usd: float | None = None
    tokens: int | None = None


class _Totals:
    """Running sums of counted envelopes (one per principal, one overall)."""

    __slots__ = ("input_tokens", "output_tokens", "tokens", "unknown", "usd")

    def __init__(self) -> None:
        self.usd = 0.0
        self.tokens = self.input_tokens = self.output_tokens = 0
        self.unknown = 0

    def add(self, envelope: Envelope) -> None:
        self.usd += envelope.usd or 0.0
        self.tokens += envelope.tokens
        self.input_tokens += envelope.input_tokens
        self.output_tokens += envelope.output_tokens
        if envelope.usd is None:
            self.unknown += 1


class CostTracker:
    """Thread-safe ledger of envelopes with per-principal budgets.

    Args:
        keep: how many of the newest envelopes ``envelopes()`` can list (default
            ``KEEP``); older ones are dropped from the list, never from the totals.
    """

    def __init__(self, *, keep: int = KEEP) -> None:
        if keep < 0:
            raise ValueError(f"keep must be >= 0, not {keep}")
        self._lock = threading.Lock()
        self._envelopes: deque[Envelope] = deque(maxlen=keep)
        self._budgets: dict[str, Budget] = {}
        self._all = _Totals()
        self._by: dict[str, _Totals] = {}
        self._under: dict[str, _Totals] = {}

    def book(
        self,
        *,
        tag: str,
        principal: str,
        usd: float | None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        activity: str | None = None,
        parent_call_id: str | None = None,
        dedupe: str | None = None,
        parent: str | None = None,
    ) -> Envelope:
        """Record a spend and return its envelope (``parent``: the invocation it was made in)."""
        envelope = Envelope(
            tag=tag,
            principal=principal,
            usd=usd,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            activity=activity,
            parent_call_id=parent_call_id,
            dedupe=dedupe,
            parent=parent,
        )
        with self._lock:
            self._envelopes.append(envelope)
            under = self._under.get(parent) if parent is not None else None
            if under is not None:
                under.add(envelope)
            if envelope.counted:
                self._all.add(envelope)
                totals = self._by.get(principal)
                if totals is None:
                    totals = self._by[principal] = _Totals()
                totals.add(envelope)
        return envelope

    def scope(self, activity: str) -> None:
        """Start summing what is booked with ``parent=activity`` (an invocation's handler)."""
        with self._lock:
            self._under.setdefault(activity, _Totals())

    def settle(self, activity: str) -> tuple[float | None, int, int, bool]:
        """What was booked inside an invocation, once: (usd, input and output tokens, any).

        The usd is None when some of it had no known price; the sums are forgotten.
        """
        with self._lock:
            under = self._under.pop(activity, None)
        if under is None or not (under.tokens or under.usd or under.unknown):
            return 0.0, 0, 0, False
        usd = None if under.unknown else under.usd
        return usd, under.input_tokens, under.output_tokens, True

    def _totals(self, principal: str | None) -> _Totals:
        if principal is None:
            return self._all
        return self._by.get(principal) or _Totals()

    def envelopes(self, *, principal: str | None = None, tag: str | None = None) -> list[Envelope]:
        """The newest envelopes booked (at most ``keep``), oldest first, filtered."""
        with self._lock:
            rows = list(self._envelopes)
        return [
            e
            for e in rows
            if (principal is None or e.principal == principal) and (tag is None or e.tag == tag)
        ]

    def total_usd(self, principal: str | None = None) -> float:
        """Known spend in USD of every envelope booked, children counted once; unknown
        prices count as 0."""
        with self._lock:
            return self._totals(principal).usd

    def total_tokens(self, principal: str | None = None) -> int:
        """Prompt + completion tokens of every envelope booked, children counted once."""
        with self._lock:
            return self._totals(principal).tokens

    def unknown_usd(self, principal: str | None = None) -> int:
        """How many counted envelopes have no known price."""
        with self._lock:
            return self._totals(principal).unknown

    def set_budget(
        self, principal: str, *, usd: float | None = None, tokens: int | None = None
    ) -> None:
        with self._lock:
            self._budgets[principal] = Budget(usd=usd, tokens=tokens)

    def budget(self, principal: str) -> Budget | None:
        with self._lock:
            return self._budgets.get(principal)

    def check(self, principal: str) -> None:
        """Raise ``BudgetExceeded`` if ``principal`` has already spent its budget."""
        budget = self.budget(principal)
        if budget is None:
            return
        if budget.usd is not None:
            spent = self.total_usd(principal)
            if spent >= budget.usd:
                raise BudgetExceeded("usd", budget.usd, spent, principal)
        if budget.tokens is not None:
            used = self.total_tokens(principal)
            if used >= budget.tokens:
                raise BudgetExceeded("tokens", budget.tokens, used, principal)

    def reset(self) -> None:
        with self._lock:
            self._envelopes.clear()
            self._budgets.clear()
            self._all = _Totals()
            self._by.clear()


_default = CostTracker()


def default_tracker() -> CostTracker:
    """The module tracker every LLM call books into and planners read budgets from."""
    return _default
