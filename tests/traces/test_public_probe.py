"""A probe of public traces that no reader was written against (tests/traces/fixtures/public/,
sources in SOURCES.md): each read through `admiss import`, and held to what the file shows.
The expected calls, failures and final answers were read off each file by hand (its TOOL
observations, the SPANs that run a tool a generation asked for, or tool_use blocks, their
outputs, its last model turn), not taken from admiss."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PUBLIC = Path(__file__).parent / "fixtures" / "public"
RUBRIC = Path(__file__).parent / "producers" / "any.rubric"

# file: (tool calls in order, those that failed, the final answer's start or None)
EXPECTED = {
    # Agno, Koog and LangGraph run each tool in a SPAN observation after the GENERATION that
    # asked for it (its output's tool_calls: same name, and the same id or arguments).
    "langfuse_agno_2025_06_11.trace.json": (
        ["duckduckgo_search"], [], "To find out what's currently trending on Twitter, you can visit"),
    # Both tools start at one instant: ties keep the file's order (ByeTool's span first).
    "langfuse_koog_2025_08_26.trace.json": (
        ["ByeTool", "HelloTool"], [], "Hello my darling Bob! And, bye my dear Bob!"),
    "langfuse_langgraph_js_2025_10_30.trace.json": (["get_weather"], [], "It's always sunny in San Francisco!"),
    "langfuse_langgraph_python_2025_08_22.trace.json": (
        ["Web-Search"], [], 'The search for "example" primarily leads to the website'),
    "langfuse_autogen_2025_06_06.trace.json": ([], [], "Hello World!"),
    "langfuse_claude_agent_2025_12_22.trace.json": (
        ["mcp__weather__get_weather", "mcp__weather__get_weather"], [], "Great! Here's the current weather for both"),
    "langfuse_crewai_2025_07_11.trace.json": ([], [], "I now can give a great answer"),
    # The report tool answers {"response_status": "Error", ...}; the run ends on its
    # final_result output tool, so it has no final answer.
    "langfuse_csharp_agent_with_gemini_2026_03_09.trace.json": (
        ["get_custom_report", "final_result"], ["get_custom_report"], None),
    "langfuse_google_gemini_2025_08_01.trace.json": ([], [], "**Langfuse** is an **open-source observability"),
    "langfuse_llamaindex_2025_06_05.trace.json": ([], [], "Langfuse is a tool designed to help developers"),
    "langfuse_pydantic_ai_2025_06_06.trace.json": ([], [], "Langfuse is a tool designed for observability"),
    "langfuse_pydantic_ai_tools_2025_06_06.trace.json": ([], [], "Langfuse is a tool designed for observability"),
    "langfuse_pydantic_ai_with_gemini_2025_12_24.trace.json": ([], [], '{"answer": "2"'),
    "langfuse_vercel_aisdk_2025_11_17.trace.json": (["getWeather"], [], None),  # ends on the tool's result
    "langfuse_vertex_ai_2025_08_01.trace.json": ([], [], "**Langfuse** is an **open-source observability"),
    "claude_code_session_b.jsonl": ([], [], None),  # ends on the user's message
    "claude_code_todowrite_examples.jsonl": (["TodoWrite"] * 3, [], None),  # ends on a tool result
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_public_trace_reads_as_its_file_shows(admiss_cli, name):
    calls, failed, final = EXPECTED[name]
    ran = admiss_cli("import", "--rubric", RUBRIC, PUBLIC / name)
    assert ran.code == 0, ran.err
    bundle = json.loads(ran.out)
    tools = [e for e in bundle["evidence"] if e["kind"] in ("procedurally_sound_tool_call", "flawed_tool_call")]
    assert [e["source_label"] for e in tools] == calls
    assert [e["source_label"] for e in tools if e["kind"] == "flawed_tool_call"] == failed
    if final is None:
        assert bundle.get("output") is None
    else:
        assert bundle["output"].startswith(final)
    assert bundle["trace"]["steps"] > 0  # never an empty read
