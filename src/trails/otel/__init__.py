"""The OpenTelemetry bridge: audit any agent that emits GenAI traces, and send trails' runs out.

- In: OTLP spans (decoded by ``otlp``) are read through every version of the
  GenAI conventions (``conventions``), each span turned into trails' own event
  (``mapping``, ``events``) and each batch written atomically into per-session
  graphs (``ingest``), ended and sealed like native sessions. The HTTP route
  that receives them (``trails otlp``, ``trails serve``) is the server room's
  (``trails.server.traces``): this room knows nothing of HTTP.
- Out: ``SpanExporterListener`` (``exporter``) emits recorded runs as OTel
  spans through the OpenTelemetry SDK; ``session_otlp_json`` exports a
  recorded session as an OTLP/JSON payload.

The receiver needs ``opentelemetry-proto``; the exporter the OpenTelemetry
SDK: ``pip install 'trails[otel]'``. Names are imported from the submodules.
"""

from __future__ import annotations

__all__: list[str] = []
