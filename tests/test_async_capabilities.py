"""``async def`` capabilities, ``ainvoke`` and ``timeout_s``: one recorded path for both kinds.

A sync ``invoke`` runs an async handler to completion; ``ainvoke`` runs sync
handlers in a worker thread and async ones on the caller's event loop. Both
record the same ``trails:CapabilityInvocation`` as a sync handler does
(compared with SPARQL), and a call past its ``timeout_s`` is recorded as
failed with the timeout.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any

import pytest

from test_kernel import invocations
from trails.errors import CapabilityError, CapabilityTimeout, UserError
from trails.kernel import Context, ainvoke, capability, current_context, get_capability, invoke
from trails.store import IRI, Solutions, Store, to_python
from trails.testing import assert_conforms

RELEASE = threading.Event()
SEEN: dict[str, Any] = {}


@capability(id="t15.sync_add", description="Add, synchronously.")
def sync_add(a: int, b: int) -> int:
    return a + b


@capability(id="t15.async_add", description="Add, asynchronously.")
async def async_add(a: int, b: int) -> int:
    SEEN["loop"] = asyncio.get_running_loop()
    SEEN["parent"] = current_context().parent
    await asyncio.sleep(0)
    return a + b


@capability(id="t15.async_fails")
async def async_fails() -> int:
    await asyncio.sleep(0)
    raise ValueError("nope")


@capability(id="t15.slow_sync", timeout_s=0.05)
def slow_sync() -> str:
    RELEASE.wait(10)
    return "late"


@capability(id="t15.slow_async", timeout_s=0.05)
async def slow_async() -> str:
    await asyncio.sleep(10)
    return "late"


SHAPE = """
SELECT ?a ?p ?kind WHERE { GRAPH ?g {
  { ?a ?p ?o } UNION { ?a <http://www.w3.org/ns/prov#used> ?s . ?s ?p ?o }
  UNION { ?s <http://www.w3.org/ns/prov#wasGeneratedBy> ?a . ?s ?p ?o }
  BIND(IF(?p = <http://www.w3.org/1999/02/22-rdf-syntax-ns#type>, STR(?o),
          IF(isIRI(?o), "iri", STR(DATATYPE(?o)))) AS ?kind)
} }"""


def shape(store: Store, activity: str) -> Counter[tuple[str, str]]:
    result = store.query(SHAPE, {"a": IRI(activity)})
    assert isinstance(result, Solutions)
    return Counter((str(r["p"]), str(to_python(r["kind"]))) for r in result)


def test_sync_invoke_runs_an_async_handler_and_records_the_same_shape(
    ctx: Context, store: Store
) -> None:
    assert get_capability("t15.async_add").is_async
    assert invoke("t15.sync_add", {"a": 1, "b": 2}, ctx=ctx) == 3
    assert invoke("t15.async_add", {"a": 1, "b": 2}, ctx=ctx) == 3
    sync_row, async_row = invocations(store)
    assert async_row["status"] == "ok" and async_row["output"] == "3"
    assert SEEN["parent"] == async_row["a"]  # the handler ran inside its invocation
    sync_shape = shape(store, sync_row["a"])
    assert shape(store, async_row["a"]) == sync_shape and len(sync_shape) > 10
    assert_conforms(store)


def test_ainvoke_runs_async_handlers_on_the_callers_loop(ctx: Context, store: Store) -> None:
    async def main() -> tuple[Any, ...]:
        loop = asyncio.get_running_loop()
        results = await asyncio.gather(
            *(ainvoke("t15.async_add", {"a": i, "b": 1}, ctx=ctx) for i in range(10)),
            ainvoke("t15.sync_add", {"a": 5, "b": 5}, ctx=ctx),
        )
        return loop, results

    loop, results = asyncio.run(main())
    assert results == [*(i + 1 for i in range(10)), 10]
    assert SEEN["loop"] is loop
    rows = invocations(store)
    assert len(rows) == 11 and {r["status"] for r in rows} == {"ok"}
    assert len({r["a"] for r in rows}) == 11
    assert_conforms(store)


def test_an_async_handlers_error_is_recorded(ctx: Context, store: Store) -> None:
    with pytest.raises(CapabilityError, match="ValueError: nope"):
        asyncio.run(ainvoke("t15.async_fails", ctx=ctx))
    with pytest.raises(CapabilityError, match="ValueError: nope"):
        invoke("t15.async_fails", ctx=ctx)
    assert [r["status"] for r in invocations(store)] == ["error", "error"]
    assert_conforms(store)


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
@pytest.mark.parametrize("cap", ["t15.slow_sync", "t15.slow_async"])
def test_a_call_past_its_timeout_is_recorded_as_failed(
    cap: str, how: str, ctx: Context, store: Store
) -> None:
    RELEASE.clear()
    try:
        with pytest.raises(CapabilityTimeout, match=r"timed out after 0\.05 s") as info:
            if how == "invoke":
                invoke(cap, ctx=ctx)
            else:
                asyncio.run(ainvoke(cap, ctx=ctx))
    finally:
        RELEASE.set()
    assert info.value.timeout_s == 0.05
    [row] = invocations(store)
    assert row["status"] == "error" and "timed out after 0.05 s" in row["error"]
    assert "output" not in row  # nothing was generated
    assert_conforms(store)


def test_sync_invoke_inside_a_running_loop_still_runs_an_async_handler(
    ctx: Context, store: Store
) -> None:
    async def main() -> Any:
        return invoke("t15.async_add", {"a": 2, "b": 2}, ctx=ctx)

    assert asyncio.run(main()) == 4
    assert [r["status"] for r in invocations(store)] == ["ok"]


def test_timeout_is_in_the_manifest_and_checked() -> None:
    assert get_capability("t15.slow_sync").manifest()["timeout_s"] == 0.05
    assert get_capability("t15.sync_add").manifest()["timeout_s"] is None
    for bad in (0, -1, "1", True):
        with pytest.raises(UserError, match="timeout_s must be a positive number"):
            capability(id="t15.bad", timeout_s=bad)  # type: ignore[arg-type]
