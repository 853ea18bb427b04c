"""Rule policies and human review: every path recorded, and answered by the query pack."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from tests.governance.conftest import plan

from trails.agent import Session
from trails.agent.planners import plan_and_execute, react
from trails.audit.querypack import get_query
from trails.errors import ConfigError, PolicyDenied, UserError
from trails.kernel import Context, capability, invoke
from trails.kernel.policy import Approval, RulePolicy
from trails.llm import LLMClient
from trails.prov import Recorder
from trails.prov.vocab import sparql_prefixes
from trails.store import Solutions, Store, to_python

BOB = "did:web:bob.example"

POLICY = RulePolicy(
    allow=["search_*"],
    review=["send_*"],
    deny=["delete_*"],
    deny_when=[{"tool": "send_email", "arg": "to", "pattern": "*@external.com"}],
    name="office",
)


def rows(store: Store, name: str, **values: object) -> list[dict[str, Any]]:
    result = get_query(name).run(store, **values)
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in r.items()} for r in result]


def decisions(store: Store) -> list[dict[str, Any]]:
    result = store.query(
        sparql_prefixes()
        + """
        SELECT ?cap ?decision ?rule ?review ?agent ?timeout ?invocation ?status WHERE { GRAPH ?g {
          ?d a trails:PolicyDecision ; trails:capabilityId ?cap ; trails:decision ?decision ;
             prov:startedAtTime ?at ;
             prov:qualifiedAssociation [ prov:agent ?agent ; prov:hadPlan ?rules ] .
          ?rules a prov:Plan ; prov:wasAttributedTo ?policy .
          ?policy a trails:Policy .
          OPTIONAL { ?d trails:matchedRule ?rule }
          OPTIONAL { ?d trails:reviewOutcome ?review }
          OPTIONAL { ?d trails:approvalTimeoutS ?timeout }
          OPTIONAL { ?invocation trails:authorizedBy ?d ; trails:status ?status }
        } } ORDER BY ?at"""
    )
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in r.items()} for r in result]


@pytest.fixture
def office() -> dict[str, list[Any]]:
    """Four capabilities; a counter of what actually ran."""
    ran: dict[str, list[Any]] = {"search": [], "send": [], "delete": [], "archive": []}

    @capability(id="search_web")
    def search_web(q: str) -> str:
        ran["search"].append(q)
        return f"results for {q}"

    @capability(id="send_email", side_effects=True)
    def send_email(to: str, body: str) -> str:
        ran["send"].append(to)
        return "sent"

    @capability(id="delete_file", side_effects=True)
    def delete_file(path: str) -> str:
        ran["delete"].append(path)
        return "deleted"

    @capability(id="archive", side_effects=True)
    def archive(path: str) -> str:
        ran["archive"].append(path)
        return "archived"

    return ran


def test_rules_are_evaluated_deny_then_review_then_allow() -> None:
    both = RulePolicy(allow=["x*"], review=["x*"], deny=["x*"])
    spec: Any = type("S", (), {"id": "xy"})()
    assert both.decide(spec, {}, None).decision == "deny"  # type: ignore[arg-type]
    assert RulePolicy(allow=["x*"], review=["x*"]).decide(spec, {}, None).rule == "review:x*"  # type: ignore[arg-type]
    assert RulePolicy(allow=["x*"]).decide(spec, {}, None).rule == "allow:x*"  # type: ignore[arg-type]
    unknown = RulePolicy().decide(spec, {}, None)  # type: ignore[arg-type]
    assert (unknown.decision, unknown.rule) == ("review", "unknown")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"allow": "search_*"},
        {"deny": [""]},
        {"deny_when": [{"tool": "x"}]},
        {"unknown": "maybe"},
        {"name": " "},
    ],
)
def test_bad_rules_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(UserError):
        RulePolicy(**kwargs)


def test_every_policy_path_is_recorded_and_queryable(
    recorder: Recorder, store: Store, office: dict[str, list[Any]]
) -> None:
    asked: list[tuple[str, dict[str, Any], str]] = []
    release = threading.Event()

    def approver(spec: Any, args: dict[str, Any], reason: str) -> Any:
        asked.append((spec.id, dict(args), reason))
        if spec.id == "archive":  # unknown -> review; a slow reviewer times out
            release.wait()
            return True
        if args.get("to") == "cfo@corp.example":
            return Approval(True, reviewer=BOB, note="CFO is expected")
        return Approval(False, reviewer=BOB, note="not this one")

    ctx = Context.open(
        "did:local:alice",
        recorder=recorder,
        policy=POLICY,
        approver=approver,
        approval_timeout_s=0.2,
    )
    # allow
    assert invoke("search_web", {"q": "prices"}, ctx=ctx) == "results for prices"
    # deny
    with pytest.raises(PolicyDenied, match=r"deny rule 'delete_\*'"):
        invoke("delete_file", {"path": "/etc"}, ctx=ctx)
    # deny_when: denied before anyone is asked
    with pytest.raises(PolicyDenied, match=r"matches '\*@external\.com'"):
        invoke("send_email", {"to": "eve@external.com", "body": "hi"}, ctx=ctx)
    # review approved
    assert invoke("send_email", {"to": "cfo@corp.example", "body": "Q3"}, ctx=ctx) == "sent"
    # review refused
    with pytest.raises(PolicyDenied, match="review: not approved"):
        invoke("send_email", {"to": "intern@corp.example", "body": "Q3"}, ctx=ctx)
    # unknown -> review, which times out
    with pytest.raises(PolicyDenied, match="timed out"):
        invoke("archive", {"path": "/reports"}, ctx=ctx)
    release.set()
    ctx.close()

    assert office == {
        "search": ["prices"],
        "send": ["cfo@corp.example"],
        "delete": [],
        "archive": [],
    }
    # the approver got the capability, the arguments and the policy's reason
    assert asked[0] == (
        "send_email",
        {"to": "cfo@corp.example", "body": "Q3"},
        "send_email matches review rule 'send_*'",
    )
    assert asked[2] == ("archive", {"path": "/reports"}, "no rule names archive")
    assert [a[0] for a in asked] == ["send_email", "send_email", "archive"]

    recorded = decisions(store)
    policy_iri = recorder.minter.policy("office")
    bob = recorder.minter.agent(BOB)
    approver_agent = recorded[5]["agent"]
    assert [
        (d["cap"], d["decision"], d["rule"], d.get("review"), d["agent"]) for d in recorded
    ] == [
        ("search_web", "allow", "allow:search_*", None, policy_iri),
        ("delete_file", "deny", "deny:delete_*", None, policy_iri),
        ("send_email", "deny", "deny_when:send_email:to=*@external.com", None, policy_iri),
        ("send_email", "allow", "review:send_*", "approved", bob),
        ("send_email", "deny", "review:send_*", "refused", bob),
        ("archive", "deny", "unknown", "timed_out", approver_agent),
    ]
    assert "approver" in str(approver_agent) and "test_policy" in str(approver_agent)
    assert recorded[5]["timeout"] == 0.2
    # the calls that ran are linked to the decision that let them run
    assert [(d["cap"], d.get("status")) for d in recorded if d.get("invocation")] == [
        ("search_web", "ok"),
        ("send_email", "ok"),
    ]

    # "which side-effecting calls were approved, by whom?"
    (approved,) = rows(store, "approvals")
    assert approved["capability"] == "send_email" and approved["reviewer"] == bob
    assert approved["reviewerId"] == BOB and approved["policyName"] == "office"
    assert approved["policy"] == policy_iri and approved["status"] == "ok"
    assert approved["invocation"] == recorded[3]["invocation"]
    everything = rows(store, "approvals", all=True)
    assert [r["outcome"] for r in everything] == ["approved", "refused", "timed_out"]
    assert rows(store, "approvals", reviewer=bob, all=True)[1]["outcome"] == "refused"

    # "what was denied, and why?"
    denied = rows(store, "policy-denials")
    assert [(d["capability"], d["rule"], d.get("review")) for d in denied] == [
        ("delete_file", "deny:delete_*", None),
        ("send_email", "deny_when:send_email:to=*@external.com", None),
        ("send_email", "review:send_*", "refused"),
        ("archive", "unknown", "timed_out"),
    ]
    assert denied[2]["reviewer"] == bob
    assert "not this one" in denied[2]["reason"]
    assert "no answer within 0.2 s" in denied[3]["reason"]


def test_async_approvers_and_no_approver(recorder: Recorder, office: dict[str, list[Any]]) -> None:
    async def approve(spec: Any, args: dict[str, Any], reason: str) -> bool:
        return args["to"].endswith("@corp.example")

    ctx = Context.open("did:local:alice", recorder=recorder, policy=POLICY, approver=approve)
    assert invoke("send_email", {"to": "a@corp.example", "body": "x"}, ctx=ctx) == "sent"
    with pytest.raises(PolicyDenied, match="not approved"):
        invoke("send_email", {"to": "a@other.example", "body": "x"}, ctx=ctx)
    alone = Context.open("did:local:alice", recorder=recorder, policy=POLICY)
    with pytest.raises(PolicyDenied, match="no approver"):
        invoke("send_email", {"to": "a@corp.example", "body": "x"}, ctx=alone)
    assert office["send"] == ["a@corp.example"]
    outcomes = [d.get("review") for d in decisions(recorder.store)]
    assert outcomes == ["approved", "refused", "no_approver"]


def test_an_approver_that_raises_refuses(recorder: Recorder, office: dict[str, list[Any]]) -> None:
    def broken(spec: Any, args: dict[str, Any], reason: str) -> bool:
        raise RuntimeError("reviewer console down")

    ctx = Context.open("did:local:alice", recorder=recorder, policy=POLICY, approver=broken)
    with pytest.raises(PolicyDenied, match="reviewer console down"):
        invoke("send_email", {"to": "a@corp.example", "body": "x"}, ctx=ctx)
    assert office["send"] == []


def test_session_and_planner_policies_govern_a_run(
    store: Store, office: dict[str, list[Any]], reply: Any
) -> None:
    def script() -> LLMClient:
        return LLMClient.mock(
            response=[
                reply("delete_file", {"path": "/tmp/x"}),
                reply("send_email", {"to": "cfo@corp.example", "body": "done"}),
                reply("finish", final_answer="ok"),
            ]
        )

    said: list[str] = []
    session = Session.new(
        principal="did:local:alice",
        policy=POLICY,
        approver=lambda spec, args, reason: said.append(reason) is None,
    )
    result = react.run("Tidy up and tell the CFO.", llm=script(), session=session)
    assert [s.observation for s in result.steps[:2]] == [
        "error: policy denied 'delete_file': delete_file matches deny rule 'delete_*'",
        "sent",
    ]
    assert said == ["send_email matches review rule 'send_*'"]
    # a planner's own policy replaces the session's for that run
    strict = RulePolicy(deny=["send_*"], allow=["*"], name="strict")
    other = plan_and_execute.run(
        "Tell the CFO.",
        llm=LLMClient.mock(
            response=[
                plan(
                    {"action": "send_email", "action_input": {"to": "a@b", "body": "x"}},
                    {"action": "finish", "action_input": {}, "final_answer": "sent"},
                ),
                plan({"action": "finish", "action_input": {}, "final_answer": "could not"}),
            ]
        ),
        session=session,
        policy=strict,
    )
    session.close()
    assert office["send"] == ["cfo@corp.example"]
    assert "deny rule 'send_*'" in str(other.steps[0].observation)  # not review
    names = {d["agent"] for d in decisions(store) if d["decision"] == "deny"}
    assert names == {store_policy(store, "office"), store_policy(store, "strict")}


def store_policy(store: Store, name: str) -> Any:
    from trails.prov.iri import Minter

    return Minter().policy(name)


def test_trails_toml_policy_applies_to_sessions_without_one(
    tmp_path: Path, store: Store, office: dict[str, list[Any]], reply: Any
) -> None:
    (tmp_path / "trails.toml").write_text(
        '[policy]\nallow = ["search_*"]\ndeny = ["send_*"]\nname = "house rules"\n'
        "approval_timeout_s = 5\n"
        '[[policy.deny_when]]\ntool = "search_*"\narg = "q"\npattern = "*secret*"\n',
        encoding="utf-8",
    )
    session = Session(principal="did:local:alice")
    assert isinstance(session.context.policy, RulePolicy)
    assert session.context.policy.name == "house rules"
    assert session.context.approval_timeout_s == 5.0
    result = react.run(
        "Look around.",
        llm=LLMClient.mock(
            response=[
                reply("search_web", {"q": "top secret plans"}),
                reply("search_web", {"q": "weather"}),
                reply("finish", final_answer="ok"),
            ]
        ),
        session=session,
    )
    session.close()
    assert office["search"] == ["weather"]
    assert "matches '*secret*'" in str(result.steps[0].observation)
    # a session's own policy wins over the file
    own = Session(principal="did:local:alice", policy=RulePolicy(allow=["*"], name="mine"))
    assert own.context.policy is not None and own.context.policy.name == "mine"
    own.close()


def test_bad_policy_configuration_is_a_config_error(tmp_path: Path, store: Store) -> None:
    (tmp_path / "trails.toml").write_text('[policy]\nallow = ["a"]\nalow = ["b"]\n')
    with pytest.raises(ConfigError, match="unknown keys: alow"):
        Session(principal="did:local:alice").context  # noqa: B018
    (tmp_path / "trails.toml").write_text('[policy]\nallow = "a"\n')
    with pytest.raises(ConfigError, match="list of glob strings"):
        Session(principal="did:local:alice").context  # noqa: B018
    (tmp_path / "trails.toml").write_text('[policy]\nallow = ["a"]\napproval_timeout_s = 0\n')
    with pytest.raises(ConfigError, match="approval_timeout_s"):
        Session(principal="did:local:alice").context  # noqa: B018


def test_bad_governance_arguments_are_refused() -> None:
    with pytest.raises(UserError, match="policy="):
        Session(principal="did:local:alice", policy="strict")
    with pytest.raises(UserError, match="approver="):
        Session(principal="did:local:alice", approver="bob")
    with pytest.raises(UserError, match="approval_timeout_s="):
        Session(principal="did:local:alice", approval_timeout_s=-1)


class _Writes:
    """A store that counts the writes made through it."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.writes = 0

    def write(self, quads: Any, *, remove: Any = ()) -> None:
        self.writes += 1
        self.inner.write(quads, remove=remove)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_an_allowing_decision_is_written_with_the_call_it_let_run(
    store: Store, office: dict[str, list[Any]]
) -> None:
    counted = _Writes(store)
    ctx = Context.open(BOB, recorder=Recorder(counted), policy=POLICY)  # type: ignore[arg-type]
    before = counted.writes
    invoke("search_web", {"q": "x"}, ctx=ctx)
    assert counted.writes == before + 1  # decision and invocation: one atomic write
    with pytest.raises(PolicyDenied):
        invoke("delete_file", {"path": "d1"}, ctx=ctx)
    assert counted.writes == before + 2  # a denial is written alone (no call follows)
    ctx.close()
    found = {(d["cap"], d["decision"], d.get("status")) for d in decisions(store)}
    assert found == {("search_web", "allow", "ok"), ("delete_file", "deny", None)}
    assert office["search"] == ["x"] and office["delete"] == []
