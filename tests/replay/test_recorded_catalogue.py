"""A rerun offers the tools the recorded prompt offered: none when it offered none."""

from __future__ import annotations

from trails import capability
from trails.testing.rerun import recorded_catalogue


def test_a_prompt_that_offered_no_tools_reruns_with_none() -> None:
    @capability(id="catalogue.probe", description="A registered capability the run never saw.")
    def probe() -> str:
        return "x"

    system = "You are a ReAct agent.\n\nGoal: Refund order A1\n\nTools:\n(none)"
    assert recorded_catalogue([{"role": "system", "content": system}]) == []


def test_a_prompt_lists_its_tools_in_order() -> None:
    @capability(id="catalogue.first", description="First.")
    def first() -> str:
        return "1"

    @capability(id="catalogue.second", description="Second.")
    def second() -> str:
        return "2"

    system = (
        "Goal: g\n\nTools:\n- catalogue.second: Second.\n    (no parameters)\n"
        "- catalogue.first: First.\n    (no parameters)"
    )
    assert recorded_catalogue([{"role": "system", "content": system}]) == [
        "catalogue.second",
        "catalogue.first",
    ]


def test_a_prompt_without_a_catalogue_says_nothing() -> None:
    assert recorded_catalogue([{"role": "system", "content": "no list here"}]) is None
