"""The console's rendering functions, without a server: recorded values as a person reads them,
search hits typed by what they are, and the sessions list's sort order."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

from trails.server.console.base import human
from trails.server.console.pages import when
from trails.server.console.said import Turn, kind_of, readable, snippet, turns
from trails.server.console.sessions import _sorted, sort_key

T = "https://w3id.org/trails/ns#"
PROMPT = json.dumps(
    {
        "messages": [
            {"role": "system", "content": "You are careful.\nAnswer briefly."},
            {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call-1",
                        "type": "function",
                        "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call-1", "content": "4"},
        ],
        "params": {"temperature": 0},
    }
)


def test_a_prompt_is_its_chat_turns_by_role() -> None:
    said = turns(PROMPT)
    assert said is not None
    assert [t.role for t in said] == ["system", "user", "assistant", "tool"]
    assert said[0].text == "You are careful.\nAnswer briefly."  # a real line break, no escape
    assert said[1].text == "What is 2+2?"  # the text parts of a list of parts
    assert said[2].calls == ['add({"a": 2, "b": 2})'] and said[2].text == ""
    assert said[3].answers == "call-1" and said[3].text == "4"
    assert turns('{"action": "search"}') is None  # not a conversation
    react = json.dumps(
        {"messages": [{"role": "assistant", "content": '{"thought": "look", "action": "read"}'}]}
    )
    assert turns(react) == [Turn(role="assistant", text="thought: look\naction: read")]
    assert turns("plain text") is None and turns(None) is None


def test_recorded_json_reads_as_text_without_escapes() -> None:
    shown = readable(PROMPT)
    assert shown.splitlines()[:3] == [
        "system: You are careful.",
        "Answer briefly.",
        "user: What is 2+2?",
    ]
    assert "\\n" not in shown and '"messages"' not in shown and "assistant: add(" in shown
    assert readable('{"to": "cfo@example.com", "body": "line one\\nline two"}') == (
        "to: cfo@example.com\nbody: line one\nline two"
    )
    assert readable('"a JSON string"') == "a JSON string"
    assert readable("not json {") == "not json {" and readable(None) == ""


def test_a_hit_is_typed_by_its_property_or_its_entity() -> None:
    value = "http://www.w3.org/ns/prov#value"
    assert kind_of(T + "goal") == "goal" and kind_of(T + "answer") == "answer"
    assert kind_of(T + "arguments") == "tool input" and kind_of(T + "result") == "tool output"
    assert kind_of(value, {T + "Prompt", "http://www.w3.org/ns/prov#Entity"}) == "prompt"
    assert kind_of(value, {T + "CapabilityOutput"}) == "tool output"
    assert kind_of(value, {T + "Completion"}) == "completion"
    assert kind_of(value) == "recorded value"


def test_a_snippet_shows_the_match_in_its_context() -> None:
    text = "x" * 100 + " the quarterly figures " + "y" * 100
    before, match, after = snippet(text, "QUARTERLY", width=10)
    assert match == "quarterly" and before.startswith("…") and after.endswith("…")
    assert snippet("figures for the year", "year figures") == ("figures for the ", "year", "")
    assert snippet("nothing here", "zebra")[1] == ""


def test_times_show_on_one_line_in_utc() -> None:
    assert when(datetime(2025, 3, 1, 10, 0, 5, 123456, tzinfo=UTC)) == "2025-03-01 10:00:05"
    assert when(None) == ""


def test_sessions_sort_by_any_column_with_the_empty_last() -> None:
    def row(name: str, cost: str | None, day: int, goal: str = "") -> dict[str, object]:
        return {
            "session": f"urn:x:{name}",
            "label": name,
            "costUSD": None if cost is None else Decimal(cost),
            "started": datetime(2025, 3, day, tzinfo=UTC),
            "goal": goal,
        }

    rows = [row("a", "0.5", 1, "zeta"), row("b", None, 2, "alpha"), row("c", "0.04", 3)]
    assert [r["label"] for r in _sorted(rows, "cost", True)] == ["a", "c", "b"]
    assert [r["label"] for r in _sorted(rows, "cost", False)] == ["c", "a", "b"]
    assert [r["label"] for r in _sorted(rows, "goal", False)] == ["b", "a", "c"]
    assert [r["label"] for r in _sorted(rows, "started", True)] == ["c", "b", "a"]
    assert sort_key("cost", rows[1]) == (1, 0)


def test_column_names_read_as_headings() -> None:
    assert human("costUSD") == "Cost USD" and human("sealedAt") == "Sealed At"
    assert human("usd") == "USD" and human("quad_count") == "Quad count"
