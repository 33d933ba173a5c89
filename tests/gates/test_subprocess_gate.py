"""The subprocess gate, with real programs: the contract, every abstain case, and killing."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from gatekit import PYTHON, SCRIPTS, gate, kill_leftovers, recorded_pids, run_gate
from processes import gone_within

from admiss.config import Config, GateDefaults
from admiss.errors import InputError
from admiss.gates import subprocess as subprocess_gate
from admiss.gates.base import ABSTAIN, FAIL, PASS, Candidate, GateContext


def script(name: str, *args: str, timeout_s: float | None = None):
    return gate("subprocess", cmd=(PYTHON, str(SCRIPTS / name), *args), timeout_s=timeout_s)


def run(g, tmp_path: Path, candidate: Candidate | None = None, usd_per_second: float = 0.0):
    ctx = GateContext(tmp_path, Config(gates=GateDefaults(subprocess_usd_per_second=usd_per_second)))
    return run_gate(subprocess_gate.build(g, ctx), candidate or Candidate(output="42"), ctx)


@pytest.mark.parametrize(
    ("stdout", "verdict", "score"),
    [
        ('{"verdict": "pass", "score": 0.91, "reason": "12/12 tests passed"}', PASS, 0.91),
        ('{"verdict": "fail", "reason": "3 tests failed"}', FAIL, None),
        ('{"verdict": "abstain", "reason": "cannot tell"}', ABSTAIN, None),
    ],
)
def test_the_program_verdict_is_the_gate_verdict(tmp_path, stdout, verdict, score):
    result = run(script("reply.py", stdout), tmp_path)
    assert (result.verdict, result.score, result.error) == (verdict, score, False)
    assert result.reason == json.loads(stdout)["reason"]


def test_the_candidate_arrives_on_stdin_and_never_in_argv_or_environment(tmp_path):
    marker = "CANDIDATE-7f3a; rm -rf / $(whoami)"
    candidate = Candidate(output=marker, prompt="the prompt", meta={"ticket": 12})
    result = run(script("echo.py"), tmp_path, candidate)
    received = json.loads(result.reason)
    assert json.loads(received["stdin"]) == {"candidate": marker, "prompt": "the prompt", "meta": {"ticket": 12}}
    assert not any(marker in arg for arg in received["argv"])
    assert not any(marker in value for value in received["env"].values())


def test_the_program_runs_in_the_rubric_folder(tmp_path):
    result = run(script("echo.py"), tmp_path)
    assert Path(json.loads(result.reason)["cwd"]) == tmp_path.resolve()


def test_a_non_zero_exit_abstains_even_after_a_pass_verdict(tmp_path):
    result = run(script("crash.py"), tmp_path)
    assert (result.verdict, result.error) == (ABSTAIN, True)
    assert "exited with status 3" in result.reason
    assert "boom: something broke" in result.reason


@pytest.mark.parametrize(
    ("stdout", "says"),
    [
        ("all good!", "stdout is not JSON"),
        ("", "stdout is not JSON"),
        ('["pass"]', "not a JSON object"),
        ('{"verdict": "PASS"}', 'no "verdict"'),
        ('{"verdict": "pass", "score": 1.5}', "score 1.5 is not a number in [0, 1]"),
        ('{"verdict": "pass", "score": -0.1}', "score -0.1 is not a number in [0, 1]"),
        ('{"verdict": "pass", "score": true}', "score True is not a number"),
        ('{"verdict": "pass", "reason": 7}', "reason is not a string"),
    ],
)
def test_stdout_that_breaks_the_contract_abstains_and_says_how(tmp_path, stdout, says):
    result = run(script("reply.py", stdout), tmp_path)
    assert (result.verdict, result.error) == (ABSTAIN, True)
    assert says in result.reason


def test_a_missing_program_abstains(tmp_path):
    result = run(gate("subprocess", cmd=("no-such-program-admiss",)), tmp_path)
    assert (result.verdict, result.error) == (ABSTAIN, True)
    assert "program not found: 'no-such-program-admiss'" in result.reason


def test_a_timeout_abstains_and_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "pids.json"
    started = time.monotonic()
    result = run(script("hang.py", str(pidfile), timeout_s=1.0), tmp_path)
    pids = list(recorded_pids(pidfile).values())
    try:
        assert (result.verdict, result.error) == (ABSTAIN, True)
        assert "timed out after 1s" in result.reason
        assert time.monotonic() - started < 20  # generous: the hang itself is 120 s
        assert gone_within(pids, 5)
    finally:
        kill_leftovers(pids)


def test_children_left_behind_by_a_finished_program_are_killed(tmp_path):
    pidfile = tmp_path / "pids.json"
    result = run(script("hang.py", str(pidfile), "--leave-child"), tmp_path)
    child = recorded_pids(pidfile)["child"]
    try:
        assert result.verdict == PASS
        assert gone_within([child], 5)
    finally:
        kill_leftovers([child])


def test_stdout_over_one_mebibyte_stops_reading_and_kills(tmp_path):
    pidfile = tmp_path / "pid"
    result = run(script("flood.py", str(pidfile), timeout_s=60), tmp_path)
    pid = int(pidfile.read_text())
    try:
        assert (result.verdict, result.error) == (ABSTAIN, True)
        assert "stdout exceeded 1 MiB" in result.reason
        assert gone_within([pid], 5)
    finally:
        kill_leftovers([pid])


def test_cancelling_the_gate_kills_the_process_group(tmp_path):
    pidfile = tmp_path / "pids.json"
    check = subprocess_gate.build(script("hang.py", str(pidfile), timeout_s=60), GateContext(tmp_path))

    async def cancel_once_running() -> None:
        task = asyncio.create_task(check.arun(Candidate(output="x")))
        while not pidfile.exists():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(cancel_once_running(), 30))
    pids = list(recorded_pids(pidfile).values())
    try:
        assert gone_within(pids, 5)
    finally:
        kill_leftovers(pids)


def test_wall_time_is_priced_at_the_configured_rate(tmp_path):
    free = run(script("reply.py", '{"verdict": "pass"}'), tmp_path)
    priced = run(script("reply.py", '{"verdict": "pass"}'), tmp_path, usd_per_second=1000.0)
    assert free.cost_usd == 0
    assert priced.cost_usd > 0


def test_the_timeout_defaults_to_30_seconds(tmp_path):
    check = subprocess_gate.build(script("reply.py", "{}"), GateContext(tmp_path))
    assert check.arun.__self__.timeout_s == subprocess_gate.DEFAULT_TIMEOUT_S == 30


def test_a_gate_without_a_command_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="needs CMD"):
        subprocess_gate.build(gate("subprocess"), GateContext(tmp_path))


def test_a_large_candidate_neither_deadlocks_nor_is_cut(tmp_path):
    big = "x" * 600_000  # far beyond a pipe buffer, within the stdout cap once echoed
    result = run(script("echo.py"), tmp_path, Candidate(output=big))
    assert json.loads(json.loads(result.reason)["stdin"])["candidate"] == big


def test_a_program_that_never_reads_its_input_still_gives_its_verdict(tmp_path):
    pidfile = tmp_path / "pids.json"
    result = run(script("hang.py", str(pidfile), "--leave-child"), tmp_path, Candidate(output="y" * 4_000_000))
    kill_leftovers([recorded_pids(pidfile)["child"]])
    assert (result.verdict, result.error) == (PASS, False)


def test_stdout_nested_too_deeply_abstains_as_the_programs_fault(tmp_path):
    result = run(script("reply.py", "[" * 50_000 + "]" * 50_000), tmp_path)
    assert (result.verdict, result.fault) == (ABSTAIN, "gate")
    assert result.reason == "stdout is JSON admiss refuses: nested too deeply to read"
