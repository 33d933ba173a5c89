"""Writes fixtures/adk_session_real.json (the session ADK keeps, as ADK dumps it) and
fixtures/otel_adk.json (the OpenTelemetry spans ADK writes, as an OTLP JSON export): a
Google ADK agent running against a stand-in Gemini API on 127.0.0.1.

The run: the model looks a booking up (the tool answers), asks for a refund (the tool
answers ADK's documented error payload, {"status": "error", "error_message": ...}), then
answers in text.

Regenerate (the packages are not in the test extra):
    pip install google-adk opentelemetry-sdk opentelemetry-exporter-otlp-proto-common
    python tests/traces/producers/adk_agent.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"


def main() -> None:
    sys.path.insert(0, str(HERE))
    os.environ.setdefault("GOOGLE_API_KEY", "not-a-key")
    os.environ.setdefault("ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS", "true")
    from loopback import StandInModel, otlp_json, text, tool_call, write
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    from google.adk.agents import Agent
    from google.adk.models.google_llm import Gemini
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    stand_in = StandInModel([tool_call("call_lk1", "lookup_booking", {"booking_id": "NR-48213"}),
                             tool_call("call_rf1", "issue_refund", {"booking_id": "NR-48213"}),
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

    async def run() -> str:
        session = await sessions.create_session(app_name="bookings", user_id="u1")
        runner = Runner(agent=agent, app_name="bookings", session_service=sessions)
        message = types.Content(role="user", parts=[types.Part(text="Cancel NR-48213 and refund me.")])
        async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
            pass
        done = await sessions.get_session(app_name="bookings", user_id="u1", session_id=session.id)
        return done.model_dump_json(exclude_none=True)

    try:
        session = json.loads(asyncio.run(run()))
    finally:
        stand_in.close()
    write(FIXTURES / "adk_session_real.json", session)
    write(FIXTURES / "otel_adk.json", otlp_json(exporter.get_finished_spans()))


if __name__ == "__main__":
    main()
