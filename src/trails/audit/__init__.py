"""What auditors read: the query pack, exports and evidence bundles, the HTML report.

Everything here reads the provenance the rest of trails recorded, with SPARQL
over the store, and writes nothing into it but what an auditor asks for
(an import of an export). The machinery that makes the record trustworthy
(seals, the ledger, verification) is the evidence room below (``trails.evidence``),
compliance operations are ``trails.compliance``, the session catalogue and its
totals ``trails.catalogue``, and the SPARQL endpoint that serves this pack over
HTTP is ``trails.server``.

- ``querypack``: the canned SPARQL queries, loaded and bound by name.
- ``export``: session graphs out in standard formats and back in without loss.
- ``bundle``: an evidence bundle a regulator checks without the store (export,
  pack answers, seals and their verification in one zip).
- ``report`` (with ``render`` and ``templates/``): the HTML report of a session.
- ``access``: how commands open the store they read.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from trails._moved import MOVED_NAMES, warn_moved
from trails.audit.export import (
    EXPORT_FORMATS,
    IMPORT_FORMATS,
    ExportStats,
    Redaction,
    RedactionRule,
    check_assurance,
    export,
    import_file,
    select_graphs,
)
from trails.audit.querypack import (
    Param,
    Query,
    check_syntax,
    get_query,
    load_pack,
    load_query,
    parse_query,
    resolve,
)

if TYPE_CHECKING:
    from trails.audit.report import render_report, write_report


def __getattr__(name: str) -> Any:
    """The HTML report (and jinja2 with it) loads on first use, not with every import.

    Names this package exported before the evidence room moved out (``verify``,
    ``install_sealer``, ...) still resolve, with a ``DeprecationWarning``.
    """
    if name in ("render_report", "write_report"):
        from trails.audit import report

        return getattr(report, name)
    moved = MOVED_NAMES[__name__].get(name)
    if moved is not None:
        warn_moved(f"{__name__}.{name}", f"{moved}.{name}")
        return getattr(importlib.import_module(moved), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "ExportStats",
    "Param",
    "Query",
    "Redaction",
    "RedactionRule",
    "check_assurance",
    "check_syntax",
    "export",
    "get_query",
    "import_file",
    "load_pack",
    "load_query",
    "parse_query",
    "render_report",
    "resolve",
    "select_graphs",
    "write_report",
]
