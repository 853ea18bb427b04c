"""Every session ends, exactly once, whatever the entry point.

Closed explicitly (``close``, ``with``), abandoned (``Session(...)`` without ``with``,
``Session.new(...).run(...)``, a ``Context.open`` never closed: ended when its last
context is garbage), or still open at interpreter exit (ended then). A session reused
for several runs stays one session. Each end is the ``SessionEnded`` event recorded
through the session's recorder, so the sealer seals it.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import plan_and_execute, react
from trails.errors import SessionError
from trails.evidence.verify import verify
from trails.kernel import Context, default_context, reset_default_context
from trails.kernel.lifecycle import collecting, drain_pending, open_sessions
from trails.llm import LLMClient
from trails.prov import Recorder
from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Solutions, Store, to_python
from trails.testing import assert_conforms

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())
SESSIONS = (
    PREFIXES
    + """
SELECT ?session ?status (COUNT(DISTINCT ?ended) AS ?ends) (COUNT(DISTINCT ?run) AS ?runs) WHERE {
  GRAPH ?session {
    ?session a trails:Session .
    OPTIONAL { ?session prov:endedAtTime ?ended }
    OPTIONAL { ?session trails:status ?status }
    OPTIONAL { ?run a trails:PlanRun }
  }
} GROUP BY ?session ?status
"""
)
FINISH = '```json\n{"thought":"done","action":"finish","action_input":{},"final_answer":"ok"}\n```'


def sessions(store: Store) -> dict[str, dict[str, Any]]:
    result = store.query(SESSIONS)
    assert isinstance(result, Solutions)
    return {
        str(r["session"]): {k: to_python(v) for k, v in r.items() if k != "session"} for r in result
    }


def sealed(store: Store) -> set[str]:
    result = store.query(PREFIXES + "SELECT ?g WHERE { GRAPH ?l { ?seal trails:sealedGraph ?g } }")
    assert isinstance(result, Solutions)
    return {str(r["g"]) for r in result}


def client() -> LLMClient:
    return LLMClient.mock(response=FINISH)


def test_session_without_with_ends_when_dropped(store: Store) -> None:
    sess = Session(principal="did:local:alice")
    react.run("Find urgent notes.", llm=client(), session=sess)
    iri = sess.iri
    assert sessions(store)[iri] == {"ends": 0, "runs": 1}
    del sess
    found = sessions(store)[iri]
    assert found["ends"] == 1 and found["status"] == "ok"
    assert iri in sealed(store)
    assert verify(store).ok
    assert_conforms(store)


def test_inline_session_and_session_new_run_end(store: Store) -> None:
    result = react.run("g", llm=client(), session=Session(principal="did:local:alice"))
    assert result.stopped == "goal_achieved"
    Session.new(strategy="react", principal="did:local:bob", llm=client()).run("g")
    found = sessions(store)
    assert len(found) == 2
    assert all(s["ends"] == 1 and s["status"] == "ok" for s in found.values())
    assert set(found) <= sealed(store)
    assert verify(store).ok and verify(store).open_sessions == []


def test_reused_session_is_one_session_across_runs(store: Store) -> None:
    plan = '```json\n{"plan": [{"action": "finish", "action_input": {}, "final_answer": "x"}]}\n```'
    sess = Session(principal="did:local:alice", llm=client())
    react.run("first", llm=client(), session=sess)
    sess.run("second")
    plan_and_execute.run("third", llm=LLMClient.mock(response=plan), session=sess)
    assert sessions(store) == {sess.iri: {"ends": 0, "runs": 3}}
    sess.close()
    sess.close()  # idempotent: one end
    assert sessions(store)[sess.iri] == {"ends": 1, "runs": 3, "status": "ok"}
    with pytest.raises(SessionError, match="closed"):
        sess.run("fourth")
    assert verify(store).ok


def test_with_block_ends_with_error_status(store: Store) -> None:
    with pytest.raises(RuntimeError), Session(principal="did:local:alice") as sess:
        react.run("g", llm=client(), session=sess)
        raise RuntimeError("boom")
    assert sessions(store)[sess.iri] == {"ends": 1, "runs": 1, "status": "error"}


def test_context_copies_share_one_end(store: Store, recorder: Recorder) -> None:
    ctx = Context.open("did:local:alice", recorder=recorder)
    child = ctx.child(parent=None)
    child.close("error")
    ctx.close()
    assert ctx.ended and child.ended
    assert sessions(store)[str(ctx.session)] == {"ends": 1, "runs": 0, "status": "error"}
    assert str(ctx.session) not in open_sessions()


def test_context_open_without_close_ends_when_garbage(store: Store, recorder: Recorder) -> None:
    ctx = Context.open("did:local:alice", recorder=recorder)
    iri = str(ctx.session)
    assert iri in open_sessions()
    child = ctx.child(parent=None)
    del ctx
    assert sessions(store)[iri]["ends"] == 0  # a copy is still alive
    del child
    assert sessions(store)[iri] == {"ends": 1, "runs": 0, "status": "ok"}
    assert iri not in open_sessions()


def test_cyclic_garbage_is_ended_at_the_next_safe_point(store: Store, recorder: Recorder) -> None:
    gc.collect()
    gc.disable()
    try:
        ctx = Context.open("did:local:alice", recorder=recorder)
        iri = str(ctx.session)
        ctx.extras["self"] = ctx  # a reference cycle: only the cyclic collector frees it
        del ctx
        assert sessions(store)[iri]["ends"] == 0
        gc.collect()  # the collector must not write in the middle of whatever it interrupted
        assert sessions(store)[iri]["ends"] == 0
        drain_pending()
        assert sessions(store)[iri] == {"ends": 1, "runs": 0, "status": "ok"}
    finally:
        gc.enable()


SIGNALS_SCRIPT = textwrap.dedent(
    """
    import gc, signal, sys
    import trails.kernel.lifecycle  # registers its garbage-collector callback

    class Alarm(Exception):
        pass

    def alarm(signum, frame):
        raise Alarm

    swallowed = []
    sys.unraisablehook = lambda unraisable: swallowed.append(unraisable.exc_type.__name__)
    signal.signal(signal.SIGALRM, alarm)
    gc.set_threshold(5)  # the collector runs all the time: its callback is hit often
    raised = lost = 0
    for _ in range(200):
        try:  # a loaded machine may deliver the alarm as soon as the timer is set
            signal.setitimer(signal.ITIMER_REAL, 0.0003)
            for _ in range(200_000):
                garbage = []
                garbage.append(garbage)
            lost += 1
        except Alarm:
            raised += 1
    print(raised, lost, ",".join(swallowed))
    """
)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX interval timers")
def test_a_signal_handlers_exception_is_never_swallowed_by_the_collectors_callback() -> None:
    """Ctrl-C or a SIGTERM handler's ``SystemExit`` reaches the program even when the
    signal lands while the cyclic collector runs: trails' callback runs no bytecode. A
    callback written in Python lost about four in ten of these alarms."""
    run = subprocess.run(
        [sys.executable, "-c", SIGNALS_SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    raised, lost, swallowed = [*run.stdout.split(), ""][:3]
    assert (raised, lost, swallowed) == ("200", "0", "")


def test_the_collector_is_known_to_run_only_between_its_start_and_stop() -> None:
    seen: list[bool] = []

    class Witness:
        def __del__(self) -> None:
            seen.append(collecting())

    gc.collect()
    gc.disable()
    try:
        witness = Witness()
        witness.self = witness  # type: ignore[attr-defined]  # freed only by the collector
        del witness
        assert not collecting()
        gc.collect()
        assert seen == [True] and not collecting()
        Witness()  # freed by reference counting, outside any collection
        assert seen == [True, False]
    finally:
        gc.enable()


def test_default_session_is_replaced_and_ended(store: Store) -> None:
    first = default_context()
    assert default_context() is first
    first.close()
    second = default_context()
    assert second is not first
    reset_default_context()
    found = sessions(store)
    assert found[str(first.session)]["ends"] == 1
    assert found[str(second.session)]["ends"] == 1


EXIT_SCRIPT = textwrap.dedent(
    """
    import sys
    from trails import capability
    from trails.agent import Session
    from trails.agent.planners import react
    from trails.kernel import Context, default_context, invoke
    from trails.llm import LLMClient

    @capability(id="notes.search", description="Search notes by tag.")
    def search(ctx, tag: str) -> dict:
        return {"hits": ["n1"]}

    FINISH = sys.argv[1]
    kept = Session(principal="did:local:alice")      # still referenced at exit
    react.run("g", llm=LLMClient.mock(response=FINISH), session=kept)
    kept.run("again", llm=LLMClient.mock(response=FINISH))
    opened = Context.open("did:local:bob")           # never closed
    invoke("notes.search", {"tag": "x"}, ctx=opened)
    invoke("notes.search", {"tag": "y"})             # the default session
    print(kept.iri, opened.session, default_context().session)
    """
)


def test_everything_still_open_at_exit_is_ended_and_sealed(tmp_path: Path) -> None:
    env = {**os.environ, "TRAILS_STORE": str(tmp_path / "store")}
    run = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT, FINISH],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    iris = run.stdout.split()
    verified = subprocess.run(
        [sys.executable, "-m", "trails.cli", "verify", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    report = json.loads(verified.stdout)
    assert report["open_sessions"] == [] and report["graphs_checked"] == 3
    from trails.store.oxigraph import OxigraphStore

    disk = OxigraphStore(tmp_path / "store")
    try:
        found = sessions(disk)
        assert set(found) == set(iris)
        assert all(s["ends"] == 1 and s["status"] == "ok" for s in found.values())
        assert found[iris[0]]["runs"] == 2  # the reused session stayed one session
    finally:
        disk.close()


def test_closing_a_session_on_a_closed_store_raises_and_stays_open(store: Store) -> None:
    from trails.errors import StoreError
    from trails.store import open_store

    other = open_store("memory:")
    ctx = Context.open("did:local:alice", recorder=Recorder(other))
    other.close()
    with pytest.raises(StoreError):
        ctx.close()
    assert not ctx.ended
    assert IRI(str(ctx.session)) in [IRI(s) for s in open_sessions()]
    del ctx  # abandoned on a closed store: given up quietly (recovery ends it later)


def test_a_session_whose_store_was_closed_is_left_for_recovery_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from trails.store import open_store

    disk = open_store(tmp_path / "store")
    ctx = Context.open("did:local:alice", recorder=Recorder.from_settings(store=disk))
    session = ctx.session
    disk.close()
    with caplog.at_level("WARNING"):
        del ctx
        gc.collect()
        drain_pending()
    assert not [r for r in caplog.records if r.levelname in ("WARNING", "ERROR")]
    assert session not in open_sessions()
    reopened = open_store(tmp_path / "store")
    try:
        Recorder.from_settings(store=reopened)  # the first recorder recovers the store
        ended = reopened.query(
            "SELECT ?s ?g WHERE { GRAPH ?g { ?g <https://w3id.org/trails/ns#status> ?s } }",
            {"g": IRI(str(session))},
        )
        assert isinstance(ended, Solutions)
        assert [str(to_python(r["s"])) for r in ended] == ["interrupted"]
    finally:
        reopened.close()
