"""Round trips through the two wire formats (admiss/serve/wire/): what a client is served,
sent back in its next request, reads into the same neutral request in either format, and an
Anthropic conversation reads into the chat-completions messages its OpenAI twin is."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from admiss.providers import Completion
from admiss.serve.calls import RequestError
from admiss.serve.conversation import conversation_trace
from admiss.serve.router import Served
from admiss.serve.wire import anthropic_messages, openai_chat

RECEIPT = {"id": "rcpt_1", "request_id": "chatcmpl-abc", "usage": [],
           "chain": {"name": "agent", "model_cost_usd": 0.0, "gate_cost_usd": 0.0}}
CALLS = ({"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order":"A1"}'}},
         {"id": "call_2", "type": "function", "function": {"name": "issue_refund",
                                                           "arguments": '{"order":"A1","amount":20.5,"note":"é"}'}})


def served(text: str | None, calls: tuple = ()) -> Served:
    return Served(text, "cheap", "fake/cheap", "tool_calls" if calls else "stop", RECEIPT, calls)


def user(text: str = "Refund A1.") -> dict:
    return {"role": "user", "content": text}


@pytest.mark.parametrize("answer", [served("Done."), served(None, CALLS), served("Let me look.", CALLS[:1])],
                         ids=["text", "calls", "both"])
def test_a_served_answer_sent_back_reads_the_same_in_either_format(answer):
    openai_turn = openai_chat.response(answer, 0)["choices"][0]["message"]
    anthropic_turn = {"role": "assistant", "content": anthropic_messages.response(answer, 0)["content"]}
    # Through JSON, as a client sends it.
    via_openai = openai_chat.read({"messages": json.loads(json.dumps([user(), openai_turn]))}).request
    via_anthropic = anthropic_messages.read({"max_tokens": 9, "messages": json.loads(json.dumps(
        [user(), anthropic_turn]))}).request
    assert via_anthropic.messages == via_openai.messages
    assert via_anthropic.conversation["messages"][1] == anthropic_turn


def test_an_anthropic_conversation_is_its_chat_completions_twin():
    anthropic_body = {"max_tokens": 64, "system": "Be brief.", "messages": [
        user(),
        {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
                                          {"type": "tool_use", "id": "t1", "name": "lookup_order", "input": {"order": "A1"}},
                                          {"type": "tool_use", "id": "t2", "name": "issue_refund", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "paid"}]},
                                     {"type": "tool_result", "tool_use_id": "t2", "content": "no", "is_error": True},
                                     {"type": "text", "text": "And?"}]}],
        "tools": [{"name": "lookup_order", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "lookup_order", "disable_parallel_tool_use": True}}
    openai_body = {"messages": [
        {"role": "system", "content": "Be brief."}, user(),
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order":"A1"}'}},
            {"id": "t2", "type": "function", "function": {"name": "issue_refund", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "paid"},
        {"role": "tool", "tool_call_id": "t2", "content": "no"},
        user("And?")],
        "max_tokens": 64,
        "tools": [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object"}}}],
        "tool_choice": {"type": "function", "function": {"name": "lookup_order"}}, "parallel_tool_calls": False}
    from_anthropic = anthropic_messages.read(anthropic_body).request
    from_openai = openai_chat.read(openai_body).request
    assert (from_anthropic.messages, from_anthropic.params) == (from_openai.messages, from_openai.params)
    assert from_anthropic.reader == "anthropic" and from_anthropic.conversation["system"] == "Be brief."


def test_anthropic_carries_arguments_as_the_compact_text_of_their_object():
    completion = Completion(None, None, "tool_calls", ({**CALLS[1], "function": {
        "name": "issue_refund", "arguments": '{ "order" : "A1",\n "amount": 20.5, "note": "\\u00e9" }'}},))
    carried = anthropic_messages.carry(completion)
    assert carried.tool_calls[0]["function"]["arguments"] == CALLS[1]["function"]["arguments"]
    for arguments in ("[1]", '"text"', "{not json"):
        refused = Completion(None, None, "tool_calls", ({**CALLS[0], "function": {"name": "f", "arguments": arguments}},))
        assert isinstance(anthropic_messages.carry(refused), str)


# ------------------------------------------------------------------ hostile bodies

_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["type", "text", "id", "name", "input", "tool_use_id", "content", "is_error", "role", "thinking", "x"]),
        inner, max_size=5), max_leaves=20)
_BLOCKS = st.fixed_dictionaries({"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image"]) | _VALUES},
                                optional={k: _VALUES for k in ("text", "id", "name", "input", "tool_use_id", "content",
                                                               "is_error", "thinking")})
_MESSAGES = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]) | _VALUES,
                                   "content": st.text(max_size=5) | st.lists(_BLOCKS, max_size=4) | _VALUES})
_BODIES = st.fixed_dictionaries(
    {"max_tokens": st.integers(-1, 5) | _VALUES, "messages": st.lists(_MESSAGES, max_size=4) | _VALUES},
    optional={"system": _VALUES, "metadata": _VALUES, "stop_sequences": _VALUES, "temperature": _VALUES,
              "tools": st.lists(st.fixed_dictionaries({"name": _VALUES, "input_schema": _VALUES},
                                                      optional={"type": _VALUES}), max_size=3) | _VALUES,
              "tool_choice": st.fixed_dictionaries({"type": st.sampled_from(["auto", "any", "tool", "none"]) | _VALUES},
                                                   optional={"name": _VALUES, "disable_parallel_tool_use": _VALUES})
              | _VALUES})


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(_BODIES)
def test_a_hostile_messages_body_is_read_or_refused_by_name_never_raised(body):
    # Whatever a client sends, the route answers a 400 naming the field (RequestError), or
    # reads it into a request whose conversation the trace reader reads or refuses alike.
    try:
        request = anthropic_messages.read(body).request
    except RequestError as refused:
        assert refused.param
        return
    try:
        conversation_trace(request.conversation, request.reader)
    except RequestError:
        pass
