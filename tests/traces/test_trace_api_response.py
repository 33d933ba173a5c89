"""Single API response objects (a chat.completion, an Anthropic Message): one turn's trace."""

from __future__ import annotations

import pytest

from admiss.errors import TraceError
from admiss.traces.read import read_trace


def completion(message, choices=1):
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1-mini",
            "choices": [{"index": i, "message": message, "finish_reason": "stop"} for i in range(choices)]}


def test_a_text_reply_is_the_final_answer():
    trace = read_trace(completion({"role": "assistant", "content": "Paris is sunny."}))
    assert (trace.format, trace.model, trace.final_answer) == ("api_response", "gpt-4.1-mini", "Paris is sunny.")
    assert trace.steps[0].ref.path == "choices[0].message"


def test_tool_calls_of_a_response_have_no_result():
    trace = read_trace(completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "book", "arguments": "{not json"}}]}))
    weather, book = trace.steps
    assert (weather.tool_name, weather.args, weather.outcome, weather.ref.tool_call_id) == (
        "get_weather", {"city": "Paris"}, "no_result", "call_1")
    assert book.outcome == "bad_args"
    assert trace.final_answer is None


def test_several_choices_are_refused_at_choices():
    with pytest.raises(TraceError) as raised:
        read_trace(completion({"role": "assistant", "content": "a"}, choices=2), "r.json")
    assert raised.value.diagnostics[0].code == "B021" and raised.value.diagnostics[0].message.startswith("choices:")


def test_an_anthropic_message_keeps_block_order_and_paths():
    trace = read_trace({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                        "content": [{"type": "thinking", "thinking": "look it up", "signature": "x"},
                                    {"type": "text", "text": "Let me check."},
                                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                                    {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}}]})
    assert [(s.type, s.ref.path) for s in trace.steps] == [
        ("reasoning", "content[0]"), ("assistant_text", "content"), ("tool_call", "content[2]")]
    assert trace.steps[2].outcome == "no_result"
    assert [(s.ref.path, s.reason) for s in trace.skipped] == [("content[3]", "server_tool_use block")]


def test_a_broken_response_is_a_located_error():
    with pytest.raises(TraceError) as raised:
        read_trace(completion({"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}), "r.json")
    assert raised.value.diagnostics[0].message == "choices[0].message.tool_calls[0].function.arguments: missing"
