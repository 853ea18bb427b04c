"""Evaluating one built-in control the way the controls format says, for the built-in tests.

Session scope: the default graph is the session's graphs (its own and its content graph),
which are also the named graphs, and ``?session`` is bound to the session's IRI; store scope:
the union of every graph. ``[params]`` are bound with their TOML types, overridable per call.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from trails.prov.content import content_graph
from trails.store import Solutions, Store
from trails.store.terms import IRI, Literal, literal

CONTROLS = Path(__file__).resolve().parents[2] / "controls"


def definition(control_id: str) -> dict[str, Any]:
    """The control's TOML, with its check's text under ``query``."""
    meta = tomllib.loads((CONTROLS / f"{control_id}.toml").read_text("utf-8"))
    meta["query"] = (CONTROLS / meta["check"]).read_text("utf-8")
    return meta


def violations(
    store: Store, control_id: str, session: str | None = None, **params: Any
) -> list[tuple[str, str | None, str | None]]:
    """The control's rows: ``(subject, session, message)``, sorted."""
    meta = definition(control_id)
    assert (meta["scope"] == "session") == (session is not None), meta["scope"]
    bound = {name: literal(value) for name, value in {**meta.get("params", {}), **params}.items()}
    if session is not None:
        graphs = [IRI(session), content_graph(session)]
        bound["session"] = IRI(session)
        result = store.query(meta["query"], bound, default_graph=graphs, named_graphs=graphs)
    else:
        result = store.query(meta["query"], bound, union_default_graph=True)
    assert isinstance(result, Solutions)

    def text(term: Any) -> str | None:
        if term is None:
            return None
        return term.value if isinstance(term, Literal) else str(term)

    rows = [
        (str(r["subject"]), text(r.get("session")) or session, text(r.get("message")))
        for r in result
    ]
    return sorted(rows, key=lambda row: (row[1] or "", row[0], row[2] or ""))
