"""Session and TokenWindow: the conversation state planners write into."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trails.agent import AuthState, HistoryEntry, Session, TokenWindow
from trails.errors import ConfigError, SessionError, UserError
from trails.kernel import InvocationRecord, default_tracker
from trails.llm import LLMClient, Message
from trails.prov.content import content_graph
from trails.prov.vocab import T
from trails.store import Store, open_store
from trails.testing import assert_conforms


def fixed(n: int) -> Any:
    return lambda _text: n


# -- TokenWindow --------------------------------------------------------------------------


def test_window_keeps_order_and_running_total() -> None:
    w = TokenWindow(max_tokens=100, pin_head=1, count_tokens=fixed(10))
    w.append("system", "sys")
    w.append("user", "hi")
    w.append("assistant", "hello", tokens=7)
    assert [e.role for e in w] == ["system", "user", "assistant"]
    assert w.total_tokens == 27
    assert [e.pinned for e in w] == [True, False, False]
    assert w.messages() == [
        Message("system", "sys", cache=True),
        Message("user", "hi"),
        Message("assistant", "hello"),
    ]


def test_window_evicts_oldest_unpinned_first() -> None:
    w = TokenWindow(max_tokens=30, pin_head=1, count_tokens=fixed(10))
    for role, text in [("system", "s"), ("user", "a"), ("assistant", "b"), ("user", "c")]:
        w.append(role, text)
    assert [e.content for e in w] == ["s", "b", "c"]
    assert w.total_tokens == 30
    assert w.evicted == 1
    w.append("assistant", "d")
    assert [e.content for e in w] == ["s", "c", "d"]


def test_window_keeps_the_newest_entry_however_large() -> None:
    w = TokenWindow(max_tokens=10, pin_head=1)
    w.append("system", "x" * 20)  # 5 tokens
    w.append("user", "y" * 400)  # 100 tokens
    assert [e.role for e in w] == ["system", "user"]
    w.append("user", "z")
    assert [e.content for e in w] == ["x" * 20, "z"]


def test_window_pin_head_zero_and_two() -> None:
    w = TokenWindow(max_tokens=20, pin_head=0, count_tokens=fixed(10))
    for text in "abc":
        w.append("user", text)
    assert [e.content for e in w] == ["b", "c"]
    w = TokenWindow(max_tokens=30, pin_head=2, count_tokens=fixed(10))
    for text in "abcd":
        w.append("user", text)
    assert [e.content for e in w] == ["a", "b", "d"]


def test_set_system_replaces_or_inserts_the_head() -> None:
    w = TokenWindow(max_tokens=1000, count_tokens=len)
    w.append("user", "goal")
    w.set_system("first")
    assert [(e.role, e.content, e.pinned) for e in w] == [
        ("system", "first", True),
        ("user", "goal", False),
    ]
    w.set_system("second prompt")
    assert [e.content for e in w] == ["second prompt", "goal"]
    assert w.total_tokens == len("second prompt") + len("goal")


def test_window_load_and_clear() -> None:
    w = TokenWindow()
    entries = [HistoryEntry("system", "s", 3, True), HistoryEntry("user", "u", 4)]
    w.load(entries)
    assert w.entries == entries and w.total_tokens == 7
    w.clear()
    assert len(w) == 0 and w.total_tokens == 0


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"pin_head": -1}, "pin_head"),
        ({"max_tokens": True}, "max_tokens"),
    ],
)
def test_window_rejects_bad_settings(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        TokenWindow(**kwargs)


def test_window_rejects_bad_messages() -> None:
    w = TokenWindow()
    with pytest.raises(UserError, match="role"):
        w.append("tool", "x")
    with pytest.raises(UserError, match="content"):
        w.append("user", 3)  # type: ignore[arg-type]
    assert len(w) == 0


# -- Session ------------------------------------------------------------------------------


def test_session_defaults_and_nothing_recorded_before_a_run(store: Store) -> None:
    s = Session(principal="did:local:alice")
    assert isinstance(s.history, TokenWindow)
    assert (s.history.max_tokens, s.history.pin_head) == (32_000, 1)
    assert s.invocations == [] and s.metadata == {}
    assert s.auth == AuthState("did:local:alice", did="did:local:alice") and s.card is None
    assert s.id != Session(principal="did:local:alice").id
    assert not s.opened and s.iri is None
    assert store.graphs() == []
    s2 = Session(principal="did:local:bob", max_tokens=500, pin_head=2, auth="tok", card={"n": 1})
    assert (s2.history.max_tokens, s2.history.pin_head, s2.auth.credential, s2.card) == (
        500,
        2,
        "tok",
        {"n": 1},
    )


def test_session_rejects_a_bad_principal() -> None:
    with pytest.raises(UserError, match="principal"):
        Session(principal="")


def test_session_context_opens_lazily_in_its_store(store: Store) -> None:
    own = open_store("memory:")
    s = Session(principal="did:local:alice", store=own)
    client = LLMClient.mock(response="finish")
    s.run("Go.", llm=client)
    assert s.opened and s.iri is not None and s.iri.endswith(s.id)
    assert own.graphs() == sorted([s.iri, content_graph(s.iri), "urn:trails:graph:catalogue"])
    assert store.graphs() == []  # the default store was not touched
    assert isinstance(s.context.invocations, list) and s.context.invocations is s.invocations
    assert_conforms(own)


def test_invocations_hold_envelopes(store: Store, notes: Any, reply: Any) -> None:
    s = Session(principal="did:local:alice")
    client = LLMClient.mock(response=[reply("notes.search", {"tag": "urgent"}), "finish"])
    s.run("Go.", llm=client)
    [record] = s.invocations
    assert isinstance(record, InvocationRecord)
    assert (record.capability, record.args, record.result, record.status) == (
        "notes.search",
        {"tag": "urgent"},
        {"hits": ["n1", "n2"]},
        "ok",
    )


def test_close_records_the_end_and_refuses_more_runs(store: Store, prov: Any) -> None:
    s = Session(principal="did:local:alice")
    client = LLMClient.mock(response="finish")
    s.run("Go.", llm=client)
    assert prov.session_status(s.iri) is None
    s.close()
    s.close()  # idempotent
    assert prov.session_status(s.iri) == "ok"
    with pytest.raises(SessionError, match="closed"):
        s.run("Again.", llm=client)
    assert_conforms(store)


def test_session_as_context_manager_closes(store: Store) -> None:
    with Session(principal="did:local:alice") as s:
        s.run("Go.", llm=LLMClient.mock(response="finish"))
    assert s.closed
    assert_conforms(store)


def test_run_needs_an_llm(store: Store) -> None:
    with pytest.raises(UserError, match="LLM client"):
        Session(principal="did:local:alice").run("Go.")
    assert store.graphs() == []


def test_session_llm_is_used_by_run(store: Store) -> None:
    client = LLMClient.mock(response="finish")
    result = Session(principal="did:local:alice", llm=client).run("Go.")
    assert result.stopped == "goal_achieved" and client.adapter.calls == 1


# -- Session.new, strategy and budget -------------------------------------------------


def test_new_picks_the_strategy(store: Store, prov: Any) -> None:
    client = LLMClient.mock(response='{"plan": [{"action": "finish", "final_answer": "x"}]}')
    s = Session.new(strategy="plan_and_execute", principal="did:key:zAlice", llm=client)
    result = s.run("Summarise.")
    assert result.strategy == "plan_and_execute" and result.answer == "x"
    assert prov.run(result.activity_iri)["cls"] == T.PlanAndExecutePlan


def test_new_accepts_hyphenated_names_and_agent_card() -> None:
    s = Session.new(strategy="Plan-And-Execute", principal="did:local:a", agent_card={"id": "c"})
    assert s.strategy == "plan_and_execute" and s.card == {"id": "c"}


def test_unknown_strategy_is_named() -> None:
    with pytest.raises(UserError, match="'chain_of_thought'"):
        Session.new(strategy="chain_of_thought", principal="did:local:a")


def test_strategy_from_trails_toml(store: Store, tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text('[agent]\nstrategy = "reflexion"\n')
    verdict = '```json\n{"verdict": "accept", "critique": ""}\n```'
    client = LLMClient.mock(
        response=lambda m: verdict if "Reflexion critic" in m[0].content else "finish"
    )
    s = Session(principal="did:local:alice", llm=client)
    assert s.resolve_strategy() == "reflexion"
    assert s.run("Go.").strategy == "reflexion"


def test_strategy_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAILS_STRATEGY", "plan_and_execute")
    assert Session(principal="did:local:a").resolve_strategy() == "plan_and_execute"
    assert Session(principal="did:local:a", strategy="react").resolve_strategy() == "react"


def test_bad_configured_strategy_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAILS_STRATEGY", "tree_of_thought")
    with pytest.raises(ConfigError, match="TRAILS_STRATEGY"):
        Session(principal="did:local:a").resolve_strategy()


def test_budget_becomes_run_limits(store: Store, notes: Any, reply: Any) -> None:
    client = LLMClient.mock(response=lambda _m: reply("notes.search", {"tag": "urgent"}))
    s = Session.new(strategy="react", principal="did:local:alice", budget={"tokens": 1}, llm=client)
    result = s.run("Search.")
    assert result.stopped == "max_tokens" and client.adapter.calls == 1
    # a keyword passed to run overrides the session budget
    result = s.run("Search.", max_tokens=None, max_steps=2)
    assert result.stopped == "max_steps"


@pytest.mark.parametrize(
    ("budget", "needle"),
    [({"dollars": 1}, "'dollars'"), ({"usd": -1}, "usd"), ({"tokens": "x"}, "tokens"), (5, "dict")],
)
def test_bad_budget_is_named(budget: Any, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        Session.new(strategy="react", principal="did:local:a", budget=budget)


def test_principal_budget_left_alone(store: Store) -> None:
    Session.new(strategy="react", principal="did:local:a", budget={"usd": 1.0})
    assert default_tracker().budget("did:local:a") is None
