"""Persist, replay, rerun and fork on both backends: the embedded store and a real server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from replay_support import BUILDERS, Tools, quads

from trails.agent import Session
from trails.errors import SessionError
from trails.store import Store
from trails.testing import rerun


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_round_trip_and_rerun_on_every_backend(any_store: Store, tools: Tools, kind: str) -> None:
    session = BUILDERS[kind](any_store)
    graph = session.persist()
    session.persist()
    before = quads(any_store)

    replayed = Session.replay(graph, store=any_store)
    assert replayed.history.entries == session.history.entries
    assert replayed.invocations == session.invocations
    assert replayed.metadata == session.metadata
    assert (replayed.principal, replayed.card) == (session.principal, session.card)
    report = rerun(graph, store=any_store, capabilities="recorded")
    assert report.identical, report.describe()
    assert quads(any_store) == before

    fork = replayed.fork()
    assert fork.iri in any_store.graphs()
    with pytest.raises(SessionError, match="names no session"):
        Session.replay("urn:trails:session:missing", store=any_store)


CHILD = """
import json, sys
from trails.agent import Session
from trails.store import open_store

with open_store(sys.argv[1]) as store:
    s = Session.replay(sys.argv[2], store=store)
    print(json.dumps({"history": [[e.role, e.content, e.tokens, e.pinned] for e in s.history],
                      "invocations": [[r.capability, r.args_sha256, r.status] for r in s.invocations],
                      "metadata": s.metadata}, ensure_ascii=False))
"""


@pytest.mark.remote
def test_replay_from_a_server_in_another_process(
    remote_store: Store, oxigraph_server: str, tools: Tools
) -> None:
    session = BUILDERS["plan_and_execute"](remote_store)
    graph = session.persist()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, oxigraph_server, graph],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
    )
    got = json.loads(out.stdout)
    assert got["history"] == [[e.role, e.content, e.tokens, e.pinned] for e in session.history]
    assert got["invocations"] == [
        [r.capability, r.args_sha256, r.status] for r in session.invocations
    ]
    assert got["metadata"] == session.metadata
