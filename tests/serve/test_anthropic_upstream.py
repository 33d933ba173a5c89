"""A real ``admiss serve`` whose rungs' provider speaks Anthropic's Messages API (``api =
"anthropic"``), driven by the official openai and anthropic clients: whichever route a
request came in by, it goes upstream as a Messages request, and its answer (text, tool calls,
streamed or not) comes back in the client's own format. The upstream is a real HTTP server
on 127.0.0.1 speaking the Messages API (chat_server.py, ``messages_api=True``) that replies
by the script in each test's first user message (agentkit.agent_route), or from its queue.
``admiss check --live`` is driven against the same upstream.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "gates"))

from agentkit import agent_route, call  # noqa: E402
from chat_server import ChatServer, Recorded, Reply, completion  # noqa: E402
from gatewaykit import GOOD, PROVIDER_KEY, Gateway  # noqa: E402
from wirekit import WIRES  # noqa: E402

RUBRIC = """
CHAIN json {
  RUNG cheap MODEL "anth/cheap" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE json_valid ON ABSTAIN fail_closed
  }
  RUNG strong MODEL "anth/strong" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}

CHAIN consistent {
  RUNG cheap MODEL "anth/cheap" {
    GATE consistency K 3 THRESHOLD 1.0 ON ABSTAIN fail_closed
  }
}

CHAIN agent {
  RUNG cheap MODEL "anth/cheap" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}
"""

CONFIG = """
[providers.anth]
base_url = "{root}"
api = "anthropic"
api_key_env = "FAKE_PROVIDER_KEY"
timeout_s = 5
max_retries = 2
max_tokens = 333

[prices."anth/cheap"]
input_usd_per_mtok = 1.0
output_usd_per_mtok = 2.0

[prices."anth/strong"]
input_usd_per_mtok = 10.0
output_usd_per_mtok = 20.0

[gates]
budget_rate = 1.0

[serve]
store = "receipts.db"
api_keys_env = "GATEWAY_KEYS"
"""

TOOLS = [
    {"type": "function", "function": {"name": "lookup_order", "description": "Find an order",
                                      "parameters": {"type": "object", "properties": {"order": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "issue_refund", "parameters": {"type": "object"}}},
]


@pytest.fixture(scope="module")
def upstream():
    server = ChatServer(route=agent_route, keep_alive=True, messages_api=True).start()
    server.default = completion(GOOD)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory, upstream):
    gw = Gateway(tmp_path_factory.mktemp("anthropic-upstream"), upstream, rubric=RUBRIC,
                 config=CONFIG.format(root=upstream.root))
    yield gw
    assert gw.stop() == 0, gw.log.read_text()


@pytest.fixture(params=WIRES, ids=lambda wire: wire.name)
def wire(request):
    return request.param


def task(script: dict | None = None, text: str = "What is the answer?") -> tuple[str, dict]:
    marker = uuid.uuid4().hex
    scripted = " " + json.dumps({"script": script}) if script else ""
    return marker, {"role": "user", "content": f"[{marker}] {text}{scripted}"}


def reached(upstream: ChatServer, marker: str) -> list[Recorded]:
    return [r for r in list(upstream.requests) if marker in json.dumps(r.body)]


def ask(gw: Gateway, wire, messages: list[dict], chain: str = "json", **more):
    """(text, served rung, receipt id, the raw response) of a plain request over ``wire``."""
    if wire.name == "openai":
        response = gw.client().chat.completions.create(model=chain, messages=messages, **more)
        text = response.choices[0].message.content
    else:
        response = wire.client(gw).messages.create(model=chain, messages=messages, max_tokens=64, **more)
        text = "".join(block.text for block in response.content if block.type == "text")
    admiss = response.model_extra["admiss"]
    return text, admiss["served_rung"], admiss["receipt_id"], response


def test_a_text_answer_goes_upstream_as_a_messages_request_from_either_route(gateway, upstream, wire):
    marker, user = task({"cheap": [GOOD]})
    system = {"role": "system", "content": "Answer in JSON."}
    messages = [system, user] if wire.name == "openai" else [user]
    more = {} if wire.name == "openai" else {"system": "Answer in JSON."}
    text, rung, receipt_id, response = ask(gateway, wire, messages, **more)
    assert (text, rung) == (GOOD, "cheap")
    [sent] = reached(upstream, marker)
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == PROVIDER_KEY and sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.body["system"] == "Answer in JSON." and sent.body["messages"] == [user]
    # The Messages route's max_tokens is the client's; a chat request without one gets the provider's.
    assert sent.body["max_tokens"] == (333 if wire.name == "openai" else 64)
    # The upstream's usage (100 in, 20 out) is priced and served in the client's terms.
    receipt = gateway.store().get(receipt_id)
    assert receipt["chain"]["model_cost_usd"] == pytest.approx((100 * 1.0 + 20 * 2.0) / 1e6)
    if wire.name == "openai":
        assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (100, 20)
        assert response.choices[0].finish_reason == "stop"
    else:
        assert (response.usage.input_tokens, response.usage.output_tokens) == (100, 20)
        assert response.stop_reason == "end_turn"


def test_a_tool_loop_runs_through_an_anthropic_upstream(gateway, upstream, wire):
    marker, user = task({"cheap": [{"tool_calls": [call("lookup_order", {"order": "A1"}),
                                                   call("issue_refund", {"order": "A1", "amount": 5})]},
                                   "Order A1 is refunded."]})
    tools = wire.tools(TOOLS)
    first = wire.complete(gateway, [user], "agent", tools, **wire.choice(parallel=True))
    assert first.stopped_for_tools and [c.name for c in first.calls] == ["lookup_order", "issue_refund"]
    assert [json.loads(c.arguments) for c in first.calls] == [{"order": "A1"}, {"order": "A1", "amount": 5}]
    sent = reached(upstream, marker)[0].body
    assert sent["tools"][0] == {"name": "lookup_order", "input_schema": TOOLS[0]["function"]["parameters"],
                                "description": "Find an order"}
    assert sent["tool_choice"] == {"type": "auto"}

    history = [user, wire.as_message(first),
               *wire.results((first.calls[0].id, {"status": "paid"}), (first.calls[1].id, {"status": "refunded"}))]
    second = wire.complete(gateway, history, "agent", tools)
    assert second.text == "Order A1 is refunded." and not second.calls and not second.stopped_for_tools
    # The second turn went upstream with the calls as tool_use blocks, the results as one user turn.
    sent = reached(upstream, marker)[1].body
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert [b["type"] for b in sent["messages"][1]["content"]] == ["tool_use", "tool_use"]
    assert sent["messages"][1]["content"][1]["input"] == {"order": "A1", "amount": 5}
    assert [(b["type"], b["tool_use_id"]) for b in sent["messages"][2]["content"]] == [
        ("tool_result", first.calls[0].id), ("tool_result", first.calls[1].id)]


def test_streamed_tool_calls_from_an_anthropic_upstream_reach_either_client(gateway, wire):
    arguments = {"order": "A1", "amount": 20, "reason": "damaged in transit, the box crushed"}
    _, user = task({"cheap": [{"tool_calls": [call("issue_refund", arguments)]}]})
    calls, pieces, stopped_for_tools = wire.stream(gateway, [user], "agent", wire.tools(TOOLS))
    assert [c.name for c in calls] == ["issue_refund"] and json.loads(calls[0].arguments) == arguments
    assert pieces > 3 and stopped_for_tools


def test_streamed_text_from_an_anthropic_upstream_reaches_either_client(gateway, wire):
    answer = '{"answer": "forty two, said in several words"}'
    _, user = task({"cheap": [answer]})
    if wire.name == "openai":
        chunks = list(gateway.client().chat.completions.create(model="json", messages=[user], stream=True))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert len(chunks) > 4 and chunks[-1].choices[0].finish_reason == "stop"
    else:
        with wire.client(gateway).messages.stream(model="json", max_tokens=64, messages=[user]) as stream:
            events = [event.type for event in stream]
            final = stream.get_final_message()
        text = final.content[0].text
        assert events[0] == "message_start" and events[-1] == "message_stop" and final.stop_reason == "end_turn"
    assert text == answer


def test_an_upstream_error_escalates_with_its_reason_on_the_receipt_and_no_key(gateway, upstream, wire):
    upstream.script(Reply(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                           "message": f"prompt is too long ({PROVIDER_KEY})"}}))
    marker, user = task()
    text, rung, receipt_id, _ = ask(gateway, wire, [user])
    assert (text, rung) == (GOOD, "strong")
    assert [r.body["model"] for r in reached(upstream, marker)] == ["cheap", "strong"]
    receipt = gateway.store().get(receipt_id)
    assert receipt["model_errors"] == [{"rung": "cheap", "error": "provider anth: HTTP 400: invalid_request_error: "
                                                                  "prompt is too long (***)"}]
    assert PROVIDER_KEY not in json.dumps(receipt)


def test_an_upstream_that_fails_every_rung_exhausts_the_chain(gateway, upstream, wire):
    overloaded = Reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
                       headers=(("retry-after", "0"),))
    upstream.script(*[overloaded] * 6)  # each rung: the call and its two retries
    marker, user = task()
    with pytest.raises(wire.statuses[422]) as caught:
        ask(gateway, wire, [user])
    assert wire.error_body(caught)["code"] == "chain_exhausted"
    assert len(reached(upstream, marker)) == 6
    receipt = gateway.store().get(caught.value.response.headers["x-admiss-receipt-id"])
    assert [e["error"] for e in receipt["model_errors"]] == [
        "provider anth: HTTP 529 after 2 retries: overloaded_error: Overloaded"] * 2


def test_a_429_then_success_is_served_by_the_same_rung(gateway, upstream, wire):
    upstream.script(Reply(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
                          headers=(("retry-after", "0"),)))
    marker, user = task()
    text, rung, receipt_id, _ = ask(gateway, wire, [user])
    assert (text, rung) == (GOOD, "cheap")
    assert [r.body["model"] for r in reached(upstream, marker)] == ["cheap", "cheap"]
    assert gateway.store().get(receipt_id)["model_errors"] == []


def test_a_hostile_upstream_reply_escalates_and_is_never_served(gateway, upstream, wire):
    upstream.script(Reply(body={"type": "message", "content": [
        {"type": "tool_use", "id": "t", "name": "issue_refund", "input": "rm -rf /"}], "stop_reason": "tool_use"}))
    marker, user = task()
    text, rung, receipt_id, _ = ask(gateway, wire, [user])
    assert (text, rung) == (GOOD, "strong")
    [error] = gateway.store().get(receipt_id)["model_errors"]
    assert error["error"] == ("provider anth: reply is not a Messages API message: content[0]: tool_use t "
                              "(issue_refund): input is not a JSON object")
    assert "Traceback" not in gateway.log.read_text()


def test_the_start_up_log_says_which_api_the_provider_speaks(gateway):
    [line] = [line for line in gateway.log.read_text().splitlines() if "provider anth: " in line]
    assert line.endswith(", speaking Anthropic's Messages API")


def test_check_live_calls_an_anthropic_provider(tmp_path, upstream):
    (tmp_path / "r.rubric").write_text(RUBRIC)
    (tmp_path / "admiss.toml").write_text(CONFIG.format(root=upstream.root))
    marker, user = task({"cheap": [GOOD]})
    (tmp_path / "b.json").write_text(json.dumps({"prompt": user["content"], "evidence": []}))
    result = subprocess.run([sys.executable, "-m", "admiss", "check", "--live", "--chain", "json", "--format", "json", "--rubric",
                             str(tmp_path / "r.rubric"), str(tmp_path / "b.json")], capture_output=True, text=True,
                            timeout=60, cwd=tmp_path, env={**os.environ, "FAKE_PROVIDER_KEY": PROVIDER_KEY})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["chain"]["served"] == "cheap"
    assert report["chain"]["model_cost_usd"] == pytest.approx(140e-6)
    [sent] = reached(upstream, marker)
    assert sent.path == "/v1/messages" and sent.headers["x-api-key"] == PROVIDER_KEY
    assert sent.body["messages"] == [{"role": "user", "content": user["content"]}] and sent.body["max_tokens"] == 333


def test_the_upstreams_stop_reason_is_kept_on_the_messages_route(gateway, upstream, wire):
    upstream.script(Reply(body={"type": "message", "role": "assistant", "content": [{"type": "text", "text": GOOD}],
                                "stop_reason": "stop_sequence", "usage": {"input_tokens": 3, "output_tokens": 4}}))
    _, user = task()
    text, rung, _, response = ask(gateway, wire, [user])
    assert (text, rung) == (GOOD, "cheap")
    if wire.name == "openai":
        assert response.choices[0].finish_reason == "stop"
    else:
        assert response.stop_reason == "stop_sequence"


def test_the_consistency_gates_samples_go_to_the_anthropic_upstream_too(gateway, upstream, wire):
    marker, user = task({"cheap": [GOOD]})
    text, rung, receipt_id, _ = ask(gateway, wire, [user], chain="consistent")
    assert (text, rung) == (GOOD, "cheap")
    sent = reached(upstream, marker)
    assert len(sent) == 4 and {r.path for r in sent} == {"/v1/messages"}  # the candidate and its 3 samples
    gate = gateway.store().get(receipt_id)["chain"]["rungs"][0]["gates"][0]
    assert (gate["gate"], gate["verdict"]) == ("consistency", "pass")


def test_serve_refuses_at_start_a_temperature_the_anthropic_rung_could_never_send(tmp_path, upstream):
    (tmp_path / "r.rubric").write_text(RUBRIC)
    (tmp_path / "admiss.toml").write_text(CONFIG.format(root=upstream.root).replace(
        "[serve]", "[rungs.json.strong]\ntemperature = 0.2\n\n[serve]"))
    result = subprocess.run([sys.executable, "-m", "admiss", "serve", str(tmp_path / "r.rubric"), "--chain", "json",
                             "--port", "0"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                            env={**os.environ, "FAKE_PROVIDER_KEY": PROVIDER_KEY, "GATEWAY_KEYS": "k"})
    assert result.returncode == 2, result.stderr
    assert ("E151 [rungs.json.strong] sets temperature, but the rung's provider anth speaks Anthropic's Messages "
            "API") in result.stderr
    assert "remove temperature from [rungs.json.strong]" in result.stderr and "Traceback" not in result.stderr
