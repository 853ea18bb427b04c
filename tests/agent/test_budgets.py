"""Budget limits: cost, tokens and wall time, the best-so-far recipe, and every stop reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.loop import run as run_loop
from trails.agent.planners import STOP_REASONS, plan_and_execute, react, reflexion
from trails.kernel import default_tracker
from trails.llm import LLMClient, ModelRateLimitError, Response
from trails.prov.vocab import T
from trails.store import Store
from trails.testing import assert_conforms


def priced(text: str, *, usd: float = 0.0, tokens: int = 0) -> Response:
    return Response(text=text, model="mock", usd=usd, input_tokens=tokens)


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_max_cost_stops_before_the_next_turn(
    store: Store, notes: Any, reply: Any, prov: Any
) -> None:
    search = reply("notes.search", {"tag": "urgent"})
    client = LLMClient.mock(response=lambda _m: priced(search, usd=0.1))
    result = react.run(
        "Find urgent notes.",
        llm=client,
        session=Session(principal="did:local:alice"),
        max_cost_usd=0.25,
    )
    assert result.stopped == "max_cost"
    assert client.adapter.calls == 3  # 0.3 >= 0.25 is seen before the 4th call
    assert len(result.steps) == 3
    assert result.answer == json.dumps({"hits": ["n1", "n2"]})
    assert result.error is None
    term = prov.termination(result.activity_iri)
    assert term["cls"] == T.BudgetBreach and term["reason"] == "max_cost"
    assert term["limit"] == 0.25 and term["observed"] == pytest.approx(0.3)
    assert prov.run(result.activity_iri)["stop"] == "max_cost"
    assert_conforms(store)


def test_max_tokens_counts_prompt_and_completion(store: Store, notes: Any, reply: Any) -> None:
    search = reply("notes.search", {"tag": "urgent"})
    response = Response(text=search, model="mock", input_tokens=30, output_tokens=20)
    client = LLMClient.mock(response=lambda _m: response)
    result = react.run(
        "Go.", llm=client, session=Session(principal="did:local:alice"), max_tokens=100
    )
    assert result.stopped == "max_tokens"
    assert client.adapter.calls == 2


def test_budgets_measure_the_run_not_earlier_spend(store: Store) -> None:
    default_tracker().book(tag="llm:earlier", principal="did:local:alice", usd=5.0)
    client = LLMClient.mock(response="finish")
    result = react.run(
        "Go.", llm=client, session=Session(principal="did:local:alice"), max_cost_usd=1.0
    )
    assert result.stopped == "goal_achieved"


def test_max_wall_time_with_a_controlled_clock(
    store: Store, notes: Any, reply: Any, prov: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(run_loop, "monotonic", clock)
    search = reply("notes.search", {"tag": "urgent"})

    def slow(_messages: Any) -> str:
        clock.now += 0.4
        return search

    client = LLMClient.mock(response=slow)
    result = react.run(
        "Go.", llm=client, session=Session(principal="did:local:alice"), max_wall_time_s=1.0
    )
    assert result.stopped == "max_wall_time"
    assert client.adapter.calls == 3
    term = prov.termination(result.activity_iri)
    assert term["limit"] == 1.0 and term["observed"] == pytest.approx(1.2)


def test_max_wall_time_with_real_milliseconds(store: Store, notes: Any, reply: Any) -> None:
    import time

    from trails import capability

    # the tool outlasts the budget by far, and one step's own overhead stays far below it,
    # so the run stops after the first call however loaded the machine is
    @capability(id="notes.slow", description="Takes half a second.")
    def slow() -> str:
        time.sleep(0.5)
        return "slept"

    client = LLMClient.mock(response=lambda _m: reply("notes.slow"))
    result = react.run(
        "Go.",
        llm=client,
        session=Session(principal="did:local:alice"),
        max_wall_time_s=0.25,
        max_steps=50,
    )
    assert result.stopped == "max_wall_time"
    assert client.adapter.calls == 1
    assert result.answer == "slept"


def test_extracting_best_so_far_recipe(store: Store, notes: Any, reply: Any) -> None:
    goal = "Find urgent notes."
    search = reply("notes.search", {"tag": "urgent"})
    missing = reply("notes.missing")
    script = [priced(search, usd=0.1), priced(missing, usd=0.1), priced(search, usd=0.1)]
    c = LLMClient.mock(response=script)
    s = Session(principal="did:local:alice")

    # fmt: off
    from trails.agent.planners import react

    result = react.run(
        goal,
        llm=c,
        session=s,
        max_cost_usd=0.25,
        max_wall_time_s=30.0,
    )

    if result.stopped == "goal_achieved":
        final = result.answer                         # trusted final answer
    elif result.stopped in {"max_cost", "max_tokens", "max_wall_time"}:
        # Best-so-far: walk the trajectory tail-first for the most recent
        # non-error, non-"finish" observation and parse it.
        best = None
        for step in reversed(result.steps):
            obs = step.observation
            if obs is None or (isinstance(obs, str) and obs.startswith("error:")):
                continue
            best = obs
            break
        # ``result.answer`` is the same observation stringified — cheapest
        # fallback when a dict isn't required.
        final = best if best is not None else result.answer
    else:  # "error"
        raise RuntimeError(result.error)
    # fmt: on

    assert result.stopped == "max_cost"
    assert final == {"hits": ["n1", "n2"]}
    assert result.answer == json.dumps(final)


def test_best_so_far_skips_error_observations(store: Store, notes: Any, reply: Any) -> None:
    script = [
        priced(reply("notes.search", {"tag": "urgent"}), usd=0.1),
        priced(reply("notes.missing"), usd=0.2),
    ]
    result = react.run(
        "Go.",
        llm=LLMClient.mock(response=script),
        session=Session(principal="did:local:alice"),
        max_cost_usd=0.25,
    )
    assert result.stopped == "max_cost"
    assert result.answer is not None and result.answer.startswith("error: unknown capability")
    best = next(
        s.observation
        for s in reversed(result.steps)
        if s.observation is not None and not str(s.observation).startswith("error:")
    )
    assert best == {"hits": ["n1", "n2"]}


# -- every stop reason, on every planner, reached and recorded ---------------------------


def _plan(*steps: dict[str, Any]) -> str:
    return "```json\n" + json.dumps({"plan": list(steps)}) + "\n```"


SEARCH = {"action": "notes.search", "action_input": {"tag": "urgent"}}
FINISH = {"action": "finish", "action_input": {}, "final_answer": "done"}


def _scenario(planner: str, stop: str, reply: Any) -> tuple[Any, dict[str, Any]]:
    """A mock client and run keywords that drive ``planner`` to ``stop``."""
    search = reply("notes.search", {"tag": "urgent"})
    if planner == "react":
        agent = {"goal_achieved": "finish", "error": '{"junk": '}.get(stop, search)
    elif planner == "plan_and_execute":
        agent = _plan(SEARCH, SEARCH, FINISH) if stop != "error" else "junk"
    else:
        agent = {"goal_achieved": "finish", "error": '{"junk": '}.get(stop, search)
    verdict = "```json\n" + json.dumps({"verdict": "accept", "critique": ""}) + "\n```"

    def route(messages: Any) -> Response:
        if "Reflexion critic" in messages[0].content:
            return priced(verdict)
        return priced(agent, usd=0.1, tokens=10)

    kwargs: dict[str, Any] = {
        "max_steps": {"max_steps": 1}.get(stop, 10),
        "max_cost_usd": 0.05 if stop == "max_cost" else None,
        "max_tokens": 5 if stop == "max_tokens" else None,
        "max_wall_time_s": 0.0 if stop == "max_wall_time" else None,
    }
    if planner == "reflexion" and stop == "max_steps":
        kwargs["max_outer_iterations"] = 1
        kwargs["max_steps"] = 10

        def retry_route(messages: Any) -> Response:
            if "Reflexion critic" in messages[0].content:
                return priced('{"verdict": "retry", "critique": "again"}')
            return priced("finish")

        return LLMClient.mock(response=retry_route), kwargs
    if stop == "error":
        return LLMClient.mock(response=[priced(agent), ModelRateLimitError("slow down")]), kwargs
    return LLMClient.mock(response=route), kwargs


TERMINATION_CLASS = {
    "max_steps": T.StepLimit,
    "max_cost": T.BudgetBreach,
    "max_tokens": T.BudgetBreach,
    "max_wall_time": T.BudgetBreach,
    "error": T.Error,
}


@pytest.mark.parametrize("stop", STOP_REASONS)
@pytest.mark.parametrize(
    "planner", [react, plan_and_execute, reflexion], ids=lambda m: m.__name__.split(".")[-1]
)
def test_every_stop_reason_is_reached_and_recorded(
    store: Store, notes: Any, reply: Any, prov: Any, planner: Any, stop: str
) -> None:
    client, kwargs = _scenario(planner.NAME, stop, reply)
    session = Session(principal="did:local:alice")
    result = planner.run("Find urgent notes.", llm=client, session=session, **kwargs)
    assert result.stopped == stop, result
    assert result.strategy == planner.NAME
    assert (result.error is not None) == (stop == "error")
    run = prov.run(result.activity_iri)
    assert run["stop"] == stop
    term = prov.termination(result.activity_iri)
    if stop == "goal_achieved":
        assert term is None
    else:
        assert term is not None and term["cls"] == TERMINATION_CLASS[stop]
    assert_conforms(store)
