"""The opt-in token trace of a streamed completion: chunks timed as they pass, written at the end.

``LLMClient.token_trace = True`` (off by default) wraps ``stream`` / ``astream``: each
``Chunk`` is stamped when it reaches the caller, and when the final ``Response`` (the
recorded completion) arrives its tokens are written as one token-trace graph
(``trails.prov.token_trace``). A stream that fails or is closed early records its
failed completion as before, and no trace.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import datetime

from trails.kernel.context import Context, now
from trails.llm.types import Chunk, Response
from trails.prov.token_trace import TokensTraced, token_graph

__all__ = ["atraced", "traced"]


def _write(ctx: Context, response: Response, stamps: list[tuple[int, int, datetime]]) -> None:
    if response.activity_iri is None or response.cache_hit:
        return  # nothing was streamed from the provider: a cached answer has no tokens
    graph = token_graph(ctx.recorder.minter, response.activity_iri)
    ctx.recorder.record(
        TokensTraced(session=str(graph), completion=response.activity_iri, tokens=stamps)
    )


def traced(stream: Iterator[Chunk | Response], ctx: Context) -> Iterator[Chunk | Response]:
    """``stream`` as it was, its tokens recorded when its ``Response`` arrives."""
    stamps: list[tuple[int, int, datetime]] = []
    offset = 0
    for item in stream:
        if isinstance(item, Chunk):
            stamps.append((offset, len(item.text), now()))
            offset += len(item.text)
        else:
            _write(ctx, item, stamps)
        yield item


async def atraced(
    stream: AsyncIterator[Chunk | Response], ctx: Context
) -> AsyncIterator[Chunk | Response]:
    """``traced`` for ``astream``."""
    stamps: list[tuple[int, int, datetime]] = []
    offset = 0
    async for item in stream:
        if isinstance(item, Chunk):
            stamps.append((offset, len(item.text), now()))
            offset += len(item.text)
        else:
            _write(ctx, item, stamps)
        yield item
