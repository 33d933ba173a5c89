"""The worked example of docs/serve.md, run as written: rubrics/agent_loop.py (the official
openai client in an agent loop) through a real ``admiss serve`` of the shipped
rubrics/support_agent_serve.rubric, its openai provider pointed at a loopback upstream
that plays the models (agentkit.agent_route)."""

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
from chat_server import ChatServer  # noqa: E402
from gatewaykit import free_port, wait_until_healthy  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """
[providers.openai]
base_url = "{url}"
api_key_env = "OPENAI_API_KEY"
timeout_s = 5

[serve]
store = "receipts.db"
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    upstream = ChatServer(route=agent_route, keep_alive=True).start()
    folder = tmp_path_factory.mktemp("example")
    (folder / "admiss.toml").write_text(CONFIG.format(url=upstream.url))
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "admiss", "serve", str(ROOT / "rubrics/support_agent_serve.rubric"),
                                "--config", str(folder / "admiss.toml"), "--port", str(port)],
                               env={**os.environ, "OPENAI_API_KEY": "sk-loopback"}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_until_healthy(f"{url}/healthz", process, 30, "admiss serve")
    yield f"{url}/v1"
    process.terminate()
    assert process.wait(30) == 0
    upstream.stop()


def run_example(base_url: str, script: dict) -> list[dict]:
    task = f"[{uuid.uuid4().hex}] Please refund order A1. " + json.dumps({"script": script})
    ran = subprocess.run([sys.executable, str(ROOT / "rubrics/agent_loop.py"), base_url, task],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    return [json.loads(line) for line in ran.stdout.splitlines()]


def test_a_claim_without_the_refund_call_escalates_and_is_refused(served):
    claim = "Your refund has been issued."
    assert run_example(served, {"gpt-5-mini": [claim], "gpt-5": [claim]})[0]["refused"] == "chain_exhausted"


def test_a_claim_after_the_refund_call_is_served(served):
    turns = run_example(served, {
        "gpt-5-mini": [{"tool_calls": [call("lookup_order", {"order": "A1"})]},
                       {"tool_calls": [call("issue_refund", {"order": "A1", "amount": 20})]},
                       "Your refund of 20 EUR has been issued (rf_1001)."]})
    assert turns == [{"served_rung": "draft", "tool_calls": ["lookup_order"]},
                     {"served_rung": "draft", "tool_calls": ["issue_refund"]},
                     {"served_rung": "draft", "reply": "Your refund of 20 EUR has been issued (rf_1001)."}]


def test_a_refund_past_the_schemas_bound_escalates_to_the_strong_rung(served):
    turns = run_example(served, {
        "gpt-5-mini": [{"tool_calls": [call("issue_refund", {"order": "A1", "amount": 2000})]}, "Done: refunded."],
        "gpt-5": [{"tool_calls": [call("issue_refund", {"order": "A1", "amount": 20})]}]})
    assert turns[0] == {"served_rung": "strong", "tool_calls": ["issue_refund"]}
    assert turns[1]["served_rung"] == "draft"
