"""An interruption inside a call ends the call, its run and its session ``interrupted``.

In-process counterparts of ``test_interrupted_runs.py`` (which sends real signals to a
child program): a ``KeyboardInterrupt`` raised by a handler is what Python raises there
on Ctrl-C. Each interrupted call is recorded (pure ones included), the exception goes on
unchanged, the session ends ``interrupted`` however it is closed, and a call that started
and never ended in a session that did end (what an older trails or a failed write left)
is still found by the pack, by ``calls_cut_short`` (``verify --strict``) and the report.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import react
from trails.audit.querypack import get_query
from trails.audit.report import render_report
from trails.errors import StoreError
from trails.evidence.interruptions import calls_cut_short
from trails.evidence.verify import verify
from trails.kernel import Context, capability, invoke
from trails.kernel.lifecycle import end_status, interruption
from trails.llm import LLMClient
from trails.prov import Recorder
from trails.prov.vocab import NAMESPACES
from trails.store import Solutions, Store, open_store, to_python

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())
STATE = (
    PREFIXES
    + """
SELECT ?kind ?node ?status ?error ?reason ?terminatedBy WHERE {
  GRAPH ?g {
    {
      ?node a trails:Session ; trails:status ?status . BIND("session" AS ?kind)
      OPTIONAL { ?node trails:wasTerminatedBy ?t . ?t trails:reason ?reason }
    } UNION {
      ?node a trails:CapabilityInvocation ; trails:capability/trails:capabilityId ?id .
      BIND(?id AS ?kind)
      OPTIONAL { ?node trails:status ?status }
      OPTIONAL { GRAPH ?errorMessageGraph1 { ?node trails:errorMessage ?error } }
    } UNION {
      ?node a trails:PlanRun ; trails:stopReason ?status . BIND("run" AS ?kind)
      OPTIONAL { GRAPH ?errorMessageGraph2 { ?node trails:errorMessage ?error } }
    }
    OPTIONAL { ?node trails:wasTerminatedBy/a ?terminatedBy }
  }
}
"""
)


def state(store: Store) -> dict[str, dict[str, Any]]:
    """Session, runs and calls by kind (capability id for calls): status, error, reason."""
    result = store.query(STATE)
    assert isinstance(result, Solutions)
    found: dict[str, dict[str, Any]] = {}
    for row in result:
        values = {k: to_python(v) for k, v in row.items() if k not in ("kind", "terminatedBy")}
        entry = found.setdefault(str(to_python(row["kind"])), values)
        if "terminatedBy" in row:
            entry.setdefault("terminatedBy", set()).add(str(row["terminatedBy"]).split("#")[-1])
    return found


def pack(store: Store, name: str) -> list[dict[str, Any]]:
    result = get_query(name).run(store)
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items()} for row in result]


def test_interruptions_are_told_from_failures() -> None:
    assert interruption(KeyboardInterrupt()) == "KeyboardInterrupt (SIGINT)"
    assert interruption(SystemExit(143)) == "SystemExit(143)"
    assert interruption(ValueError("x")) is None
    assert interruption(GeneratorExit()) is None  # a closed generator is not an interruption
    assert interruption(None) is None
    assert [end_status(e) for e in (None, ValueError(), KeyboardInterrupt())] == [
        "ok",
        "error",
        "interrupted",
    ]


@pytest.mark.parametrize("side_effects", [True, False], ids=["side-effect", "pure"])
def test_a_call_interrupted_in_a_with_block_ends_interrupted(
    store: Store, recorder: Recorder, side_effects: bool
) -> None:
    @capability(id="payments.send", description="Send money.", side_effects=side_effects)
    def send(amount: int) -> None:
        raise KeyboardInterrupt  # what Python raises in the handler on Ctrl-C

    with (
        pytest.raises(KeyboardInterrupt),
        Context.open("did:local:alice", recorder=recorder) as ctx,
    ):
        invoke("payments.send", {"amount": 5}, ctx=ctx)
    found = state(store)
    call = found["payments.send"]
    assert call["status"] == "interrupted" and call["error"] == "KeyboardInterrupt (SIGINT)"
    assert "Interruption" in call["terminatedBy"]  # the session's trails:Interruption
    session = found["session"]
    assert session["status"] == "interrupted"
    assert session["reason"] == "KeyboardInterrupt (SIGINT) during a call to payments.send"
    [cut] = calls_cut_short(store)
    assert (cut.capability, cut.status, cut.side_effects) == (
        "payments.send",
        "interrupted",
        side_effects,
    )
    assert cut.reason == "KeyboardInterrupt (SIGINT)" and cut.call in str(cut)


def test_a_session_an_interruption_reached_ends_interrupted_even_when_closed_ok(
    store: Store, ctx: Context
) -> None:
    @capability(id="notes.search", description="Search.")
    def search(tag: str) -> None:
        raise SystemExit(143)  # what a program's own SIGTERM handler raises

    with pytest.raises(SystemExit):
        invoke("notes.search", {"tag": "due"}, ctx=ctx)
    ctx.close("ok")  # the program caught it and went on to close as usual
    found = state(store)
    assert found["notes.search"]["error"] == "SystemExit(143)"
    assert found["session"]["status"] == "interrupted"
    assert found["session"]["reason"] == "SystemExit(143) during a call to notes.search"


def test_ctrl_c_between_calls_ends_the_with_block_session_interrupted(
    store: Store, recorder: Recorder
) -> None:
    with pytest.raises(KeyboardInterrupt), Context.open("did:local:alice", recorder=recorder):
        raise KeyboardInterrupt  # outside any call
    session = state(store)["session"]
    assert session["status"] == "interrupted" and session["reason"] == "KeyboardInterrupt (SIGINT)"


def test_nested_calls_are_all_interrupted(store: Store, ctx: Context) -> None:
    @capability(id="inner", description="Inner.")
    def inner() -> None:
        raise KeyboardInterrupt

    @capability(id="outer", description="Outer.", side_effects=True)
    def outer() -> None:
        invoke("inner", {})

    with pytest.raises(KeyboardInterrupt):
        invoke("outer", {}, ctx=ctx)
    ctx.close()
    found = state(store)
    assert found["inner"]["status"] == found["outer"]["status"] == "interrupted"
    assert {c.capability for c in calls_cut_short(store)} == {"inner", "outer"}


def test_a_plan_run_interrupted_in_a_call_ends_interrupted_not_error(store: Store) -> None:
    @capability(id="payments.send", description="Send money.", side_effects=True)
    def send(amount: int) -> None:
        raise KeyboardInterrupt

    call = '```json\n{"thought":"pay","action":"payments.send","action_input":{"amount":5}}\n```'
    with pytest.raises(KeyboardInterrupt), Session(principal="did:local:alice") as sess:
        react.run("Pay.", llm=LLMClient.mock(response=call), session=sess)
    found = state(store)
    run = found["run"]
    assert run["status"] == "interrupted" and run["error"] == "KeyboardInterrupt (SIGINT)"
    assert run["terminatedBy"] >= {"Interruption"}  # the session's, not an error termination
    assert "Error" not in run["terminatedBy"]
    assert found["session"]["status"] == "interrupted"
    assert verify(store).ok  # interrupted is a state, not tampering


class RefusingStore:
    """A real in-memory store that can be told to refuse writes."""

    def __init__(self) -> None:
        self.inner = open_store("memory:")
        self.refuse = False

    def write(self, quads: Any, *, remove: Any = ()) -> None:
        if self.refuse:
            raise StoreError("disk full")
        self.inner.write(quads, remove=remove)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_the_interruption_goes_on_when_it_cannot_be_recorded() -> None:
    refusing = RefusingStore()
    ctx = Context.open("did:local:alice", recorder=Recorder(refusing))

    @capability(id="notes.search", description="Search.")
    def search() -> None:
        refusing.refuse = True
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # not StoreError: the program still stops
        invoke("notes.search", {}, ctx=ctx)
    refusing.refuse = False
    ctx.close()
    assert state(refusing.inner)["session"]["status"] == "interrupted"


def test_a_call_started_and_never_ended_in_an_ended_session_is_found(store: Store) -> None:
    """What an older trails left on Ctrl-C (or a lost end write): a start, then an ok end."""
    refusing = RefusingStore()
    ctx = Context.open("did:local:alice", recorder=Recorder(refusing))

    @capability(id="payments.send", description="Send money.", side_effects=True)
    def send(amount: int) -> None:
        refusing.refuse = True  # the end of the call is never written

    with pytest.raises(StoreError):
        invoke("payments.send", {"amount": 5}, ctx=ctx)
    refusing.refuse = False
    ctx.close("ok")
    disk = refusing.inner
    assert state(disk)["session"]["status"] == "ok"

    [row] = [r for r in pack(disk, "interrupted") if "capability" in r]
    assert row["reason"] == "the call started and never ended; how it ended is unknown"
    [effect] = pack(disk, "side-effects")
    assert effect["status"] == "unfinished"
    [failed] = pack(disk, "failed-invocations")
    assert failed["status"] == "unfinished" and "never ended" in failed["error"]
    [cut] = calls_cut_short(disk)
    assert cut.status == "unfinished" and "started and never ended" in str(cut)
    html = render_report(disk, str(ctx.session))
    assert "No invocation failed" not in html and "unfinished" in html


def test_a_running_call_in_an_open_session_is_not_reported_cut_short(store: Store) -> None:
    seen: list[object] = []

    @capability(id="payments.send", description="Send money.", side_effects=True)
    def send(ctx: Context, amount: int) -> None:
        seen.append(calls_cut_short(store))
        seen.append(pack(store, "failed-invocations"))

    with Context.open("did:local:alice") as ctx:
        invoke("payments.send", {"amount": 5}, ctx=ctx)
    assert seen == [[], []]


EXIT_SCRIPT = textwrap.dedent(
    """
    from trails import capability, invoke

    @capability(id="notes.search", description="Search.")
    def search(tag: str) -> list[str]:
        return []

    invoke("notes.search", {"tag": "due"})  # opens the default session, left open
    raise KeyboardInterrupt  # Ctrl-C outside any call: the program stops
    """
)


def test_a_program_stopped_by_ctrl_c_ends_its_open_sessions_interrupted(tmp_path: Path) -> None:
    env = {**os.environ, "TRAILS_STORE": str(tmp_path / "store")}
    run = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT], env=env, capture_output=True, text=True
    )
    assert run.returncode != 0 and "KeyboardInterrupt" in run.stderr
    from trails.store.oxigraph import OxigraphStore

    disk = OxigraphStore(tmp_path / "store")
    try:
        found = state(disk)
    finally:
        disk.close()
    assert found["notes.search"]["status"] == "ok"
    assert found["session"]["status"] == "interrupted"
    assert found["session"]["reason"] == (
        "KeyboardInterrupt (SIGINT): the program stopped with the session open"
    )
