"""Compliance operations: erasure, retention, legal holds and migration, each with a receipt.

These are the EU AI Act's and the GDPR's duties carried out on a recorded store:
content erased on request while every seal stays valid (``erasure``), removal past
a retention period (``retention``), evidence kept from both while a legal hold
covers it (``holds``), and stores written before content was kept apart from
structure moved so they can be erased (``migration``). Each operation records a
sealed receipt graph through the evidence room (``trails.evidence``); none is
ever run by recording itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trails._lazy import lazy_names

if TYPE_CHECKING:
    from trails.compliance.erasure import ErasureReceipt, erase
    from trails.compliance.holds import Hold, list_holds, place_hold, release_holds
    from trails.compliance.migration import MigrationReceipt, migrate
    from trails.compliance.retention import (
        RetentionPlan,
        RetentionPolicy,
        RetentionResult,
        apply,
        plan,
    )

# each name loads its module on first use (``trails._lazy``): listing holds does not load erasure
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        **dict.fromkeys(("ErasureReceipt", "erase"), "trails.compliance.erasure"),
        **dict.fromkeys(
            ("Hold", "list_holds", "place_hold", "release_holds"), "trails.compliance.holds"
        ),
        **dict.fromkeys(("MigrationReceipt", "migrate"), "trails.compliance.migration"),
        **dict.fromkeys(
            ("RetentionPlan", "RetentionPolicy", "RetentionResult", "apply", "plan"),
            "trails.compliance.retention",
        ),
    },
)

__all__ = [
    "ErasureReceipt",
    "Hold",
    "MigrationReceipt",
    "RetentionPlan",
    "RetentionPolicy",
    "RetentionResult",
    "apply",
    "erase",
    "list_holds",
    "migrate",
    "place_hold",
    "plan",
    "release_holds",
]
