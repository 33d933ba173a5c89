"""OpenInference spans as its instrumentations wrote them (tests/traces/producers/
openinference_*.py), and each error signal a TOOL span gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import admiss
from admiss.errors import TraceError
from admiss.traces.read import read_trace

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("name", ["openinference.json", "openinference_agents.json"])
def test_each_fixture_joins_tool_spans_to_the_calls_the_model_made(name):
    trace = admiss.read_trace(FIXTURES / name)
    assert trace.format == "openinference" and trace.model == "gpt-4.1-mini"
    calls = [s for s in trace.steps if s.type == "tool_call"]
    assert [(c.tool_name, c.outcome, c.ref.tool_call_id) for c in calls] == [
        ("get_weather", "ok", "call_weather_1"), ("book_flight", "error", "call_book_1")]
    assert all(c.result_ref.path != c.ref.path for c in calls)  # the call and its TOOL span: both kept
    assert trace.final_answer == "It is sunny in Paris. I could not book the flight."


def attribute(key, value):
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: value}}


def export(*spans):
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def span(span_id, start, attributes, **extra):
    return {"spanId": span_id, "startTimeUnixNano": str(start),
            "attributes": [attribute(k, v) for k, v in attributes.items()], **extra}


def tool(span_id, start, output=None, **extra):
    attributes = {"openinference.span.kind": "TOOL", "tool.name": "book", "input.value": "{\"to\": \"Paris\"}"}
    if output is not None:
        attributes["output.value"] = output
    return span(span_id, start, attributes, **extra)


def test_an_error_status_is_an_error_with_its_message():
    [call] = read_trace(export(tool("t1", 1, "x", status={"code": "STATUS_CODE_ERROR",
                                                          "message": "RuntimeError: no seats"}))).steps
    assert (call.tool_name, call.args, call.outcome, call.error) == (
        "book", {"to": "Paris"}, "error", "RuntimeError: no seats")


def test_an_exception_event_is_an_error():
    event = {"name": "exception", "attributes": [attribute("exception.type", "TimeoutError"),
                                                 attribute("exception.message", "took too long")]}
    [call] = read_trace(export(tool("t1", 1, events=[event]))).steps
    assert (call.outcome, call.error) == ("error", "TimeoutError: took too long")


def test_an_error_output_with_an_ok_status_is_still_an_error():
    [call] = read_trace(export(tool("t1", 1, "Error: no seats left"))).steps
    assert (call.outcome, call.error) == ("error", "Error: no seats left")
    [call] = read_trace(export(tool("t1", 1, "booked"))).steps
    assert call.outcome == "ok"


def test_a_tool_span_with_no_output_proves_nothing():
    [call] = read_trace(export(tool("t1", 1))).steps
    assert call.outcome == "no_result"


def test_a_tool_message_answers_a_call_no_tool_span_answered():
    llm = {"openinference.span.kind": "LLM", "llm.model_name": "m",
           "llm.output_messages.0.message.role": "assistant",
           "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
           "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "book",
           "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{}"}
    later = {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "assistant",
             "llm.input_messages.1.message.role": "tool", "llm.input_messages.1.message.tool_call_id": "c1",
             "llm.input_messages.1.message.content": "Error: card declined",
             "llm.output_messages.0.message.role": "assistant",
             "llm.output_messages.0.message.contents.0.message_content.type": "text",
             "llm.output_messages.0.message.contents.0.message_content.text": "Sorry."}
    trace = read_trace(export(span("b", 2, later), span("a", 1, llm)))
    call, answer = trace.steps
    assert (call.outcome, call.error, call.ref.span_id, call.result_ref.span_id) == (
        "error", "Error: card declined", "a", "b")
    assert (answer.type, answer.text) == ("final_answer", "Sorry.")


def test_otlp_spans_without_openinference_attributes_are_not_openinference():
    genai = export(span("a", 1, {"gen_ai.operation.name": "chat"}))
    with pytest.raises(TraceError) as raised:  # detected as GenAI spans, refused there for holding no content
        read_trace(genai)
    assert raised.value.diagnostics[0].code == "B031"
    with pytest.raises(TraceError) as raised:  # named, it is refused, not read as an empty run
        read_trace(genai, "t.json", "openinference")
    assert raised.value.diagnostics[0].message == "resourceSpans: no span has an openinference.span.kind attribute"


def test_a_tool_span_without_a_name_is_a_located_error():
    with pytest.raises(TraceError) as raised:
        read_trace(export(span("a", 1, {"openinference.span.kind": "TOOL"})), "t.json")
    assert raised.value.diagnostics[0].message.startswith("resourceSpans[0].scopeSpans[0].spans[0].attributes:")
