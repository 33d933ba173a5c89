"""OpenTelemetry GenAI spans: the realistic OTLP export read step by step, and bad traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import admiss
from admiss.errors import TraceError
from admiss.traces.read import read_trace
from admiss.traces.steps import Skipped, Step, StepRef

FIXTURE = Path(__file__).parent / "fixtures" / "otel_genai.json"
SPANS = "resourceSpans[0].scopeSpans[0].spans"
CHAT1, CHAT2, CHAT3 = "0f1e2d3c4b5a6978", "2b3c4d5e6f708192", "4d5e6f7081920314"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"  # every span's traceId in the fixture


def at(span, attribute=None, rest=""):
    return f"{SPANS}[{span}]" + (f'.attributes["{attribute}"]' if attribute else "") + rest


def ref(path, span_id, index=None, call_id=None):
    return StepRef("otel_genai", path, message_index=index, tool_call_id=call_id, span_id=span_id, trace_id=TRACE)


def test_fixture_reads_to_exact_steps():
    trace = admiss.read_trace(FIXTURE)
    assert (trace.format, trace.model) == ("otel_genai", "gpt-4.1-2025-04-14")
    assert list(trace.steps) == [
        Step("system", ref(at(3, "gen_ai.system_instructions"), CHAT1),
             text="You are Skyline Air's rebooking agent. Only state changes a tool confirmed."),
        Step("user", ref(at(3, "gen_ai.input.messages", "[0]"), CHAT1, 0),
             text="Please cancel my flight on booking SKY4QZ and refund it to my card."),
        Step("tool_call", ref(at(3, "gen_ai.output.messages", "[0].parts[0]"), CHAT1, 0, "call_VZ1x8"),
             tool_name="get_booking", args={"record_locator": "SKY4QZ"},
             result={"record_locator": "SKY4QZ", "fare_class": "Y", "refundable": True}, outcome="ok",
             result_ref=ref(at(0), "1a2b3c4d5e6f7081", call_id="call_VZ1x8")),
        Step("reasoning", ref(at(4, "gen_ai.output.messages", "[0].parts[0]"), CHAT2, 0),
             text="Refundable fare, so cancel with refund to the original form of payment."),
        Step("tool_call", ref(at(4, "gen_ai.output.messages", "[0].parts[1]"), CHAT2, 0, "call_Hq27c"),
             tool_name="cancel_booking", args={"record_locator": "SKY4QZ", "refund": "original_payment"},
             outcome="error", error="TimeoutError: reservation service did not answer in 5s",
             result_ref=ref(at(1), "3c4d5e6f70819203", call_id="call_Hq27c")),
        Step("final_answer", ref(at(5, "gen_ai.output.messages", "[0]"), CHAT3, 0),
             text="Booking SKY4QZ is cancelled and the full fare will be refunded to your card within 7 days."),
    ]
    assert trace.skipped == (
        Skipped(ref(at(2), "a1b2c3d4e5f60718"), "invoke_agent span"),
        Skipped(ref(at(4, "gen_ai.system_instructions"), CHAT2), "the system instructions already read"),
        Skipped(ref(at(4, "gen_ai.input.messages", "[2].parts[0]"), CHAT2, 2, "call_VZ1x8"),
                "a result its execute_tool span already gave"),
        Skipped(ref(at(5, "gen_ai.system_instructions"), CHAT3), "the system instructions already read"),
        Skipped(ref(at(5, "gen_ai.input.messages", "[4].parts[0]"), CHAT3, 4, "call_Hq27c"),
                "a result its execute_tool span already gave"),
    )


def attributes(**values):
    return [{"key": key, "value": value} for key, value in values.items()]


def export(*spans):
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}


def tool_span(start="1", status=None, **extra):
    span = {"spanId": "s" + start, "startTimeUnixNano": start, "attributes": attributes(**{
        "gen_ai.operation.name": {"stringValue": "execute_tool"}, "gen_ai.tool.name": {"stringValue": "refund"},
        **extra})}
    if status is not None:
        span["status"] = status
    return span


@pytest.mark.parametrize("span, outcome, error", [
    (tool_span(status={"code": "STATUS_CODE_ERROR"}), "error", "status ERROR"),
    (tool_span(status={"code": 2, "message": "boom"}), "error", "boom"),
    (tool_span(**{"error.type": {"stringValue": "_OTHER"}}), "error", "_OTHER"),
    # Content capture off: the status still says whether the tool ran (once: "no result").
    (tool_span(status={"code": 1}), "no_result", "no result recorded: the span's status OK says the tool ran "
     "without an error; what it returned was not captured"),
    (tool_span(), "no_result", "no result recorded, and the span sets no status"),
    (tool_span(**{"gen_ai.tool.call.result": {"kvlistValue": {"values": [
        {"key": "refund_id", "value": {"stringValue": "R-1"}}, {"key": "amount", "value": {"intValue": "40"}}]}}}),
     "ok", None),
    (tool_span(**{"gen_ai.tool.call.arguments": {"stringValue": "{\"amount\": "},
                  "gen_ai.tool.call.result": {"stringValue": "done"}}), "bad_args", "arguments are not valid JSON"),
])
def test_tool_span_outcomes(span, outcome, error):
    [step] = read_trace(export(span), "t.json").steps
    assert (step.outcome, step.error) == (outcome, error)
    assert step.ref.path == f"{SPANS}[0]" and step.ref.span_id == "s1"


def test_two_tool_spans_for_one_call_id_are_two_calls():
    # ADK numbers tool-call ids per model response, so an id comes back once answered.
    result = {"gen_ai.tool.call.id": {"stringValue": "c1"}, "gen_ai.tool.call.result": {"stringValue": "ok"}}
    steps = read_trace(export(tool_span("1", **result), tool_span("2", **result)), "t.json").steps
    assert [(s.ref.path, s.outcome) for s in steps] == [(f"{SPANS}[0]", "ok"), (f"{SPANS}[1]", "ok")]


def test_structured_values_and_results_on_events():
    span = tool_span(**{"gen_ai.tool.call.arguments": {"kvlistValue": {"values": [
        {"key": "ids", "value": {"arrayValue": {"values": [{"intValue": 7}, {"doubleValue": 1.5}]}}}]}}})
    span["events"] = [{"name": "gen_ai.tool.result", "attributes": attributes(**{
        "gen_ai.tool.call.result": {"stringValue": "{\"refunded\": true}"}})}]
    [step] = read_trace(export(span), "t.json").steps
    assert (step.args, step.result, step.outcome) == ({"ids": [7, 1.5]}, {"refunded": True}, "ok")


def first_error(value):
    with pytest.raises(TraceError) as caught:
        read_trace(value, "t.json", "otel_genai")
    return caught.value.diagnostics[0].render().split("\n")[0]


def chat_span(inputs):
    return {"spanId": "c", "startTimeUnixNano": "5", "attributes": attributes(**{
        "gen_ai.operation.name": {"stringValue": "chat"}, "gen_ai.input.messages": {"stringValue": inputs}})}


@pytest.mark.parametrize("value, message", [
    (export(chat_span(json.dumps([{"role": "tool", "parts": [{"type": "tool_call_response", "id": "x", "response": 1}]}]))),
     f"B022 {SPANS}[0].attributes[\"gen_ai.input.messages\"][0].parts[0].id: a tool result for no tool call before it "
     "(id 'x')"),
    (export(chat_span("[{")), f"B021 {SPANS}[0].attributes[\"gen_ai.input.messages\"]: not valid JSON"),
    (export(chat_span("{}")), f"B021 {SPANS}[0].attributes[\"gen_ai.input.messages\"]: must be an array, not an object"),
    (export({"startTimeUnixNano": "soon"}), f"B021 {SPANS}[0].startTimeUnixNano: must be a number of nanoseconds, "
                                            "not the text 'soon'"),
    # "²" passes str.isdigit and int() refuses it; int() refuses 5,000 digits too.
    (export({"startTimeUnixNano": "²"}), f"B021 {SPANS}[0].startTimeUnixNano: must be a number of nanoseconds, "
                                         "not the text '²'"),
    (export({"startTimeUnixNano": "9" * 5000}), f"B021 {SPANS}[0].startTimeUnixNano: must be a number of "
                                                f"nanoseconds, not the text '{'9' * 199}…'"),
    (export(tool_span(**{"gen_ai.tool.call.result": {"stringValue": "Error: x"}}) | {"attributes": attributes(**{
        "gen_ai.operation.name": {"stringValue": "execute_tool"}, "gen_ai.tool.name": {"stringValue": "refund"}})
        + attributes(**{"gen_ai.tool.name": {"stringValue": "other"}})}),
     f"B021 {SPANS}[0].attributes[2].key: attribute 'gen_ai.tool.name' given twice in one attribute list"),
    (export({"attributes": attributes(**{"gen_ai.operation.name": {"stringValue": "chat"}, "gen_ai.output.messages": {
        "stringValue": '[{"role": "assistant", "parts": [{"type": "text", "content": "a", "content": "b"}]}]'}})}),
     f"B021 {SPANS}[0].attributes[\"gen_ai.output.messages\"]: its JSON gives the key at $[0].parts[0].content twice "
     "in one object"),
    (export({"attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}]}),
     f"B021 {SPANS}[0].attributes: no gen_ai.tool.name string on an execute_tool span"),
    (export({"attributes": [{"key": "a", "value": {"mapValue": 1}}]}),
     f"B021 {SPANS}[0].attributes[0].value: unknown AnyValue kind 'mapValue'"),
    ({"resourceSpans": [{"scopeSpans": {}}]}, "B021 resourceSpans[0].scopeSpans: must be an array, not an object"),
    ({"resourceSpans": [{}]}, "B021 resourceSpans[0].scopeSpans: missing"),
])
def test_wrong_shapes_are_located(value, message):
    assert first_error(value) == f"t.json: {message}"


def test_deeply_nested_attribute_value_is_a_located_error():
    value = {"stringValue": "x"}
    for _ in range(50_000):
        value = {"arrayValue": {"values": [value]}}
    with pytest.raises(TraceError) as caught:
        read_trace(export(tool_span(**{"gen_ai.tool.call.result": value})), "t.json")
    assert [(d.code, d.file) for d in caught.value.diagnostics] == [("B025", "t.json")]


def test_an_exception_event_fails_the_call_and_keeps_its_message():
    span = tool_span(status={"code": 2}, **{"error.type": {"stringValue": "ValueError"}})
    span["events"] = [{"name": "exception", "attributes": attributes(**{
        "exception.type": {"stringValue": "ValueError"}, "exception.message": {"stringValue": "no such city"}})}]
    [step] = read_trace(export(span), "t.json").steps
    assert (step.outcome, step.error) == ("error", "ValueError: no such city")
    no_status = tool_span(**{"gen_ai.tool.call.result": {"stringValue": "ok"}})
    no_status["events"] = [{"name": "exception", "attributes": attributes(**{
        "exception.message": {"stringValue": "timed out"}})}]
    assert [(s.outcome, s.error) for s in read_trace(export(no_status), "t.json").steps] == [("error", "timed out")]


def test_an_event_that_contradicts_its_span_is_refused():
    span = tool_span(**{"gen_ai.tool.call.result": {"stringValue": "Error: declined"}})
    span["events"] = [{"name": "x", "attributes": attributes(**{"gen_ai.tool.call.result": {"stringValue": "ok"}})}]
    with pytest.raises(TraceError) as caught:
        read_trace(export(span), "t.json")
    assert "'gen_ai.tool.call.result' here differs" in caught.value.render()


def test_a_tool_response_in_a_user_message_answers_its_call():
    # ADK's export sends a function's response back in a user-role message.
    output = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "book",
                                                          "arguments": {}}]}])
    inputs = json.dumps([{"role": "assistant", "parts": []}, {"role": "user", "parts": [
        {"type": "tool_call_response", "id": "c1", "response": {"error": "sold out"}}]}])
    first = {"spanId": "a", "startTimeUnixNano": "1", "attributes": attributes(**{
        "gen_ai.operation.name": {"stringValue": "chat"}, "gen_ai.output.messages": {"stringValue": output}})}
    second = {"spanId": "b", "startTimeUnixNano": "2", "attributes": attributes(**{
        "gen_ai.operation.name": {"stringValue": "chat"}, "gen_ai.input.messages": {"stringValue": inputs}})}
    [call] = read_trace(export(first, second), "t.json").steps
    assert (call.outcome, call.error) == ("error", "sold out")
    assert call.result_ref.path == f"{SPANS}[1].attributes[\"gen_ai.input.messages\"][1].parts[0]"


@pytest.mark.parametrize("spans, found", [
    ([{"attributes": attributes(**{"gen_ai.operation.name": {"stringValue": "chat"},
                                   "gen_ai.request.model": {"stringValue": "gpt-4o"}})}],
     "1 spans, 1 of them model calls with no messages: the content was not captured (or went to log events that "
     "are not in the file)"),
    ([{"attributes": attributes(**{"llm.model_name": {"stringValue": "gpt-4o"}})}],
     "1 spans, none with a gen_ai.operation.name (attributes found: llm.*): no GenAI content"),
])
def test_spans_with_no_content_are_refused_saying_what_was_found(spans, found):
    with pytest.raises(TraceError) as caught:
        read_trace(export(*spans), "t.json")
    [diagnostic] = caught.value.diagnostics
    assert diagnostic.code == "B031" and diagnostic.message == f"resourceSpans: {found}"
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in diagnostic.hint


def test_openinference_spans_are_read_by_their_own_reader_not_refused_as_empty_genai():
    # Spans marked with openinference.span.kind were refused here (B031) before the
    # OpenInference reader; they now read as that format.
    spans = [{"attributes": attributes(**{"openinference.span.kind": {"stringValue": "LLM"},
                                          "llm.model_name": {"stringValue": "gpt-4o"}})}]
    assert read_trace(export(*spans), "t.json").format == "openinference"
