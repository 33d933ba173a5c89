"""The README's gateway commands, run as written, with the shipped admiss.toml and rubric:
only the network is a stand-in. The provider's real host (api.openai.com) is reached
through a CONNECT proxy on 127.0.0.1 (HTTPS_PROXY) that hands the tunnel to a TLS server
on 127.0.0.1 holding a certificate for that host from a CA made here (SSL_CERT_FILE), and
that server plays the models. So the commands, the shipped config's URLs, key variables,
TLS and the agent loop are what a user with keys runs; what is not tested is a real
model's answer.

Changed from the README, each for a reason: `pip install '.[serve]'` is not run (the test
environment has the extra); port 8000 becomes a free port; the commands run in a copy of
the repository's rubrics/ and admiss.toml, so that admiss-receipts.db is not written into
the checkout."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from chat_server import Recorded, Reply, completion
from gatewaykit import free_port, wait_until_healthy
from tls_kit import ConnectProxy, make_pki, tls_upstream

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-readme-5e1f"  # exported as OPENAI_API_KEY: the upstream checks it arrives
HOSTS = ("api.openai.com", "api.anthropic.com")


def readme_gateway_commands() -> list[str]:
    """The lines of the README's sh block under "## The gateway"."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## The gateway", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "the README's gateway section has no sh block"
    return [line for line in block[1].splitlines() if line.strip()]


def plays_the_models(recorded: Recorded) -> Reply:
    """A model doing the README's task: look the order up, refund it, then say so."""
    if recorded.headers.get("authorization") != f"Bearer {KEY}":
        return Reply(status=401, body={"error": {"message": "no key", "type": "invalid_request_error"}})
    turn = sum(1 for m in recorded.body["messages"] if m.get("role") == "assistant")
    if turn == 2:
        return completion("Your refund of 20 EUR for order A1 has been issued (rf_1001).")
    name, arguments = (("lookup_order", {"order": "A1"}), ("issue_refund", {"order": "A1", "amount": 20}))[turn]
    reply = completion("")
    choice = reply.body["choices"][0]
    choice["message"].update(content=None, tool_calls=[{"id": f"call_{turn}", "type": "function", "function": {
        "name": name, "arguments": json.dumps(arguments)}}])
    choice["finish_reason"] = "tool_calls"
    return reply


@pytest.fixture
def stand_in_network(tmp_path):
    (tmp_path / "pki").mkdir()
    pki = make_pki(tmp_path / "pki", hosts=HOSTS)
    models = tls_upstream(pki, route=plays_the_models, keep_alive=True)
    port = models.url.split("//")[1].split("/")[0]
    proxy = ConnectProxy(standing_in={f"{host}:443": port for host in HOSTS})
    yield pki, proxy
    proxy.stop()
    models.stop()


def test_the_readme_gateway_commands_work_as_written(tmp_path, stand_in_network):
    pki, proxy = stand_in_network
    install, serve, agent, export = readme_gateway_commands()
    assert install.startswith("pip install '.[serve]' && export ")
    assert serve.startswith("admiss serve ") and serve.endswith("&")
    folder = tmp_path / "project"
    shutil.copytree(ROOT / "rubrics", folder / "rubrics")
    shutil.copy(ROOT / "admiss.toml", folder / "admiss.toml")
    port = free_port()
    environ = {**os.environ, "HTTPS_PROXY": proxy.url(), "https_proxy": proxy.url(), "NO_PROXY": "", "no_proxy": "",
               "SSL_CERT_FILE": str(pki.ca), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    exported_keys = dict(assignment.split("=", 1) for assignment in shlex.split(install.split("&& export ", 1)[1]))
    assert exported_keys == {"OPENAI_API_KEY": "...", "ANTHROPIC_API_KEY": "..."}  # the README's placeholders
    environ.update({name: KEY for name in exported_keys})
    serving = subprocess.Popen(shlex.split(serve.rstrip("&").replace("8000", str(port))), cwd=folder, env=environ,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}/healthz", serving, 60, "admiss serve")
        ran = subprocess.run(shlex.split(agent.replace("8000", str(port))), cwd=folder, env=environ,
                             capture_output=True, text=True, timeout=120)
    finally:
        serving.terminate()
        log, _ = serving.communicate(timeout=30)
    assert ran.returncode == 0, (ran.stderr, log)
    assert [json.loads(line) for line in ran.stdout.splitlines()] == [
        {"served_rung": "draft", "tool_calls": ["lookup_order"]},
        {"served_rung": "draft", "tool_calls": ["issue_refund"]},
        {"served_rung": "draft", "reply": "Your refund of 20 EUR for order A1 has been issued (rf_1001)."}]
    assert set(proxy.tunnels) == {"api.openai.com:443"}
    assert serving.returncode == 0 and "Traceback" not in log and KEY not in log, log
    receipts = subprocess.run(shlex.split(export, comments=True), cwd=folder, env=environ, capture_output=True,
                              text=True, timeout=60)
    assert receipts.returncode == 0, receipts.stderr
    assert [json.loads(line)["chain"]["served"] for line in receipts.stdout.splitlines()] == ["draft"] * 3
