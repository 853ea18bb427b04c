"""The opt-in token trace of a streamed completion: chunks timed as they pass, written at the end.

``LLMClient.token_trace = True`` (off by default) wraps ``stream`` / ``astream``: each
``Chunk`` is stamped when it reaches the caller, and when the final ``Response`` (the
recorded completion) arrives its tokens are written as one token-trace graph
(``TokensTraced``, here; the graph's format is ``trails.prov.token_trace``'s). A stream that fails or is closed early records its
failed completion as before, and no trace.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime

from trails.kernel.context import Context, now
from trails.llm.types import Chunk, Response
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.token_trace import token_graph
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI

__all__ = ["TokensTraced", "atraced", "traced"]


class TokensTraced(Event):
    """The tokens of one streamed completion (``session`` is the trace's own graph)."""

    completion: str
    tokens: Sequence[tuple[int, int, datetime]]
    """Each token's offset and length in the completion's text, and when it arrived."""

    @property
    def completes_graph(self) -> bool:
        """The trace is whole in this one write: sealed in it (``trails verify`` recomputes
        it; an edited or deleted token is a finding like any sealed graph's)."""
        return True

    def emit(self, b: QuadBuilder) -> None:
        trace = self.graph
        activity = IRI.trusted(self.completion)
        b.types(trace, PROV.Bundle, PROV.Collection, T.TokenTrace, PROV.Entity)
        b.add(trace, PROV.wasGeneratedBy, activity)
        b.label(trace, f"token trace ({len(self.tokens)} tokens)")
        b.add(Minter.part(self.completion, "completion"), PROV.wasDerivedFrom, trace)
        for i, (offset, length, at) in enumerate(self.tokens):
            token = Minter.part(str(trace), f"token/{i}")
            b.types(token, T.Token, PROV.Entity)
            b.add(trace, PROV.hadMember, token)
            b.add(token, PROV.wasGeneratedBy, activity)
            b.value(token, PROV.generatedAtTime, at)
            b.value(token, T.tokenIndex, i)
            b.value(token, T.charOffset, offset)
            b.value(token, T.charLength, length)


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
