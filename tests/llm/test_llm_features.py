"""Prompt caching, the response cache, the store lookup, fallback, the catalogue, specs and streams."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest
from llm_fakes import FakeServer, Reply, Sleeps, anthropic_message

from trails.errors import BudgetExceeded, ConfigError, UserError
from trails.kernel import Context
from trails.llm import (
    Catalogue,
    Chunk,
    LLMClient,
    Message,
    ModelBadRequestError,
    ModelServerError,
    ModelSpec,
    ProvidersUnavailable,
    Response,
    ResponseCache,
    RetryPolicy,
    lookup_recorded,
    select_model,
)
from trails.llm.anthropic import to_anthropic
from trails.llm.fallback import FallbackAdapter
from trails.llm.mock import MockAdapter
from trails.prov import T
from trails.store import Solutions, Store, to_python
from trails.testing import assert_conforms


def cache_hits(store: Store) -> list[bool]:
    result = store.query(
        f"SELECT ?h ?s WHERE {{ GRAPH ?g {{ ?a {T.cacheHit.n3()} ?h ; "
        f"{PROV_STARTED} ?s }} }} ORDER BY ?s"
    )
    assert isinstance(result, Solutions)
    return [bool(to_python(row["h"])) for row in result]


PROV_STARTED = "<http://www.w3.org/ns/prov#startedAtTime>"


# -- prompt caching -------------------------------------------------------------------


@pytest.mark.seed_row("001-020")
def test_cache_control_on_marked_messages() -> None:
    msgs = (Message("system", "frame", cache=True), Message("user", "q", cache=True))
    system, chat = to_anthropic(msgs, cache=True)
    assert system == [{"type": "text", "text": "frame", "cache_control": {"type": "ephemeral"}}]
    assert chat[0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    system, chat = to_anthropic(msgs, cache=False)
    assert "cache_control" not in system[0] and "cache_control" not in chat[0]["content"][0]
    # cache=True with nothing marked: the system prompt becomes the breakpoint
    system, _ = to_anthropic((Message("system", "a"), Message("user", "b")), cache=True)
    assert system[0]["cache_control"] == {"type": "ephemeral"}


@pytest.mark.seed_row("001-020")
@pytest.mark.seed_row("000-049")
def test_anthropic_cache_tokens_are_priced(server: FakeServer, ctx: Context, store: Store) -> None:
    server.enqueue(
        Reply(
            json=anthropic_message(
                "ok", input_tokens=20, output_tokens=10, cache_read=1000, cache_write=0
            )
        ),
        Reply(
            json=anthropic_message(
                "ok", input_tokens=20, output_tokens=10, cache_read=0, cache_write=1000
            )
        ),
    )
    client = LLMClient.anthropic(
        "claude-haiku-4-5",
        cache=True,
        api_key="k",
        base_url=server.url,
        retry=RetryPolicy(max_retries=0),
    )
    msgs = [Message("system", "long frame " * 100, cache=True), Message("user", "q")]
    read = client.complete(msgs, ctx=ctx)
    write = client.complete(msgs, ctx=ctx)
    assert read.cache_read_tokens == 1000 and write.cache_write_tokens == 1000
    # haiku 4.5: input $1, output $5, cache read $0.10, cache write $1.25 per Mtok
    assert read.usd == pytest.approx((20 * 1 + 10 * 5 + 1000 * 0.10) / 1e6)
    assert write.usd == pytest.approx((20 * 1 + 10 * 5 + 1000 * 1.25) / 1e6)
    assert server.requests[0].body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert_conforms(store)


# -- response cache -------------------------------------------------------------------


def test_response_cache_hit_books_usage_and_is_recorded(ctx: Context, store: Store) -> None:
    scripted = Response(text="42", model="", input_tokens=7, output_tokens=2, usd=0.5)
    client = LLMClient.mock(response=[scripted], response_cache=True)
    first = client.complete("meaning of life?", ctx=ctx)
    second = client.complete("meaning of life?", ctx=ctx)
    assert (first.text, second.text) == ("42", "42")
    assert not first.cache_hit and second.cache_hit
    assert len(client.requests) == 1  # the second never reached the model
    envelopes = ctx.tracker.envelopes()
    assert len(envelopes) == 2
    assert envelopes[1].input_tokens == 7 and envelopes[1].usd == 0.5  # the answer's original cost
    assert second.activity_iri != first.activity_iri
    assert cache_hits(store) == [False, True]
    assert_conforms(store)


def test_response_cache_key_includes_params(ctx: Context) -> None:
    client = LLMClient.mock(response=["a", "b"], response_cache=True)
    assert client.complete("q", ctx=ctx, temperature=0.0).text == "a"
    assert client.complete("q", ctx=ctx, temperature=0.7).text == "b"


def test_lru_and_ttl() -> None:
    now = [0.0]
    cache = ResponseCache(max_size=2, ttl_seconds=10, clock=lambda: now[0])
    r = Response(text="x", model="m")
    cache.set("a", r)
    cache.set("b", r)
    assert cache.get("a") is r  # a is now most recent
    cache.set("c", r)  # evicts b
    assert cache.get("b") is None and cache.get("c") is r
    now[0] = 10.0
    assert cache.get("a") is None  # expired
    stats = cache.stats
    assert (stats.hits, stats.misses, stats.evictions) == (2, 2, 1)
    assert stats.hit_rate == 0.5
    with pytest.raises(UserError):
        ResponseCache(max_size=0)


def test_store_lookup_answers_from_a_recorded_completion(ctx: Context, store: Store) -> None:
    LLMClient.mock(
        response=Response(text="recorded answer", model="", input_tokens=3, output_tokens=4)
    ).complete("same question", ctx=ctx, max_tokens=99)
    replaying = LLMClient.mock(response=["fresh answer"], store_cache=True)
    hit = replaying.complete("same question", ctx=ctx, max_tokens=99)
    assert hit.text == "recorded answer" and hit.cache_hit
    assert (hit.input_tokens, hit.output_tokens, hit.usd) == (3, 4, 0.0)  # a local model: 0 then
    assert replaying.requests == []
    miss = replaying.complete("same question", ctx=ctx, max_tokens=100)  # other params: other hash
    assert miss.text == "fresh answer" and not miss.cache_hit
    assert lookup_recorded(store, "0" * 64) is None
    assert_conforms(store)


def test_store_lookup_ignores_failed_completions(ctx: Context, store: Store) -> None:
    failing = LLMClient.mock(response=[ModelServerError("down", provider="mock", status=500)])
    with pytest.raises(ModelServerError):
        failing.complete("q", ctx=ctx)
    client = LLMClient.mock(response="live", store_cache=True)
    assert client.complete("q", ctx=ctx).text == "live"


# -- fallback and circuit breaker -------------------------------------------------------


def down(n: int) -> list[Any]:
    return [ModelServerError(f"down {i}", provider="mock", status=503) for i in range(n)]


def test_fallback_uses_the_next_client(ctx: Context, store: Store) -> None:
    primary = LLMClient.mock(response=down(1), model="primary")
    backup = LLMClient.mock(response=["from backup"], model="backup")
    client = LLMClient.fallback([primary, backup])
    response = client.complete("q", ctx=ctx)
    assert response.text == "from backup" and response.model == "backup"
    assert response.retries == 1  # one failed attempt before the answer
    assert backup.requests[0].model == "backup"
    models = store.query(
        f"SELECT ?m ?s WHERE {{ GRAPH ?g {{ ?a {T.status.n3()} ?s ; "
        f"<http://www.w3.org/ns/prov#wasAssociatedWith> ?x . ?x {T.modelId.n3()} ?m }} }} "
        "ORDER BY ?m"
    )
    assert isinstance(models, Solutions)
    # the model that answered, and the failed attempt (see test_llm_failover.py)
    assert [(to_python(r["m"]), to_python(r["s"])) for r in models] == [
        ("backup", "ok"),
        ("primary", "error"),
    ]
    assert_conforms(store)


def test_circuit_opens_after_max_failures_and_half_opens_after_cooldown(ctx: Context) -> None:
    now = [0.0]
    primary = MockAdapter([*down(2), "primary back"], model="primary")
    backup = MockAdapter(["b1", "b2", "b3", "b4"], model="backup")
    no_retry = RetryPolicy(max_retries=0)
    adapter = FallbackAdapter(
        [(primary, no_retry), (backup, no_retry)],
        max_failures=2,
        cooldown_seconds=30,
        clock=lambda: now[0],
    )
    client = LLMClient(adapter, retry=no_retry)
    assert client.complete("1", ctx=ctx).text == "b1"
    assert client.complete("2", ctx=ctx).text == "b2"  # second failure: the circuit opens
    assert adapter.states[0].is_open(now[0])
    assert client.complete("3", ctx=ctx).text == "b3"
    assert len(primary.requests) == 2  # skipped while open
    now[0] = 31.0  # cooldown over: one trial call
    assert client.complete("4", ctx=ctx).text == "primary back"
    assert adapter.states[0].failures == 0 and not adapter.states[0].is_open(now[0])


def test_a_member_skipped_for_its_open_circuit_is_evidence(ctx: Context, store: Store) -> None:
    now = [0.0]
    primary = MockAdapter(down(1), model="primary")
    backup = MockAdapter(["b1", "b2"], model="backup")
    no_retry = RetryPolicy(max_retries=0)
    adapter = FallbackAdapter(
        [(primary, no_retry), (backup, no_retry)],
        max_failures=1,
        cooldown_seconds=30,
        clock=lambda: now[0],
    )
    client = LLMClient(adapter, retry=no_retry)
    client.complete("1", ctx=ctx)  # the primary fails: its circuit opens
    answered = client.complete("2", ctx=ctx)  # the primary is skipped, unasked
    assert answered.text == "b2" and len(primary.requests) == 1
    skips = store.query(
        f"SELECT ?s ?skipped ?instead ?until ?for WHERE {{ GRAPH ?g {{ ?s a {T.CircuitSkip.n3()} ;"
        f" {T.skippedProvider.n3()} ?skipped ; {T.askedInstead.n3()} ?instead ;"
        f" {T.circuitOpenUntil.n3()} ?until ; {T.skippedFor.n3()} ?for }} }}"
    )
    assert isinstance(skips, Solutions)
    [skip] = list(skips)
    assert (to_python(skip["skipped"]), to_python(skip["instead"])) == (
        "mock:primary",
        "mock:backup",
    )
    assert str(skip["for"]) == answered.activity_iri
    assert to_python(skip["until"]) > datetime.now(UTC)  # about 30 s on
    assert_conforms(store)


def test_fallback_all_down(ctx: Context) -> None:
    client = LLMClient.fallback(
        [LLMClient.mock(response=down(1), model="a"), LLMClient.mock(response=down(1), model="b")]
    )
    with pytest.raises(ProvidersUnavailable, match=r"mock:a: ModelServerError.*mock:b") as info:
        client.complete("q", ctx=ctx)
    assert info.value.retries == 2  # type: ignore[attr-defined]


def test_fallback_does_not_hide_a_bad_request(ctx: Context) -> None:
    bad = ModelBadRequestError("prompt too long", provider="mock", status=400)
    backup = LLMClient.mock(response="never")
    client = LLMClient.fallback([LLMClient.mock(response=[bad]), backup])
    with pytest.raises(ModelBadRequestError):
        client.complete("q", ctx=ctx)
    assert backup.requests == []


def test_fallback_streams(ctx: Context) -> None:
    client = LLMClient.fallback(
        [
            LLMClient.mock(response=down(1), model="a"),
            LLMClient.mock(response=["streamed"], model="b"),
        ]
    )
    parts = list(client.stream("q", ctx=ctx))
    assert (
        isinstance(parts[-1], Response) and parts[-1].text == "streamed" and parts[-1].model == "b"
    )


def test_fallback_needs_clients() -> None:
    with pytest.raises(UserError, match="at least one"):
        LLMClient.fallback([])
    with pytest.raises(UserError, match="max_failures"):
        LLMClient.fallback([LLMClient.mock()], max_failures=0)


# -- retry policy -----------------------------------------------------------------------


def test_backoff_doubles_with_bounded_jitter() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.5, rand=random.Random(1))
    delays = [policy.delay(n) for n in (1, 2, 3, 4)]
    for delay, nominal in zip(delays, (1.0, 2.0, 4.0, 5.0), strict=True):
        assert nominal * 0.5 <= delay <= nominal
    assert RetryPolicy(jitter=0.0, base_delay=1.0).delay(1, retry_after=3.0) == 3.0
    assert RetryPolicy(jitter=0.0, base_delay=1.0, max_delay=2.0).delay(1, retry_after=100) == 2.0
    with pytest.raises(UserError):
        RetryPolicy(max_retries=-1)


def test_mock_retries_when_asked(ctx: Context, sleeps: Sleeps) -> None:
    client = LLMClient.mock(
        response=[*down(2), "third time"],
        retry=RetryPolicy(max_retries=2, base_delay=0.001, sleep=sleeps),
    )
    response = client.complete("q", ctx=ctx)
    assert response.text == "third time" and response.retries == 2 and len(sleeps) == 2


# -- catalogue ------------------------------------------------------------------------


def test_catalogue_prices_and_unknown_models(ctx: Context, store: Store) -> None:
    catalogue = Catalogue.load()
    sonnet = catalogue.find("anthropic", "claude-sonnet-4-5-20250929")
    assert sonnet is not None and sonnet.input_per_mtok == 3.0 and sonnet.output_per_mtok == 15.0
    assert sonnet.cost(1_000_000, 0) == 3.0
    assert catalogue.spec_for("ollama", "anything:7b").cost(100, 100) == 0.0
    unknown = catalogue.spec_for("anthropic", "claude-unknown-9")
    assert unknown.cost(100, 100) is None
    # an unknown, non-local model records tokens and no usd
    client = LLMClient(MockAdapter("x", model="mystery"), catalogue=Catalogue([], set()))
    client.adapter.local = False  # type: ignore[misc]
    response = client.complete("q", ctx=ctx)
    assert response.usd is None and response.output_tokens == 1
    assert ctx.tracker.unknown_usd() == 1
    rows = store.query(f"SELECT ?u WHERE {{ GRAPH ?g {{ ?a {T.costUSD.n3()} ?u }} }}")
    assert isinstance(rows, Solutions) and len(rows) == 0
    assert_conforms(store)


def test_select_model() -> None:
    assert select_model("summarize", budget_hint="cheap").local  # local models cost 0
    best = select_model("reasoning", budget_hint="best")
    assert best.quality == max(m.quality for m in Catalogue.load())
    cheap_cloud = select_model("summarize", budget_hint="cheap", provider="anthropic")
    assert cheap_cloud.model == "claude-haiku-4-5"
    capped = select_model("plan", budget_hint=6.0, provider="anthropic")
    assert capped.blended_per_mtok() <= 6.0
    assert isinstance(select_model("unheard-of-task"), ModelSpec)
    assert select_model("chat", budget_hint="local").local
    with pytest.raises(UserError, match="budget_hint"):
        select_model("plan", budget_hint="free-lunch")
    with pytest.raises(UserError, match="at most"):
        select_model("plan", budget_hint=0.0001, provider="anthropic")


def test_catalogue_file_errors(tmp_path: Any) -> None:
    bad = tmp_path / "models.toml"
    bad.write_text('[[model]]\nprovider = "x"\nid = "y"\ninput = -1\n')
    with pytest.raises(ConfigError, match="input must be a non-negative number"):
        Catalogue.load(bad)
    bad.write_text("not toml [")
    with pytest.raises(ConfigError, match="cannot read"):
        Catalogue.load(bad)


def test_model_spec_as_model_argument(ctx: Context) -> None:
    client = LLMClient.mock(response="x")
    spec = select_model("chat", provider="mock")  # another provider's spec: test_seed_api
    assert client.complete("q", ctx=ctx, model=spec).model == spec.model


# -- from_spec --------------------------------------------------------------------------


def test_from_spec() -> None:
    assert LLMClient.from_spec("mock").provider == "mock"
    assert LLMClient.from_spec("mock:scripted", response="hi").model == "scripted"
    a = LLMClient.from_spec("anthropic:claude-haiku-4-5", api_key="k")
    assert (a.provider, a.model) == ("anthropic", "claude-haiku-4-5")
    o = LLMClient.from_spec("ollama:qwen3:8b@http://127.0.0.1:1")
    assert (o.provider, o.model) == ("ollama", "qwen3:8b")
    assert o.adapter.host == "http://127.0.0.1:1"  # type: ignore[attr-defined]
    oa = LLMClient.from_spec("openai:qwen2.5@http://127.0.0.1:8000/v1")
    assert (oa.provider, oa.model) == ("openai_compatible", "qwen2.5")
    for bad in ("gpt", "anthropic", "openai:model-without-url", "cohere:x"):
        with pytest.raises(UserError, match=r"accepted forms|MODEL@URL"):
            LLMClient.from_spec(bad)


# -- streams ----------------------------------------------------------------------------


def test_mock_stream_and_budget_checked_at_call(ctx: Context, store: Store) -> None:
    client = LLMClient.mock(response="abcdefghijklmnopqrstuvwxyz")
    parts = list(client.stream("q", ctx=ctx))
    assert "".join(p.text for p in parts if isinstance(p, Chunk)) == parts[-1].text
    assert len(parts) == 5  # 4 chunks of 8 characters, then the response
    ctx.tracker.set_budget(ctx.principal, tokens=1)
    with pytest.raises(BudgetExceeded):
        client.stream("q", ctx=ctx)  # raised at the call, before iteration
    assert len(client.requests) == 1


def test_stream_closed_early_records_a_failed_completion(ctx: Context, store: Store) -> None:
    stream = LLMClient.mock(response="x" * 40).stream("q", ctx=ctx)
    assert isinstance(next(stream), Chunk)
    stream.close()  # type: ignore[attr-defined]
    result = store.query(
        f'SELECT ?e WHERE {{ GRAPH ?g {{ ?a {T.status.n3()} "error" }} '
        f"GRAPH ?cg {{ ?a {T.errorMessage.n3()} ?e }} }}"
    )
    assert isinstance(result, Solutions) and "closed by the consumer" in str(
        to_python(result.rows[0][0])
    )
    assert ctx.tracker.envelopes() == []
    assert_conforms(store)


def test_stream_from_the_store_lookup(ctx: Context) -> None:
    LLMClient.mock(response=["recorded text"]).complete("q", ctx=ctx)
    client = LLMClient.mock(response=["live text"], store_cache=True)
    parts = list(client.stream("q", ctx=ctx))
    assert [p.text for p in parts] == ["recorded text", "recorded text"]
    assert isinstance(parts[-1], Response) and parts[-1].cache_hit
