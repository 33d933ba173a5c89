"""Writes fixtures/otel_pydantic_ai.json: a pydantic-ai agent instrumented with OpenTelemetry
(pydantic-ai's own InstrumentationSettings, the default data format), running against a
stand-in OpenAI-compatible model on 127.0.0.1.

The run: the model looks a booking up (the tool answers), asks for a refund (the tool
raises, so pydantic-ai records the failure on the tool's span), then answers in text.

Regenerate (the packages are not in the test extra):
    pip install 'pydantic-ai-slim[openai]' opentelemetry-sdk opentelemetry-exporter-otlp-proto-common
    python tests/traces/producers/pydantic_ai_agent.py
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"


def main() -> None:
    sys.path.insert(0, str(HERE))
    from loopback import StandInModel, otlp_json, text, tool_call, write
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    stand_in = StandInModel([tool_call("call_lk1", "lookup_booking", {"booking_id": "NR-48213"}),
                             tool_call("call_rf1", "issue_refund", {"booking_id": "NR-48213"}),
                             text("I could not issue the refund: the payment gateway timed out.")])
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=stand_in.url, api_key="not-a-key"))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    agent = Agent(model, system_prompt="You are a booking agent.")

    @agent.tool_plain
    def lookup_booking(booking_id: str) -> dict:
        """Look a booking up."""
        return {"booking_id": booking_id, "refundable": True}

    @agent.tool_plain
    def issue_refund(booking_id: str) -> str:
        """Refund a booking."""
        raise TimeoutError("payment gateway timeout after 30s")

    try:
        agent.run_sync("Cancel NR-48213 and refund me.")
    except Exception as error:  # the tool's exception ends the run; its spans are written
        print(f"the run ended with {type(error).__name__}: {error}", file=sys.stderr)
    finally:
        stand_in.close()
    write(FIXTURES / "otel_pydantic_ai.json", otlp_json(exporter.get_finished_spans()))


if __name__ == "__main__":
    main()
