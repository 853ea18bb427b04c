"""One OpenTelemetry log record per finding, through the real SDK and over real OTLP/HTTP
when OTel export is configured."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from opentelemetry._logs import SeverityNumber
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from tests.controls.conftest import EXAMPLE

from trails.config import load_settings
from trails.controls import evaluate_session, load_controls, record_evaluation
from trails.otel.findings import EVENT_NAME, FindingLogger, logs_endpoint
from trails.prov.recorder import Recorder
from trails.store import open_store
from trails.testing.conformance import record_sample_session


def test_each_finding_is_one_log_record(tmp_path: Path) -> None:
    store = open_store("memory:")
    recorder = Recorder.from_settings(load_settings(environ={}, cwd=tmp_path), store=store)
    exported = InMemoryLogRecordExporter()
    recorder.subscribe(FindingLogger(SimpleLogRecordProcessor(exported)))
    session = str(record_sample_session(recorder)["session"])
    evaluation = evaluate_session(store, session, load_controls(EXAMPLE))
    graph = record_evaluation(recorder, evaluation, by="did:example:auditor")
    [record] = [r.log_record for r in exported.get_finished_logs()]  # one finding, one record
    assert record.severity_number == SeverityNumber.ERROR  # medium
    attrs = dict(record.attributes or {})
    assert attrs["event.name"] == EVENT_NAME and attrs["trails.control.id"] == "failed-call"
    assert attrs["trails.session"] == session and attrs["trails.finding.graph"] == str(graph)
    assert attrs["trails.finding.message"] == "the call failed"


def test_logs_endpoint_sits_beside_the_traces_one() -> None:
    assert logs_endpoint("http://c:4318/v1/traces") == "http://c:4318/v1/logs"
    assert logs_endpoint(None) is None


class _Collector(BaseHTTPRequestHandler):
    bodies: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        self.bodies.append((self.path, self.rfile.read(size)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_configured_export_sends_findings_over_otlp(collector: str, tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text(
        f'[otel]\nendpoint = "{collector}/v1/traces"\n'
        f'[controls]\non_session_end = true\nbuiltin = false\ndirectory = "{EXAMPLE}"\n'
    )
    _Collector.bodies.clear()
    recorder = Recorder.from_settings(
        load_settings(environ={}, cwd=tmp_path), store=open_store("memory:")
    )
    record_sample_session(recorder)  # ends: evaluated, recorded, exported (flushed)
    logs = [b for path, b in _Collector.bodies if path == "/v1/logs"]
    names = []
    for body in logs:
        request = ExportLogsServiceRequest.FromString(body)
        for resource in request.resource_logs:
            for scope in resource.scope_logs:
                names += [r.event_name or r.body.string_value for r in scope.log_records]
    assert names == [EVENT_NAME]  # the failed call; the sample session names its domain
