"""ReplayLLM and rerun: recorded runs as regression tests that fail closed."""

from __future__ import annotations

import pytest
from replay_support import Tools, quads, react_session

from trails.agent import Session
from trails.errors import ReplayMismatch, SessionError
from trails.kernel import capability, unregister
from trails.llm import LLMClient
from trails.store import Store
from trails.testing.replay import ReplayLLM
from trails.testing.rerun import compare, rerun, trajectory


@pytest.mark.parametrize("capabilities", ["live", "recorded"])
def test_rerun_of_every_planner_is_identical(
    recorded: Session, store: Store, tools: Tools, capabilities: str
) -> None:
    before = quads(store)
    tools.calls.clear()
    report = rerun(str(recorded.iri), store=store, capabilities=capabilities)  # type: ignore[arg-type]

    assert report.identical, report.describe()
    assert report.mismatch is None
    assert len(report.rerun) == len(report.recorded) > 0
    assert "identical" in report.describe()
    assert quads(store) == before  # the re-execution recorded into a scratch store
    if capabilities == "recorded":
        assert tools.calls == []  # nothing live ran
    else:
        assert tools.calls


def test_replay_llm_answers_recorded_requests_and_fails_closed(store: Store, tools: Tools) -> None:
    session = react_session(store)
    session.persist()
    llm = ReplayLLM.from_session(str(session.iri), store=store)
    first = llm.adapter.recorded[0]
    reply = llm.complete(first.messages, max_tokens=first.params["max_tokens"])
    assert reply.text == first.text and reply.usd == first.usd

    changed = [dict(m) for m in first.messages]
    changed[1]["content"] += " (changed)"
    fresh = ReplayLLM.from_session(str(session.iri), store=store)  # the changed call is #0
    with pytest.raises(ReplayMismatch) as err:
        fresh.complete(changed, max_tokens=first.params["max_tokens"])
    exc = err.value
    assert exc.nearest == first.activity
    assert exc.differing is not None and exc.differing.startswith("message #1 (user) differs")
    assert "(changed)" in str(exc) and first.activity in str(exc)


def test_replay_llm_names_the_step_that_asked(store: Store, tools: Tools) -> None:
    session = react_session(store)
    session.persist()
    llm = ReplayLLM.from_session(str(session.iri), store=store)
    fresh = Session.new(strategy="react", principal="did:example:zed", store=store)
    with pytest.raises(ReplayMismatch, match="step 0") as err:
        fresh.run("A goal nobody recorded", llm=llm, max_steps=2)
    assert err.value.step == 0
    assert "message #0 (system)" in str(err.value) or "message #1 (user)" in str(err.value)


def test_a_changed_capability_result_is_caught_at_its_step(store: Store, tools: Tools) -> None:
    from replay_support import plan_session

    session = plan_session(store)
    session.persist()
    tools.weather = "🌧 9 °C"  # the capability under test now answers differently

    report = rerun(str(session.iri), store=store)

    d = report.divergence
    assert d is not None and d.field == "observation", report.describe()
    assert d.recorded is not None and d.rerun is not None
    assert d.recorded.action == d.rerun.action == "weather.now"
    assert d.recorded.kind == "invocation" and d.recorded.step == 1
    assert "☀ 23 °C" in (d.recorded.observation or "")
    assert "🌧 9 °C" in (d.rerun.observation or "")
    text = report.describe()
    assert "DIVERGED" in text and "🌧" in text and "☀" in text


def test_a_changed_prompt_is_caught_at_the_first_completion(store: Store, tools: Tools) -> None:
    session = react_session(store)
    session.persist()

    @capability(id="kb.lookup", description="Look a term up (new wording).")
    def lookup(term: str) -> dict[str, str]:
        return {"term": term}

    report = rerun(str(session.iri), store=store)
    d = report.divergence
    assert d is not None and d.index == 0 and d.field == "inputs", report.describe()
    assert d.recorded is not None and d.recorded.kind == "completion"
    assert report.mismatch is not None
    assert "step 0" in report.mismatch and "message #0 (system)" in report.mismatch
    # the re-registered capability moved to the end of the catalogue: the tool list differs
    # where the recording listed kb.lookup (the excerpt around it depends on what else is registered)
    assert "differs at character" in report.mismatch
    assert "kb.lookup: Look a term up in the knowledge base." in report.mismatch


def test_a_recording_with_a_failed_step_reruns_to_the_same_failure(
    store: Store, tools: Tools
) -> None:
    from replay_support import turn

    from trails.llm import ModelServerError

    client = LLMClient.mock([turn("kb.lookup", {"term": "q"}), ModelServerError("overloaded")])
    session = Session.new(strategy="react", principal="did:example:fay", store=store, llm=client)
    result = session.run("Go")
    assert result.stopped == "error"
    session.persist()
    report = rerun(str(session.iri), store=store)
    assert report.identical, report.describe()
    assert report.results[0].stopped == "error" and "overloaded" in (report.results[0].error or "")


def test_recorded_mode_needs_the_capabilities_registered(store: Store, tools: Tools) -> None:
    session = react_session(store)
    session.persist()
    unregister("kb.fail")
    with pytest.raises(SessionError, match=r"kb\.fail registered"):
        rerun(str(session.iri), store=store, capabilities="recorded")


def test_compare_reports_missing_and_extra_activities(store: Store, tools: Tools) -> None:
    a = react_session(store)
    b = react_session(store)
    left, right = trajectory(store, str(a.iri)), trajectory(store, str(b.iri))
    assert compare(left, right) is None
    missing = compare(left, right[:-1])
    assert missing is not None and missing.field == "missing" and missing.rerun is None
    extra = compare(left[:-1], right)
    assert extra is not None and extra.field == "extra" and extra.recorded is None


def test_from_session_on_bad_input(store: Store) -> None:
    with pytest.raises(SessionError, match="names no session"):
        ReplayLLM.from_session("urn:trails:session:none", store=store)
    empty = Session(principal="did:example:gus", store=store)
    empty.persist()
    with pytest.raises(SessionError, match="recorded no LLM completion"):
        ReplayLLM.from_session(str(empty.iri), store=store)
