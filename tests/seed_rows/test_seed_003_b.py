"""Seed 003 (Plan-Execute-Reflect), rows 027-042, row by row: each test grades one row of
``tests/seed_rows/rows.json`` as the seed's text describes it, and reads the evidence back
from the store with SPARQL (bound parameters) where the run should leave some (the scene and
the reads are in ``_seed_003``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from tests.seed_rows._helpers import IRI, act, finish, rows
from tests.seed_rows._seed_003 import (
    PER,
    SAMPLE,
    Lifecycle,
    alice,
    executor_requests,
    executor_runs,
    invocations,
    model,
    planner_requests,
    planner_turns,
    reflection,
    register_index,
    run_facts,
)

from trails.agent import Session
from trails.agent.planners import plan_execute_reflect
from trails.agent.planners.plan_execute_reflect import parse_reflection
from trails.errors import ReplyParseError, UserError
from trails.kernel import capability
from trails.llm import LLMClient, ModelServerError
from trails.prov.vocab import T
from trails.store import Store


@pytest.fixture
def index() -> list[str]:
    """``index.sample``; the list holds the indexes sampled (the registry is restored after)."""
    return register_index()


# -- 027..030: interfaces, the executor agent, tenants, tools ------------------------------


@pytest.mark.seed_row("003-027")
def test_llm_response_filter_reads_replies_through_a_jsonpath(store: Store) -> None:
    envelope = {"output": {"message": {"content": [{"text": reflection([], "the same answer")}]}}}
    client = LLMClient.mock(response=json.dumps(envelope))
    session = alice()
    result = plan_execute_reflect.run(
        "Go.", llm=client, session=session,
        llm_response_filter="$.output.message.content[0].text",
    )  # fmt: skip
    assert (result.stopped, result.answer) == ("goal_achieved", "the same answer")
    [found] = rows(
        store,
        """SELECT ?run ?filter ?text WHERE { GRAPH ?g { ?run trails:responseFilter ?filter .
             ?c a trails:LLMCompletion ; prov:wasInformedBy ?run .
             ?r a trails:Completion ; prov:wasGeneratedBy ?c } GRAPH ?cg { ?r prov:value ?text } }""",
        run=IRI(str(result.activity_iri)),
    )
    # the filter is on the run; the completion keeps the whole reply the model gave
    assert found["filter"] == "$.output.message.content[0].text"
    assert json.loads(found["text"]) == envelope
    with pytest.raises(UserError, match="no JSONPath"):
        plan_execute_reflect.run("Go.", llm=client, session=alice(), llm_response_filter="$[")


@pytest.mark.seed_row("003-028")
def test_executor_agent_id_runs_the_steps_on_a_registered_agent(store: Store) -> None:
    from trails.agent.planners.plan_execute_reflect import register_executor_agent

    planner = LLMClient.mock(
        response=[reflection(["Look it up"]), reflection([], "found it")], model="planner-large"
    )
    executor = LLMClient.mock(response=finish("looked"), model="executor-small")
    register_executor_agent("searcher", llm=executor, system_prompt="You look things up.",
                            max_iterations=2)  # fmt: skip
    session = alice()
    result = plan_execute_reflect.run(
        "Find it.", llm=planner, session=session, executor_agent_id="searcher"
    )
    assert (result.stopped, result.answer) == ("goal_achieved", "found it")
    assert (planner.adapter.calls, executor.adapter.calls) == (2, 1)
    assert executor.requests[0].messages[0].content.startswith("You look things up.")
    [ran] = rows(
        store,
        """SELECT ?run ?pass ?name ?who WHERE { GRAPH ?g {
             ?pass a trails:ReActPlan ; prov:wasInformedBy+ ?run ; trails:agentName ?name ;
                   prov:wasAssociatedWith ?agent .
             ?agent a prov:SoftwareAgent ; prov:actedOnBehalfOf/trails:principalId ?who } }""",
        run=IRI(str(result.activity_iri)),
    )
    assert (ran["pass"], ran["name"], ran["who"]) == (
        result.steps[0].activity_iri,
        "searcher",
        "did:local:alice",
    )
    with pytest.raises(UserError, match="names no registered agent"):
        plan_execute_reflect.run("Go.", llm=planner, session=alice(), executor_agent_id="nobody")


@pytest.mark.seed_row("003-029")
def test_tenant_id_is_the_principal_the_run_acts_for(store: Store) -> None:
    ran = {}
    for tenant in ("did:example:tenant-a", "did:example:tenant-b"):
        result = plan_execute_reflect.run(
            "Go.", llm=model(reflection([], f"for {tenant}")), session=Session(principal=tenant),
            tenant_id=tenant,
        )  # fmt: skip
        ran[tenant] = result.activity_iri
    for tenant, run in ran.items():
        found = rows(
            store,
            """SELECT ?who ?run WHERE { GRAPH ?g { ?run a trails:PlanExecuteReflectPlan ;
                 prov:wasAssociatedWith ?who } }""",
            who=IRI(tenant),
        )
        assert [r["run"] for r in found] == [run]
    with pytest.raises(UserError, match="not the session's principal"):
        plan_execute_reflect.run(
            "Go.", llm=model(reflection([], "x")), session=alice(), tenant_id="did:example:tenant-a"
        )


@pytest.mark.seed_row("003-030")
def test_mcp_tools_join_the_catalogue_and_a_failed_server_degrades_gracefully(
    store: Store, index: list[str]
) -> None:
    from trails.mcp import mount, unmount

    broken = mount([sys.executable, "-c", "import sys; sys.exit(3)"], prefix="gone", optional=True)
    assert broken is None  # logged, no tools, the run goes on with the others
    clock = mount([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])
    try:
        assert "mcp-time.get_current_time" in clock.tools
        client = model(
            [reflection(["Ask the clock for the time in UTC"]), reflection([], "it is known")],
            [act("mcp-time.get_current_time", timezone="UTC"), finish("the time in UTC")],
        )
        session = alice()
        result = plan_execute_reflect.run(
            "What time is it?", llm=client, session=session,
            tools=["index.sample", "mcp-time.get_current_time", "never.registered"],
        )  # fmt: skip
    finally:
        unmount("mcp-time")
    assert (result.stopped, result.answer) == ("goal_achieved", "it is known")
    catalogue = planner_requests(client)[0].messages[1].content
    assert "- index.sample:" in catalogue and "- mcp-time.get_current_time:" in catalogue
    assert "- never.registered (unregistered)" in catalogue
    calls = invocations(store, session.iri)
    assert [(c["capability"], c["status"]) for c in calls] == [("mcp-time.get_current_time", "ok")]


# -- 031..039: the loop, parsing, failures, evidence --------------------------------------


@pytest.mark.seed_row("003-031")
def test_each_plan_runs_only_its_first_step_then_reflects(store: Store) -> None:
    client = model(
        [reflection(["first", "never as planned"]), reflection(["second", "third"]),
         reflection([], "done")],
        [finish("first done"), finish("second done")],
    )  # fmt: skip
    result = plan_execute_reflect.run("Go.", llm=client, session=alice())
    assert [s.thought for s in result.steps if s.action == "executor"] == ["first", "second"]
    assert [p["goal"] for p in executor_runs(store, result.activity_iri)] == ["first", "second"]
    assert len(planner_turns(store, result.activity_iri)) == 3


@pytest.mark.seed_row("003-032")
def test_the_step_is_the_executors_question_and_its_answer_the_steps_result(
    store: Store,
) -> None:
    client = model([reflection([SAMPLE]), reflection([], "done")], finish("2 documents"))
    result = plan_execute_reflect.run("Go.", llm=client, session=alice())
    [executor] = executor_requests(client)
    assert executor.messages[-1].content == f"Goal: {SAMPLE}"
    assert (result.steps[0].thought, result.steps[0].observation) == (SAMPLE, "2 documents")
    assert f"1. {SAMPLE}\n   result: 2 documents" in planner_requests(client)[1].messages[1].content
    assert run_facts(store, result.steps[0].activity_iri)["answer"] == "2 documents"


@pytest.mark.seed_row("003-033")
def test_planner_output_parsing_takes_markdown_json_and_needs_steps_or_result() -> None:
    fenced = 'Here is my plan:\n```json\n{"steps": ["x"], "result": ""}\n```'
    assert parse_reflection(fenced) == {"steps": ["x"], "result": ""}
    assert parse_reflection('{"steps": [], "result": "final"}') == {"steps": [], "result": "final"}
    with pytest.raises(ReplyParseError, match="neither steps nor a result"):
        parse_reflection('{"steps": [], "result": ""}')
    with pytest.raises(ReplyParseError, match='no JSON object with "steps" or "result"'):
        parse_reflection('{"plan": ["x"]}')


@pytest.mark.seed_row("003-034")
def test_a_malformed_planner_reply_gets_one_nudge_then_ends_in_error(store: Store) -> None:
    nudged = model(["not json at all", reflection([], "recovered")])
    assert plan_execute_reflect.run("Go.", llm=nudged, session=alice()).answer == "recovered"
    assert "could not be used" in nudged.adapter.requests[1].messages[-1].content
    bad = model(["not json", "still not json"])
    result = plan_execute_reflect.run("Go.", llm=bad, session=alice())
    assert result.stopped == "error" and bad.adapter.calls == 2
    assert str(result.error).startswith("malformed plan after a retry")
    assert run_facts(store, result.activity_iri)["term"] == T.Error


@pytest.mark.seed_row("003-035")
def test_a_failed_llm_call_ends_the_run_in_error_on_the_record(store: Store) -> None:
    client = LLMClient.mock(
        response=[ModelServerError("planner down", provider="mock", status=503)]
    )
    session = alice()
    result = plan_execute_reflect.run("Go.", llm=client, session=session)
    assert (result.stopped, result.error) == ("error", "planner down")
    assert run_facts(store, result.activity_iri)["term"] == T.Error
    failed = rows(
        store,
        """SELECT ?run ?status WHERE { GRAPH ?g { ?c a trails:LLMCompletion ;
             prov:wasInformedBy ?run ; trails:status ?status } }""",
        run=IRI(str(result.activity_iri)),
    )
    assert [f["status"] for f in failed] == ["error"]


@pytest.mark.seed_row("003-036")
def test_an_executor_failure_ends_the_run_in_error(store: Store) -> None:
    client = model([reflection(["do it"]), reflection([], "never")], ['{"junk": ', '{"junk": '])
    result = plan_execute_reflect.run("Go.", llm=client, session=alice())
    assert result.stopped == "error" and "malformed reply" in str(result.error)
    assert len(planner_requests(client)) == 1  # no reflection after a failed step
    assert run_facts(store, result.activity_iri)["term"] == T.Error
    [executor] = executor_runs(store, result.activity_iri)
    assert run_facts(store, executor["pass"])["term"] == T.Error


@pytest.mark.seed_row("003-037")
def test_each_step_leaves_its_trace(store: Store, index: list[str]) -> None:
    client = model(
        [reflection([SAMPLE]), reflection([], "done")],
        [act("index.sample", index="my-index"), finish("2 documents")],
    )
    session = alice()
    result = plan_execute_reflect.run("Go.", llm=client, session=session)
    step = result.steps[0]
    facts = run_facts(store, step.activity_iri)
    assert (facts["cls"], facts["answer"]) == (T.ReActPlan, "2 documents")
    trace = rows(
        store,
        """SELECT ?pass ?capability ?input ?output WHERE { GRAPH ?g {
             ?c prov:wasInformedBy ?pass . ?inv prov:wasInformedBy ?c ;
                trails:capability/trails:capabilityId ?capability ; prov:used ?in .
             ?in a trails:CapabilityInput . ?out a trails:CapabilityOutput ; prov:wasGeneratedBy ?inv .
             GRAPH ?c1 { ?in prov:value ?input } GRAPH ?c2 { ?out prov:value ?output } } }""",
        **{"pass": IRI(str(step.activity_iri))},
    )
    assert [(t["capability"], json.loads(t["input"])) for t in trace] == [
        ("index.sample", {"index": "my-index"})
    ]
    assert json.loads(trace[0]["output"]) == {"docs": ["my-index-doc1", "my-index-doc2"]}


@pytest.mark.seed_row("003-038")
def test_every_reflection_is_a_plan_document_of_its_planner_turn(store: Store) -> None:
    client = model(
        [reflection(["s1", "s2"]), reflection(["s2"]), reflection([], "done")],
        [finish("r1"), finish("r2")],
    )
    session = alice()
    result = plan_execute_reflect.run("Go.", llm=client, session=session)
    turns = planner_turns(store, result.activity_iri)
    assert [json.loads(t["value"]) for t in turns] == [
        {"steps": ["s1", "s2"], "result": ""},
        {"steps": ["s2"], "result": ""},
        {"steps": [], "result": "done"},
    ]
    assert session.metadata["plans"] == [json.loads(t["value"]) for t in turns]


@pytest.mark.seed_row("003-039")
def test_a_run_ends_by_final_result_max_steps_or_error(store: Store) -> None:
    ended = {
        "result": plan_execute_reflect.run("Go.", llm=model(reflection([], "x")), session=alice()),
        "steps": plan_execute_reflect.run(
            "Go.", llm=model(reflection(["s"]), finish("r")), session=alice(), max_steps=1
        ),
        "error": plan_execute_reflect.run("Go.", llm=model("no json"), session=alice()),
    }
    facts = {k: run_facts(store, r.activity_iri) for k, r in ended.items()}
    assert {k: (f["stop"], f.get("term")) for k, f in facts.items()} == {
        "result": ("goal_achieved", None),
        "steps": ("max_steps", T.StepLimit),
        "error": ("error", T.Error),
    }


# -- 041, 042: task state and recovery ----------------------------------------------------


@pytest.mark.seed_row("003-041", differs=PER)
def test_a_running_run_is_visible_to_observers_and_in_the_store(store: Store) -> None:
    running: list[list[dict[str, Any]]] = []
    session = alice()

    @capability(id="task.peek", description="Look at the runs still running.")
    def peek() -> str:
        running.append(
            rows(
                store,
                """SELECT ?g ?run WHERE { GRAPH ?g { ?run a trails:PlanExecuteReflectPlan
                     FILTER NOT EXISTS { ?run prov:endedAtTime ?end } } }""",
                g=IRI(str(session.iri)),
            )
        )
        return "peeked"

    seen = Lifecycle()
    client = model([reflection(["Peek"]), reflection([], "done")], [act("task.peek"), finish("ok")])
    result = plan_execute_reflect.run("Go.", llm=client, session=session, observers=[seen])
    assert [[r["run"] for r in found] for found in running] == [[result.activity_iri]]
    assert seen.kinds[0] == "run_start" and "run_end" in seen.kinds
    assert seen.kinds.index("run_start") < seen.kinds.index("run_end")
    assert (
        rows(
            store,
            """SELECT ?g ?run WHERE { GRAPH ?g { ?run a trails:PlanExecuteReflectPlan
             FILTER NOT EXISTS { ?run prov:endedAtTime ?end } } }""",
            g=IRI(str(session.iri)),
        )
        == []
    )


@pytest.mark.seed_row("003-042")
def test_a_stopped_run_is_resumed_from_its_memory_id_in_a_new_session(store: Store) -> None:
    stopped = plan_execute_reflect.run(
        "Audit.", llm=model(reflection([SAMPLE, "Count"]), finish("2 docs")), session=alice(),
        max_steps=1,
    )  # fmt: skip
    assert stopped.stopped == "max_steps" and stopped.memory_id is not None
    # a new session (as a restarted process has) resumes from the memory kept in the store
    resumed = model(reflection([], "audited: 2 docs"))
    result = plan_execute_reflect.run(
        "Continue the audit.", llm=resumed, session=alice(), memory_id=stopped.memory_id
    )
    assert result.answer == "audited: 2 docs" and result.memory_id != stopped.memory_id
    seen = planner_requests(resumed)[0].messages[1].content
    assert "user: Audit." in seen and "Max Steps Limit (1) Reached." in seen
    assert f"1. {SAMPLE}\n   result: 2 docs" in seen
    [found] = rows(
        store,
        "SELECT ?run ?memory WHERE { GRAPH ?g { ?run trails:continues ?memory } }",
        run=IRI(str(result.activity_iri)),
    )
    assert found["memory"] == stopped.memory_id


def test_a_stopped_run_is_resumed_by_a_new_run_on_the_same_session(store: Store) -> None:
    session = alice()
    stopped = plan_execute_reflect.run(
        "Audit.", llm=model(reflection([SAMPLE, "Count"]), finish("2 docs")), session=session,
        max_steps=1,
    )  # fmt: skip
    assert stopped.stopped == "max_steps"
    resumed = model(reflection([], "audited: 2 docs"))
    result = plan_execute_reflect.run("Continue the audit.", llm=resumed, session=session)
    assert result.answer == "audited: 2 docs"
    seen = planner_requests(resumed)[0].messages[1].content
    assert "Max Steps Limit (1) Reached." in seen
    assert f"1. {SAMPLE}\n   result: 2 docs" in seen
