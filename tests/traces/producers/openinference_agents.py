"""Writes the second OpenInference fixture: the OpenInference instrumentation of the OpenAI
Agents SDK (its LLM, TOOL and AGENT spans, all written by the instrumentation) for the run
of ``agents_sdk.py`` beside this file, against the loopback stand-in model, encoded as OTLP
JSON by the OpenTelemetry OTLP encoder (ids in hex, as OTLP JSON writes them).

Rerun (offline; none of these is a test dependency):
    pip install openai-agents openinference-instrumentation-openai-agents opentelemetry-sdk \
        opentelemetry-exporter-otlp-proto-common
    python tests/traces/producers/openinference_agents.py
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, Runner
from google.protobuf.json_format import MessageToDict
from openai import AsyncOpenAI
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

sys.path.insert(0, str(Path(__file__).parent))
from agents_sdk import book_flight, get_weather  # noqa: E402
from openinference_openai import hex_ids  # noqa: E402
from standin import serve  # noqa: E402

OUT = Path(__file__).parent.parent / "fixtures" / "openinference_agents.json"


async def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    client = AsyncOpenAI(base_url=serve(), api_key="standin")
    agent = Agent(name="travel", instructions="Help with travel.", tools=[get_weather, book_flight],
                  model=OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client))
    await Runner.run(agent, "What is the weather in Paris? Then book me a flight there.")
    provider.force_flush()
    encoded = hex_ids(MessageToDict(encode_spans(exporter.get_finished_spans())))
    OUT.write_text(json.dumps(encoded, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
