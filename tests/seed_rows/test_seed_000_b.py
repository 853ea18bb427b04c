"""Seed 000 (the trails agent runtime guide), rows 000-031 to 000-057: budgets, sessions,
cost and provenance, error handling and the reference tables, each graded as the seed's
text describes it."""

from __future__ import annotations

import dataclasses
import inspect
import json
import socket
import typing
from typing import Any

import pytest
from tests.seed_rows._helpers import IRI, act, finish, rows
from tests.seed_rows._seed_000 import (
    Clock,
    alice,
    done,
    fenced,
    of_type,
    plan,
    priced,
    register_notes,
    routed,
    run_row,
    step,
    verdict,
)

from trails.agent import PlanResult, PlanStep, Session, StopReason, TokenWindow
from trails.agent.loop import run as run_loop
from trails.agent.planners import plan_and_execute, react, reflexion
from trails.kernel import Context, CostTracker, capability, default_tracker
from trails.kernel.context import InvocationRecord
from trails.llm import (
    LLMClient,
    Message,
    ModelConnectionError,
    ModelServerError,
    Response,
    _module_tracker,
)
from trails.llm.anthropic import to_anthropic
from trails.prov.vocab import T
from trails.store import Store


@pytest.fixture
def notes() -> dict[str, list[Any]]:
    """The seed's ``notes.*`` capabilities, registered for this test only."""
    return register_notes()


# -- budgets (000-031 .. 000-039) -------------------------------------------------------


@pytest.mark.seed_row("000-031")
def test_max_cost_stops_the_run(store: Store, notes: Any) -> None:
    client = LLMClient.mock(response=lambda _m: priced(act("notes.search", tag="urgent"), usd=0.15))
    result = react.run("Go.", llm=client, session=alice(), max_cost_usd=0.25)
    assert (result.stopped, len(result.steps), client.adapter.calls) == ("max_cost", 2, 2)
    assert _module_tracker().total_usd() == pytest.approx(0.3)
    [breach] = rows(
        store,
        """SELECT ?run ?reason ?limit ?observed WHERE { GRAPH ?g { ?run trails:wasTerminatedBy ?t .
             ?t a trails:BudgetBreach ; trails:reason ?reason ; trails:limit ?limit ;
                trails:observed ?observed } }""",
        run=IRI(str(result.activity_iri)),
    )
    assert (breach["reason"], breach["limit"]) == ("max_cost", 0.25)
    assert breach["observed"] == pytest.approx(0.3)


@pytest.mark.seed_row("000-032")
def test_max_tokens_counts_prompt_and_completion(store: Store, notes: Any) -> None:
    turn = Response(
        text=act("notes.search", tag="a"), model="mock", input_tokens=600, output_tokens=400
    )
    client = LLMClient.mock(response=lambda _m: turn)
    result = react.run("Go.", llm=client, session=alice(), max_tokens=2000)
    assert (result.stopped, client.adapter.calls) == ("max_tokens", 2)  # 1000 + 1000 >= 2000
    assert _module_tracker().total_tokens() == 2000
    assert run_row(store, result.activity_iri)["term"] == T.BudgetBreach


@pytest.mark.seed_row("000-033")
def test_max_wall_time_is_measured_from_run_entry(
    store: Store, notes: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(run_loop, "monotonic", clock)

    def slow(_messages: Any) -> str:
        clock.now += 0.6
        return act("notes.search", tag="a")

    client = LLMClient.mock(response=slow)
    result = react.run("Go.", llm=client, session=alice(), max_wall_time_s=1.0)
    assert (result.stopped, client.adapter.calls, len(result.steps)) == ("max_wall_time", 2, 2)
    recorded = run_row(store, result.activity_iri)
    assert (recorded["stop"], recorded["term"]) == ("max_wall_time", T.BudgetBreach)


@pytest.mark.seed_row("000-034")
def test_budgets_count_capability_internal_llm_calls(store: Store) -> None:
    assert _module_tracker() is default_tracker()

    @capability(id="notes.summarize", description="Summarize a note.")
    def summarize(ctx: Any, text: str) -> str:
        return str(ctx.llm.complete(f"Summarize:\n{text}").text)

    client = LLMClient.mock(
        response=[
            act("notes.summarize", text="n1"),
            priced("n1, in short", usd=0.3),  # the handler's own completion
            finish("never asked"),
        ]
    )
    session = alice()
    result = react.run("Summarize.", llm=client, session=session, max_cost_usd=0.25)
    assert (result.stopped, result.answer, client.adapter.calls) == ("max_cost", "n1, in short", 2)
    inner = rows(
        store,
        """SELECT ?g ?c ?usd WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; trails:costUSD ?usd ;
             prov:wasInformedBy ?inv . ?inv a trails:CapabilityInvocation } }""",
        g=IRI(str(session.iri)),
    )
    assert [row["usd"] for row in inner] == [pytest.approx(0.3)]


@pytest.mark.seed_row("000-035")
def test_child_rows_are_not_counted_twice() -> None:
    tracker = CostTracker()
    leaf = tracker.book(tag="llm:mock", principal="p", usd=0.5, input_tokens=10, output_tokens=5)
    tracker.book(
        tag="notes.summarize",
        principal="p",
        usd=0.5,
        input_tokens=10,
        output_tokens=5,
        parent_call_id=leaf.call_id,
        dedupe="child",
    )
    assert (tracker.total_usd(), tracker.total_tokens()) == (0.5, 15)
    assert len(tracker.envelopes()) == 2


@pytest.mark.seed_row("000-036")
def test_plan_and_execute_checks_budgets_per_step_and_before_a_replan(
    store: Store, notes: Any
) -> None:
    costly = LLMClient.mock(
        response=priced(plan(step("notes.search", tag="a"), done("x")), usd=0.3)
    )
    result = plan_and_execute.run("Go.", llm=costly, session=alice(), max_cost_usd=0.25)
    assert (result.stopped, result.steps, notes["search"]) == ("max_cost", [], [])
    assert run_row(store, result.activity_iri)["term"] == T.BudgetBreach

    @capability(id="notes.spend", description="Spend, then fail.")
    def spend(ctx: Any) -> str:
        ctx.llm.complete("think")
        raise ValueError("spent and failed")

    replan = LLMClient.mock(
        response=[
            priced(plan(step("notes.spend"), done("x")), usd=0.1),
            priced("thought", usd=0.2),
            plan(done("never")),
        ]
    )
    stopped = plan_and_execute.run("Go.", llm=replan, session=alice(), max_cost_usd=0.25)
    assert (stopped.stopped, replan.adapter.calls) == ("max_cost", 2)  # no replan was paid for
    assert [s.action for s in stopped.steps] == ["notes.spend"]


@pytest.mark.seed_row("000-037")
def test_reflexion_checks_each_outer_iteration_and_threads_wall_time(
    store: Store, notes: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = LLMClient.mock(
        response=routed(
            priced(fenced(json.loads(finish("first"))), usd=0.1),
            priced(verdict("retry", "again"), usd=0.2),
        )
    )
    outer = reflexion.run("Go.", llm=client, session=alice(), max_cost_usd=0.25)
    assert (outer.stopped, outer.answer, client.adapter.calls) == ("max_cost", "first", 2)

    clock = Clock()
    monkeypatch.setattr(run_loop, "monotonic", clock)

    def agent(_messages: Any) -> str:
        clock.now += 1.0  # every agent turn takes a second
        return act("notes.search", tag="a")

    slow = LLMClient.mock(response=agent)
    session = alice()
    result = reflexion.run("Go.", llm=slow, session=session, max_steps=10, max_wall_time_s=2.5)
    assert (result.stopped, slow.adapter.calls) == ("max_wall_time", 3)  # mid-iteration
    [inner] = of_type(store, session.iri, T.ReActPlan)
    assert run_row(store, inner)["stop"] == "max_wall_time"


@pytest.mark.seed_row("000-038")
def test_the_result_of_an_abort(store: Store, notes: Any) -> None:
    client = LLMClient.mock(response=lambda _m: priced(act("notes.search", tag="a"), usd=0.2))
    result = react.run("Go.", llm=client, session=alice(), max_cost_usd=0.3)
    assert result.stopped == "max_cost" and result.error is None
    assert [s.observation for s in result.steps] == [{"hits": ["n1", "n2"]}] * 2
    assert result.answer == json.dumps({"hits": ["n1", "n2"]}, default=str)
    assert "warning" not in {f.name for f in dataclasses.fields(PlanResult)}
    assert run_row(store, result.activity_iri)["answer"] == result.answer
    inner = routed(priced(finish("the inner answer"), usd=0.2), verdict("retry", "more"))
    reflected = reflexion.run(
        "Go.", llm=LLMClient.mock(response=inner), session=alice(), max_cost_usd=0.1
    )
    assert (reflected.stopped, reflected.error) == ("max_cost", None)
    assert reflected.answer == "the inner answer"  # Reflexion: the inner run's answer unchanged


@pytest.mark.seed_row("000-039")
def test_the_best_so_far_recipe(store: Store, notes: Any) -> None:
    goal, s = "Find urgent notes.", alice()
    c = LLMClient.mock(response=lambda _m: priced(act("notes.search", tag="urgent"), usd=0.1))
    result = react.run(
        goal,
        llm=c,
        session=s,
        max_cost_usd=0.25,
        max_wall_time_s=30.0,
    )

    if result.stopped == "goal_achieved":
        final = result.answer
    elif result.stopped in {"max_cost", "max_tokens", "max_wall_time"}:
        best = None
        for taken in reversed(result.steps):
            obs = taken.observation
            if obs is None or (isinstance(obs, str) and obs.startswith("error:")):
                continue
            best = obs
            break
        final = best if best is not None else result.answer
    else:
        raise RuntimeError(result.error)
    assert result.stopped == "max_cost"
    assert final == {"hits": ["n1", "n2"]}


# -- sessions, context, cost and provenance (000-040 .. 000-045, 000-057) ----------------


@pytest.mark.seed_row("000-040")
def test_the_session_holds_the_conversation_and_the_envelopes(store: Store, notes: Any) -> None:
    session = alice()
    client = LLMClient.mock(response=[act("notes.search", tag="urgent"), finish("ok")])
    react.run("Find urgent notes.", llm=client, session=session)
    assert [e.role for e in session.history] == ["system", "user", "assistant", "user", "assistant"]
    assert session.history[0].pinned and "notes.search" in session.history[0].content
    assert session.history[3].content == 'Observation: {"hits": ["n1", "n2"]}'
    [record] = session.invocations
    assert isinstance(record, InvocationRecord)
    assert (record.capability, record.args, record.status) == (
        "notes.search",
        {"tag": "urgent"},
        "ok",
    )
    assert of_type(store, session.iri, T.CapabilityInvocation) == [record.activity]


@pytest.mark.seed_row("000-041")
def test_reusing_a_session_continues_the_conversation(store: Store) -> None:
    session = alice()
    client = LLMClient.mock(response=[finish("first"), finish("second")])
    react.run("Remember the word lantern.", llm=client, session=session)
    react.run("Which word?", llm=client, session=session)
    second = "\n".join(m.content for m in client.adapter.requests[1].messages)
    assert "Remember the word lantern." in second and "first" in second
    assert len(of_type(store, session.iri, T.ReActPlan)) == 2


@pytest.mark.seed_row("000-042")
def test_with_ctx_each_call_is_billed_and_linked_to_the_plan(
    store: Store, ctx: Context, notes: Any
) -> None:
    client = LLMClient.mock(response=[act("notes.search", tag="urgent"), finish("ok")])
    result = react.run("Go.", llm=client, session=alice(), ctx=ctx)
    assert {e.tag for e in ctx.tracker.envelopes()} == {"llm:mock", "notes.search"}
    assert len(ctx.tracker.envelopes(principal=ctx.principal, tag="llm:mock")) == 2
    linked = rows(
        store,
        """SELECT ?g ?run ?c WHERE { GRAPH ?g { ?run a trails:ReActPlan .
             ?c a trails:LLMCompletion ; prov:wasInformedBy ?run } }""",
        g=IRI(str(ctx.session)),
        run=IRI(str(result.activity_iri)),
    )
    assert len(linked) == 2
    billed = {e.activity for e in ctx.tracker.envelopes(tag="llm:mock")}
    assert billed == {row["c"] for row in linked}


@pytest.mark.seed_row("000-043")
def test_the_plan_root_carries_goal_principal_and_session(store: Store) -> None:
    session = alice()
    result = react.run(
        "Find urgent notes.", llm=LLMClient.mock(response=finish("ok")), session=session
    )
    [root] = rows(
        store,
        """SELECT ?run ?goal ?principal ?session WHERE { GRAPH ?g { ?run a trails:ReActPlan ;
             trails:inSession ?session ; prov:wasAssociatedWith ?agent .
             ?agent trails:principalId ?principal . GRAPH ?c { ?run trails:goal ?goal } } }""",
        run=IRI(str(result.activity_iri)),
    )
    assert (root["goal"], root["principal"]) == ("Find urgent notes.", "did:local:alice")
    assert root["session"] == session.iri


@pytest.mark.seed_row("000-044")
def test_every_invoke_is_an_activity_and_a_cost_envelope(
    store: Store, ctx: Context, notes: Any
) -> None:
    client = LLMClient.mock(
        response=[priced(act("notes.search", tag="urgent"), usd=0.1), priced(finish("ok"), usd=0.1)]
    )
    react.run("Go.", llm=client, session=alice(), ctx=ctx)
    invocations = of_type(store, ctx.session, T.CapabilityInvocation)
    assert len(invocations) == 1  # its own prov:Activity
    envelopes = ctx.tracker.envelopes()
    assert [e.tag for e in envelopes] == ["llm:mock", "notes.search", "llm:mock"]
    invoked = envelopes[1]  # its own envelope: it spent nothing itself, counted (0)
    assert (invoked.activity, invoked.usd, invoked.counted) == (invocations[0], 0.0, True)
    assert ctx.tracker.total_usd() == pytest.approx(0.2)
    costs = rows(
        store,
        """SELECT ?g ?inv ?usd WHERE { GRAPH ?g { ?inv prov:wasInformedBy ?c .
             ?c a trails:LLMCompletion ; trails:costUSD ?usd } }""",
        g=IRI(str(ctx.session)),
        inv=IRI(invocations[0]),
    )
    assert [row["usd"] for row in costs] == [pytest.approx(0.1)]  # the spend that chose it


@pytest.mark.seed_row("000-045")
def test_a_nested_llm_call_is_counted_once(store: Store) -> None:
    @capability(id="notes.summarize", description="Summarize a note.")
    def summarize(ctx: Any, text: str) -> str:
        return str(ctx.llm.complete(f"Summarize:\n{text}").text)

    client = LLMClient.mock(
        response=[
            priced(act("notes.summarize", text="n1"), usd=0.1),
            priced("n1, in short", usd=0.2),
            priced(finish("n1, in short"), usd=0.1),
        ]
    )
    session = alice()
    react.run("Summarize.", llm=client, session=session)
    assert _module_tracker().total_usd() == pytest.approx(0.4)
    [own] = _module_tracker().envelopes(tag="notes.summarize")  # what the call cost: 0.2,
    assert (own.usd, own.counted) == (pytest.approx(0.2), False)  # counted on its completion
    [total] = rows(
        store,
        """SELECT ?g (SUM(?usd) AS ?sum) WHERE { GRAPH ?g { ?c a trails:LLMCompletion ;
             trails:costUSD ?usd } } GROUP BY ?g""",
        g=IRI(str(session.iri)),
    )
    assert total["sum"] == pytest.approx(0.4)


@pytest.mark.seed_row("000-057")
def test_without_ctx_the_loop_runs_and_still_records(store: Store, notes: Any) -> None:
    session = alice()
    client = LLMClient.mock(response=[act("notes.search", tag="urgent"), finish("ok")])
    result = react.run("Go.", llm=client, session=session)
    assert (result.stopped, result.answer) == ("goal_achieved", "ok")
    completions = rows(
        store,
        """SELECT ?g ?run ?c WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; prov:wasInformedBy ?run } }""",
        g=IRI(str(session.iri)),
        run=IRI(str(result.activity_iri)),
    )
    assert len(completions) == 2


# -- error handling (000-046 .. 000-048) ------------------------------------------------


@pytest.mark.seed_row("000-046")
def test_a_malformed_reply_gets_one_nudge(store: Store) -> None:
    for bad in ("[1, 2]", '{"thought": "no action"}', '{"garbage": ', "It is 4."):
        nudged = LLMClient.mock(response=[bad, finish("ok")])
        assert react.run("Go.", llm=nudged, session=alice()).stopped == "goal_achieved"
        nudge = nudged.adapter.requests[1].messages[-1]
        assert nudge.role == "user" and nudge.content.startswith(
            "Your last reply could not be used"
        )
        twice = LLMClient.mock(response=[bad, bad])
        result = react.run("Go.", llm=twice, session=alice())
        assert result.stopped == "error" and result.error is not None
        assert result.error.startswith("malformed reply after a retry: ")
        assert run_row(store, result.activity_iri)["term"] == T.Error
    # prose is no block of JSON: malformed, never the answer
    prose = react.run("Go.", llm=LLMClient.mock(response=["It is 4.", "4."]), session=alice())
    assert (prose.stopped, prose.answer) == ("error", None)
    assert prose.error == "malformed reply after a retry: no JSON object found in the reply"


@pytest.mark.seed_row("000-047")
def test_max_steps_counts_the_retry(store: Store) -> None:
    client = LLMClient.mock(response=["[1]", finish("ok")])
    result = react.run("Go.", llm=client, session=alice(), max_steps=1)
    assert (result.stopped, client.adapter.calls) == ("max_steps", 1)
    assert run_row(store, result.activity_iri)["term"] == T.StepLimit
    again = LLMClient.mock(response=["[1]", finish("ok")])
    assert react.run("Go.", llm=again, session=alice(), max_steps=2).stopped == "goal_achieved"


@pytest.mark.seed_row("000-048")
def test_a_provider_error_stops_the_run_with_its_message(store: Store) -> None:
    client = LLMClient.mock(
        response=[ModelServerError("provider down", provider="mock", status=503)]
    )
    session = alice()
    result = react.run("Go.", llm=client, session=session)
    assert (result.stopped, result.error) == ("error", "provider down")
    failed = rows(
        store,
        "SELECT ?g ?status WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; trails:status ?status } }",
        g=IRI(str(session.iri)),
    )
    assert [row["status"] for row in failed] == ["error"]
    assert run_row(store, result.activity_iri)["term"] == T.Error


# -- reference (000-050 .. 000-056) -----------------------------------------------------


@pytest.mark.seed_row("000-050")
def test_the_session_signature() -> None:
    params = inspect.signature(Session).parameters
    assert params["principal"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["principal"].default is inspect.Parameter.empty
    defaults = {name: params[name].default for name in ("max_tokens", "pin_head", "auth", "card")}
    assert defaults == {"max_tokens": 32_000, "pin_head": 1, "auth": None, "card": None}
    session = Session(principal="did:local:alice", max_tokens=500, pin_head=2, card={"name": "a"})
    assert (session.history.max_tokens, session.history.pin_head, session.card) == (
        500,
        2,
        {"name": "a"},
    )


@pytest.mark.seed_row("000-051")
def test_the_token_window_evicts_oldest_first_behind_a_pinned_head() -> None:
    params = inspect.signature(TokenWindow).parameters
    assert (params["max_tokens"].default, params["pin_head"].default) == (32_000, 1)
    window = TokenWindow(max_tokens=10, pin_head=1)
    window.append("system", "frame", tokens=4)
    for n in range(1, 5):
        window.append("user", f"m{n}", tokens=3)
    assert [(e.role, e.content) for e in window] == [
        ("system", "frame"),
        ("user", "m3"),
        ("user", "m4"),
    ]
    assert window.total_tokens == 10 and window[0].pinned


@pytest.mark.seed_row("000-052")
def test_plan_result_and_plan_step_shapes() -> None:
    result_fields = {f.name: f for f in dataclasses.fields(PlanResult)}
    assert list(result_fields)[:5] == ["answer", "steps", "stopped", "error", "strategy"]
    assert (result_fields["error"].default, result_fields["strategy"].default) == (None, "react")
    step_fields = {f.name: f for f in dataclasses.fields(PlanStep)}
    assert list(step_fields)[:5] == [
        "thought",
        "action",
        "action_input",
        "observation",
        "activity_iri",
    ]
    made = PlanStep("t", "finish")
    assert (made.action_input, made.observation, made.activity_iri) == ({}, None, None)
    assert PlanResult("a", [made], "goal_achieved").strategy == "react"


@pytest.mark.seed_row("000-053")
def test_stop_reasons(store: Store) -> None:
    seed = ("goal_achieved", "max_steps", "max_cost", "max_tokens", "max_wall_time", "error")
    assert typing.get_args(StopReason) == seed
    result = react.run(
        "Go.", llm=LLMClient.mock(response=finish("ok")), session=alice(), max_steps=1
    )
    assert run_row(store, result.activity_iri)["stop"] == result.stopped == "goal_achieved"


@pytest.mark.seed_row("000-054")
def test_discover_build_and_parse(store: Store, notes: Any) -> None:
    specs = react.discover_tools(["notes.search"])
    assert [cid for cid, _ in specs] == ["notes.search"]
    prompt = react.build_system_prompt("Find urgent notes.", specs)
    assert "Find urgent notes." in prompt and "- notes.search: Search notes by tag." in prompt
    assert '"action"' in prompt and "finish" in prompt  # the format contract
    reply = 'Sure, here goes:\n{"thought": "x", "action": "finish", "action_input": {}, "final_answer": "y"}\nBye.'
    assert react.parse_step(reply) == {
        "thought": "x",
        "action": "finish",
        "action_input": {},
        "final_answer": "y",
    }


@pytest.mark.seed_row("000-055")
def test_every_constructor_gives_the_same_client(store: Store) -> None:
    with socket.socket() as probe:  # a loopback port nobody serves
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    clients = [
        LLMClient.mock(response="finish"),
        LLMClient.anthropic(
            model="claude-sonnet-4-5", api_key="k", base_url=f"http://127.0.0.1:{port}"
        ),
        LLMClient.ollama(model="qwen3:8b", host=f"http://127.0.0.1:{port}"),
    ]
    for client in clients:
        assert type(client) is LLMClient
        assert all(callable(getattr(client, name)) for name in ("complete", "acomplete", "stream"))
    session = alice()
    with pytest.raises(ModelConnectionError):
        react.run("Find urgent notes.", llm=clients[2], session=session)
    [plan_run] = of_type(store, session.iri, T.ReActPlan)
    assert run_row(store, plan_run)["stop"] == "error"  # recorded before it was raised


@pytest.mark.seed_row("000-056")
def test_memory_learn_and_recall_through_invoke(store: Store) -> None:
    import trails

    session = Session(principal="did:web:alice.example")
    trails.invoke(
        "memory.learn",
        {
            "content": "The SPARQL proxy rejects SERVICE queries",
            "confidence": 0.99,
            "topic": "security",
            "agent_did": session.auth.did,
            "scope": "shared",
        },
    )
    hits = trails.invoke("memory.recall", {"context": "SPARQL security", "scope": "shared"})
    assert [hit.content for hit in hits] == ["The SPARQL proxy rejects SERVICE queries"]
    memories = rows(store, "SELECT ?m WHERE { GRAPH ?g { ?m a trails:Memory } }")
    assert len(memories) == 1


@pytest.mark.seed_row("000-049")
def test_prompt_cache_usage_is_recorded_on_the_completion(store: Store) -> None:
    frame = "You are terse. " * 50
    anthropic = LLMClient.anthropic(model="claude-sonnet-4-5", cache=True, api_key="k")
    marked = (Message("system", frame, cache=True), Message("user", "q"))
    system, _chat = to_anthropic(marked, cache=anthropic.adapter.cache)
    assert system[-1]["cache_control"] == {"type": "ephemeral"}  # on the system block
    cached = Response(
        text=finish("ok"),
        model="mock",
        input_tokens=20,
        output_tokens=5,
        cache_read_tokens=900,
        cache_write_tokens=50,
    )
    session = alice()
    client = LLMClient.mock(response=[cached])
    reply = client.complete(list(marked), ctx=session.context)
    assert (reply.cache_read_tokens, reply.cache_write_tokens) == (900, 50)
    [usage] = rows(
        store,
        """SELECT ?g ?read ?write WHERE { GRAPH ?g { ?c a trails:LLMCompletion ;
             trails:cacheReadTokens ?read ; trails:cacheWriteTokens ?write } }""",
        g=IRI(str(session.iri)),
    )
    assert (usage["read"], usage["write"]) == (900, 50)
