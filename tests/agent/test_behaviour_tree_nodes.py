"""Behaviour-tree nodes are evidence: every node an activity with its outcome, read by SPARQL.

Each node of a tree run is a ``trails:TreeNode`` (a ``prov:Activity``) with its id,
kind and outcome; a control node is informed by its children, a leaf by the
invocations it made, a parallel node carries its vote, and children a control node
never ticked are on record as skipped. Every test reads the evidence back from the
store with SPARQL (bound parameters only) and the store's graphs are checked
against the shapes and PROV-CONSTRAINTS by the suite's fixture.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trails import capability
from trails.agent import Session
from trails.agent.planners import behaviour_tree
from trails.agent.planners.behaviour_tree import (
    Action,
    AgentNode,
    Fallback,
    Parallel,
    Sequence,
    SequenceWithEarlyExit,
)
from trails.audit.report import render_report
from trails.llm import LLMClient
from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Solutions, Store, open_store, set_default_store, to_python
from trails.testing import assert_conforms

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

#: Every node of a run: id, kind, outcome and any vote.
NODES = (
    PREFIXES
    + """
SELECT ?run ?id ?kind ?outcome ?successes ?failures ?threshold ?policy WHERE {
  GRAPH ?g {
    ?node a trails:TreeNode, prov:Activity ; trails:inRun ?run ;
          trails:nodeId ?id ; trails:nodeKind ?kind ; trails:nodeOutcome ?outcome .
    OPTIONAL { ?node trails:voteSuccesses ?successes ; trails:voteFailures ?failures ;
                     trails:voteThreshold ?threshold ; trails:votePolicy ?policy }
  }
} ORDER BY ?id
"""
)

#: Which node informed which (a control node by its children), in plain PROV.
CHILDREN = (
    PREFIXES
    + """
SELECT ?run ?parent ?child WHERE {
  GRAPH ?g {
    ?p a trails:TreeNode ; trails:inRun ?run ; trails:nodeId ?parent ; prov:wasInformedBy ?c .
    ?c a trails:TreeNode ; trails:nodeId ?child .
  }
} ORDER BY ?parent ?child
"""
)

#: The invocations a leaf made, with their statuses.
LEAF_CALLS = (
    PREFIXES
    + """
SELECT ?run ?id ?capability ?status WHERE {
  GRAPH ?g {
    ?leaf a trails:TreeNode ; trails:inRun ?run ; trails:nodeId ?id ; prov:wasInformedBy ?inv .
    ?inv a trails:CapabilityInvocation ; trails:status ?status ;
         trails:capability/trails:capabilityId ?capability .
  }
} ORDER BY ?id
"""
)

#: The root node, informed by its run.
ROOT = (
    PREFIXES
    + """
SELECT ?run ?id WHERE {
  GRAPH ?g { ?root a trails:TreeNode ; prov:wasInformedBy ?run ; trails:nodeId ?id . }
}
"""
)


def _rows(store: Store, query: str, run: str | None) -> list[dict[str, Any]]:
    assert run is not None, "the run was not recorded"
    result = store.query(query, {"run": IRI(run)})
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items() if k != "run"} for row in result]


def nodes(store: Store, run: str | None) -> dict[str, tuple[Any, ...]]:
    """``{id: (kind, outcome)}``, or ``(kind, outcome, successes, failures, threshold, policy)``."""
    out: dict[str, tuple[Any, ...]] = {}
    for r in _rows(store, NODES, run):
        vote = tuple(r[k] for k in ("successes", "failures", "threshold", "policy") if k in r)
        out[r["id"]] = (r["kind"], r["outcome"], *vote)
    return out


def children(store: Store, run: str | None) -> list[tuple[str, str]]:
    return [(r["parent"], r["child"]) for r in _rows(store, CHILDREN, run)]


def leaf_calls(store: Store, run: str | None) -> list[tuple[str, str, str]]:
    return [(r["id"], r["capability"], r["status"]) for r in _rows(store, LEAF_CALLS, run)]


@pytest.fixture
def ok_bad() -> dict[str, int]:
    """Register ``ok`` (answers "fine") and ``bad`` (raises); the dict counts their calls."""
    calls = {"ok": 0, "bad": 0}

    @capability(id="ok", description="Always works.")
    def ok() -> str:
        calls["ok"] += 1
        return "fine"

    @capability(id="bad", description="Always fails.")
    def bad() -> str:
        calls["bad"] += 1
        raise RuntimeError("no luck")

    return calls


def no_model() -> LLMClient:
    return LLMClient.mock(response=[])


OK, BAD = Action("ok"), Action("bad")


def test_the_issues_tree_records_every_node_its_outcome_and_the_vote(
    store: Store, ok_bad: dict[str, int]
) -> None:
    result = behaviour_tree.run(
        "Try, then vote.",
        llm=no_model(),
        session=Session(principal="did:local:alice"),
        tree=Sequence(Fallback(BAD, OK), Parallel(OK, BAD, OK)),
    )
    assert result.stopped == "goal_achieved" and ok_bad == {"ok": 3, "bad": 2}
    run = result.activity_iri
    assert nodes(store, run) == {
        "1": ("sequence", "success"),
        "1.1": ("fallback", "success"),
        "1.1.1": ("action", "failure"),
        "1.1.2": ("action", "success"),
        "1.2": ("parallel", "success", 2, 1, 2, "strict_majority"),
        "1.2.1": ("action", "success"),
        "1.2.2": ("action", "failure"),
        "1.2.3": ("action", "success"),
    }
    # control nodes are informed by their children; the root by its run
    assert children(store, run) == [
        ("1", "1.1"),
        ("1", "1.2"),
        ("1.1", "1.1.1"),
        ("1.1", "1.1.2"),
        ("1.2", "1.2.1"),
        ("1.2", "1.2.2"),
        ("1.2", "1.2.3"),
    ]
    assert [r["id"] for r in _rows(store, ROOT, run)] == ["1"]
    # each leaf is informed by the invocation it made: the tolerated error is on record
    assert leaf_calls(store, run) == [
        ("1.1.1", "bad", "error"),
        ("1.1.2", "ok", "ok"),
        ("1.2.1", "ok", "ok"),
        ("1.2.2", "bad", "error"),
        ("1.2.3", "ok", "ok"),
    ]
    assert_conforms(store)


def test_a_fallback_whose_first_child_fails_skips_the_rest(
    store: Store, ok_bad: dict[str, int]
) -> None:
    result = behaviour_tree.run(
        "Find a way.",
        llm=no_model(),
        session=Session(principal="did:local:alice"),
        tree=Fallback(BAD, OK, Action("ok", {})),
    )
    assert result.stopped == "goal_achieved" and ok_bad == {"ok": 1, "bad": 1}
    run = result.activity_iri
    assert nodes(store, run) == {
        "1": ("fallback", "success"),
        "1.1": ("action", "failure"),
        "1.2": ("action", "success"),
        "1.3": ("action", "skipped"),
    }
    assert children(store, run) == [("1", "1.1"), ("1", "1.2"), ("1", "1.3")]
    assert leaf_calls(store, run) == [("1.1", "bad", "error"), ("1.2", "ok", "ok")]


@pytest.mark.parametrize(
    ("tree", "stopped", "vote"),
    [
        (Parallel(OK, BAD, BAD), "error", (1, 2, 2)),
        (Parallel(OK, BAD), "error", (1, 1, 2)),  # a tie is no strict majority
        (Parallel(OK, OK, BAD, OK), "goal_achieved", (3, 1, 3)),
    ],
)
def test_a_parallel_node_records_its_vote_tally(
    store: Store, ok_bad: dict[str, int], tree: Parallel, stopped: str, vote: tuple[int, ...]
) -> None:
    result = behaviour_tree.run(
        "Vote.", llm=no_model(), session=Session(principal="did:local:alice"), tree=tree
    )
    assert result.stopped == stopped
    root = nodes(store, result.activity_iri)["1"]
    outcome = "success" if stopped == "goal_achieved" else "failure"
    assert root == ("parallel", outcome, *vote, "strict_majority")
    assert len(children(store, result.activity_iri)) == len(tree.children)


def test_an_early_exit_records_the_stages_it_skipped(store: Store, ok_bad: dict[str, int]) -> None:
    answer = '```json\n{"thought": "I know it", "action": "finish", "final_answer": "4"}\n```'
    client = LLMClient.mock(response=[answer])
    result = behaviour_tree.run(
        "What is 2+2?",
        llm=client,
        session=Session(principal="did:local:alice"),
        tree=SequenceWithEarlyExit(AgentNode("Answer if you can."), OK, AgentNode("Check it.")),
    )
    assert result.stopped == "goal_achieved" and result.answer == "4"
    assert ok_bad == {"ok": 0, "bad": 0}
    run = result.activity_iri
    assert nodes(store, run) == {
        "1": ("sequence_early_exit", "success"),
        "1.1": ("agent", "success"),
        "1.2": ("action", "skipped"),
        "1.3": ("agent", "skipped"),
    }
    assert children(store, run) == [("1", "1.1"), ("1", "1.2"), ("1", "1.3")]
    # the agent leaf is informed by the completion that finished it
    informed = store.query(
        PREFIXES
        + """SELECT ?run ?c WHERE { GRAPH ?g { ?leaf trails:inRun ?run ; trails:nodeId "1.1" ;
             prov:wasInformedBy ?c . ?c a trails:LLMCompletion } }""",
        {"run": IRI(str(run))},
    )
    assert isinstance(informed, Solutions) and len(list(informed)) == 1


def test_a_sequence_stopped_by_the_step_limit_marks_the_nodes_it_cut_short(
    store: Store, ok_bad: dict[str, int]
) -> None:
    result = behaviour_tree.run(
        "Twice.",
        llm=no_model(),
        session=Session(principal="did:local:alice"),
        tree=Sequence(OK, OK, BAD),
        max_steps=1,
    )
    assert result.stopped == "max_steps" and ok_bad == {"ok": 1, "bad": 0}
    run = result.activity_iri
    # the third child was never reached: the run stopped, nothing was skipped by the tree
    assert nodes(store, run) == {
        "1": ("sequence", "stopped"),
        "1.1": ("action", "success"),
        "1.2": ("action", "stopped"),
    }
    assert children(store, run) == [("1", "1.1"), ("1", "1.2")]


def test_the_report_shows_node_outcomes_and_the_vote(store: Store, ok_bad: dict[str, int]) -> None:
    session = Session(principal="did:local:alice")
    behaviour_tree.run(
        "Try, then vote.",
        llm=no_model(),
        session=session,
        tree=Sequence(Fallback(BAD, OK), Parallel(OK, BAD, OK)),
    )
    html = render_report(store, str(session.iri))
    section = html[html.index("<h3>Behaviour-tree nodes</h3>") : html.index("<h2>Policy decisions")]
    assert section.count("<tr><td>") == 8
    assert '<code>1.1.1</code></td><td>action</td><td><span class="badge s-failure">' in section
    assert "2 for, 1 against (needs 2, strict_majority)" in section
    assert "node 1.1.1 failure" in section and "bad error" in section


def test_the_pack_query_through_the_cli(
    store: Store, ok_bad: dict[str, int], tmp_path: Path
) -> None:
    disk = open_store(tmp_path / "store")
    set_default_store(disk)
    try:
        session = Session(principal="did:local:alice")
        result = behaviour_tree.run(
            "Find a way.", llm=no_model(), session=session, tree=Fallback(BAD, OK, OK)
        )
        session.close()
    finally:
        disk.close()
        set_default_store(store)
    exe = shutil.which("trails") or str(Path(sys.executable).with_name("trails"))
    env = {**os.environ, "TRAILS_STORE": str(tmp_path / "store")}
    done = subprocess.run(
        [exe, "query", "tree-nodes", "-p", f"run={result.activity_iri}", "-f", "csv"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert [(r["nodeId"], r["kind"], r["outcome"]) for r in rows] == [
        ("1", "fallback", "success"),
        ("1.1", "action", "failure"),
        ("1.2", "action", "success"),
        ("1.3", "action", "skipped"),
    ]
    assert rows[1]["informedBy"] == "bad error"
    assert sorted(rows[0]["informedBy"].split(", ")) == [
        "its run",
        "node 1.1 failure",
        "node 1.2 success",
        "node 1.3 skipped",
    ]
    # by session (the run left free), the same rows
    done = subprocess.run(
        [exe, "query", "tree-nodes", "-p", f"session={session.iri}", "-f", "csv"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    by_session = list(csv.DictReader(io.StringIO(done.stdout)))
    assert [_unordered(r) for r in by_session] == [_unordered(r) for r in rows]


def _unordered(row: dict[str, str]) -> dict[str, Any]:
    """A CSV row with its ``informedBy`` list as a set (GROUP_CONCAT keeps no order)."""
    return row | {"informedBy": set(row["informedBy"].split(", "))}
