"""What auditors use: the query pack, exports, seals and verification, the HTML report, the endpoint.

Everything here only reads the provenance the rest of trails recorded, with
SPARQL over the store.
"""

from __future__ import annotations

from trails.audit.querypack import Param, Query, get_query, load_pack, load_query, parse_query

__all__ = ["Param", "Query", "get_query", "load_pack", "load_query", "parse_query"]
