"""Write-ahead for side effects: a side-effecting call is on record before its handler runs.

A capability with ``side_effects=True`` records its start (inputs, principal, plan,
start time) before the handler runs; if that write fails the handler does not run and
the caller gets ``StoreError``. The end completes the same activity. Pure capabilities
are written once, when they end. Every stage conforms to the shapes.
"""

from __future__ import annotations

from typing import Any

import pytest

from trails.errors import CapabilityError, StoreError
from trails.kernel import Context, capability, invoke
from trails.prov import Recorder
from trails.prov.vocab import NAMESPACES
from trails.store import Quad, Solutions, Store, open_store, to_python
from trails.testing import assert_conforms, shacl_report

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())
INVOCATIONS = (
    PREFIXES
    + """
SELECT ?inv ?status ?started ?ended ?input ?principal ?cap WHERE {
  GRAPH ?g {
    ?inv a trails:CapabilityInvocation ; prov:startedAtTime ?started ;
         trails:capability/trails:capabilityId ?cap ;
         prov:used ?in ;
         prov:wasAssociatedWith/trails:principalId ?principal .
    GRAPH ?content { ?in prov:value ?input }
    OPTIONAL { ?inv trails:status ?status }
    OPTIONAL { ?inv prov:endedAtTime ?ended }
  }
}
"""
)


def invocations(store: Store) -> list[dict[str, Any]]:
    result = store.query(INVOCATIONS)
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in r.items()} for r in result]


class CountingStore:
    """A real in-memory store that counts writes and can be told to refuse them."""

    def __init__(self) -> None:
        self.inner = open_store("memory:")
        self.writes = 0
        self.refuse = False

    def write(self, quads: Any, *, remove: Any = ()) -> None:
        if self.refuse:
            raise StoreError("disk full")
        self.writes += 1
        self.inner.write(quads, remove=remove)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_side_effect_start_is_recorded_before_the_handler(store: Store, ctx: Context) -> None:
    seen: list[list[dict[str, Any]]] = []

    @capability(id="payments.send", description="Send money.", side_effects=True)
    def send(amount: int) -> dict[str, Any]:
        seen.append(invocations(store))
        ok, text = shacl_report(store)  # the started state conforms too
        assert ok, text
        return {"sent": amount}

    assert invoke("payments.send", {"amount": 5}, ctx=ctx) == {"sent": 5}
    [during] = seen
    assert during == [
        {
            "inv": during[0]["inv"],
            "started": during[0]["started"],
            "input": '{"amount":5}',
            "principal": "did:local:alice",
            "cap": "payments.send",
        }
    ]
    [after] = invocations(store)
    assert after["inv"] == during[0]["inv"] and after["started"] == during[0]["started"]
    assert after["status"] == "ok" and after["ended"] >= after["started"]
    assert_conforms(store)


def test_side_effect_failure_completes_the_same_activity(store: Store, ctx: Context) -> None:
    @capability(id="mail.send", description="Send mail.", side_effects=True)
    def mail(to: str) -> None:
        raise OSError("smtp down")

    with pytest.raises(CapabilityError, match="smtp down"):
        invoke("mail.send", {"to": "bob"}, ctx=ctx)
    [inv] = invocations(store)
    assert inv["status"] == "error" and inv["ended"] is not None
    assert_conforms(store)


def test_pure_capability_is_one_write_and_side_effects_two() -> None:
    counting = CountingStore()
    ctx = Context.open("did:local:alice", recorder=Recorder(counting))  # type: ignore[arg-type]

    @capability(id="notes.read", description="Read.")
    def read(tag: str) -> list[str]:
        return [tag]

    @capability(id="notes.delete", description="Delete.", side_effects=True)
    def delete(tag: str) -> int:
        return 1

    before = counting.writes
    invoke("notes.read", {"tag": "a"}, ctx=ctx)
    assert counting.writes - before == 1
    before = counting.writes
    invoke("notes.delete", {"tag": "a"}, ctx=ctx)
    assert counting.writes - before == 2
    before = counting.writes
    with pytest.raises(Exception, match="tag"):
        invoke("notes.delete", {"wrong": "a"}, ctx=ctx)  # rejected before any effect: one write
    assert counting.writes - before == 1
    ctx.close()
    assert_conforms(counting.inner)


def test_handler_does_not_run_when_the_start_cannot_be_written() -> None:
    counting = CountingStore()
    ctx = Context.open("did:local:alice", recorder=Recorder(counting))  # type: ignore[arg-type]
    ran: list[int] = []

    @capability(id="payments.send", description="Send money.", side_effects=True)
    def send(amount: int) -> None:
        ran.append(amount)

    @capability(id="notes.read", description="Read.")
    def read() -> None:
        ran.append(0)

    counting.refuse = True
    with pytest.raises(StoreError, match="disk full"):
        invoke("payments.send", {"amount": 5}, ctx=ctx)
    assert ran == []
    counting.refuse = False
    assert invocations(counting.inner) == []  # nothing half-written either
    counting.refuse = True
    with pytest.raises(StoreError):
        invoke("notes.read", {}, ctx=ctx)  # a pure call runs, then fails to record
    assert ran == [0]
    counting.refuse = False
    ctx.close()


@pytest.mark.allow_nonconforming
def test_started_invocation_without_end_conforms_but_a_pure_one_does_not() -> None:
    counting = CountingStore()
    ctx = Context.open("did:local:alice", recorder=Recorder(counting))  # type: ignore[arg-type]
    store = counting.inner

    @capability(id="payments.send", description="Send money.", side_effects=True)
    def send(amount: int) -> None:
        counting.refuse = True  # the process is going down mid-handler: nothing more is written

    with pytest.raises(StoreError):
        invoke("payments.send", {"amount": 5}, ctx=ctx)
    counting.refuse = False
    [inv] = invocations(store)
    assert "status" not in inv and "ended" not in inv
    assert_conforms(store)
    # the same shape on a pure capability's activity is a torn record: refused
    from trails.prov.vocab import T

    quads = [
        Quad(q["s"], q["p"], q["o"], q["g"])  # type: ignore[arg-type]
        for q in store.query(  # type: ignore[union-attr]
            "SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }"
        )
        if q["p"] == T.sideEffects
    ]
    store.write([Quad(q.subject, q.predicate, _false(), q.graph) for q in quads], remove=quads)
    ok, text = shacl_report(store)
    assert not ok and "started" in text


def _false() -> Any:
    from trails.store import literal

    return literal(False)
