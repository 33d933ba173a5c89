"""admiss check --live on an agent trace: a rung the trace's model did not run is sent the
trace's own task (its system and user messages) and gated; the rung that ran it is gated on
the trace's final answer. A real upstream on 127.0.0.1 logs every call."""

from __future__ import annotations

import json
import subprocess
import sys

from gatewaykit import GOOD, prompt, upstream_calls
# The same two-rung chain and `admiss check --format json` run on one file.
from test_router import TWO_RUNGS as RUBRIC, _check


def _trace(task: str, answer: str, model: str) -> dict:
    return {"model": model, "messages": [
        {"role": "system", "content": "You answer in JSON."},
        {"role": "user", "content": task},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": 1}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"found\": true}"},
        {"role": "assistant", "content": answer},
    ]}


def test_live_sends_a_traces_task_to_the_rungs_its_model_did_not_run(tmp_path, upstream):
    (tmp_path / "r.rubric").write_text(RUBRIC)
    (tmp_path / "admiss.toml").write_text(f'[providers.fake]\nbase_url = "{upstream.url}"\n')
    marker, task = prompt({"strong": "strong answer"})
    # The trace was run by the cheap model and its answer is not JSON: the cheap rung fails
    # on it, and the strong rung, which the trace never ran, is called with the trace's task.
    trace = _trace(task, "not json", "cheap")
    code, report = _check(tmp_path, trace)
    assert code == 1 and report["chain"]["served"] is None  # without --live nothing is called
    assert upstream_calls(upstream, marker) == []
    code, report = _check(tmp_path, trace, "--live")
    assert code == 0 and report["chain"]["served"] == "strong"
    assert upstream_calls(upstream, marker) == ["strong"]
    [call] = [r.body for r in upstream.requests if marker in json.dumps(r.body)]
    assert call["messages"] == [{"role": "system", "content": "You answer in JSON."},
                                {"role": "user", "content": task}]


def test_live_serves_the_traces_own_answer_when_it_passes(tmp_path, upstream):
    (tmp_path / "r.rubric").write_text(RUBRIC)
    (tmp_path / "admiss.toml").write_text(f'[providers.fake]\nbase_url = "{upstream.url}"\n')
    marker, task = prompt({"cheap": "called", "strong": "called"})
    code, report = _check(tmp_path, _trace(task, GOOD, "fake/cheap"), "--live")
    assert code == 0 and report["chain"]["served"] == "cheap"
    assert upstream_calls(upstream, marker) == []  # the trace's answer was gated; no rung was called


def test_live_refuses_before_any_bundle_a_rung_whose_provider_is_missing(tmp_path, upstream):
    (tmp_path / "r.rubric").write_text(RUBRIC.replace('"fake/strong"', '"elsewhere/strong"'))
    (tmp_path / "admiss.toml").write_text(f'[providers.fake]\nbase_url = "{upstream.url}"\n')
    marker, task = prompt({"cheap": "called"})
    (tmp_path / "t.json").write_text(json.dumps(_trace(task, "not json", "cheap")))
    ran = subprocess.run([sys.executable, "-m", "admiss", "check", "--rubric", "r.rubric", "t.json", "--live"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert ran.returncode == 2 and ran.stdout == "" and "Traceback" not in ran.stderr
    line = next(n for n, text in enumerate(RUBRIC.splitlines(), 1) if "RUNG strong" in text)
    assert f"r.rubric:{line}:3: E140 rung strong (run with --live) calls elsewhere/strong, but no " \
           "[providers.elsewhere] table" in ran.stderr
    assert upstream_calls(upstream, marker) == []
    # Without --live no rung is called, so nothing is missing.
    ran = subprocess.run([sys.executable, "-m", "admiss", "check", "--rubric", "r.rubric", "t.json"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert ran.returncode == 1, ran.stderr
