"""Writes fixtures/otel_openai_v2_*: the OpenTelemetry OpenAI instrumentation
(opentelemetry-instrumentation-openai-v2 2.3b0) tracing an
agent loop written on the openai client, against a stand-in model on 127.0.0.1.

The run: the model looks a booking up (the tool answers), asks for a refund (the app's
tool fails and says "Error: ..."), then answers in text. One file per mode:

- ``default.json``: the spans alone, as installed (a tracer provider and nothing else). The
  spans carry the model calls but no messages: admiss refuses the file (B031) saying so.
- ``events.jsonl``: the default semantic conventions with
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, spans and logs both exported: the
  content is in log events (``gen_ai.user.message``, ``gen_ai.choice``, ...). Each line is one
  OTLP export request, written in the order the SDK exported them (a record, or a span, as
  it ended), as the OpenTelemetry Collector's file exporter writes what it receives.
- ``nocapture.jsonl``: as ``events`` with content capture off: the log events carry no
  content (admiss refuses it, B031).
- ``spans_and_logs.json``: as ``events``, the spans and logs in one JSON object.

(2.4b0, which can put content on spans or in one ``gen_ai.client.inference.operation.details``
event per call, needs an opentelemetry-util-genai newer than the registry has.)

Regenerate (the packages are not in the test extra):
    pip install openai opentelemetry-sdk opentelemetry-instrumentation-openai-v2==2.3b0 'wrapt<2' \
        opentelemetry-exporter-otlp-proto-common
    python tests/traces/producers/otel_openai_v2.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
# mode: (environment, whether log records are exported too, whether lines are written as they are exported)
MODES = {
    "default": ({}, False, False),
    "events": ({CAPTURE: "true"}, True, True),
    "nocapture": ({}, True, True),
    "spans_and_logs": ({CAPTURE: "true"}, True, False),
}


def run(logs: bool) -> list[dict]:
    """One traced run, in this process (the environment picks the capture mode): the OTLP
    JSON export requests, in the order they were exported."""
    sys.path.insert(0, str(HERE))
    from loopback import StandInModel, otlp_json, otlp_logs_json, text, tool_call
    from openai import OpenAI
    from opentelemetry import trace
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    exported: list[dict] = []

    class Spans(SpanExporter):
        def export(self, spans):
            exported.append(otlp_json(spans))
            return SpanExportResult.SUCCESS

    class Logs(LogRecordExporter):
        def export(self, batch):
            exported.append(otlp_logs_json(batch))
            return LogRecordExportResult.SUCCESS

        def shutdown(self):
            pass

        def force_flush(self, timeout_millis=0):
            return True

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Spans()))
    trace.set_tracer_provider(provider)
    log_provider = None
    if logs:
        log_provider = LoggerProvider()
        log_provider.add_log_record_processor(SimpleLogRecordProcessor(Logs()))
    OpenAIInstrumentor().instrument(tracer_provider=provider, logger_provider=log_provider)
    model = StandInModel([tool_call("call_lk1", "lookup_booking", {"booking_id": "NR-48213"}),
                          tool_call("call_rf1", "issue_refund", {"booking_id": "NR-48213", "amount_eur": 84.5}),
                          text("I could not issue the refund: the payment gateway timed out.")])
    tools = [{"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}
             for name in ("lookup_booking", "issue_refund")]
    results = {"lookup_booking": json.dumps({"booking_id": "NR-48213", "refundable": True}),
               "issue_refund": "Error: payment gateway timeout after 30s"}
    client = OpenAI(base_url=model.url, api_key="not-a-key", max_retries=0)
    messages = [{"role": "system", "content": "You are a booking agent."},
                {"role": "user", "content": "Cancel NR-48213 and refund me."}]
    try:
        while True:
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools).choices[0]
            messages.append(reply.message.model_dump(exclude_none=True))
            if not reply.message.tool_calls:
                break
            for call in reply.message.tool_calls:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": results[call.function.name]})
    finally:
        model.close()
    return exported


def merged(requests: list[dict]) -> dict:
    """The export requests as one OTLP JSON object holding both ``resourceSpans`` and ``resourceLogs``."""
    out: dict = {}
    for request in requests:
        for key, resources in request.items():
            out.setdefault(key, []).extend(resources)
    return out


def main() -> None:
    if len(sys.argv) > 1:  # a child: one mode, its export requests on stdout
        json.dump(run(MODES[sys.argv[1]][1]), sys.stdout)
        return
    sys.path.insert(0, str(HERE))
    from loopback import write

    for mode, (environment, _, as_lines) in MODES.items():
        child = subprocess.run([sys.executable, __file__, mode], env={**os.environ, **environment},
                               capture_output=True, text=True, check=True)
        requests = json.loads(child.stdout)
        if as_lines:
            with open(FIXTURES / f"otel_openai_v2_{mode}.jsonl", "w", encoding="utf-8") as out:
                out.writelines(json.dumps(request, ensure_ascii=False) + "\n" for request in requests)
        else:
            write(FIXTURES / f"otel_openai_v2_{mode}.json", merged(requests))


if __name__ == "__main__":
    main()
