"""What auditors use: the query pack, exports, seals and verification, the HTML report.

Everything here reads the provenance the rest of trails recorded, with SPARQL
over the store; the one writer is the ``Sealer``, which appends seals to the
ledger graph in the write that ends each session. The SPARQL endpoint lives here too
(``trails.audit.endpoint``) and serves the pack by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trails.audit.canonical import canonical_term, graph_digest
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
from trails.audit.ledger import Sealed, ledger_iri, read_seals
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
from trails.audit.seal import Sealer, install_sealer, rotate_signing_key, seal_ended_unsealed
from trails.audit.verify import Finding, VerifyReport, verify

if TYPE_CHECKING:
    from trails.audit.report import render_report, write_report


def __getattr__(name: str) -> Any:
    """The HTML report (and jinja2 with it) loads on first use, not with every recorder."""
    if name in ("render_report", "write_report"):
        from trails.audit import report

        return getattr(report, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "ExportStats",
    "Finding",
    "Param",
    "Query",
    "Redaction",
    "RedactionRule",
    "Sealed",
    "Sealer",
    "VerifyReport",
    "canonical_term",
    "check_assurance",
    "check_syntax",
    "export",
    "get_query",
    "graph_digest",
    "import_file",
    "install_sealer",
    "ledger_iri",
    "load_pack",
    "load_query",
    "parse_query",
    "read_seals",
    "render_report",
    "resolve",
    "rotate_signing_key",
    "seal_ended_unsealed",
    "select_graphs",
    "verify",
    "write_report",
]
