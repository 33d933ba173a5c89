"""Writes the Inspect AI fixtures: one eval run as a ``.json`` log and as an ``.eval`` zip,
against the loopback stand-in model. Task ``weather`` (two samples) gives the model two
tools and generates until it answers in text; task ``weather_react`` runs the ``react``
agent, which ends by calling ``submit``. The tool ``book_flight`` raises ToolError, which
Inspect records as the tool message's ``error``.

Rerun (offline):
    pip install -e '.[inspect-ai]' openai
    python tests/traces/producers/inspect_ai_logs.py
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from inspect_ai import Task, eval, task
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import ToolError, tool

sys.path.insert(0, str(Path(__file__).parent))
from standin import serve  # noqa: E402

OUT = Path(__file__).parent.parent / "fixtures"


@tool
def get_weather():
    async def execute(city: str) -> str:
        """The weather in a city.

        Args:
            city: The city.
        """
        return f"sunny in {city}"

    return execute


@tool
def book_flight():
    async def execute(to: str) -> str:
        """Book a flight.

        Args:
            to: Where to.
        """
        raise ToolError(f"no seats left to {to}")

    return execute


@task
def weather() -> Task:
    return Task(dataset=[Sample(input="Weather in Paris, then book a flight?", target="sunny"),
                         Sample(input="Is it sunny in Paris? Book me a flight.", target="sunny")],
                solver=[use_tools([get_weather(), book_flight()]), generate()])


@task
def weather_react() -> Task:
    return Task(dataset=[Sample(input="Weather in Paris, then book a flight?", target="sunny")],
                solver=react(tools=[get_weather(), book_flight()]), message_limit=12)


def main() -> None:
    os.environ["OPENAI_BASE_URL"] = serve()
    os.environ["OPENAI_API_KEY"] = "standin"
    for log_format, suffix in (("json", ".json"), ("eval", ".eval")):
        folder = tempfile.mkdtemp()
        eval([weather(), weather_react()], model="openai/gpt-4.1-mini", log_dir=folder, log_format=log_format,
             display="none")
        for log in sorted(Path(folder).iterdir()):
            task_name = "react" if "weather-react" in log.name else "generate"
            shutil.copy(log, OUT / f"inspect_{task_name}{suffix}")
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
