"""Writes fixtures/adk_session_real.json (the session ADK keeps, as ADK dumps it) and the
OpenTelemetry spans (and log events) ADK writes, as OTLP JSON: a Google ADK (2.13.0) agent
running against a stand-in Gemini API on 127.0.0.1 that, as the Gemini API does, gives its
function calls no id (ADK gives each call an ``adk-...`` id of its own).

The run: the model looks a booking up (the tool answers), asks for a refund (the tool
answers ADK's documented error payload, {"status": "error", "error_message": ...}), then
answers in text. One file per telemetry mode:

- ``otel_adk.json``: ADK's default spans (ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=true), the
  spans alone: no messages on them.
- ``otel_adk_span_content.json``: OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental with
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY: each model call's messages on
  its span, each tool's arguments and result on its execute_tool span. A call is there
  twice, with different ids: the model's function-call part (``issue_refund_0``: ADK's
  fallback id, the part's name and place) and the execute_tool span (``adk-...``).
- ``otel_adk_events.json``: the same with EVENT_ONLY: the messages in one
  ``gen_ai.client.inference.operation.details`` log event per model call, spans and logs in
  one JSON object.

Regenerate (the packages are not in the test extra):
    pip install google-adk==2.13.0 opentelemetry-sdk opentelemetry-exporter-otlp-proto-common
    python tests/traces/producers/adk_agent.py
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
MODES = {
    "otel_adk": {"ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS": "true"},
    "otel_adk_span_content": {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
    "otel_adk_events": {**LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"},
}


def run() -> tuple[dict, dict]:
    """One run, in this process (the environment picks the telemetry mode): the session and
    the OTLP JSON export of its spans and log records."""
    sys.path.insert(0, str(HERE))
    os.environ.setdefault("GOOGLE_API_KEY", "not-a-key")
    from loopback import StandInModel, otlp_json, otlp_logs_json, text, tool_call
    from opentelemetry import _logs, trace
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    log_exporter = InMemoryLogRecordExporter()
    log_provider = LoggerProvider()
    log_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    _logs.set_logger_provider(log_provider)

    from google.adk.agents import Agent
    from google.adk.models.google_llm import Gemini
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    stand_in = StandInModel([tool_call("", "lookup_booking", {"booking_id": "NR-48213"}),
                             tool_call("", "issue_refund", {"booking_id": "NR-48213"}),
                             text("I could not issue the refund: the payment gateway timed out.")],
                            model="gemini-2.0-flash", gemini=True)

    def lookup_booking(booking_id: str) -> dict:
        """Look a booking up."""
        return {"status": "success", "booking_id": booking_id, "refundable": True}

    def issue_refund(booking_id: str) -> dict:
        """Refund a booking."""
        return {"status": "error", "error_message": "payment gateway timeout after 30s"}

    agent = Agent(name="booking_agent", model=Gemini(model="gemini-2.0-flash", base_url=stand_in.url),
                  instruction="You are a booking agent.", tools=[lookup_booking, issue_refund])
    sessions = InMemorySessionService()

    async def session_of_run() -> str:
        session = await sessions.create_session(app_name="bookings", user_id="u1")
        runner = Runner(agent=agent, app_name="bookings", session_service=sessions)
        message = types.Content(role="user", parts=[types.Part(text="Cancel NR-48213 and refund me.")])
        async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
            pass
        done = await sessions.get_session(app_name="bookings", user_id="u1", session_id=session.id)
        return done.model_dump_json(exclude_none=True)

    try:
        session = json.loads(asyncio.run(session_of_run()))
    finally:
        stand_in.close()
    export = otlp_json(exporter.get_finished_spans())
    if sys.argv[1] != "otel_adk":  # that mode's file is the spans alone
        export.update(otlp_logs_json(log_exporter.get_finished_logs()))
    return session, export


def main() -> None:
    if len(sys.argv) > 1:  # a child: one mode, its session and export on stdout
        json.dump(run(), sys.stdout)
        return
    sys.path.insert(0, str(HERE))
    from loopback import write

    for mode, environment in MODES.items():
        child = subprocess.run([sys.executable, __file__, mode], env={**os.environ, **environment},
                               capture_output=True, text=True, check=True)
        session, export = json.loads(child.stdout)
        if mode == "otel_adk":
            write(FIXTURES / "adk_session_real.json", session)
        write(FIXTURES / f"{mode}.json", export)


if __name__ == "__main__":
    main()
