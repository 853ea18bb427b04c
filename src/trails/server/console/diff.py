"""Two sessions side by side: the console's diff page, and the links that lead to it.

``/console/diff?a=IRI&b=IRI`` shows two sessions' trajectories (their LLM
completions and capability calls, in start order) step by step, aligned by
position, each step's action, status, inputs and observation on both sides, and
the first divergence marked. The trajectories and the first divergence are those
of ``trails diff`` (``trails.testing.rerun.trajectory`` and ``compare``, the same
SPARQL and the same rules), so the page and the command always agree;
``trails diff A B --html`` prints the page's address.

A session's page links here: a form to compare it with any other session the
reader may read ("compare with…"), and, for a session ``trails replay --rerun``
recorded (``trails:rerunOf``), a link to the comparison with its original (and
from the original to each of its reruns the reader may read).
"""

from __future__ import annotations

import asyncio
import difflib
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from trails.prov.vocab import T
from trails.server.console.base import Console, ConsoleError, Login
from trails.server.console.said import readable
from trails.store import Solutions
from trails.store.terms import IRI
from trails.testing.rerun import Activity, compare, trajectory

__all__ = ["CHANGED_LINES", "changed", "diff", "related", "steps"]

CHANGED_LINES = 80
"""The most lines of a changed value's diff shown on the page."""

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_RERUN_OF = "SELECT ?original $session $rel WHERE { GRAPH $session { $session $rel ?original } }"
_RERUNS = "SELECT ?rerun $session $rel WHERE { GRAPH ?rerun { ?rerun $rel $session } }"


def _side(step: Activity | None) -> dict[str, Any] | None:
    if step is None:
        return None
    seen = step.observation if step.observation is not None else step.error
    return {
        "kind": step.kind,
        "action": step.action,
        "status": step.status,
        "activity": step.activity,
        "step": step.step,
        "inputs": readable(step.inputs)
        if step.inputs is not None
        else f"sha256 {step.inputs_sha256}",
        "observation": readable(seen)
        if seen is not None
        else f"sha256 {step.observation_sha256 or '-'}",
    }


def changed(a: str, b: str) -> str:
    """The lines that differ between two values as read (a unified diff, A then B), at most
    ``CHANGED_LINES`` of it."""
    lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "A", "B", n=1, lineterm=""))
    if len(lines) > CHANGED_LINES:
        lines = [*lines[:CHANGED_LINES], f"… {len(lines) - CHANGED_LINES} more line(s)"]
    return "\n".join(lines)


def steps(left: list[Activity], right: list[Activity]) -> dict[str, Any]:
    """Both trajectories aligned by position, with the first divergence (``compare``'s).

    Returns:
        ``rows`` (``index``, ``a``, ``b``, ``differs``: the fields that differ, ``changes``:
        the differing inputs and observation as a unified diff, ``first``),
        ``divergence`` (its index, field and detail, or None) and ``verdict`` (one line).
    """
    found = compare(left, right)
    rows = []
    for index in range(max(len(left), len(right))):
        a = left[index] if index < len(left) else None
        b = right[index] if index < len(right) else None
        differs: list[str] = []
        if a is None or b is None:
            differs.append("missing" if b is None else "extra")
        else:
            if (a.kind, a.action) != (b.kind, b.action):
                differs.append("action")
            if a.inputs_sha256 != b.inputs_sha256:
                differs.append("inputs")
            if a.outcome() != b.outcome():
                differs.append("observation")
        left_side, right_side = _side(a), _side(b)
        changes = {}
        if left_side is not None and right_side is not None:
            for name in ("inputs", "observation"):
                if name in differs:
                    changes[name] = changed(left_side[name], right_side[name])
        rows.append(
            {
                "index": index,
                "a": left_side,
                "b": right_side,
                "differs": differs,
                "changes": changes,
                "first": found is not None and found.index == index,
            }
        )
    if found is None:
        verdict = "identical: same actions, inputs and observations in the same order"
        divergence = None
    else:
        verdict = f"first divergence at activity #{found.index} ({found.field}): {found.detail}"
        divergence = {"index": found.index, "field": found.field, "detail": found.detail}
    return {"rows": rows, "divergence": divergence, "verdict": verdict}


def _session_iri(console: Console, text: str) -> str:
    """A session named by its IRI or its bare UUID (as ``trails diff`` takes it)."""
    text = text.strip()
    if _UUID.match(text):
        return f"{console.base_iri}session:{text.lower()}"
    return text


def _diff(console: Console, login: Login, a: str, b: str) -> dict[str, Any]:
    left_iri = console.may_read(login, _session_iri(console, a))
    right_iri = console.may_read(login, _session_iri(console, b))
    left = trajectory(console.system, str(left_iri))
    right = trajectory(console.system, str(right_iri))
    return {
        "a": str(left_iri),
        "b": str(right_iri),
        "a_count": len(left),
        "b_count": len(right),
        **steps(left, right),
    }


async def diff(console: Console, request: Request, login: Login) -> Response:
    """Two sessions side by side (``?a=`` and ``?b=``: IRIs or UUIDs), the first divergence
    marked."""
    a = request.query_params.get("a", "")
    b = request.query_params.get("b", "")
    if not a.strip() or not b.strip():
        raise ConsoleError("name two sessions to compare: ?a=IRI&b=IRI (or their UUIDs)")
    data = await asyncio.to_thread(_diff, console, login, a, b)
    return console.page(request, "diff.html.j2", login, **data)


def related(console: Console, login: Login, session: IRI) -> dict[str, Any]:
    """The session this one reruns and the reruns of it, those the login may read.

    Returns:
        ``rerun_of`` (an IRI or None) and ``reruns`` (IRIs, sorted).
    """
    params = {"session": session, "rel": T.rerunOf}
    found = console.system.query(_RERUN_OF, params)
    originals = (
        [str(r[0]) for r in found.rows if r[0] is not None] if isinstance(found, Solutions) else []
    )
    original = next((o for o in originals if console.grants(login, IRI.trusted(o))), None)
    found = console.system.query(_RERUNS, params)
    reruns = sorted(
        str(r[0])
        for r in (found.rows if isinstance(found, Solutions) else [])
        if r[0] is not None and console.grants(login, IRI.trusted(str(r[0])))
    )
    return {"rerun_of": original, "reruns": reruns}
