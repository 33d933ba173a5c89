"""Writes the OpenAI Agents SDK fixtures: one run's ``to_input_list()`` items, its trace
export (what the SDK's backend exporter sends: ``{"data": [trace, spans...]}``) and its
RunState (``to_state().to_json()``), against the loopback stand-in model.

Rerun (offline; the SDK is not a test dependency):
    pip install openai-agents
    python tests/traces/producers/agents_sdk.py
The tool ``book_flight`` raises, so the SDK replaces its output with its default failure text.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_trace_processors
from agents.tracing import TracingProcessor
from openai import AsyncOpenAI

sys.path.insert(0, str(Path(__file__).parent))
from standin import serve  # noqa: E402

OUT = Path(__file__).parent.parent / "fixtures"


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@function_tool
def book_flight(to: str) -> str:
    """Book a flight."""
    raise RuntimeError(f"no seats left to {to}")


class Collect(TracingProcessor):
    """Keeps each finished trace and span as the SDK exports it."""

    def __init__(self) -> None:
        self.items: list = []

    def on_trace_start(self, trace) -> None:
        pass

    def on_trace_end(self, trace) -> None:
        self.items.append(trace.export())

    def on_span_start(self, span) -> None:
        pass

    def on_span_end(self, span) -> None:
        self.items.append(span.export())

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


async def main() -> None:
    collect = Collect()
    set_trace_processors([collect])
    client = AsyncOpenAI(base_url=serve(), api_key="standin")
    agent = Agent(name="travel", instructions="Help with travel.", tools=[get_weather, book_flight],
                  model=OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=client))
    result = await Runner.run(agent, "What is the weather in Paris? Then book me a flight there.")
    write("agents_sdk_items.json", result.to_input_list())
    write("agents_sdk_state.json", result.to_state().to_json())
    write("agents_sdk_trace.json", {"data": [item for item in collect.items if item is not None]})


def write(name: str, value) -> None:
    (OUT / name).write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
