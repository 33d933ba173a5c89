"""Google ADK's OpenTelemetry export records each tool call twice, with different ids: the
model's function-call part (ADK's fallback id, ``issue_refund_0``) and the execute_tool span
(the ``adk-...`` id ADK gave the call). admiss joins them into one step. The fixtures were
written by the real google-adk (tests/traces/producers/adk_agent.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from admiss.traces.read import read_trace
from trace_reference import otel_value as plain

FIXTURES = Path(__file__).parent / "fixtures"
RUBRIC = Path(__file__).parent / "producers" / "any.rubric"
SPAN_CONTENT, EVENTS = FIXTURES / "otel_adk_span_content.json", FIXTURES / "otel_adk_events.json"


def spans(value):
    return [span for resource in value["resourceSpans"] for scope in resource["scopeSpans"] for span in scope["spans"]]


def attribute(holder, key):
    return next((plain(a["value"]) for a in holder.get("attributes", []) if a["key"] == key), None)


def counted(value):
    """One call per execute_tool span; failed: a function response (in the last model call's
    request) whose status is "error"; the final answer: the text of the last output message.
    The model calls' messages are on their spans or in their log events."""
    tools = [s for s in spans(value) if attribute(s, "gen_ai.operation.name") == "execute_tool"]
    holders = sorted((s for s in spans(value) if attribute(s, "gen_ai.operation.name") == "generate_content"),
                     key=lambda s: int(s["startTimeUnixNano"]))
    holders += [r for resource in value.get("resourceLogs", []) for scope in resource["scopeLogs"]
                for r in scope["logRecords"]]
    last = [h for h in holders if attribute(h, "gen_ai.output.messages")][-1]
    inputs, output = (attribute(last, key) for key in ("gen_ai.input.messages", "gen_ai.output.messages"))
    inputs, output = (json.loads(v) if isinstance(v, str) else v for v in (inputs, output))
    failed = [p for m in inputs for p in m["parts"] if p["type"] == "tool_call_response"
              and p["response"].get("status") == "error"]
    parts = output[-1]["parts"]
    return len(tools), len(failed), parts[-1].get("content") if parts[-1]["type"] == "text" else None


@pytest.mark.parametrize("path", [SPAN_CONTENT, EVENTS], ids=lambda p: p.name)
def test_import_counts_each_call_once(admiss_cli, path):
    ran = admiss_cli("import", "--rubric", RUBRIC, path)
    assert ran.code == 0, ran.err
    evidence = json.loads(ran.out)["evidence"]
    calls = [e for e in evidence if e["kind"] in ("procedurally_sound_tool_call", "flawed_tool_call")]
    answers = [e["detail"] for e in evidence if e["kind"] == "final_answer"]
    tools, failures, answer = counted(json.loads(path.read_text()))
    assert (len(calls), sum(e["kind"] == "flawed_tool_call" for e in calls)) == (tools, failures) == (2, 1)
    assert answers == [answer]


def refund(value):
    [step] = [s for s in read_trace(value, "t.json").steps if s.tool_name == "issue_refund"]
    return step


def test_the_joined_step_keeps_both_references():
    step = refund(json.loads(SPAN_CONTENT.read_text()))
    assert step.ref.tool_call_id == "issue_refund_0" and "gen_ai.output.messages" in step.ref.path
    assert step.result_ref.tool_call_id.startswith("adk-") and step.result_ref.path.startswith("resourceSpans")
    assert step.result_ref.span_id != step.ref.span_id
    assert (step.outcome, step.error) == ("error", "payment gateway timeout after 30s")


def test_with_content_in_events_the_span_names_the_call_it_executed():
    # EVENT_ONLY leaves the execute_tool spans without a result: the function response in
    # the next model call's event answers the call, and the span is skipped naming it.
    trace = read_trace(json.loads(EVENTS.read_text()), "t.json")
    [step] = [s for s in trace.steps if s.tool_name == "issue_refund"]
    assert (step.outcome, step.error) == ("error", "payment gateway timeout after 30s")
    assert "logRecords" in step.ref.path and "logRecords" in step.result_ref.path
    executed = [s for s in trace.skipped if s.ref.tool_call_id and s.ref.tool_call_id.startswith("adk-")]
    assert len(executed) == 2 and executed[1].reason == (
        f"execute_tool span with no result recorded (of the call at {step.ref.path})")


def refund_span(value):
    return next(s for s in spans(value) if attribute(s, "gen_ai.tool.name") == "issue_refund")


def set_attribute(span, key, text):
    next(a for a in span["attributes"] if a["key"] == key)["value"] = {"stringValue": text}


def test_a_failure_only_in_the_user_role_response_fails_the_joined_call():
    # The span's result says success; the function response sent back to the model (a
    # user-role part) holds the error payload: the call failed.
    value = json.loads(SPAN_CONTENT.read_text())
    set_attribute(refund_span(value), "gen_ai.tool.call.result", '{"status": "success"}')
    step = refund(value)
    assert (step.outcome, step.error) == ("error", "payment gateway timeout after 30s")


def test_a_failure_only_on_the_span_fails_the_joined_call():
    value = json.loads(SPAN_CONTENT.read_text())
    last = max((s for s in spans(value) if attribute(s, "gen_ai.operation.name") == "generate_content"),
               key=lambda s: int(s["startTimeUnixNano"]))
    inputs = json.loads(attribute(last, "gen_ai.input.messages"))
    inputs[-1]["parts"][0]["response"] = {"status": "success"}
    set_attribute(last, "gen_ai.input.messages", json.dumps(inputs))
    assert refund(value).outcome == "error"


def test_a_span_with_no_result_leaves_the_result_to_the_function_response():
    value = json.loads(SPAN_CONTENT.read_text())
    span = refund_span(value)
    span["attributes"] = [a for a in span["attributes"] if a["key"] != "gen_ai.tool.call.result"]
    step = refund(value)
    assert (step.outcome, step.error) == ("error", "payment gateway timeout after 30s")
    assert "gen_ai.input.messages" in step.result_ref.path and step.result_ref.tool_call_id == "issue_refund_0"


def test_an_error_status_on_the_span_fails_the_call():
    value = json.loads(SPAN_CONTENT.read_text())
    span = refund_span(value)
    set_attribute(span, "gen_ai.tool.call.result", '{"status": "success"}')
    span["status"] = {"code": "STATUS_CODE_ERROR", "message": "MCP_TOOL_ERROR"}
    last = max((s for s in spans(value) if attribute(s, "gen_ai.operation.name") == "generate_content"),
               key=lambda s: int(s["startTimeUnixNano"]))
    inputs = json.loads(attribute(last, "gen_ai.input.messages"))
    inputs[-1]["parts"][0]["response"] = {"status": "success"}
    set_attribute(last, "gen_ai.input.messages", json.dumps(inputs))
    assert (refund(value).outcome, refund(value).error) == ("error", "MCP_TOOL_ERROR")
