"""The OpenTelemetry bridge: audit any agent that emits GenAI traces, and send trails' runs out.

- In: ``trails otlp`` (``receiver``) accepts OTLP/HTTP traces, reads them
  through every version of the GenAI conventions (``conventions``), turns each
  span into trails' own event (``mapping``, ``events``) and writes each batch
  atomically into per-session graphs (``ingest``), ended and sealed like native
  sessions.
- Out: ``SpanExporterListener`` (``exporter``) emits recorded runs as OTel
  spans through the OpenTelemetry SDK; ``session_otlp_json`` exports a
  recorded session as an OTLP/JSON payload.

The receiver needs ``opentelemetry-proto``; the exporter the OpenTelemetry
SDK: ``pip install 'trails[otel]'``. Names are imported from the submodules.
"""

from __future__ import annotations

__all__: list[str] = []
