"""Seed 001 (ADR-0018), rows 022-037: the session, its persistence and replay, the worked
example and the open questions.

Each test grades one row of ``tests/seed_rows/rows.json`` as the ADR's text describes it,
runs the feature with scripted models and a real store, and reads the evidence back with
SPARQL (bound parameters).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from tests.seed_rows._helpers import act, finish, rows
from tests.seed_rows._seed_001 import (
    ALICE,
    TURNS_AND_ACTIONS,
    ModelServer,
    ollama_reply,
    priced,
    register_notes,
)

from trails.agent import AuthState, PlanResult, Session, TokenWindow
from trails.agent.planners import react
from trails.audit.export import check_assurance
from trails.errors import ExportRefused, SessionError
from trails.kernel import Context, capability
from trails.llm import LLMClient, select_model
from trails.prov.iri import Minter
from trails.store import IRI, Store


@pytest.fixture
def notes() -> list[str]:
    """``notes.search`` and ``notes.send`` registered; the calls they got."""
    return register_notes()


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


# -- the session ----------------------------------------------------------------------------


@pytest.mark.seed_row("001-022")
def test_session_new_and_run(store: Store) -> None:
    params = inspect.signature(Session.new).parameters
    assert [params[n].default for n in ("strategy", "budget", "agent_card")] == [None] * 3
    assert params["principal"].kind is inspect.Parameter.KEYWORD_ONLY
    session = Session.new(
        strategy="react",
        principal=ALICE,
        budget={"usd": 0.5, "tokens": 50_000},
        agent_card={"name": "card-1"},
        store=store,
        llm=LLMClient.mock(finish("done")),
    )
    assert isinstance(session, Session) and session.card == {"name": "card-1"}
    result = session.run("Do it.")
    assert isinstance(result, PlanResult) and (result.stopped, result.answer) == (
        "goal_achieved",
        "done",
    )


@pytest.mark.seed_row("001-023")
def test_the_session_budget_applies_to_every_run(store: Store, notes: list[str]) -> None:
    reply = priced(act("notes.search", tag="urgent"), 0.05)
    session = Session.new(
        strategy="react",
        principal=ALICE,
        budget={"usd": 0.01},
        store=store,
        llm=LLMClient.mock(response=lambda _m: reply),
    )
    first, second = session.run("Search."), session.run("Search again.")
    assert (first.stopped, second.stopped) == ("max_cost", "max_cost")
    breaches = rows(
        store,
        "SELECT ?run WHERE { GRAPH ?g { ?run trails:wasTerminatedBy ?t . ?t a trails:BudgetBreach } }",
    )
    assert {str(r["run"]) for r in breaches} == {str(first.activity_iri), str(second.activity_iri)}


@pytest.mark.seed_row("001-024")
def test_the_history_window_is_the_models_minus_a_margin_and_evicts_as_told(store: Store) -> None:
    sized = Session(principal=ALICE, store=store)
    sized.fit_window(LLMClient.anthropic(model="claude-sonnet-4-5", api_key="k"))  # as a run does
    assert sized.history.max_tokens == 180_000  # 200,000 less a tenth
    longest_first = TokenWindow(
        max_tokens=9,
        count_tokens=lambda text: len(text.split()),
        evict=lambda may_go: max(range(len(may_go)), key=lambda i: may_go[i].tokens),
    )
    longest_first.append("system", "terse")
    for text in ("a b c d e", "f g", "h i j"):
        longest_first.append("user", text)
    assert [e.content for e in longest_first] == ["terse", "f g", "h i j"]  # the longest went
    window = TokenWindow(max_tokens=11, pin_head=1, count_tokens=lambda text: len(text.split()))
    window.append("system", "you are terse")
    for i in range(4):
        window.append("user", f"turn {i} four words")
    assert [e.content for e in window] == [
        "you are terse",  # the pinned head stays, the oldest turns went first
        "turn 2 four words",
        "turn 3 four words",
    ]
    dropped: list[list[str]] = []

    def summarize(entries: Any) -> str:
        dropped.append([e.content for e in entries])
        return "earlier: some turns"

    session = Session(principal=ALICE, store=store, max_messages=2, summarize_on_trim=summarize)
    llm = LLMClient.mock(response=lambda _m: finish("ok"))
    for goal in ("One.", "Two.", "Three."):
        session.run(goal, llm=llm)
    assert dropped  # the eviction was handed to the app's summarizer
    evictions = rows(
        store,
        "SELECT ?e WHERE { GRAPH ?g { ?e a trails:HistoryEviction } }",
    )
    assert evictions


@pytest.mark.seed_row("001-025")
def test_invocations_auth_and_card_are_on_the_session(store: Store, notes: list[str]) -> None:
    session = Session(principal=ALICE, store=store, card={"name": "card-1"})
    llm = LLMClient.mock([act("notes.search", tag="urgent"), finish("two")])
    session.run("Search.", llm=llm)
    [envelope] = session.invocations
    assert (envelope.capability, envelope.args, envelope.status) == (
        "notes.search",
        {"tag": "urgent"},
        "ok",
    )
    assert envelope.result == {"hits": ["n1", "n2"]} and len(envelope.result_sha256 or "") == 64
    assert isinstance(session.auth, AuthState)
    assert (session.auth.principal, session.auth.did) == (ALICE, ALICE)
    assert session.card == {"name": "card-1"}
    found = rows(
        store,
        "SELECT ?inv ?cap WHERE { GRAPH ?g { ?inv a trails:CapabilityInvocation ; trails:capability ?c . "
        "?c trails:capabilityId ?cap } }",
        inv=envelope.activity,
    )
    assert [r["cap"] for r in found] == ["notes.search"]


@pytest.mark.seed_row("001-026")
def test_the_card_decides_which_capabilities_the_agent_sees(store: Store, notes: list[str]) -> None:
    session = Session(principal=ALICE, store=store, card={"capabilities": ["notes.search"]})
    llm = LLMClient.mock([act("notes.send", to="bob"), finish("could not send")])
    result = session.run("Send to Bob.", llm=llm)
    prompt = llm.requests[0].messages[0].content
    assert "notes.search" in prompt and "notes.send" not in prompt
    assert str(result.steps[0].observation).startswith("error:") and notes == []  # not run


@pytest.mark.seed_row("001-027")
def test_persist_then_replay_read_only_without_new_prov(store: Store, notes: list[str]) -> None:
    session = Session(principal=ALICE, store=store, card={"name": "card-1"})
    llm = LLMClient.mock([act("notes.search", tag="urgent"), finish("two")])
    session.run("Search.", llm=llm)
    graph = session.persist(graph="audit:SKU-7-Q1")
    assert graph == IRI("audit:SKU-7-Q1") and graph in store.graphs()
    before = store.dump(format="nquads")
    replayed = Session.replay(str(graph), store=store)
    assert store.dump(format="nquads") == before  # nothing re-emitted
    assert [e.content for e in replayed.history] == [e.content for e in session.history]
    assert [i.capability for i in replayed.invocations] == ["notes.search"]
    assert replayed.card == {"name": "card-1"}
    with pytest.raises(SessionError):
        replayed.run("Again.", llm=llm)
    members = rows(
        store, "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g", g=graph
    )
    assert members[0]["n"] > 0


@pytest.mark.seed_row("001-028")
def test_persist_defaults_to_the_sessions_own_graph(store: Store) -> None:
    session = Session(principal=ALICE, store=store)
    session.run("Go.", llm=LLMClient.mock(finish("ok")))
    assert session.persist() == session.iri
    assert session.iri is not None and "session" in str(session.iri)


@pytest.mark.seed_row("001-029")
def test_sessions_never_write_into_graphs_trails_keeps(store: Store) -> None:
    session = Session(principal=ALICE, store=store)
    session.run("Go.", llm=LLMClient.mock(finish("ok")))
    ledger = str(Minter().graph("ledger"))
    before = store.dump(format="nquads")
    with pytest.raises(SessionError, match="ledger"):
        session.persist(graph=ledger)
    assert store.dump(format="nquads") == before


@pytest.mark.seed_row("001-030")
def test_handlers_get_a_context_with_principal_llm_and_app_extras(store: Store) -> None:
    seen: dict[str, Any] = {}

    @capability(id="evidence.fetch", description="Fetch a document.")
    def fetch(ctx: Context, doc_id: str) -> str:
        seen.update(principal=ctx.principal, llm=ctx.llm is not None, doc=ctx.graph[doc_id])
        return str(ctx.graph[doc_id])

    ctx = Context.open(ALICE, extras={"graph": {"doc-d": "the text of d"}})
    llm = LLMClient.mock([act("evidence.fetch", doc_id="doc-d"), finish("read")])
    Session(principal=ALICE, store=store).run("Read d.", llm=llm, ctx=ctx)
    assert seen == {"principal": ALICE, "llm": True, "doc": "the text of d"}


@pytest.mark.seed_row("001-031")
def test_an_l1_session_is_not_exported_across_domains(store: Store) -> None:
    ctx = Context.open(ALICE, assurance_level="L1", domain="health")
    session = Session(principal=ALICE, store=store)
    session.run("Go.", llm=LLMClient.mock(finish("ok")), ctx=ctx)
    with pytest.raises(ExportRefused, match="ADR-0013"):
        check_assurance(store, [ctx.session], domain="finance", forbidden=["L1"])
    check_assurance(store, [ctx.session], domain="health", forbidden=["L1"])  # its own domain
    level = rows(
        store, "SELECT ?s ?l WHERE { GRAPH ?s { ?s trails:assuranceLevel ?l } }", s=ctx.session
    )
    assert [r["l"] for r in level] == ["L1"]


@pytest.mark.seed_row("001-032")
def test_the_worked_example_runs_as_written(
    store: Store, model_server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cheap = select_model("summarize", budget_hint="cheap")
    assert cheap.provider == "ollama"  # served by the default client below
    monkeypatch.setenv("TRAILS_LLM", f"ollama:{cheap.model}@{model_server.url}")
    for text in (
        act("evidence.fetch", doc_id="F-1"),
        act("evidence.summarize", text="F-1: SKU-7 recalled"),
        "SKU-7 recalled.",  # the handler's own completion
        finish("One filing: SKU-7 recalled."),
    ):
        model_server.replies.append(ollama_reply(text, cheap.model))

    # the ADR's code, with the app's evidence graph handed to the run as ctx.graph
    @capability(
        id="evidence.fetch",
        description="Fetch a document from the evidence graph",
        cost_estimate={"usd": 0.0, "tokens": 0},
    )
    def fetch(ctx: Any, doc_id: str) -> Any:
        return ctx.graph.get(doc_id)

    @capability(id="evidence.summarize", cost_estimate={"usd": 0.02, "tokens": 1500})
    def summarize(ctx: Any, text: str) -> Any:
        return ctx.llm.complete(
            f"Summarize:\n{text}",
            model=select_model("summarize", budget_hint="cheap"),
        ).text

    session = Session.new(
        strategy="react",
        principal=ALICE,
        budget={"usd": 0.50, "tokens": 50_000},
    )
    result = session.run(
        "Summarize every regulatory filing touching product SKU-7 this quarter",
        ctx=Context.open(ALICE, extras={"graph": {"F-1": "F-1: SKU-7 recalled"}}),
    )
    assert result.answer == "One filing: SKU-7 recalled."
    graph = session.persist(graph="audit:SKU-7-Q1")

    assert [path for path, _ in model_server.requests] == ["/api/chat"] * 4
    assert [i.result for i in session.invocations] == ["F-1: SKU-7 recalled", "SKU-7 recalled."]
    envelopes = rows(
        store,
        "SELECT ?g (COUNT(?e) AS ?n) WHERE { GRAPH ?g { ?e a trails:InvocationEnvelope } } GROUP BY ?g",
        g=graph,
    )
    assert [r["n"] for r in envelopes] == [2]
    linked = rows(
        store,
        "SELECT ?inv ?c WHERE { GRAPH ?s { ?c a trails:LLMCompletion ; prov:wasInformedBy ?inv } }",
        inv=session.invocations[1].activity,
    )
    assert len(linked) == 1  # the handler's completion, costed and linked to its invocation


TOKEN_TRACE = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?c ?trace ?i ?offset ?length ?at ?text WHERE {
  GRAPH ?trace { ?trace a trails:TokenTrace ; prov:wasGeneratedBy ?c ; prov:hadMember ?tok .
                 ?completion prov:wasDerivedFrom ?trace .
                 ?tok a trails:Token ; trails:tokenIndex ?i ; trails:charOffset ?offset ;
                      trails:charLength ?length ; prov:generatedAtTime ?at }
  GRAPH ?s { ?c a trails:LLMCompletion . ?completion a trails:Completion ; prov:wasGeneratedBy ?c }
  GRAPH ?content { ?completion prov:value ?text }
} ORDER BY ?i
"""


@pytest.mark.seed_row("001-033")
def test_a_streamed_completion_opts_into_a_token_trace_graph_linked_to_it(
    store: Store, tmp_path: Any
) -> None:
    from trails.audit.export import select_graphs

    session = Session(principal=ALICE, store=store)
    quiet = LLMClient.mock([finish("It is 4.")])
    list(react.stream("Say it.", llm=quiet, session=session, tools=[]))
    assert not [g for g in store.graphs() if "llm-tokens" in str(g)]  # off by default
    client = LLMClient.mock([finish("It is 4.")])
    client.token_trace = True
    events = list(react.stream("Say it.", llm=client, session=session, tools=[]))
    chunks = [e.data["text"] for e in events if e.kind == "token"]
    assert "".join(chunks) == finish("It is 4.") and events[-1].data["result"].answer == "It is 4."
    traced = rows(store, TOKEN_TRACE)
    assert len({r["c"] for r in traced}) == 1 and len(traced) == len(chunks) > 1
    [trace] = {r["trace"] for r in traced}
    assert "graph:llm-tokens/" in trace and trace in {str(g) for g in store.graphs()}
    # the tokens are the completion's text cut at the recorded offsets, in arrival order
    text = traced[0]["text"]
    assert [text[r["offset"] : r["offset"] + r["length"]] for r in traced] == chunks
    assert [r["at"] for r in traced] == sorted(r["at"] for r in traced)
    assert trace not in select_graphs(store, all_graphs=True)  # never exported
    from trails.evidence.sweep import graph_kind

    base = trace.split("graph:llm-tokens/")[0]
    assert graph_kind(trace, base) == "token-trace"  # verify knows it: not a foreign graph
    # sealed in the write that made it: an edited token or a deleted trace is a finding
    from trails.evidence import verify
    from trails.store import IRI, Literal, Quad

    assert verify(store).ok
    graph = IRI(trace)
    quads = [
        Quad(r["s"], r["p"], r["o"], graph)  # type: ignore[arg-type]
        for r in store.query("SELECT ?s ?p ?o $g WHERE { GRAPH $g { ?s ?p ?o } }", {"g": graph})
    ]
    length = next(q for q in quads if str(q.predicate).endswith("#charLength"))
    forged = length._replace(object=Literal("999", datatype=length.object.datatype))  # type: ignore[union-attr]
    store.write([forged], remove=[length])
    report = verify(store)
    assert [(f.kind, str(f.subject)) for f in report.findings] == [("altered", trace)]
    store.write([length], remove=[forged])
    store.clear(graph)
    assert not verify(store).ok
    store.write(quads)
    assert verify(store).ok


@pytest.mark.seed_row("001-034")
def test_sync_and_async_record_the_same_shape(store: Store, notes: list[str]) -> None:
    def script() -> LLMClient:
        return LLMClient.mock([act("notes.search", tag="urgent"), finish("two")])

    ran = react.run("Find.", llm=script(), session=Session(principal=ALICE, store=store))
    awaited = asyncio.run(
        react.arun("Find.", llm=script(), session=Session(principal=ALICE, store=store))
    )
    shapes = [
        sorted(
            (r.get("inv") is not None) for r in rows(store, TURNS_AND_ACTIONS, run=run.activity_iri)
        )
        for run in (ran, awaited)
    ]
    assert shapes[0] == shapes[1] == [False, True]
    ctx = Context.open(ALICE)
    sync = LLMClient.mock("a").complete("q", ctx=ctx)
    async_ = asyncio.run(LLMClient.mock("a").acomplete("q", ctx=ctx))
    assert (sync.text, async_.text) == ("a", "a") and async_.activity_iri is not None


@pytest.mark.seed_row("001-035")
def test_a_plan_and_execute_session_falls_back_to_react(store: Store) -> None:
    replies = ["not a plan", "still not a plan", finish("4")]  # two bad plans, then ReAct
    session = Session(
        principal=ALICE,
        store=store,
        strategy="plan_and_execute",
        fallback="react",
        llm=LLMClient.mock(replies),
    )
    result = session.run("What is 2+2?")
    assert (result.strategy, result.answer, result.stopped) == ("react", "4", "goal_achieved")
    failed = rows(
        store,
        "SELECT ?run ?failed ?stop WHERE { GRAPH ?g { ?run a trails:ReActPlan ; "
        "prov:wasInformedBy ?failed . ?failed a trails:PlanAndExecutePlan ; "
        "trails:stopReason ?stop } }",
        run=result.activity_iri,
    )
    assert [r["stop"] for r in failed] == ["error"]


@pytest.mark.seed_row("001-036")
def test_the_response_cache_is_shared_across_sessions(store: Store) -> None:
    """Across a principal's sessions; another principal's answers only when shared on purpose."""
    llm = LLMClient.mock([finish("first"), finish("bob's")], response_cache=True)
    one = react.run("Hi.", llm=llm, session=Session(principal=ALICE, store=store), tools=[])
    later = Session(principal=ALICE, store=store)
    two = react.run("Hi.", llm=llm, session=later, tools=[])
    bob = react.run("Hi.", llm=llm, session=Session(principal="did:key:zBob", store=store))
    assert (one.answer, two.answer, bob.answer, len(llm.requests)) == ("first", "first", "bob's", 2)
    hits = rows(
        store,
        "SELECT ?s ?c ?scope WHERE { GRAPH ?s { ?c a trails:LLMCompletion ; trails:cacheHit true ;"
        " trails:cacheScope ?scope } }",
        s=later.iri,
    )
    assert [r["scope"] for r in hits] == ["principal"]


@pytest.mark.seed_row("001-037")
def test_a_persisted_session_reruns_against_its_recorded_completions(
    store: Store, notes: list[str]
) -> None:
    from trails.testing.rerun import rerun

    session = Session(principal=ALICE, store=store)
    llm = LLMClient.mock([act("notes.search", tag="urgent"), finish("two")])
    session.run("Find.", llm=llm)
    session.persist()
    before = store.dump(format="nquads")
    report = rerun(str(session.iri), store=store, capabilities="recorded")
    assert report.identical, report.describe()
    assert len(report.rerun) == len(report.recorded) > 0
    assert store.dump(format="nquads") == before  # rerun in a scratch store
    assert notes == ["search urgent"]  # recorded capabilities: nothing ran again
