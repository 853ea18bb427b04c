"""Audit of sessions recorded by the real planners (ReAct, Plan-and-Execute, Reflexion) and a scripted LLM."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trails.agent.context import Session
from trails.agent.planners import plan_and_execute, react, reflexion
from trails.audit import get_query, render_report
from trails.evidence import install_sealer, verify
from trails.kernel import capability
from trails.llm import LLMClient
from trails.prov import Recorder
from trails.store import Solutions, Store, to_python


def turn(action: str, action_input: dict[str, Any] | None = None, **extra: Any) -> str:
    payload = {"thought": f"use {action}", "action": action, "action_input": action_input or {}}
    payload.update(extra)
    return "```json\n" + json.dumps(payload) + "\n```"


@pytest.fixture
def tools() -> None:
    @capability(id="notes.search", description="Search notes by tag.")
    def search(tag: str) -> dict[str, Any]:
        return {"hits": ["n1", "n2"] if tag == "urgent" else []}

    @capability(id="notes.tag", description="Tag a note.", side_effects=True)
    def tag(note: str, label: str) -> str:
        return f"tagged {note} {label}"


def rows(store: Store, name: str, **values: Any) -> list[dict[str, Any]]:
    result = get_query(name).run(store, **values)
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in r.items()} for r in result]


def test_react_goal_achieved_is_sealed_reported_and_explained(store: Store, tools: None) -> None:
    recorder = Recorder(store)
    install_sealer(recorder)
    client = LLMClient.mock(
        response=[
            turn("notes.search", {"tag": "urgent"}),
            turn("notes.tag", {"note": "n1", "label": "seen"}),
            turn("finish", final_answer="tagged n1"),
        ]
    )
    with Session(principal="did:local:alice", recorder=recorder) as session:
        result = react.run("Tag the urgent note.", llm=client, session=session)
    assert result.stopped == "goal_achieved"
    iri = session.iri
    assert iri is not None
    assert verify(store, session=iri).ok

    evidence = rows(store, "decision-evidence", session=iri)
    tag = [e for e in evidence if e["capability"] == "notes.tag"]
    assert len(tag) == 1 and str(tag[0]["observation"]).endswith(":output")
    search = next(e for e in evidence if e["capability"] == "notes.search")
    assert tag[0]["observedFrom"] == search["invocation"]  # the tagging step had seen the search
    assert [r["capability"] for r in rows(store, "side-effects", session=iri)] == ["notes.tag"]

    html = render_report(store, iri)
    assert "Tag the urgent note." in html and "goal_achieved" in html and "tagged n1" in html
    assert '<div class="seal s-verified">' in html


def test_react_step_limit_and_other_planners_render(store: Store, tools: None) -> None:
    recorder = Recorder(store)
    install_sealer(recorder)
    outcomes = {}
    with Session(principal="did:local:bob", recorder=recorder) as s1:
        client = LLMClient.mock(response=[turn("notes.search", {"tag": "x"})] * 5)
        outcomes["react"] = (s1, react.run("Loop.", llm=client, session=s1, max_steps=2))
    with Session(principal="did:local:bob", recorder=recorder) as s2:
        client = LLMClient.mock(response=lambda messages: "not json at all")
        outcomes["plan_and_execute"] = (s2, plan_and_execute.run("Plan.", llm=client, session=s2))
    with Session(principal="did:local:bob", recorder=recorder) as s3:
        client = LLMClient.mock(response=lambda messages: turn("finish", final_answer="ok"))
        outcomes["reflexion"] = (
            s3,
            reflexion.run("Reflect.", llm=client, session=s3, max_outer_iterations=1),
        )
    assert outcomes["react"][1].stopped == "max_steps"
    for strategy, (session, result) in outcomes.items():
        html = render_report(store, session.iri or "")
        assert f"<dd>{strategy}</dd>" in html, strategy
        assert f"s-{result.stopped}" in html, strategy
    terminations = rows(store, "terminations", session=s1.iri)
    assert [str(t["kind"]).rsplit("#", 1)[-1] for t in terminations] == ["StepLimit"]
    assert verify(store).ok
