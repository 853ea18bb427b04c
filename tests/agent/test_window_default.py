"""ADR-0018: the history window defaults to "model context window minus a safety margin".

A fixed 32,000 tokens is more than a small local model holds: Ollama cuts what does not
fit without a word. A session nobody sized takes its window from the model it first runs
with; one that was given ``max_tokens=`` keeps it.
"""

from __future__ import annotations

from trails.agent import Session
from trails.agent.history import DEFAULT_WINDOW_TOKENS, LOCAL_CONTEXT_TOKENS, window_for
from trails.agent.planners import react
from trails.llm import LLMClient
from trails.store import Store

FINISH = '{"thought": "done", "action": "finish", "final_answer": "ok"}'


def test_the_margin_is_a_tenth_and_at_least_1024_tokens() -> None:
    assert window_for(200_000) == 180_000
    assert window_for(8_192) == 7_168
    assert window_for(1_000) == 1


def test_a_listed_models_window_sizes_the_session(store: Store) -> None:
    session = Session(principal="did:local:alice")
    assert session.history.max_tokens == DEFAULT_WINDOW_TOKENS  # nothing known yet
    session.fit_window(LLMClient.anthropic(model="claude-sonnet-4-5", api_key="k"))
    assert session.history.max_tokens == window_for(200_000)
    session.fit_window(LLMClient.ollama(model="qwen3:8b"))  # the first model decides
    assert session.history.max_tokens == window_for(200_000)


def test_an_unlisted_local_model_gets_ollamas_default_context(store: Store) -> None:
    session = Session(principal="did:local:alice")
    session.fit_window(LLMClient.ollama(model="tinyllama:1.1b"))
    assert session.history.max_tokens == window_for(LOCAL_CONTEXT_TOKENS) == 3_072
    for i in range(12):  # about 500 tokens each: the oldest go, the newest stay
        session.history.append("user", f"note {i}: " + "x" * 2_000)
    assert session.history.total_tokens <= 3_072
    assert session.history.entries[-1].content.startswith("note 11")


def test_a_given_window_stands_and_a_run_sizes_an_unset_one(store: Store) -> None:
    given = Session(principal="did:local:alice", max_tokens=5_000)
    react.run("Go.", llm=LLMClient.mock([FINISH]), session=given, tools=[])
    assert given.history.max_tokens == 5_000
    unset = Session(principal="did:local:alice")
    react.run("Go.", llm=LLMClient.mock([FINISH]), session=unset, tools=[])
    assert unset.history.max_tokens == window_for(1_000_000)  # the mock model's window


def test_the_agents_name_is_a_software_agent_acting_for_the_principal(store: Store) -> None:
    from trails.errors import UserError
    from trails.prov import T
    from trails.store import IRI, Solutions, to_python

    session = Session(principal="did:local:alice", name="support-bot")
    react.run("Go.", llm=LLMClient.mock([FINISH]), session=session, tools=[])
    assert session.name == "support-bot"
    found = store.query(
        "SELECT ?g ?name ?who WHERE { GRAPH ?g { ?g <http://www.w3.org/ns/prov#wasAssociatedWith> ?a ;"
        " " + T.agentName.n3() + " ?name . ?a a <http://www.w3.org/ns/prov#SoftwareAgent> ;"
        " <http://www.w3.org/2000/01/rdf-schema#label> ?name ;"
        " <http://www.w3.org/ns/prov#actedOnBehalfOf> ?p . ?p " + T.principalId.n3() + " ?who } }",
        {"g": IRI(str(session.iri))},
    )
    assert isinstance(found, Solutions)
    assert [(to_python(r["name"]), to_python(r["who"])) for r in found] == [
        ("support-bot", "did:local:alice")
    ]
    for bad in ("", " ", 7):
        try:
            Session(principal="did:local:alice", name=bad)  # type: ignore[arg-type]
        except UserError as err:
            assert "name" in str(err)
        else:
            raise AssertionError(f"name={bad!r} was accepted")
