"""The newest sessions through the endpoint: ``/queries/sessions?limit=N`` at the cost of a page.

The ``sessions`` pack query sorts every catalogue entry before it keeps a page, so
``/queries/sessions`` as it is grows with the store. With a ``limit`` the endpoint
reads the page the way ``trails sessions`` and the console do
(``trails.audit.sessions_page``): the catalogue's start days, hours, minutes
and seconds from the newest, and the entries of the newest seconds, each a small
query on the endpoint's evaluator under the token's grant (a graph the token
may not read is not there, as for every query). The rows, columns and order are
the pack query's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Protocol

from trails.audit.sessions_page import sessions_page_to
from trails.errors import QueryParameterError
from trails.server.auth import Grant
from trails.server.console.store import EvaluatorView
from trails.server.pool import Evaluator
from trails.store.terms import IRI, Term

__all__ = ["MAX_LIMIT", "newest_sessions", "page_limit"]

MAX_LIMIT = 10_000
"""The largest page ``?limit=`` asks for (more: the pack query as it is, without a limit)."""


class _Limits(Protocol):
    @property
    def base_iri(self) -> str: ...
    @property
    def time_limit(self) -> float: ...
    @property
    def max_results(self) -> int: ...
    @property
    def max_result_bytes(self) -> int: ...


def page_limit(name: str, values: Mapping[str, str]) -> int | None:
    """The ``limit`` of ``/queries/sessions?limit=N`` (None: none given, or another query).

    Raises:
        QueryParameterError: the limit is not a whole number from 1 to ``MAX_LIMIT``.
    """
    raw = values.get("limit")
    if raw is None or name != "sessions":
        return None
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise QueryParameterError(
            f"limit must be a whole number from 1 to {MAX_LIMIT}, not {raw[:40]!r}"
        )
    return int(raw)


async def newest_sessions(
    evaluator: Evaluator,
    grant: Grant,
    reserved: IRI | None,
    config: _Limits,
    params: Mapping[str, Term],
    limit: int,
    format: str,
) -> tuple[bytes, int | None]:
    """The newest ``limit`` rows of the ``sessions`` query in ``format``, and how many (for
    SPARQL JSON; None for another format)."""
    view = EvaluatorView(
        evaluator,
        grant,
        reserved,
        base_iri=config.base_iri,
        time_limit=config.time_limit,
        max_results=config.max_results,
        max_bytes=config.max_result_bytes,
    )
    data = await asyncio.to_thread(sessions_page_to, view, params, limit, format=format)
    count = len(json.loads(data)["results"]["bindings"]) if format == "json" else None
    return data, count
