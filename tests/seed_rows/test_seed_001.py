"""Seed 001 (ADR-0018: the agent runtime's planners, LLM client and session), rows 001-021.

Each test grades one row of ``tests/seed_rows/rows.json`` as the ADR's text describes it,
runs the feature with scripted models and a real store, and reads the evidence back with
SPARQL (bound parameters). Rows 022-037 (the session, the open questions) are in
``test_seed_001_b.py``.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.seed_rows._helpers import act, finish, rows
from tests.seed_rows._seed_001 import (
    ALICE,
    SAME_PLACE,
    TURNS_AND_ACTIONS,
    ModelServer,
    priced,
    register_notes,
)

from trails.agent import Session
from trails.agent.planners import plan_and_execute, react, reflexion
from trails.errors import BudgetExceeded, UserError
from trails.kernel import Context, capability, default_tracker
from trails.llm import (
    Chunk,
    LLMClient,
    ModelServerError,
    ModelSpec,
    Request,
    Response,
    RetryPolicy,
    select_model,
)
from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Store


@pytest.fixture
def notes() -> list[str]:
    """``notes.search`` and ``notes.send`` registered; the calls they got."""
    return register_notes()


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


# -- surface ----------------------------------------------------------------------------


@pytest.mark.seed_row("001-001")
def test_agent_and_llm_are_imported_on_use_not_on_import_trails(tmp_path: Path) -> None:
    code = (
        "import sys, trails\n"
        "print('trails.agent' in sys.modules, 'trails.llm' in sys.modules)\n"
        "from trails import Session\n"
        "print('trails.agent' in sys.modules, Session.__module__)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "TRAILS_STORE": "memory:", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["False False", "True trails.agent.context"]


@pytest.mark.seed_row("001-002")
def test_capability_and_session_come_from_trails(store: Store) -> None:
    from trails import Session as TopSession
    from trails import capability as top_capability

    assert TopSession is Session

    @top_capability(id="evidence.count", description="Count documents.")
    def count(ctx: Any) -> int:
        return 3

    session = TopSession(principal=ALICE, store=store)
    llm = LLMClient.mock([act("evidence.count"), finish("3 documents")])
    assert session.run("Count.", llm=llm).answer == "3 documents"
    assert [i.capability for i in session.invocations] == ["evidence.count"]


@pytest.mark.seed_row("001-003", differs=SAME_PLACE)
def test_a_planner_is_a_module_with_run_taking_the_goal_and_keywords(
    store: Store, notes: list[str]
) -> None:
    assert not callable(react)  # the ADR's react(ctx, capabilities, goal): react.run(goal, ...)
    ctx = Context.open(ALICE)
    result = react.run(
        "Find urgent notes.",
        llm=LLMClient.mock([act("notes.search", tag="urgent"), finish("n1, n2")]),
        session=Session(principal=ALICE, store=store),
        ctx=ctx,
        tools=["notes.search"],
        max_steps=3,
    )
    assert (result.stopped, result.answer, notes) == ("goal_achieved", "n1, n2", ["search urgent"])
    assert result.activity_iri is not None
    found = rows(
        store,
        "SELECT ?run ?session WHERE { GRAPH ?g { ?run trails:inSession ?session } }",
        run=result.activity_iri,
    )
    assert [str(r["session"]) for r in found] == [
        str(ctx.session)
    ]  # ctx= names where the run is recorded


# -- planners ---------------------------------------------------------------------------


def plan(*steps: dict[str, Any]) -> str:
    return "```json\n" + json.dumps({"plan": list(steps)}) + "\n```"


def count_of(store: Store, cls: str, run: str | None) -> int:
    """How many entities of ``trails:<cls>`` completions of ``run`` generated."""
    query = (
        "SELECT ?cls ?run (COUNT(?e) AS ?n) WHERE { GRAPH ?g { ?e a ?cls ; prov:wasGeneratedBy ?c . "
        "?c prov:wasInformedBy ?run } } GROUP BY ?cls ?run"
    )
    cls_iri = IRI(NAMESPACES["trails"] + cls)
    return int(rows(store, query, cls=cls_iri, run=run)[0]["n"])


@pytest.mark.seed_row("001-004")
def test_plan_and_execute_replans_on_error_and_after_completed_steps(
    store: Store, notes: list[str]
) -> None:
    assert inspect.signature(plan_and_execute.run).parameters["replan_after"].default is None
    search = {"action": "notes.search", "action_input": {"tag": "urgent"}}
    llm = LLMClient.mock(
        [
            plan(search, {"action": "finish", "action_input": {}, "final_answer": "guessed"}),
            plan({"action": "finish", "action_input": {}, "final_answer": "n1 and n2"}),
        ]
    )
    session = Session(principal=ALICE, store=store)
    done = plan_and_execute.run("Find urgent notes.", llm=llm, session=session, replan_after=1)
    assert (done.answer, notes) == ("n1 and n2", ["search urgent"])  # revised after the step
    assert done.activity_iri is not None and count_of(store, "PlanDocument", done.activity_iri) == 2

    broken = {"action": "notes.search", "action_input": {}}  # missing tag: the step fails
    llm = LLMClient.mock(
        [
            plan(broken, {"action": "finish", "action_input": {}, "final_answer": "unused"}),
            plan({"action": "finish", "action_input": {}, "final_answer": "fixed"}),
        ]
    )
    again = plan_and_execute.run("Find notes.", llm=llm, session=session)
    assert again.answer == "fixed"  # the failure was shown to the model, which replanned
    assert "error" in llm.requests[1].messages[-1].content and notes == ["search urgent"]
    assert (
        again.activity_iri is not None and count_of(store, "PlanDocument", again.activity_iri) == 2
    )


@pytest.mark.seed_row("001-005")
def test_reflexion_critiques_every_n_cycles(store: Store, notes: list[str]) -> None:
    def route(messages: Any) -> str:
        if "Reflexion critic" in messages[0].content:
            return '{"verdict": "accept", "critique": ""}'
        return act("notes.search", tag="urgent")  # never finishes by itself

    result = reflexion.run(
        "Find urgent notes.",
        llm=LLMClient.mock(response=route),
        session=Session(principal=ALICE, store=store),
        critique_every=2,
    )
    assert (result.stopped, len(result.steps)) == ("goal_achieved", 2)  # judged after 2 cycles
    assert result.activity_iri is not None and count_of(store, "Critique", result.activity_iri) == 1


STRATEGY_OF_RUN = """
SELECT ?run ?cls ?strategy WHERE { GRAPH ?g { ?run a ?cls ; trails:strategy ?strategy } }
"""


def verdict_or_finish(messages: Any) -> str:
    if "Reflexion critic" in messages[0].content:
        return '{"verdict": "accept", "critique": ""}'
    return finish("done")


@pytest.mark.seed_row("001-006")
def test_the_strategy_is_chosen_in_trails_toml(store: Store, tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text('[agent]\nstrategy = "reflexion"\n')  # the cwd
    session = Session(principal=ALICE, store=store, llm=LLMClient.mock(response=verdict_or_finish))
    result = session.run("Go.")
    assert (result.strategy, result.answer) == ("reflexion", "done")
    cls = IRI(NAMESPACES["trails"] + "ReflexionPlan")
    found = rows(store, STRATEGY_OF_RUN, run=result.activity_iri, cls=cls)
    assert [r["strategy"] for r in found] == ["reflexion"]


@pytest.mark.seed_row("001-007")
def test_the_strategy_is_chosen_per_session(store: Store) -> None:
    llm = LLMClient.mock(response=verdict_or_finish)
    by_init = Session(principal=ALICE, store=store, strategy="reflexion", llm=llm).run("Go.")
    replies = LLMClient.mock(plan({"action": "finish", "action_input": {}, "final_answer": "y"}))
    by_new = Session.new(strategy="plan_and_execute", principal=ALICE, store=store, llm=replies)
    planned = by_new.run("Go.")
    assert (by_init.strategy, planned.strategy, planned.answer) == (
        "reflexion",
        "plan_and_execute",
        "y",
    )
    for result, cls in ((by_init, "ReflexionPlan"), (planned, "PlanAndExecutePlan")):
        typed = IRI(NAMESPACES["trails"] + cls)
        assert len(rows(store, STRATEGY_OF_RUN, run=result.activity_iri, cls=typed)) == 1


@pytest.mark.seed_row("001-008")
def test_planners_read_cost_preconditions_and_side_effects(store: Store, notes: list[str]) -> None:
    llm = LLMClient.mock(finish("nothing to send"))
    react.run("Tell Bob.", llm=llm, session=Session(principal=ALICE, store=store))
    prompt = llm.requests[0].messages[0].content
    assert (
        "- notes.send: Send a note. [side effects: changes the world; estimated cost usd 0.02, "
        "tokens 1500; preconditions: the note is approved]"
    ) in prompt

    def approved() -> bool:
        """the note is approved"""
        return False

    @capability(id="notes.publish", description="Publish a note.", preconditions=[approved])
    def publish(ctx: Any) -> str:
        return "published"

    llm = LLMClient.mock(finish("not yet"))
    react.run("Publish.", llm=llm, session=Session(principal=ALICE, store=store))
    assert "notes.publish" not in llm.requests[0].messages[0].content  # unmet: not offered
    recorded = rows(
        store,
        "SELECT ?text WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; prov:used ?p . "
        "?p a trails:Prompt } GRAPH ?cg { ?p prov:value ?text } }",
    )
    assert any("preconditions: the note is approved" in str(r["text"]) for r in recorded)


# -- provenance of a run ------------------------------------------------------------------


@pytest.mark.seed_row("001-009")
def test_one_activity_per_llm_turn_each_invocation_informed_by_its_turn(
    store: Store, notes: list[str]
) -> None:
    session = Session(principal=ALICE, store=store)
    llm = LLMClient.mock([act("notes.search", tag="urgent"), finish("two")])
    result = react.run("Find urgent notes.", llm=llm, session=session)
    found = rows(store, TURNS_AND_ACTIONS, run=result.activity_iri)
    assert len(found) == 2  # one completion per turn
    informed = [r for r in found if r.get("inv") is not None]
    assert [str(r["inv"]) for r in informed] == [str(session.invocations[0].activity)]


@pytest.mark.seed_row("001-010")
def test_the_session_activity_is_the_root_of_every_step(store: Store, notes: list[str]) -> None:
    session = Session(principal=ALICE, store=store)
    llm = LLMClient.mock([act("notes.search", tag="urgent"), finish("two")])
    result = react.run("Find urgent notes.", llm=llm, session=session)
    steps = rows(
        store,
        "SELECT ?session ?step WHERE { GRAPH ?g { ?step prov:wasInformedBy+ ?session } }",
        session=session.iri,
    )
    reached = {str(r["step"]) for r in steps}
    assert str(result.activity_iri) in reached
    assert str(session.invocations[0].activity) in reached
    completions = rows(store, TURNS_AND_ACTIONS, run=result.activity_iri)
    assert {str(r["completion"]) for r in completions} <= reached


@pytest.mark.seed_row("001-011")
def test_an_exhausted_principal_budget_ends_the_loop_cleanly(
    store: Store, notes: list[str]
) -> None:
    default_tracker().set_budget(ALICE, usd=0.01)
    llm = LLMClient.mock([priced(act("notes.search", tag="urgent"), 0.05), finish("never")])
    session = Session(principal=ALICE, store=store)
    result = react.run("Find urgent notes.", llm=llm, session=session)
    assert (result.stopped, result.error, len(llm.requests)) == ("max_cost", None, 1)
    breach = rows(
        store,
        "SELECT ?run ?t WHERE { GRAPH ?g { ?run trails:wasTerminatedBy ?t . ?t a trails:BudgetBreach } }",
        run=result.activity_iri,
    )
    assert len(breach) == 1


# -- the LLM client -------------------------------------------------------------------------


@pytest.mark.seed_row("001-012")
def test_select_model_is_declarative_and_cost_comparable() -> None:
    cheap = select_model("summarize", budget_hint="cheap")
    best = select_model("summarize", budget_hint="best")
    assert isinstance(cheap, ModelSpec) and isinstance(best, ModelSpec)
    assert cheap != best
    assert (cheap.input_per_mtok or 0.0) <= (best.input_per_mtok or 0.0)
    assert best.quality >= cheap.quality


@pytest.mark.seed_row("001-013")
def test_complete_takes_principal_and_cache_as_the_adr_writes_them(store: Store) -> None:
    llm = LLMClient.mock(["hi", "again", "fresh"], response_cache=True)
    first = llm.complete("Say hi.", model="mock", cache=True, principal=ALICE)
    second = llm.complete("Say hi.", model="mock", principal=ALICE)
    assert (first.text, first.cache_hit, second.text, second.cache_hit) == ("hi", False, "hi", True)
    fresh = llm.complete("Say hi.", model="mock", cache=False, principal=ALICE)
    assert (fresh.text, fresh.cache_hit) == ("again", False)
    ctx = Context.open(ALICE)
    with pytest.raises(UserError, match="differs from the context's principal"):
        llm.complete("Say hi.", ctx=ctx, principal="did:key:zBob")
    assert len(llm.requests) == 2  # nothing else was sent
    principals = rows(
        store,
        "SELECT ?p WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; prov:wasAssociatedWith ?a . "
        "?a trails:principalId ?p } }",
    )
    assert {r["p"] for r in principals} == {ALICE}


@pytest.mark.seed_row("001-014")
def test_stream_yields_chunks_then_the_recorded_response(store: Store) -> None:
    ctx = Context.open(ALICE)
    items = list(LLMClient.mock("one two three").stream("Count.", ctx=ctx))
    assert all(isinstance(i, Chunk) for i in items[:-1]) and len(items) > 1
    last = items[-1]
    assert isinstance(last, Response) and last.text == "one two three"
    assert "".join(i.text for i in items[:-1] if isinstance(i, Chunk)) == "one two three"
    found = rows(store, "SELECT ?c WHERE { GRAPH ?g { ?c a trails:LLMCompletion } }")
    assert [str(r["c"]) for r in found] == [str(last.activity_iri)]


@pytest.mark.seed_row("001-015")
def test_response_has_text_tool_calls_tokens_usd_cache_hit(store: Store) -> None:
    response = LLMClient.mock([priced("hi", 0.03)]).complete("Say hi.", ctx=Context.open(ALICE))
    assert (response.text, response.tool_calls, response.usd, response.cache_hit) == (
        "hi",
        (),
        0.03,
        False,
    )
    assert response.tokens == response.input_tokens + response.output_tokens == 15


@pytest.mark.seed_row("001-016")
def test_every_complete_books_a_cost_envelope_tagged_with_the_principal(store: Store) -> None:
    ctx = Context.open(ALICE)
    response = LLMClient.mock([priced("hi", 0.03)]).complete("Say hi.", ctx=ctx)
    [envelope] = default_tracker().envelopes(principal=ALICE)
    assert (envelope.usd, envelope.tokens, envelope.activity) == (
        0.03,
        15,
        str(response.activity_iri),
    )
    assert default_tracker().total_usd(ALICE) == pytest.approx(0.03)
    cost = rows(
        store,
        "SELECT ?c ?usd WHERE { GRAPH ?g { ?c trails:costUSD ?usd } }",
        c=response.activity_iri,
    )
    assert [r["usd"] for r in cost] == [pytest.approx(0.03)]


@pytest.mark.seed_row("001-017")
def test_a_principal_over_budget_is_refused_before_sending(store: Store) -> None:
    default_tracker().set_budget(ALICE, tokens=10)
    ctx = Context.open(ALICE)
    llm = LLMClient.mock([priced("hi", 0.0), "never sent"])
    llm.complete("Say hi.", ctx=ctx)  # 15 tokens: the budget is now spent
    with pytest.raises(BudgetExceeded):
        llm.complete("Again.", ctx=ctx)
    assert len(llm.requests) == 1
    statuses = rows(
        store, "SELECT ?s WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; trails:status ?s } }"
    )
    assert sorted(r["s"] for r in statuses) == ["ok", "refused"]


@pytest.mark.seed_row("001-018")
def test_a_completion_inside_a_capability_is_linked_to_its_invocation(store: Store) -> None:
    @capability(id="evidence.summarize", description="Summarize a text.")
    def summarize(ctx: Any, text: str) -> str:
        return str(ctx.llm.complete(f"Summarize:\n{text}").text)

    session = Session(principal=ALICE, store=store)
    llm = LLMClient.mock([act("evidence.summarize", text="long"), "short", finish("short")])
    assert session.run("Summarize.", llm=llm).answer == "short"
    linked = rows(
        store,
        "SELECT ?inv ?c WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; prov:wasInformedBy ?inv } }",
        inv=session.invocations[0].activity,
    )
    assert len(linked) == 1


@pytest.mark.seed_row("001-019")
def test_the_client_retries_a_failed_call_once_configured(store: Store) -> None:
    sleeps: list[float] = []
    llm = LLMClient.mock(
        [ModelServerError("busy", provider="mock", status=503), "ok"],
        retry=RetryPolicy(max_retries=1, base_delay=0.001, sleep=sleeps.append),
    )
    response = llm.complete("Hello.", ctx=Context.open(ALICE))
    assert (response.text, response.retries, len(sleeps)) == ("ok", 1, 1)
    found = rows(
        store, "SELECT ?c ?n WHERE { GRAPH ?g { ?c trails:retries ?n } }", c=response.activity_iri
    )
    assert [r["n"] for r in found] == [1]


@pytest.mark.seed_row("001-021")
def test_an_app_plugs_in_its_own_adapter(store: Store) -> None:
    class Bedrock:
        """A provider the core takes no dependency on."""

        provider = "bedrock"
        model = "titan-text"

        def complete(self, request: Request) -> Response:
            text = f"echo: {request.messages[-1].content}"
            return Response(text=text, model=request.model, input_tokens=3, output_tokens=2)

        def stream(self, request: Request) -> Iterator[Chunk | Response]:
            yield self.complete(request)

    response = LLMClient(Bedrock()).complete("ping", ctx=Context.open(ALICE))
    assert (response.text, response.provider) == ("echo: ping", "bedrock")
    found = rows(
        store,
        "SELECT ?c ?model WHERE { GRAPH ?g { ?c prov:wasAssociatedWith ?m . ?m trails:modelId ?model } }",
        c=response.activity_iri,
    )
    assert [r["model"] for r in found] == ["titan-text"]


@pytest.mark.seed_row("001-020")
def test_openai_cached_prompt_tokens_are_read_as_cache_reads(
    store: Store, model_server: ModelServer
) -> None:
    model_server.replies.append(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "ok"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 60},
            },
        }
    )
    llm = LLMClient.openai_compatible("gpt-4o", base_url=model_server.url + "/v1")
    response = llm.complete("q", ctx=Context.open(ALICE))
    assert (response.input_tokens, response.output_tokens, response.cache_read_tokens) == (
        40,
        5,
        60,
    )
    found = rows(
        store,
        "SELECT ?c ?n WHERE { GRAPH ?g { ?c trails:cacheReadTokens ?n } }",
        c=response.activity_iri,
    )
    assert [r["n"] for r in found] == [60]
