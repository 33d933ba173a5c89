"""Writes fixtures/otel_many_traces_*.jsonl: OTLP/JSON files holding several traces, as the
OpenTelemetry SDK's own file exporter (opentelemetry-exporter-otlp-json-file 0.66b1,
``FileSpanExporter`` and ``FileLogExporter`` writing JSON Lines into one file) writes them, of
agent loops on the openai client traced by the OpenTelemetry OpenAI instrumentation
(opentelemetry-instrumentation-openai-v2 2.3b0, content captured as log events), each agent
against its own stand-in model on 127.0.0.1.

Two agents work at once, their steps interleaved (one model call of one, then one of the
other), so the file holds their spans and log records interleaved, a line per export (each
span and record is exported as it ends):

- the booking agent looks a booking up (the tool answers), asks for a refund (the tool fails:
  ``Error: ...``), then answers in text;
- the weather agent asks for the weather (the tool answers), then answers in text.

Modes, one file each:

- ``agents.jsonl``: each agent's run is wrapped in an ``invoke_agent`` span, as agent
  frameworks do: one trace per run (2 traces).
- ``calls.jsonl``: no span around the loops: each model call is a trace of its own (5
  traces), the next call's request carrying the conversation so far.

Regenerate (the packages are not in the test extra):
    pip install openai opentelemetry-sdk opentelemetry-instrumentation-openai-v2==2.3b0 'wrapt<2' \
        opentelemetry-exporter-otlp-json-file==0.66b1
    python tests/traces/producers/otel_many_traces.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"

BOOKING = {
    "system": "You are a booking agent.",
    "user": "Cancel NR-48213 and refund me.",
    "replies": [("call_lk1", "lookup_booking", {"booking_id": "NR-48213"}),
                ("call_rf1", "issue_refund", {"booking_id": "NR-48213", "amount_eur": 84.5}),
                "I could not issue the refund: the payment gateway timed out."],
    "results": {"lookup_booking": json.dumps({"booking_id": "NR-48213", "refundable": True}),
                "issue_refund": "Error: payment gateway timeout after 30s"},
}
WEATHER = {
    "system": "You are a weather assistant.",
    "user": "What is the weather in Lisbon?",
    "replies": [("call_wx1", "get_weather", {"city": "Lisbon"}), "It is sunny in Lisbon, 24 degrees."],
    "results": {"get_weather": json.dumps({"city": "Lisbon", "sky": "sunny", "celsius": 24})},
}


def run(path: str, wrapped: bool) -> None:
    """Both agents, their model calls interleaved, traced into the file at ``path``."""
    sys.path.insert(0, str(HERE))
    from loopback import StandInModel, text, tool_call
    from openai import OpenAI
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.json.file import FileSpanExporter
    from opentelemetry.exporter.otlp.json.file._log_exporter import FileLogExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    out = open(path, "w", encoding="utf-8")  # one stream: spans and records on lines of their own
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(stream=out)))
    trace.set_tracer_provider(provider)
    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(FileLogExporter(stream=out)))
    OpenAIInstrumentor().instrument(tracer_provider=provider, logger_provider=logs)
    tracer = trace.get_tracer("agent-app")

    agents = []
    for agent in (BOOKING, WEATHER):
        model = StandInModel([tool_call(*reply) if isinstance(reply, tuple) else text(reply)
                              for reply in agent["replies"]])
        tools = [{"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}
                 for name in agent["results"]]
        span = tracer.start_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}) \
            if wrapped else None
        agents.append({"spec": agent, "model": model, "tools": tools, "span": span, "done": False,
                       "client": OpenAI(base_url=model.url, api_key="not-a-key", max_retries=0),
                       "messages": [{"role": "system", "content": agent["system"]},
                                    {"role": "user", "content": agent["user"]}]})
    try:
        while not all(agent["done"] for agent in agents):
            for agent in agents:
                if not agent["done"]:
                    step(agent, trace)
    finally:
        for agent in agents:
            agent["model"].close()
        provider.shutdown()
        logs.shutdown()
        out.close()


def step(agent: dict, trace) -> None:
    """One model call of ``agent`` (inside its run's span, if it has one), and its tools' results."""
    context = trace.use_span(agent["span"], end_on_exit=False) if agent["span"] is not None else None
    if context is not None:
        context.__enter__()
    try:
        reply = agent["client"].chat.completions.create(model="gpt-4o-mini", messages=agent["messages"],
                                                        tools=agent["tools"]).choices[0]
    finally:
        if context is not None:
            context.__exit__(None, None, None)
    agent["messages"].append(reply.message.model_dump(exclude_none=True))
    if not reply.message.tool_calls:
        agent["done"] = True
        if agent["span"] is not None:
            agent["span"].end()
        return
    for call in reply.message.tool_calls:
        agent["messages"].append({"role": "tool", "tool_call_id": call.id,
                                  "content": agent["spec"]["results"][call.function.name]})


def main() -> None:
    if len(sys.argv) > 1:  # a child: one mode
        run(sys.argv[2], sys.argv[1] == "agents")
        return
    for mode in ("agents", "calls"):
        subprocess.run([sys.executable, __file__, mode, str(FIXTURES / f"otel_many_traces_{mode}.jsonl")],
                       env={**os.environ, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}, check=True)


if __name__ == "__main__":
    main()
