"""Writes fixtures/otel_openai_v2_default.json: the OpenTelemetry OpenAI instrumentation
(opentelemetry-instrumentation-openai-v2 2.3b0) tracing an agent loop written on the openai
client, against a stand-in model on 127.0.0.1, as installed (no content capture).

The run: the model looks a booking up (the tool answers), asks for a refund (the app's
tool fails and says "Error: ..."), then answers in text. The spans carry the model calls
but no messages: this version writes content only as log events, and only when
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true. admiss refuses the file (B031)
saying so. (2.4b0, which can put content on spans, needs an opentelemetry-util-genai newer
than the registry has.)

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
MODES = {"default": {}}


def run() -> dict:
    """One traced run, in this process (the environment picks the capture mode)."""
    sys.path.insert(0, str(HERE))
    from loopback import StandInModel, otlp_json, text, tool_call
    from openai import OpenAI
    from opentelemetry import trace
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)
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
    return otlp_json(exporter.get_finished_spans())


def main() -> None:
    if len(sys.argv) > 1:  # a child: one mode, its trace on stdout
        json.dump(run(), sys.stdout)
        return
    sys.path.insert(0, str(HERE))
    from loopback import write

    for mode, environment in MODES.items():
        child = subprocess.run([sys.executable, __file__, mode], env={**os.environ, **environment},
                               capture_output=True, text=True, check=True)
        write(FIXTURES / f"otel_openai_v2_{mode}.json", json.loads(child.stdout))


if __name__ == "__main__":
    main()
