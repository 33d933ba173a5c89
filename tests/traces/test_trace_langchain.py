"""LangChain messages and LangSmith runs as LangChain wrote them (tests/traces/producers/
langchain_run.py), and each error signal: ToolMessage.status, a tool run's error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import admiss
from admiss.errors import TraceError
from admiss.traces.read import read_trace

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("name", ["langchain_messages.json", "langsmith_runs.json"])
def test_each_fixture_gives_the_failed_call_and_the_answer(name):
    trace = admiss.read_trace(FIXTURES / name)
    assert trace.format == "langchain" and trace.model == "gpt-4.1-mini"
    calls = [s for s in trace.steps if s.type == "tool_call"]
    assert [(c.tool_name, c.outcome, c.error) for c in calls] == [
        ("get_weather", "ok", None), ("book_flight", "error", "no seats left to Paris")]
    assert trace.final_answer == "It is sunny in Paris. I could not book the flight."


def test_the_dumpd_form_reads_as_messages_to_dict_does():
    dicts = json.loads((FIXTURES / "langchain_messages.json").read_text())
    names = {"human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage"}
    dumped = [{"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", names[m["type"]]],
               "kwargs": m["data"]} for m in dicts]
    assert [(s.type, s.outcome) for s in read_trace(dumped).steps] == \
           [(s.type, s.outcome) for s in read_trace(dicts).steps]


def ai_call(call_id="c1"):
    return {"type": "ai", "data": {"content": "", "tool_calls": [{"name": "book", "args": {}, "id": call_id}]}}


def tool_message(content, **extra):
    return {"type": "tool", "data": {"content": content, "tool_call_id": "c1", **extra}}


def test_status_error_is_an_error_and_success_is_not():
    [call] = read_trace([ai_call(), tool_message("card declined", status="error")]).steps
    assert (call.outcome, call.error) == ("error", "card declined")
    [call] = read_trace([ai_call(), tool_message("booked", status="success")]).steps
    assert call.outcome == "ok"


def test_without_status_error_the_generic_rule_still_applies():
    [call] = read_trace([ai_call(), tool_message("Error: card declined", status="success")]).steps
    assert call.outcome == "error"


def test_an_invalid_tool_call_has_bad_args():
    message = {"type": "ai", "data": {"content": "", "invalid_tool_calls": [
        {"name": "book", "args": "{\"to\": ", "id": "c1", "error": "bad json"}]}}
    [call] = read_trace([message]).steps
    assert call.outcome == "bad_args"


def run(run_type, name, order, **extra):
    return {"id": f"run-{order}", "run_type": run_type, "name": name, "dotted_order": order, **extra}


def test_a_tool_run_with_an_error_is_an_error_with_its_first_line():
    runs = [run("tool", "book", "1.2", inputs={"to": "Paris"}, outputs=None,
                error="ToolException('no seats')\n\nTraceback (most recent call last): ..."),
            run("chain", "agent", "1", error="ToolException('no seats')")]
    trace = read_trace(runs)
    [call] = trace.steps
    assert (call.args, call.outcome, call.error, call.ref.span_id) == (
        {"to": "Paris"}, "error", "ToolException('no seats')", "run-1.2")
    assert [s.reason for s in trace.skipped] == ["chain run that failed: ToolException('no seats')"]


def test_nested_child_runs_read_in_tree_order():
    root = run("chain", "agent", "1", child_runs=[
        run("tool", "second", "1.3", inputs={"input": "b"}, outputs={"output": "done"}),
        run("tool", "first", "1.2", inputs={"input": "a"}, outputs={"output": "done"})])
    trace = read_trace(root)
    assert [(s.tool_name, s.args, s.ref.path) for s in trace.steps] == [
        ("first", "a", "$.child_runs[1]"), ("second", "b", "$.child_runs[0]")]


def test_a_broken_message_is_a_located_error():
    with pytest.raises(TraceError) as raised:
        read_trace([ai_call(), {"type": "tool", "data": {"content": "x"}}], "t.json")
    assert raised.value.diagnostics[0].message == "$[1].data.tool_call_id: missing"
