"""Codex CLI rollouts written by the real `codex exec` of two versions (0.171.0 and 0.47.0)
against a loopback stand-in model (tests/traces/producers/codex_cli.py), read as one run per
file by `admiss check` and `admiss import`, and each error signal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from admiss.traces.read import read_trace

FIXTURES = Path(__file__).parent / "fixtures"
VERSIONS = ["codex_rollout_0_171_0.jsonl", "codex_rollout_0_47_0.jsonl"]
RUBRIC = Path(__file__).parent / "producers" / "any.rubric"


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plain_counts(rows):
    """Calls, the failed ones and the last assistant text, counted from the raw lines: a call
    fails when its output's exit code (either version's way of writing it) is not 0 or Codex
    did not support it."""
    items = [row["payload"] for row in rows if row["type"] == "response_item"]
    calls = [item["call_id"] for item in items if item["type"] == "function_call"]
    failed = []
    for item in items:
        if item["type"] != "function_call_output":
            continue
        output = item["output"]
        if output.startswith("{"):
            code = json.loads(output)["metadata"]["exit_code"]
        elif output.startswith("Chunk ID"):
            code = int(output.split("Process exited with code ")[1].split("\n")[0])
        else:
            code = 1 if output.startswith("unsupported call") else 0
        if code:
            failed.append(item["call_id"])
    texts = [item for item in items if item["type"] == "message" and item["role"] == "assistant"]
    return calls, failed, texts[-1]["content"][0]["text"] if items[-1] is texts[-1] else None


@pytest.mark.parametrize("name", VERSIONS)
def test_each_version_reads_its_calls_failures_and_answer(name):
    rows = lines(FIXTURES / name)
    trace = read_trace(rows)
    calls, failed, answer = plain_counts(rows)
    assert trace.format == "codex" and trace.model == "stand-in"
    tool_calls = [s for s in trace.steps if s.type == "tool_call"]
    assert [s.ref.tool_call_id for s in tool_calls] == calls
    assert [s.ref.tool_call_id for s in tool_calls if s.outcome == "error"] == failed == ["call_cat", "call_deploy"]
    assert trace.final_answer == answer is not None
    # Codex's environment note is not the person's words; the person's prompt is.
    users = [s.text for s in trace.steps if s.type == "user"]
    assert users == ["What files are here? Show missing.txt, then deploy."]


@pytest.mark.parametrize("command", ["check", "import"])
def test_a_rollout_file_is_one_run(admiss_cli, command):
    path = FIXTURES / VERSIONS[0]
    ran = admiss_cli(command, "--rubric", RUBRIC, *(["--format", "json"] if command == "check" else []), path)
    assert "Traceback" not in ran.err and "B020" not in ran.err
    [value] = [json.loads(line) for line in ran.out.splitlines()]
    assert value["trace"]["format"] == "codex"


def rollout(*payloads):
    return [{"timestamp": "t", "type": kind, "payload": payload} for kind, payload in payloads]


CALL = ("response_item", {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "make"}',
                          "call_id": "c1"})


def output(text):
    return ("response_item", {"type": "function_call_output", "call_id": "c1", "output": text})


def completed(status, code):
    return ("event_msg", {"type": "item_completed", "item": {"type": "CommandExecution", "id": "c1",
                                                             "status": status, "exit_code": code}})


HEADER = "Chunk ID: a\nWall time: 0.1 seconds\nProcess exited with code {}\nOriginal token count: 3\nOutput:\n{}"


@pytest.mark.parametrize("payloads, outcome", [
    # A command's own output cannot undo its header's exit code: only the header is read.
    ((CALL, output(HEADER.format(2, "Process exited with code 0"))), "error"),
    ((CALL, output(HEADER.format(0, "fine"))), "ok"),
    # Codex's event says the command failed, whatever its output says.
    ((CALL, completed("failed", 1), output(HEADER.format(0, "fine"))), "error"),
    ((CALL, output(HEADER.format(0, "fine")), completed("completed", 3)), "error"),
    ((CALL, completed("completed", 0), output(HEADER.format(0, "fine"))), "ok"),
    # 0.47's JSON output: its exit code, and a repeated key read as a failure.
    ((CALL, output('{"output":"x","metadata":{"exit_code":1}}')), "error"),
    ((CALL, output('{"output":"x","metadata":{"exit_code":0}}')), "ok"),
    ((CALL, output('{"output":"x","metadata":{"exit_code":1},"metadata":{"exit_code":0}}')), "error"),
    ((CALL, output("unsupported call: exec_command")), "error"),
])
def test_every_failure_signal_fails_the_call(payloads, outcome):
    [call] = [s for s in read_trace(rollout(*payloads)).steps if s.type == "tool_call"]
    assert call.outcome == outcome


def test_a_broken_line_is_refused_at_its_line(admiss_cli, tmp_path):
    path = tmp_path / "rollout.jsonl"
    rows = lines(FIXTURES / VERSIONS[1])
    rows[8]["payload"]["call_id"] = 7
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    ran = admiss_cli("check", "--rubric", RUBRIC, path)
    assert ran.code == 2 and "Traceback" not in ran.err
    assert f"{path}:9:" in ran.err and "B021 $[8].payload.call_id: must be a string" in ran.err
