"""LLMClient core: the mock, cost envelopes, budgets, recorded completions, request hashes."""

from __future__ import annotations

import pytest

from trails.errors import BudgetExceeded, ModelAPIError, UserError
from trails.kernel import Context, default_context, default_tracker
from trails.llm import (
    LLMClient,
    Message,
    MockScriptExhausted,
    ModelServerError,
    Response,
    _module_tracker,
    request_hash,
    request_params,
)
from trails.prov import PROV, T, canonical_json, sha256_hex
from trails.store import IRI, Solutions, Store, literal, to_python

COMPLETION = f"""
SELECT ?a ?status ?hash ?parent ?step ?usd ?in ?out ?model ?principal ?text ?prompt ?retries WHERE {{
  GRAPH ?g {{
    ?a a {T.LLMCompletion.n3()} , {PROV.Activity.n3()} ;
       {T.status.n3()} ?status ; {T.requestHash.n3()} ?hash ;
       {T.inputTokens.n3()} ?in ; {T.outputTokens.n3()} ?out ; {T.retries.n3()} ?retries ;
       {PROV.wasAssociatedWith.n3()} ?m , ?principal .
    ?m a {T.Model.n3()} ; {T.modelId.n3()} ?model ; {PROV.actedOnBehalfOf.n3()} ?principal .
    GRAPH ?cg1 {{ ?p {PROV.value.n3()} ?prompt }} ?a {PROV.used.n3()} ?p .
    OPTIONAL {{ ?a {PROV.wasInformedBy.n3()} ?parent }}
    OPTIONAL {{ ?a {T.stepIndex.n3()} ?step }}
    OPTIONAL {{ ?a {T.costUSD.n3()} ?usd }}
    OPTIONAL {{ ?c {PROV.wasGeneratedBy.n3()} ?a . GRAPH ?cg2 {{ ?c {PROV.value.n3()} ?text }} }}
  }}
}}
"""


def completion(store: Store, activity: str) -> dict[str, object]:
    result = store.query(COMPLETION, {"a": IRI(activity)})
    assert isinstance(result, Solutions)
    rows = [{k: to_python(v) for k, v in row.items()} for row in result]
    assert len(rows) == 1, rows
    return rows[0]


def test_mock_fixed_callable_and_list_scripts_record_requests(ctx: Context) -> None:
    fixed = LLMClient.mock(response="finish")
    assert fixed.complete("a", ctx=ctx).text == "finish"
    assert fixed.complete("b", ctx=ctx).text == "finish"
    assert [r.messages[0].content for r in fixed.requests] == ["a", "b"]

    def route(msgs: list[Message]) -> str:
        sys = next((m.content for m in msgs if m.role == "system"), "")
        return "critic" if "critic" in sys else "inner"

    routed = LLMClient.mock(response=route)
    assert (
        routed.complete(
            [Message("system", "you are the critic"), Message("user", "x")], ctx=ctx
        ).text
        == "critic"
    )
    assert routed.complete("plain", ctx=ctx).text == "inner"

    listed = LLMClient.mock(response=["one", "two"])
    assert [listed.complete("q", ctx=ctx).text for _ in range(2)] == ["one", "two"]
    assert listed.last_request is not None and listed.last_request.messages[0].content == "q"


def test_complete_books_envelope_and_records_completion(ctx: Context, store: Store) -> None:
    client = LLMClient.mock(
        response=Response(text="hello", model="", input_tokens=12, output_tokens=5, usd=0.25)
    )
    step_ctx = ctx.child(parent=ctx.session, step=4)
    response = client.complete("say hello", max_tokens=64, temperature=0.5, ctx=step_ctx)

    assert response.text == "hello" and response.usd == 0.25
    assert response.activity_iri is not None and response.call_id is not None
    [envelope] = ctx.tracker.envelopes()
    assert (envelope.tag, envelope.principal, envelope.usd) == ("llm:mock", "did:local:alice", 0.25)
    assert (envelope.input_tokens, envelope.output_tokens) == (12, 5)
    assert envelope.activity == response.activity_iri and envelope.call_id == response.call_id

    row = completion(store, response.activity_iri)
    params = request_params(64, 0.5)
    assert row["status"] == "ok"
    assert row["hash"] == request_hash("mock", [Message("user", "say hello")], params)
    assert row["parent"] == ctx.session and row["step"] == 4
    assert row["usd"] == 0.25 and (row["in"], row["out"]) == (12, 5)
    assert row["model"] == "mock" and row["principal"] == "did:local:alice"
    assert row["text"] == "hello" and row["retries"] == 0
    assert row["prompt"] == canonical_json(
        {"messages": [{"role": "user", "content": "say hello"}], "params": params}
    )


def test_budget_is_checked_before_the_call(ctx: Context, store: Store) -> None:
    client = LLMClient.mock(
        response=Response(text="x", model="", input_tokens=1, output_tokens=1, usd=1.0)
    )
    ctx.tracker.set_budget(ctx.principal, usd=1.5)
    client.complete("first", ctx=ctx)
    client.complete("second", ctx=ctx)  # 1.0 spent < 1.5: may start
    with pytest.raises(BudgetExceeded) as info:
        client.complete("third", ctx=ctx)
    assert info.value.kind == "usd" and info.value.principal == "did:local:alice"
    assert len(client.requests) == 2  # the third never reached the model
    count = store.query(
        f"SELECT ?s (COUNT(?a) AS ?n) WHERE {{ GRAPH ?g {{ ?a a {T.LLMCompletion.n3()} ; "
        f"{T.status.n3()} ?s }} }} GROUP BY ?s ORDER BY ?s"
    )
    assert isinstance(count, Solutions)
    # two answered; the refused third is recorded too (see test_llm_failover.py)
    assert [(to_python(r[0]), to_python(r[1])) for r in count.rows] == [("ok", 2), ("refused", 1)]


def test_token_budget(ctx: Context) -> None:
    client = LLMClient.mock(response="a" * 400)
    ctx.tracker.set_budget(ctx.principal, tokens=50)
    client.complete("q", ctx=ctx)
    with pytest.raises(BudgetExceeded) as info:
        client.complete("q", ctx=ctx)
    assert info.value.kind == "tokens"


def test_provider_failure_records_failed_completion(ctx: Context, store: Store) -> None:
    boom = ModelServerError("upstream 503", provider="mock", status=503, request_id="req_9")
    client = LLMClient.mock(response=[boom])
    with pytest.raises(ModelServerError) as info:
        client.complete("hi", ctx=ctx)
    error = info.value
    assert error.status == 503 and error.request_id == "req_9"
    row = completion(store, error.activity_iri)  # type: ignore[attr-defined]
    assert row["status"] == "error" and "text" not in row and "usd" not in row
    message = store.query(
        f"SELECT ?a ?e ?rid WHERE {{ GRAPH ?g {{ ?a {T.requestId.n3()} ?rid }} "
        f"GRAPH ?cg {{ ?a {T.errorMessage.n3()} ?e }} }}",
        {"a": IRI(error.activity_iri)},  # type: ignore[attr-defined]
    )
    assert isinstance(message, Solutions)
    [(_, e, rid)] = message.rows
    assert "upstream 503" in str(to_python(e)) and to_python(rid) == "req_9"
    assert ctx.tracker.envelopes() == []  # a failed call spent nothing


def test_exhausted_script_is_a_model_error(ctx: Context) -> None:
    client = LLMClient.mock(response=["only"])
    client.complete("a", ctx=ctx)
    with pytest.raises(MockScriptExhausted, match="holds 1 answer"):
        client.complete("b", ctx=ctx)


def test_foreign_adapter_exception_is_translated(ctx: Context) -> None:
    client = LLMClient.mock(response=[ValueError("bad socket")])
    with pytest.raises(ModelAPIError, match="ValueError: bad socket") as info:
        client.complete("a", ctx=ctx)
    assert isinstance(info.value.__cause__, ValueError)


def test_without_ctx_the_default_context_is_used(store: Store) -> None:
    response = LLMClient.mock(response="ok").complete("hi")
    ctx = default_context()
    row = completion(store, str(response.activity_iri))
    assert row["parent"] == ctx.session
    assert default_tracker().envelopes()[0].principal == ctx.principal


def test_module_tracker_is_the_kernel_default() -> None:
    assert _module_tracker() is default_tracker()


def test_request_hash_is_canonical() -> None:
    msgs = [Message("system", "s", cache=True), Message("user", "ü 🚀")]
    params = request_params(100, 0.0)
    expected = sha256_hex(
        canonical_json(
            {
                "model": "m",
                "messages": [
                    {"role": "system", "content": "s", "cache": True},
                    {"role": "user", "content": "ü 🚀"},
                ],
                "params": {"max_tokens": 100, "temperature": 0.0},
            }
        )
    )
    assert request_hash("m", msgs, params) == expected
    assert (
        request_hash("m", [m.as_dict() for m in msgs], dict(reversed(params.items()))) == expected
    )
    assert request_hash("m", msgs, request_params(100, 0.1)) != expected
    assert request_hash("m2", msgs, params) != expected
    assert request_hash("m", msgs[1:], params) != expected
    assert request_params(10, 0, stop=["x"])["stop"] == ["x"]


def test_model_override_and_spec(ctx: Context) -> None:
    client = LLMClient.mock(response="x")
    response = client.complete("q", ctx=ctx, model="other-model")
    assert response.model == "other-model"
    assert client.requests[-1].model == "other-model"
    assert ctx.tracker.envelopes()[-1].tag == "llm:other-model"


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ([], "at least one message"),
        ([{"role": "robot", "content": "x"}], "role 'robot'"),
        ([{"content": "x"}], "no 'role'"),
        ([42], "expected Message or dict"),
    ],
)
def test_bad_messages_are_user_errors(ctx: Context, messages: list[object], match: str) -> None:
    with pytest.raises(UserError, match=match):
        LLMClient.mock(response="x").complete(messages, ctx=ctx)  # type: ignore[arg-type]


def test_bad_params_are_user_errors(ctx: Context) -> None:
    client = LLMClient.mock(response="x")
    with pytest.raises(UserError, match="max_tokens"):
        client.complete("q", ctx=ctx, max_tokens=0)
    with pytest.raises(UserError, match="temperature"):
        client.complete("q", ctx=ctx, temperature="hot")  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"LLMClient\.mock"):
        LLMClient.mock(response=42)  # type: ignore[arg-type]


def test_recorded_hash_is_a_bound_parameter(ctx: Context, store: Store) -> None:
    response = LLMClient.mock(response="x").complete('q" } DROP ALL #', ctx=ctx)
    row = completion(store, str(response.activity_iri))
    found = store.query(
        f"SELECT ?h WHERE {{ GRAPH ?g {{ ?a {T.requestHash.n3()} ?h }} }}",
        {"h": literal(str(row["hash"]))},
    )
    assert isinstance(found, Solutions) and len(found) == 2  # the activity and its prompt
