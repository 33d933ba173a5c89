"""OpenAI Agents SDK: items, RunState and trace export, as the SDK wrote them
(tests/traces/producers/agents_sdk.py), and each error signal the SDK gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import admiss
from admiss.errors import TraceError
from admiss.traces.read import read_trace

FIXTURES = Path(__file__).parent / "fixtures"
FAILURE_TEXT = "An error occurred while running the tool. Please try again."  # agents.tool.default_tool_error_function


@pytest.mark.parametrize("name", ["items", "state", "trace"])
def test_each_fixture_gives_the_failed_call_and_the_answer(name):
    trace = admiss.read_trace(FIXTURES / f"agents_sdk_{name}.json")
    assert trace.format == "agents_sdk" and trace.model == "gpt-4.1-mini"
    calls = [(s.tool_name, s.outcome) for s in trace.steps if s.type == "tool_call"]
    assert calls == [("get_weather", "ok"), ("book_flight", "error")]
    assert trace.final_answer == "It is sunny in Paris. I could not book the flight."


def items(output):
    return [{"role": "user", "content": "book"},
            {"type": "function_call", "call_id": "c1", "name": "book", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": output}]


def test_the_default_failure_text_is_an_error():
    [_, call] = read_trace(items(FAILURE_TEXT)).steps
    assert (call.outcome, call.error) == ("error", FAILURE_TEXT)
    [_, call] = read_trace(items("booked: seat 4A")).steps
    assert call.outcome == "ok"


def test_the_failure_text_marks_a_fully_typed_item_list_as_the_sdk_s():
    typed = items(FAILURE_TEXT)
    typed[0] = {"type": "message", "role": "user", "content": "book"}
    trace = read_trace(typed)
    assert trace.format == "agents_sdk" and trace.steps[1].outcome == "error"


def test_other_outputs_follow_the_rule_for_formats_without_an_error_flag():
    [_, call] = read_trace(items("{\"error\": \"no seats\"}")).steps
    assert (call.outcome, call.error) == ("error", "no seats")


def span(span_id, started, data, error=None):
    return {"object": "trace.span", "id": span_id, "trace_id": "trace_1", "parent_id": None,
            "started_at": started, "ended_at": started, "span_data": data, "error": error}


def test_a_function_span_error_is_an_error_with_its_reason():
    export = {"data": [
        span("s2", "2026-01-01T00:00:02", {"type": "function", "name": "book", "input": "{}", "output": "custom text"},
             {"message": "Error running tool (non-fatal)", "data": {"tool_name": "book", "error": "no seats"}}),
        span("s1", "2026-01-01T00:00:01", {"type": "function", "name": "weather", "input": "{\"city\": \"Paris\"}",
                                           "output": "sunny"}),
        {"object": "trace", "id": "trace_1", "workflow_name": "Agent workflow"},
    ]}
    weather, book = read_trace(export).steps  # in order of started_at
    assert (weather.tool_name, weather.args, weather.outcome, weather.ref.span_id) == (
        "weather", {"city": "Paris"}, "ok", "s1")
    assert (book.outcome, book.error, book.ref.path) == ("error", "Error running tool (non-fatal): no seats", "data[0]")


def test_a_function_span_without_output_has_no_result():
    [call] = read_trace({"data": [span("s1", "t", {"type": "function", "name": "f", "input": None,
                                                   "output": None})]}).steps
    assert call.outcome == "no_result"


def test_a_response_span_holds_no_content_and_says_so():
    trace = read_trace({"data": [span("s1", "t", {"type": "response", "response_id": "resp_1"})]})
    assert trace.steps == () and trace.skipped[0].reason == "response span (holds only the response id)"


def test_a_runstate_in_javascript_spelling_reads_too():
    state = json.loads((FIXTURES / "agents_sdk_state.json").read_text())
    camel = {"$schemaVersion": "1.0", "originalInput": state["original_input"],
             "generatedItems": [{"type": item["type"], "rawItem": item["raw_item"]} for item in state["generated_items"]]}
    trace = read_trace(camel)
    assert [s.outcome for s in trace.steps if s.type == "tool_call"] == ["ok", "error"]
    assert trace.steps[1].ref.path == "generatedItems[0].rawItem"


def test_a_broken_item_is_a_located_error():
    with pytest.raises(TraceError) as raised:
        read_trace([{"role": "user", "content": "x"}, {"type": "function_call", "name": "f", "arguments": "{}"}], "t")
    assert raised.value.diagnostics[0].message == "$[1].call_id: missing"
