"""Seed 000 (the trails agent runtime guide), row by row: each test grades one row of
``tests/seed_rows/rows.json`` as the seed's text describes it (rows 000-001 to 000-030;
the rest are in ``test_seed_000_b.py``)."""

from __future__ import annotations

import inspect
import json
import warnings
from typing import Any

import pytest
from tests.seed_rows._helpers import IRI, act, finish, rows
from tests.seed_rows._seed_000 import (
    alice,
    done,
    fenced,
    of_type,
    plan,
    recorded_params,
    recorded_prompts,
    register_notes,
    routed,
    run_row,
    step,
    verdict,
)

from trails.agent import Session
from trails.agent.planners import plan_and_execute, react, reflexion
from trails.agent.planners.base import PlanningStrategy
from trails.errors import UserError
from trails.kernel import capability
from trails.llm import (
    LLMClient,
    Message,
)
from trails.prov.vocab import T
from trails.store import Store


@pytest.fixture
def notes() -> dict[str, list[Any]]:
    """The seed's ``notes.*`` capabilities, registered for this test only."""
    return register_notes()


@pytest.mark.seed_row("000-001")
def test_quickstart_runs_with_the_mock(store: Store) -> None:
    llm = LLMClient.mock(response="finish")
    session = Session(principal="did:local:alice", store=store)
    result = react.run("Summarise the top 5 customer complaints", llm=llm, session=session)
    assert result.stopped == "goal_achieved"
    assert len(result.steps) >= 1
    assert session.iri in {
        row["g"] for row in store.query("SELECT DISTINCT ?g WHERE { GRAPH ?g {} }")
    }


@pytest.mark.seed_row("000-002")
def test_every_planner_is_a_planning_strategy() -> None:
    for planner in (react, plan_and_execute, reflexion):
        assert isinstance(planner, PlanningStrategy)


@pytest.mark.seed_row("000-003")
def test_the_planners_share_the_core_signature() -> None:
    for planner in (react, plan_and_execute, reflexion):
        params = inspect.signature(planner.run).parameters
        for name in (
            "goal",
            "llm",
            "session",
            "ctx",
            "max_steps",
            "tools",
            "tool_filter",
            "max_cost_usd",
            "max_tokens",
            "max_wall_time_s",
        ):
            assert name in params, (planner.__name__, name)
        assert params["max_steps"].default == 10


# -- per-call limits (000-004, 000-005) -------------------------------------------------


@pytest.mark.seed_row("000-004")
def test_react_per_call_tokens_and_temperature(store: Store) -> None:
    params = inspect.signature(react.run).parameters
    assert params["temperature"].default == 0.0
    assert params["max_tokens_per_step"].default in (
        None,
        1024,
    )  # None: 1024, or max_tokens_per_call
    default = LLMClient.mock(response=finish("a"))
    react.run("Go.", llm=default, session=alice())
    assert default.adapter.requests[0].max_tokens == 1024
    assert default.adapter.requests[0].temperature == 0.0
    session = alice()
    client = LLMClient.mock(response=finish("b"))
    react.run("Go.", llm=client, session=session, max_tokens_per_step=77, temperature=0.3)
    assert (client.adapter.requests[0].max_tokens, client.adapter.requests[0].temperature) == (
        77,
        0.3,
    )
    [params_seen] = recorded_params(store, session.iri)
    assert (params_seen["max_tokens"], params_seen["temperature"]) == (77, 0.3)


@pytest.mark.seed_row("000-005")
def test_plan_and_execute_and_reflexion_per_call_tokens_and_temperature(store: Store) -> None:
    for planner in (plan_and_execute, reflexion):
        params = inspect.signature(planner.run).parameters
        assert params["max_tokens_per_call"].default in (None, 1024)  # None: 1024
        assert params["temperature"].default == 0.0
    default = LLMClient.mock(response=plan(done("ok")))
    plan_and_execute.run("Go.", llm=default, session=alice())
    assert (default.adapter.requests[0].max_tokens, default.adapter.requests[0].temperature) == (
        1024,
        0.0,
    )
    session = alice()
    planned = LLMClient.mock(response=plan(done("ok")))
    plan_and_execute.run(
        "Go.", llm=planned, session=session, max_tokens_per_call=55, temperature=0.2
    )
    assert [(r.max_tokens, r.temperature) for r in planned.adapter.requests] == [(55, 0.2)]
    assert [(p["max_tokens"], p["temperature"]) for p in recorded_params(store, session.iri)] == [
        (55, 0.2)
    ]
    reflected = LLMClient.mock(response=routed(fenced(json.loads(finish("ok"))), verdict("accept")))
    reflexion.run("Go.", llm=reflected, session=alice(), max_tokens_per_call=66, temperature=0.1)
    assert [(r.max_tokens, r.temperature) for r in reflected.adapter.requests] == [(66, 0.1)] * 2


# -- ReAct (000-006 .. 000-009) ---------------------------------------------------------


@pytest.mark.seed_row("000-006")
def test_react_turn_dispatches_and_feeds_the_observation_back(store: Store, notes: Any) -> None:
    client = LLMClient.mock(response=[act("notes.search", tag="urgent"), finish("n1, n2")])
    session = alice()
    result = react.run("Find urgent notes.", llm=client, session=session)
    assert notes["search"] == ["urgent"]
    assert result.steps[0].observation == {"hits": ["n1", "n2"]}
    second = client.adapter.requests[1].messages[-1]
    assert (second.role, second.content) == ("user", 'Observation: {"hits": ["n1", "n2"]}')
    linked = rows(
        store,
        """SELECT ?g ?run ?inv WHERE { GRAPH ?g { ?inv a trails:CapabilityInvocation ;
             prov:wasInformedBy ?c . ?c a trails:LLMCompletion ; prov:wasInformedBy ?run } }""",
        g=IRI(str(session.iri)),
        run=IRI(str(result.activity_iri)),
    )
    assert [row["inv"] for row in linked] == [result.steps[0].activity_iri]


@pytest.mark.seed_row("000-007")
def test_react_finish_is_the_answer(store: Store) -> None:
    result = react.run("Answer.", llm=LLMClient.mock(response=finish("forty-two")), session=alice())
    assert (result.stopped, result.answer, result.error) == ("goal_achieved", "forty-two", None)
    recorded = run_row(store, result.activity_iri)
    assert (recorded["stop"], recorded["answer"]) == ("goal_achieved", "forty-two")


@pytest.mark.seed_row("000-008")
def test_tool_errors_become_observations_and_the_loop_continues(store: Store, notes: Any) -> None:
    client = LLMClient.mock(
        response=[
            act("notes.fail"),
            act("no.such.tool"),
            act("notes.search", tag=7),
            finish("recovered"),
        ]
    )
    session = alice()
    result = react.run("Try things.", llm=client, session=session)
    assert (result.stopped, result.answer) == ("goal_achieved", "recovered")
    observations = [s.observation for s in result.steps[:3]]
    assert all(isinstance(o, str) and o.startswith("error: ") for o in observations), observations
    assert "disk on fire" in observations[0] and "no.such.tool" in observations[1]
    assert "notes.search" in observations[2]
    for request, observation in zip(client.adapter.requests[1:], observations, strict=True):
        assert request.messages[-1].content == f"Observation: {observation}"
    statuses = rows(
        store,
        """SELECT ?g ?status WHERE { GRAPH ?g { ?inv a trails:CapabilityInvocation ;
             trails:status ?status ; trails:stepIndex ?i } } ORDER BY ?i""",
        g=IRI(str(session.iri)),
    )
    assert [row["status"] for row in statuses] == ["error", "refused", "invalid"]


@pytest.mark.seed_row("000-009")
def test_react_max_steps_returns_the_last_observation(store: Store, notes: Any) -> None:
    assert inspect.signature(react.run).parameters["max_steps"].default == 10
    client = LLMClient.mock(response=act("notes.search", tag="urgent"))
    result = react.run("Search forever.", llm=client, session=alice())
    assert (result.stopped, len(result.steps), client.adapter.calls) == ("max_steps", 10, 10)
    assert result.answer == json.dumps({"hits": ["n1", "n2"]})
    assert all(s.observation == {"hits": ["n1", "n2"]} for s in result.steps)
    assert run_row(store, result.activity_iri)["term"] == T.StepLimit


# -- Plan-and-Execute (000-010 .. 000-016) ----------------------------------------------


@pytest.mark.seed_row("000-010")
def test_plan_and_execute_worked_example(store: Store) -> None:
    from trails import capability as seed_capability

    @seed_capability(id="notes.search", description="Search notes by tag.")
    def search(ctx: Any, tag: str) -> dict[str, Any]:
        return {"hits": ["n1", "n2"]}

    worked = {
        "plan": [
            {"action": "notes.search", "action_input": {"tag": "urgent"}, "rationale": "list"},
            {"action": "finish", "action_input": {}, "final_answer": "2 urgent notes."},
        ]
    }
    client = LLMClient.mock(response=lambda _m: "```json\n" + json.dumps(worked) + "\n```")
    session = alice()
    result = plan_and_execute.run("Find urgent notes.", llm=client, session=session)
    assert (result.stopped, result.answer, client.adapter.calls) == (
        "goal_achieved",
        "2 urgent notes.",
        1,
    )
    assert result.steps[0].action == "notes.search"
    assert result.steps[0].observation == {"hits": ["n1", "n2"]}
    assert len(of_type(store, session.iri, T.PlanDocument)) == 1
    assert len(of_type(store, session.iri, T.PlanAndExecutePlan)) == 1


@pytest.mark.seed_row("000-011")
def test_a_plan_must_end_with_finish(store: Store, notes: Any) -> None:
    client = LLMClient.mock(response=plan(step("notes.search", tag="urgent")))
    result = plan_and_execute.run("Go.", llm=client, session=alice())
    assert (result.stopped, client.adapter.calls) == ("error", 2)
    assert result.error is not None and "finish" in result.error
    assert notes["search"] == []  # a malformed plan runs nothing
    assert run_row(store, result.activity_iri)["term"] == T.Error


@pytest.mark.seed_row("000-012")
def test_plan_and_execute_replans_after_a_trails_error(store: Store, notes: Any) -> None:
    client = LLMClient.mock(
        response=[plan(step("notes.fail"), done("never")), plan(done("recovered"))]
    )
    session = alice()
    result = plan_and_execute.run("Go.", llm=client, session=session)
    assert (result.stopped, result.answer) == ("goal_achieved", "recovered")
    assert notes["fail"] == [True]
    replan_prompt = "\n".join(m.content for m in client.adapter.requests[1].messages)
    assert "disk on fire" in replan_prompt
    assert len(of_type(store, session.iri, T.PlanDocument)) == 2


@pytest.mark.seed_row("000-013")
def test_max_replans_caps_replanning(store: Store, notes: Any) -> None:
    assert inspect.signature(plan_and_execute.run).parameters["max_replans"].default == 3
    client = LLMClient.mock(response=plan(step("notes.fail"), done("never")))
    result = plan_and_execute.run("Go.", llm=client, session=alice(), max_replans=1)
    assert (result.stopped, client.adapter.calls) == ("error", 2)
    assert run_row(store, result.activity_iri)["term"] == T.Error
    default = LLMClient.mock(response=plan(step("notes.fail"), done("never")))
    assert plan_and_execute.run("Go.", llm=default, session=alice()).stopped == "error"
    assert default.adapter.calls == 4  # the first plan and 3 replans


@pytest.mark.seed_row("000-014")
def test_max_steps_is_the_ceiling_across_replans(store: Store, notes: Any) -> None:
    client = LLMClient.mock(
        response=plan(step("notes.search", tag="a"), step("notes.fail"), done("x"))
    )
    result = plan_and_execute.run("Go.", llm=client, session=alice(), max_steps=3, max_replans=5)
    assert result.stopped == "max_steps"
    assert len(notes["search"]) + len(notes["fail"]) == 3  # executed actions, across 2 plans
    assert client.adapter.calls == 2
    assert run_row(store, result.activity_iri)["term"] == T.StepLimit


@pytest.mark.seed_row("000-015")
def test_a_malformed_plan_gets_one_nudge(store: Store) -> None:
    nudged = LLMClient.mock(response=["no plan here, sorry", plan(done("ok"))])
    assert plan_and_execute.run("Go.", llm=nudged, session=alice()).stopped == "goal_achieved"
    twice = LLMClient.mock(response=["no plan here", "still no plan"])
    result = plan_and_execute.run("Go.", llm=twice, session=alice())
    assert result.stopped == "error" and result.error is not None
    assert result.error.startswith("malformed plan after a retry")
    assert run_row(store, result.activity_iri)["term"] == T.Error


@pytest.mark.seed_row("000-016")
def test_each_parsed_plan_is_kept_on_the_session(store: Store, notes: Any) -> None:
    session = alice()
    client = LLMClient.mock(response=[plan(step("notes.fail"), done("never")), plan(done("ok"))])
    plan_and_execute.run("Go.", llm=client, session=session)
    plans = session.metadata["plans"]
    assert [[s["action"] for s in p] for p in plans] == [["notes.fail", "finish"], ["finish"]]
    assert plans[1][0]["final_answer"] == "ok"


# -- Reflexion (000-017 .. 000-022) -----------------------------------------------------


@pytest.mark.seed_row("000-017")
def test_reflexion_worked_example(store: Store) -> None:
    inner = (
        '```json\n{"thought":"done","action":"finish","action_input":{},"final_answer":"ok"}\n```'
    )
    critic = '```json\n{"verdict":"accept","critique":""}\n```'

    def route(msgs: list[Message]) -> str:
        sys = next((m.content for m in msgs if m.role == "system"), "")
        return critic if "Reflexion critic" in sys else inner

    client = LLMClient.mock(response=route)
    session = alice()
    result = reflexion.run("Answer the goal.", llm=client, session=session)
    assert (result.stopped, result.answer, result.strategy) == ("goal_achieved", "ok", "reflexion")
    critic_request = client.adapter.requests[1]
    assert [m.role for m in critic_request.messages] == ["system", "user"]  # a fresh list
    assert len(of_type(store, session.iri, T.ReflexionPlan)) == 1
    assert len(of_type(store, session.iri, T.ReActPlan)) == 1
    assert len(of_type(store, session.iri, T.Critique)) == 1


@pytest.mark.seed_row("000-018")
def test_a_retry_verdict_appends_the_tagged_critique(store: Store) -> None:
    session = alice()
    client = LLMClient.mock(
        response=routed(
            fenced(json.loads(finish("v"))), [verdict("retry", "cite a source"), verdict("accept")]
        )
    )
    result = reflexion.run("Answer.", llm=client, session=session)
    assert result.stopped == "goal_achieved"
    second_inner = client.adapter.requests[2]
    tagged = [m for m in second_inner.messages if m.content.startswith("[reflexion critique #1]")]
    assert len(tagged) == 1 and "cite a source" in tagged[0].content and tagged[0].role == "user"
    assert len(of_type(store, session.iri, T.Critique)) == 2


@pytest.mark.seed_row("000-019")
def test_exhausted_outer_iterations_stop_at_max_steps(store: Store) -> None:
    assert inspect.signature(reflexion.run).parameters["max_outer_iterations"].default == 3
    answers = [fenced(json.loads(finish(a))) for a in ("v1", "v2", "v3", "v4")]
    client = LLMClient.mock(response=routed(answers, verdict("retry", "again")))
    result = reflexion.run("Answer.", llm=client, session=alice())
    assert (result.stopped, result.answer) == ("max_steps", "v3")  # the latest inner result
    two = LLMClient.mock(response=routed(answers, verdict("retry", "again")))
    session = alice()
    capped = reflexion.run("Answer.", llm=two, session=session, max_outer_iterations=2)
    assert (capped.stopped, capped.answer) == ("max_steps", "v2")
    assert len(session.metadata["critiques"]) == 2
    assert run_row(store, capped.activity_iri)["term"] == T.StepLimit


@pytest.mark.seed_row("000-020")
def test_critic_replies_are_kept_in_order(store: Store) -> None:
    session = alice()
    client = LLMClient.mock(
        response=routed(
            fenced(json.loads(finish("v"))), [verdict("retry", "first"), verdict("accept", "fine")]
        )
    )
    reflexion.run("Answer.", llm=client, session=session)
    assert session.metadata["critiques"] == [
        {"verdict": "retry", "critique": "first"},
        {"verdict": "accept", "critique": "fine"},
    ]


@pytest.mark.seed_row("000-021")
def test_a_malformed_critic_reply_gets_one_nudge(store: Store) -> None:
    inner = fenced(json.loads(finish("v")))
    nudged = LLMClient.mock(response=routed(inner, ["not a verdict", verdict("accept")]))
    assert reflexion.run("Answer.", llm=nudged, session=alice()).stopped == "goal_achieved"
    bad = LLMClient.mock(response=routed(inner, ["not a verdict", "still not"]))
    result = reflexion.run("Answer.", llm=bad, session=alice())
    assert (result.stopped, bad.adapter.calls) == ("error", 3)
    assert run_row(store, result.activity_iri)["term"] == T.Error


@pytest.mark.seed_row("000-022")
def test_inner_errors_propagate_unchanged(store: Store) -> None:
    asked: list[bool] = []

    def route(msgs: list[Message]) -> str:
        system = next((m.content for m in msgs if m.role == "system"), "")
        if "Reflexion critic" in system:
            asked.append(True)
            return verdict("accept")
        return '{"garbage": '

    client = LLMClient.mock(response=route)
    result = reflexion.run("Answer.", llm=client, session=alice())
    assert result.stopped == "error" and result.error is not None
    assert "malformed reply" in result.error
    assert asked == []  # no critic was asked
    assert run_row(store, result.activity_iri)["term"] == T.Error


# -- tool discovery and filtering (000-023 .. 000-030) ----------------------------------


@pytest.mark.seed_row("000-023")
def test_the_prompt_carries_description_params_types_and_required(store: Store) -> None:
    @capability(id="notes.find", description="Find notes by tag.")
    def find(ctx: Any, tag: str, limit: int = 3) -> list[str]:
        return []

    session = alice()
    client = LLMClient.mock(response=finish("ok"))
    react.run("Go.", llm=client, session=session, tools=["notes.find"])
    system = client.adapter.requests[0].messages[0].content
    lines = system.splitlines()
    at = lines.index("- notes.find: Find notes by tag.")
    assert lines[at + 1 : at + 3] == ["    tag: str (required)", "    limit: int (optional)"]
    assert system in recorded_prompts(store, session.iri)  # the prompt is evidence too


@pytest.mark.seed_row("000-024")
def test_unknown_ids_are_shown_unregistered(store: Store, notes: Any) -> None:
    session = alice()
    client = LLMClient.mock(response=finish("ok"))
    react.run("Go.", llm=client, session=session, tools=["notes.search", "notes.gone"])
    system = client.adapter.requests[0].messages[0].content
    assert "- notes.gone (unregistered)" in system.splitlines()
    assert "- notes.search: Search notes by tag." in system and "notes.tag" not in system
    assert any("notes.gone (unregistered)" in text for text in recorded_prompts(store, session.iri))


@pytest.mark.seed_row("000-025")
def test_a_tools_callable_is_called_once_at_run_start(store: Store, notes: Any) -> None:
    calls: list[int] = []

    def pick_tools() -> list[str]:
        calls.append(1)
        return ["notes.search"]

    client = LLMClient.mock(response=[act("notes.search", tag="urgent"), finish("ok")])
    result = react.run("Go.", llm=client, session=alice(), tools=pick_tools)
    assert (result.stopped, client.adapter.calls, calls) == ("goal_achieved", 2, [1])
    assert "notes.tag" not in client.adapter.requests[1].messages[0].content


@pytest.mark.seed_row("000-026")
def test_tools_int_keeps_the_newest_and_bool_is_refused(store: Store, notes: Any) -> None:
    assert [cid for cid, _ in react.discover_tools(2)] == ["notes.tag", "notes.fail"]
    client = LLMClient.mock(response=finish("ok"))
    react.run("Go.", llm=client, session=alice(), tools=1)
    system = client.adapter.requests[0].messages[0].content
    assert "- notes.fail" in system and "notes.search" not in system
    for flag in (True, False):
        with pytest.raises(UserError, match="bool"):
            react.run("Go.", llm=LLMClient.mock(response=finish("x")), session=alice(), tools=flag)


@pytest.mark.seed_row("000-027")
def test_tool_filter_predicate_sees_the_metadata(store: Store, notes: Any) -> None:
    @capability(id="notes.read", description="Read a note.", annotations={"tags": "read-only"})
    def read(note: str) -> str:
        return note

    seen: list[dict[str, Any]] = []

    def read_only(meta: dict[str, Any]) -> bool:
        seen.append(meta)
        return "read-only" in meta["annotations"].get("tags", "")

    kept = react.discover_tools(tool_filter=read_only)
    assert [cid for cid, _ in kept] == ["notes.read"]
    keys = {"id", "description", "params", "required", "annotations", "input_shape", "output_shape"}
    assert all(keys <= set(meta) for meta in seen)
    client = LLMClient.mock(response=finish("ok"))
    react.run(
        "Go.",
        llm=client,
        session=alice(),
        tool_filter=lambda meta: "read-only" in meta["annotations"].get("tags", ""),
    )
    system = client.adapter.requests[0].messages[0].content
    assert "- notes.read: Read a note." in system and "notes.search" not in system


@pytest.mark.seed_row("000-028")
def test_tool_filter_keywords(store: Store, notes: Any) -> None:
    candidates = ["notes.search", "notes.tag", "notes.fail"]
    kept = react.discover_tools(candidates, tool_filter="SEARCH always")
    assert [cid for cid, _ in kept] == ["notes.search", "notes.fail"]  # id or description, any case
    assert [cid for cid, _ in react.discover_tools(candidates, tool_filter="")] == candidates
    client = LLMClient.mock(response=finish("ok"))
    react.run("Go.", llm=client, session=alice(), tools=candidates, tool_filter="tag")
    system = client.adapter.requests[0].messages[0].content
    assert "- notes.tag: Tag a note." in system and "notes.fail" not in system


@pytest.mark.seed_row("000-029")
def test_a_warning_past_thirty_discovered_capabilities(store: Store) -> None:
    def bulk() -> int:
        return 0

    for n in range(31):
        capability(id=f"bulk.tool{n}", description=f"Bulk tool {n}.")(bulk)
    with pytest.warns(UserWarning, match="soft cap 30"):
        react.run("Go.", llm=LLMClient.mock(response=finish("ok")), session=alice())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        react.discover_tools(tool_filter="bulk")
        react.discover_tools([f"bulk.tool{n}" for n in range(31)])


@pytest.mark.seed_row("000-030")
def test_tools_and_tool_filter_on_every_planner(store: Store, notes: Any) -> None:
    planned = LLMClient.mock(response=plan(done("ok")))
    plan_and_execute.run(
        "Go.",
        llm=planned,
        session=alice(),
        tools=["notes.search", "notes.tag"],
        tool_filter="notes.tag",
    )
    reflected = LLMClient.mock(response=routed(fenced(json.loads(finish("ok"))), verdict("accept")))
    reflexion.run(
        "Go.",
        llm=reflected,
        session=alice(),
        tools=["notes.search", "notes.tag"],
        tool_filter="notes.tag",
    )
    for client in (planned, reflected):
        system = client.adapter.requests[0].messages[0].content
        assert "notes.tag" in system
        assert "notes.search" not in system and "notes.fail" not in system
