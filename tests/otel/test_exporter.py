"""Trails' own runs out as OTel spans (the SDK's exporter, live and from the store), and back in:
exporting a session and ingesting it gives the same PROV-O shape, compared with SPARQL."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from tests.agent.conftest import turn
from tests.otel.conftest import Receiver

from trails import capability
from trails.agent import Session
from trails.agent.planners import react
from trails.cli import main
from trails.config import load_settings
from trails.errors import ConfigError
from trails.evidence.verify import verify
from trails.llm import LLMClient
from trails.otel.exporter import SpanEmitter, install
from trails.prov import default_recorder
from trails.prov.vocab import sparql_prefixes
from trails.store import Store, open_store, select
from trails.store.terms import to_python
from trails.testing import shacl_report

# The shape of a session: which kinds of resource are linked by which PROV-O relation, how often
# (a received session also holds its replayable projection, which is session state, left out).
SHAPE = """
SELECT ?sc ?p ?oc (COUNT(*) AS ?n) WHERE {
  GRAPH ?g {
    ?s ?p ?o . ?s a ?sc . ?o a ?oc .
    FILTER (STRSTARTS(STR(?p), STR(prov:)) || ?p = trails:inSession || ?p = trails:capability)
    FILTER (STRSTARTS(STR(?sc), STR(trails:)) && STRSTARTS(STR(?oc), STR(trails:)))
    FILTER (!CONTAINS(STR(?s), ":projection") && !CONTAINS(STR(?o), ":projection"))
  }
} GROUP BY ?sc ?p ?oc"""

CLASSES = """
SELECT ?c (COUNT(DISTINCT ?s) AS ?n) WHERE {
  GRAPH ?g { ?s a ?c FILTER (!CONTAINS(STR(?s), ":projection")) }
  # what the receiver adds: each span as it came (trails:SpanRecord), nothing else
  FILTER NOT EXISTS { GRAPH ?g2 { ?s a trails:SpanRecord } }
} GROUP BY ?c"""


def shape(store: Store) -> dict[tuple[str, ...], int]:
    out: dict[tuple[str, ...], int] = {}
    for sparql in (SHAPE, CLASSES):
        for row in select(store, sparql_prefixes() + sparql):
            key = tuple(str(v) for k, v in row.items() if k != "n")
            out[key] = int(to_python(row["n"]))
    return out


def run_native_session() -> str:
    @capability(id="notes.search", description="Search notes by tag.")
    def search(ctx: Any, tag: str) -> dict[str, Any]:
        return {"hits": ["n1", "n2"]}

    client = LLMClient.mock(
        response=[
            turn("notes.search", {"tag": "urgent"}),
            turn("finish", final_answer="2 urgent notes"),
        ]
    )
    with Session(principal="did:local:alice") as session:
        result = react.run("Find urgent notes.", llm=client, session=session)
        assert result.stopped == "goal_achieved"
        iri = session.iri
    assert iri is not None
    return iri


def ledger_free(store: Store) -> None:
    conforms, text = shacl_report(store)
    assert conforms, text
    assert verify(store).ok


def test_a_live_session_exported_and_ingested_has_the_same_prov_shape(
    make_receiver: Any, store: Store
) -> None:
    target = open_store("memory:")
    receiver: Receiver = make_receiver(target=target)
    processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.traces))
    default_recorder().subscribe(SpanEmitter(processor))
    session = run_native_session()
    assert processor.force_flush()
    processor.shutdown()
    assert target.graphs() and session in [str(g) for g in target.graphs()]
    assert shape(target) == shape(store)
    ledger_free(target)
    ended = list(
        select(
            target,
            sparql_prefixes() + "SELECT ?e ?g WHERE { GRAPH ?g { ?g prov:endedAtTime ?e } }",
            {"g": session},
        )
    )  # type: ignore[dict-item]
    assert len(ended) == 1


def test_export_format_otlp_json_then_ingest_gives_the_same_shape(
    make_receiver: Any, store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = run_native_session()
    out = tmp_path / "session.otlp.json"
    assert main(["export", "--session", session, "--format", "otlp-json", "--out", str(out)]) == 0
    payload = json.loads(out.read_text())
    spans = [s for rs in payload["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert {s["name"] for s in spans} >= {"invoke_agent react", "execute_tool notes.search"}
    assert all(len(s["traceId"]) == 32 for s in spans)  # OTLP/JSON: hex ids
    target = open_store("memory:")
    receiver: Receiver = make_receiver(target=target)
    answer = httpx.post(
        receiver.traces, content=out.read_bytes(), headers={"content-type": "application/json"}
    )
    assert answer.status_code == 200, answer.text
    assert shape(target) == shape(store)
    ledger_free(target)
    again = httpx.post(
        receiver.traces, content=out.read_bytes(), headers={"content-type": "application/json"}
    )
    assert again.status_code == 200 and shape(target) == shape(store)  # nothing duplicated


def test_install_honours_the_standard_otlp_endpoint_variable(
    make_receiver: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = open_store("memory:")
    receiver: Receiver = make_receiver(target=target)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.traces)
    emitter = install(default_recorder(), load_settings())
    session = run_native_session()
    emitter.processor.shutdown()
    assert session in [str(g) for g in target.graphs()]
    names = {
        str(to_python(r["l"]))
        for r in select(
            target,
            sparql_prefixes()
            + "SELECT ?l WHERE { GRAPH ?g { ?a a trails:CapabilityInvocation ; rdfs:label ?l } }",
        )
    }
    assert names == {"invoke notes.search"}


def test_otel_endpoint_in_settings_wires_the_exporter_by_configuration(
    make_receiver: Any, store: Store, tmp_path: Path
) -> None:
    from trails.config import OTEL_EXPORTER, RECOVERY, SEALER
    from trails.prov import Recorder

    target = open_store("memory:")
    receiver: Receiver = make_receiver(target=target)
    (tmp_path / "trails.toml").write_text(f'[otel]\nendpoint = "{receiver.traces}"\n')
    settings = load_settings(environ={}, cwd=tmp_path)
    assert settings.recorder_plugins() == [SEALER, RECOVERY, OTEL_EXPORTER]
    assert (
        OTEL_EXPORTER not in load_settings(environ={}, cwd=store_dir(tmp_path)).recorder_plugins()
    )
    recorder = Recorder.from_settings(settings, store=store)
    emitters = [listener for listener in recorder._listeners if isinstance(listener, SpanEmitter)]
    assert len(emitters) == 1
    with Session(principal="did:local:alice", recorder=recorder) as session:
        react.run("Say done.", llm=LLMClient.mock(response="finish"), session=session)
        iri = session.iri
    emitters[0].processor.shutdown()
    assert iri in [str(g) for g in target.graphs()]


def store_dir(tmp_path: Path) -> Path:
    empty = tmp_path / "no-settings"
    empty.mkdir(exist_ok=True)
    return empty


SHORT_SCRIPT = """
import json
import trails
from trails.agent import Session
from trails.agent.planners import react
from trails.llm import LLMClient

def turn(action, action_input=None, **extra):
    payload = {"thought": "use " + action, "action": action, "action_input": action_input or {}}
    payload.update(extra)
    return "```json\\n" + json.dumps(payload) + "\\n```"

@trails.capability(id="notes.search", description="Search notes by tag.")
def search(ctx, tag: str) -> dict:
    return {"hits": ["n1", "n2"]}

client = LLMClient.mock(
    response=[turn("notes.search", {"tag": "urgent"}), turn("finish", final_answer="2 notes")]
)
with Session(principal="did:local:alice") as session:
    react.run("Find urgent notes.", llm=client, session=session)
print(session.iri)
"""

OPEN_AT_EXIT = """
import trails
from trails.kernel import Context
from trails.prov import default_recorder

@trails.capability(id="notes.count", description="Count notes.")
def count(ctx) -> int:
    return 3

ctx = Context.open("did:local:alice", recorder=default_recorder())
ctx.__enter__()
trails.invoke("notes.count", {}, ctx=ctx)
print(ctx.session)
"""


def run_script(tmp_path: Path, script: str, endpoint: str) -> tuple[str, Store]:
    """Run ``script`` in a fresh interpreter exporting to ``endpoint``; it exits at once."""
    (tmp_path / "trails.toml").write_text(f'[otel]\nendpoint = "{endpoint}"\n')
    (tmp_path / "script.py").write_text(script)
    env = {**os.environ, "TRAILS_STORE": str(tmp_path / "store")}
    done = subprocess.run(
        [sys.executable, "script.py"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1], open_store(str(tmp_path / "store"))


RECORDED_ACTIVITIES = """
SELECT (COUNT(DISTINCT ?a) AS ?n) WHERE {
  GRAPH ?g { ?a a ?c FILTER (?c IN (trails:PlanRun, trails:LLMCompletion,
                                    trails:CapabilityInvocation)) }
}"""
RECEIVED_SPANS = "SELECT (COUNT(DISTINCT ?a) AS ?n) WHERE { GRAPH ?g { ?a trails:spanId ?id } }"


def count(store: Store, sparql: str) -> int:
    return int(to_python(next(iter(select(store, sparql_prefixes() + sparql)))["n"]))


def test_a_short_script_exiting_at_once_sends_all_its_spans(
    make_receiver: Any, tmp_path: Path
) -> None:
    target = open_store("memory:")
    receiver: Receiver = make_receiver(target=target)
    session, source = run_script(tmp_path, SHORT_SCRIPT, receiver.traces)
    activities = count(source, RECORDED_ACTIVITIES)
    assert activities >= 4  # a plan run, two completions, a capability invocation
    # every activity's span arrived, and the session's own span, sent last, which ends it
    assert count(target, RECEIVED_SPANS) == activities + 1
    assert shape(target) == shape(source)
    ends = {
        str(r["g"])
        for r in select(
            target, sparql_prefixes() + "SELECT ?g WHERE { GRAPH ?g { ?g prov:endedAtTime ?e } }"
        )
    }
    assert session in ends


def test_a_session_left_open_at_exit_is_ended_and_all_its_spans_arrive(
    make_receiver: Any, tmp_path: Path
) -> None:
    target = open_store("memory:")
    receiver: Receiver = make_receiver(target=target)
    session, source = run_script(tmp_path, OPEN_AT_EXIT, receiver.traces)
    assert count(source, RECORDED_ACTIVITIES) == 1
    assert count(target, RECEIVED_SPANS) == 2  # the invocation and the session, ended at exit
    ends = select(
        target,
        sparql_prefixes()
        + "SELECT ?g ?s WHERE { GRAPH ?g { ?g prov:endedAtTime ?e ; trails:status ?s } }",
    )
    assert [str(r["g"]) for r in ends] == [session]


def test_a_session_end_flushes_its_spans_at_once(make_receiver: Any, store: Store) -> None:
    target = open_store("memory:")
    receiver: Receiver = make_receiver(target=target)
    processor = BatchSpanProcessor(
        OTLPSpanExporter(endpoint=receiver.traces), schedule_delay_millis=3_600_000
    )
    emitter = SpanEmitter(processor)
    default_recorder().subscribe(emitter)
    session = run_native_session()  # no flush by hand: the batch would wait an hour
    assert session in [str(g) for g in target.graphs()]
    assert count(target, RECEIVED_SPANS) == count(store, RECORDED_ACTIVITIES) + 1
    assert emitter.shutdown() and emitter.shutdown()  # once, then nothing left to do


def test_a_collector_that_never_answers_delays_a_session_end_only_by_the_timeout(
    store: Store,
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        port = silent.getsockname()[1]
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=60)
        emitter = SpanEmitter(BatchSpanProcessor(exporter), flush_timeout=0.2)
        default_recorder().subscribe(emitter)
        session = run_native_session()  # ends although the export still waits for an answer
        assert session in [str(g) for g in store.graphs()]
        assert emitter.flush() is False  # the spans are still on their way


def test_flush_timeout_must_be_a_number(tmp_path: Path) -> None:
    settings = '[otel]\nendpoint = "http://127.0.0.1:9/v1/traces"\nflush_timeout = "soon"\n'
    (tmp_path / "trails.toml").write_text(settings)
    with pytest.raises(ConfigError, match="flush_timeout"):
        install(default_recorder(), load_settings(environ={}, cwd=tmp_path))
