"""Tool discovery and filtering, the system prompt, and parsing of model replies."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from trails import capability
from trails.agent import Session
from trails.agent.loop.parse import parse_plan, parse_verdict
from trails.agent.planners import plan_and_execute, react, reflexion
from trails.errors import ReplyParseError, UserError
from trails.kernel import all_capabilities, unregister
from trails.llm import LLMClient
from trails.store import Store


@pytest.fixture
def catalogue() -> list[str]:
    @capability(id="notes.search", description="Search notes by tag.")
    def search(tag: str, limit: int = 10) -> dict[str, Any]:
        return {}

    @capability(
        id="notes.tag",
        description="Tag a note.",
        annotations={"tags": "write"},
    )
    def tag(note: str, label: str) -> str:
        return ""

    @capability(id="mail.send", description="Send an email.", annotations={"tags": "read-only"})
    def send(to: str) -> None:
        return None

    return ["notes.search", "notes.tag", "mail.send"]


def ids(pairs: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [cid for cid, _ in pairs]


def test_none_discovers_every_registered_capability(catalogue: list[str]) -> None:
    pairs = react.discover_tools()
    assert ids(pairs) == [s.id for s in all_capabilities()]
    assert ids(pairs)[-3:] == catalogue
    meta = dict(pairs)["notes.search"]
    assert meta["description"] == "Search notes by tag."
    assert meta["params"] == ["tag", "limit"] and meta["required"] == ["tag"]
    assert meta["types"] == {"tag": "str", "limit": "int"}


def test_list_scopes_and_marks_unknown_ids(catalogue: list[str]) -> None:
    pairs = react.discover_tools(["mail.send", "ghost.tool", "mail.send"])
    assert ids(pairs) == ["mail.send", "ghost.tool"]
    assert dict(pairs)["ghost.tool"]["description"] == "(unregistered)"
    prompt = react.build_system_prompt("Goal text.", pairs)
    assert "- ghost.tool (unregistered)" in prompt
    assert "notes.search" not in prompt


def test_callable_is_resolved_once_per_run(store: Store, catalogue: list[str], reply: Any) -> None:
    calls: list[int] = []

    def pick() -> list[str]:
        calls.append(1)
        return ["notes.search"]

    client = LLMClient.mock(
        response=[
            reply("notes.search", {"tag": "x"}),
            reply("notes.search", {"tag": "y"}),
            "finish",
        ]
    )
    react.run("Go.", llm=client, session=Session(principal="did:local:a"), tools=pick)
    assert calls == [1]
    assert ids(react.discover_tools(lambda: ["notes.tag"])) == ["notes.tag"]


def test_int_keeps_the_most_recently_registered(catalogue: list[str]) -> None:
    assert ids(react.discover_tools(2)) == ["notes.tag", "mail.send"]
    assert react.discover_tools(0) == []

    @capability(id="notes.search", description="Re-registered moves to the end.")
    def search_again(tag: str) -> None:
        return None

    assert ids(react.discover_tools(1)) == ["notes.search"]


@pytest.mark.parametrize(
    ("tools", "needle"),
    [
        (True, "bool"),
        (False, "bool"),
        (-1, ">= 0"),
        ("notes.search", "list of capability ids"),
        ([1, 2], "non-empty capability id"),
        (lambda: "notes.search", "list returned by tools="),
    ],
)
def test_bad_tools_are_rejected(catalogue: list[str], tools: Any, needle: str) -> None:
    with pytest.raises(UserError, match=needle):
        react.discover_tools(tools)


def test_keyword_filter_matches_id_or_description(catalogue: list[str]) -> None:
    scoped = ["notes.search", "notes.tag", "mail.send"]
    assert ids(react.discover_tools(scoped, tool_filter="EMAIL")) == ["mail.send"]
    assert ids(react.discover_tools(scoped, tool_filter="search send")) == [
        "notes.search",
        "mail.send",
    ]
    assert ids(react.discover_tools(scoped, tool_filter="")) == scoped
    assert ids(react.discover_tools(scoped, tool_filter="   ")) == scoped
    assert react.discover_tools(scoped, tool_filter="calendar") == []


def test_predicate_filter_sees_the_metadata_dict(catalogue: list[str]) -> None:
    seen: list[dict[str, Any]] = []

    def keep(meta: dict[str, Any]) -> bool:
        seen.append(meta)
        return "read-only" in meta["annotations"].get("tags", "")

    assert ids(react.discover_tools(catalogue, tool_filter=keep)) == ["mail.send"]
    assert {"id", "description", "params", "required", "annotations", "input_shape"} <= set(seen[0])
    assert "output_shape" in seen[0]


def test_seed_predicate_example(store: Store, catalogue: list[str]) -> None:
    goal, c, s = "Read mail.", LLMClient.mock(response="finish"), Session(principal="did:local:a")
    react.run(
        goal, llm=c, session=s,
        tool_filter=lambda meta: "read-only" in meta["annotations"].get("tags", ""),
    )  # fmt: skip
    system = c.adapter.requests[0].messages[0].content
    assert "mail.send" in system and "notes.search" not in system


def test_bad_filter_is_rejected(catalogue: list[str]) -> None:
    with pytest.raises(UserError, match="tool_filter"):
        react.discover_tools(catalogue, tool_filter=["notes"])  # type: ignore[arg-type]


def test_soft_cap_warns_past_thirty_without_a_filter() -> None:
    for spec in all_capabilities():  # the registry is restored after the test
        unregister(spec.id)
    for i in range(30):
        capability(id=f"bulk.tool{i}", description="bulk")(lambda: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(react.discover_tools()) == 30  # at the cap: no warning
    capability(id="bulk.tool30", description="bulk")(lambda: None)
    with pytest.warns(UserWarning, match="31 capabilities discovered"):
        react.discover_tools()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        react.discover_tools(tool_filter="bulk")  # a filter scopes them
        react.discover_tools([f"bulk.tool{i}" for i in range(31)])  # so does a list


def test_system_prompt_lists_tools_with_types(catalogue: list[str]) -> None:
    prompt = react.build_system_prompt("Find urgent notes.", react.discover_tools(catalogue))
    assert "Goal: Find urgent notes." in prompt
    assert "- notes.search: Search notes by tag." in prompt
    assert "    tag: str (required)" in prompt
    assert "    limit: int (optional)" in prompt
    assert '"action": "finish"' in prompt and "final_answer" in prompt
    assert "Reflexion critic" not in prompt
    assert "(none)" in react.build_system_prompt("g", [])


def test_all_planners_share_scoping(store: Store, catalogue: list[str]) -> None:
    plan = '{"plan": [{"action": "finish", "final_answer": "x"}]}'
    verdict = '{"verdict": "accept"}'
    for planner, response in (
        (react, "finish"),
        (plan_and_execute, plan),
        (reflexion, lambda m: verdict if "Reflexion critic" in m[0].content else "finish"),
    ):
        client = LLMClient.mock(response=response)
        planner.run(
            "Go.",
            llm=client,
            session=Session(principal="did:local:a"),
            tools=["notes.search", "mail.send"],
            tool_filter="email",
        )
        system = client.adapter.requests[0].messages[0].content
        assert "mail.send" in system and "notes.search" not in system, planner.NAME


# -- parsing ------------------------------------------------------------------------------


def test_parse_step_tolerates_prose_and_fences() -> None:
    fenced = 'Sure!\n```json\n{"thought": "t", "action": "a.b", "action_input": {"x": 1}}\n```\nok'
    assert react.parse_step(fenced) == {"thought": "t", "action": "a.b", "action_input": {"x": 1}}
    prose = 'I will do {"thought": "t", "action": "a.b"} now.'
    assert react.parse_step(prose)["action_input"] == {}
    bare_fence = '```\n{"action": "finish", "final_answer": "42"}\n```'
    assert react.parse_step(bare_fence)["final_answer"] == "42"
    noisy = 'Some {braces} first, then {"action": "x", "action_input": "{\\"k\\": 2}"}'
    assert react.parse_step(noisy)["action_input"] == {"k": 2}
    assert react.parse_step(" Finish \n") == {
        "thought": "",
        "action": "finish",
        "action_input": {},
        "final_answer": "",
    }
    structured = '{"action": "finish", "final_answer": {"n": 2}}'
    assert react.parse_step(structured)["final_answer"] == '{"n": 2}'


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "the reply is empty"),
        ('{"thought": "x", "action": "a"', "no JSON object"),
        ('```json\n{"action": \n```', "no JSON object"),
        ('{"thought": "x"}', "no 'action'"),
        ('{"action": ""}', "non-empty"),
        ('{"action": "a", "action_input": [1]}', "action_input"),
        ('{"action": "a", "action_input": "not json"}', "action_input"),
        ("[1, 2, 3]", "no JSON object"),
    ],
)
def test_parse_step_errors_say_what_is_wrong(text: str, needle: str) -> None:
    with pytest.raises(ReplyParseError, match=needle):
        react.parse_step(text)


def test_parse_plan_shapes_and_errors() -> None:
    plan = parse_plan('[{"action": "a"}, {"action": "finish", "final_answer": "done"}]')
    assert plan == [
        {"action": "a", "action_input": {}, "rationale": ""},
        {"action": "finish", "action_input": {}, "rationale": "", "final_answer": "done"},
    ]
    for text, needle in [
        ("nothing", "no JSON plan"),
        ('{"plan": []}', "empty"),
        ('{"plan": [{"action": "a"}]}', "must end with"),
        ('{"plan": [{"action": "finish"}, {"action": "a"}]}', "must be the last"),
        ('{"plan": [{"action": "a", "action_input": 3}, {"action": "finish"}]}', "step 1"),
    ]:
        with pytest.raises(ReplyParseError, match=needle):
            parse_plan(text)


def test_parse_verdict() -> None:
    assert parse_verdict('```json\n{"verdict": "RETRY", "critique": "c"}\n```') == {
        "verdict": "retry",
        "critique": "c",
    }
    with pytest.raises(ReplyParseError, match="'maybe'"):
        parse_verdict('{"verdict": "maybe"}')
    with pytest.raises(ReplyParseError, match="no 'verdict'"):
        parse_verdict('{"critique": "x"}')
