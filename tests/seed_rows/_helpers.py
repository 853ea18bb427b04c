"""Small helpers shared by the seed-row tests: scripted model turns and SPARQL reads.

Every query binds its values as parameters; the prefixes come from the vocabulary module.
"""

from __future__ import annotations

import json
from typing import Any

from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Solutions, Store, to_python

__all__ = ["IRI", "PREFIXES", "act", "finish", "rows"]

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())


def finish(answer: str) -> str:
    """A JSON-contract turn that ends the run with ``answer``."""
    return json.dumps(
        {"thought": "done", "action": "finish", "action_input": {}, "final_answer": answer}
    )


def act(action: str, **action_input: Any) -> str:
    """A JSON-contract turn that calls the capability ``action`` with ``action_input``."""
    return json.dumps({"thought": f"call {action}", "action": action, "action_input": action_input})


def rows(store: Store, sparql: str, **params: Any) -> list[dict[str, Any]]:
    """The solutions of ``PREFIXES + sparql`` with ``params`` bound, as plain Python values."""
    found = store.query(PREFIXES + sparql, params)
    assert isinstance(found, Solutions)
    return [{k: to_python(v) for k, v in row.items()} for row in found]
