"""Text that is not valid Unicode (unpaired surrogates) is a clean error at every boundary.

Principals, labels, session ids, goals, LLM messages, query parameters and query
text (on the embedded store and a real ``oxigraph serve``), memory fields and CLI
arguments: each gives a ``UserError`` (or its boundary's subclass) that names
the field, never a bare ``UnicodeEncodeError``, and nothing is recorded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trails import memory
from trails.agent import Session
from trails.errors import (
    MemoryInputError,
    QueryError,
    QueryParameterError,
    SessionError,
    UserError,
)
from trails.kernel import Context
from trails.llm import LLMClient, MalformedResponseError
from trails.prov import Recorder, T
from trails.store import IRI, Literal, Solutions, Store, to_python
from trails.text import check_text, text_problem

BAD = "alice\ud800"


def dataset(store: Store) -> list[str]:
    data = store.dump(format="nquads")
    assert data is not None
    return sorted(data.decode().splitlines())


def refused(
    store: Store, call: Callable[[], Any], field: str, kind: type[Exception] = UserError
) -> Exception:
    before = dataset(store)
    with pytest.raises(kind) as info:
        call()
    assert not isinstance(info.value, UnicodeError)
    message = str(info.value)
    assert field in message and "not valid Unicode text" in message
    assert "unpaired surrogate '\\ud800'" in message
    assert dataset(store) == before  # nothing was recorded
    return info.value


def test_the_helper_names_the_field_and_the_character() -> None:
    assert text_problem("naïve — 定义") is None
    assert text_problem(BAD) == "unpaired surrogate '\\ud800' at character 5"
    check_text(None, "anything")  # only strings are checked
    with pytest.raises(MemoryInputError, match=r'^topic is not valid .* "alice\\ud800"$'):
        check_text(BAD, "topic", MemoryInputError)


# -- sessions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"principal": BAD}, "principal"),
        ({"principal": "did:example:" + BAD}, "principal"),
        ({"principal": "alice", "label": BAD}, "label"),
        ({"principal": "alice", "session_id": BAD}, "session_id"),
        ({"principal": "alice", "domain": BAD}, "domain"),
    ],
)
def test_context_open(any_store: Store, kwargs: dict[str, Any], field: str) -> None:
    recorder = Recorder(any_store)
    refused(any_store, lambda: Context.open(recorder=recorder, **kwargs), f"Context.open {field}")


def test_session_principal_id_and_goal(any_store: Store) -> None:
    refused(any_store, lambda: Session(principal=BAD, store=any_store), "Session principal")
    refused(
        any_store,
        lambda: Session(principal="alice", session_id=BAD, store=any_store),
        "Session session_id",
    )
    session = Session(principal="alice", store=any_store, llm=LLMClient.mock(["unused"]))
    assert session.context is not None  # opened: only the goal is refused
    refused(any_store, lambda: session.run("pay " + BAD), "Session.run goal")
    session.close()


def test_llm_messages(ctx: Context, store: Store) -> None:
    client = LLMClient.mock(["never sent"])
    refused(store, lambda: client.complete(BAD, ctx=ctx), "message #0 content")
    refused(
        store,
        lambda: client.complete(
            [{"role": "system", "content": "ok"}, {"role": "user", "content": BAD}], ctx=ctx
        ),
        "message #1 content",
    )
    refused(store, lambda: client.complete("hi", stop=[BAD], ctx=ctx), "stop sequence")


def test_capability_id_and_description() -> None:
    from trails.kernel.registry import capability

    def handler(x: int) -> int:
        return x

    with pytest.raises(UserError, match="capability id is not valid Unicode"):
        capability(id="pay." + BAD)(handler)
    with pytest.raises(UserError, match="capability 'pay' description is not valid Unicode"):
        capability(id="pay", description=BAD)(handler)


def test_history_and_persisted_state(any_store: Store) -> None:
    session = Session(principal="alice", store=any_store)
    with pytest.raises(UserError, match="history content is not valid Unicode"):
        session.history.append("user", BAD)
    assert len(session.history) == 0
    session.metadata["note"] = BAD
    refused(any_store, session.persist, "session metadata", SessionError)
    session.metadata.clear()
    session.persist()  # fine once the bad text is gone
    session.close()


def test_a_completion_text_that_is_not_unicode_is_a_failed_completion(
    ctx: Context, store: Store
) -> None:
    """A provider may send a lone surrogate as a JSON escape; it is refused, recorded as failed."""
    client = LLMClient.mock(["pay " + BAD])
    with pytest.raises(
        MalformedResponseError, match="completion text is not valid Unicode"
    ) as info:
        client.complete("hi", ctx=ctx)
    rows = store.query(
        f"SELECT ?a ?status ?err WHERE {{ GRAPH ?g {{ ?a {T.status.n3()} ?status }} "
        f"GRAPH ?cg {{ ?a {T.errorMessage.n3()} ?err }} }}",
        {"a": IRI(info.value.activity_iri)},  # type: ignore[attr-defined]
    )
    assert isinstance(rows, Solutions)
    [row] = list(rows)
    assert to_python(row["status"]) == "error" and "ud800" in to_python(row["err"])


# -- queries on both backends ------------------------------------------------------------

ASK = "ASK { GRAPH ?g { ?s ?p ?o } }"


@pytest.mark.parametrize(
    "term",
    [
        Literal(BAD),
        Literal("x", language=None, datatype="urn:type:" + BAD),
        IRI.trusted("urn:" + BAD),
    ],
    ids=["literal", "datatype", "iri"],
)
def test_query_parameters(any_store: Store, term: Any) -> None:
    Context.open("did:example:alice", recorder=Recorder(any_store))
    error = refused(
        any_store,
        lambda: any_store.query("SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } }", {"s": term}),
        "query parameter 's'",
        QueryParameterError,
    )
    assert isinstance(error, UserError)
    refused(
        any_store,
        lambda: any_store.query_to(ASK, {"g": term}, format="json"),
        "query parameter 'g'",
        QueryParameterError,
    )


def test_query_text(any_store: Store) -> None:
    refused(
        any_store,
        lambda: any_store.query(f'ASK {{ GRAPH ?g {{ ?s ?p "{BAD}" }} }}'),
        "the query text",
        QueryError,
    )


# -- memory fields -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: memory.learn(BAD), "content"),
        (lambda: memory.learn("fact", topic=BAD), "topic"),
        (lambda: memory.learn("fact", tags=["ok", BAD]), "tags"),
        (lambda: memory.learn("fact", scope=BAD), "scope"),
        (lambda: memory.learn("fact", agent_did=BAD), "agent_did"),
        (lambda: memory.learn("fact", supersedes=BAD), "supersedes"),
        (lambda: memory.recall(BAD, scope="shared"), "context"),
        (lambda: memory.recall("fact", scope=BAD), "scope"),
        (lambda: memory.recall("fact", scope="shared", topic=BAD), "topic"),
        (lambda: memory.forget(BAD), "memory_id"),
        (lambda: memory.forget("urn:trails:entity:x", reason=BAD), "reason"),
        (lambda: memory.list(scope="all", topic=BAD), "topic"),
        (lambda: memory.history(BAD), "memory_id"),
    ],
)
def test_memory_fields(any_store: Store, call: Callable[[], Any], field: str) -> None:
    memory.learn("a fact already there", scope="shared")
    refused(any_store, call, field, MemoryInputError)


# -- CLI arguments, in a real process --------------------------------------------------


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ([b"memory", b"learn", b"caf\xe9"], "argument CONTENT"),
        ([b"memory", b"learn", b"ok", b"--topic", b"x\xff"], "argument --topic"),
        ([b"memory", b"learn", b"ok", b"--tag=a", b"--tag=\xff"], "argument --tag"),
        ([b"sessions", b"--principal", b"did:example:\xc3"], "argument --principal"),
        ([b"query", b"sessions\xff"], "argument QUERY"),
        ([b"report", b"urn:trails:session:\xfe"], "argument SESSION"),
    ],
)
def test_cli_arguments_that_are_not_utf8(tmp_path: Path, args: list[bytes], name: str) -> None:
    trails = os.fsencode(Path(sys.executable).parent / "trails")
    env = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONUTF8": "1"}
    store = os.fsencode(tmp_path / "store")
    result = subprocess.run(
        [trails, b"--store", store, *args], capture_output=True, env=env, cwd=tmp_path
    )
    err = result.stderr.decode("utf-8")
    assert result.returncode == 2, err
    assert "Traceback" not in err and "UnicodeEncodeError" not in err
    [line] = err.splitlines()
    assert line.startswith(f"trails: error: {name} is not valid Unicode text (unpaired surrogate")
    assert result.stdout == b""
