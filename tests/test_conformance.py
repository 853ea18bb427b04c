"""Recorded graphs conform to shapes.ttl and read cleanly as PROV; broken ones are caught.

Every graph the kernel and the recorder produce (``invoke`` ok / invalid /
error, tool policy allow / deny / review, each event of ``trails.prov.events``
on its own and all together, full or hash-only content) conforms to the SHACL
shapes and is read by the ``prov`` package with exactly the activities,
entities and agents it holds. Deliberately broken graphs are reported, with
the node and the property named. The regulator queries of
``docs/provenance.md`` run here against a recorded session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import rdflib

from trails.errors import CapabilityError, PolicyDenied, ValidationError
from trails.kernel import CapabilitySpec, Context, Decision, capability, invoke
from trails.prov import Minter, Recorder
from trails.prov.events import (
    PLAN_CLASSES,
    CapabilityInvoked,
    CapabilityStarted,
    EntityRecorded,
    Event,
    LLMCompleted,
    PlanRunEnded,
    PlanRunStarted,
    PolicyDecided,
    SessionEnded,
    SessionStarted,
    Terminated,
    TreeNodeEnded,
    TreeNodeSkipped,
)
from trails.prov.vocab import PROV, RDF, TRAILS, T
from trails.store import Store
from trails.store.base import Solutions
from trails.store.terms import IRI, BNode, Literal, Quad, literal, to_python
from trails.testing import (
    assert_conforms,
    assert_prov_readable,
    conformance,
    prov_document,
    shacl_report,
    shapes_graph,
)
from trails.testing.conformance import record_sample_session

ALICE = "did:local:alice"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "provenance.md"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def kctx(recorder: Recorder) -> Context:
    """An open session whose invocations are listed, with two capabilities registered."""

    @capability(id="math.add", description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @capability(id="math.divide", description="Divide.", side_effects=True)
    def divide(a: float, b: float) -> float:
        return a / b

    return Context.open(ALICE, recorder=recorder, invocations=[])


def _only(ctx: Context) -> Any:
    assert ctx.invocations is not None and len(ctx.invocations) == 1
    return ctx.invocations[0]


def _cap(cid: str) -> str:
    return str(Minter().capability(cid))


# -- the kernel --------------------------------------------------------------------------


def test_invoke_ok_conforms(store: Store, kctx: Context) -> None:
    assert invoke("math.add", {"a": 2, "b": 3}, ctx=kctx) == 5
    kctx.close()
    inv = _only(kctx).activity
    assert_conforms(store)
    read = assert_prov_readable(
        store,
        activities={kctx.session, inv},
        entities={f"{inv}:input", f"{inv}:output", _cap("math.add")},
        agents={ALICE},
    )
    assert len(read.activities) == 2 and len(read.entities) == 3 and len(read.agents) == 1


def test_invoke_invalid_conforms(store: Store, kctx: Context) -> None:
    with pytest.raises(ValidationError):
        invoke("math.add", {"a": "two"}, ctx=kctx)
    inv = _only(kctx).activity
    assert _only(kctx).status == "invalid"
    assert_conforms(store)
    read = assert_prov_readable(store, activities={inv}, entities={f"{inv}:input"}, agents={ALICE})
    assert f"{inv}:output" not in read.entities


def test_invoke_handler_error_conforms(store: Store, kctx: Context) -> None:
    with pytest.raises(CapabilityError):
        invoke("math.divide", {"a": 1, "b": 0}, ctx=kctx)
    inv = _only(kctx).activity
    assert_conforms(store)
    read = assert_prov_readable(store, activities={inv}, entities={f"{inv}:input"})
    assert f"{inv}:output" not in read.entities


class _Policy:
    name = "no-division"

    def decide(self, spec: CapabilitySpec, args: dict[str, Any], ctx: Context) -> Decision:
        if spec.id == "math.divide":
            return Decision("deny", "division is not allowed")
        return Decision("allow", "arithmetic is fine")


def _decisions(store: Store) -> dict[str, str]:
    q = f"SELECT ?a ?d WHERE {{ GRAPH ?g {{ ?a {T.decision.n3()} ?d }} }}"
    result = store.query(q)
    assert isinstance(result, Solutions)
    return {str(row["a"]): to_python(row["d"]) for row in result}


def test_policy_allow_and_deny_conform(store: Store, kctx: Context) -> None:
    ctx = kctx.child(policy=_Policy())
    assert invoke("math.add", {"a": 1, "b": 1}, ctx=ctx) == 2
    with pytest.raises(PolicyDenied):
        invoke("math.divide", {"a": 1, "b": 2}, ctx=ctx)
    decisions = _decisions(store)
    assert sorted(decisions.values()) == ["allow", "deny"]
    assert_conforms(store)
    read = assert_prov_readable(
        store,
        activities=set(decisions) | {_only(kctx).activity},
        entities={_cap("math.add"), _cap("math.divide")},
        agents={ALICE, str(Minter().policy("no-division"))},
    )
    assert len(read.activities) == 4  # session, two decisions, one invocation


def test_policy_review_conforms(store: Store, kctx: Context) -> None:
    class Review:
        name = "four-eyes"

        def decide(self, spec: CapabilitySpec, args: dict[str, Any], ctx: Context) -> Decision:
            return Decision("review", "needs a second pair of eyes")

    ctx = kctx.child(policy=Review(), approver=lambda spec, args: True)
    assert invoke("math.add", {"a": 1, "b": 2}, ctx=ctx) == 3
    assert list(_decisions(store).values()) == ["allow"]
    assert_conforms(store)
    assert_prov_readable(store, activities=3, agents=2)


def test_nested_invocations_conform(store: Store, kctx: Context) -> None:
    @capability(id="math.twice")
    def twice(ctx: Context, a: int) -> int:
        return int(invoke("math.add", {"a": a, "b": a}, ctx=ctx))

    assert invoke("math.twice", {"a": 4}, ctx=kctx) == 8
    assert_conforms(store)
    assert_prov_readable(store, activities=3, entities=6, agents={ALICE})


def test_hash_only_content_conforms(store: Store) -> None:
    ctx = Context.open(ALICE, recorder=Recorder(store, content="hash"))

    @capability(id="echo")
    def echo(text: str) -> str:
        return text

    invoke("echo", {"text": "secret"}, ctx=ctx)
    assert b"secret" not in (store.dump(format="nquads") or b"")
    assert_conforms(store)
    assert_prov_readable(store, activities=2, entities=3, agents=1)


# -- every event on its own --------------------------------------------------------------


def _events(session: str, m: Minter) -> dict[str, tuple[list[Event], dict[str, int]]]:
    """Each event kind in the smallest session that holds it, with the PROV counts it gives."""
    run, llm, act = m.activity(), m.activity(), m.activity()
    start = SessionStarted(session=session, principal=ALICE, started=T0)
    plan_run = PlanRunStarted(
        session=session,
        activity=run,
        parent=None,
        principal=ALICE,
        strategy="react",
        goal="g",
        started=T0,
    )
    completion = LLMCompleted(
        session=session,
        activity=llm,
        parent=run,
        principal=ALICE,
        provider="mock",
        model="m1",
        started=T0,
        ended=T0,
        messages=[{"role": "user", "content": "hi"}],
        request_hash="a" * 64,
        text="hello",
        input_tokens=1,
        output_tokens=1,
        usd=0.0,
    )
    return {
        "SessionStarted": ([start], {"activities": 1, "entities": 0, "agents": 1}),
        "SessionEnded": (
            [start, SessionEnded(session=session, ended=T0, status="error")],
            {"activities": 1, "entities": 0, "agents": 1},
        ),
        "CapabilityInvoked": (
            [
                start,
                CapabilityInvoked(
                    session=session,
                    activity=act,
                    parent=session,
                    principal=ALICE,
                    capability_id="c",
                    started=T0,
                    ended=T0,
                    status="ok",
                    inputs={"x": [1, 2]},
                    output={"y": None},
                ),
            ],
            {"activities": 2, "entities": 3, "agents": 1},
        ),
        "CapabilityStarted": (
            [
                start,
                CapabilityStarted(
                    session=session,
                    activity=act,
                    parent=session,
                    principal=ALICE,
                    capability_id="pay",
                    started=T0,
                    inputs={"amount": 5},
                ),
            ],
            {"activities": 2, "entities": 2, "agents": 1},
        ),
        "LLMCompleted": ([start, completion], {"activities": 2, "entities": 2, "agents": 2}),
        "PlanRunStarted": ([start, plan_run], {"activities": 2, "entities": 0, "agents": 1}),
        "PlanRunEnded": (
            [
                start,
                plan_run,
                PlanRunEnded(
                    session=session,
                    activity=run,
                    ended=T0,
                    stop_reason="goal_achieved",
                    answer="42",
                ),
            ],
            {"activities": 2, "entities": 0, "agents": 1},
        ),
        "Terminated": (
            [
                start,
                plan_run,
                Terminated(
                    session=session, activity=run, kind="step_limit", reason="10 steps", at=T0
                ),
            ],
            {"activities": 2, "entities": 1, "agents": 1},
        ),
        "PolicyDecided": (
            [
                start,
                PolicyDecided(
                    session=session,
                    activity=act,
                    parent=session,
                    principal=ALICE,
                    policy="p",
                    capability_id="c",
                    decision="review",
                    at=T0,
                ),
                PolicyDecided(  # a reviewed call: associated with the reviewer, the rules as plan
                    session=session,
                    activity=m.activity(),
                    parent=session,
                    principal=ALICE,
                    policy="p",
                    capability_id="c",
                    decision="allow",
                    rule="review:c",
                    review="approved",
                    reviewer="did:web:reviewer.example",
                    approval_timeout_s=30.0,
                    at=T0,
                ),
            ],
            # session + 2 decisions; 2 inputs, capability, rules; principal, policy, reviewer
            {"activities": 3, "entities": 4, "agents": 3},
        ),
        "EntityRecorded": (
            [
                start,
                plan_run,
                completion,
                EntityRecorded(
                    session=session,
                    entity=m.entity(),
                    kind="Critique",
                    content={"verdict": "retry"},
                    generated_by=llm,
                    at=T0,
                ),
            ],
            {"activities": 3, "entities": 3, "agents": 2},
        ),
        "TreeNodeEnded": (
            [
                start,
                plan_run.model_copy(update={"strategy": "behaviour_tree"}),
                completion,
                TreeNodeEnded(
                    session=session,
                    activity=f"{run}:node1.1",
                    run=run,
                    node_id="1.1",
                    kind="agent",
                    outcome="success",
                    started=T0,
                    ended=T0,
                    informed_by=(llm,),
                ),
                TreeNodeEnded(
                    session=session,
                    activity=f"{run}:node1",
                    run=run,
                    node_id="1",
                    kind="parallel",
                    outcome="failure",
                    started=T0,
                    ended=T0,
                    root=True,
                    informed_by=(f"{run}:node1.1",),
                    skipped=(
                        TreeNodeSkipped(activity=f"{run}:node1.2", node_id="1.2", kind="action"),
                    ),
                    successes=1,
                    failures=1,
                    threshold=2,
                    policy="strict_majority",
                ),
            ],
            # session, run, completion, 3 nodes; the goal and the completion's messages;
            # principal, model
            {"activities": 6, "entities": 2, "agents": 2},
        ),
    }


EVENT_KINDS = [
    "SessionStarted",
    "SessionEnded",
    "CapabilityInvoked",
    "CapabilityStarted",
    "LLMCompleted",
    "PlanRunStarted",
    "PlanRunEnded",
    "Terminated",
    "PolicyDecided",
    "EntityRecorded",
    "TreeNodeEnded",
]


def test_every_event_kind_is_covered() -> None:
    import trails.prov.events as events

    defined = {
        name
        for name, obj in vars(events).items()
        if isinstance(obj, type) and issubclass(obj, Event) and obj is not Event
    }
    assert defined == set(EVENT_KINDS)


@pytest.mark.parametrize("kind", EVENT_KINDS)
def test_each_event_conforms_and_reads_as_prov(store: Store, recorder: Recorder, kind: str) -> None:
    session = recorder.minter.session()
    events, counts = _events(session, recorder.minter)[kind]
    for event in events:
        recorder.record(event)
    assert_conforms(store)
    read = assert_prov_readable(
        store,
        activities=counts["activities"],
        entities=counts["entities"],
        agents=counts["agents"],
    )
    assert (len(read.activities), len(read.entities), len(read.agents)) == (
        counts["activities"],
        counts["entities"],
        counts["agents"],
    )


@pytest.mark.parametrize("strategy", [*PLAN_CLASSES, "custom"])
def test_every_plan_strategy_conforms(store: Store, recorder: Recorder, strategy: str) -> None:
    session = recorder.minter.session()
    run = recorder.minter.activity()
    recorder.record(SessionStarted(session=session, principal=ALICE, started=T0))
    recorder.record(
        PlanRunStarted(
            session=session,
            activity=run,
            parent=None,
            principal=ALICE,
            strategy=strategy,
            goal="g",
            started=T0,
        )
    )
    recorder.record(PlanRunEnded(session=session, activity=run, ended=T0, stop_reason="error"))
    assert_conforms(store)
    assert_prov_readable(store, activities={run, session})


def test_sample_session_conforms_in_both_content_modes(store: Store, recorder: Recorder) -> None:
    full = record_sample_session(recorder)
    hashed = record_sample_session(Recorder(store, content="hash"), "did:local:bob")
    assert_conforms(store)
    read = assert_prov_readable(
        store,
        activities={full["run"], full["completion"], hashed["decision"]},
        entities={full["plan"], full["critique"], f"{full['run']}:termination"},
        agents={ALICE.replace("local", "example"), "did:local:bob"},
    )
    assert len(read.activities) == 14 and len(read.agents) == 4  # model and policy shared
    doc = prov_document(store)
    assert len(list(doc.bundles)) == 4  # one bundle per session graph and per content graph


# -- broken graphs -----------------------------------------------------------------------


Mutation = Callable[[Store, dict[str, IRI]], None]
XSD_DECIMAL = "http://www.w3.org/2001/XMLSchema#decimal"


def _value(store: Store, s: IRI, p: IRI) -> Literal:
    result = store.query("SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"s": s, "p": p})
    assert isinstance(result, Solutions) and len(result) == 1
    value = result.column("o")[0]
    assert isinstance(value, Literal)
    return value


def _replace(who: str, p: IRI, new: Any) -> Mutation:
    """Replace the one value of ``p`` on ``iris[who]`` (``new`` as a Python value or a Literal)."""

    def mutate(store: Store, iris: dict[str, IRI]) -> None:
        s, g = iris[who], iris["session"]
        value = new if isinstance(new, Literal) else literal(new)
        store.write([Quad(s, p, value, g)], remove=[Quad(s, p, _value(store, s, p), g)])

    return mutate


def _remove(who: str, p: IRI, o: str | None = None) -> Mutation:
    """Remove ``iris[who] p o`` (``o`` an IRI, a key of ``iris``, or None for its one literal)."""

    def mutate(store: Store, iris: dict[str, IRI]) -> None:
        s, g = iris[who], iris["session"]
        obj = _value(store, s, p) if o is None else iris[o] if o in iris else IRI(o)
        store.write([], remove=[Quad(s, p, obj, g)])

    return mutate


def _add(who: str, p: IRI, o: Any) -> Mutation:
    def mutate(store: Store, iris: dict[str, IRI]) -> None:
        obj = o if isinstance(o, IRI) else literal(o)
        store.write([Quad(iris[who], p, obj, iris["session"])])

    return mutate


def _add_blank_node(store: Store, iris: dict[str, IRI]) -> None:
    store.write([Quad(BNode("b0"), RDF.type, PROV.Entity, iris["session"])])


BROKEN: dict[str, tuple[Mutation, list[str]]] = {
    "end before start": (
        _replace("invocation", PROV.endedAtTime, datetime(2025, 1, 1, tzinfo=UTC)),
        ["prov:startedAtTime", "not after its prov:endedAtTime"],
    ),
    "missing prov:Activity type": (
        _remove("invocation", RDF.type, PROV.Activity),
        ["does not have class prov:Activity", "tsh:CapabilityInvocationShape"],
    ),
    "missing prov:Entity type": (
        _remove("plan", RDF.type, PROV.Entity),
        ["does not have class prov:Entity", "tsh:PlanDocumentShape"],
    ),
    "bad status value": (_replace("invocation", T.status, "done"), ["trails:status", '"done"']),
    "missing inSession": (
        _remove("invocation", T.inSession, "session"),
        ["trails:inSession", "names it, once"],
    ),
    "second inSession": (
        _add("completion", T.inSession, IRI("urn:trails:session:other")),
        ["trails:inSession"],
    ),
    "bad decision value": (_replace("decision", T.decision, "maybe"), ["trails:decision"]),
    "bad stop reason": (_replace("run", T.stopReason, "bored"), ["trails:stopReason"]),
    "tokens as a string": (
        _replace("completion", T.inputTokens, Literal("12")),
        ["trails:inputTokens", "xsd:integer"],
    ),
    "cost as a decimal": (
        _replace("completion", T.costUSD, Literal("0.5", XSD_DECIMAL)),
        ["trails:costUSD", "xsd:double"],
    ),
    "negative tokens": (_replace("completion", T.outputTokens, -1), ["trails:outputTokens"]),
    "sha256 not hex": (
        _add("plan", T.sha256, "not-a-hash"),
        ["trails:sha256", "64 lower-case hexadecimal digits"],
    ),
    "failed call without error message": (
        _remove("failed_invocation", T.errorMessageSha256),
        ["records trails:errorMessage", "tsh:InvocationErrorShape"],
    ),
    "successful call without output": (
        _remove("output", RDF.type, T.CapabilityOutput),
        ["generates exactly one trails:CapabilityOutput", "tsh:InvocationOutputShape"],
    ),
    "wasTerminatedBy without wasEndedBy": (
        _remove("run", PROV.wasEndedBy, "termination"),
        ["is not also stated as prov:wasEndedBy"],
    ),
    "model acting for nobody": (
        _remove("model", PROV.actedOnBehalfOf, "principal"),
        ["prov:actedOnBehalfOf", "a model acts on behalf of a principal"],
    ),
    "blank node": (_add_blank_node, ["no blank nodes"]),
}


@pytest.mark.allow_nonconforming
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_graph_is_reported(store: Store, recorder: Recorder, case: str) -> None:
    iris = record_sample_session(recorder)
    assert shacl_report(store)[0]
    iris = {
        **iris,
        "output": IRI(f"{iris['invocation']}:output"),
        "termination": IRI(f"{iris['run']}:termination"),
        "model": Minter().model("mock", "scripted"),
    }
    mutate, expected = BROKEN[case]
    mutate(store, iris)
    conforms, text = shacl_report(store)
    assert not conforms
    assert f"graph <{iris['session']}>" in text
    for fragment in expected:
        assert fragment in text, f"{fragment!r} missing from the report:\n{text}"
    with pytest.raises(AssertionError, match=r"does not conform to shapes\.ttl"):
        assert_conforms(store)


def _results(report: Any) -> set[tuple[Any, ...]]:
    sh = rdflib.Namespace("http://www.w3.org/ns/shacl#")
    return {
        tuple(report.value(r, p) for p in (sh.focusNode, sh.resultPath, sh.sourceShape, sh.value))
        for r in report.subjects(rdflib.RDF.type, sh.ValidationResult)
        if not isinstance(report.value(r, sh.sourceShape), rdflib.BNode)
    } | {("blank-node shapes", len(list(report.subjects(rdflib.RDF.type, sh.ValidationResult))))}


@pytest.mark.allow_nonconforming
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_only_the_shapes_with_a_focus_node_run_and_the_results_are_those_of_all(
    store: Store, recorder: Recorder, case: str
) -> None:
    """The check runs, per graph, only the shapes whose targets match something in it:
    its results are exactly those of pyshacl running every shape."""
    import pyshacl

    iris = record_sample_session(recorder)
    iris = {
        **iris,
        "output": IRI(f"{iris['invocation']}:output"),
        "termination": IRI(f"{iris['run']}:termination"),
        "model": Minter().model("mock", "scripted"),
    }
    BROKEN[case][0](store, iris)
    for name in store.graphs():
        data = conformance._graph_of(store, name)
        selected = conformance._shapes_for(data)
        assert selected is not None and len(selected) < len(conformance._shape_targets() or [])
        conforms, report = conformance._validate(data)
        every_conforms, every_report, _ = pyshacl.validate(
            data, shacl_graph=shapes_graph(), inference="none", advanced=False
        )
        assert conforms == every_conforms
        assert _results(report) == _results(every_report)
    assert not shacl_report(store)[0]


@pytest.mark.allow_nonconforming
def test_report_names_the_focus_node(store: Store, recorder: Recorder) -> None:
    iris = record_sample_session(recorder)
    store.write(
        [], remove=[Quad(iris["invocation"], T.inSession, iris["session"], iris["session"])]
    )
    _ok, text = shacl_report(store)
    line = next(x for x in text.splitlines() if "trails:inSession" in x)
    assert line.startswith(f"- <{iris['invocation']}> trails:inSession: ")


@pytest.mark.allow_nonconforming
def test_graph_argument_checks_one_graph(store: Store, recorder: Recorder) -> None:
    good = record_sample_session(recorder)
    bad = record_sample_session(recorder)
    store.write([], remove=[Quad(bad["run"], RDF.type, PROV.Activity, bad["session"])])
    assert shacl_report(store, good["session"])[0]
    assert not shacl_report(store, bad["session"])[0]
    conforms, text = shacl_report(store)
    assert not conforms
    assert f"graph <{good['session']}>: conforms" in text
    assert_conforms(store, good["session"])
    with pytest.raises(AssertionError):
        assert_conforms(store, bad["session"])


def test_empty_store(store: Store) -> None:
    assert shacl_report(store) == (True, "no named graph to validate")
    with pytest.raises(AssertionError, match="nothing was recorded"):
        assert_conforms(store)


def test_shapes_are_parsed_once() -> None:
    assert shapes_graph() is shapes_graph()


# -- the prov reader ---------------------------------------------------------------------


def test_prov_expectations_are_checked(store: Store, recorder: Recorder) -> None:
    iris = record_sample_session(recorder)
    assert_prov_readable(store, activities=7, entities=13, agents=3)
    with pytest.raises(AssertionError, match="at least 8 activities"):
        assert_prov_readable(store, activities=8)
    with pytest.raises(AssertionError, match="urn:trails:activity:missing"):
        assert_prov_readable(store, activities={iris["run"], "urn:trails:activity:missing"})
    with pytest.raises(AssertionError, match="agents not read"):
        assert_prov_readable(store, agents={iris["run"]})


def test_prov_document_of_one_graph(store: Store, recorder: Recorder) -> None:
    first = record_sample_session(recorder)
    record_sample_session(recorder)
    doc = prov_document(store, first["session"])
    assert not doc.bundles
    ids = {str(r.identifier.uri) for r in doc.get_records() if r.identifier is not None}
    assert first["run"] in ids and first["session"] in ids
    read = assert_prov_readable(store, graph=first["session"], activities=7)
    assert len(read.activities) == 7


# -- the regulator's questions, in plain PROV-O (docs/provenance.md) ----------------------


def _doc_queries() -> dict[str, str]:
    text = DOCS.read_text(encoding="utf-8")
    blocks = re.findall(r"```sparql\n(.*?)```", text, flags=re.S)
    queries = {}
    for block in blocks:
        name = re.match(r"#\s*query:\s*(\S+)", block)
        assert name, f"a sparql block in provenance.md lacks its '# query: name' line:\n{block}"
        queries[name.group(1)] = block
    return queries


def _rows(store: Store, query: str) -> list[dict[str, Any]]:
    result = store.query(query)
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items()} for row in result]


def test_docs_queries_use_plain_prov(store: Store) -> None:
    queries = _doc_queries()
    assert {"who-did-what", "using-what", "on-whose-behalf", "which-plan", "why-ended"} <= set(
        queries
    )
    for name, query in queries.items():
        if not name.startswith("trails-"):
            assert str(TRAILS) not in query and "trails:" not in query, name


def test_docs_queries_answer_on_a_recorded_session(store: Store, recorder: Recorder) -> None:
    iris = record_sample_session(recorder)
    queries = _doc_queries()
    alice = "did:example:alice"

    who = _rows(store, queries["who-did-what"])
    assert len({r["activity"] for r in who}) == 7
    by_activity = {r["activity"]: r for r in who}
    assert by_activity[iris["invocation"]]["agent"] == alice
    assert by_activity[iris["session"]]["start"] == datetime(2026, 1, 1, tzinfo=UTC)
    agents_of_completion = {r["agent"] for r in who if r["activity"] == iris["completion"]}
    assert agents_of_completion == {alice, "urn:trails:model:mock:scripted"}

    using = _rows(store, queries["using-what"])
    inputs = {r["activity"]: r["input"] for r in using if r.get("input") is not None}
    row = next(r for r in using if r["activity"] == iris["invocation"])
    assert json.loads(row["inputValue"]) == {"a": 2, "b": 3}
    assert json.loads(row["outputValue"]) == 5
    assert inputs[iris["completion"]] == f"{iris['completion']}:prompt"

    behalf = _rows(store, queries["on-whose-behalf"])
    assert {(r["delegate"], r["principal"]) for r in behalf} == {
        ("urn:trails:model:mock:scripted", alice),
        ("urn:trails:policy:no-payments", alice),
    }

    plans = _rows(store, queries["which-plan"])
    assert {(r["activity"], r["plan"]) for r in plans} == {
        (iris["invocation"], "urn:trails:capability:add"),
        (iris["failed_invocation"], "urn:trails:capability:divide"),
        (iris["decision"], "urn:trails:policy:no-payments:rules"),  # the policy's rules
    }
    assert {r["agent"] for r in plans} == {alice, "urn:trails:policy:no-payments"}

    ended = _rows(store, queries["why-ended"])
    assert [(r["activity"], r["why"]) for r in ended] == [
        (iris["run"], "budget: cost 0.0012 USD would exceed the budget of 0.001 USD")
    ]

    informed = _rows(store, queries["informed-by"])
    causes = {r["cause"] for r in informed if r["activity"] == iris["invocation"]}
    assert causes == {iris["completion"], iris["run"], iris["session"]}

    cost = _rows(store, queries["trails-cost"])
    assert len(cost) == 1
    assert cost[0]["usd"] == pytest.approx(0.00042)
    assert (cost[0]["inputTokens"], cost[0]["outputTokens"]) == (12, 9)
