"""The kernel: registry and manifests, invoke and what it records, policies, cost tracker."""

from __future__ import annotations

from typing import Any

import pytest

import trails
from trails.errors import (
    BudgetExceeded,
    CapabilityError,
    PolicyDenied,
    UnknownCapability,
    UserError,
    ValidationError,
)
from trails.kernel import (
    Context,
    CostTracker,
    Decision,
    all_capabilities,
    capability,
    get_capability,
    invoke,
)
from trails.prov import Recorder
from trails.store import IRI, Store, to_python

PREFIXES = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
"""


def invocations(store: Store) -> list[dict[str, Any]]:
    rows = store.query(
        PREFIXES
        + """
        SELECT ?a ?cap ?status ?error ?input ?output ?parent ?start ?end WHERE {
          GRAPH ?g {
            ?a a trails:CapabilityInvocation, prov:Activity ;
               trails:status ?status ; prov:startedAtTime ?start ; prov:endedAtTime ?end ;
               prov:qualifiedAssociation/prov:hadPlan/trails:capabilityId ?cap ;
               prov:used ?in .
            GRAPH ?cg1 { ?in prov:value ?input }
            OPTIONAL { GRAPH ?errorMessageGraph1 { ?a trails:errorMessage ?error } }
            OPTIONAL { ?out prov:wasGeneratedBy ?a . GRAPH ?cg2 { ?out prov:value ?output } }
            OPTIONAL { ?a prov:wasInformedBy ?parent }
          }
        } ORDER BY ?start"""
    )
    return [{k: to_python(v) for k, v in row.items()} for row in rows]  # type: ignore[union-attr]


def test_capability_manifest_from_type_hints() -> None:
    @capability(id="notes.search", description="Search notes by tag.", side_effects=False)
    def search(ctx: Context, tag: str, limit: int = 5) -> dict[str, list[str]]:
        return {"hits": []}

    spec = get_capability("notes.search")
    manifest = spec.manifest()
    assert manifest["description"] == "Search notes by tag."
    assert manifest["params"] == [
        {"name": "tag", "type": "str", "required": True},
        {"name": "limit", "type": "int", "required": False, "default": 5},
    ]
    assert manifest["input_schema"]["required"] == ["tag"]
    assert manifest["output_schema"]["type"] == "object"
    meta = spec.metadata()
    assert meta["required"] == ["tag"] and meta["params"] == ["tag", "limit"]


def test_registry_keeps_insertion_order_and_reregistration_moves_to_end() -> None:
    before = [c.id for c in all_capabilities()]
    for name in ("a.one", "a.two", "a.one"):
        capability(id=name)(lambda: None)
    ids = [c.id for c in all_capabilities()]
    assert ids[len(before) :] == ["a.two", "a.one"]


def test_bad_capability_definitions_are_user_errors() -> None:
    with pytest.raises(UserError):
        capability(id="")
    with pytest.raises(UserError, match="kwargs"):
        capability(id="bad.kwargs")(lambda **kw: None)


def test_invoke_returns_result_and_records_a_complete_activity(ctx: Context, store: Store) -> None:
    @capability(id="notes.search")
    def search(ctx: Context, tag: str) -> dict[str, list[str]]:
        return {"hits": ["n1", "n2"]}

    assert invoke("notes.search", {"tag": "urgent"}, ctx=ctx) == {"hits": ["n1", "n2"]}
    [row] = invocations(store)
    assert row["cap"] == "notes.search" and row["status"] == "ok"
    assert row["input"] == '{"tag":"urgent"}' and row["output"] == '{"hits":["n1","n2"]}'
    assert row["parent"] == ctx.session and row["start"] <= row["end"]


def test_validation_failure_is_recorded_as_invalid(ctx: Context, store: Store) -> None:
    @capability(id="notes.search")
    def search(tag: str) -> list[str]:
        return []

    with pytest.raises(ValidationError, match="tag"):
        invoke("notes.search", {"tag": ["not", "a", "string"], "extra": 1}, ctx=ctx)
    [row] = invocations(store)
    assert row["status"] == "invalid" and "extra" in row["error"] and "output" not in row


def test_handler_exception_leaves_a_complete_failed_activity(ctx: Context, store: Store) -> None:
    @capability(id="boom")
    def boom() -> None:
        raise RuntimeError("disk on fire")

    with pytest.raises(CapabilityError) as info:
        invoke("boom", {}, ctx=ctx)
    assert isinstance(info.value.__cause__, RuntimeError)
    [row] = invocations(store)
    assert row["status"] == "error" and row["error"] == "RuntimeError: disk on fire"
    assert row["end"] >= row["start"]


def test_unknown_capability(ctx: Context) -> None:
    with pytest.raises(UnknownCapability, match="nope"):
        invoke("nope", {}, ctx=ctx)


def test_nested_invocation_is_informed_by_its_caller(ctx: Context, store: Store) -> None:
    @capability(id="inner")
    def inner() -> int:
        return 1

    @capability(id="outer")
    def outer(ctx: Context) -> int:
        return int(invoke("inner", {}, ctx=ctx)) + 1

    assert invoke("outer", {}, ctx=ctx) == 2
    rows = {r["cap"]: r for r in invocations(store)}
    assert rows["inner"]["parent"] == rows["outer"]["a"]


def test_invocation_envelopes_are_collected_when_asked(recorder: Recorder) -> None:
    ctx = Context.open("did:local:alice", recorder=recorder, invocations=[])

    @capability(id="echo")
    def echo(x: str) -> str:
        return x

    invoke("echo", {"x": "hi"}, ctx=ctx)
    assert ctx.invocations is not None
    [env] = ctx.invocations
    assert env.capability == "echo" and env.result == "hi" and env.status == "ok"
    assert len(env.args_sha256) == 64 and env.activity.startswith("urn:trails:activity:")


def test_default_context_records_into_a_session(store: Store) -> None:
    @capability(id="echo")
    def echo(x: str) -> str:
        return x

    trails.invoke("echo", {"x": "no ctx"})
    sessions = store.query(PREFIXES + "SELECT ?s WHERE { GRAPH ?s { ?s a trails:Session } }")
    assert len(sessions) == 1  # type: ignore[arg-type]
    assert len(invocations(store)) == 1


def test_hash_only_content_mode_records_no_values(store: Store) -> None:
    ctx = Context.open("did:local:alice", recorder=Recorder(store, content="hash"))

    @capability(id="secret")
    def secret(pin: str) -> str:
        return "ok"

    invoke("secret", {"pin": "1234"}, ctx=ctx)
    assert b"1234" not in store.dump(format="nquads")  # type: ignore[operator]
    assert store.query(PREFIXES + "ASK { GRAPH ?g { ?e trails:sha256 ?h } }") is True


class DenyWrites:
    name = "no-writes"

    def decide(self, spec: Any, args: dict[str, Any], ctx: Context) -> Decision:
        if spec.side_effects:
            return Decision("deny", "writes are not allowed here")
        return Decision("allow", "read-only")


def test_policy_decisions_are_recorded_and_denials_raise(recorder: Recorder, store: Store) -> None:
    ctx = Context.open("did:local:alice", recorder=recorder, policy=DenyWrites())

    @capability(id="notes.read")
    def read() -> str:
        return "text"

    @capability(id="notes.delete", side_effects=True)
    def delete() -> None:
        raise AssertionError("must not run")

    assert invoke("notes.read", {}, ctx=ctx) == "text"
    with pytest.raises(PolicyDenied, match="writes are not allowed"):
        invoke("notes.delete", {}, ctx=ctx)
    rows = store.query(
        PREFIXES
        + """SELECT ?cap ?decision ?policy WHERE { GRAPH ?g {
            ?d a trails:PolicyDecision, prov:Activity ; trails:capabilityId ?cap ;
               trails:decision ?decision ; prov:wasAssociatedWith ?policy } } ORDER BY ?cap"""
    )
    got = [(to_python(r["cap"]), to_python(r["decision"])) for r in rows]  # type: ignore[union-attr]
    assert got == [("notes.delete", "deny"), ("notes.read", "allow")]
    assert [r["cap"] for r in invocations(store)] == ["notes.read"]


def test_review_decisions_ask_the_approver(recorder: Recorder) -> None:
    class Review:
        name = "review"

        def decide(self, spec: Any, args: dict[str, Any], ctx: Context) -> Decision:
            return Decision("review", "needs a human")

    approved: list[str] = []
    ctx = Context.open(
        "did:local:alice",
        recorder=recorder,
        policy=Review(),
        approver=lambda spec, args: approved.append(spec.id) is None and args["x"] == "yes",
    )

    @capability(id="act")
    def act(x: str) -> str:
        return x

    assert invoke("act", {"x": "yes"}, ctx=ctx) == "yes"
    with pytest.raises(PolicyDenied, match="not approved"):
        invoke("act", {"x": "no"}, ctx=ctx)
    assert approved == ["act", "act"]


def test_context_extras_are_attributes(recorder: Recorder) -> None:
    ctx = Context.open("did:local:alice", recorder=recorder, extras={"graph": {"d1": "doc"}})
    assert ctx.graph == {"d1": "doc"}
    with pytest.raises(AttributeError):
        _ = ctx.nothing_here


def test_session_start_and_end_are_recorded(recorder: Recorder, store: Store) -> None:
    with Context.open("did:local:bob", recorder=recorder, label="work") as ctx:
        pass
    row = next(
        iter(
            store.query(  # type: ignore[arg-type]
                PREFIXES
                + """SELECT ?start ?end ?status ?who WHERE { GRAPH $s {
                $s prov:startedAtTime ?start ; prov:endedAtTime ?end ; trails:status ?status ;
                   prov:wasAssociatedWith ?who } }""".replace("SELECT", "SELECT $s", 1),
                {"s": ctx.session},
            )
        )
    )
    assert to_python(row["status"]) == "ok" and row["who"] == IRI("did:local:bob")
    assert to_python(row["start"]) <= to_python(row["end"])


def test_cost_tracker_counts_children_once_and_enforces_budgets() -> None:
    tracker = CostTracker()
    leaf = tracker.book(tag="llm:m", principal="p", usd=0.5, input_tokens=100, output_tokens=20)
    tracker.book(
        tag="cap.summarize",
        principal="p",
        usd=0.5,
        input_tokens=100,
        output_tokens=20,
        parent_call_id=leaf.call_id,
        dedupe="child",
    )
    tracker.book(tag="llm:local", principal="q", usd=None, input_tokens=5)
    assert tracker.total_usd() == 0.5 and tracker.total_tokens() == 125
    assert tracker.total_usd("p") == 0.5 and tracker.unknown_usd() == 1
    tracker.set_budget("p", usd=0.5)
    with pytest.raises(BudgetExceeded) as info:
        tracker.check("p")
    assert info.value.limit == 0.5 and info.value.observed == 0.5
    tracker.check("q")  # no budget: never raises
    tracker.set_budget("q", tokens=10)
    tracker.check("q")


def test_cost_tracker_totals_stay_right_past_the_kept_envelopes() -> None:
    """A long-running process: the tracker lists only its newest envelopes, while the
    totals (overall and per principal) still count every spend ever booked."""
    tracker = CostTracker(keep=5)
    for i in range(12):
        tracker.book(tag="llm:m", principal="p" if i % 3 else "q", usd=0.25, input_tokens=10)
    leaf = tracker.book(tag="llm:m", principal="p", usd=1.0, output_tokens=7)
    tracker.book(
        tag="cap.wrap", principal="p", usd=1.0, parent_call_id=leaf.call_id, dedupe="child"
    )
    tracker.book(tag="llm:local", principal="q", usd=None, input_tokens=3)
    kept = tracker.envelopes()
    assert len(kept) == 5 and kept[-1].tag == "llm:local" and kept[-2].tag == "cap.wrap"
    assert [e.tag for e in tracker.envelopes(principal="q")] == ["llm:local"]
    assert tracker.total_usd() == 12 * 0.25 + 1.0
    assert tracker.total_tokens() == 12 * 10 + 7 + 3
    assert tracker.total_usd("p") == 8 * 0.25 + 1.0 and tracker.total_tokens("p") == 87
    assert tracker.total_usd("q") == 4 * 0.25 and tracker.total_tokens("q") == 43
    assert tracker.unknown_usd() == 1 and tracker.unknown_usd("p") == 0
    assert tracker.total_usd("nobody") == 0 and tracker.total_tokens("nobody") == 0
    tracker.set_budget("p", usd=3.0)
    with pytest.raises(BudgetExceeded) as info:  # spends no longer listed still count
        tracker.check("p")
    assert info.value.observed == 3.0
    tracker.reset()
    assert tracker.envelopes() == [] and tracker.total_usd() == 0 and tracker.total_tokens() == 0
    tracker.check("p")  # the budget went with the reset
    with pytest.raises(ValueError, match="keep"):
        CostTracker(keep=-1)


def test_calls_inside_a_handler_link_to_its_invocation_without_ctx(
    recorder: Recorder, store: Store
) -> None:
    """The seed's ``ctx.llm.complete(...)`` and a bare nested ``invoke`` need no ``ctx=``."""
    from trails.llm import LLMClient

    ctx = Context.open("did:local:alice", recorder=recorder, llm=LLMClient.mock("a summary"))

    @capability(id="evidence.lookup")
    def lookup() -> str:
        return "the text"

    @capability(id="evidence.summarize")
    def summarize(ctx: Context, text: str) -> str:
        source = invoke("evidence.lookup", {})
        return str(ctx.llm.complete(f"Summarize:\n{text} {source}").text)

    assert invoke("evidence.summarize", {"text": "filing"}, ctx=ctx) == "a summary"
    rows = store.query(
        PREFIXES
        + """SELECT ?kind ?parentCap WHERE { GRAPH ?g {
            ?child prov:wasInformedBy ?call ; a ?kind .
            ?call prov:qualifiedAssociation/prov:hadPlan/trails:capabilityId ?parentCap .
            FILTER(?kind IN (trails:LLMCompletion, trails:CapabilityInvocation)) } }"""
    )
    got = sorted((str(r["kind"]).rsplit("#")[-1], to_python(r["parentCap"])) for r in rows)  # type: ignore[union-attr]
    assert got == [
        ("CapabilityInvocation", "evidence.summarize"),
        ("LLMCompletion", "evidence.summarize"),
    ]
    # outside any handler, the process default session is used again
    from trails.kernel import current_context, default_context

    assert current_context() is default_context()


def test_text_that_is_not_unicode_is_refused_clearly_and_recorded(
    ctx: Context, store: Store
) -> None:
    @capability(id="echo")
    def echo(x: str) -> str:
        return x

    @capability(id="bad.out")
    def bad_out() -> str:
        return "a\ud800b"

    with pytest.raises(ValidationError, match="not valid Unicode"):
        invoke("echo", {"x": "lone \ud800 surrogate"}, ctx=ctx)
    with pytest.raises(CapabilityError, match="cannot be recorded"):
        invoke("bad.out", {}, ctx=ctx)
    rows = {r["cap"]: r for r in invocations(store)}
    assert rows["echo"]["status"] == "invalid" and "\\ud800" in rows["echo"]["input"]
    assert rows["bad.out"]["status"] == "error" and "output" not in rows["bad.out"]


def test_envelope_hashes_match_the_recorded_content(recorder: Recorder, store: Store) -> None:
    ctx = Context.open("did:local:alice", recorder=recorder, invocations=[])

    @capability(id="echo")
    def echo(x: str) -> dict[str, str]:
        return {"x": x}

    invoke("echo", {"x": "é"}, ctx=ctx)
    with pytest.raises(ValidationError):
        invoke("echo", {"x": "\ud800"}, ctx=ctx)
    assert ctx.invocations is not None
    ok, bad = ctx.invocations
    rows = store.query(
        PREFIXES
        + """SELECT ?a ?in ?out WHERE { GRAPH ?g {
            ?a a trails:CapabilityInvocation ; prov:used/trails:sha256 ?in .
            OPTIONAL { ?o prov:wasGeneratedBy ?a ; trails:sha256 ?out } } }"""
    )
    recorded = {str(r["a"]): (to_python(r["in"]), to_python(r.get("out"))) for r in rows}  # type: ignore[union-attr]
    assert recorded[ok.activity] == (ok.args_sha256, ok.result_sha256)
    assert recorded[bad.activity] == (bad.args_sha256, None) and bad.result_sha256 is None


def test_a_child_context_changes_only_what_it_is_given(recorder: Recorder) -> None:
    ctx = Context.open("did:local:alice", recorder=recorder)
    ctx.extras["note"] = "kept"
    run = IRI("urn:trails:activity:run")
    before = (ctx.parent, ctx.step)
    child = ctx.child(parent=run, step=2)
    assert (child.parent, child.step) == (run, 2) and (ctx.parent, ctx.step) == before
    assert child.session == ctx.session and child.recorder is ctx.recorder
    assert child.tracker is ctx.tracker and child.note == "kept"  # extras are shared
    assert child.lifecycle is ctx.lifecycle and type(child) is Context
    with pytest.raises(TypeError, match="no field parnet"):
        ctx.child(parnet=run)
    ctx.close()
