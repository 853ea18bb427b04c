"""Controls: named rules over the evidence, evaluated as sessions end and on demand.

A control (``model``) is a TOML file and a SPARQL ``SELECT`` or SHACL shapes beside it;
``load_controls`` refuses a bad one before anything runs, ``builtin_controls`` is the set
shipped in the top-level ``controls/`` folder. ``evaluate`` runs them over one session's
graphs or the whole store with bound parameters only, and reads nothing else (``needs``
reads a query once for the triples its every row needs, so a session's control that
cannot have a row is answered from the store's indexes without its query); ``record``
writes each evaluation, passed or not, as sealed PROV evidence, the only thing this room
writes; ``session_end`` is the recorder plugin that evaluates a session's controls as it
ends (``[controls] on_session_end = true``). docs/controls.md is the user's page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trails._lazy import lazy_names

if TYPE_CHECKING:
    from trails.controls.evaluate import (
        DEFAULT_TIMEOUT_S,
        Evaluation,
        Outcome,
        Violation,
        evaluate_session,
        evaluate_store,
    )
    from trails.controls.model import (
        SCOPES,
        SEVERITIES,
        Control,
        builtin_controls,
        load_control,
        load_controls,
        severity_rank,
    )
    from trails.controls.record import (
        RecordedResult,
        definition_changes,
        record_evaluation,
        recorded_results,
    )
    from trails.errors import ControlError

# each name loads its module on first use (``trails._lazy``): listing controls reads their
# files, and never builds the event models that record an evaluation
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        **dict.fromkeys(
            (
                "DEFAULT_TIMEOUT_S",
                "Evaluation",
                "Outcome",
                "Violation",
                "evaluate_session",
                "evaluate_store",
            ),
            "trails.controls.evaluate",
        ),
        **dict.fromkeys(
            (
                "SCOPES",
                "SEVERITIES",
                "Control",
                "builtin_controls",
                "load_control",
                "load_controls",
                "severity_rank",
            ),
            "trails.controls.model",
        ),
        **dict.fromkeys(
            ("RecordedResult", "definition_changes", "record_evaluation", "recorded_results"),
            "trails.controls.record",
        ),
        "ControlError": "trails.errors",
    },
)

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "SCOPES",
    "SEVERITIES",
    "Control",
    "ControlError",
    "Evaluation",
    "Outcome",
    "RecordedResult",
    "Violation",
    "builtin_controls",
    "definition_changes",
    "evaluate_session",
    "evaluate_store",
    "load_control",
    "load_controls",
    "record_evaluation",
    "recorded_results",
    "severity_rank",
]
