"""Old import paths of moved modules, kept working for one release with a ``DeprecationWarning``.

When the audit room was split by job (evidence, compliance, catalogue, server),
modules moved. Code that imports them by their old names (``trails.audit.seal``,
``import trails.audit.endpoint.app``, a ``trails.toml`` plugin path) keeps
working: a finder on ``sys.meta_path`` answers each old name with the module at
its new name, the very same module object (so classes, singletons and patches
are shared), and warns once per old name. ``docs/moved.md`` lists the table; a
test keeps the two in step. The finder and the table go in the release after.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

__all__ = ["MOVED", "MOVED_NAMES", "install"]

MOVED: dict[str, str] = {
    "trails.audit.canonical": "trails.evidence.canonical",
    "trails.audit.checkpoint": "trails.evidence.checkpoint",
    "trails.audit.ledger": "trails.evidence.ledger",
    "trails.audit.recovery": "trails.evidence.recovery",
    "trails.audit.seal": "trails.evidence.seal",
    "trails.audit.verify": "trails.evidence.verify",
    "trails.audit.erasure": "trails.compliance.erasure",
    "trails.audit.holds": "trails.compliance.holds",
    "trails.audit.migration": "trails.compliance.migration",
    "trails.audit.retention": "trails.compliance.retention",
    "trails.audit.catalogue": "trails.catalogue.entries",
    "trails.audit.days": "trails.catalogue.days",
    "trails.audit.totals": "trails.catalogue.totals",
    "trails.audit.endpoint": "trails.server",
    "trails.audit.endpoint.app": "trails.server.app",
    "trails.audit.endpoint.auth": "trails.server.auth",
    "trails.audit.endpoint.graphs": "trails.server.graphs",
    "trails.audit.endpoint.log": "trails.server.log",
    "trails.audit.endpoint.pool": "trails.server.pool",
    "trails.audit.endpoint.sparql": "trails.server.sparql",
    "trails.otel.receiver": "trails.server.traces",
    "trails.otel.auth": "trails.server.write_tokens",
}
"""Old module name -> new module name."""

MOVED_NAMES: dict[str, dict[str, str]] = {
    "trails.audit": {
        name: "trails.evidence"
        for name in (
            "Finding",
            "Sealed",
            "Sealer",
            "VerifyReport",
            "canonical_term",
            "graph_digest",
            "install_sealer",
            "ledger_iri",
            "read_seals",
            "rotate_signing_key",
            "seal_ended_unsealed",
            "verify",
        )
    },
}
"""Names a package exported that now live elsewhere: package -> {name: new module}."""


def warn_moved(old: str, new: str) -> None:
    """The one warning every old path gives, pointing at the importer's line."""
    warnings.warn(
        f"{old} moved to {new}; the old name goes in the next release (docs/moved.md)",
        DeprecationWarning,
        stacklevel=3,
    )


class _Alias:
    """Loads an old name as the module at its new name (the same object).

    A loader by protocol (``create_module``, ``exec_module``): subclassing ``importlib.abc``
    would import ``importlib.resources`` into every process at start.
    """

    def __init__(self, new: str) -> None:
        self.new = new
        self.spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warn_moved(spec.name, self.new)
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run, the new module ran when it was imported; only its own spec is put back.

        The import system sets ``__spec__`` of whatever ``create_module`` returns to the old
        name's spec; the module keeps answering to its new name (``reload``, resources).
        """
        module.__spec__ = self.spec


class _MovedFinder:
    """Finds the old names of moved modules, and only those."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, cast("Loader", _Alias(new)))


_FINDER = _MovedFinder()


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once), ahead of a stale folder of an old name."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
