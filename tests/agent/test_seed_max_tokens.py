"""Seed 002's ``AgentConfig.max_tokens`` (one reply's cap) against trails' ``max_tokens`` (the run's budget).

trails keeps its meaning: ``max_tokens=`` is the whole run's token budget, and
``max_tokens_per_call=`` caps each reply. A budget no larger than one call's cap
is the selectools spelling by mistake: the run warns, naming the right keyword,
and still does what trails documents (the graph records the budget stop).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import react
from trails.llm import LLMClient, Response
from trails.prov.vocab import T
from trails.store import Store


def test_a_selectools_sized_max_tokens_warns_and_stays_a_run_budget(
    store: Store, notes: Any, reply: Any, prov: Any
) -> None:
    turn = Response(text=reply("notes.search", {"tag": "urgent"}), model="", input_tokens=600)
    client = LLMClient.mock(response=[turn] * 4)
    with pytest.warns(UserWarning, match="max_tokens_per_call=1000"):
        result = react.run(
            "Find urgent notes.",
            llm=client,
            session=Session(principal="did:local:alice"),
            max_tokens=1000,
        )
    assert client.requests[0].max_tokens == 1024  # each reply's cap is untouched
    assert result.stopped == "max_tokens" and len(result.steps) == 2
    termination = prov.termination(result.activity_iri)
    assert termination["cls"] == T.BudgetBreach and termination["limit"] == 1000


def test_a_run_budget_above_the_reply_cap_does_not_warn(
    store: Store, notes: Any, reply: Any
) -> None:
    client = LLMClient.mock(response=[reply("finish", final_answer="done")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        react.run(
            "Go.",
            llm=client,
            session=Session(principal="did:local:alice"),
            tools=[],  # no tools: the only warning that could come is the budget's
            max_tokens=50_000,
            max_tokens_per_call=256,
        )
    assert client.requests[0].max_tokens == 256
