"""OpenAI Responses API: the realistic fixture read step by step, and bad traces."""

from __future__ import annotations

from pathlib import Path

import pytest

import admiss
from admiss.errors import TraceError
from admiss.traces.read import read_trace
from admiss.traces.steps import Skipped, Step, StepRef

FIXTURE = Path(__file__).parent / "fixtures" / "openai_responses.json"


def ref(path, index=None, call_id=None, item_id=None):
    return StepRef("openai_responses", path, message_index=index, tool_call_id=call_id, event_id=item_id)


def test_fixture_reads_to_exact_steps():
    trace = admiss.read_trace(FIXTURE)
    assert (trace.format, trace.model) == ("openai_responses", "gpt-5-mini-2025-08-07")
    assert trace.skipped == (Skipped(ref("input[6]", 6, item_id="ws_01"), "web_search_call item"),)
    assert list(trace.steps) == [
        Step("system", ref("instructions"),
             text="You are the returns assistant for Lumen Outdoor. Confirm every action with a tool."),
        Step("user", ref("input[0]", 0), text="Order LO-99120 arrived with a torn tent. I'd like to return it."),
        Step("reasoning", ref("input[1]", 1, item_id="rs_01"),
             text="Check the order is within the return window before creating a return."),
        Step("tool_call", ref("input[2]", 2, "call_aX81", "fc_01"), tool_name="get_order",
             args={"order_id": "LO-99120"}, args_text='{"order_id":"LO-99120"}',
             result={"order_id": "LO-99120", "delivered": "2025-09-02", "return_window_days": 30}, outcome="ok",
             result_ref=ref("input[3]", 3, "call_aX81")),
        Step("tool_call", ref("input[4]", 4, "call_bQ27", "fc_02"), tool_name="create_return",
             args='{"order_id":"LO-99120","reason":"damaged"', args_parsed=False,
             args_text='{"order_id":"LO-99120","reason":"damaged"', result={"error": "invalid arguments"},
             outcome="bad_args", error="arguments are not valid JSON", result_ref=ref("input[5]", 5, "call_bQ27")),
        Step("final_answer", ref("output[0]", 0, item_id="msg_01"),
             text="Your return for order LO-99120 has been created. A prepaid label is in your inbox."),
    ]


def test_a_string_input_and_a_bare_item_list():
    trace = read_trace({"input": "Where is my parcel?", "output": []}, "t.json")
    assert [(s.type, s.ref.path, s.text) for s in trace.steps] == [("user", "input", "Where is my parcel?")]
    items = [{"type": "function_call", "call_id": "c1", "name": "track", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "ERROR: carrier API down"}]
    [step] = read_trace(items, "t.json").steps
    assert (step.outcome, step.error, step.ref.path, step.result_ref.path) == (
        "error", "ERROR: carrier API down", "$[0]", "$[1]")


def first_error(value):
    with pytest.raises(TraceError) as caught:
        read_trace(value, "t.json", "openai_responses")
    return caught.value.diagnostics[0].render().split("\n")[0]


@pytest.mark.parametrize("value, message", [
    ({"input": [{"type": "function_call_output", "call_id": "c7", "output": "ok"}]},
     "B022 input[0].call_id: a tool result for no tool call before it (id 'c7')"),
    ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "B021 input[0].call_id: missing"),
    ({"input": [{"type": "function_call", "call_id": "c", "name": "f"}]}, "B021 input[0].arguments: missing"),
    ({"output": {"type": "message"}}, "B021 output: must be an array, not an object"),
    ({"input": [{"type": "message", "role": "robot", "content": "x"}]}, "B021 input[0].role: unknown role 'robot'"),
    ({"input": [{"content": "x"}]}, "B021 input[0].type: missing"),
    ({"input": [{"role": "user", "content": [{"type": "input_text"}]}]}, "B021 input[0].content[0].text: missing"),
    ({"input": [{"type": "reasoning", "summary": "x"}]}, "B021 input[0].summary: must be an array, not a string"),
    ({"id": "resp_1"}, "B021 $: no items: a Responses trace is an object with \"input\" or \"output\", or an array "
                       "of items"),
])
def test_wrong_shapes_are_located(value, message):
    assert first_error(value) == f"t.json: {message}"
