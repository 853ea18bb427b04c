"""Images on user messages: each provider's wire form, the request hash, and the evidence.

The adapters run against the loopback fakes (Anthropic through its real SDK, Ollama and
the OpenAI-compatible server over httpx), and each case asserts the exact body the fake
received. The recorded completion is read back with SPARQL: it ``prov:used`` a
``trails:Attachment`` per image (or the entity the image names), the prompt names each
image by digest and never holds its bytes, and the request hash (so the response cache,
the store lookup and replay) tells two images apart.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import Iterator
from typing import Any

import pytest
from llm_fakes import FakeServer, Reply, anthropic_message, ollama_chat, openai_chat

from trails.errors import ReplayMismatch, UserError
from trails.kernel import Context
from trails.llm import (
    Chunk,
    Image,
    LLMClient,
    Message,
    ModelServerError,
    Request,
    Response,
    RetryPolicy,
    request_hash,
    request_params,
)
from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Solutions, Store, to_python
from trails.testing.replay import ReplayLLM

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(24))
JPEG = b"\xff\xd8\xff\xe0" + b"JFIF" + bytes(16)
PNG_B64 = base64.b64encode(PNG).decode()
JPEG_B64 = base64.b64encode(JPEG).decode()

PREFIXES = f"""
PREFIX prov: <{NAMESPACES["prov"]}>
PREFIX trails: <{NAMESPACES["trails"]}>
"""

USED = (
    PREFIXES
    + """
SELECT ?a ?image ?type ?size ?digest WHERE { GRAPH ?g {
  ?a a trails:LLMCompletion ; prov:used ?image .
  ?image a trails:Attachment ; trails:mediaType ?type ; trails:byteSize ?size ;
         trails:sha256 ?digest } } ORDER BY ?type
"""
)


def used_images(store: Store, activity: str) -> list[tuple[str, int, str]]:
    """(media type, size, sha256) of each attachment a recorded completion used."""
    result = store.query(USED, {"a": IRI(activity)})
    assert isinstance(result, Solutions)
    return [(to_python(r["type"]), to_python(r["size"]), to_python(r["digest"])) for r in result]


def shown() -> list[Message]:
    return [
        Message("system", "Describe images."),
        Message("user", "What is in these?", images=(Image("image/png", PNG),
                                                      Image("image/jpeg", JPEG))),
    ]  # fmt: skip


NO_RETRY = RetryPolicy(max_retries=0, base_delay=0.0)


# -- the wire forms ------------------------------------------------------------------------


def test_anthropic_sends_image_blocks_before_the_text(
    server: FakeServer, ctx: Context, store: Store
) -> None:
    server.enqueue(Reply(json=anthropic_message("a square"), headers={"request-id": "r1"}))
    client = LLMClient.anthropic(
        "claude-haiku-4-5", api_key="test-key", base_url=server.url, retry=NO_RETRY
    )
    response = client.complete(shown(), ctx=ctx, max_tokens=50)
    assert response.text == "a square"
    body = server.requests[0].body
    assert body["system"] == [{"type": "text", "text": "Describe images."}]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "image",
                 "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
                {"type": "image",
                 "source": {"type": "base64", "media_type": "image/jpeg", "data": JPEG_B64}},
                {"type": "text", "text": "What is in these?"},
            ],
        }
    ]  # fmt: skip


def test_anthropic_async_and_cached_image_only_messages(
    server: FakeServer, ctx: Context, store: Store
) -> None:
    server.enqueue(Reply(json=anthropic_message("a square"), headers={"request-id": "r1"}))
    client = LLMClient.anthropic(
        "claude-haiku-4-5", api_key="test-key", base_url=server.url, retry=NO_RETRY, cache=True
    )
    only = [Message("user", "", cache=True, images=(Image("image/png", PNG),))]
    response = asyncio.run(client.acomplete(only, ctx=ctx, max_tokens=50))
    assert response.text == "a square"
    # no empty text block (the API refuses one); the cache breakpoint sits on the image
    assert server.requests[0].body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "image",
                 "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
                 "cache_control": {"type": "ephemeral"}},
            ],
        }
    ]  # fmt: skip


def test_openai_compatible_sends_content_parts_with_data_urls(
    server: FakeServer, ctx: Context, store: Store
) -> None:
    server.enqueue(Reply(json=openai_chat("a square")))
    client = LLMClient.openai_compatible(
        "local-vision", base_url=server.url + "/v1", retry=NO_RETRY
    )
    assert client.complete(shown(), ctx=ctx, max_tokens=50).text == "a square"
    assert server.requests[0].body["messages"] == [
        {"role": "system", "content": "Describe images."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
                {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{JPEG_B64}"}},
            ],
        },
    ]


def test_ollama_sends_the_message_images_field(
    server: FakeServer, ctx: Context, store: Store
) -> None:
    server.enqueue(Reply(json=ollama_chat("a square")))
    client = LLMClient.ollama("llava:7b", host=server.url, retry=NO_RETRY)
    assert client.complete(shown(), ctx=ctx, max_tokens=50).text == "a square"
    assert server.requests[0].body["messages"] == [
        {"role": "system", "content": "Describe images."},
        {"role": "user", "content": "What is in these?", "images": [PNG_B64, JPEG_B64]},
    ]


def test_text_only_messages_keep_their_wire_form(
    server: FakeServer, ctx: Context, store: Store
) -> None:
    server.enqueue(Reply(json=openai_chat("hi")))
    client = LLMClient.openai_compatible("m", base_url=server.url + "/v1", retry=NO_RETRY)
    client.complete([Message("user", "hello")], ctx=ctx)
    assert server.requests[0].body["messages"] == [{"role": "user", "content": "hello"}]


# -- the record ----------------------------------------------------------------------------


def test_the_completion_used_each_image_and_the_prompt_names_it_by_digest(
    ctx: Context, store: Store
) -> None:
    client = LLMClient.mock("a square")
    response = client.complete(shown(), ctx=ctx)
    [sent] = client.requests
    assert [(i.media_type, i.data) for i in sent.messages[1].images] == [
        ("image/png", PNG), ("image/jpeg", JPEG),
    ]  # fmt: skip
    assert used_images(store, str(response.activity_iri)) == [
        ("image/jpeg", len(JPEG), hashlib.sha256(JPEG).hexdigest()),
        ("image/png", len(PNG), hashlib.sha256(PNG).hexdigest()),
    ]
    prompt = store.query(
        PREFIXES
        + """SELECT ?a ?text WHERE { GRAPH ?g { ?a prov:used ?p . ?p a trails:Prompt }
             GRAPH ?cg { ?p prov:value ?text } }""",
        {"a": IRI(str(response.activity_iri))},
    )
    assert isinstance(prompt, Solutions)
    [row] = list(prompt)
    text = str(to_python(row["text"]))
    assert hashlib.sha256(PNG).hexdigest() in text and '"media_type":"image/png"' in text
    assert PNG_B64 not in text and JPEG_B64 not in text  # the bytes are never recorded


def test_an_image_naming_its_entity_links_that_entity(ctx: Context, store: Store) -> None:
    client = LLMClient.mock("a square")
    # the entity a caller recorded for these bytes: here, one the first call recorded
    first = client.complete(shown(), ctx=ctx)
    found = store.query(USED, {"a": IRI(str(first.activity_iri))})
    assert isinstance(found, Solutions)
    [entity] = [str(r["image"]) for r in found if to_python(r["type"]) == "image/png"]
    again = [Message("user", "And now?", images=(Image("image/png", PNG, entity=entity),))]
    second = client.complete(again, ctx=ctx)
    linked = store.query(
        PREFIXES + "SELECT ?a ?image WHERE { GRAPH ?g { ?a prov:used ?image . "
        "?image a trails:Attachment } }",
        {"a": IRI(str(second.activity_iri))},
    )
    assert isinstance(linked, Solutions)
    assert [str(r["image"]) for r in linked] == [entity]  # no second entity was recorded


def test_failed_and_fallen_back_calls_record_the_images_they_sent(
    ctx: Context, store: Store
) -> None:
    down = LLMClient.mock([ModelServerError("down", provider="mock", status=503)], model="a")
    chain = LLMClient.fallback([down, LLMClient.mock("a square", model="b")])
    answered = chain.complete(shown(), ctx=ctx)
    failed = store.query(
        PREFIXES
        + """SELECT ?a WHERE { GRAPH ?g { ?a a trails:LLMCompletion ;
                        trails:status "error" } }"""
    )
    assert isinstance(failed, Solutions)
    [attempt] = [str(r["a"]) for r in failed]
    assert len(used_images(store, attempt)) == 2
    assert len(used_images(store, str(answered.activity_iri))) == 2


# -- the request hash: cache, store lookup, replay -------------------------------------------


def test_the_request_hash_tells_images_apart_and_text_only_hashes_do_not_change() -> None:
    params = request_params(1024, 0.0)
    text = [Message("user", "What is this?")]
    with_png = [Message("user", "What is this?", images=(Image("image/png", PNG),))]
    other_png = [Message("user", "What is this?", images=(Image("image/png", PNG + b"x"),))]
    hashes = {request_hash("m", m, params) for m in (text, with_png, other_png)}
    assert len(hashes) == 3
    # a text-only message hashes exactly as before images existed
    assert text[0].as_dict() == {"role": "user", "content": "What is this?"}
    assert request_hash("m", text, params) == request_hash(
        "m", [{"role": "user", "content": "What is this?"}], params
    )
    # the entity an image names is where it was recorded, not what was sent
    named = [Message("user", "What is this?",
                     images=(Image("image/png", PNG, entity="urn:x:attachment1"),))]  # fmt: skip
    assert request_hash("m", named, params) == request_hash("m", with_png, params)


def test_the_response_cache_and_the_store_lookup_key_on_the_image(
    ctx: Context, store: Store
) -> None:
    client = LLMClient.mock(["a square", "a circle"], response_cache=True)

    def ask(data: bytes) -> Any:
        return client.complete([Message("user", "What?", images=(Image("image/png", data),))],
                               ctx=ctx)  # fmt: skip

    assert ask(PNG).text == "a square"
    other = ask(PNG + b"\x00")
    assert (other.text, other.cache_hit) == ("a circle", False)
    again = ask(PNG)
    assert (again.text, again.cache_hit) == ("a square", True)
    assert len(client.requests) == 2
    # the store lookup answers the same image from the record, and never another one
    recorded = LLMClient.mock([ModelServerError("no", provider="mock", status=500)],
                              store_cache=True, retry=NO_RETRY)  # fmt: skip
    looked_up = recorded.complete([Message("user", "What?", images=(Image("image/png", PNG),))],
                                  ctx=ctx)  # fmt: skip
    assert (looked_up.text, looked_up.cache_hit) == ("a square", True)
    with pytest.raises(ModelServerError):
        recorded.complete([Message("user", "What?", images=(Image("image/png", PNG + b"y"),))],
                          ctx=ctx)  # fmt: skip


def test_replay_matches_the_image_that_was_sent(ctx: Context, store: Store) -> None:
    LLMClient.mock("a square").complete(shown(), ctx=ctx)
    replay = ReplayLLM.from_session(str(ctx.session), store=store)
    assert replay.complete(shown(), ctx=ctx).text == "a square"
    swapped = [shown()[0], Message("user", "What is in these?",
                                   images=(Image("image/png", PNG), Image("image/png", PNG)))]  # fmt: skip
    with pytest.raises(ReplayMismatch):
        replay.complete(swapped, ctx=ctx)


# -- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Image("image/svg+xml", PNG), "must be one of image/png, image/jpeg"),
        (lambda: Image("image/jpeg", PNG), "not image/jpeg"),
        (lambda: Image("image/png", b""), "empty"),
        (lambda: Image("image/png", "not bytes"), "must be bytes"),  # type: ignore[arg-type]
        (lambda: Image("image/png", PNG, entity="no iri"), "absolute IRI"),
        (lambda: Message("system", "x", images=(Image("image/png", PNG),)), "only user messages"),
        (lambda: Message("user", "x", images=(PNG,)), "must hold Image objects"),  # type: ignore[arg-type]
        (lambda: Message("user", "x", images=Image("image/png", PNG)), "a list of"),  # type: ignore[arg-type]
    ],
)
def test_bad_images_are_clear_user_errors(make: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        make()


def test_images_in_dict_messages_and_their_errors(ctx: Context, store: Store) -> None:
    client = LLMClient.mock("ok")
    image = Image("image/webp", b"RIFF\x10\x00\x00\x00WEBPVP8 " + bytes(8))
    client.complete([{"role": "user", "content": "look", "images": [image]}], ctx=ctx)
    assert client.requests[0].messages[0].images == (image,)
    with pytest.raises(UserError, match="only user messages"):
        client.complete([{"role": "assistant", "content": "x", "images": [image]}], ctx=ctx)
    assert image.media_type == "image/webp" and Image("IMAGE/GIF", b"GIF89a").media_type == (
        "image/gif"
    )


class TextOnly:
    """An adapter that sends text only: it does not say ``accepts_images``."""

    provider = "text-only"
    model = "t"

    def __init__(self) -> None:
        self.sent: list[Request] = []

    def complete(self, request: Request) -> Response:
        self.sent.append(request)
        return Response(text="text", model=self.model)

    def stream(self, request: Request) -> Iterator[Chunk | Response]:
        yield self.complete(request)


def test_an_adapter_that_cannot_send_images_refuses_them(ctx: Context, store: Store) -> None:
    text_only = TextOnly()
    with pytest.raises(UserError, match="the text-only adapter does not send images"):
        LLMClient(text_only).complete(shown(), ctx=ctx)
    # nor does a fallback chain one of whose members cannot: a failover never drops them
    chain = LLMClient.fallback([LLMClient.mock("a square"), LLMClient(text_only)])
    with pytest.raises(UserError, match="does not send images"):
        chain.complete(shown(), ctx=ctx)
    assert text_only.sent == []
    assert LLMClient(text_only).complete("text is fine", ctx=ctx).text == "text"
    recorded = store.query(PREFIXES + "SELECT ?a WHERE { GRAPH ?g { ?a a trails:LLMCompletion } }")
    assert isinstance(recorded, Solutions) and len(list(recorded)) == 1  # refused: nothing sent
