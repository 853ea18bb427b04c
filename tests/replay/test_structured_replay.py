"""Structured output replays: its response format is part of the request a replay matches.

A run with ``output_type=`` (and a ``complete(response_format=...)``) records
the format in its prompt's parameters and request hash. Persisted and
replayed, the same format gets the recorded answers (an answer that failed
validation fails it again with the same problem, so the retry repeats) and
the same validated answer; another format is a divergence naming the
``response_format`` parameter.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic
import pytest
from replay_support import quads, turn

from trails.agent import Session
from trails.errors import ReplayMismatch
from trails.kernel import capability
from trails.llm import LLMClient
from trails.store import Store
from trails.testing import assert_conforms
from trails.testing.replay import ReplayLLM
from trails.testing.rerun import rerun


class City(pydantic.BaseModel):
    name: str
    population: int


class Town(pydantic.BaseModel):
    name: str
    inhabitants: int


@pytest.fixture
def city_tool() -> None:
    @capability(id="kb.city", description="Look a city up.")
    def lookup(name: str) -> dict[str, Any]:
        return {"name": name, "population": 709000}


def structured_session(store: Store) -> Session:
    """ReAct with ``output_type=City``: its first structured answer is invalid, the second valid."""
    client = LLMClient.mock(
        [
            turn("kb.city", {"name": "Oslo"}),
            turn("finish", final_answer="Oslo, 709000 people"),
            '{"name": "Oslo"}',
            '{"name": "Oslo", "population": 709000}',
        ]
    )
    session = Session.new(strategy="react", principal="did:example:eve", store=store, llm=client)
    result = session.run("Largest city in Norway?", max_steps=4, output_type=City)
    assert result.answer == City(name="Oslo", population=709000)
    session.persist()
    return session


def test_a_structured_run_reruns_identically_with_its_recorded_format(
    store: Store, city_tool: None
) -> None:
    session = structured_session(store)
    before = quads(store)

    report = rerun(str(session.iri), store=store)  # the format read back from the recording

    assert report.identical, report.describe()
    assert [a.status for a in report.rerun if a.kind == "completion"] == [
        "ok",
        "ok",
        "invalid",  # the recorded invalid answer, found invalid again and retried
        "ok",
    ]
    assert report.results[0].answer == {"name": "Oslo", "population": 709000}
    assert quads(store) == before

    typed = rerun(str(session.iri), store=store, output_type=City)
    assert typed.identical, typed.describe()
    assert typed.results[0].answer == City(name="Oslo", population=709000)


def test_a_changed_output_schema_is_a_divergence(store: Store, city_tool: None) -> None:
    session = structured_session(store)

    report = rerun(str(session.iri), store=store, output_type=Town)

    d = report.divergence
    assert d is not None and not report.identical
    assert d.index == 3 and d.field == "inputs", report.describe()  # the answer turn
    assert report.mismatch is not None
    assert "first difference: parameters differ: response_format recorded" in report.mismatch
    assert "'Town'" in report.mismatch and "'City'" in report.mismatch


@pytest.mark.parametrize("how", ["sync", "async"])
def test_replay_llm_answers_a_structured_complete_and_refuses_another_schema(
    how: str, store: Store
) -> None:
    client = LLMClient.mock(['{"name": "Oslo"}', '{"name": "Oslo", "population": 709000}'])
    recorded = Session.new(principal="did:example:eve", store=store)
    first = client.complete("Largest city in Norway?", response_format=City, ctx=recorded.context)
    recorded.persist()

    llm = ReplayLLM.from_session(str(recorded.iri), store=store)
    fresh = Session.new(principal="did:example:eve", store=store)

    def ask(fmt: Any) -> Any:
        prompt = "Largest city in Norway?"
        if how == "sync":
            return llm.complete(prompt, response_format=fmt, ctx=fresh.context)
        return asyncio.run(llm.acomplete(prompt, response_format=fmt, ctx=fresh.context))

    again = ask(City)
    assert again.parsed == first.parsed == City(name="Oslo", population=709000)
    assert len(llm.requests) == 2  # the invalid answer again, then the retry's answer

    with pytest.raises(ReplayMismatch) as err:
        ask(Town)
    assert err.value.differing is not None
    assert err.value.differing.startswith("parameters differ: response_format recorded")
    assert_conforms(store)


def test_the_store_cache_answers_only_the_same_response_format(store: Store) -> None:
    client = LLMClient.mock(
        ['{"name": "Oslo", "population": 709000}', '{"name": "Oslo", "inhabitants": 709000}'],
        store_cache=True,
    )
    session = Session.new(principal="did:example:eve", store=store)
    first = client.complete("Largest city?", response_format=City, ctx=session.context)
    cached = client.complete("Largest city?", response_format=City, ctx=session.context)
    other = client.complete("Largest city?", response_format=Town, ctx=session.context)

    assert not first.cache_hit and cached.cache_hit and not other.cache_hit
    assert cached.parsed == first.parsed
    assert other.parsed == Town(name="Oslo", inhabitants=709000)
    assert len(client.requests) == 2
