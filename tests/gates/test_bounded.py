"""Bounded in time and memory: a judge reply that drips, a reply too long, and a schema
pattern that backtracks, against real servers on 127.0.0.1 and real schema files. The time
asserts are bounds (a multiple of the configured timeout), not speed measurements."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest
from gatekit import gate
from raw_server import BigReplyServer, DripServer
from senders import SENDERS, offer

from admiss.config import Config, ProviderConfig
from admiss.gates import judge
from admiss.gates.base import ABSTAIN, Candidate, GateContext

CANDIDATE = Candidate(output="42", model="local/maker", prompt="What is six times seven?")


@pytest.fixture
def drip_server():
    server = DripServer(interval_s=0.2).start()
    yield server
    server.stop()


def _judged(tmp_path, url: str, sender: str, **provider_options):
    provider = ProviderConfig("local", f"{url}/v1", **provider_options)
    ctx = GateContext(tmp_path, Config(providers={"local": provider}))
    offer(ctx.providers, sender)
    check = judge.build(gate("judge", model="local/judge", rubric="Is it right?"), ctx)

    async def go():
        try:
            # A generous outer bound, so an unbounded call fails this test instead of hanging it.
            return await asyncio.wait_for(check.arun(CANDIDATE), 60)
        finally:
            await ctx.providers.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("sender", SENDERS)
def test_a_dripping_reply_is_cut_off_at_the_deadline_for_the_whole_call(tmp_path, drip_server, sender):
    timeout_s = 2.0
    started = time.monotonic()
    result = _judged(tmp_path, drip_server.url, sender, timeout_s=timeout_s, max_retries=2)
    elapsed = time.monotonic() - started
    assert (result.verdict, result.fault) == (ABSTAIN, "gate")
    assert "no reply within 2s (a deadline for the whole reply)" in result.reason
    # Every byte came within the per-read timeout; only a deadline per call stops it.
    assert elapsed < 3 * timeout_s
    assert len(drip_server.requests) == 1  # a timeout may have been billed: not retried


@pytest.mark.parametrize("says_length", [True, False])
@pytest.mark.parametrize("sender", SENDERS)
def test_a_reply_longer_than_the_cap_is_cut_off(tmp_path, sender, says_length):
    server = BigReplyServer(size=50 * 1024 * 1024, says_length=says_length).start()
    try:
        result = _judged(tmp_path, server.url, sender, max_reply_bytes=100_000, max_retries=0)
    finally:
        server.stop()
    assert (result.verdict, result.fault) == (ABSTAIN, "gate")
    assert "reply longer than 100000 bytes; cut off (max_reply_bytes)" in result.reason


def _schema_gate_on(tmp_path, schema: dict, output: str) -> dict:
    """The schema gate's receipt line from a real `admiss check` run (killed if it hangs)."""
    (tmp_path / "s.json").write_text(json.dumps(schema))
    (tmp_path / "r.rubric").write_text('CHAIN c {\n  GATE schema FILE "s.json" ON ABSTAIN fail_closed\n}\n')
    (tmp_path / "b.json").write_text(json.dumps({"output": output}))
    done = subprocess.run([sys.executable, "-m", "admiss", "check", "b.json", "-r", "r.rubric", "-f", "json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)["chain"]["rungs"][0]["gates"][0]


def test_the_classic_evil_pattern_gets_its_verdict(tmp_path):
    gate_line = _schema_gate_on(tmp_path, {"type": "string", "pattern": "^(a+)+$"}, json.dumps("a" * 40 + "!"))
    assert (gate_line["verdict"], gate_line["fault"]) == ("fail", None)
    assert "does not match '^(a+)+$'" in gate_line["reason"]


@pytest.mark.parametrize("where", ["pattern", "patternProperties", "additionalProperties", "propertyNames",
                                   "unevaluatedProperties"])
def test_a_pattern_that_backtracks_abstains_within_its_bound(tmp_path, where):
    evil, text = "^(a|a)*$", "a" * 40 + "!"
    schema, output = {
        "pattern": ({"type": "string", "pattern": evil}, text),
        "patternProperties": ({"type": "object", "patternProperties": {evil: {"type": "number"}}}, {text: 1}),
        "additionalProperties": ({"type": "object", "additionalProperties": False,
                                  "patternProperties": {evil: True}}, {text: 1}),
        "propertyNames": ({"type": "object", "propertyNames": {"pattern": evil}}, {text: 1}),
        # Written first, so the library's own matching of the nested pattern would come first.
        "unevaluatedProperties": ({"unevaluatedProperties": False, "allOf": [{"patternProperties": {evil: True}}]},
                                  {text: 1}),
    }[where]
    gate_line = _schema_gate_on(tmp_path, schema, json.dumps(output))
    assert (gate_line["verdict"], gate_line["effective"], gate_line["fault"]) == ("abstain", "fail", "candidate")
    assert "ran past its time bound" in gate_line["reason"]


def test_a_pattern_that_cannot_compile_in_a_referenced_file_is_an_error_at_the_file_string(tmp_path):
    # The root schema is checked against its metaschema; a file it refers to is not, so
    # its patterns are compiled when the gate is built.
    (tmp_path / "s.json").write_text(json.dumps({"$ref": "defs.json"}))
    (tmp_path / "defs.json").write_text(json.dumps({"type": "string", "pattern": "(unclosed"}))
    (tmp_path / "r.rubric").write_text('CHAIN c {\n  GATE schema FILE "s.json"\n}\n')
    (tmp_path / "b.json").write_text(json.dumps({"output": '"x"'}))
    done = subprocess.run([sys.executable, "-m", "admiss", "check", "b.json", "-r", "r.rubric"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("r.rubric:2:20: E162 schema pattern '(unclosed' cannot be matched"), done.stderr
