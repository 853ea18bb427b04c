"""The guide says one thing about token traces: docs/llm.md documents them as an opt-in
graph (``token_trace = True``), so docs/agent.md's ADR table must not call them unbuilt."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_agent_guide_row_for_token_traces_matches_the_llm_guide() -> None:
    assert "token_trace = True" in (DOCS / "llm.md").read_text()
    row = next(
        line
        for line in (DOCS / "agent.md").read_text().splitlines()
        if line.startswith("| OQ1: a token-trace named graph")
    )
    assert "not built" not in row
    assert "token_trace" in row and "llm.md" in row
