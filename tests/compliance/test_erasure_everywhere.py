"""Erasure erases personal data wherever trails put it.

A data subject's e-mail reaches a recorded store through more than prompts: the
exception a capability raised quotes it, a provider's error quotes it, a memory is
learned under it as topic and tag, a recall searches for it, the session is labelled
with it, and an auditor's query for it sits in the endpoint's access log. After
``trails erase --principal`` the e-mail must be gone from the dump, from every file of
the store folder and of the access log folder, from every export format, the evidence
bundle and the HTML report, while every seal still verifies. Everything runs through
the real store, the real ``trails`` command and a real ``trails serve``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from tests.server.conftest import free_port, wait_for

import trails.memory as memory
from trails.compliance.erasure import erase
from trails.evidence import verify
from trails.evidence.seal import install_sealer
from trails.kernel import Context, invoke
from trails.kernel.registry import capability, unregister
from trails.prov import LLMCompleted, Recorder, T
from trails.prov.content import content_graph
from trails.server.auth import token_entry
from trails.store import IRI, Quad, open_store

JANE = "did:example:jane"
EMAIL = "jane.doe@example.org"
AUDITOR_TOKEN = "auditor-token-for-the-erasure-test-0123456789"
FORMATS = ("trig", "nquads", "turtle", "jsonld", "provn", "provjson", "otlp-json")


@pytest.fixture
def notify() -> Iterator[str]:
    """A capability whose failure quotes the address it was given (scoped to the test)."""

    def handler(ctx: Context, address: str) -> str:
        raise ValueError(f"the mailbox {address} is full")

    capability(id="everywhere.notify", description="Notify a customer")(handler)
    yield "everywhere.notify"
    unregister("everywhere.notify")


def _files(folder: Path) -> bytes:
    return b"".join(f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file())


def _trails(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "TRAILS_STORE": "memory:"}
    return subprocess.run(
        [sys.executable, "-m", "trails.cli", *args], capture_output=True, cwd=cwd, env=env
    )


def _record_jane(path: Path, capability_id: str) -> str:
    store = open_store(str(path))
    try:
        recorder = Recorder(store)
        install_sealer(recorder)
        ctx = Context.open(JANE, recorder=recorder, label=f"support case of {EMAIL}")
        with pytest.raises(Exception, match="mailbox"):
            invoke(capability_id, {"address": EMAIL}, ctx=ctx)
        now = datetime.now(UTC)
        recorder.record(
            LLMCompleted(
                session=ctx.session,
                activity=recorder.minter.activity(),
                parent=ctx.session,
                principal=JANE,
                provider="mock",
                model="m",
                started=now,
                ended=now,
                messages=[{"role": "user", "content": "write to her"}],
                request_hash="0" * 64,
                status="error",
                error=f"provider refused: recipient {EMAIL} is blocked",
            )
        )
        memory.learn("prefers to be written to", topic=f"contact {EMAIL}", tags=[EMAIL], ctx=ctx)
        memory.recall(f"how to reach {EMAIL}", scope="private", ctx=ctx)
        ctx.close()
        return str(ctx.session)
    finally:
        store.close()


def _audit_query(path: Path, folder: Path) -> None:
    """An auditor looks for the e-mail through ``trails serve``: the access log keeps it."""
    tokens = folder / "tokens.toml"
    tokens.write_text(token_entry(AUDITOR_TOKEN, "did:example:auditor", ["*"], audit=True))
    port = free_port()
    command = [sys.executable, "-m", "trails.cli", "--store", str(path), "serve"]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--tokens", str(tokens)],
        env={**os.environ, "TRAILS_STORE": "memory:"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/sparql"

    def up() -> bool:
        assert process.poll() is None, process.communicate()[1].decode()
        try:
            return httpx.get(url, timeout=2).status_code in (200, 401)
        except httpx.TransportError:
            return False

    try:
        wait_for(up)
        query = (
            f'SELECT ?s WHERE {{ GRAPH ?g {{ ?s ?p ?o FILTER(CONTAINS(STR(?o), "{EMAIL}")) }} }}'
        )
        answer = httpx.get(
            url,
            params={"query": query},
            headers={"Authorization": f"Bearer {AUDITOR_TOKEN}"},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_erasing_a_principal_removes_her_email_from_everything(tmp_path: Path, notify: str) -> None:
    path = tmp_path / "store"
    log = tmp_path / "store.access-log"
    session = _record_jane(path, notify)
    _audit_query(path, tmp_path)
    needle = EMAIL.encode()
    store = open_store(str(path))
    try:  # recorded: in content graphs only, never in sealed structure
        assert needle in (store.dump(format="nquads") or b"")
        assert needle not in (store.dump(format="nquads", graph=session) or b"")  # type: ignore[arg-type]
        assert needle in (store.dump(format="nquads", graph=content_graph(session)) or b"")
    finally:
        store.close()
    assert needle in _files(log)

    erased = _trails(
        "erase", "--store", str(path), "--principal", JANE, "--mention", EMAIL,
        "--reason", "GDPR art. 17 request 42", "--by", "did:example:dpo", cwd=tmp_path,
    )  # fmt: skip
    assert erased.returncode == 0, erased.stderr.decode()
    out = erased.stdout.decode()
    assert "access log: removed the text of 1 logged query" in out, out

    store = open_store(str(path))
    try:
        assert needle not in (store.dump(format="nquads") or b"")
    finally:
        store.close()
    assert needle not in _files(path)
    assert needle not in _files(log)
    logged = open_store(str(log))
    try:  # the entry stays (who asked, when, how it ended), its text is gone
        dump = logged.dump(format="nquads") or b""
        assert b"QueryReceived" in dump and b"did:example:auditor" in dump
        assert needle not in dump
    finally:
        logged.close()
    for fmt in FORMATS:
        which = ["--session", session] if fmt == "turtle" else ["--all"]  # turtle: one graph
        exported = _trails("export", "--store", str(path), *which, "--format", fmt, cwd=tmp_path)
        assert exported.returncode == 0, (fmt, exported.stderr.decode())
        assert JANE.encode() in exported.stdout or fmt == "otlp-json", fmt  # she is still named
        assert needle not in exported.stdout, fmt
    bundle = tmp_path / "evidence.zip"
    made = _trails("export", "--store", str(path), "--all", "--bundle", str(bundle), cwd=tmp_path)
    assert made.returncode == 0, made.stderr.decode()
    assert needle not in bundle.read_bytes()
    with zipfile.ZipFile(bundle) as archive:
        assert all(needle not in archive.read(name) for name in archive.namelist())
    report = tmp_path / "report.html"
    shown = _trails("report", "--store", str(path), session, "--out", str(report), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr.decode()
    assert needle not in report.read_bytes()
    verified = _trails("verify", "--store", str(path), cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout.decode() + verified.stderr.decode()


def test_sessions_recorded_before_the_change_still_verify_and_erase(
    tmp_path: Path, notify: str
) -> None:
    """A store written when error messages and recall queries were sealed structure (no
    digest): it verifies, its prompts still erase (it is not refused as unmigrated),
    and the erasure keeps every seal valid."""
    path = tmp_path / "store"
    session = _record_jane(path, notify)
    store = open_store(str(path))
    try:
        recorder = Recorder(store)
        sealer = install_sealer(recorder)
        g, cg = IRI(session), content_graph(session)
        moved: list[Quad] = []
        dropped: list[Quad] = []
        for prop, digest in (
            (T.errorMessage, T.errorMessageSha256),
            (T.recallQuery, T.recallQuerySha256),
        ):
            for row in store.query(
                "SELECT ?s ?o $g $p WHERE { GRAPH $g { ?s $p ?o } }", {"g": cg, "p": prop}
            ):
                moved.append(Quad(row["s"], prop, row["o"], g))  # type: ignore[arg-type,index]
                dropped.append(Quad(row["s"], prop, row["o"], cg))  # type: ignore[arg-type,index]
            for row in store.query(
                "SELECT ?s ?o $g $p WHERE { GRAPH $g { ?s $p ?o } }", {"g": g, "p": digest}
            ):
                dropped.append(Quad(row["s"], digest, row["o"], g))  # type: ignore[arg-type,index]
        assert len(moved) == 3  # the capability's and the provider's errors, the recall query
        store.write(moved, remove=dropped)
        sealer.seal(recorder, g)  # sealed as the old version sealed it
        assert verify(store).ok
        receipt = erase(recorder, principal=JANE, reason="request 7", by="did:example:dpo")
        assert receipt.erased > 0
        assert verify(store).ok
        # what the old layout sealed stays (docs/compliance.md says so): the prompts went
        assert EMAIL.encode() in (store.dump(format="nquads", graph=g) or b"")
        assert EMAIL.encode() not in (store.dump(format="nquads", graph=cg) or b"")
    finally:
        store.close()


def test_retention_removes_old_query_texts_from_the_access_log(tmp_path: Path, notify: str) -> None:
    path = tmp_path / "store"
    _record_jane(path, notify)
    _audit_query(path, tmp_path)
    (tmp_path / "trails.toml").write_text("[retention]\naccess_log_days = 30\n")
    log = tmp_path / "store.access-log"
    assert EMAIL.encode() in _files(log)
    now = ["--store", str(path), "--now", "2099-01-01", "--reason", "yearly", "--by", "did:x:dpo"]
    done = _trails("retention", "apply", *now, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert (
        "access log: removed the text of 1 query(ies) logged before 2098-" in done.stdout.decode()
    )
    assert EMAIL.encode() not in _files(log)
