"""A stream cut before the provider's end-of-message event is a failed completion.

Each provider's loopback fake sends a real stream with its last events
dropped and closes the connection cleanly (no transport error: the text
simply stops). The real SDK (Anthropic) or httpx (Ollama, OpenAI-compatible)
reads it; the caller gets ``IncompleteStreamError`` after the chunks that did
arrive, and the completion is recorded with status ``error``, the error, and
the partial text as its content, read back with SPARQL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from llm_fakes import FakeServer, Reply, anthropic_stream, ollama_stream, openai_stream

from trails.kernel import Context
from trails.llm import (
    Chunk,
    IncompleteStreamError,
    LLMClient,
    MalformedResponseError,
    Response,
    RetryPolicy,
)
from trails.prov import T
from trails.store import IRI, Solutions, Store, to_python
from trails.testing import assert_conforms

PIECES = ["Pay ", "Bob ", "€40"]
SSE = "text/event-stream"


def _anthropic(url: str, retry: RetryPolicy) -> LLMClient:
    return LLMClient.anthropic(
        "claude-haiku-4-5", api_key="test-key", base_url=url, retry=retry, timeout=5.0
    )


def _ollama(url: str, retry: RetryPolicy) -> LLMClient:
    return LLMClient.ollama("qwen3:8b", host=url, retry=retry, timeout=5.0)


def _openai(url: str, retry: RetryPolicy) -> LLMClient:
    return LLMClient.openai_compatible(
        "local-model", base_url=url + "/v1", retry=retry, timeout=5.0
    )


def _without(events: list[bytes], *markers: bytes) -> list[bytes]:
    kept = [e for e in events if not any(m in e for m in markers)]
    assert len(kept) < len(events)  # the cut removed something
    return kept


# (id, client, the cut stream, what the caller is told is missing, text that arrived)
CUTS: list[tuple[str, Callable[[str, RetryPolicy], LLMClient], Reply, str, list[str]]] = [
    (
        "anthropic-no-message_stop",
        _anthropic,
        Reply(
            chunks=_without(anthropic_stream(PIECES), b"message_stop"),
            content_type=SSE,
            headers={"request-id": "req_cut"},
        ),
        "message_stop",
        PIECES,
    ),
    (
        "anthropic-mid-text",
        _anthropic,
        Reply(
            chunks=anthropic_stream(PIECES)[:4],  # start, block start, ping, first delta
            content_type=SSE,
            headers={"request-id": "req_cut"},
        ),
        "message_stop",
        PIECES[:1],
    ),
    (
        "ollama-no-done-line",
        _ollama,
        Reply(chunks=ollama_stream(PIECES)[:-1], content_type="application/x-ndjson"),
        '"done": true',
        PIECES,
    ),
    (
        "openai-no-DONE",
        _openai,
        Reply(
            chunks=_without(openai_stream(PIECES), b"[DONE]"),
            content_type=SSE,
            headers={"x-request-id": "req_cut"},
        ),
        "[DONE]",
        PIECES,
    ),
    (
        "openai-mid-text",
        _openai,
        Reply(
            chunks=openai_stream(PIECES)[:3],  # role chunk, two content chunks
            content_type=SSE,
            headers={"x-request-id": "req_cut"},
        ),
        "[DONE]",
        PIECES[:2],
    ),
]


def recorded(store: Store, activity: str) -> dict[str, Any]:
    result = store.query(
        f"""SELECT ?a ?status ?err ?text ?out WHERE {{ GRAPH ?g {{
              ?a a {T.LLMCompletion.n3()} ; {T.status.n3()} ?status ;
                 {T.outputTokens.n3()} ?out .
              OPTIONAL {{ GRAPH ?errorMessageGraph1 {{ ?a {T.errorMessage.n3()} ?err }} }}
              OPTIONAL {{ ?c a {T.Completion.n3()} ; <http://www.w3.org/ns/prov#wasGeneratedBy> ?a .
                         GRAPH ?cg {{ ?c <http://www.w3.org/ns/prov#value> ?text }} }}
            }} }}""",
        {"a": IRI(activity)},
    )
    assert isinstance(result, Solutions)
    [row] = list(result)
    return {k: to_python(v) for k, v in row.items()}


@pytest.mark.parametrize(
    ("client", "reply", "missing", "arrived"),
    [c[1:] for c in CUTS],
    ids=[c[0] for c in CUTS],
)
def test_a_cut_stream_is_a_failed_completion(
    client: Callable[[str, RetryPolicy], LLMClient],
    reply: Reply,
    missing: str,
    arrived: list[str],
    server: FakeServer,
    fast_retry: RetryPolicy,
    ctx: Context,
    store: Store,
) -> None:
    server.enqueue(reply)
    got: list[Chunk | Response] = []
    with pytest.raises(IncompleteStreamError) as info:
        for item in client(server.url, fast_retry).stream("pay bob", ctx=ctx):
            got.append(item)
    err = info.value
    assert isinstance(err, MalformedResponseError)  # never retried, never a success
    assert [c.text for c in got if isinstance(c, Chunk)] == arrived
    assert not any(isinstance(c, Response) for c in got)
    assert missing in str(err) and f"after {len(''.join(arrived))} characters" in str(err)
    assert err.received == "".join(arrived)
    assert len(server.requests) == 1  # a cut after chunks is not retried

    row = recorded(store, err.activity_iri)  # type: ignore[attr-defined]
    assert row["status"] == "error"
    assert row["err"].startswith("IncompleteStreamError:") and missing in row["err"]
    assert row["text"] == "".join(arrived)  # what was received is on record
    assert_conforms(store)
