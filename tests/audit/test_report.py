"""The HTML audit report renders for every planner and stop reason, self-contained and complete."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from tests.known_store import Fixture

from trails.audit.report import render_report, report_data
from trails.errors import SessionError
from trails.store import IRI, Literal, Quad


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.refs += [v or "" for k, v in attrs if k in ("src", "href")]


@pytest.mark.parametrize(
    ("key", "planner", "stop"),
    [
        ("A", "react", "goal_achieved"),
        ("B", "plan_and_execute", "max_cost"),
        ("C", "reflexion", "max_steps"),
        ("D", "react", "error"),
    ],
)
def test_report_for_every_planner_and_stop_reason(
    fx: Fixture, key: str, planner: str, stop: str
) -> None:
    html = render_report(fx.store, fx.sessions[key])
    parser = _Refs()
    parser.feed(html)
    assert parser.refs == [] and "script" not in parser.tags and "link" not in parser.tags
    assert "<style>" in html and "@media print" in html
    assert f"<dd>{planner}</dd>" in html
    assert f'class="badge s-{stop}">{stop}</span>' in html
    assert fx.sessions[key] in html


def test_report_shows_goal_timeline_cost_decisions_and_seal(fx: Fixture) -> None:
    html = render_report(fx.store, fx.sessions["A"])
    assert "<dd>email the summary</dd>" in html and "<dd>the summary was sent</dd>" in html
    assert "<dd><code>did:local:alice</code></dd>" in html
    # the nested completion sits under the send_email invocation in the tree
    tree = html[html.index('<ul class="tree">') : html.index("<h2>Cost by model</h2>")]
    send = tree.index("invoke send_email")
    assert send < tree.index("completion by anthropic:claude-haiku") < tree.index("deny pay")
    assert re.search(r"anthropic:claude-sonnet</td><td class=\"num\">3</td>", html)
    assert "0.065000 USD" in html  # 0.01 + 0.02 + 0.005 + 0.03
    assert "payments need a human" in html and "RuntimeError: upstream timeout" in html
    assert '<div class="seal s-verified">' in html


def test_report_shows_terminations_memories_and_unpriced_cost(fx: Fixture) -> None:
    b = render_report(fx.store, fx.sessions["B"])
    assert "BudgetBreach" in b and "max_cost" in b and ">0.4<" in b and ">0.5<" in b
    assert re.search(r"openai:gpt-4o</td><td class=\"num\">2</td>.*?<td class=\"num\">1</td>", b)
    c = render_report(fx.store, fx.sessions["C"])
    assert "the CFO prefers e-mail" in c and f"in <code>{fx.sessions['A']}</code>" in c
    d = render_report(fx.store, fx.sessions["D"])
    assert '<div class="seal s-open">' in d and "ModelAPIError: 503" in d


@pytest.mark.allow_nonconforming
def test_report_says_when_the_record_was_altered(fx: Fixture) -> None:
    fx.store.clear(IRI("urn:trails:graph:memory-state"))  # not a session graph: not sealed
    assert report_data(fx.store, fx.sessions["A"])["seal"]["state"] == "verified"
    fx.store.write([Quad(IRI("urn:x"), IRI("urn:p"), Literal("forged"), fx.sessions["A"])])
    html = render_report(fx.store, fx.sessions["A"])
    assert '<div class="seal s-altered">' in html and "now" in html


@pytest.mark.allow_nonconforming  # a second end time for the run
def test_values_are_escaped(fx: Fixture) -> None:
    from trails.prov import PlanRunEnded

    fx.recorder.record(
        PlanRunEnded(
            session=fx.sessions["D"],
            activity=fx.runs["D"],
            ended=fx.clock(),
            stop_reason="error",
            answer="<script>alert(1)</script>",
        )
    )
    html = render_report(fx.store, fx.sessions["D"])
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_unknown_session(fx: Fixture) -> None:
    with pytest.raises(SessionError, match="no session urn:trails:session:zzz"):
        render_report(fx.store, "urn:trails:session:zzz")
    with pytest.raises(SessionError, match="not a session IRI"):
        render_report(fx.store, "not an iri")
