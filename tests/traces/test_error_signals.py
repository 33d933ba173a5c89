"""The one error rule for tool results that carry no error flag (docs/traces.md, "Tool
errors"), read through the real readers: each producer's way of saying a call failed."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from admiss.traces.build import _SIGNAL_MARKS, _may_signal
from admiss.traces.read import read_trace


def chat_outcome(content: str) -> tuple[str, str | None]:
    """The outcome and reason of a Chat Completions call whose tool message says ``content``."""
    trace = read_trace([
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                              "function": {"name": "book", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": content}], "t.json")
    return trace.steps[0].outcome, trace.steps[0].error


@pytest.mark.parametrize("content, reason", [
    # The OpenAI Agents SDK's default failure_error_function (with and without the exception).
    ("An error occurred while running the tool. Please try again.",
     "An error occurred while running the tool. Please try again."),
    ("An error occurred while running the tool. Please try again. Error: boom",
     "An error occurred while running the tool. Please try again. Error: boom"),
    ("An error occurred while parsing tool arguments. Please try again with valid JSON. Error: x",
     "An error occurred while parsing tool arguments. Please try again with valid JSON. Error: x"),
    ("Tool execution was not approved.", "Tool execution was not approved."),
    # Characters that show nothing before the error.
    ("\ufeffError: booking locked", "Error: booking locked"),
    ("\u200b\u200dERROR 404", "ERROR 404"),
    ("\u2060{\"error\": \"booking locked\"}", "booking locked"),
    ("\ufeff [{\"x\": 1}]", None),
    # MCP CallToolResult: isError (SDK 1.x) or is_error (2.x).
    (json.dumps({"content": [{"type": "text", "text": "quota exceeded"}], "isError": True}), "quota exceeded"),
    (json.dumps({"content": [], "is_error": True}), "isError: true"),
    # ADK: a status in any case, the retry plugin's answer, a plain return value wrapped as "result".
    (json.dumps({"status": "ERROR", "error_message": "no such city"}), "no such city"),
    # A tool's own status field (the C# agent's report tool in Langfuse's test traces).
    (json.dumps({"response_status": "Error", "message": "ERROR: No data found"}), "ERROR: No data found"),
    (json.dumps({"requestStatus": "error"}), "requestStatus: error"),
    (json.dumps({"response_type": "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN", "error_type": "ValueError",
                 "error_details": "bad city"}), "bad city"),
    (json.dumps({"result": "Error: bad city"}), "Error: bad city"),
])
def test_producers_failure_texts_are_errors(content, reason):
    assert chat_outcome(content) == (("error", reason) if reason else ("ok", None))


@pytest.mark.parametrize("content", [
    "Errors: 0", "The tool ran. An error occurred while running the tool earlier, now fixed.",
    json.dumps({"isError": False, "content": []}), json.dumps({"result": "fine", "extra": "Error: x"}),
])
def test_lookalikes_are_not_errors(content):
    assert chat_outcome(content) == ("ok", None)


@pytest.mark.parametrize("content", [
    '{"error":"booking locked","status":"cancelled","error":null}',
    '{"status":"error","status":"ok"}',
    '[{"ok":true},{"isError":true,"isError":false}]',
    '\ufeff{"error":"x","error":""}',
])
def test_a_result_whose_json_repeats_a_key_is_a_failure(content):
    # A decoder keeps the last of a repeated key; the first may say the call failed.
    outcome, reason = chat_outcome(content)
    assert outcome == "error" and "twice" in reason and "read as a failure" in reason


def test_huge_numbers_in_a_result_are_no_crash():
    assert chat_outcome('{"n": ' + "9" * 5000 + "}") == ("ok", None)
    assert chat_outcome('{"error": ' + "9" * 5000 + "}") == ("error", "9" * 199 + "…")
    assert chat_outcome('{"error": ' + "9" * 5000 + ', "error": 0}')[0] == "error"


# Texts made of marks, pieces of marks and anything else, so that each mark is met often.
_PIECES = st.sampled_from([*_SIGNAL_MARKS, *(m[:-1] for m in _SIGNAL_MARKS if len(m) > 1), "rr", "Err", '{"'])


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES | st.text(max_size=4), max_size=6).map("".join))
def test_the_spelled_out_signal_test_finds_what_a_scan_of_every_mark_finds(text):
    assert _may_signal(text) == any(mark in text for mark in _SIGNAL_MARKS)
