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

from trails._lazy import lazy_names
from trails._moved import MOVED_NAMES, warn_moved

if TYPE_CHECKING:
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
    from trails.audit.report import render_report, write_report

_EXPORT = "trails.audit.export"
_PACK = "trails.audit.querypack"
# each name loads its module on first use (``trails._lazy``): the HTML report and jinja2,
# the exporters and the verifier they carry stay unloaded for a command that reads the pack
_names, __dir__ = lazy_names(
    __name__,
    {
        **dict.fromkeys(
            (
                "EXPORT_FORMATS",
                "IMPORT_FORMATS",
                "ExportStats",
                "Redaction",
                "RedactionRule",
                "check_assurance",
                "export",
                "import_file",
                "select_graphs",
            ),
            _EXPORT,
        ),
        **dict.fromkeys(
            (
                "Param",
                "Query",
                "check_syntax",
                "get_query",
                "load_pack",
                "load_query",
                "parse_query",
                "resolve",
            ),
            _PACK,
        ),
        "render_report": "trails.audit.report",
        "write_report": "trails.audit.report",
    },
)


def __getattr__(name: str) -> Any:
    """This package's names, loaded on first use.

    Names this package exported before the evidence room moved out (``verify``,
    ``install_sealer``, ...) still resolve, with a ``DeprecationWarning``.
    """
    moved = MOVED_NAMES[__name__].get(name)
    if moved is not None:
        warn_moved(f"{__name__}.{name}", f"{moved}.{name}")
        return getattr(importlib.import_module(moved), name)
    return _names(name)


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
