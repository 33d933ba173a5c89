"""The chat-completions client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
from chat_server import Reply, completion
from senders import SENDERS, offer

from admiss.config import Config, Price, ProviderConfig
from admiss.providers import Completion, HttpxSender, ProviderError, Providers, Usage, cost_usd, split_model

HELLO = [{"role": "user", "content": "hello"}]


def call(providers: Providers, model: str = "local/some-model") -> Completion:
    async def go() -> Completion:
        try:
            return await providers.complete(model, HELLO)
        finally:
            await providers.aclose()

    return asyncio.run(go())


@pytest.fixture(params=SENDERS)
def providers_for(request):
    """Every test here runs once per sender: httpx's (the default), the gateway's pool, aiohttp."""

    def make(url: str, environ: dict | None = None, **options) -> Providers:
        return offer(Providers({"local": ProviderConfig("local", url, **options)}, environ=environ or {}),
                     request.param)

    return make


def test_a_reply_gives_its_text_and_usage(chat_server, providers_for):
    chat_server.script(completion("hi there", prompt_tokens=7, completion_tokens=3))
    result = call(providers_for(chat_server.url))
    assert result == Completion("hi there", Usage(7, 3), finish_reason="stop")
    [request] = chat_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {"model": "some-model", "messages": HELLO}
    assert "authorization" not in request.headers


def test_the_model_part_may_contain_slashes(chat_server, providers_for):
    call(providers_for(chat_server.url), "local/meta-llama/Llama-3-8B")
    assert chat_server.requests[0].body["model"] == "meta-llama/Llama-3-8B"


def test_the_key_comes_from_the_named_environment_variable(chat_server, providers_for):
    call(providers_for(chat_server.url, {"LOCAL_KEY": "sk-test"}, api_key_env="LOCAL_KEY"))
    assert chat_server.requests[0].headers["authorization"] == "Bearer sk-test"


def test_an_unset_key_variable_is_an_error_before_any_request(chat_server, providers_for):
    with pytest.raises(ProviderError, match=r"environment variable LOCAL_KEY is not set \(api_key_env of \[providers.local\]\)"):
        call(providers_for(chat_server.url, api_key_env="LOCAL_KEY"))
    assert chat_server.requests == []


def test_a_503_is_retried_and_then_succeeds(chat_server, providers_for):
    chat_server.script(Reply(503, {"error": {"message": "overloaded"}}), completion("second time lucky"))
    assert call(providers_for(chat_server.url)).text == "second time lucky"
    assert len(chat_server.requests) == 2


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_idempotent_failures_are_retried_a_bounded_number_of_times(chat_server, status, providers_for):
    chat_server.default = Reply(status, {"error": {"message": "try later"}})
    with pytest.raises(ProviderError, match=f"HTTP {status} after 2 retries: try later"):
        call(providers_for(chat_server.url, max_retries=2))
    assert len(chat_server.requests) == 3


@pytest.mark.parametrize("status", [500, 400, 401, 404])
def test_other_failures_are_not_retried(chat_server, status, providers_for):
    # A 500 may come after the model ran (and billed): repeating it is not idempotent.
    chat_server.default = Reply(status, {"error": {"message": "nope"}})
    with pytest.raises(ProviderError, match=f"provider local: HTTP {status}: nope"):
        call(providers_for(chat_server.url))
    assert len(chat_server.requests) == 1


def test_a_slow_reply_times_out_and_is_not_retried(chat_server, providers_for):
    chat_server.default = Reply(body=completion("late").body, delay_s=30)
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"no reply within 0.5s"):
        call(providers_for(chat_server.url, timeout_s=0.5))
    assert time.monotonic() - started < 15  # generous: the server would take 30 s
    assert len(chat_server.requests) == 1


def test_connection_failures_are_retried_then_reported(providers_for):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    with pytest.raises(ProviderError, match=f"cannot connect to http://127.0.0.1:{port}/v1/chat/completions"):
        call(providers_for(f"http://127.0.0.1:{port}/v1", max_retries=1))


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (Reply(body="not json"), "reply is not a chat completion"),
        (Reply(body={"choices": []}), "reply is not a chat completion"),
        (Reply(body={"choices": [{"message": {"content": None}}]}), "reply has no text content"),
    ],
)
def test_a_malformed_reply_is_an_error(chat_server, reply, says, providers_for):
    chat_server.script(reply)
    with pytest.raises(ProviderError, match=says):
        call(providers_for(chat_server.url))


def test_missing_usage_is_none(chat_server, providers_for):
    chat_server.script(completion("x", prompt_tokens=None))
    assert call(providers_for(chat_server.url)).usage is None


def test_models_must_name_a_configured_provider(chat_server, providers_for):
    providers = providers_for(chat_server.url)
    with pytest.raises(ProviderError, match=r"no \[providers.openai\] table in admiss.toml"):
        call(providers, "openai/gpt-5")
    with pytest.raises(ProviderError, match="names no provider"):
        call(providers, "gpt-5")
    assert (providers.configured("local/x"), providers.configured("openai/x"), providers.configured(None)) == (True, False, False)
    assert chat_server.requests == []


def test_one_client_per_provider_per_run(chat_server, providers_for):
    providers = providers_for(chat_server.url)

    async def three_calls() -> set[int]:
        clients = set()
        for _ in range(3):
            await providers.complete("local/m", HELLO)
            sender = providers._clients["local"]._sender
            clients.add(id(sender._http if isinstance(sender, HttpxSender) else sender))
        await providers.aclose()
        return clients

    assert len(asyncio.run(three_calls())) == 1
    assert providers._clients == {}


def test_split_model():
    assert split_model("openrouter/meta/llama") == ("openrouter", "meta/llama")
    for bad in ("gpt-5", "/gpt-5", "openai/"):
        with pytest.raises(ProviderError):
            split_model(bad)


def test_cost_from_usage_and_prices():
    config = Config(prices={"local/m": Price(input_usd_per_mtok=2.0, output_usd_per_mtok=8.0)})
    assert cost_usd(config, "local/m", [Usage(1_000_000, 500_000), Usage(0, 0)]) == (6.0, None)
    assert cost_usd(config, "LOCAL/M", [Usage(1_000_000, 0), None]) == (2.0, "1 call(s) reported no token usage and are not priced")
    assert cost_usd(config, "local/other", [Usage(10, 10)]) == (0.0, 'local/other is unpriced: add [prices."local/other"] to admiss.toml')


@pytest.mark.parametrize("base_url, environ, refused", [
    ("http://127.0.0.1:9/v1", {}, False),  # nothing was sent to echo: the look is skipped
    ("http://user:hunter2-secret@127.0.0.1:9/v1", {}, True),  # keyless, but the URL's user-info
    ("http://127.0.0.1:9/v1", {"KEY": "sk-live-0123456789"}, True),
])
def test_a_reply_echoing_what_was_sent_is_refused_keyless_or_not(base_url, environ, refused):
    from admiss.providers import ChatClient

    client = ChatClient(ProviderConfig("local", base_url, api_key_env="KEY" if environ else None), environ)
    echo = Completion("the password is hunter2-secret, the key sk-live-0123456789", Usage(1, 1))
    if refused:
        with pytest.raises(ProviderError, match="repeats the credentials"):
            client.refuse_echo(echo)
    else:
        client.refuse_echo(echo)


class _Recording:
    """A sender that keeps each body it is handed and answers with one completion."""

    def __init__(self):
        self.bodies: list[bytes] = []

    async def post(self, url, body, headers, max_bytes):
        from admiss.providers import Reply as HTTPReply

        self.bodies.append(body)
        return HTTPReply(200, {}, json.dumps(completion("ok").body).encode())

    async def aclose(self):
        pass


@pytest.mark.parametrize("messages", [
    HELLO,
    [{"role": "system", "content": "be \u00e9 brief"}, {"role": "user", "content": [{"type": "text", "text": "x"}]},
     {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
                                                            "function": {"name": "f", "arguments": "{\"a\": 1.5}"}}]},
     {"role": "tool", "tool_call_id": "c", "content": "1e400 and \U0001f600"}],
])
def test_a_body_sent_with_its_messages_text_is_the_body_written_whole(messages):
    # The gateway hands the client its messages' exact text (made for the memo), which the
    # body copies in: the bytes sent must be those of writing the body whole.
    from admiss.jsonio import exact_text
    from admiss.providers import ChatClient

    sender = _Recording()
    client = ChatClient(ProviderConfig("local", "http://127.0.0.1:9/v1"), environ={}, sender=sender)
    params = {"temperature": 0.5, "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}
    for text in (None, exact_text(messages)):
        asyncio.run(client.complete("m", messages, params, text))
    assert sender.bodies[0] == sender.bodies[1]
    assert json.loads(sender.bodies[1]) == {**params, "model": "m", "messages": messages}
