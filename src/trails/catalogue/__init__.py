"""The session catalogue: one small summary per session, and daily totals, kept beside the graphs.

Store-wide questions (the sessions page, cost by model or principal, what is due
for retention) read the catalogue instead of every session graph, so they stay
small as the store grows. ``entries`` writes and rebuilds the per-session
summaries (the sealer writes them in the write that starts and ends a session),
``days`` names the catalogue's days and their totals, ``totals`` rolls the
daily cost totals up. The room sits just above provenance: it imports only
``trails.prov`` and ``trails.store``, so evidence, audit and compliance can all
use it.
"""

from __future__ import annotations

from trails.catalogue.entries import catalogue_iri, entry_iri, has_entries, rebuild
from trails.catalogue.totals import RollupResult, rollup

__all__ = ["RollupResult", "catalogue_iri", "entry_iri", "has_entries", "rebuild", "rollup"]
