"""Counting serialised query results, whatever the backend produced them.

The SPARQL endpoint evaluates queries with ``Store.query_to`` (the fast path:
the backend serialises natively) and must still say how many results it sent,
for the access log and the result size limit. Parsing the bytes back with
pyoxigraph's native parsers is cheap and works the same for the embedded and
the remote store, so this lives in the store room, the only one that may
import pyoxigraph.
"""

from __future__ import annotations

import csv
import io

import pyoxigraph as ox

from trails.errors import StoreError
from trails.store.base import RESULT_FORMATS
from trails.store.oxigraph import rdf_format, results_format

__all__ = ["count_results"]


def count_results(data: bytes, format: str) -> int:
    """How many results ``data`` holds: solutions, triples or quads; 1 for an ASK.

    Args:
        data: a serialised query result, as ``Store.query_to`` returns it.
        format: its trails format name (``json xml csv tsv`` or an RDF format).

    Returns:
        The number of solutions (SELECT), triples or quads (CONSTRUCT / DESCRIBE),
        or 1 for a boolean (ASK) result.

    Raises:
        StoreError: the bytes do not parse in that format.
    """
    try:
        if format == "csv":
            # SPARQL CSV is lossy and pyoxigraph does not parse it; the csv module counts it.
            if data.strip() in (b"true", b"false"):
                return 1
            rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
            return max(len(rows) - 1, 0)
        if format in RESULT_FORMATS:
            parsed = ox.parse_query_results(data, format=results_format(format))
            if isinstance(parsed, ox.QueryBoolean):
                return 1
            return sum(1 for _ in parsed)
        if not data.strip():
            return 0
        return sum(1 for _ in ox.parse(data, format=rdf_format(format)))
    except (SyntaxError, ValueError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot count {format} results: {exc}") from exc
