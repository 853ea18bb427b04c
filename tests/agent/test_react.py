"""ReAct: the seed's Quickstart, loop semantics, and the provenance of a run."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import pytest

from trails.agent import PlanResult, PlanStep, Session
from trails.agent.planners import react
from trails.errors import StoreError, UserError
from trails.kernel import Context
from trails.llm import LLMClient, ModelServerError, Response
from trails.prov import Recorder
from trails.prov.content import content_graph
from trails.prov.vocab import T
from trails.store import Quad, Store
from trails.testing import assert_conforms, assert_prov_readable


def test_quickstart_runs_as_documented(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    from trails import capability
    from trails.agent import Session
    from trails.agent.planners import react
    from trails.llm import LLMClient

    @capability(id="notes.search", description="Search notes by tag.")
    def search(ctx, tag: str) -> dict:  # type: ignore[no-untyped-def]
        return {"hits": ["n1", "n2"]}

    # Pick any provider — same API:
    # client = LLMClient.ollama(model="qwen3:8b")          # local, free
    # client = LLMClient.anthropic(model="claude-sonnet-4-5")  # cloud
    client = LLMClient.mock(response="finish")  # tests

    sess = Session(principal="did:local:alice")
    result = react.run("Find urgent notes.", llm=client, session=sess)
    print(result.answer, "in", len(result.steps), "steps")

    assert capsys.readouterr().out == " in 1 steps\n"
    assert result.stopped == "goal_achieved"
    assert result.strategy == "react"
    assert [s.action for s in result.steps] == ["finish"]
    assert_conforms(store)
    assert_prov_readable(store, activities=3, agents=1)


def test_search_then_finish(
    store: Store, notes: dict[str, list[Any]], reply: Any, prov: Any
) -> None:
    client = LLMClient.mock(
        response=[
            "Let me look.\n" + reply("notes.search", {"tag": "urgent"}) + "\nthanks",
            reply("finish", final_answer="2 urgent notes: n1, n2"),
        ]
    )
    session = Session(principal="did:local:alice")
    result = react.run("Find urgent notes.", llm=client, session=session)

    assert isinstance(result, PlanResult)
    assert result.stopped == "goal_achieved"
    assert result.answer == "2 urgent notes: n1, n2"
    assert result.error is None
    assert [(s.action, s.action_input, s.observation) for s in result.steps] == [
        ("notes.search", {"tag": "urgent"}, {"hits": ["n1", "n2"]}),
        ("finish", {}, None),
    ]
    assert notes["search"] == ["urgent"]
    # history: system prompt, goal, assistant, observation, assistant
    roles = [e.role for e in session.history]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert session.history[0].pinned and "notes.search" in session.history[0].content
    assert session.history[3].content == 'Observation: {"hits": ["n1", "n2"]}'
    # the envelope of the invocation is on the session
    assert [(r.capability, r.args, r.status) for r in session.invocations] == [
        ("notes.search", {"tag": "urgent"}, "ok")
    ]
    # the second request the model saw carries the observation
    last = client.adapter.requests[-1]
    assert last.messages[-1].content == 'Observation: {"hits": ["n1", "n2"]}'
    # step activities: the invocation, then the finishing completion
    completions = prov.completions(result.activity_iri)
    assert [c["step"] for c in completions] == [0, 1]
    assert result.steps[0].activity_iri == session.invocations[0].activity
    assert result.steps[1].activity_iri == completions[1]["completion"]
    assert_conforms(store)


def test_trajectory_is_reproduced_by_sparql(
    store: Store, notes: dict[str, list[Any]], reply: Any, prov: Any
) -> None:
    client = LLMClient.mock(
        response=[
            reply("notes.search", {"tag": "urgent"}),
            reply("notes.tag", {"note": "n1", "label": "seen"}),
            reply("notes.search", {"tag": 7}),  # invalid: recorded, observed as an error
            reply("finish", final_answer="done"),
        ]
    )
    session = Session(principal="did:local:alice")
    result = react.run("Tag urgent notes.", llm=client, session=session)
    assert result.stopped == "goal_achieved"

    rows = prov.trajectory(result.activity_iri)
    assert [(r["step"], r["action"], r["input"], r["status"]) for r in rows] == [
        (0, "notes.search", {"tag": "urgent"}, "ok"),
        (1, "notes.tag", {"note": "n1", "label": "seen"}, "ok"),
        (2, "notes.search", {"tag": 7}, "invalid"),
    ]
    assert rows[0]["output"] == result.steps[0].observation == {"hits": ["n1", "n2"]}
    assert rows[1]["output"] == result.steps[1].observation == "tagged n1 seen"
    assert "output" not in rows[2]
    assert result.steps[2].observation == f"error: {rows[2]['error']}"
    # the plan run: class, goal, principal, parent session, stop reason
    run = prov.run(result.activity_iri)
    assert run["cls"] == T.ReActPlan
    assert run["goal"] == "Tag urgent notes."
    assert run["principal"] == "did:local:alice"
    assert run["parent"] == run["session"] == session.iri
    assert run["stop"] == "goal_achieved" and run["answer"] == "done"
    assert prov.termination(result.activity_iri) is None
    assert_conforms(store)
    assert_prov_readable(store, activities={result.activity_iri, session.iri})


def test_tool_errors_become_observations(store: Store, reply: Any, prov: Any) -> None:
    from trails import capability

    @capability(id="flaky", description="Always fails.")
    def flaky() -> str:
        raise RuntimeError("disk on fire")

    client = LLMClient.mock(
        response=[
            reply("nope.missing"),
            reply("flaky"),
            reply("finish", final_answer="gave up politely"),
        ]
    )
    result = react.run(
        "Try things.", llm=client, session=Session(principal="did:local:alice"), tools=None
    )
    assert result.stopped == "goal_achieved"
    first, second = result.steps[0].observation, result.steps[1].observation
    assert first.startswith("error: ") and "nope.missing" in first
    assert second.startswith("error: ") and "disk on fire" in second
    # the model saw both errors
    seen = [m.content for m in client.adapter.requests[-1].messages if m.role == "user"]
    assert seen[-2:] == [f"Observation: {first}", f"Observation: {second}"]
    # the failing handler is recorded, and so is the refused call of the unknown id
    trajectory = prov.trajectory(result.activity_iri)
    assert [(r["action"], r["status"]) for r in trajectory] == [
        ("nope.missing", "refused"),
        ("flaky", "error"),
    ]
    assert trajectory[0]["error"].startswith("unknown capability 'nope.missing'")
    assert_conforms(store)


def test_action_outside_the_scoped_tools_is_refused(
    store: Store, notes: dict[str, list[Any]], reply: Any, prov: Any
) -> None:
    client = LLMClient.mock(response=[reply("notes.tag", {"note": "n1", "label": "x"}), "finish"])
    result = react.run(
        "Search only.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tools=["notes.search"],
    )
    assert result.steps[0].observation.startswith("error: capability 'notes.tag' is not among")
    assert notes["tag"] == []  # nothing ran; the refusal is on record
    assert [
        (r["action"], r["status"], r["input"]) for r in prov.trajectory(result.activity_iri)
    ] == [("notes.tag", "refused", {"note": "n1", "label": "x"})]


def test_malformed_reply_gets_one_nudge(store: Store, notes: Any, reply: Any) -> None:
    client = LLMClient.mock(
        response=['{"thought": "I should search", "action": ', reply("finish", final_answer="ok")]
    )
    session = Session(principal="did:local:alice")
    result = react.run("Find urgent notes.", llm=client, session=session)
    assert result.stopped == "goal_achieved" and result.answer == "ok"
    nudge = client.adapter.requests[1].messages[-1]
    assert nudge.role == "user" and "no JSON object found" in nudge.content
    assert "```json" in nudge.content


def test_two_malformed_replies_in_a_row_stop_with_error(
    store: Store, notes: Any, prov: Any
) -> None:
    client = LLMClient.mock(response=['```json\n{"thought": "hm",\n```', '{"thought": "hm"}'])
    result = react.run(
        "Find urgent notes.", llm=client, session=Session(principal="did:local:alice")
    )
    assert result.stopped == "error"
    assert result.error is not None and "'action'" in result.error
    assert result.steps == []
    assert client.adapter.calls == 2
    term = prov.termination(result.activity_iri)
    assert term is not None and term["cls"] == T.Error and "'action'" in term["reason"]
    assert prov.run(result.activity_iri)["error"] == result.error
    assert_conforms(store)


def test_max_steps_counts_the_retry(store: Store, notes: Any, reply: Any, prov: Any) -> None:
    client = LLMClient.mock(
        response=[
            '{"oops": ',
            reply("notes.search", {"tag": "urgent"}),
            reply("finish", final_answer="x"),
        ]
    )
    result = react.run(
        "Find urgent notes.", llm=client, session=Session(principal="did:local:alice"), max_steps=2
    )
    assert result.stopped == "max_steps"
    assert client.adapter.calls == 2
    assert [s.action for s in result.steps] == ["notes.search"]
    # the best-effort answer is the last observation, JSON-encoded
    assert result.answer == '{"hits": ["n1", "n2"]}'
    assert result.error is None
    term = prov.termination(result.activity_iri)
    assert term == {"cls": T.StepLimit, "reason": "max_steps", "limit": 2.0, "observed": 2.0}
    assert prov.run(result.activity_iri)["stop"] == "max_steps"
    assert_conforms(store)


def test_provider_error_stops_with_error(store: Store, notes: Any, reply: Any, prov: Any) -> None:
    client = LLMClient.mock(
        response=[
            reply("notes.search", {"tag": "urgent"}),
            ModelServerError("upstream 503", provider="mock", status=503),
        ]
    )
    result = react.run(
        "Find urgent notes.", llm=client, session=Session(principal="did:local:alice")
    )
    assert result.stopped == "error"
    assert result.error is not None and "upstream 503" in result.error
    assert len(result.steps) == 1
    assert result.answer == '{"hits": ["n1", "n2"]}'
    term = prov.termination(result.activity_iri)
    assert term is not None and term["cls"] == T.Error and "upstream 503" in term["reason"]
    assert_conforms(store)


def test_principal_budget_refusal_is_a_budget_stop(store: Store, notes: Any, prov: Any) -> None:
    from trails.kernel import default_tracker

    default_tracker().set_budget("did:local:alice", tokens=0)
    client = LLMClient.mock(response="finish")
    result = react.run(
        "Find urgent notes.", llm=client, session=Session(principal="did:local:alice")
    )
    assert result.stopped == "max_tokens"
    assert client.adapter.calls == 0
    term = prov.termination(result.activity_iri)
    assert term is not None and term["cls"] == T.BudgetBreach and term["reason"] == "max_tokens"


def test_with_ctx_cost_and_provenance_follow_the_caller(
    recorder: Recorder, notes: Any, reply: Any, prov: Any
) -> None:
    from trails.kernel import default_tracker

    caller = Context.open("did:local:bob", recorder=recorder)
    parent = recorder.minter.activity()
    session = Session(principal="did:local:alice")
    client = LLMClient.mock(response=[reply("notes.search", {"tag": "urgent"}), "finish"])
    result = react.run(
        "Find urgent notes.", llm=client, session=session, ctx=caller.child(parent=parent)
    )
    assert result.stopped == "goal_achieved"
    run = prov.run(result.activity_iri)
    assert run["parent"] == parent
    assert run["session"] == caller.session
    assert run["principal"] == "did:local:bob"
    assert not session.opened  # the session's own context was never needed
    assert {e.principal for e in default_tracker().envelopes()} == {"did:local:bob"}
    assert [r.capability for r in session.invocations] == ["notes.search"]


def test_session_reuse_continues_the_conversation(
    store: Store, notes: Any, reply: Any, prov: Any
) -> None:
    session = Session(principal="did:local:alice")
    client = LLMClient.mock(
        response=[
            reply("notes.search", {"tag": "urgent"}),
            reply("finish", final_answer="n1, n2"),
            reply("finish", final_answer="n1 first"),
        ]
    )
    first = react.run("Find urgent notes.", llm=client, session=session)
    second = react.run("Which one first?", llm=client, session=session)
    assert (first.answer, second.answer) == ("n1, n2", "n1 first")
    sent = client.adapter.requests[-1].messages
    assert next(m.content for m in sent if m.role == "user") == "Goal: Find urgent notes."
    assert sent[-1].content == "Goal: Which one first?"
    assert sent[0].role == "system" and "Which one first?" in sent[0].content
    assert sum(1 for m in sent if m.role == "system") == 1
    r1, r2 = prov.run(first.activity_iri), prov.run(second.activity_iri)
    assert r1["session"] == r2["session"] == session.iri
    assert store.graphs() == sorted(
        [session.iri, content_graph(session.iri), "urn:trails:graph:catalogue"]
    )


class _FailingTerminations:
    """A store that refuses writes holding a termination (delegates everything else)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    def write(self, quads: Iterable[Quad], *, remove: Iterable[Quad] = ()) -> None:
        quads = list(quads)
        if any(q.predicate == T.wasTerminatedBy for q in quads):
            raise StoreError("disk full")
        self.inner.write(quads, remove=remove)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_failed_termination_write_is_logged_and_swallowed(
    store: Store, notes: Any, reply: Any, prov: Any, caplog: pytest.LogCaptureFixture
) -> None:
    session = Session(principal="did:local:alice", recorder=Recorder(_FailingTerminations(store)))  # type: ignore[arg-type]
    client = LLMClient.mock(response=reply("notes.search", {"tag": "urgent"}))
    with caplog.at_level(logging.WARNING, logger="trails.agent"):
        result = react.run("Loop.", llm=client, session=session, max_steps=1)
    assert result.stopped == "max_steps"
    assert "could not record the termination" in caplog.text
    assert prov.termination(result.activity_iri) is None
    assert prov.run(result.activity_iri)["stop"] == "max_steps"  # the end is still recorded
    assert_conforms(store)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"max_steps": 0}, "max_steps"),
        ({"max_steps": True}, "max_steps"),
        ({"max_cost_usd": -1}, "max_cost_usd"),
        ({"max_tokens": "many"}, "max_tokens"),
        ({"max_wall_time_s": -0.5}, "max_wall_time_s"),
        ({"max_tokens_per_step": 0}, "max_tokens_per_call"),
        ({"max_tokens_per_step": 10, "max_tokens_per_call": 20}, "pass only one"),
        ({"tools": True}, "bool"),
        ({"tool_filter": 3}, "tool_filter"),
    ],
)
def test_bad_arguments_are_named_and_record_nothing(
    store: Store, kwargs: dict[str, Any], needle: str
) -> None:
    client = LLMClient.mock(response="finish")
    with pytest.raises(UserError, match=needle):
        react.run("Goal.", llm=client, session=Session(principal="did:local:alice"), **kwargs)
    assert store.graphs() == []


def test_bad_goal_llm_or_session(store: Store) -> None:
    client = LLMClient.mock(response="finish")
    session = Session(principal="did:local:alice")
    with pytest.raises(UserError, match="goal"):
        react.run("  ", llm=client, session=session)
    with pytest.raises(UserError, match="llm="):
        react.run("Goal.", llm=object(), session=session)
    with pytest.raises(UserError, match="session="):
        react.run("Goal.", llm=client, session="alice")  # type: ignore[arg-type]
    assert store.graphs() == []


def test_plan_step_defaults() -> None:
    step = PlanStep("think", "notes.search")
    assert (step.action_input, step.observation, step.activity_iri) == ({}, None, None)
    assert PlanStep("a", "b").action_input is not step.action_input
    result = PlanResult("x", [], "goal_achieved")
    assert (result.error, result.strategy) == (None, "react")


def test_max_tokens_per_step_reaches_the_model(store: Store) -> None:
    client = LLMClient.mock(response="finish")
    react.run(
        "Goal.",
        llm=client,
        session=Session(principal="did:local:alice"),
        max_tokens_per_step=77,
        temperature=0.5,
    )
    request = client.adapter.requests[0]
    assert (request.max_tokens, request.temperature) == (77, 0.5)


def test_response_usd_is_recorded_on_the_completion(store: Store, prov: Any) -> None:
    client = LLMClient.mock(response=[Response(text="finish", model="m", usd=0.01)])
    result = react.run("Goal.", llm=client, session=Session(principal="did:local:alice"))
    assert result.stopped == "goal_achieved"
    assert len(prov.completions(result.activity_iri)) == 1


def test_policy_denial_is_an_observation(
    recorder: Recorder, notes: Any, reply: Any, prov: Any
) -> None:
    from trails.kernel import Decision

    class NoWrites:
        name = "no-writes"

        def decide(self, spec: Any, args: dict[str, Any], ctx: Context) -> Decision:
            return Decision("deny", "read-only session") if spec.side_effects else Decision("allow")

    caller = Context.open("did:local:alice", recorder=recorder, policy=NoWrites())
    client = LLMClient.mock(
        response=[
            reply("notes.tag", {"note": "n1", "label": "x"}),
            reply("finish", final_answer="no"),
        ]
    )
    session = Session(principal="did:local:alice")
    result = react.run("Tag n1.", llm=client, session=session, ctx=caller)
    assert result.stopped == "goal_achieved"
    observation = result.steps[0].observation
    assert observation == "error: policy denied 'notes.tag': read-only session"
    assert notes["tag"] == [] and session.invocations == []
    # nothing was invoked, so the step points at the completion that chose it
    assert result.steps[0].activity_iri == prov.completions(result.activity_iri)[0]["completion"]
    assert_conforms(recorder.store)
