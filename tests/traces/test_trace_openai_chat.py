"""OpenAI Chat Completions: the realistic fixture read step by step, and bad traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import admiss
from admiss.errors import TraceError
from admiss.traces.read import read_trace
from admiss.traces.steps import Step, StepRef

FIXTURE = Path(__file__).parent / "fixtures" / "openai_chat.json"


def ref(path, index, call_id=None):
    return StepRef("openai_chat", path, message_index=index, tool_call_id=call_id)


def test_fixture_reads_to_exact_steps():
    trace = admiss.read_trace(FIXTURE)
    assert trace.format == "openai_chat"
    assert trace.model == "gpt-4.1-mini-2025-04-14"
    # The user's screenshot holds no text: listed, not lost.
    assert [(s.ref.path, s.reason) for s in trace.skipped] == [("messages[1].content[1]", "image_url part")]
    assert list(trace.steps) == [
        Step("system", ref("messages[0]", 0), text="You are the support agent for Northwind Rail. Use the tools to "
             "look up and change bookings. Never claim a change you did not make."),
        Step("user", ref("messages[1]", 1), text="Hi, I need to cancel booking NR-48213 and get my money back."),
        Step("tool_call", ref("messages[2].tool_calls[0]", 2, "call_Qm3lE0a9"), tool_name="lookup_booking",
             args={"booking_id": "NR-48213"}, args_text='{"booking_id": "NR-48213"}',
             result={"booking_id": "NR-48213", "status": "confirmed", "fare_eur": 84.5, "refundable": True},
             outcome="ok", result_ref=ref("messages[3]", 3, "call_Qm3lE0a9")),
        Step("assistant_text", ref("messages[4]", 4),
             text="The booking is refundable. I'll cancel it and issue the refund now."),
        Step("tool_call", ref("messages[4].tool_calls[0]", 4, "call_7Hc2pWq1"), tool_name="cancel_booking",
             args={"booking_id": "NR-48213", "reason": "customer_request"},
             args_text='{"booking_id": "NR-48213", "reason": "customer_request"}',
             result={"booking_id": "NR-48213", "status": "cancelled"}, outcome="ok",
             result_ref=ref("messages[5]", 5, "call_7Hc2pWq1")),
        Step("tool_call", ref("messages[4].tool_calls[1]", 4, "call_Zr81kLx4"), tool_name="issue_refund",
             args={"booking_id": "NR-48213", "amount_eur": 84.5}, args_text='{"booking_id": "NR-48213", "amount_eur": 84.5}',
             result="Error: payment gateway timeout after 30s", outcome="error",
             error="Error: payment gateway timeout after 30s", result_ref=ref("messages[6]", 6, "call_Zr81kLx4")),
        Step("final_answer", ref("messages[7]", 7),
             text="Your booking NR-48213 is cancelled and a refund of 84.50 EUR is on its way to your card."),
    ]
    assert trace.final_answer.startswith("Your booking NR-48213 is cancelled")
    assert trace.prompt.startswith("Hi, I need to cancel")


def call(call_id="c1", name="cancel_booking", arguments='{"booking_id": "B7"}'):
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]}


def test_unparsable_arguments_are_kept_as_text():
    [step] = read_trace([call(arguments='{"booking_id": "B7"'),
                         {"role": "tool", "tool_call_id": "c1", "content": "done"}], "t.json").steps
    assert (step.outcome, step.args, step.args_parsed) == ("bad_args", '{"booking_id": "B7"', False)
    assert step.error == "arguments are not valid JSON"
    assert step.result == "done"  # the result is kept even so


def test_a_call_with_no_result_is_no_result():
    [step, answer] = read_trace([call(), {"role": "assistant", "content": "Cancelled."}], "t.json").steps
    assert (step.outcome, step.result, step.result_ref) == ("no_result", None, None)
    assert answer.type == "final_answer"


@pytest.mark.parametrize("content, error", [
    ('{"error": {"code": 404, "message": "no such booking"}}', '{"code": 404, "message": "no such booking"}'),
    ('{"status": "error", "error_message": "card declined"}', "card declined"),
    ("ERROR 500", "ERROR 500"),
    ("  error: quota", "error: quota"),
    ("Error", "Error"),
    ([{"type": "text", "text": "Error: locked"}], "Error: locked"),
])
def test_error_results(content, error):
    [step] = read_trace([call(), {"role": "tool", "tool_call_id": "c1", "content": content}], "t.json").steps
    assert (step.outcome, step.error) == ("error", error)


@pytest.mark.parametrize("content", ['{"error": null, "status": "cancelled"}', "Errors: none", "errorless",
                                     '{"status": "ok"}', "null", "The error rate is 0"])
def test_results_that_are_not_errors(content):
    [step] = read_trace([call(), {"role": "tool", "tool_call_id": "c1", "content": content}], "t.json").steps
    assert step.outcome == "ok"


def test_empty_messages_are_skipped_and_listed():
    trace = read_trace([{"role": "user", "content": ""}, {"role": "assistant", "content": None}], "t.json")
    assert trace.steps == ()
    assert [(s.ref.path, s.reason) for s in trace.skipped] == [
        ("$[0]", "user message with no text"), ("$[1]", "assistant message with no text and no tool calls")]


def error_of(value, fmt="openai_chat"):
    with pytest.raises(TraceError) as caught:
        read_trace(value, "t.json", fmt)
    return [d.render() for d in caught.value.diagnostics]


def test_dangling_tool_call_id():
    assert error_of([call(), {"role": "tool", "tool_call_id": "c9", "content": "ok"}]) == [
        "t.json: B022 $[1].tool_call_id: a tool result for no tool call before it (id 'c9')\n"
        "  hint: a result must come after the tool call it answers, naming the call's id"]


def test_result_before_its_call_is_dangling():
    assert error_of({"messages": [{"role": "tool", "tool_call_id": "c1", "content": "ok"}, call()]})[0].startswith(
        "t.json: B022 messages[0].tool_call_id: a tool result for no tool call before it (id 'c1')")


def test_answered_twice_and_duplicate_ids():
    twice = [call(), {"role": "tool", "tool_call_id": "c1", "content": "ok"},
             {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    assert error_of(twice) == ["t.json: B023 $[2].tool_call_id: tool call 'c1' is answered twice\n"
                               "  hint: its first result is at $[1]"]
    # Two open calls with one id: a result for that id could answer either.
    assert error_of([call(), call(), {"role": "tool", "tool_call_id": "c1", "content": "ok"}]) == [
        "t.json: B023 $[2].tool_call_id: 2 unanswered tool calls have the id 'c1': which one this result answers is "
        "ambiguous\n  hint: each call that is open at once needs its own id (the calls are at $[0].tool_calls[0], "
        "$[1].tool_calls[0])"]


def test_an_id_used_again_after_its_call_is_answered():
    # GPT-4o and llama.cpp reuse ids: a result answers the latest open call with its id.
    trace = read_trace([call(), {"role": "tool", "tool_call_id": "c1", "content": "first"}, call(),
                        {"role": "tool", "tool_call_id": "c1", "content": "Error: second"}], "t.json")
    assert [(s.result, s.outcome, s.result_ref.path) for s in trace.steps] == [
        ("first", "ok", "$[1]"), ("Error: second", "error", "$[3]")]


@pytest.mark.parametrize("value, message", [
    ({"messages": {"role": "user"}}, "B021 messages: must be an array, not an object"),
    ([{"role": "user", "content": 7}], "B021 $[0].content: must be a string or an array of parts, not a number"),
    ([{"content": "hi"}], "B021 $[0].role: missing"),
    (["hi"], "B021 $[0]: must be an object, not a string"),
    ([{"role": "robot", "content": "hi"}], "B021 $[0].role: unknown role 'robot'"),
    ([{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "x"}}]}],
     "B021 $[0].tool_calls[0].function.arguments: missing"),
    ([{"role": "assistant", "tool_calls": [{"id": 5, "function": {"name": "x", "arguments": "{}"}}]}],
     "B021 $[0].tool_calls[0].id: must be a string, not a number"),
    ([{"role": "tool", "content": "ok"}], "B021 $[0].tool_call_id: missing"),
    ([{"role": "user", "content": [{"type": "text"}]}], "B021 $[0].content[0].text: missing"),
    ("hello", "B021 $: no messages: a Chat Completions trace is an array of messages or an object with \"messages\""),
])
def test_wrong_shapes_are_located(value, message):
    assert error_of(value)[0].split("\n")[0] == f"t.json: {message}"


def test_deeply_nested_arguments_are_bad_args_not_a_crash():
    deep = "[" * 100_000 + "]" * 100_000
    [step] = read_trace([call(arguments=deep)], "t.json").steps
    assert (step.outcome, step.args_parsed) == ("bad_args", False)


def test_huge_content_is_read_whole():
    text = "x" * 5_000_000
    trace = read_trace([{"role": "user", "content": text}], "t.json")
    assert trace.prompt == text


def test_a_file_path_is_read_and_errors_name_it(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([call(), {"role": "tool", "tool_call_id": "zz", "content": "ok"}]))
    with pytest.raises(TraceError) as caught:
        admiss.read_trace(bad)
    assert caught.value.diagnostics[0].file == str(bad)
    assert caught.value.diagnostics[0].code == "B022"


def test_anthropic_blocks_in_a_chat_trace_are_refused_not_lost():
    # Detection stops at the first message only Chat Completions has; a tool_use block after
    # it would have vanished with its call.
    mixed = [{"role": "system", "content": "be brief"}, {"role": "assistant", "content": [
        {"type": "text", "text": "refunding"}, {"type": "tool_use", "id": "t1", "name": "refund", "input": {}}]}]
    assert error_of(mixed) == [
        "t.json: B021 $[1].content[1].type: a tool_use block is Anthropic's, in a trace read as Chat Completions\n"
        "  hint: a trace mixes the two formats; if it is Anthropic Messages, name it: --trace anthropic "
        '(trace_format="anthropic" in Python)']
