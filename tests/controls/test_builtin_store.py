"""The built-in store-scoped controls, each with what passes it and what violates it.

One store holds real sessions of a payment agent: sealed ones, one recorded with sealing off,
calls a Ctrl-C cut short (one redone later with the same input, one not), erasures with and
without a sealed receipt, and retention runs: trails' own, which skips the held session, and
one another tool recorded that removed it anyway.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.controls.builtin_support import violations

from trails.agent import Session
from trails.agent.planners import react
from trails.compliance.erasure import erase
from trails.compliance.holds import place_hold
from trails.compliance.retention import RetentionApplied, RetentionPolicy, apply, retention_graph
from trails.evidence.seal import install_sealer
from trails.kernel import capability
from trails.kernel import registry as _registry
from trails.llm import LLMClient
from trails.prov import Recorder
from trails.prov.iri import Minter
from trails.store import Store, open_store

ALICE, DPO = "did:web:alice.example", "did:web:dpo.example"
#: calls of ctl.pay with these amounts are cut short by Ctrl-C
CUT_SHORT: set[int] = set()


def turn(action: str, args: dict[str, Any] | None = None, **extra: Any) -> str:
    payload = {"thought": f"use {action}", "action": action, "action_input": args or {}}
    return "```json\n" + json.dumps(payload | extra) + "\n```"


@dataclass
class Recorded:
    store: Store
    sealed: str
    unsealed: str
    redone: str
    lost: str
    erased_sealed: str
    erased_unsealed: str
    held: str
    removed: str


def _pay(recorder: Recorder, amount: int, *, interrupt: bool = False) -> str:
    """A session that pays ``amount``; with ``interrupt`` a Ctrl-C reaches the payment."""
    if interrupt:
        CUT_SHORT.add(amount)
    session = Session(principal=ALICE, recorder=recorder)
    script = [turn("ctl.pay", {"amount": amount}), turn("finish", final_answer="paid")]
    try:
        react.run("Pay.", llm=LLMClient.mock(script), session=session, tools=["ctl.pay"])
    except KeyboardInterrupt:
        assert interrupt
    finally:
        CUT_SHORT.discard(amount)
    session.close()
    return str(session.iri)


@pytest.fixture(scope="module")
def recorded() -> Iterator[Recorded]:
    @capability(id="ctl.pay", side_effects=True)
    def pay(amount: int) -> str:
        if amount in CUT_SHORT:
            raise KeyboardInterrupt
        return "paid"

    store = open_store("memory:")
    recorder = Recorder(store)
    install_sealer(recorder)
    unsealing = Recorder(store)  # [audit] seal = false: nothing seals what it records
    try:
        sealed = _pay(recorder, 1)
        unsealed = _pay(unsealing, 2)
        redone = _pay(recorder, 3, interrupt=True)
        _pay(recorder, 3)  # the same payment, redone and confirmed
        lost = _pay(recorder, 4, interrupt=True)
        erased_sealed, erased_unsealed = _pay(recorder, 5), _pay(recorder, 6)
        erase(recorder, session=erased_sealed, reason="request 1", by=DPO)
        erase(recorder, session=erased_unsealed, reason="request 2", by=DPO, seal=False)
        held, removed = _pay(recorder, 7), _pay(recorder, 8)
        place_hold(recorder, held, reason="case 7", by=DPO)
        later = datetime.now(UTC) + timedelta(days=3)
        # trails' own run: the held session is skipped
        result = apply(
            recorder,
            RetentionPolicy.from_table({"content_days": 1}),
            by=DPO,
            reason="content past a day",
            now=later,
        )
        assert held not in {r.session for r in result.removed}
        assert removed in {r.session for r in result.removed}
        # another tool's run, recorded as trails records one, that removed the held session
        graph = retention_graph(recorder.minter, str(uuid.uuid4()))
        at = datetime.now(UTC)
        recorder.record(
            RetentionApplied(
                session=graph,
                activity=Minter.part(graph, "run"),
                by=DPO,
                reason="cleanup script",
                started=at,
                ended=at,
                removals=((str(Minter.part(graph, "removal:1")), held, "content", "1 day", None),),
            )
        )
        yield Recorded(
            store, sealed, unsealed, redone, lost, erased_sealed, erased_unsealed, held, removed
        )
    finally:
        store.close()
        _registry._handlers.pop("ctl.pay", None)


def test_session_sealed(recorded: Recorded) -> None:
    found = violations(recorded.store, "session-sealed")
    assert [(subject, session) for subject, session, _ in found] == [
        (recorded.unsealed, recorded.unsealed)
    ]
    assert "has no seal" in str(found[0][2])


def test_interrupted_side_effect_resolved(recorded: Recorded) -> None:
    found = violations(recorded.store, "interrupted-side-effect-resolved")
    assert [session for _, session, _ in found] == [recorded.lost]
    assert "ctl.pay was interrupted" in str(found[0][2])


def test_erasure_receipt_sealed(recorded: Recorded) -> None:
    found = violations(recorded.store, "erasure-receipt-sealed")
    assert [session for _, session, _ in found] == [recorded.erased_unsealed]


def test_retention_respects_holds(recorded: Recorded) -> None:
    found = violations(recorded.store, "retention-respects-holds")
    assert [session for _, session, _ in found] == [recorded.held]
    assert "content of a session under legal hold" in str(found[0][2])
