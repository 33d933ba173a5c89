"""A provider with ``api = "anthropic"``: every call goes to a real Messages API server on
127.0.0.1 (chat_server.py with ``messages_api=True``): what is sent, what is read of the
reply, errors and retries, hostile replies, the judge gate with an Anthropic judge, and the
admiss.toml keys."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anthropic
import pytest
from anthropic.types import message_create_params
from chat_server import ChatServer, Reply, completion, grade
from gatekit import gate, run_gate

from admiss import anthropic_api
from admiss.config import ANTHROPIC_API, Config, Price, ProviderConfig, read_config
from admiss.errors import InputError
from admiss.gates import judge
from admiss.gates.base import PASS, Candidate, GateContext
from admiss.providers import MAX_CALL_TOKENS, Completion, ProviderError, Providers, Usage, cost_usd

KEY = "sk-ant-secret-0123456789abcdef"
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "description": "Find an order",
                                           "parameters": {"type": "object", "properties": {"order": {"type": "string"}}}}},
         {"type": "function", "function": {"name": "ping"}}]


@pytest.fixture
def server():
    upstream = ChatServer(messages_api=True).start()
    yield upstream
    upstream.stop()


def provider(server: ChatServer, **options) -> ProviderConfig:
    settings = {"api_key_env": "ANTH_KEY", "timeout_s": 5.0, "max_retries": 2, **options}
    return ProviderConfig("anth", server.root, api=ANTHROPIC_API, **settings)


def complete(server: ChatServer, messages, params=None, **options) -> Completion:
    async def go():
        providers = Providers({"anth": provider(server, **options)}, {"ANTH_KEY": KEY})
        try:
            return await providers.complete("anth/claude-x", messages, params)
        finally:
            await providers.aclose()

    return asyncio.run(go())


def failure(server: ChatServer, messages=None, params=None, **options) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        complete(server, messages or [{"role": "user", "content": "hi"}], params, **options)
    assert KEY not in caught.value.reason
    return caught.value


def test_a_call_is_a_messages_request_with_the_key_the_version_and_the_system_lifted_out(server):
    server.script(completion("Hello there.", 12, 3))
    done = complete(server, [{"role": "system", "content": "Be brief."}, {"role": "developer", "content": "Be kind."},
                             {"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                    {"stop": "END", "user": "u-1"})
    [sent] = server.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == KEY and sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.body == {"model": "claude-x", "max_tokens": 4096, "system": "Be brief.\n\nBe kind.",
                         "messages": [{"role": "user", "content": "Hi"}],
                         "stop_sequences": ["END"], "metadata": {"user_id": "u-1"}}
    assert (done.text, done.usage, done.finish_reason, done.stop_reason) == ("Hello there.", Usage(12, 3), "stop",
                                                                            "end_turn")


def test_max_tokens_is_the_calls_else_the_providers(server):
    complete(server, [{"role": "user", "content": "hi"}], {"max_tokens": 77})
    complete(server, [{"role": "user", "content": "hi"}], {"max_completion_tokens": 55})
    complete(server, [{"role": "user", "content": "hi"}], max_tokens=300)
    assert [r.body["max_tokens"] for r in server.requests] == [77, 55, 300]


def test_tools_tool_choice_and_a_tool_loop_are_sent_in_messages_form(server):
    history = [
        {"role": "user", "content": "Where is A1?"},
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order": "A1"}'}},
            {"id": "toolu_2", "type": "function", "function": {"name": "ping", "arguments": ""}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "shipped"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": [{"type": "text", "text": "pong"}]},
        {"role": "user", "content": "Thanks."},
    ]
    complete(server, history, {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "ping"}},
                               "parallel_tool_calls": False})
    complete(server, history[:1], {"tools": TOOLS, "tool_choice": "required"})
    complete(server, history[:1], {"tools": TOOLS, "parallel_tool_calls": False})
    first, second, third = (r.body for r in server.requests)
    assert first["tools"] == [
        {"name": "lookup_order", "input_schema": TOOLS[0]["function"]["parameters"], "description": "Find an order"},
        {"name": "ping", "input_schema": {"type": "object"}}]
    assert first["messages"] == [
        {"role": "user", "content": "Where is A1?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup_order", "input": {"order": "A1"}},
            {"type": "tool_use", "id": "toolu_2", "name": "ping", "input": {}}]},
        # The tool results and the text after them are one user turn, results first.
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "shipped"},
                                     {"type": "tool_result", "tool_use_id": "toolu_2", "content": "pong"},
                                     {"type": "text", "text": "Thanks."}]}]
    assert first["tool_choice"] == {"type": "tool", "name": "ping", "disable_parallel_tool_use": True}
    assert second["tool_choice"] == {"type": "any"}
    assert third["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


def test_the_replys_text_and_tool_use_blocks_make_the_completion_and_its_usage_is_priced(server):
    server.script(Reply(body={
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "stop_sequence": None,
        "content": [{"type": "thinking", "thinking": "hidden", "signature": "s"},
                    {"type": "text", "text": "I will "}, {"type": "text", "text": "look."},
                    {"type": "tool_use", "id": "toolu_9", "name": "lookup_order", "input": {"order": "A1", "n": 2}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1000, "output_tokens": 50, "cache_read_input_tokens": 200}}))
    done = complete(server, [{"role": "user", "content": "hi"}], {"tools": TOOLS})
    assert done.text == "I will look."  # thinking is not served
    assert done.tool_calls == ({"id": "toolu_9", "type": "function",
                                "function": {"name": "lookup_order", "arguments": '{"order":"A1","n":2}'}},)
    assert (done.finish_reason, done.stop_reason, done.usage) == ("tool_calls", "tool_use", Usage(1200, 50))
    config = Config(prices={"anth/claude-x": Price(3.0, 15.0)})
    assert cost_usd(config, "anth/claude-x", [done.usage])[0] == pytest.approx((1200 * 3 + 50 * 15) / 1e6)


def test_a_reply_of_tool_calls_only_has_no_text_and_an_empty_one_is_the_model_declining(server):
    server.script(Reply(body={"type": "message", "content": [
        {"type": "tool_use", "id": "t1", "name": "ping", "input": {}}], "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1}}),
        Reply(body={"type": "message", "content": [], "stop_reason": "refusal", "usage": {}}))
    assert complete(server, [{"role": "user", "content": "hi"}]).text is None
    declined = failure(server)
    assert declined.content_refused and "the model declined" in declined.reason


def test_an_error_reply_is_read_in_anthropics_shape_and_400_is_the_requests_fault(server):
    server.script(Reply(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                         "message": f"prompt is too long (key {KEY})"}}))
    refused = failure(server)
    assert refused.content_refused
    assert refused.reason == "provider anth: HTTP 400: invalid_request_error: prompt is too long (key ***)"
    server.script(Reply(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}))
    unauthorised = failure(server)
    assert not unauthorised.content_refused
    assert unauthorised.reason == "provider anth: HTTP 401: authentication_error: invalid x-api-key"


def test_a_long_error_message_is_cut_short_and_a_reply_echoing_the_key_is_refused(server):
    server.script(Reply(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "x" * 5000}}))
    reason = failure(server).reason
    assert reason.startswith("provider anth: HTTP 400: invalid_request_error: xxx") and len(reason) < 300
    server.script(Reply(body={**MESSAGE, "content": [{"type": "text", "text": f"your key is {KEY}"}]}))
    assert "repeats the credentials it was sent" in failure(server).reason


def test_429_and_529_are_retried_after_the_retry_after_they_ask_for(server):
    server.script(Reply(429, {"error": {"message": "slow down"}}, headers=(("retry-after", "0"),)),
                  Reply(529, {"error": {"message": "Overloaded"}}), completion("at last"))
    assert complete(server, [{"role": "user", "content": "hi"}]).text == "at last"
    assert len(server.requests) == 3
    server.script(*[Reply(529, {"error": {"message": "Overloaded"}}, headers=(("retry-after", "0"),))] * 3)
    overloaded = failure(server)
    assert overloaded.reason == "provider anth: HTTP 529 after 2 retries: overloaded_error: Overloaded"
    server.script(Reply(500, {"error": {"message": "boom"}}))
    assert failure(server).reason == "provider anth: HTTP 500: api_error: boom"  # maybe billed: not repeated
    assert len(server.requests) == 7


def test_an_unset_key_is_named_and_no_key_sends_no_key_header(server):
    with pytest.raises(ProviderError, match="environment variable ANTH_KEY is not set"):
        asyncio.run(Providers({"anth": provider(server)}, {}).complete("anth/m", [{"role": "user", "content": "hi"}]))
    complete(server, [{"role": "user", "content": "hi"}], api_key_env=None)
    [sent] = server.requests
    assert "x-api-key" not in sent.headers and sent.headers["anthropic-version"] == "2023-06-01"


MESSAGE = {"type": "message", "role": "assistant", "stop_reason": "end_turn",
           "usage": {"input_tokens": 5, "output_tokens": 5}}


@pytest.mark.parametrize(("body", "says"), [
    ({**MESSAGE, "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "rm -rf /"}]},
     "content[0]: tool_use t (f): input is not a JSON object"),
    ({**MESSAGE, "content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1, 2]}]}, "input is not a JSON object"),
    ({**MESSAGE, "content": [{"type": "tool_use", "id": 7, "name": "f", "input": {}}]}, "id must be a non-empty string"),
    ('{"type": "message", "content": [{"type": "tool_use", "id": "t", "name": "f", '
     '"input": {"amount": 1, "amount": 1000}}]}', "key given twice in one object"),
    ('{"type": "message", "content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 1e999}}',
     "beyond a double's range"),
    ('{"type": "message", "content": [{"type": "text", "text": "' + "9" * 5000 + '"}], "n": ' + "9" * 5000 + "}",
     "an integer of 5,000 digits"),
    ("[" * 100000, "not JSON admiss reads"),
    ("not json at all", "not JSON admiss reads"),
    ([1, 2], "not a JSON object"),
    ({**MESSAGE, "content": "hello"}, 'not a message (a "content" array of blocks)'),
    ({**MESSAGE, "type": "completion", "content": []}, "not a message"),
    ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "an error: overloaded_error: Overloaded"),
    ({**MESSAGE, "content": [{"type": "text", "text": 12}]}, "content[0] is not a text, tool_use or thinking block"),
    ({**MESSAGE, "content": [{"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}]},
     "content[0] is not a text, tool_use or thinking block"),
    ({**MESSAGE, "content": [None]}, "content[0] is not a text"),
])
def test_a_hostile_reply_fails_the_call_as_the_servers_fault_with_a_reason(server, body, says):
    server.script(Reply(body=body))
    failed = failure(server)
    assert failed.reason.startswith("provider anth: reply is not a Messages API message: ")
    assert says in failed.reason and not failed.content_refused


@pytest.mark.parametrize(("usage", "expected"), [
    ({"input_tokens": 10**30, "output_tokens": 1}, Usage(out_of_bounds=True)),
    ({"input_tokens": MAX_CALL_TOKENS, "output_tokens": 1, "cache_read_input_tokens": 5}, Usage(out_of_bounds=True)),
    ({"input_tokens": True, "output_tokens": 1}, None),
    ({"input_tokens": -1, "output_tokens": 1}, None),
    ({"input_tokens": 3}, None),
    ({"input_tokens": 3, "output_tokens": 4, "cache_creation_input_tokens": None}, Usage(3, 4)),
    ("lots", None),
])
def test_usage_past_belief_or_not_counts_is_never_priced(server, usage, expected):
    server.script(Reply(body={**MESSAGE, "content": [{"type": "text", "text": "ok"}], "usage": usage}))
    assert complete(server, [{"role": "user", "content": "hi"}]).usage == expected


def test_a_stop_reason_the_api_does_not_document_is_not_kept(server):
    server.script(Reply(body={**MESSAGE, "content": [{"type": "text", "text": "ok"}], "stop_reason": "x" * 10000}))
    done = complete(server, [{"role": "user", "content": "hi"}])
    assert (done.text, done.stop_reason, done.finish_reason) == ("ok", None, None)


@pytest.mark.parametrize(("messages", "params", "says"), [
    ([{"role": "user", "content": "hi"}], {"seed": 7}, "seed: the Messages API has no such field"),
    ([{"role": "user", "content": "hi"}], {"response_format": {"type": "json_object"}}, "response_format"),
    ([{"role": "user", "content": "hi"}], {"temperature": 0.2}, "temperature: the Messages API takes no sampling"),
    ([{"role": "user", "content": "hi"}], {"top_p": 0.9}, "top_p: the Messages API takes no sampling"),
    ([{"role": "user", "content": "hi"}], {"stop": {"a": 1}}, "stop must be a string or an array of strings"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "[1]"}}]}], {},
     "tool call c: arguments are not a JSON object"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": '}}]}], {},
     "tool call c: arguments are not JSON"),
])
def test_what_the_messages_api_cannot_carry_is_refused_by_name_and_never_sent(server, messages, params, says):
    refused = failure(server, messages, params)
    assert refused.content_refused and says in refused.reason
    assert refused.reason.startswith("provider anth: cannot be sent to the Messages API: ")
    assert server.requests == []


def test_the_judge_gate_grades_through_an_anthropic_judge(tmp_path: Path, server, monkeypatch):
    monkeypatch.setenv("ANTH_KEY", KEY)
    server.script(grade(0.9))
    ctx = GateContext(tmp_path, Config(providers={"anth": provider(server)}, prices={"anth/judge": Price(1.0, 2.0)}))
    candidate = Candidate(output='{"total": 3}', model="other/maker", prompt="Sum the items.")
    result = run_gate(judge.build(gate("judge", model="anth/judge", rubric="Is the sum right?"), ctx), candidate, ctx)
    assert (result.verdict, result.score) == (PASS, 0.9)
    assert result.cost_usd == pytest.approx(100e-6 + 40e-6)
    [sent] = server.requests
    assert sent.path == "/v1/messages" and sent.body["model"] == "judge"
    # The judge's system prompt is the request's system; the fenced task is its one user turn.
    assert sent.body["system"] == judge.SYSTEM_PROMPT
    assert [m["role"] for m in sent.body["messages"]] == ["user"] and '{"total": 3}' in sent.body["messages"][0]["content"]


# ---------------------------------------------------------------- admiss.toml

def _config(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "admiss.toml"
    path.write_text(f'[providers.anth]\nbase_url = "https://api.example.test"\n{table}')
    return path


def test_api_anthropic_and_max_tokens_are_read(tmp_path):
    config = read_config(_config(tmp_path, 'api = "anthropic"\nmax_tokens = 1024\n'))
    assert (config.providers["anth"].api, config.providers["anth"].max_tokens) == ("anthropic", 1024)
    assert read_config(_config(tmp_path, "")).providers["anth"].api == "openai"


@pytest.mark.parametrize(("table", "line", "message", "hint"), [
    ('api = "claude"\n', 3, 'providers.anth.api must be "openai" or "anthropic", not \'claude\'', '"anthropic" for'),
    ("api = 2\n", 3, "providers.anth.api must be a string, not an integer", None),
    ('max_tokens = 100\n', 3, 'max_tokens applies to api = "anthropic" only', "[rungs.CHAIN.RUNG]"),
    ('api = "anthropic"\nmax_tokens = 0\n', 4, "providers.anth.max_tokens must be at least 1, not 0", None),
])
def test_a_wrong_api_key_is_a_located_error_with_a_hint(tmp_path, table, line, message, hint):
    with pytest.raises(InputError) as caught:
        read_config(_config(tmp_path, table))
    [diagnostic] = caught.value.diagnostics
    assert diagnostic.message == message and diagnostic.span.line == line
    assert (hint is None and diagnostic.hint is None) or hint in diagnostic.hint


def test_an_anthropic_base_url_ending_in_v1_is_refused_with_the_root_to_give(tmp_path):
    path = tmp_path / "admiss.toml"
    path.write_text('[providers.anth]\napi = "anthropic"\nbase_url = "https://api.anthropic.com/v1"\n')
    with pytest.raises(InputError) as caught:
        read_config(path)
    [diagnostic] = caught.value.diagnostics
    assert diagnostic.span.line == 3 and "ends in /v1, and admiss adds /v1/messages" in diagnostic.message
    assert '"https://api.anthropic.com"' in diagnostic.hint


def test_every_field_sent_is_one_the_official_clients_request_type_has():
    """What admiss sends is what the ``anthropic`` package's request types describe (their keys)."""
    body = anthropic_api.request_body("m", [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}],
                                      {"tools": TOOLS, "tool_choice": "auto", "parallel_tool_calls": False,
                                       "stop": ["x"], "user": "u", "max_tokens": 9}, 4096)
    assert set(body) == {"model", "max_tokens", "system", "messages", "tools", "tool_choice", "stop_sequences",
                         "metadata"}
    assert set(body) <= set(message_create_params.MessageCreateParamsNonStreaming.__annotations__)
    assert set(body["tools"][0]) <= set(anthropic.types.ToolParam.__annotations__)
    assert set(body["tool_choice"]) <= set(anthropic.types.ToolChoiceAutoParam.__annotations__)
    assert set(body["metadata"]) <= set(anthropic.types.MetadataParam.__annotations__)
