"""Ids chosen outside trails never name a graph or resource trails derives from another.

A session's IRI is followed by ``:content`` for its content graph and by ``:<part>`` for
the resources that hang off it (projection, fork, interruption, summary ...); a tenant's
OTLP sessions are named under ``otlp-<digest>-``; a conversation whose session ended
continues in ``<conversation>~<trace>``. An OTLP conversation id (or a session id a caller
chooses) that spells one of those shapes must get a session of its own, never someone
else's graph.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.otel.conftest import Receiver
from tests.otel.test_ownership import ALICE, TENANT_A, chat_payload, post, tokens_file, writers

from trails.errors import SessionError
from trails.evidence.verify import verify
from trails.kernel.context import Context
from trails.prov import Recorder, SessionEnded, SessionStarted
from trails.prov.content import content_graph
from trails.prov.iri import Minter, check_session_id
from trails.server.write_tokens import load_write_tokens
from trails.store import Store

# every name trails puts after a session's IRI: its content graph, and each part it mints
# there (``Minter.part(session, NAME)``)
DERIVED = (
    "content",
    "projection",
    "fork",
    "interruption",
    "summary",
    "trace-metadata",
    "erasure",
    "run",
    "batch",
)


def test_a_session_iri_minted_from_any_id_is_never_a_derived_iri_of_another() -> None:
    minter = Minter()
    for suffix in DERIVED:
        chosen = minter.session(f"case-1:{suffix}")
        assert chosen != Minter.part(minter.session("case-1"), suffix)
        assert chosen != content_graph(minter.session("case-1"))
        assert ":" not in str(chosen).removeprefix("urn:trails:session:")
    # an id the minter escaped names the same session again
    assert minter.session(minter.session_id(minter.session("a:b"))) == minter.session("a:b")
    assert minter.session("case-1") == "urn:trails:session:case-1"  # a plain id is unchanged


@pytest.mark.parametrize("suffix", DERIVED)
def test_a_native_session_id_spelling_a_derived_shape_is_refused(store: Store, suffix: str) -> None:
    with pytest.raises(SessionError, match="parts of a session"):
        check_session_id(f"case-1:{suffix}")
    with pytest.raises(SessionError, match="parts of a session"):
        Context.open(principal=ALICE, session_id=f"case-1:{suffix}", store=store)


def test_loopback_conversation_ids_spelling_a_native_sessions_graphs_write_nowhere_of_it(
    make_receiver: Any, store: Store
) -> None:
    recorder = Recorder.from_settings(store=store)
    native = recorder.minter.session("case-1")
    recorder.record(SessionStarted(session=native, principal=ALICE, started=datetime.now(UTC)))
    before = {g: store.dump(format="nquads", graph=g) for g in (native, content_graph(native))}
    receiver: Receiver = make_receiver()  # loopback, no tokens
    for i, suffix in enumerate(DERIVED):
        answer = post(receiver.url, chat_payload(f"case-1:{suffix}", f"{i + 1:032x}", i + 1))
        assert answer.status_code == 200, answer.text
    for graph, dump in before.items():
        assert store.dump(format="nquads", graph=graph) == dump
    sessions = {row["s"] for s in DERIVED for row in writers(store, f"case-1:{s}")}
    assert len(sessions) == len(DERIVED)  # each conversation its own session
    for session in sessions:
        assert not session.startswith(str(native) + ":"), session
    recorder.record(SessionEnded(session=native, ended=datetime.now(UTC)))
    receiver.ingestor.sweep(float("inf"))
    report = verify(store)
    assert report.ok, report.findings


def test_a_tenant_cannot_name_its_own_sessions_content_graph(
    make_receiver: Any, store: Store, tmp_path: Path
) -> None:
    tokens = load_write_tokens(tokens_file(tmp_path / "tokens.toml"))
    receiver: Receiver = make_receiver(tokens=tokens)
    assert post(receiver.url, chat_payload("conv-1", "a" * 32, 1), "token-a").json() == {}
    for i, suffix in enumerate(DERIVED):
        body = chat_payload(f"conv-1:{suffix}", f"{i + 2:032x}", i + 2)
        assert post(receiver.url, body, "token-a").json() == {}
    first = writers(store, "conv-1")[0]["s"]
    for suffix in DERIVED:
        (row,) = writers(store, f"conv-1:{suffix}")
        assert row["writer"] == TENANT_A
        assert not row["s"].startswith(first + ":"), row
    receiver.ingestor.sweep(float("inf"))
    report = verify(store)
    assert report.ok, report.findings  # no CONTENT-FOREIGN: nothing wrote a content graph


def test_a_loopback_sender_cannot_name_a_tenants_namespace(
    make_receiver: Any, store: Store, tmp_path: Path
) -> None:
    tokens = load_write_tokens(tokens_file(tmp_path / "tokens.toml"))
    tenant: Receiver = make_receiver(tokens=tokens)
    open_receiver: Receiver = make_receiver()
    assert post(tenant.url, chat_payload("conv-1", "a" * 32, 1), "token-a").json() == {}
    (row,) = writers(store, "conv-1")
    digest = hashlib.sha256(TENANT_A.encode()).hexdigest()[:16]
    assert row["s"].endswith(f"otlp-{digest}-conv-1")
    before = store.dump(format="nquads", graph=row["s"])
    spoof = f"otlp-{digest}-conv-1"
    assert post(open_receiver.url, chat_payload(spoof, "b" * 32, 2)).json() == {}
    assert store.dump(format="nquads", graph=row["s"]) == before
    (other,) = writers(store, spoof)
    assert other["s"] != row["s"]


def test_a_conversation_id_spelling_a_continuation_gets_its_own_session(
    make_receiver: Any, store: Store
) -> None:
    receiver: Receiver = make_receiver(idle=0.0)
    trace = "f" * 32
    assert post(receiver.url, chat_payload("conv-9", "e" * 32, 1)).json() == {}
    receiver.ingestor.sweep(float("inf"))  # conv-9 ends; its late traces go to conv-9~TRACE
    assert post(receiver.url, chat_payload(f"conv-9~{trace}", "1" * 32, 2)).json() == {}
    assert post(receiver.url, chat_payload("conv-9", trace, 3)).json() == {}
    late = {row["s"] for row in writers(store, "conv-9")}
    spelled = {row["s"] for row in writers(store, f"conv-9~{trace}")}
    assert len(late) == 2 and len(spelled) == 1
    assert not late & spelled
    receiver.ingestor.sweep(float("inf"))
    assert verify(store).ok


def test_a_loopback_sender_naming_a_tenants_trace_changes_nothing_of_theirs(
    make_receiver: Any, store: Store, tmp_path: Path
) -> None:
    tokens = load_write_tokens(tokens_file(tmp_path / "tokens.toml"))
    tenant: Receiver = make_receiver(tokens=tokens)
    open_receiver: Receiver = make_receiver()
    trace = "c" * 32
    assert post(tenant.url, chat_payload("conv-1", trace, 1), "token-a").json() == {}
    (row,) = writers(store, "conv-1")
    before = store.dump(format="nquads", graph=row["s"])
    # the same trace id, no conversation id: keyed by the trace, never the tenant's session
    body = chat_payload("conv-1", trace, 2).replace(b'"gen_ai.conversation.id"', b'"x.unused"')
    assert post(open_receiver.url, body).json() == {}
    assert store.dump(format="nquads", graph=row["s"]) == before
    tenant.ingestor.sweep(float("inf"))
    open_receiver.ingestor.sweep(float("inf"))
    report = verify(store)
    assert report.ok, report.findings
