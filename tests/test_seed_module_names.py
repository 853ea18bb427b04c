"""The seeds' module names work: ``trails.decorators``, ``trails.context``, ``trails.cost``.

The agent runtime guide (seed 000) and ADR-0018 (seed 001) name three modules that trails
keeps in its kernel: "the live ``trails.decorators._handlers`` registry" that ``react.run``
walks without ``tools=``, "the per-invoke ``trails.context.Context``" a handler receives, and
``trails.cost.CostTracker`` that every LLM call books into. A seed user's first import is
one of these, so each is a thin alias of the real module: the same objects.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trails.prov.vocab import NAMESPACES
from trails.store import Solutions, Store, literal, to_python

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())


def test_a_seed_users_first_imports_work_in_a_fresh_interpreter(tmp_path: Path) -> None:
    code = (
        "from trails.decorators import capability, _handlers\n"
        "from trails.context import Context\n"
        "from trails.cost import CostTracker\n"
        "import trails.kernel.registry as r, trails.kernel.context as c, trails.kernel.cost as k\n"
        "print(capability is r.capability, _handlers is r._handlers, "
        "Context is c.Context, CostTracker is k.CostTracker)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "TRAILS_STORE": "memory:", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "True"]


def test_the_aliases_forward_every_other_name_and_refuse_unknown_ones() -> None:
    import trails.context
    import trails.cost
    import trails.decorators
    from trails.kernel import context, cost, registry

    assert trails.decorators._lock is registry._lock
    assert trails.context.log is context.log
    assert trails.cost.KEEP == cost.KEEP
    with pytest.raises(AttributeError, match=r"trails\.cost.*no_such_name"):
        trails.cost.no_such_name  # noqa: B018


def test_react_without_tools_offers_what_trails_decorators_registered(store: Store) -> None:
    """Seed 000: without ``tools=``, react.run walks ``trails.decorators._handlers``."""
    from trails.agent import Session
    from trails.agent.planners import react
    from trails.context import Context
    from trails.decorators import _handlers, capability
    from trails.llm import LLMClient

    seen: list[Any] = []

    @capability(id="notes.count", description="Count the notes under a tag.")
    def count(ctx: Context, tag: str) -> int:
        seen.append(ctx)
        return 3

    assert "notes.count" in _handlers
    turn = {"thought": "count", "action": "notes.count", "action_input": {"tag": "urgent"}}
    done = {"thought": "done", "action": "finish", "final_answer": "3 notes"}
    llm = LLMClient.mock(response=[json.dumps(turn), json.dumps(done)])
    result = react.run(
        "How many urgent notes?", llm=llm, session=Session(principal="did:local:alice")
    )

    assert result.answer == "3 notes"
    system = llm.requests[0].messages[0].content
    assert "notes.count" in system and "Count the notes under a tag." in system
    assert len(seen) == 1 and isinstance(seen[0], Context)  # the handler's ctx is that Context
    rows = store.query(
        PREFIXES
        + """SELECT ?id ?status WHERE { GRAPH ?g { ?inv a trails:CapabilityInvocation ;
             trails:capability ?cap ; trails:status ?status . ?cap trails:capabilityId ?id } }""",
        {"id": literal("notes.count")},
    )
    assert isinstance(rows, Solutions)
    assert [to_python(r["status"]) for r in rows] == ["ok"]


def test_llm_spend_books_into_a_trails_cost_tracker(store: Store) -> None:
    """Seed 001: every ``complete()`` plugs into ``trails.cost.CostTracker``, tagged llm:<model>."""
    from trails.context import Context
    from trails.cost import CostTracker
    from trails.llm import LLMClient, Response

    tracker = CostTracker()
    llm = LLMClient.mock(
        response=Response(text="hi", model="m1", input_tokens=10, output_tokens=5, usd=0.25)
    )
    with Context.open("did:local:alice", tracker=tracker) as ctx:
        llm.complete("hello", ctx=ctx)
        session = ctx.session
    assert tracker.total_usd() == pytest.approx(0.25)
    assert [e.tag for e in tracker.envelopes()] == ["llm:m1"]
    rows = store.query(
        PREFIXES + "SELECT ?g ?c WHERE { GRAPH ?g { ?c a trails:LLMCompletion } }",
        {"g": session},
    )
    assert isinstance(rows, Solutions) and len(list(rows)) == 1
