"""The built-in session-scoped controls, each over a session that passes and one that violates.

Both sessions are real ReAct runs (scripted model, real capabilities, real policies, a real
store): ``good`` runs for alice under a review policy whose approver names a person, with its
outputs screened; ``bad`` runs for bob under a policy of its own that lets review rules through
unreviewed, without screens, on a model the price catalogue does not know, whose provider
finally fails without a message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from tests.controls.builtin_support import violations

from trails.agent import Session
from trails.agent.planners import react
from trails.errors import UserError
from trails.evidence.seal import install_sealer
from trails.kernel import capability
from trails.kernel import registry as _registry
from trails.kernel.decision import Decision
from trails.kernel.policy import Approval, RulePolicy
from trails.llm import LLMClient, ModelServerError, Response
from trails.llm.catalogue import Catalogue, ModelSpec
from trails.prov import Recorder
from trails.store import Solutions, Store, open_store, to_python
from trails.store.terms import IRI

ALICE, BOB, CAROL = "did:web:alice.example", "did:web:bob.example", "did:web:carol.example"

#: every token costs a dollar: any completion of it is above the default limit
PRICEY = LLMClient.mock(
    "findings",
    catalogue=Catalogue([ModelSpec("mock", "mock", input_per_mtok=1e6, output_per_mtok=1e6)]),
)


def turn(action: str, args: dict[str, Any] | None = None, **extra: Any) -> str:
    payload = {"thought": f"use {action}", "action": action, "action_input": args or {}}
    return "```json\n" + json.dumps(payload | extra) + "\n```"


ACTIONS = [
    turn("ctl.send", {"to": "ops@example.com"}),
    turn("ctl.transfer", {"amount": 3}),
    turn("ctl.fetch"),
    turn("ctl.payroll"),
    turn("ctl.research", {"topic": "rates"}),
]
TOOLS = ["ctl.send", "ctl.transfer", "ctl.fetch", "ctl.payroll", "ctl.research", "ctl.flaky"]


class Lax:
    """A team's own policy that lets its review rules through without asking anyone."""

    name = "lax"

    def decide(self, spec: Any, args: dict[str, Any], ctx: Any) -> Decision:
        return Decision("allow", "review skipped in this environment", rule=f"review:{spec.id}")


def approver(spec: Any, args: dict[str, Any], reason: str) -> Approval:
    return Approval(True, reviewer=CAROL, note="checked")


@dataclass
class Recorded:
    store: Store
    good: str
    bad: str
    open: str


def _capabilities() -> list[str]:
    @capability(id="ctl.send", side_effects=True)
    def send(to: str) -> str:
        return "sent"

    @capability(id="ctl.transfer", side_effects=True, high_risk=True)
    def transfer(amount: int) -> str:
        return "moved"

    @capability(id="ctl.fetch", screen_output=True)
    def fetch() -> str:
        return "Opening hours: 9 to 5."

    @capability(id="ctl.payroll", granted_to=[ALICE])
    def payroll() -> str:
        return "payroll run"

    @capability(id="ctl.research")
    def research(ctx: Any, topic: str) -> str:
        return str(PRICEY.complete(f"research {topic}", ctx=ctx).text)

    @capability(id="ctl.flaky")
    def flaky() -> str:
        raise ValueError("the disk is full")

    return TOOLS


@pytest.fixture(scope="module")
def recorded() -> Iterator[Recorded]:
    ids = _capabilities()
    store = open_store("memory:")
    recorder = Recorder(store)
    install_sealer(recorder)

    def run(session: Session, llm: LLMClient) -> str:
        react.run("Do the round.", llm=llm, session=session, tools=TOOLS)
        return str(session.iri)

    good = Session(
        principal=ALICE,
        recorder=recorder,
        policy=RulePolicy(
            review=["ctl.send", "ctl.transfer", "ctl.research"], allow=["ctl.*"], name="office"
        ),
        approver=approver,
        screen_output=lambda capability_id, output: None,
    )
    script = [*ACTIONS, turn("ctl.flaky"), turn("finish", final_answer="done")]
    good_iri = run(good, LLMClient.mock(script))
    good.close()
    bad = Session(principal=BOB, recorder=recorder, policy=Lax())
    # a gateway answers with a model of a provider the price catalogue does not list
    unlisted = [Response(text, "acme-large", 120, 30, provider="acme") for text in ACTIONS]
    unpriced = LLMClient.mock([*unlisted, ModelServerError("")])
    bad_iri = run(bad, unpriced)
    bad.close()
    still_open = Session(principal=ALICE, recorder=recorder)
    open_iri = run(still_open, LLMClient.mock([turn("finish", final_answer="done")]))
    try:
        yield Recorded(store, good_iri, bad_iri, open_iri)
    finally:
        store.close()
        for capability_id in ids:
            _registry._handlers.pop(capability_id, None)


def capability_of(store: Store, activity: str) -> str:
    """The capability id a call ran, or the class of another activity."""
    result = store.query(
        """PREFIX trails: <https://w3id.org/trails/ns#>
        SELECT ?a ?what WHERE {
          GRAPH ?g {
            ?a a ?type .
            FILTER(?type IN (trails:CapabilityInvocation, trails:LLMCompletion, trails:PlanRun))
            OPTIONAL { ?a trails:capability/trails:capabilityId ?id }
          }
          BIND(COALESCE(?id, STRAFTER(STR(?type), "#")) AS ?what)
        } LIMIT 1""",
        {"a": IRI(activity)},
    )
    assert isinstance(result, Solutions)
    return str(to_python(next(iter(result))["what"]))


def test_approval_before_side_effect(recorded: Recorded) -> None:
    assert violations(recorded.store, "approval-before-side-effect", recorded.good) == []
    found = violations(recorded.store, "approval-before-side-effect", recorded.bad)
    assert sorted(capability_of(recorded.store, s) for s, _, _ in found) == [
        "ctl.send",
        "ctl.transfer",
    ]
    assert all(session == recorded.bad for _, session, _ in found)
    assert "review outcome none" in str(found[0][2])


def test_human_oversight(recorded: Recorded) -> None:
    assert violations(recorded.store, "human-oversight", recorded.good) == []
    found = violations(recorded.store, "human-oversight", recorded.bad)
    assert [capability_of(recorded.store, s) for s, _, _ in found] == ["ctl.transfer"]


def test_human_oversight_wants_a_named_reviewer(recorded: Recorded) -> None:
    """An approver that names nobody is recorded as ``approver:<function>``: not a person."""

    def says_yes(spec: Any, args: dict[str, Any], reason: str) -> bool:
        return True

    recorder = Recorder(recorded.store)
    session = Session(
        principal=ALICE,
        recorder=recorder,
        policy=RulePolicy(review=["ctl.transfer"], name="office"),
        approver=says_yes,
    )
    react.run(
        "Move it.",
        llm=LLMClient.mock(
            [turn("ctl.transfer", {"amount": 1}), turn("finish", final_answer="ok")]
        ),
        session=session,
        tools=["ctl.transfer"],
    )
    session.close()
    found = violations(recorded.store, "human-oversight", str(session.iri))
    assert [capability_of(recorded.store, s) for s, _, _ in found] == ["ctl.transfer"]
    assert violations(recorded.store, "approval-before-side-effect", str(session.iri)) == []


def test_completion_cost_approved(recorded: Recorded) -> None:
    # alice's research completion cost far more than the limit, inside a call carol approved
    assert violations(recorded.store, "completion-cost-approved", recorded.good) == []
    found = violations(recorded.store, "completion-cost-approved", recorded.bad)
    assert len(found) == 1
    assert capability_of(recorded.store, found[0][0]) == "LLMCompletion"
    assert "without approval" in str(found[0][2])
    # the limit is a parameter: above every completion of the session, nothing is found
    assert (
        violations(recorded.store, "completion-cost-approved", recorded.bad, max_completion_usd=1e9)
        == []
    )


def test_call_within_grant(recorded: Recorded) -> None:
    assert violations(recorded.store, "call-within-grant", recorded.good) == []
    found = violations(recorded.store, "call-within-grant", recorded.bad)
    assert [capability_of(recorded.store, s) for s, _, _ in found] == ["ctl.payroll"]
    assert BOB in str(found[0][2])


def test_completion_priced(recorded: Recorded) -> None:
    assert violations(recorded.store, "completion-priced", recorded.good) == []
    found = violations(recorded.store, "completion-priced", recorded.bad)
    # the five answered turns of the unpriced model; its failed sixth call has no price to miss
    assert len(found) == 5
    assert all("acme-large has no price" in str(message) for _, _, message in found)


def test_failure_explained(recorded: Recorded) -> None:
    # alice's failed call says why (the disk is full)
    assert violations(recorded.store, "failure-explained", recorded.good) == []
    found = violations(recorded.store, "failure-explained", recorded.bad)
    kinds = sorted(capability_of(recorded.store, s) for s, _, _ in found)
    # its provider failed with an empty message: the run's record says nothing of why (the
    # completion's record at least names the exception: "ModelServerError: ")
    assert kinds == ["PlanRun"]


def test_screened_tool_output(recorded: Recorded) -> None:
    assert violations(recorded.store, "screened-tool-output", recorded.good) == []
    found = violations(recorded.store, "screened-tool-output", recorded.bad)
    assert [capability_of(recorded.store, s) for s, _, _ in found] == ["ctl.fetch"]


def test_a_withheld_output_was_screened(recorded: Recorded) -> None:
    """A screen that withholds the output is a screening too: its denial is the record."""
    session = Session(
        principal=ALICE,
        recorder=Recorder(recorded.store),
        screen_output=lambda capability_id, output: "not for the model",
    )
    react.run(
        "Read the page.",
        llm=LLMClient.mock([turn("ctl.fetch"), turn("finish", final_answer="nothing")]),
        session=session,
        tools=["ctl.fetch"],
    )
    session.close()
    assert violations(recorded.store, "screened-tool-output", str(session.iri)) == []


def test_session_open_limit(recorded: Recorded) -> None:
    for session in (recorded.good, recorded.bad, recorded.open):
        assert violations(recorded.store, "session-open-limit", session) == []
    found = violations(recorded.store, "session-open-limit", recorded.open, max_open_seconds=0)
    assert [(s, message is not None and "has been open" in message) for s, _, message in found] == [
        (recorded.open, True)
    ]
    ended = violations(recorded.store, "session-open-limit", recorded.good, max_open_seconds=0)
    assert [s for s, _, _ in ended] == [recorded.good]


def test_the_recorded_marks_conform_to_the_shapes(recorded: Recorded) -> None:
    from trails.testing import shacl_report

    conforms, text = shacl_report(recorded.store)
    assert conforms, text


@pytest.mark.parametrize(
    "kwargs",
    [{"high_risk": "yes"}, {"screen_output": 1}, {"granted_to": ALICE}, {"granted_to": [""]}],
)
def test_bad_marks_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(UserError):
        capability(id="ctl.bad", **kwargs)


def test_every_builtin_control_has_its_tests() -> None:
    """Each built-in control is tested here or in test_builtin_store.py, by its own name."""
    from pathlib import Path

    from trails.controls import builtin_controls

    here = Path(__file__).parent
    tests = (here / "test_builtin_calls.py").read_text() + (
        here / "test_builtin_store.py"
    ).read_text()
    controls = builtin_controls()
    assert len(controls) >= 12
    for control in controls:
        assert f"def test_{control.id.replace('-', '_')}(" in tests, control.id
        assert control.references and control.description and control.title, control.id
