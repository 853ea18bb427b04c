"""Cost is counted once: a completion inside a capability inside a planner step.

The planner's own completions and the capability's completion each book one
envelope, on the completion's activity; nothing above a completion books LLM
spend again (a scope that wants to report it books ``dedupe="child"``). So the
tracker's totals equal a SPARQL sum over the recorded completions.
"""

from __future__ import annotations

from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import react
from trails.errors import BudgetExceeded
from trails.kernel import Context, capability, default_tracker, invoke
from trails.llm import LLMClient, Response
from trails.prov import PROV, T
from trails.store import IRI, Solutions, Store, to_python
from trails.testing import assert_conforms

TOTALS = f"""
SELECT (SUM(?usd) AS ?total) (SUM(?in + ?out) AS ?tokens) (COUNT(?a) AS ?n) WHERE {{
  GRAPH ?g {{
    ?a a {T.LLMCompletion.n3()} ; {T.inputTokens.n3()} ?in ; {T.outputTokens.n3()} ?out .
    OPTIONAL {{ ?a {T.costUSD.n3()} ?u }}
    BIND(COALESCE(?u, 0.0) AS ?usd)
  }}
}}
"""


def totals(store: Store) -> tuple[float, int, int]:
    result = store.query(TOTALS)
    assert isinstance(result, Solutions)
    row = next(iter(result))
    return float(to_python(row["total"])), int(to_python(row["tokens"])), int(to_python(row["n"]))


def scripted(text: str, usd: float, tokens: tuple[int, int]) -> Response:
    return Response(text=text, model="", input_tokens=tokens[0], output_tokens=tokens[1], usd=usd)


@pytest.fixture
def summarizer() -> LLMClient:
    inner = LLMClient.mock(
        response=scripted("a short summary", 0.003, (100, 10)), model="summarizer"
    )

    @capability(id="doc.summarize", description="Summarize a text with the model.")
    def summarize(ctx: Context, text: str) -> str:
        response = inner.complete(f"Summarize:\n{text}", ctx=ctx)
        # A capability that also reports its LLM spend on its own envelope marks it
        # as a repeat of the child completion, so it is not counted twice.
        ctx.tracker.book(
            tag="doc.summarize",
            principal=ctx.principal,
            usd=response.usd,
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
            activity=ctx.parent,
            parent_call_id=response.call_id,
            dedupe="child",
        )
        return response.text

    return inner


def test_nested_completion_is_counted_once(store: Store, summarizer: LLMClient) -> None:
    turns = [
        '{"thought":"summarize it","action":"doc.summarize","action_input":{"text":"long text"}}',
        '{"thought":"done","action":"finish","action_input":{},"final_answer":"summarized"}',
    ]
    planner = LLMClient.mock(response=[scripted(t, 0.01, (50, 5)) for t in turns], model="planner")
    result = react.run(
        "Summarize the text.", llm=planner, session=Session(principal="did:local:alice")
    )
    assert result.stopped == "goal_achieved"

    tracker = default_tracker()
    usd, tokens, completions = totals(store)
    assert completions == 3  # two planner turns, one inside the capability
    assert tracker.total_usd() == pytest.approx(0.01 + 0.01 + 0.003)
    assert usd == pytest.approx(tracker.total_usd())
    assert tokens == tracker.total_tokens() == 55 + 55 + 110
    counted = [e for e in tracker.envelopes() if e.counted]
    assert sorted(e.tag for e in counted) == ["llm:planner", "llm:planner", "llm:summarizer"]

    # The capability's completion hangs off the capability's activity, which hangs
    # off the planner's completion: linked, not re-counted.
    chain = store.query(
        f"""SELECT ?inner ?inv ?outer WHERE {{ GRAPH ?g {{
              ?inner a {T.LLMCompletion.n3()} ; {PROV.wasInformedBy.n3()} ?inv .
              ?inv a {T.CapabilityInvocation.n3()} ; {PROV.wasInformedBy.n3()} ?outer .
              ?outer a {T.LLMCompletion.n3()} .
            }} }}"""
    )
    assert isinstance(chain, Solutions) and len(chain) == 1
    inner_activity = chain.rows[0][0]
    assert isinstance(inner_activity, IRI)
    assert summarizer.requests[0].messages[0].content == "Summarize:\nlong text"
    assert_conforms(store)


def test_budget_sees_capability_spend(store: Store, summarizer: LLMClient, ctx: Context) -> None:
    ctx.tracker.set_budget(ctx.principal, usd=0.02)
    planner = LLMClient.mock(
        response=scripted(
            '{"thought":"t","action":"doc.summarize","action_input":{"text":"x"}}', 0.015, (1, 1)
        ),
        model="planner",
    )
    step: Any = ctx.child(step=0)
    planner.complete("plan", ctx=step)  # 0.015
    invoke("doc.summarize", {"text": "x"}, ctx=step)  # +0.003, counted once: 0.018 < 0.02
    assert ctx.tracker.total_usd() == pytest.approx(0.018)
    planner.complete("plan", ctx=step)  # may start: 0.018 < 0.02; now 0.033
    with pytest.raises(BudgetExceeded):
        planner.complete("plan", ctx=step)
    assert totals(store)[0] == pytest.approx(ctx.tracker.total_usd())
