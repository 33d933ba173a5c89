"""SWE-agent trajectories: SWE-agent's own recorded runs (tests/traces/fixtures/public/
SOURCES.md), and each error signal its observations give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from admiss.errors import TraceError
from admiss.traces.read import read_trace

PUBLIC = Path(__file__).parent / "fixtures" / "public"


def load(name):
    return json.loads((PUBLIC / name).read_text())


def test_a_submitted_run_answers_with_its_patch():
    value = load("swe_agent_test_repo_i1.traj")
    trace = read_trace(value)
    assert trace.format == "swe_agent"
    assert [s.tool_name for s in trace.steps if s.type == "tool_call"] == ["find_file", "open", "edit", "python", "submit"]
    assert trace.final_answer == value["info"]["submission"] and trace.steps[-1].ref.path == "info.submission"


def test_refused_edits_are_errors():
    trace = read_trace(load("swe_agent_pydicom_1458.traj"))
    failed = [s.ref.path for s in trace.steps if s.type == "tool_call" and s.outcome == "error"]
    assert failed == ["trajectory[5]", "trajectory[6]", "trajectory[7]"]
    assert trace.steps[11].error.startswith("Your proposed edit has introduced new syntax error(s).")


def run(observation, status="submitted", last="submit"):
    return {"trajectory": [{"thought": "t", "action": "ls -la\n", "observation": observation},
                           {"thought": "", "action": last, "observation": "diff"}],
            "info": {"exit_status": status, "submission": "diff"}}


@pytest.mark.parametrize("observation", [
    "Your bash command contained syntax errors and was NOT executed. Please fix the syntax errors",
    "The command 'sleep 999' was cancelled because it took more than 30 seconds. Please try",
    "Error: no such file",
])
def test_each_refusal_is_an_error(observation):
    ls = read_trace(run(observation)).steps[1]
    assert (ls.tool_name, ls.args, ls.outcome) == ("ls", {"command": "ls -la"}, "error")


def test_an_ordinary_observation_is_not_an_error():
    assert read_trace(run("The command 'x' is fine")).steps[1].outcome == "ok"


def test_a_run_that_did_not_submit_has_no_answer_and_says_why():
    trace = read_trace(run("ok", status="exit_cost", last="ls"))
    assert trace.final_answer is None
    assert [s.reason for s in trace.skipped] == ["the run ended with exit status 'exit_cost', no submission"]


def test_a_broken_step_is_a_located_error():
    with pytest.raises(TraceError) as raised:
        read_trace({"trajectory": [{"action": "ls", "observation": 3}]}, "t.traj")
    assert raised.value.diagnostics[0].message == "trajectory[0].observation: must be a string, not a number"
