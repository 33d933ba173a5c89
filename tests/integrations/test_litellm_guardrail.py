"""The admiss guardrail inside a real LiteLLM proxy (``litellm --config``, a subprocess),
in front of a loopback upstream that speaks OpenAI chat completions, driven by the official
openai client. One proxy serves the whole module: it takes half a minute to start.

Each request picks its guardrail by name (``extra_body={"guardrails": [...]}``) and carries
its own upstream script in its user message (tests/serve/agentkit.py), so tests share no state.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import uuid
from pathlib import Path

from importlib.util import find_spec

import openai
import pytest

# Looked up, not imported: importing the proxy here would cost the test process half a minute.
pytestmark = pytest.mark.skipif(find_spec("litellm") is None or find_spec("fastapi") is None,
                                reason="the LiteLLM proxy is not installed (pip install 'admiss[litellm]')")

sys.path.insert(0, str(Path(__file__).parent.parent / "gates"))
sys.path.insert(0, str(Path(__file__).parent.parent / "serve"))

from agentkit import REFUND_RULES, agent_route, call  # noqa: E402
from chat_server import ChatServer, Recorded, Reply  # noqa: E402
from gatewaykit import free_port, wait_until_healthy  # noqa: E402

from admiss.receipts import open_store  # noqa: E402

GATE = Path(__file__).parent.parent / "serve" / "scripts" / "gate.py"
RUBRIC = REFUND_RULES + """
CHAIN json {
  GATE non_empty ON ABSTAIN fail_closed
  GATE json_valid
}

CHAIN open {
  GATE subprocess CMD [__PYTHON__, __GATE__, "."] TIMEOUT 5s ON ABSTAIN fail_open
}

CHAIN closed {
  GATE subprocess CMD [__PYTHON__, __GATE__, "."] TIMEOUT 5s ON ABSTAIN fail_closed
}

CHAIN agent {
  RUNG draft MODEL "upstream/cheap" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE tool_calls TOOL "issue_refund"
    GATE admissibility refund_issued
  }
  RUNG strong MODEL "upstream/strong" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}
"""
CONFIG = """
model_list:
  - model_name: answer
    litellm_params:
      model: openai/cheap
      api_base: {upstream}
      api_key: sk-upstream-fake
guardrails:
{guardrails}
"""
GUARDRAIL = """
  - guardrail_name: admiss-{chain}
    litellm_params:
      guardrail: admiss.integrations.litellm.AdmissGuardrail
      mode: post_call
      rubric: {rubric}
      admiss_config: {config}
      chain: {chain}
      {rung}
"""
CLAIM = "Your refund has been issued."


def sse_route(recorded: Recorded) -> Reply | None:
    """agent_route's reply; for a streamed request, its text as server-sent events."""
    reply = agent_route(recorded)
    if reply is None or not (isinstance(recorded.body, dict) and recorded.body.get("stream")):
        return reply
    text = reply.body["choices"][0]["message"]["content"]
    head = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": "cheap"}
    deltas = [{"role": "assistant", "content": ""}] + [{"content": text[i:i + 4]} for i in range(0, len(text), 4)]
    events = [{**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    events.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return Reply(body=body, headers=(("Content-Type", "text/event-stream"),))


class Proxy:
    def __init__(self, folder: Path, upstream: ChatServer):
        quoted = json.dumps
        (folder / "guard.rubric").write_text(RUBRIC.replace("__PYTHON__", quoted(sys.executable))
                                             .replace("__GATE__", quoted(str(GATE))))
        (folder / "admiss.toml").write_text('[serve]\nstore = "receipts.db"\n')
        guardrails = "".join(GUARDRAIL.format(chain=chain, rubric=folder / "guard.rubric", config=folder / "admiss.toml",
                                              rung="rung: draft" if chain == "agent" else "")
                             for chain in ("json", "open", "closed", "agent"))
        (folder / "config.yaml").write_text(CONFIG.format(upstream=upstream.url, guardrails=guardrails))
        self.store_path = folder / "receipts.db"
        self.key = "sk-" + secrets.token_hex(32)
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = folder / "proxy.log"
        # No model price list from the network (loopback only), no key check against a database.
        env = {**os.environ, "LITELLM_MASTER_KEY": self.key, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [str(Path(sys.executable).parent / "litellm"), "--config", str(folder / "config.yaml"),
                 "--host", "127.0.0.1", "--port", self.url.rsplit(":", 1)[1]],
                cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
        self._wait_until_up()

    def _wait_until_up(self) -> None:
        wait_until_healthy(f"{self.url}/health/liveliness", self.process, 180, "the LiteLLM proxy", self.log.read_text)

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=self.key, max_retries=0)

    def receipt(self, receipt_id: str) -> dict:
        store = open_store(self.store_path, create=False)
        try:
            return store.get(receipt_id)
        finally:
            store.close()

    def receipts(self) -> int:
        store = open_store(self.store_path, create=False)
        try:
            return sum(store.counts().values())
        finally:
            store.close()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    upstream = ChatServer(route=sse_route, keep_alive=True).start()
    running = Proxy(tmp_path_factory.mktemp("litellm"), upstream)
    yield running
    running.stop()
    upstream.stop()


def user(script: dict) -> dict:
    return {"role": "user", "content": f"[{uuid.uuid4().hex}] Please refund order A1. " + json.dumps({"script": script})}


def ask(proxy: Proxy, guardrail: str, messages: list[dict], **more):
    return proxy.client().chat.completions.with_raw_response.create(
        model="answer", messages=messages, extra_body={"guardrails": [f"admiss-{guardrail}"]}, **more)


def blocked(proxy: Proxy, guardrail: str, messages: list[dict]) -> openai.APIStatusError:
    with pytest.raises(openai.APIStatusError) as caught:
        ask(proxy, guardrail, messages)
    return caught.value


def test_a_response_whose_gates_pass_is_served_with_its_stored_receipt(proxy):
    raw = ask(proxy, "json", [user({"cheap": ['{"answer": 42}']})])
    assert raw.parse().choices[0].message.content == '{"answer": 42}'
    receipt = proxy.receipt(raw.headers["x-admiss-receipt-id"])
    assert receipt["chain"]["name"] == "json" and receipt["chain"]["served"] == "json"
    assert [g["gate"] for g in receipt["chain"]["rungs"][0]["gates"]] == ["non_empty", "json_valid"]
    # The maker a judge must not be is the deployment the proxy's config names, not what the reply says.
    assert receipt["chain"]["rungs"][0]["model"] == "openai/cheap"
    assert "x-admiss-abstained" not in raw.headers


def test_a_failing_response_is_blocked_naming_the_gate_and_its_receipt_says_so(proxy):
    error = blocked(proxy, "json", [user({"cheap": ["The answer is 42."]})])
    assert error.status_code == 422
    message = error.response.json()["error"]["message"]
    assert "gate json_valid at " in message and "guard.rubric:" in message and "failed" in message
    receipt_id = message.rsplit("receipt ", 1)[1].rstrip(")")
    receipt = proxy.receipt(receipt_id)
    assert receipt["chain"]["served"] is None
    json_valid = receipt["chain"]["rungs"][0]["gates"][1]
    assert (json_valid["gate"], json_valid["effective"]) == ("json_valid", "fail")


def test_an_abstain_under_fail_open_is_served_and_named_in_a_header(proxy):
    raw = ask(proxy, "open", [user({"cheap": ["CRASH the gate program"]})])
    assert raw.parse().choices[0].message.content == "CRASH the gate program"
    assert raw.headers["x-admiss-abstained"] == "subprocess"
    gate = proxy.receipt(raw.headers["x-admiss-receipt-id"])["chain"]["rungs"][0]["gates"][0]
    assert (gate["verdict"], gate["effective"]) == ("abstain", "pass")


def test_an_abstain_under_fail_closed_is_blocked_saying_why(proxy):
    error = blocked(proxy, "closed", [user({"cheap": ["CRASH the gate program"]})])
    assert error.status_code == 422
    message = error.response.json()["error"]["message"]
    assert "gate subprocess at " in message
    assert "abstained, and ON ABSTAIN fail_closed counts that as a fail" in message


def test_the_conversation_is_the_evidence_of_admissibility_gates(proxy):
    unproven = blocked(proxy, "agent", [user({"cheap": [CLAIM]})])
    assert "gate admissibility at " in unproven.response.json()["error"]["message"]
    first = user({"cheap": [CLAIM]})
    proven = [first,
              {"role": "assistant", "content": None, "tool_calls": [
                  {"id": "call_1", "type": "function", "function": call("issue_refund", {"order": "A1"})}]},
              {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"status": "refunded"})}]
    raw = ask(proxy, "agent", proven)
    assert raw.parse().choices[0].message.content == CLAIM
    receipt = proxy.receipt(raw.headers["x-admiss-receipt-id"])
    assert receipt["conversation"]["evidence"] >= 1 and receipt["chain"]["served"] == "draft"


def test_a_stream_is_sent_only_after_its_whole_text_passed(proxy):
    before = proxy.receipts()
    good = proxy.client().chat.completions.create(
        model="answer", messages=[user({"cheap": ['{"answer": 42, "long": "enough to be split in chunks"}']})],
        stream=True, extra_body={"guardrails": ["admiss-json"]})
    assert "".join(c.choices[0].delta.content or "" for c in good if c.choices) == \
        '{"answer": 42, "long": "enough to be split in chunks"}'
    assert proxy.receipts() == before + 1  # one gating per stream, not one more for the assembled response
    received = []
    with pytest.raises(openai.APIError):
        bad = proxy.client().chat.completions.create(
            model="answer", messages=[user({"cheap": ["not json, and long enough for several chunks"]})],
            stream=True, extra_body={"guardrails": ["admiss-json"]})
        for chunk in bad:
            received.append(chunk.choices[0].delta.content if chunk.choices else None)
    assert not any(received), received


def test_the_response_tool_calls_are_gated_and_go_on_the_receipt(proxy):
    allowed = ask(proxy, "agent", [user({"cheap": [{"tool_calls": [call("issue_refund", {"order": "A1"})]}]})])
    [proposed] = allowed.parse().choices[0].message.tool_calls
    receipt = proxy.receipt(allowed.headers["x-admiss-receipt-id"])
    assert [c["function"]["name"] for c in receipt["tool_calls"]] == ["issue_refund"] == [proposed.function.name]
    error = blocked(proxy, "agent", [user({"cheap": [{"tool_calls": [call("delete_account", {"user": "u1"})]}]})])
    assert "gate tool_calls at " in error.response.json()["error"]["message"]
