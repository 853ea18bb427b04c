"""The three HTTP adapters against loopback servers speaking their real wire formats.

Anthropic runs through the real ``anthropic`` SDK (base_url pointed at the
fake, SDK retries off); Ollama and the OpenAI-compatible adapter run over
httpx. Every case ends with the recorded graph checked against the shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from llm_fakes import (
    FakeServer,
    Reply,
    Sleeps,
    anthropic_error,
    anthropic_message,
    anthropic_stream,
    ollama_chat,
    ollama_stream,
    openai_chat,
    openai_stream,
)

from trails.kernel import Context
from trails.llm import (
    Chunk,
    LLMClient,
    MalformedResponseError,
    Message,
    ModelAPIError,
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelServerError,
    ModelTimeoutError,
    RealModelsForbidden,
    Response,
    RetryPolicy,
)
from trails.prov import T
from trails.store import IRI, Solutions, Store, to_python
from trails.testing import assert_conforms, assert_prov_readable


@dataclass
class Kit:
    """How to build a client for one provider and script its server."""

    name: str
    client: Callable[..., LLMClient]
    ok: Callable[[str], Reply]
    stream: Callable[[list[str]], Reply]
    error: Callable[..., Reply]
    tokens: tuple[int, int]


def _anthropic_client(url: str, retry: RetryPolicy, timeout: float = 5.0, **kw: Any) -> LLMClient:
    return LLMClient.anthropic(
        "claude-haiku-4-5", api_key="test-key", base_url=url, retry=retry, timeout=timeout, **kw
    )


def _anthropic_error(
    status: int, message: str = "nope", headers: dict[str, str] | None = None
) -> Reply:
    kinds = {401: "authentication_error", 400: "invalid_request_error", 429: "rate_limit_error"}
    return Reply(
        status=status,
        json=anthropic_error(status, kinds.get(status, "api_error"), message),
        headers={"request-id": f"req_{status}", **(headers or {})},
    )


def _plain_error(
    status: int, message: str = "nope", headers: dict[str, str] | None = None
) -> Reply:
    return Reply(
        status=status,
        json={"error": {"message": message, "type": "error"}},
        headers={"x-request-id": f"req_{status}", **(headers or {})},
    )


KITS = [
    Kit(
        "anthropic",
        _anthropic_client,
        lambda text: Reply(json=anthropic_message(text), headers={"request-id": "req_ok"}),
        lambda pieces: Reply(
            chunks=anthropic_stream(pieces),
            content_type="text/event-stream",
            headers={"request-id": "req_ok"},
        ),
        _anthropic_error,
        (10, 5),
    ),
    Kit(
        "ollama",
        lambda url, retry, timeout=5.0: LLMClient.ollama(
            "qwen3:8b", host=url, retry=retry, timeout=timeout
        ),
        lambda text: Reply(json=ollama_chat(text)),
        lambda pieces: Reply(chunks=ollama_stream(pieces), content_type="application/x-ndjson"),
        _plain_error,
        (12, 4),
    ),
    Kit(
        "openai",
        lambda url, retry, timeout=5.0: LLMClient.openai_compatible(
            "local-model", base_url=url + "/v1", retry=retry, timeout=timeout
        ),
        lambda text: Reply(json=openai_chat(text), headers={"x-request-id": "req_ok"}),
        lambda pieces: Reply(
            chunks=openai_stream(pieces),
            content_type="text/event-stream",
            headers={"x-request-id": "req_ok"},
        ),
        _plain_error,
        (9, 3),
    ),
]

pytestmark = pytest.mark.parametrize("kit", KITS, ids=[k.name for k in KITS])


def recorded(store: Store, activity: str) -> dict[str, Any]:
    result = store.query(
        f"""SELECT ?a ?status ?retries ?rid ?err ?text ?usd WHERE {{ GRAPH ?g {{
              ?a {T.status.n3()} ?status ; {T.retries.n3()} ?retries .
              OPTIONAL {{ ?a {T.requestId.n3()} ?rid }}
              OPTIONAL {{ GRAPH ?errorMessageGraph1 {{ ?a {T.errorMessage.n3()} ?err }} }}
              OPTIONAL {{ ?a {T.costUSD.n3()} ?usd }}
              OPTIONAL {{ ?c a {T.Completion.n3()} ; <http://www.w3.org/ns/prov#wasGeneratedBy> ?a .
                         GRAPH ?cg {{ ?c <http://www.w3.org/ns/prov#value> ?text }} }}
            }} }}""",
        {"a": IRI(activity)},
    )
    assert isinstance(result, Solutions)
    [row] = list(result)
    return {k: to_python(v) for k, v in row.items()}


def test_success(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context, store: Store
) -> None:
    server.enqueue(kit.ok("Bonjour"))
    client = kit.client(server.url, fast_retry)
    response = client.complete(
        [Message("system", "be brief"), Message("user", "hello")], ctx=ctx, max_tokens=50
    )
    assert response.text == "Bonjour"
    assert (response.input_tokens, response.output_tokens) == kit.tokens
    assert response.retries == 0 and not response.cache_hit
    if kit.name == "anthropic":
        assert response.request_id == "req_ok"
        # claude-haiku-4-5 at $1 / $5 per Mtok (the server answers with a dated id)
        assert response.model == "claude-haiku-4-5-20251001"
        assert response.usd == pytest.approx((10 * 1.0 + 5 * 5.0) / 1e6)
        body = server.requests[0].body
        assert body["system"] == [{"type": "text", "text": "be brief"}]
        assert body["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": "hello"}]}
        ]
        headers = server.requests[0].headers
        assert "test-key" in headers.get("x-api-key", "") + headers.get("authorization", "")
    elif kit.name == "ollama":
        assert response.usd == 0.0  # local
        body = server.requests[0].body
        assert body["stream"] is False and body["options"]["num_predict"] == 50
        assert body["messages"][0] == {"role": "system", "content": "be brief"}
    else:
        assert response.usd == 0.0  # a loopback server is local
        assert server.requests[0].path == "/v1/chat/completions"
        assert server.requests[0].body["max_tokens"] == 50
    row = recorded(store, str(response.activity_iri))
    assert row["status"] == "ok" and row["text"] == "Bonjour"
    assert_conforms(store)
    assert_prov_readable(store, activities={str(response.activity_iri)})


def test_streaming(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context, store: Store
) -> None:
    server.enqueue(kit.stream(["Hel", "lo ", "wörld"]))
    parts = list(kit.client(server.url, fast_retry).stream("hi", ctx=ctx))
    chunks, final = parts[:-1], parts[-1]
    assert [c.text for c in chunks if isinstance(c, Chunk)] == ["Hel", "lo ", "wörld"]
    assert isinstance(final, Response) and final.text == "Hello wörld"
    assert (final.input_tokens, final.output_tokens) == kit.tokens
    assert recorded(store, str(final.activity_iri))["text"] == "Hello wörld"
    assert ctx.tracker.total_tokens() == sum(kit.tokens)
    assert_conforms(store)


def test_401_is_not_retried(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context, store: Store
) -> None:
    server.enqueue(kit.error(401, "invalid x-api-key"))
    with pytest.raises(ModelAuthenticationError) as info:
        kit.client(server.url, fast_retry).complete("hi", ctx=ctx)
    err = info.value
    assert err.status == 401 and err.request_id == "req_401" and err.provider
    assert "invalid x-api-key" in str(err)
    assert len(server.requests) == 1
    row = recorded(store, err.activity_iri)  # type: ignore[attr-defined]
    assert row["status"] == "error" and row["rid"] == "req_401" and "text" not in row
    assert "ModelAuthenticationError" in row["err"]
    assert_conforms(store)


def test_400_is_not_retried(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context
) -> None:
    server.enqueue(kit.error(400, "max_tokens too large"))
    with pytest.raises(ModelBadRequestError):
        kit.client(server.url, fast_retry).complete("hi", ctx=ctx)
    assert len(server.requests) == 1


def test_429_with_retry_after_then_success(
    kit: Kit,
    server: FakeServer,
    fast_retry: RetryPolicy,
    sleeps: Sleeps,
    ctx: Context,
    store: Store,
) -> None:
    server.enqueue(kit.error(429, "slow down", {"retry-after": "2"}), kit.ok("done"))
    response = kit.client(server.url, fast_retry).complete("hi", ctx=ctx)
    assert response.text == "done" and response.retries == 1
    assert sleeps == [2.0]  # the provider's retry-after wins over the 1 ms backoff
    assert recorded(store, str(response.activity_iri))["retries"] == 1


def test_500_until_exhausted(
    kit: Kit,
    server: FakeServer,
    fast_retry: RetryPolicy,
    sleeps: Sleeps,
    ctx: Context,
    store: Store,
) -> None:
    server.enqueue(*(kit.error(500, "internal") for _ in range(3)))
    with pytest.raises(ModelServerError) as info:
        kit.client(server.url, fast_retry).complete("hi", ctx=ctx)
    assert info.value.status == 500
    assert len(server.requests) == 3 and sleeps == [0.001, 0.002]
    row = recorded(store, info.value.activity_iri)  # type: ignore[attr-defined]
    assert row["status"] == "error" and row["retries"] == 2
    assert ctx.tracker.envelopes() == []
    assert_conforms(store)


def test_timeout(kit: Kit, server: FakeServer, ctx: Context, store: Store) -> None:
    server.enqueue(Reply(json={}, delay=1.0))
    client = kit.client(server.url, RetryPolicy(max_retries=0), timeout=0.05)
    with pytest.raises(ModelTimeoutError) as info:
        client.complete("hi", ctx=ctx)
    assert recorded(store, info.value.activity_iri)["status"] == "error"  # type: ignore[attr-defined]


def test_timeout_is_retried(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context
) -> None:
    server.enqueue(Reply(json={}, delay=1.0), kit.ok("second try"))
    client = kit.client(server.url, fast_retry, timeout=0.2)
    response = client.complete("hi", ctx=ctx)
    assert response.text == "second try" and response.retries == 1


def test_malformed_json(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context, store: Store
) -> None:
    server.enqueue(
        Reply(
            body=b'{"id": "x", "content": [',
            headers={"request-id": "req_bad", "x-request-id": "req_bad"},
        )
    )
    with pytest.raises(MalformedResponseError) as info:
        kit.client(server.url, fast_retry).complete("hi", ctx=ctx)
    assert len(server.requests) == 1  # not retried
    assert info.value.request_id == "req_bad"
    assert recorded(store, info.value.activity_iri)["rid"] == "req_bad"  # type: ignore[attr-defined]


def test_wrong_shape_is_malformed(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context
) -> None:
    server.enqueue(Reply(json=["not", "a", "completion"]))
    with pytest.raises(MalformedResponseError):
        kit.client(server.url, fast_retry).complete("hi", ctx=ctx)


def test_empty_completion(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context, store: Store
) -> None:
    server.enqueue(kit.ok(""))
    response = kit.client(server.url, fast_retry).complete("say nothing", ctx=ctx)
    assert response.text == ""
    assert recorded(store, str(response.activity_iri))["text"] == ""
    assert_conforms(store)


def test_unicode_and_very_long_prompt(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context, store: Store
) -> None:
    prompt = "Grüße, 世界! 🚀 " + "lorem ipsum " * 50_000
    server.enqueue(kit.ok("Ответ: 完成 ✓"))
    response = kit.client(server.url, fast_retry).complete(prompt, ctx=ctx)
    assert response.text == "Ответ: 完成 ✓"
    sent = server.requests[0].body["messages"][-1]["content"]
    sent_text = sent[0]["text"] if isinstance(sent, list) else sent
    assert sent_text == prompt
    row = recorded(store, str(response.activity_iri))
    assert row["text"] == "Ответ: 完成 ✓"


def test_connection_refused(
    kit: Kit, fast_retry: RetryPolicy, sleeps: Sleeps, ctx: Context
) -> None:
    dead = FakeServer()
    url = dead.url
    dead.close()
    with pytest.raises(ModelConnectionError):
        kit.client(url, fast_retry).complete("hi", ctx=ctx)
    assert len(sleeps) == 2  # retried, then gave up


def test_forbidden_real_host(kit: Kit, fast_retry: RetryPolicy, ctx: Context, store: Store) -> None:
    with pytest.raises(RealModelsForbidden, match="TRAILS_FORBID_REAL_MODELS") as info:
        kit.client("https://models.example.com", fast_retry).complete("hi", ctx=ctx)
    assert recorded(store, info.value.activity_iri)["status"] == "error"  # type: ignore[attr-defined]
    assert isinstance(info.value, ModelAPIError)


def test_stream_error_before_first_chunk_is_retried(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context
) -> None:
    server.enqueue(kit.error(503, "overloaded"), kit.stream(["ok"]))
    parts = list(kit.client(server.url, fast_retry).stream("hi", ctx=ctx))
    final = parts[-1]
    assert isinstance(final, Response) and final.text == "ok" and final.retries == 1
