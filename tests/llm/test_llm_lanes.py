"""The async HTTP client's connections, and what holds an ``abatch`` slot.

httpx's async client goes through one-connection pools ("lanes"): a request
takes an idle lane, a new one while all are busy. Concurrent requests each get
a connection; the next round reuses them (kept alive, none opened); a lane is
free again once its answer was read, an error status included, or its stream
closed. In ``abatch``, a call's slot bounds the requests in flight: it is
given back when the provider has answered, so the next prompt's request does
not wait for the completion to be recorded.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from llm_fakes import FakeServer, Reply, openai_stream

from trails.kernel import Context
from trails.llm import LLMClient, ModelServerError, Request, Response
from trails.llm._http import JsonHttp
from trails.prov import Recorder
from trails.prov.events import LLMCompleted
from trails.store import Store
from trails.testing import assert_conforms


@pytest.fixture
def kept() -> Iterator[FakeServer]:
    s = FakeServer(keep_alive=True)
    yield s
    s.close()


def test_concurrent_requests_get_a_connection_each_kept_for_the_next_round(
    kept: FakeServer,
) -> None:
    http = JsonHttp("openai_compatible", kept.url, timeout=30)

    async def rounds() -> list[Any]:
        answers = []
        for _ in range(3):
            kept.enqueue(*[Reply(json={"n": i}, delay=0.05) for i in range(6)])
            answers += await asyncio.gather(*(http.apost("/x", {"i": i}) for i in range(6)))
        kept.enqueue(Reply(status=500, json={"error": "down"}), Reply(json={"n": "after"}))
        with pytest.raises(ModelServerError):
            await http.apost("/x", {})
        answers.append(await http.apost("/x", {}))
        return answers

    answers = asyncio.run(rounds())
    assert sorted(a[0]["n"] for a in answers[:18]) == sorted([*range(6)] * 3)
    assert answers[18][0] == {"n": "after"}
    ports = [r.peer for r in kept.requests]
    first = set(ports[:6])
    assert len(first) == 6  # six at once: six connections
    assert set(ports[6:18]) == first  # kept alive and reused: none opened for rounds 2 and 3
    # the error's answer was read, so its lane was idle again for the next request
    assert ports[19] == ports[18] and ports[18] in first


def test_a_closed_stream_frees_its_lane(kept: FakeServer) -> None:
    http = JsonHttp("openai_compatible", kept.url, timeout=30)

    async def run() -> list[str | dict[str, str | None]]:
        kept.enqueue(*[Reply(json={"n": i}, delay=0.05) for i in range(2)])
        await asyncio.gather(*(http.apost("/x", {}) for _ in range(2)))
        kept.enqueue(Reply(chunks=openai_stream(["a", "b"]), content_type="text/event-stream"))
        lines = [line async for line in http.astream_lines("/x", {})]
        kept.enqueue(Reply(json={"n": "after"}))
        await http.apost("/x", {})
        return lines

    lines = asyncio.run(run())
    assert lines[0] == {"request_id": None} and any('"a"' in str(x) for x in lines)
    ports = [r.peer for r in kept.requests]
    # the stream went on the first lane's kept connection; its server closed that
    # connection after it, so the next request, on the same (free again) lane, opened
    # a new one rather than taking the second lane's kept connection
    assert ports[2] in ports[:2]
    assert ports[3] not in ports[:2]


class _Answers:
    """An async adapter that notes when each request arrives."""

    provider = "mock"
    model = "slots"
    local = True

    def __init__(self) -> None:
        self.second = threading.Event()
        self.seen = 0

    def complete(self, request: Request) -> Response:
        raise AssertionError("the async path must not use complete")

    def stream(self, request: Request) -> Any:
        raise AssertionError("not streamed")

    async def acomplete(self, request: Request) -> Response:
        self.seen += 1
        if self.seen == 2:
            self.second.set()
        return Response(text=f"a{self.seen}", model=self.model)


def test_a_completion_being_recorded_does_not_hold_its_batch_slot(store: Store) -> None:
    adapter = _Answers()
    recorder = Recorder(store)
    waited: list[bool] = []
    once = threading.Lock()

    def first_written_after_second_sent(recorder: Recorder, event: Any) -> None:
        # runs while the first completion is being recorded (a listener of its write):
        # with one slot, the second prompt's request must be able to go out meanwhile
        if isinstance(event, LLMCompleted) and once.acquire(blocking=False):
            waited.append(adapter.second.wait(timeout=20))

    recorder.subscribe(first_written_after_second_sent)
    ctx = Context.open("did:local:alice", recorder=recorder)
    client = LLMClient(adapter)
    results = asyncio.run(client.abatch(["q1", "q2"], max_concurrency=1, ctx=ctx))
    assert [r.text for r in results] == ["a1", "a2"]  # type: ignore[union-attr]
    assert waited == [True]
    assert_conforms(store)


def test_an_environment_proxy_is_used_by_async_requests_as_by_sync_ones(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", server.url)  # the fake plays the proxy
    http = JsonHttp("openai_compatible", "http://127.0.0.2:9/v1", timeout=30)
    server.enqueue(Reply(json={"via": "sync"}), Reply(json={"via": "async"}))

    assert http.post("/chat/completions", {})[0] == {"via": "sync"}
    assert asyncio.run(http.apost("/chat/completions", {}))[0] == {"via": "async"}
    # both went to the proxy, asking it for the server's URL
    assert [r.path for r in server.requests] == ["http://127.0.0.2:9/v1/chat/completions"] * 2
