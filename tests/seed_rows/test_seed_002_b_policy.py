"""Seed 002 (the selectools Agent module), rows 002-088 to 002-106: provider fallback,
batches, tool policy and human review, terminal actions, usage, testing and configuration,
each graded as the seed's text describes it.

Rows graded by a test elsewhere carry the marker there (the cache and streaming tests of
``tests/llm/test_seed_cache_stream.py``, the failover paths of ``tests/llm/test_llm_failover.py``
and so on); the rest are here.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from tests.seed_rows._helpers import IRI, act, finish, rows
from tests.seed_rows._seed_002_b import Count, alice, office_tools

from trails.agent.planners import react
from trails.kernel import Context, RulePolicy, default_tracker
from trails.llm import (
    LLMClient,
    ModelAuthenticationError,
    ModelServerError,
    Response,
    ToolCall,
)
from trails.store import Store

# -- provider fallback ---------------------------------------------------------------------------------


def _down(n: int) -> list[Any]:
    return [ModelServerError("primary down", provider="mock", status=503) for _ in range(n)]


@pytest.mark.seed_row("002-088")
def test_the_fallback_chain_tries_providers_in_order(ctx: Context, store: Store) -> None:
    primary = LLMClient.mock(_down(1), model="primary")
    backup = LLMClient.mock(["from backup"], model="backup")
    spare = LLMClient.mock(["never"], model="spare")
    response = LLMClient.fallback([primary, backup, spare]).complete("hi", ctx=ctx)
    assert (response.text, response.model) == ("from backup", "backup")
    assert len(spare.requests) == 0


@pytest.mark.seed_row("002-090")
def test_the_circuit_breaker_skips_a_failing_provider(ctx: Context) -> None:
    primary = LLMClient.mock(_down(4), model="primary")
    backup = LLMClient.mock(["b1", "b2", "b3", "b4"], model="backup")
    chain = LLMClient.fallback([primary, backup], max_failures=2, cooldown_seconds=60)
    answers = [chain.complete(f"q{i}", ctx=ctx).text for i in range(4)]
    assert answers == ["b1", "b2", "b3", "b4"]
    assert len(primary.requests) == 2  # open after two failures: skipped for the cooldown


# -- batches ----------------------------------------------------------------------------------------------


@pytest.mark.seed_row("002-093")
def test_batch_keeps_order_isolates_errors_and_reports_progress(store: Store) -> None:
    progress: list[tuple[int, int]] = []

    def model(messages: Any) -> str:
        return finish("answer to " + messages[-1].content)

    results = react.batch(
        ["Cancel my sub", "", "Payment failed"],
        llm=LLMClient.mock(model),
        max_concurrency=2,
        principal="did:local:alice",
        tools=[],
        on_progress=lambda done, total: progress.append((done, total)),
    )
    first, failed, last = results
    assert not isinstance(first, Exception) and "Cancel my sub" in str(first.answer)
    assert isinstance(failed, Exception)
    assert not isinstance(last, Exception) and "Payment failed" in str(last.answer)
    assert sorted(progress) == [(1, 3), (2, 3), (3, 3)]

    async def both() -> list[Any]:
        return await react.abatch(
            ["One", "Two"],
            llm=LLMClient.mock(response=finish("ok")),
            max_concurrency=10,
            principal="did:local:alice",
            tools=[],
        )

    assert [r.answer for r in asyncio.run(both())] == ["ok", "ok"]


@pytest.mark.seed_row("002-094")
def test_batch_respects_the_response_format(store: Store) -> None:
    results = react.batch(
        ["Count."],
        llm=LLMClient.mock([finish("one"), '{"n": 1}']),
        principal="did:local:alice",
        tools=[],
        output_type=Count,
    )
    assert [r.answer for r in results if not isinstance(r, Exception)] == [Count(n=1)]


# -- tool policy and human review -------------------------------------------------------------------------

POLICY = RulePolicy(
    allow=["search_*"],
    review=["send_*"],
    deny=["delete_*"],
    deny_when=[{"tool": "send_email", "arg": "to", "pattern": "*@external.com"}],
)

DECISIONS = """
SELECT ?cap ?decision ?rule ?outcome ?reviewer WHERE { GRAPH ?g {
  ?d a trails:PolicyDecision ; trails:capabilityId ?cap ; trails:decision ?decision ;
     prov:startedAtTime ?t .
  OPTIONAL { ?d trails:matchedRule ?rule } OPTIONAL { ?d trails:reviewOutcome ?outcome }
} } ORDER BY ?t
"""


@pytest.mark.seed_row("002-095")
def test_a_glob_policy_allows_denies_and_denies_by_argument(store: Store) -> None:
    office = office_tools()
    script = [
        act("search_web", q="q"),
        act("delete_db", name="prod"),
        act("send_email", to="eve@external.com"),
        finish("done"),
    ]
    result = react.run(
        "Tidy.",
        llm=LLMClient.mock(script),
        session=alice(policy=POLICY),
        tools=["search_web", "delete_db", "send_email"],
    )
    assert result.steps[0].observation == "results for q"
    assert all(str(s.observation).startswith("error: policy denied") for s in result.steps[1:3])
    assert office["delete"] == [] and office["send"] == []
    assert [(r["decision"], r["rule"]) for r in rows(store, DECISIONS)] == [
        ("allow", "allow:search_*"),
        ("deny", "deny:delete_*"),
        ("deny", "deny_when:send_email:to=*@external.com"),
    ]


@pytest.mark.seed_row("002-096")
def test_deny_wins_over_review_over_allow_and_unknown_is_reviewed(store: Store) -> None:
    office = office_tools()
    overlapping = RulePolicy(allow=["send_*", "divide"], review=["send_*"], deny=["send_*"])
    script = [act("send_email", to="a@corp.example"), act("search_web", q="q"), finish("done")]
    result = react.run(
        "Mail.",
        llm=LLMClient.mock(script),
        session=alice(policy=overlapping),
        tools=["send_email", "search_web"],
    )
    assert office["send"] == [] and office["search"] == []
    assert [
        (r["cap"], r["decision"], r["rule"], r.get("outcome")) for r in rows(store, DECISIONS)
    ] == [
        ("send_email", "deny", "deny:send_*", None),
        ("search_web", "deny", "unknown", "no_approver"),  # unknown -> review -> no approver
    ]
    assert "no rule names search_web" in str(result.steps[1].observation)


@pytest.mark.seed_row("002-097")
def test_the_approver_decides_a_reviewed_call(store: Store) -> None:
    office = office_tools()
    asked: list[tuple[str, dict[str, Any], str]] = []

    async def confirm(tool: Any, tool_args: dict[str, Any], reason: str) -> bool:
        asked.append((tool.id, dict(tool_args), reason))
        return bool(tool_args["to"].endswith("@corp.example"))

    script = [
        act("send_email", to="cfo@corp.example"),
        act("send_email", to="eve@else.example"),
        finish("ok"),
    ]
    result = react.run(
        "Mail.",
        llm=LLMClient.mock(script),
        session=alice(policy=POLICY),
        tools=["send_email"],
        approver=confirm,
    )
    assert office["send"] == ["cfo@corp.example"]
    assert result.steps[0].observation == "sent to cfo@corp.example"
    assert str(result.steps[1].observation).startswith("error: policy denied")
    assert asked[0] == (
        "send_email",
        {"to": "cfo@corp.example"},
        "send_email matches review rule 'send_*'",
    )
    assert [r["outcome"] for r in rows(store, DECISIONS)] == ["approved", "refused"]


@pytest.mark.seed_row("002-098")
def test_an_approver_that_does_not_answer_in_time_is_a_deny(store: Store) -> None:
    office = office_tools()
    release = threading.Event()

    def slow(tool: Any, tool_args: dict[str, Any], reason: str) -> bool:
        release.wait(30)
        return True

    script = [act("send_email", to="cfo@corp.example"), finish("ok")]
    try:
        result = react.run(
            "Mail.",
            llm=LLMClient.mock(script),
            session=alice(policy=POLICY),
            tools=["send_email"],
            approver=slow,
            approval_timeout_s=0.05,
        )
    finally:
        release.set()
    assert office["send"] == [] and "timed out" in str(result.steps[0].observation)
    assert [r["outcome"] for r in rows(store, DECISIONS)] == ["timed_out"]


@pytest.mark.seed_row("002-099")
def test_review_without_an_approver_is_a_deny_shown_to_the_model(store: Store) -> None:
    office = office_tools()
    client = LLMClient.mock([act("send_email", to="cfo@corp.example"), finish("could not send")])
    result = react.run("Mail.", llm=client, session=alice(policy=POLICY), tools=["send_email"])
    assert office["send"] == []
    assert "error: policy denied 'send_email'" in client.requests[1].messages[-1].content
    assert result.answer == "could not send"
    assert [r["outcome"] for r in rows(store, DECISIONS)] == ["no_approver"]


@pytest.mark.seed_row("002-100")
def test_a_denied_call_never_runs_and_the_model_is_told(store: Store) -> None:
    office = office_tools()
    client = LLMClient.mock([act("delete_db", name="prod"), finish("not allowed")])
    react.run("Drop it.", llm=client, session=alice(policy=POLICY), tools=["delete_db"])
    assert office["delete"] == []
    assert "error: policy denied 'delete_db'" in client.requests[1].messages[-1].content
    ran = rows(
        store,
        "SELECT ?inv WHERE { GRAPH ?g { ?inv a trails:CapabilityInvocation ; trails:status 'ok' } }",
    )
    assert ran == []


# -- terminal actions ---------------------------------------------------------------------------------------


@pytest.mark.seed_row("002-101")
def test_a_terminal_tool_ends_the_run_with_its_result(store: Store) -> None:
    office_tools()
    client = LLMClient.mock([act("present_question", question_id=7), finish("never asked")])
    result = react.run("Quiz me.", llm=client, session=alice(), tools=["present_question"])
    assert result.answer == json.dumps({"action": "present_question", "id": 7})
    assert result.terminated_by == "present_question" and len(client.requests) == 1
    ended = rows(
        store,
        "SELECT ?run ?call ?t WHERE { GRAPH ?g { ?run prov:wasEndedBy ?t . ?t a trails:TerminalAction ; "
        "prov:wasGeneratedBy ?call } }",
        run=IRI(str(result.activity_iri)),
        call=IRI(str(result.terminated_by_call)),
    )
    assert len(ended) == 1


@pytest.mark.seed_row("002-103")
def test_terminal_tools_end_arun_astream_and_parallel_calls(store: Store) -> None:
    office_tools()

    def client() -> LLMClient:
        return LLMClient.mock([act("present_question", question_id=1), finish("never")])

    async def both() -> tuple[Any, Any]:
        ran = await react.arun("Quiz.", llm=client(), session=alice(), tools=["present_question"])
        streamed = [
            e
            async for e in react.astream(
                "Quiz.", llm=client(), session=alice(), tools=["present_question"]
            )
        ]
        return ran, streamed[-1].data["result"]

    ran, streamed = asyncio.run(both())
    native = LLMClient.mock(
        [
            [
                ToolCall("c1", "search_web", {"q": "x"}),
                ToolCall("c2", "present_question", {"question_id": 2}),
            ],
            "never",
        ]
    )
    parallel = react.run(
        "Quiz.",
        llm=native,
        session=alice(),
        tools=["search_web", "present_question"],
        tool_calling="native",
    )
    assert [r.terminated_by for r in (ran, streamed, parallel)] == ["present_question"] * 3
    assert len(native.requests) == 1 and json.loads(parallel.answer)["id"] == 2


# -- usage, testing, configuration ----------------------------------------------------------------------------


def test_usage_totals_come_from_the_tracker_and_the_graph(store: Store) -> None:
    tracker = default_tracker()
    tracker.reset()
    priced = Response(text=finish("ok"), model="", input_tokens=10, output_tokens=5, usd=0.25)
    session = alice()
    react.run("Go.", llm=LLMClient.mock([priced]), session=session, tools=[])
    assert tracker.total_usd() == pytest.approx(0.25) and tracker.total_tokens() == 15
    (spent,) = rows(
        store,
        "SELECT ?s (SUM(?u) AS ?usd) WHERE { GRAPH ?s { ?c trails:costUSD ?u } } GROUP BY ?s",
        s=IRI(str(session.iri)),
    )
    assert float(spent["usd"]) == pytest.approx(0.25)
    tracker.reset()  # reset_usage()
    assert tracker.total_usd() == 0.0 and tracker.total_tokens() == 0


@pytest.mark.seed_row("002-105")
def test_the_mock_client_is_the_local_provider(store: Store) -> None:
    client = LLMClient.mock([finish("tested")])
    result = react.run("test", llm=client, session=alice(), tools=[], max_steps=2)
    assert result.answer == "tested" and client.provider == "mock"
    assert len(client.requests) == 1 and client.requests[0].messages[-1].content.endswith("test")


def test_a_missing_api_key_is_a_clear_recorded_error_at_the_first_call(
    ctx: Context, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    client = LLMClient.anthropic(
        "claude-haiku", base_url="http://127.0.0.1:9"
    )  # made without a key
    with pytest.raises(ModelAuthenticationError, match="ANTHROPIC_API_KEY"):
        client.complete("hi", ctx=ctx)
    failed = rows(
        store, "SELECT ?s WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; trails:status ?s } }"
    )
    assert [r["s"] for r in failed] == ["error"]
