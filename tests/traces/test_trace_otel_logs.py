"""OTLP log events: the OpenTelemetry OpenAI instrumentation's default mode writes a model
call's messages as log records tied to its span (tests/traces/producers/otel_openai_v2.py
wrote the fixtures). Read through `admiss import` and compared with counts this test takes
from the raw records in a few plain lines; then each error signal, and hostile records."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from admiss.errors import TraceError
from admiss.traces.read import read_trace, read_traces
from trace_reference import otel_value as plain
from trace_strategies import any_value

FIXTURES = Path(__file__).parent / "fixtures"
RUBRIC = Path(__file__).parent / "producers" / "any.rubric"
EVENTS, JOINED = FIXTURES / "otel_openai_v2_events.jsonl", FIXTURES / "otel_openai_v2_spans_and_logs.json"


def exports(path):
    text = path.read_text()
    return [json.loads(line) for line in text.splitlines()] if path.suffix == ".jsonl" else [json.loads(text)]


def records(path):
    return [(record["eventName"], plain(record["body"])) for export in exports(path)
            for resource in export.get("resourceLogs", []) for scope in resource["scopeLogs"]
            for record in scope["logRecords"]]


def counted(path):
    """Tool calls (one per call id the replies name), failed calls (a tool message whose
    content starts with "Error"), and the last reply's text when it calls no tool."""
    events = records(path)
    choices = [body["message"] for name, body in events if name == "gen_ai.choice"]
    calls = {call["id"] for message in choices for call in message.get("tool_calls", [])}
    failed = {body["id"] for name, body in events if name == "gen_ai.tool.message"
              and str(body.get("content", "")).startswith("Error")}
    last = choices[-1]
    return len(calls), len(failed), None if last.get("tool_calls") else last.get("content")


def imported(admiss_cli, path, *more):
    ran = admiss_cli("import", "--rubric", RUBRIC, path, *more)
    assert ran.code == 0, ran.err
    bundle = json.loads(ran.out)
    calls = [e for e in bundle["evidence"] if e["kind"] in ("procedurally_sound_tool_call", "flawed_tool_call")]
    return len(calls), sum(e["kind"] == "flawed_tool_call" for e in calls), bundle.get("output")


@pytest.mark.parametrize("path", [EVENTS, JOINED], ids=lambda p: p.name)
def test_import_agrees_with_the_raw_log_records(admiss_cli, path):
    expected = counted(path)
    assert expected[0] == 2 and expected[1] == 1 and expected[2]
    assert imported(admiss_cli, path) == expected


def test_a_collector_file_is_one_run_with_steps_located_in_its_lines(admiss_cli):
    ran = admiss_cli("import", "--rubric", RUBRIC, EVENTS)
    [bundle] = [json.loads(line) for line in ran.out.splitlines()]
    failed = next(e for e in bundle["evidence"] if e["kind"] == "flawed_tool_call")
    # The call stands in the line of the choice event that asked for it.
    line = int(failed["step"]["path"][2:].split("]")[0])
    assert json.loads(EVENTS.read_text().splitlines()[line])["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0][
        "eventName"] == "gen_ai.choice"
    assert failed["detail"].endswith("failed: Error: payment gateway timeout after 30s")
    assert "span_id" in failed["step"] and "trace_id" in failed["step"]


def test_check_reads_the_collector_file_as_one_run(admiss_cli, tmp_path):
    ran = admiss_cli("check", "--rubric", RUBRIC, "--format", "json", EVENTS)
    reports = [json.loads(line) for line in ran.out.splitlines()]
    assert len(reports) == 1 and ran.code in (0, 1), ran.err


def test_a_broken_record_of_a_collector_file_is_located_at_its_line(admiss_cli, tmp_path):
    lines = EVENTS.read_text().splitlines()
    broken = json.loads(lines[5])
    broken["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["eventName"] = ["x"]
    lines[5] = json.dumps(broken)
    path = tmp_path / "collector.jsonl"
    path.write_text("\n".join(lines) + "\n")
    ran = admiss_cli("check", "--rubric", RUBRIC, path)
    assert ran.code == 2 and "Traceback" not in ran.err
    assert f"{path}:6:" in ran.err and "logRecords[0].eventName: must be a string, not an array" in ran.err


def test_log_events_without_content_are_refused_saying_how_to_capture(admiss_cli):
    ran = admiss_cli("import", "--rubric", RUBRIC, FIXTURES / "otel_openai_v2_nocapture.jsonl")
    assert ran.code == 2 and "Traceback" not in ran.err
    assert "B031 $[0].resourceLogs: 15 GenAI log events, none with content" in ran.err
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true" in ran.err


def joined():
    return json.loads(JOINED.read_text())


def logs_of(value):
    return [record for resource in value["resourceLogs"] for scope in resource["scopeLogs"]
            for record in scope["logRecords"]]


def body_pairs(record):
    return record["body"]["kvlistValue"]["values"]


def refund_result(value):
    """The body pair that holds the failed refund's result, in the last model call's request."""
    record = [r for r in logs_of(value) if r["eventName"] == "gen_ai.tool.message"][-1]
    return next(pair for pair in body_pairs(record) if pair["key"] == "content")


def refund(value):
    return next(step for step in read_trace(value, "t.json").steps if step.tool_name == "issue_refund")


@pytest.mark.parametrize("content, outcome, error", [
    ({"stringValue": "Error: payment gateway timeout after 30s"}, "error", "Error: payment gateway timeout after 30s"),
    ({"stringValue": '{"error": "card declined"}'}, "error", "card declined"),
    ({"kvlistValue": {"values": [{"key": "status", "value": {"stringValue": "error"}},
                                 {"key": "message", "value": {"stringValue": "no funds"}}]}}, "error", "no funds"),
    ({"stringValue": "An error occurred while running the tool. Please try again."}, "error",
     "An error occurred while running the tool. Please try again."),
    ({"arrayValue": {"values": [{"kvlistValue": {"values": [
        {"key": "type", "value": {"stringValue": "text"}},
        {"key": "text", "value": {"stringValue": "Error: refused"}}]}}]}}, "error", "Error: refused"),
    ({"stringValue": '{"refund_id": "R-1"}'}, "ok", None),
])
def test_each_error_signal_of_a_tool_message_event(content, outcome, error):
    value = joined()
    refund_result(value)["value"] = content
    step = refund(value)
    assert (step.outcome, step.error) == (outcome, error)
    assert step.result_ref.path.startswith("resourceLogs[") and step.result_ref.tool_call_id == "call_rf1"


def test_a_tool_message_with_no_content_leaves_its_call_with_no_result():
    value = joined()
    record = [r for r in logs_of(value) if r["eventName"] == "gen_ai.tool.message"][-1]
    record["body"]["kvlistValue"]["values"] = [p for p in body_pairs(record) if p["key"] != "content"]
    assert (refund(value).outcome, refund(value).error) == ("no_result", "no result")


def test_a_call_no_tool_message_answers_has_no_result():
    value = joined()
    last = [r for r in logs_of(value) if r["eventName"] == "gen_ai.tool.message"][-1]
    for scope in (s for resource in value["resourceLogs"] for s in resource["scopeLogs"]):
        scope["logRecords"] = [r for r in scope["logRecords"] if r is not last]
    assert refund(value).outcome == "no_result"


def first_error(value):
    with pytest.raises(TraceError) as caught:
        read_trace(value, "t.json", "otel_genai")
    return caught.value.diagnostics[0]


def test_an_event_tied_to_no_span_is_refused():
    value = joined()
    logs_of(value)[0]["spanId"] = "00000000deadbeef"
    diagnostic = first_error(value)
    assert diagnostic.code == "B032" and "a gen_ai.system.message log event tied to no span" in diagnostic.message


def test_two_spans_with_one_id_and_log_events_are_ambiguous():
    value = joined()
    spans = [span for resource in value["resourceSpans"] for scope in resource["scopeSpans"] for span in scope["spans"]]
    spans[1]["spanId"], spans[1]["traceId"] = spans[0]["spanId"], spans[0]["traceId"]
    diagnostic = first_error(value)
    assert diagnostic.code == "B032" and "which one its log events belong to is ambiguous" in diagnostic.message


def test_an_event_name_that_contradicts_its_attribute_is_refused():
    value = joined()
    logs_of(value)[0]["attributes"].append({"key": "event.name", "value": {"stringValue": "gen_ai.choice"}})
    assert "differs from the record's event.name attribute" in first_error(value).message


def test_the_event_name_attribute_names_the_event_when_the_field_is_absent():
    value = joined()
    for record in logs_of(value):
        record["attributes"].append({"key": "event.name", "value": {"stringValue": record.pop("eventName")}})
    assert refund(value).outcome == "error"


def test_messages_on_the_span_and_in_events_are_ambiguous():
    value = joined()
    span = value["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"].append({"key": "gen_ai.input.messages", "value": {"stringValue": "[]"}})
    assert "both on its span and in log events" in first_error(value).message


def test_a_body_that_repeats_a_key_is_refused():
    value = joined()
    refund_pairs = body_pairs([r for r in logs_of(value) if r["eventName"] == "gen_ai.tool.message"][-1])
    refund_pairs.append({"key": "content", "value": {"stringValue": "done"}})
    diagnostic = first_error(value)
    assert diagnostic.code == "B021" and "attribute 'content' given twice" in diagnostic.message


def test_a_spans_only_jsonl_is_read_whole(tmp_path):
    # Spans of one trace can stand on several lines (an export per batch), and a line can hold
    # spans of several traces: an OTLP .jsonl is read whole and grouped by traceId.
    from admiss.trace_import import is_whole_run_file

    lines = tmp_path / "spans.jsonl"
    lines.write_text((FIXTURES / "otel_openai_v2_default.json").read_text().replace("\n", "") + "\n")
    assert is_whole_run_file(lines)
    assert is_whole_run_file(EVENTS)


# Any JSON, as OTLP AnyValues, in place of a record's body or one of its fields.
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                    max_leaves=20)


HOSTILE = st.one_of(JSON.map(any_value), JSON, JSON.map(lambda v: {"stringValue": json.dumps(v)}))


# The OpenAI instrumentation's message events (content in the body), and ADK's operation
# details events (content in the attributes).
HOSTILE_FIXTURES = [JOINED, FIXTURES / "otel_adk_events.json"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(HOSTILE_FIXTURES), st.integers(0, 14),
       st.sampled_from(["body", "eventName", "spanId", "attributes", "pair"]), HOSTILE)
def test_hostile_records_give_a_trace_or_a_located_error(fixture, index, place, hostile):
    value = json.loads(fixture.read_text())
    record = logs_of(value)[index % len(logs_of(value))]
    if place == "pair":
        pairs = record["body"]["kvlistValue"]["values"] if "body" in record and record["body"] else \
            record["attributes"]
        pairs[len(pairs) // 2]["value"] = hostile
    else:
        record[place] = hostile
    # The file's three traces (one per model call) are one run while their requests carry one
    # conversation; a hostile record can break that, and then each trace is a run.
    for name, run in read_traces(copy.deepcopy(value), "t.json", "otel_genai"):
        if isinstance(run, TraceError):
            message = run.diagnostics[0].message
            assert run.diagnostics[0].code in ("B021", "B022", "B023", "B025", "B031", "B032")
            assert message.startswith(("resourceLogs", "resourceSpans")), message
