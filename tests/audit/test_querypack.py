"""The regulator query pack: every query loads, parses, and gives known answers on the fixture."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from tests.known_store import ALICE, BOB, Fixture

from trails.audit.querypack import check_syntax, get_query, load_pack, parse_query, resolve
from trails.errors import QueryParameterError, QuerySyntaxError, UnknownQuery
from trails.store import IRI, Literal, Solutions, Store, to_python
from trails.store._sparql_bind import bind_params, prebinds

PACK = load_pack()
T = "https://w3id.org/trails/ns#"


def rows(store: Store, name: str, **values: object) -> list[dict[str, object]]:
    result = get_query(name).run(store, **values)
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in r.items()} for r in result]


@pytest.mark.parametrize("name", sorted(PACK))
def test_every_query_has_a_header_and_parses(name: str) -> None:
    q = PACK[name]
    assert q.title and len(q.description) > 40, name
    for p in q.params.values():
        assert p.description, f"{name}: parameter {p.name} has no description"
    check_syntax(q)


def test_the_pack_covers_the_regulator_questions() -> None:
    assert {
        "sessions",
        "session-timeline",
        "llm-completions",
        "decision-evidence",
        "lineage",
        "cost-by-principal",
        "cost-by-model",
        "terminations",
        "policy-denials",
        "memories-used",
        "agents",
        "failed-invocations",
        "side-effects",
    } <= set(PACK)


def test_sessions_by_principal_status_and_time(fx: Fixture) -> None:
    assert [r["session"] for r in rows(fx.store, "sessions")] == [fx.sessions[k] for k in "DCBA"]
    assert {r["session"] for r in rows(fx.store, "sessions", principal=ALICE)} == {
        fx.sessions["A"],
        fx.sessions["C"],
    }
    assert [r["session"] for r in rows(fx.store, "sessions", status="error")] == [fx.sessions["B"]]
    window = rows(fx.store, "sessions", since="2025-03-02T00:00:00Z", until="2025-03-04T00:00:00Z")
    assert [r["session"] for r in window] == [fx.sessions["C"], fx.sessions["B"]]
    a = next(r for r in rows(fx.store, "sessions") if r["session"] == fx.sessions["A"])
    assert a["label"] == "alpha" and a["endStatus"] == "ok" and a["activities"] == 16


def test_session_timeline_is_in_order_with_most_specific_types(fx: Fixture) -> None:
    timeline = rows(fx.store, "session-timeline", session=fx.sessions["B"])
    kinds = [str(r["type"]).removeprefix(T) for r in timeline]
    assert kinds == ["PlanAndExecutePlan", "LLMCompletion", "CapabilityInvocation", "LLMCompletion"]
    starts = [r["started"] for r in timeline]
    assert starts == sorted(starts)
    assert all(r["informedBy"] == fx.runs["B"] for r in timeline[1:])


def test_llm_completions_filter_by_model_session_and_period(fx: Fixture) -> None:
    everything = rows(fx.store, "llm-completions")
    assert len(everything) == 7
    gpt = rows(fx.store, "llm-completions", model="gpt-4o")
    assert {r["completion"] for r in gpt} == {fx.completions["b0"], fx.completions["b1"]}
    assert {r["principal"] for r in gpt} == {BOB}
    assert sorted((r["inputTokens"], r["outputTokens"]) for r in gpt) == [(100, 10), (300, 50)]
    assert [r.get("costUSD") for r in gpt if r["completion"] == fx.completions["b0"]] == [None]
    day1 = rows(
        fx.store,
        "llm-completions",
        since=datetime(2025, 3, 1, tzinfo=UTC),
        until=datetime(2025, 3, 2, tzinfo=UTC),
    )
    assert {r["completion"] for r in day1} == {
        fx.completions[k] for k in ("c0", "c1", "c2", "nested")
    }
    assert len(rows(fx.store, "llm-completions", session=fx.sessions["C"])) == 1


def test_cost_per_principal_counts_each_leaf_completion_once(fx: Fixture) -> None:
    by = {r["principal"]: r for r in rows(fx.store, "cost-by-principal")}
    assert set(by) == {ALICE, BOB}
    assert by[ALICE]["completions"] == 5 and by[ALICE]["unpriced"] == 0
    assert by[ALICE]["costUSD"] == Decimal("0.105")  # exact
    assert by[BOB]["costUSD"] == Decimal("0.5") and by[BOB]["unpriced"] == 1
    assert by[ALICE]["inputTokens"] == 530 and by[ALICE]["outputTokens"] == 120
    only = rows(fx.store, "cost-by-principal", principal=BOB)
    assert [r["principal"] for r in only] == [BOB]


def test_cost_is_not_double_counted_when_a_graph_is_copied(fx: Fixture) -> None:
    before = {r["model"]: r["costUSD"] for r in rows(fx.store, "cost-by-model")}
    # a persisted copy of session A in another graph repeats every completion
    data = fx.store.dump(format="ntriples", graph=fx.sessions["A"])
    assert data
    fx.store.load(data, format="ntriples", graph=IRI("urn:trails:graph:persisted-A"))
    after = {r["model"]: r["costUSD"] for r in rows(fx.store, "cost-by-model")}
    assert after == before
    by = {r["principal"]: r["costUSD"] for r in rows(fx.store, "cost-by-principal")}
    assert by[ALICE] == Decimal("0.105")


def test_cost_per_model(fx: Fixture) -> None:
    by = {r["modelId"]: r for r in rows(fx.store, "cost-by-model")}
    assert by["claude-sonnet"]["completions"] == 4
    assert by["claude-sonnet"]["costUSD"] == Decimal("0.1")
    assert by["claude-haiku"]["costUSD"] == Decimal("0.005")
    assert by["gpt-4o"]["costUSD"] == Decimal("0.5") and by["gpt-4o"]["unpriced"] == 1
    day3 = rows(fx.store, "cost-by-model", since="2025-03-03T00:00:00Z")
    assert [(r["modelId"], r["completions"]) for r in day3] == [("claude-sonnet", 1)]


def test_decision_evidence_links_invocation_completion_prompt_and_observations(fx: Fixture) -> None:
    evidence = rows(fx.store, "decision-evidence", invocation=fx.invocations["send_email"])
    assert len(evidence) == 1
    (e,) = evidence
    assert e["completion"] == fx.completions["c1"]
    assert e["prompt"] == fx.completions["c1"] + ":prompt"
    assert e["choice"] == fx.completions["c1"] + ":completion"
    assert e["observedFrom"] == fx.invocations["search"]
    assert e["observation"] == fx.invocations["search"] + ":output"
    first = rows(fx.store, "decision-evidence", invocation=fx.invocations["search"])
    assert [(r["completion"], r.get("observation")) for r in first] == [
        (fx.completions["c0"], None)
    ]
    in_b = rows(fx.store, "decision-evidence", session=fx.sessions["B"])
    assert [r["invocation"] for r in in_b] == [fx.invocations["b-search"]]


def test_lineage_follows_derivation_generation_and_use(fx: Fixture) -> None:
    sources = rows(fx.store, "lineage", entity=fx.completions["c1"] + ":completion")
    assert [r["source"] for r in sources] == [fx.completions["c1"] + ":prompt"]
    out = rows(fx.store, "lineage", entity=fx.invocations["send_email"] + ":output")
    assert [(r["source"], str(r["type"]).removeprefix(T)) for r in out] == [
        (fx.invocations["send_email"] + ":input", "CapabilityInput")
    ]
    assert '"to":"cfo@example.com"' in str(out[0]["value"])
    with pytest.raises(QueryParameterError, match="needs parameter 'entity'"):
        get_query("lineage").bind({})


def test_terminations_with_reasons(fx: Fixture) -> None:
    found = {str(r["kind"]).removeprefix(T): r for r in rows(fx.store, "terminations")}
    assert set(found) == {"BudgetBreach", "StepLimit", "Error"}
    assert found["BudgetBreach"]["limit"] == 0.4 and found["BudgetBreach"]["observed"] == 0.5
    assert found["BudgetBreach"]["stopReason"] == "max_cost"
    assert found["StepLimit"]["run"] == fx.runs["C"] and found["StepLimit"]["reason"] == "max_steps"
    assert found["Error"]["reason"] == "ModelAPIError: 503"
    assert len(rows(fx.store, "terminations", session=fx.sessions["B"])) == 1
    assert len(rows(fx.store, "terminations", since="2025-03-03T00:00:00Z")) == 2


def test_policy_denials(fx: Fixture) -> None:
    (d,) = rows(fx.store, "policy-denials")
    assert d["capability"] == "pay" and d["principal"] == ALICE
    assert d["policyName"] == "no-payments" and d["reason"] == "payments need a human"
    assert rows(fx.store, "policy-denials", principal=BOB) == []
    assert rows(fx.store, "policy-denials", capability="search") == []
    decisions = rows(fx.store, "policy-decisions", session=fx.sessions["A"])
    assert [r["capability"] for r in decisions] == [
        "search",
        "send_email",
        "pay",
        "flaky",
        "memory.learn",
    ]
    assert [r["decision"] for r in decisions] == ["allow", "allow", "deny", "allow", "allow"]
    assert len(rows(fx.store, "policy-decisions", decision="deny")) == 1


def test_memories_used_and_where_they_were_learned(fx: Fixture) -> None:
    (m,) = rows(fx.store, "memories-used")
    assert m["memory"] == fx.memory and m["user"] == fx.recall
    assert m["decision"] == fx.completions["r0"]
    assert m["learnedIn"] == fx.sessions["A"] and m["learnedBy"] == fx.runs["A-learn"]
    assert m["content"] == "the CFO prefers e-mail"
    assert len(rows(fx.store, "memories-used", activity=fx.completions["r0"])) == 1
    assert rows(fx.store, "memories-used", activity=fx.completions["c0"]) == []
    assert rows(fx.store, "memories-used", session=fx.sessions["A"]) == []


def test_agents_and_delegation(fx: Fixture) -> None:
    agents = rows(fx.store, "agents")
    delegation = {(r["agent"], r.get("onBehalfOf")) for r in agents}
    assert ("urn:trails:model:openai:gpt-4o", BOB) in delegation
    assert ("urn:trails:model:anthropic:claude-sonnet", ALICE) in delegation
    assert ("urn:trails:policy:no-payments", ALICE) in delegation
    principals = {r["agent"] for r in agents if str(r["kind"]).endswith("Principal")}
    assert principals == {ALICE, BOB}  # from the catalogue: carol's session D has not ended
    sonnet = next(r for r in agents if r["agent"] == "urn:trails:model:anthropic:claude-sonnet")
    assert sonnet["activities"] == 4 and sonnet["sessions"] == 2
    only_b = {r["agent"] for r in rows(fx.store, "agents", session=fx.sessions["B"])}
    assert only_b == {BOB, "urn:trails:model:openai:gpt-4o"}


def test_failed_invocations(fx: Fixture) -> None:
    failed = rows(fx.store, "failed-invocations")
    assert [(r["capability"], r["status"]) for r in failed] == [
        ("flaky", "error"),
        ("search", "invalid"),
    ]
    assert failed[0]["error"] == "RuntimeError: upstream timeout"
    assert failed[0]["agent"] == ALICE
    assert [r["status"] for r in rows(fx.store, "failed-invocations", capability="search")] == [
        "invalid"
    ]
    assert rows(fx.store, "failed-invocations", session=fx.sessions["B"]) == []


def test_side_effects_that_ran(fx: Fixture) -> None:
    ran = rows(fx.store, "side-effects")
    assert [r["capability"] for r in ran] == ["send_email", "memory.learn"]  # pay never ran
    s = ran[0]
    assert s["status"] == "ok"
    assert s["invocation"] == fx.invocations["send_email"]
    assert "cfo@example.com" in str(s["inputValue"])


def test_invocations_by_capability(fx: Fixture) -> None:
    by = {r["capability"]: r for r in rows(fx.store, "invocations-by-capability")}
    assert (by["search"]["invocations"], by["search"]["failures"]) == (3, 1)
    assert (by["flaky"]["invocations"], by["flaky"]["failures"]) == (1, 1)
    assert (by["send_email"]["invocations"], by["send_email"]["failures"]) == (1, 0)
    assert (by["memory.recall"]["invocations"], by["memory.recall"]["failures"]) == (1, 0)
    assert "pay" not in by  # denied before it ran: a policy decision, not an invocation
    later = rows(fx.store, "invocations-by-capability", since="2025-03-02T00:00:00Z")
    assert sorted((r["capability"], r["invocations"]) for r in later) == [
        ("memory.recall", 1),
        ("search", 1),
    ]


def test_seals_query_lists_the_chain(fx: Fixture) -> None:
    seals = rows(fx.store, "seals")
    assert [r["graph"] for r in seals] == [fx.sessions[k] for k in "ABC"]
    assert [r["sequence"] for r in seals] == [1, 2, 3]
    assert len({r["chain"] for r in seals}) == 1  # one recorder: one writer's chain
    assert seals[1]["previousSealHash"] == seals[0]["sealHash"]


def test_session_prov_is_plain_prov(fx: Fixture) -> None:
    triples = get_query("session-prov").run(fx.store, session=fx.sessions["A"])
    assert isinstance(triples, list) and len(triples) > 100
    for t in triples:
        assert t.predicate.startswith(
            ("http://www.w3.org/ns/prov#", "http://www.w3.org/2000/01/rdf-schema#label")
        ) or (
            t.object.startswith("http://www.w3.org/ns/prov#")  # type: ignore[union-attr]
        )


@pytest.mark.parametrize(
    "evil",
    ['alice" } ; DROP ALL ; #', "x } UNION { ?s ?p ?o }", "' OR 1=1 --", "a\nb\\c", "}"],
)
def test_injection_through_string_parameters_is_bound_as_a_value(fx: Fixture, evil: str) -> None:
    before = fx.store.graphs()
    assert rows(fx.store, "sessions", status=evil) == []
    assert rows(fx.store, "failed-invocations", capability=evil) == []
    assert fx.store.graphs() == before  # nothing dropped


def test_iri_parameters_refuse_text_that_is_not_an_iri(fx: Fixture) -> None:
    for bad in ("urn:x> } ; DROP ALL", "http://a b", "not an iri"):
        with pytest.raises(QueryParameterError, match="expects iri"):
            get_query("sessions").bind({"principal": bad})


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [("since", "yesterday", "expects datetime"), ("principal", "", "expects iri")],
)
def test_wrong_types_name_the_parameter(name: str, value: str, expected: str) -> None:
    with pytest.raises(QueryParameterError, match=f"parameter '{name}' {expected}"):
        get_query("sessions").bind({name: value})


def test_unknown_parameter_and_unknown_query() -> None:
    with pytest.raises(QueryParameterError, match="has no parameter colour"):
        get_query("sessions").bind({"colour": "red"})
    with pytest.raises(UnknownQuery, match="available: agents"):
        get_query("no-such-query")


def test_resolve_takes_a_name_a_file_or_inline_text(tmp_path: Path) -> None:
    assert resolve("sessions").name == "sessions"
    f = tmp_path / "mine.rq"
    f.write_text("# title: Mine\n# param: g iri\nSELECT ?s $g WHERE { GRAPH $g { ?s ?p ?o } }\n")
    q = resolve(str(f))
    assert q.name == "mine" and list(q.params) == ["g"]
    inline = resolve("ASK { ?s ?p ?o }")
    assert inline.name == "inline" and inline.form == "ASK"
    with pytest.raises(UnknownQuery, match="not a query in the pack, a file, or SPARQL"):
        resolve("nothing-like-that")


def test_a_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "broken.rq"
    f.write_text("# title: Broken\nSELECT ?s\nWHERE {\n  ?s ?p\n}\n")
    with pytest.raises(QuerySyntaxError) as info:
        resolve(str(f))
    err = info.value
    assert err.source == str(f) and (err.line, err.column) == (4, 3)
    assert f"{f}: SPARQL syntax error at line 4, column 3" in str(err)
    with pytest.raises(QuerySyntaxError, match="inline: SPARQL syntax error at line 1"):
        resolve("SELECT * WHERE { ?s ?p }")


def test_header_and_body_must_agree() -> None:
    with pytest.raises(QueryParameterError, match="declared but not used: x"):
        parse_query("# param: x string\nSELECT * WHERE { ?s ?p ?o }")
    with pytest.raises(QueryParameterError, match=r"used but not declared: \$y"):
        parse_query("SELECT $y WHERE { ?s ?p $y }")
    with pytest.raises(QueryParameterError, match="must project"):
        parse_query("# param: y iri\nSELECT ?s WHERE { ?s ?p $y }")


def test_typed_values_bind_as_typed_literals() -> None:
    q = parse_query(
        "# param: n integer\n# param: d decimal\n# param: b boolean\n# param: day date\n"
        "SELECT $n $d $b $day WHERE {}"
    )
    bound = q.bind({"n": "3", "d": "0.5", "b": "true", "day": "2025-03-01"})
    assert bound["n"] == Literal("3", "http://www.w3.org/2001/XMLSchema#integer")
    assert to_python(bound["d"]) == Decimal("0.5") and to_python(bound["b"]) is True
    with pytest.raises(QueryParameterError, match="expects boolean"):
        q.bind({"n": 1, "d": 1, "b": "maybe", "day": "2025-03-01"})
    with pytest.raises(QueryParameterError, match="expects integer"):
        q.bind({"n": "three", "d": 1, "b": True, "day": "2025-03-01"})


PREBOUND = [
    "failed-invocations",
    "llm-completions",
    "policy-decisions",
    "session-overview",
    "session-timeline",
    "side-effects",
    "terminations",
]


@pytest.mark.parametrize("name", PREBOUND)
def test_per_session_queries_are_prebound_with_the_rewritten_texts_answers(
    fx: Fixture, name: str
) -> None:
    """The embedded store runs these with pyoxigraph's own pre-binding (the raw
    query's plan); on every session it answers what the rewritten text answers."""
    q = get_query(name)
    seen = 0
    for session in fx.sessions.values():
        params = q.bind({"session": str(session)})
        assert prebinds(q.text, params)
        prebound = fx.store.query(q.text, params)
        rewritten = fx.store.query(bind_params(q.text, params, close_groups=True))
        assert isinstance(prebound, Solutions) and isinstance(rewritten, Solutions)
        assert list(prebound) == list(rewritten), (name, session)
        seen += len(list(prebound))
    assert seen > 0, f"{name} answers nothing on the fixture: nothing compared"
