"""Writes the OpenInference fixture: the OpenInference OpenAI instrumentation's spans of a
small tool-calling loop (the official ``openai`` client against the loopback stand-in
model), encoded as OTLP JSON by the OpenTelemetry OTLP encoder, as an OTLP/HTTP JSON
exporter or a collector's file exporter writes them. The loop runs the tools itself, as an
application does, in TOOL spans it opens with OpenInference's attributes
(``openinference.span.kind`` TOOL, ``tool.name``, ``input.value``, ``output.value``; the
tool that raises records the exception and an ERROR status, as OTel's ``start_as_current_span``
does).

Rerun (offline; none of these is a test dependency):
    pip install openinference-instrumentation-openai opentelemetry-sdk \
        opentelemetry-exporter-otlp-proto-common openai
    python tests/traces/producers/openinference_openai.py
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

sys.path.insert(0, str(Path(__file__).parent))
from standin import serve  # noqa: E402

OUT = Path(__file__).parent.parent / "fixtures" / "openinference.json"
TOOLS = [{"type": "function", "function": {"name": name, "description": name, "parameters": {
    "type": "object", "properties": {key: {"type": "string"}}, "required": [key]}}}
    for name, key in (("get_weather", "city"), ("book_flight", "to"))]


def get_weather(city: str) -> str:
    return f"sunny in {city}"


def book_flight(to: str) -> str:
    raise RuntimeError(f"no seats left to {to}")


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("travel-app")
    client = OpenAI(base_url=serve(), api_key="standin")
    messages = [{"role": "user", "content": "What is the weather in Paris? Then book me a flight there."}]
    with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
        for _ in range(3):
            reply = client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                break
            for call in message.tool_calls:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": run_tool(tracer, call)})
    provider.force_flush()
    encoded = hex_ids(MessageToDict(encode_spans(exporter.get_finished_spans())))
    OUT.write_text(json.dumps(encoded, indent=1) + "\n", encoding="utf-8")


def hex_ids(export: dict) -> dict:
    """OTLP JSON writes span and trace ids as hex; protobuf's JSON mapping writes bytes as base64."""
    for resource in export["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return export


def run_tool(tracer, call) -> str:
    attributes = {"openinference.span.kind": "TOOL", "tool.name": call.function.name,
                  "tool_call.id": call.id, "input.value": call.function.arguments,
                  "input.mime_type": "application/json"}
    try:
        with tracer.start_as_current_span(call.function.name, attributes=attributes) as span:
            output = {"get_weather": get_weather, "book_flight": book_flight}[call.function.name](
                **json.loads(call.function.arguments))
            span.set_attribute("output.value", output)
            return output
    except RuntimeError as error:
        return f"Error: {error}"


if __name__ == "__main__":
    main()
