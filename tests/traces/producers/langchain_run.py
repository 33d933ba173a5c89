"""Writes the LangChain fixtures: a tool-calling loop of ``ChatOpenAI`` (against the loopback
stand-in model) with two ``@tool`` tools, ``book_flight`` raising ToolException (LangChain
then answers with a ToolMessage of ``status`` "error"). It writes the conversation as
``messages_to_dict`` gives it, and the run tree the LangChain tracer built for the same run
(``RunCollectorCallbackHandler``: LangSmith's Run schema), flat, each run naming its
``parent_run_id``, as LangSmith's run listing gives a trace's runs.

Rerun (offline; LangChain is not a test dependency):
    pip install langchain-core langchain-openai
    python tests/traces/producers/langchain_run.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from langchain_core.messages import HumanMessage, messages_to_dict
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import ToolException, tool
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langchain_openai import ChatOpenAI

sys.path.insert(0, str(Path(__file__).parent))
from standin import serve  # noqa: E402

OUT = Path(__file__).parent.parent / "fixtures"


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def book_flight(to: str) -> str:
    """Book a flight."""
    raise ToolException(f"no seats left to {to}")


book_flight.handle_tool_error = True
TOOLS = {t.name: t for t in (get_weather, book_flight)}


def main() -> None:
    model = ChatOpenAI(model="gpt-4.1-mini", base_url=serve(), api_key="standin").bind_tools(list(TOOLS.values()))

    def agent(question: str, config) -> list:
        messages = [HumanMessage(question)]
        for _ in range(3):
            reply = model.invoke(messages, config)
            messages.append(reply)
            if not reply.tool_calls:
                break
            messages += [TOOLS[call["name"]].invoke(call, config) for call in reply.tool_calls]
        return messages

    collector = RunCollectorCallbackHandler()
    messages = RunnableLambda(agent, name="travel_agent").invoke(
        "What is the weather in Paris? Then book me a flight there.", {"callbacks": [collector]})
    write("langchain_messages.json", messages_to_dict(messages))
    write("langsmith_runs.json", [json.loads(run.model_dump_json(exclude={"child_runs"}))
                                  for run in flat(collector.traced_runs)])


def flat(runs: list) -> list:
    """The runs and their descendants, parents first: flat, each naming its parent_run_id,
    as LangSmith lists a trace's runs."""
    out = []
    for run in runs:
        out.append(run)
        out += flat(run.child_runs)
    return out


def write(name: str, value) -> None:
    (OUT / name).write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
