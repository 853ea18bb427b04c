"""One built-in control evaluated by the engine, its violations as sorted tuples."""

from __future__ import annotations

import dataclasses
from typing import Any

from trails.controls import Control, builtin_controls, evaluate_session, evaluate_store
from trails.store import Store

BUILTIN: dict[str, Control] = {c.id: c for c in builtin_controls()}


def violations(
    store: Store, control_id: str, session: str | None = None, **params: Any
) -> list[tuple[str, str | None, str | None]]:
    """``(subject, session, message)`` of each row of the built-in control ``control_id``,
    over ``session`` (a session-scoped control) or the store; ``params`` override its
    ``[params]``. Fails unless the control was evaluated (passed or violated), or unless a
    session's outcome equals the one its query gives run whatever the session holds."""
    control = BUILTIN[control_id]
    if params:
        control = dataclasses.replace(control, params={**control.params, **params})
    assert (control.scope == "session") == (session is not None), control.scope
    if session is not None:
        evaluation = evaluate_session(store, session, [control])
        # the look-up that spares a query no triple of the session can match answers
        # what the query answers
        [ran] = evaluate_session(store, session, [control], prefilter=False).outcomes
        [looked] = evaluation.outcomes
        assert ran.status == looked.status, control_id
        timed = "NOW()" in control.check  # a message that says how long ago differs
        assert [(v.subject, v.session, timed or v.message) for v in ran.violations] == [
            (v.subject, v.session, timed or v.message) for v in looked.violations
        ], control_id
    else:
        evaluation = evaluate_store(store, [control])
    [outcome] = evaluation.outcomes
    assert outcome.status in ("passed", "violated"), (outcome.status, outcome.error)
    assert (outcome.status == "violated") == bool(outcome.violations)
    rows = [(str(v.subject), v.session, v.message) for v in outcome.violations]
    return sorted(rows, key=lambda row: (row[1] or "", row[0], row[2] or ""))
