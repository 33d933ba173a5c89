"""Anthropic Messages: the realistic fixture read step by step, and bad traces."""

from __future__ import annotations

from pathlib import Path

import pytest

import admiss
from admiss.errors import TraceError
from admiss.traces.read import read_trace
from admiss.traces.steps import Step, StepRef

FIXTURE = Path(__file__).parent / "fixtures" / "anthropic.json"


def ref(path, index=None, call_id=None):
    return StepRef("anthropic", path, message_index=index, tool_call_id=call_id)


def test_fixture_reads_to_exact_steps():
    trace = admiss.read_trace(FIXTURE)
    assert (trace.format, trace.model, trace.skipped) == ("anthropic", "claude-sonnet-4-5-20250929", ())
    assert list(trace.steps) == [
        Step("system", ref("system"),
             text="You are Harbor Bank's card support assistant. Only report actions the tools confirm."),
        Step("user", ref("messages[0]", 0),
             text="My card ending 4417 was stolen. Please block it and send a replacement."),
        Step("reasoning", ref("messages[1].content[0]", 1), text="The customer wants two actions: block the card, "
             "then order a replacement. Block first."),
        Step("assistant_text", ref("messages[1]", 1), text="I'm sorry to hear that. I'll block the card right away."),
        Step("tool_call", ref("messages[1].content[2]", 1, "toolu_01A9fQe6kTzs"), tool_name="block_card",
             args={"last4": "4417", "reason": "stolen"}, result={"card": "4417", "state": "blocked"}, outcome="ok",
             result_ref=ref("messages[2].content[0]", 2, "toolu_01A9fQe6kTzs")),
        Step("tool_call", ref("messages[3].content[0]", 3, "toolu_01Hx72mPq3Wd"), tool_name="order_replacement",
             args={"last4": "4417", "shipping": "standard"}, result="address on file is unverified",
             outcome="error", error="address on file is unverified",
             result_ref=ref("messages[4].content[0]", 4, "toolu_01Hx72mPq3Wd")),
        Step("user", ref("messages[4]", 4), text="Also, how long will the new card take?"),
        Step("final_answer", ref("messages[5]", 5), text="Your card ending 4417 is blocked and a replacement is on "
             "its way; it arrives in 5-7 business days."),
    ]


def use(call_id="toolu_1"):
    return {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "refund", "input": {}}]}


def result(call_id="toolu_1", **extra):
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, **extra}]}


def test_is_error_or_an_error_text_makes_an_error():
    # An unflagged "Error: ..." was once read as a sound call: a false pass for a loop that
    # forgets the flag. The text rule is the one every flagless format uses.
    [step] = read_trace({"messages": [use(), result(content="Error: but not flagged")]}, "t.json").steps
    assert (step.outcome, step.error) == ("error", "Error: but not flagged")
    [step] = read_trace({"messages": [use(), result(content=[{"type": "text", "text": '{"status": "error"}'}])]},
                        "t.json").steps
    assert (step.outcome, step.error) == ("error", "status: error")
    [step] = read_trace({"messages": [use(), result(content="Errors: none")]}, "t.json").steps
    assert step.outcome == "ok"
    [step] = read_trace({"messages": [use(), result(is_error=True)]}, "t.json").steps
    assert (step.outcome, step.error) == ("error", "is_error: true")
    [step] = read_trace({"messages": [use()]}, "t.json").steps
    assert step.outcome == "no_result"


def test_other_blocks_are_skipped_and_listed():
    trace = read_trace({"messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
        {"type": "text", "text": "What is this?"}]}, {"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": "EmwKAhgB"}]}]}, "t.json")
    assert [(s.ref.path, s.reason) for s in trace.skipped] == [
        ("messages[0].content[0]", "image block"), ("messages[1].content[0]", "redacted_thinking block")]
    assert [s.type for s in trace.steps] == ["user"]


def first_error(value):
    with pytest.raises(TraceError) as caught:
        read_trace(value, "t.json", "anthropic")
    return caught.value.diagnostics[0].render().split("\n")[0]


@pytest.mark.parametrize("value, message", [
    ({"messages": [use(), result("toolu_9")]}, "B022 messages[1].content[0].tool_use_id: a tool result for no tool "
                                                 "call before it (id 'toolu_9')"),
    ({"messages": [use(), use(), result()]}, "B023 messages[2].content[0].tool_use_id: 2 unanswered tool calls have "
                                             "the id 'toolu_1': which one this result answers is ambiguous"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "B021 messages[0].role: unknown role 'tool'"),
    ({"messages": [{"role": "user", "content": 3}]},
     "B021 messages[0].content: must be a string or an array of blocks, not a number"),
    ({"messages": [{"role": "user", "content": [{"text": "x"}]}]}, "B021 messages[0].content[0].type: missing"),
    ({"messages": [use(), result(is_error="yes")]}, "B021 messages[1].content[0].is_error: must be a boolean, "
                                                     "not a string"),
    ({"system": 5, "messages": []}, "B021 system: must be a string or an array of text blocks, not a number"),
    ({"model": "x"}, "B021 $: no messages: an Anthropic trace is an object with \"messages\" or an array of messages"),
])
def test_wrong_shapes_are_located(value, message):
    assert first_error(value) == f"t.json: {message}"
