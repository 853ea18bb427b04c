"""Control findings out as OpenTelemetry log records, one per finding, for existing alerting.

When OTel export is configured (``[otel] endpoint`` or ``export = true``), ``install`` in
``trails.otel.exporter`` also subscribes a ``FindingLogger``: after a control evaluation
is recorded (``trails.controls.record``: sealed first), each finding it generated becomes
one log record through the OpenTelemetry SDK (``BatchLogRecordProcessor`` in front of
``OTLPLogExporter``, http/protobuf), so an alert rule on a log backend fires on it. The
record's ``event.name`` is ``trails.control.finding``; its severity follows the
control's (info INFO, low WARN, medium ERROR, high ERROR3, critical FATAL); its attributes
name the control, its definition digest, the subject at fault, the session, the finding's
and the evaluation's IRIs (where the sealed evidence is). The logs endpoint is
``[otel] endpoint`` with ``/v1/traces`` replaced by ``/v1/logs``, else the standard
``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` variables.

Exporting never changes what is recorded: the logger runs after the write.
"""

from __future__ import annotations

from typing import Any

from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor
from opentelemetry.sdk.resources import Resource

from trails.controls.record import ControlsEvaluated
from trails.prov.events import Event

__all__ = ["EVENT_NAME", "SEVERITY", "FindingLogger", "logs_endpoint"]

EVENT_NAME = "trails.control.finding"

SEVERITY: dict[str, SeverityNumber] = {
    "info": SeverityNumber.INFO,
    "low": SeverityNumber.WARN,
    "medium": SeverityNumber.ERROR,
    "high": SeverityNumber.ERROR3,
    "critical": SeverityNumber.FATAL,
}


def logs_endpoint(traces_endpoint: str | None) -> str | None:
    """The OTLP/HTTP logs URL beside a traces URL (None: the SDK reads the variables)."""
    if traces_endpoint and traces_endpoint.rstrip("/").endswith("/v1/traces"):
        return traces_endpoint.rstrip("/")[: -len("/v1/traces")] + "/v1/logs"
    return None


class FindingLogger:
    """A recorder listener that emits one OTel log record per recorded control finding.

    Args:
        processor: where records go (a ``BatchLogRecordProcessor`` in front of an exporter).
        resource: the OTel resource (``service.name`` ...) of the records.
    """

    def __init__(self, processor: LogRecordProcessor, *, resource: Resource | None = None) -> None:
        self.provider = LoggerProvider(
            resource=resource or Resource.create({"service.name": "trails"})
        )
        self.provider.add_log_record_processor(processor)
        self.logger = self.provider.get_logger("trails.controls")

    def __call__(self, recorder: Any, event: Event) -> None:
        if not isinstance(event, ControlsEvaluated):
            return
        emitted = False
        for run in event.runs:
            at = int(run.ended.timestamp() * 1e9)
            for finding in run.findings:
                attributes: dict[str, Any] = {
                    "event.name": EVENT_NAME,
                    "trails.control.id": run.control_id,
                    "trails.control.severity": run.severity,
                    "trails.control.sha256": run.digest,
                    "trails.control.evaluation": run.activity,
                    "trails.finding": finding.iri,
                    "trails.finding.graph": event.session,
                }
                if finding.subject is not None:
                    attributes["trails.finding.subject"] = finding.subject
                if finding.session is not None:
                    attributes["trails.session"] = finding.session
                if finding.message is not None:
                    attributes["trails.finding.message"] = finding.message
                body = f"control {run.control_id} ({run.severity}): {run.title}"
                if finding.subject:
                    body += f": {finding.subject}"
                self.logger.emit(
                    LogRecord(
                        timestamp=at,
                        observed_timestamp=at,
                        severity_number=SEVERITY.get(run.severity, SeverityNumber.WARN),
                        severity_text=run.severity.upper(),
                        body=body,
                        attributes=attributes,
                        event_name=EVENT_NAME,
                    )
                )
                emitted = True
        if emitted:
            self.provider.force_flush(5_000)

    def shutdown(self) -> None:
        """Send what waits and stop (at interpreter exit)."""
        self.provider.shutdown()
