"""Seed 003 (Plan-Execute-Reflect), rows 001-026, row by row: each test grades one row of
``tests/seed_rows/rows.json`` as the seed's text describes it, and reads the evidence back
from the store with SPARQL (bound parameters) where the run should leave some (the scene and
the reads are in ``_seed_003``; rows 027-042 are in ``test_seed_003_b``).

The running scene is the seed's own step example: ``index.sample`` samples documents from an
index. A scripted model answers the planner and the executor (whose pass's user message opens
with ``Goal:``) from two queues.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from tests.seed_rows._helpers import IRI, act, finish, rows
from tests.seed_rows._seed_003 import (
    PER,
    SAMPLE,
    alice,
    executor_requests,
    executor_runs,
    invocations,
    model,
    planner_requests,
    planner_turns,
    recorded_systems,
    reflection,
    register_index,
    run_facts,
)

from trails.agent import Session
from trails.agent.planners import plan_execute_reflect
from trails.agent.planners._templates import DEFAULT_PLANNER_PROMPT, DEFAULT_REFLECT_PROMPT
from trails.agent.planners.plan_execute_reflect import (
    EXECUTOR_RESPONSIBILITY,
    FINAL_RESULT_INSTRUCTIONS,
    PLANNER_PROMPT,
)
from trails.errors import UserError
from trails.prov.vocab import T
from trails.store import Store


@pytest.fixture
def index() -> list[str]:
    """``index.sample``; the list holds the indexes sampled (the registry is restored after)."""
    return register_index()


# -- 001: the components ------------------------------------------------------------------


@pytest.mark.seed_row("003-001")
def test_planner_executor_reflector_and_memory_each_leave_evidence(
    store: Store, index: list[str]
) -> None:
    client = model(
        [reflection([SAMPLE, "Summarise the sample"]), reflection(["Summarise the sample"]),
         reflection([], "my-index holds doc1 and doc2")],
        [act("index.sample", index="my-index"), finish("docs: my-index-doc1, my-index-doc2"),
         finish("two documents")],
    )  # fmt: skip
    session = alice()
    result = plan_execute_reflect.run("What is in my-index?", llm=client, session=session)
    assert (result.stopped, result.answer) == ("goal_achieved", "my-index holds doc1 and doc2")
    assert index == ["my-index"]  # the executor used the tool
    facts = run_facts(store, result.activity_iri)
    assert (facts["cls"], facts["stop"]) == (T.PlanExecuteReflectPlan, "goal_achieved")
    turns = planner_turns(store, result.activity_iri)
    assert len(turns) == 3 and all(t.get("plan") for t in turns)  # planner + 2 reflections
    passes = executor_runs(store, result.activity_iri)
    assert [p["goal"] for p in passes] == [SAMPLE, "Summarise the sample"]
    assert [c["capability"] for c in invocations(store, session.iri)] == ["index.sample"]
    # memory: the conversation holds the objective and the answer
    said = [(e.role, e.content) for e in session.history if e.role != "system"]
    assert said[0] == ("user", "What is in my-index?")
    assert said[-1] == ("assistant", "my-index holds doc1 and doc2")


# -- 002..005: the key fields' defaults ---------------------------------------------------


def _default(name: str) -> Any:
    return inspect.signature(plan_execute_reflect.run).parameters[name].default


@pytest.mark.seed_row("003-002")
def test_max_steps_defaults_to_20() -> None:
    assert _default("max_steps") == 20


@pytest.mark.seed_row("003-003")
def test_executor_max_iterations_defaults_to_20() -> None:
    assert _default("executor_max_iterations") == 20


@pytest.mark.seed_row("003-004")
def test_message_history_limit_defaults_to_10() -> None:
    assert _default("message_history_limit") == 10


@pytest.mark.seed_row("003-005")
def test_executor_message_history_limit_defaults_to_10() -> None:
    assert _default("executor_message_history_limit") == 10


# -- 006..010: limits enforced ------------------------------------------------------------


@pytest.mark.seed_row("003-006")
def test_max_steps_caps_the_executed_steps(store: Store) -> None:
    client = model(reflection(["again"]), finish("step done"))
    result = plan_execute_reflect.run("Loop.", llm=client, session=alice(), max_steps=2)
    assert result.stopped == "max_steps"
    assert [s.action for s in result.steps] == ["executor", "executor"]
    assert len(executor_requests(client)) == 2 and len(planner_requests(client)) == 3
    facts = run_facts(store, result.activity_iri)
    assert (facts["term"], facts["limit"], facts["observed"]) == (T.StepLimit, 2, 2)
    assert len(executor_runs(store, result.activity_iri)) == 2


@pytest.mark.seed_row("003-007")
def test_max_steps_answers_with_the_limit_message_and_how_to_continue(store: Store) -> None:
    client = model(reflection(["again"]), finish("step done"))
    session = alice()
    result = plan_execute_reflect.run("Loop.", llm=client, session=session, max_steps=2)
    answer = str(result.answer)
    assert answer.startswith("Max Steps Limit (2) Reached.")
    assert "1. again\n   result: step done\n2. again\n   result: step done" in answer
    assert "To continue, run again on the same session" in answer
    assert run_facts(store, result.activity_iri)["answer"] == answer  # the recorded answer
    assert session.history[-1].content == answer  # and the conversation's


@pytest.mark.seed_row("003-008")
def test_executor_max_iterations_caps_each_react_pass(store: Store, index: list[str]) -> None:
    client = model(
        [reflection(["Sample my-index until told to stop"]), reflection([], "gave up sampling")],
        act("index.sample", index="my-index"),
    )
    result = plan_execute_reflect.run(
        "Sample.", llm=client, session=alice(), executor_max_iterations=3
    )
    assert (result.stopped, result.answer) == ("goal_achieved", "gave up sampling")
    assert len(index) == 3 and len(executor_requests(client)) == 3
    inner = run_facts(store, result.steps[0].activity_iri)
    assert (inner["cls"], inner["stop"], inner["term"], inner["limit"]) == (
        T.ReActPlan, "max_steps", T.StepLimit, 3,
    )  # fmt: skip


@pytest.mark.seed_row("003-009")
def test_the_planner_sees_at_most_message_history_limit_entries(store: Store) -> None:
    session = alice()
    for i in range(6):
        session.history.append("user", f"old message {i}")
    client = model(reflection([], "done"))
    plan_execute_reflect.run("Go on.", llm=client, session=session, message_history_limit=2)
    [first] = planner_requests(client)
    text = first.messages[1].content
    assert "user: old message 4\nuser: old message 5" in text
    assert not any(f"old message {i}" in text for i in range(4))


@pytest.mark.seed_row("003-010")
def test_each_executor_pass_sees_at_most_executor_message_history_limit_entries(
    store: Store,
) -> None:
    session = alice()
    for i in range(6):
        session.history.append("user", f"old message {i}")
    client = model([reflection(["Step one"]), reflection([], "done")], finish("one done"))
    plan_execute_reflect.run(
        "Go on.", llm=client, session=session, executor_message_history_limit=2
    )
    [executor] = executor_requests(client)
    seen = [m.content for m in executor.messages if m.role != "system"]
    assert seen == ["old message 5", "Go on.", "Goal: Step one"]  # 2 entries before the pass
    assert any(e.content == "old message 0" for e in session.history)  # memory keeps all


# -- 011, 012, 040: memory ids ------------------------------------------------------------


@pytest.mark.seed_row("003-011")
def test_memory_id_continues_an_earlier_conversation(store: Store) -> None:
    session = alice()
    client = model([reflection([], "Q1 revenue was flat"), reflection([], "Q2 grew 5%")])
    first = plan_execute_reflect.run("Summarise Q1", llm=client, session=session)
    plan_execute_reflect.run("And Q2 compared to that?", llm=client, session=session)
    assert first.memory_id == session.iri
    # a new session (another process would do the same) continues it by its memory_id
    later = model(reflection([], "Q3"))
    third = plan_execute_reflect.run(
        "And Q3?", llm=later, session=alice(), memory_id=first.memory_id
    )
    shown = planner_requests(later)[0].messages[1].content
    assert "user: Summarise Q1\nassistant: Q1 revenue was flat" in shown
    assert "assistant: Q2 grew 5%" in shown
    [found] = rows(
        store,
        "SELECT ?run ?memory WHERE { GRAPH ?g { ?run trails:continues ?memory } }",
        run=IRI(str(third.activity_iri)),
    )
    assert found["memory"] == session.iri
    with pytest.raises(UserError, match="no conversation of 'did:local:bob'"):
        plan_execute_reflect.run(
            "Q4?", llm=later, session=Session(principal="did:local:bob"), memory_id=first.memory_id
        )


@pytest.mark.seed_row("003-012")
def test_interaction_and_executor_memory_ids_are_on_the_result_and_prov_iris(
    store: Store, index: list[str]
) -> None:
    client = model(
        [reflection([SAMPLE]), reflection([], "sampled")],
        [act("index.sample", index="my-index"), finish("two docs")],
    )
    session = alice()
    result = plan_execute_reflect.run("Sample.", llm=client, session=session)
    [step, _finish] = result.steps
    [executor] = executor_runs(store, result.activity_iri)
    # parent_interaction_id: the run; executor_agent_parent_interaction_id: the planner turn
    # that chose the step; executor_agent_memory_id: the executor run, in the session's graph
    assert executor["pass"] == step.activity_iri
    assert result.parent_interaction_id == result.activity_iri
    assert result.executor_agent_parent_interaction_id == step.activity_iri
    assert result.executor_agent_memory_id == result.memory_id == session.iri
    assert executor["completion"] == planner_turns(store, result.activity_iri)[0]["completion"]
    [call] = invocations(store, session.iri)
    assert (call["g"], call["pass"]) == (session.iri, step.activity_iri)


@pytest.mark.seed_row("003-040")
def test_the_output_names_the_response_memory_id_and_parent_interaction_id(store: Store) -> None:
    client = model([reflection(["Look"]), reflection([], "final result")], finish("seen"))
    session = alice()
    result = plan_execute_reflect.run("Go.", llm=client, session=session)
    assert (result.answer, result.strategy) == ("final result", "plan_execute_reflect")
    assert result.memory_id == session.iri
    assert result.parent_interaction_id == result.activity_iri is not None
    assert result.steps[0].activity_iri is not None
    [found] = rows(
        store,
        """SELECT ?run ?session ?principal WHERE { GRAPH ?session {
             ?run trails:inSession ?session ; prov:wasAssociatedWith/trails:principalId ?principal } }""",
        run=IRI(result.parent_interaction_id),
    )
    assert (found["session"], found["principal"]) == (result.memory_id, "did:local:alice")


# -- 013..026: prompts and templates ------------------------------------------------------


@pytest.mark.seed_row("003-013")
def test_planner_prompt_template_substitutes_parameters(store: Store, index: list[str]) -> None:
    client = model(reflection([], "done"))
    plan_execute_reflect.run(
        "Audit the index.", llm=client, session=alice(), tools=["index.sample"],
        planner_prompt_template=(
            "TOOLS=${parameters.tools_prompt}|P=${parameters.planner_prompt}"
            "|OBJ=${parameters.user_prompt}|TEAM=${parameters.team}"
        ),
        parameters={"team": "search"},
    )  # fmt: skip
    [first] = planner_requests(client)
    assert first.messages[1].content == (
        "TOOLS=- index.sample: Sample documents from an index.\n    index: str (required)"
        f"|P={DEFAULT_PLANNER_PROMPT}|OBJ=Audit the index.|TEAM=search"
    )


@pytest.mark.seed_row("003-014")
def test_reflect_prompt_template_is_used_after_each_executed_step(store: Store) -> None:
    client = model(
        [reflection(["s1", "s2"]), reflection(["s2"]), reflection([], "done")],
        [finish("r1"), finish("r2")],
    )
    plan_execute_reflect.run(
        "Go.", llm=client, session=alice(),
        reflect_prompt_template="PLAN=${parameters.steps}|DONE=${parameters.completed_steps}|R=${parameters.reflect_prompt}",
    )  # fmt: skip
    first, second, third = (r.messages[1].content for r in planner_requests(client))
    assert not first.startswith("PLAN=")  # the first turn is a planning turn
    assert second == f"PLAN=- s1\n- s2|DONE=1. s1\n   result: r1|R={DEFAULT_REFLECT_PROMPT}"
    assert third == (
        f"PLAN=- s2|DONE=1. s1\n   result: r1\n2. s2\n   result: r2|R={DEFAULT_REFLECT_PROMPT}"
    )


@pytest.mark.seed_row("003-015")
def test_planner_with_history_template_is_used_when_history_exists(store: Store) -> None:
    template = "HIST=${parameters.chat_history}|OBJ=${parameters.user_prompt}"
    with_history = alice()
    with_history.history.append("user", "earlier question")
    client = model(reflection([], "done"))
    plan_execute_reflect.run(
        "OBJ", llm=client, session=with_history, planner_with_history_template=template
    )
    assert planner_requests(client)[0].messages[1].content == "HIST=user: earlier question|OBJ=OBJ"
    fresh = model(reflection([], "done"))
    plan_execute_reflect.run(
        "OBJ", llm=fresh, session=alice(), planner_with_history_template=template
    )
    assert not planner_requests(fresh)[0].messages[1].content.startswith("HIST=")


@pytest.mark.seed_row("003-016")
def test_an_unknown_template_parameter_is_refused_before_anything_runs(store: Store) -> None:
    session = alice()
    client = model(reflection([], "done"))
    with pytest.raises(UserError, match="nope"):
        plan_execute_reflect.run(
            "Go.", llm=client, session=session, planner_prompt_template="${parameters.nope}"
        )
    assert client.adapter.calls == 0 and not session.opened  # nothing asked, nothing recorded


@pytest.mark.seed_row("003-017")
def test_system_prompt_replaces_the_planners(store: Store) -> None:
    client = model(reflection([], "done"))
    session = alice()
    plan_execute_reflect.run("Go.", llm=client, session=session, system_prompt="You plan audits.")
    assert planner_requests(client)[0].messages[0].content == "You plan audits."
    assert recorded_systems(store, session.iri) == ["You plan audits."]
    default = model(reflection([], "done"))
    plan_execute_reflect.run("Go.", llm=default, session=alice())
    assert planner_requests(default)[0].messages[0].content == PLANNER_PROMPT


SEED_EXECUTOR_RESPONSIBILITY = """\
Your job is to execute the given instruction provided by the planner and return a complete, \
actionable result.

Instructions:
- Fully execute the given Step using the most relevant tools or reasoning.
- Include all relevant raw tool outputs (e.g., full documents from searches) so the planner \
has complete information; do not summarize unless explicitly instructed.
- Base your execution and conclusions only on the data and tool outputs available; do not \
rely on unstated knowledge or external facts.
- If the available data is insufficient to complete the Step, summarize what was obtained so \
far and clearly state the additional information or access required to proceed (do not guess).
- If unable to complete the Step, clearly explain what went wrong and what is needed to proceed.
- Avoid making assumptions and relying on implicit knowledge.
- Your response must be self-contained and ready for the planner to use without modification. \
Never end with a question.
- Break complex searches into simpler queries when appropriate."""


@pytest.mark.seed_row("003-018")
def test_executor_system_prompt_defaults_to_executor_responsibility(store: Store) -> None:
    assert _default("executor_system_prompt") is None  # None: EXECUTOR_RESPONSIBILITY
    assert EXECUTOR_RESPONSIBILITY.startswith("You are a precise and reliable executor agent")
    assert EXECUTOR_RESPONSIBILITY.endswith(SEED_EXECUTOR_RESPONSIBILITY)
    session = alice()
    client = model([reflection(["Look"]), reflection([], "done")], finish("seen"))
    plan_execute_reflect.run("Go.", llm=client, session=session)
    assert recorded_systems(store, session.iri)[1].startswith(EXECUTOR_RESPONSIBILITY)
    custom = model([reflection(["Look"]), reflection([], "done")], finish("seen"))
    plan_execute_reflect.run(
        "Go.", llm=custom, session=alice(), executor_system_prompt="Quote every figure."
    )
    [executor] = executor_requests(custom)
    assert executor.messages[0].content.startswith("Quote every figure.")
    assert EXECUTOR_RESPONSIBILITY not in executor.messages[0].content


@pytest.mark.seed_row("003-019")
def test_planner_prompt_and_reflect_prompt_overrides(store: Store) -> None:
    client = model([reflection(["s1"]), reflection([], "done")], finish("r1"))
    plan_execute_reflect.run(
        "Go.", llm=client, session=alice(),
        planner_prompt="Plan in at most two steps.", reflect_prompt="Finish if s1 worked.",
    )  # fmt: skip
    first, second = (r.messages[1].content for r in planner_requests(client))
    assert "Plan in at most two steps." in first and DEFAULT_PLANNER_PROMPT not in first
    assert "Finish if s1 worked." in second and DEFAULT_REFLECT_PROMPT not in second


@pytest.mark.seed_row("003-020")
def test_the_default_planner_and_reflect_prompts_are_the_seeds(store: Store) -> None:
    assert DEFAULT_PLANNER_PROMPT == (
        "For the given objective, generate a step-by-step plan composed of simple, "
        "self-contained steps. The final step should directly yield the final answer. "
        "Avoid unnecessary steps."
    )
    assert DEFAULT_REFLECT_PROMPT == (
        "Update your plan based on the latest step results. If the task is complete, return "
        "the final answer. Otherwise, include only the remaining steps. Do not repeat "
        "previously completed steps."
    )
    client = model([reflection(["s1"]), reflection([], "done")], finish("r1"))
    plan_execute_reflect.run("Go.", llm=client, session=alice())
    first, second = (r.messages[1].content for r in planner_requests(client))
    assert DEFAULT_PLANNER_PROMPT in first and DEFAULT_REFLECT_PROMPT in second


SEED_PLANNER_RESPONSIBILITY = """\
You are a thoughtful and analytical planner agent in a plan-execute-reflect framework. Your \
job is to design a clear, step-by-step plan for a given objective.

Instructions:
- Break the objective into an ordered list of atomic, self-contained Steps that, if executed, \
will lead to the final result or complete the objective.
- Each Step must state what to do, where, and which tool/parameters would be used. You do not \
execute tools, only reference them for planning.
- Use only the provided tools; do not invent or assume tools. If no suitable tool applies, use \
reasoning or observations instead.
- Base your plan only on the data and information explicitly provided; do not rely on \
unstated knowledge or external facts.
- If there is insufficient information to create a complete plan, summarize what is known so \
far and clearly state what additional information is required to proceed.
- Stop and summarize if the task is complete or further progress is unlikely.
- Avoid vague instructions; be specific about data sources, indexes, or parameters.
- Never make assumptions or rely on implicit knowledge.
- Respond only in JSON format.

Step examples:
Good example: "Use Tool to sample documents from index: 'my-index'"
Bad example: "Use Tool to sample documents from each index"
Bad example: "Use Tool to sample documents from all indices\""""

SEED_RESPONSE_FORMAT_RULES = """\
Important rules for the response:
1. Do not use commas within individual steps
2. Do not add any content before or after the JSON
3. Only respond with a pure JSON object"""


@pytest.mark.seed_row("003-021")
def test_the_planner_system_prompt_is_the_seeds_three_parts(store: Store) -> None:
    assert PLANNER_PROMPT.startswith(SEED_PLANNER_RESPONSIBILITY)
    assert "Response Instructions:\nOnly respond in JSON format." in PLANNER_PROMPT
    assert '{\n\t"steps": array[string],\n\t"result": string\n}' in PLANNER_PROMPT
    assert SEED_RESPONSE_FORMAT_RULES in PLANNER_PROMPT
    assert PLANNER_PROMPT.endswith(FINAL_RESULT_INSTRUCTIONS)
    assert FINAL_RESULT_INSTRUCTIONS.startswith(
        "When you deliver your final result, include a comprehensive report."
    )
    session = alice()
    plan_execute_reflect.run("Go.", llm=model(reflection([], "done")), session=session)
    assert recorded_systems(store, session.iri) == [PLANNER_PROMPT]


def _slots(text: str, *needles: str) -> list[int]:
    return [text.index(n) for n in needles]


@pytest.mark.seed_row("003-022")
def test_the_default_planner_template_has_the_seeds_slots_in_order(
    store: Store, index: list[str]
) -> None:
    client = model(reflection([], "done"))
    plan_execute_reflect.run(
        "Audit the index.", llm=client, session=alice(), tools=["index.sample"]
    )
    text = planner_requests(client)[0].messages[1].content
    found = _slots(text, "- index.sample: Sample documents", DEFAULT_PLANNER_PROMPT,
                   "Objective: Audit the index.", "Remember: respond only")  # fmt: skip
    assert found == sorted(found)


@pytest.mark.seed_row("003-023")
def test_the_default_reflect_template_shows_the_plan_and_the_completed_steps(
    store: Store, index: list[str]
) -> None:
    client = model(
        [reflection([SAMPLE, "Count them"]), reflection([], "done")],
        [act("index.sample", index="my-index"), finish("2 documents")],
    )
    plan_execute_reflect.run("Count docs.", llm=client, session=alice(), tools=["index.sample"])
    text = planner_requests(client)[1].messages[1].content
    found = _slots(text, "- index.sample:", "Objective: Count docs.", "Original plan:",
                   f"- {SAMPLE}\n- Count them", f"1. {SAMPLE}\n   result: 2 documents",
                   DEFAULT_REFLECT_PROMPT, "Remember: respond only")  # fmt: skip
    assert found == sorted(found)


@pytest.mark.seed_row("003-024", differs=PER)
def test_earlier_conversation_is_shown_as_history_not_as_completed_steps(store: Store) -> None:
    session = alice()
    first = model(reflection([], "Q1 revenue was flat"))
    plan_execute_reflect.run("Summarise Q1", llm=first, session=session)
    second = model(reflection([], "Q2 grew"))
    plan_execute_reflect.run("And Q2?", llm=second, session=session)
    text = planner_requests(second)[0].messages[1].content
    assert (
        "Earlier conversation (most recent last):\nuser: Summarise Q1\nassistant: Q1 revenue was flat"
        in text
    )
    assert "Completed steps" not in text  # this run's completed steps are its own
    # a template that wants the seed's wording gets the same lines under its own heading
    third = model(reflection([], "Q3"))
    plan_execute_reflect.run(
        "And Q3?", llm=third, session=session,
        planner_with_history_template=(
            "Objective: ```${parameters.user_prompt}```\n\nYou have currently executed the "
            "following steps:\n[${parameters.chat_history}]"
        ),
    )  # fmt: skip
    assert "executed the following steps:\n[user: Summarise Q1\n" in (
        planner_requests(third)[0].messages[1].content
    )


@pytest.mark.seed_row("003-025")
def test_inject_datetime_with_a_format_reaches_the_planner_system_prompt(store: Store) -> None:
    from datetime import UTC, datetime

    session = alice()
    client = model(reflection([], "done"))
    plan_execute_reflect.run(
        "Go.", llm=client, session=session, inject_datetime=True, datetime_format="%Y/%m"
    )
    [system] = recorded_systems(store, session.iri)
    assert system.startswith(PLANNER_PROMPT)
    stamp = system.rsplit("Current date and time: ", 1)[1]
    assert datetime.strptime(stamp, "%Y/%m").year == datetime.now(UTC).year
    plain = model(reflection([], "done"))
    plan_execute_reflect.run("Go.", llm=plain, session=alice())
    assert "Current date and time" not in planner_requests(plain)[0].messages[0].content


@pytest.mark.seed_row("003-026")
def test_inject_datetime_also_reaches_the_executor_system_prompt(store: Store) -> None:
    session = alice()
    client = model([reflection(["Look"]), reflection([], "done")], finish("seen"))
    plan_execute_reflect.run(
        "Go.", llm=client, session=session, inject_datetime=True, datetime_format="year %Y"
    )
    planner, executor, _ = recorded_systems(store, session.iri)
    assert executor.startswith(EXECUTOR_RESPONSIBILITY)
    assert (
        "Current date and time: year 2" in executor and "Current date and time: year 2" in planner
    )
