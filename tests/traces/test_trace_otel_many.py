"""Several traces in one OTLP file: the OpenTelemetry SDK's own JSON Lines file exporter
writing two agents' runs interleaved (tests/traces/producers/otel_many_traces.py). Each trace
is a run of its own in `admiss import` and `admiss check`, named by its traceId; the expected
runs, calls, failures and final answers are taken from the raw records in a few plain lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import admiss
from admiss.errors import TraceError
from admiss.traces.read import read_traces
from trace_reference import otel_value as plain

FIXTURES = Path(__file__).parent / "fixtures"
RUBRIC = Path(__file__).parent / "producers" / "any.rubric"
AGENTS, CALLS = FIXTURES / "otel_many_traces_agents.jsonl", FIXTURES / "otel_many_traces_calls.jsonl"
# The booking run fails (its refund failed, its lookup proves nothing), the weather run passes:
# read as one run, the weather call would pass the booking's.
REFUND_RUBRIC = """PROPERTY done "the agent's tool did the work" {
  ADMIT procedurally_sound_tool_call
  FORBID flawed_tool_call
}
MAP {
  WHEN TOOL OUTCOME failed AS flawed_tool_call
  WHEN TOOL "lookup_*" SKIP
  WHEN TOOL AS procedurally_sound_tool_call
}
"""


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def items(export, kind):
    nesting = {"resourceSpans": ("scopeSpans", "spans"), "resourceLogs": ("scopeLogs", "logRecords")}[kind]
    return [item for resource in export.get(kind, []) for scope in resource[nesting[0]] for item in scope[nesting[1]]]


def expected_runs(path):
    """Per agent (its system prompt names it), in order of its first span's start: its trace
    ids in that order, its tool calls, its failed calls (a tool message whose content starts
    with "Error") and its last reply's text when that reply calls no tool."""
    spans = sorted((span for export in lines(path) for span in items(export, "resourceSpans")),
                   key=lambda span: int(span["startTimeUnixNano"]))
    records = [r for export in lines(path) for r in items(export, "resourceLogs")]
    agent_of = {r["traceId"]: plain(r["body"])["content"] for r in records if r["eventName"] == "gen_ai.system.message"}
    runs: dict[str, dict] = {}
    for span in spans:
        run = runs.setdefault(agent_of[span["traceId"]], {"traces": []})
        if span["traceId"] not in run["traces"]:
            run["traces"].append(span["traceId"])
    for run in runs.values():
        events = [(r["eventName"], plain(r["body"])) for r in records if r["traceId"] in run["traces"]]
        choices = [body["message"] for name, body in events if name == "gen_ai.choice"]
        run["calls"] = len({call["id"] for message in choices for call in message.get("tool_calls", [])})
        run["failed"] = len({body["id"] for name, body in events if name == "gen_ai.tool.message"
                             and body["content"].startswith("Error")})
        run["output"] = None if choices[-1].get("tool_calls") else choices[-1]["content"]
    return list(runs.values())


def imported(admiss_cli, path):
    ran = admiss_cli("import", "--rubric", RUBRIC, path)
    assert ran.code == 0, ran.err
    return [json.loads(line) for line in ran.out.splitlines()]


@pytest.mark.parametrize("path", [AGENTS, CALLS], ids=lambda p: p.stem)
def test_import_gives_one_bundle_per_trace_named_by_its_trace_id(admiss_cli, path):
    expected = expected_runs(path)
    assert len(expected) == 2 and [run["failed"] for run in expected] == [1, 0]
    bundles = imported(admiss_cli, path)
    assert [b["run"] for b in bundles] == [f"{path}#traceId={'+'.join(run['traces'])}" for run in expected]
    assert [b["trace"]["run"] for b in bundles] == [b["run"] for b in bundles]
    for bundle, run in zip(bundles, expected):
        kinds = [e["kind"] for e in bundle["evidence"]]
        assert kinds.count("procedurally_sound_tool_call") + kinds.count("flawed_tool_call") == run["calls"]
        assert kinds.count("flawed_tool_call") == run["failed"]
        assert bundle["output"] == run["output"]
        # no step of another run's trace stands in this one
        assert {e["step"]["trace_id"] for e in bundle["evidence"]} <= set(run["traces"])


def test_check_gives_one_report_per_trace(admiss_cli, tmp_path):
    (tmp_path / "r.rubric").write_text(REFUND_RUBRIC)
    ran = admiss_cli("check", "--rubric", tmp_path / "r.rubric", "--format", "json", AGENTS)
    reports = [json.loads(line) for line in ran.out.splitlines()]
    booking, weather = expected_runs(AGENTS)
    assert [r["verdict"] for r in reports] == ["fail", "pass"] and ran.code == 1, ran.err
    text = admiss_cli("check", "--rubric", tmp_path / "r.rubric", "--format", "text", AGENTS).out
    assert f"==> {AGENTS}#traceId={booking['traces'][0]} <==" in text
    assert f"==> {AGENTS}#traceId={weather['traces'][0]} <==" in text


def test_python_reads_each_trace_and_refuses_the_file_as_one_trace():
    value = lines(AGENTS)
    rubric = admiss.compile_source(REFUND_RUBRIC)
    booking, weather = expected_runs(AGENTS)
    assert [(name, report.verdict) for name, report in rubric.check_runs(value, "f.jsonl")] == [
        (f"f.jsonl#traceId={booking['traces'][0]}", "fail"), (f"f.jsonl#traceId={weather['traces'][0]}", "pass")]
    with pytest.raises(TraceError) as raised:
        rubric.check(value, "f.jsonl")  # one report would stand for two runs
    assert raised.value.diagnostics[0].code == "B026" and "a file of 2 traces" in raised.value.diagnostics[0].message


def test_log_events_of_a_trace_with_no_spans_are_a_run_refused_the_others_still_read():
    value = lines(AGENTS)
    booking, weather = expected_runs(AGENTS)
    for export in value:
        for resource in export.get("resourceSpans", []):
            for scope in resource["scopeSpans"]:
                scope["spans"] = [s for s in scope["spans"] if s["traceId"] != weather["traces"][0]]
    runs = read_traces(value, "f.jsonl")
    assert [name for name, _ in runs] == [f"f.jsonl#traceId={t}" for t in (booking["traces"][0], weather["traces"][0])]
    assert runs[0][1].final_answer == booking["output"]
    assert isinstance(runs[1][1], TraceError) and runs[1][1].diagnostics[0].code == "B032"


def test_a_record_of_no_genai_event_naming_no_traced_span_is_skipped_not_a_run():
    value = lines(AGENTS)
    value.append({"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"traceId": "ab" * 16, "spanId": "cd" * 8, "body": {"stringValue": "GET /health 200"}}]}]}]})
    runs = read_traces(value, "f.jsonl")
    assert len(runs) == 2
    assert any(s.reason == "log record of no span in the file" for s in runs[0][1].skipped)


def test_a_file_of_one_trace_is_read_as_before():
    [(name, trace)] = read_traces(lines(FIXTURES / "otel_openai_v2_events.jsonl"), "f.jsonl")
    assert name == "f.jsonl" and trace.final_answer is not None
