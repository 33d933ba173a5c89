"""A gate program's whole process tree ends with it: a daemon it starts that leaves the
process group (setsid) and is orphaned is killed when the program exits, when it times
out, and when admiss itself is killed. Real programs, real processes; Linux only (the
containment is PR_SET_CHILD_SUBREAPER; docs/gates.md says what other systems get)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from gatekit import PYTHON, SCRIPTS, gate, kill_leftovers, recorded_pids, run_gate
from processes import alive, gone_within

from admiss.config import Config
from admiss.gates import subprocess as subprocess_gate
from admiss.gates.base import ABSTAIN, PASS, Candidate, GateContext

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")


def _run(tmp_path, mode: str, timeout_s: float | None = None):
    g = gate("subprocess", cmd=(PYTHON, str(SCRIPTS / "setsid_child.py"), str(tmp_path / "pids.json"), mode),
             timeout_s=timeout_s)
    ctx = GateContext(tmp_path, Config())
    return run_gate(subprocess_gate.build(g, ctx), Candidate(output="x"), ctx)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def test_a_daemon_that_left_the_group_dies_when_the_program_exits(tmp_path):
    result = _run(tmp_path, "exit")
    pids = recorded_pids(tmp_path / "pids.json")
    try:
        assert (result.verdict, result.reason) == (PASS, "started a daemon")
        assert gone_within([pids["leader"], pids["daemon"]], 10)
    finally:
        kill_leftovers(list(pids.values()))


def test_a_daemon_that_left_the_group_dies_when_the_program_times_out(tmp_path):
    result = _run(tmp_path, "hang", timeout_s=1.0)
    pids = recorded_pids(tmp_path / "pids.json")
    try:
        assert (result.verdict, result.fault) == (ABSTAIN, "gate")
        assert result.reason.startswith("timed out after 1s")
        assert gone_within([pids["leader"], pids["daemon"]], 10)
    finally:
        kill_leftovers(list(pids.values()))


def test_a_daemon_that_left_the_group_dies_when_admiss_is_killed(tmp_path):
    cmd = json.dumps([PYTHON, str(SCRIPTS / "setsid_child.py"), str(tmp_path / "pids.json"), "hang"])
    (tmp_path / "r.rubric").write_text(f"CHAIN c {{\n  GATE subprocess CMD {cmd} TIMEOUT 100s\n}}\n")
    (tmp_path / "b.json").write_text(json.dumps({"rubric": "r.rubric", "output": "x"}))
    admiss = subprocess.Popen([sys.executable, "-m", "admiss", "check", "b.json"], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids = {}
    try:
        pids = recorded_pids(tmp_path / "pids.json", seconds=30)
        # The daemon really left admiss's groups: killing a group could not reach it.
        assert _pgid(pids["daemon"]) not in (os.getpgid(admiss.pid), _pgid(pids["leader"]))
        admiss.send_signal(signal.SIGKILL)  # nothing of admiss runs to clean up
        admiss.wait(timeout=10)
        assert gone_within([pids["leader"], pids["daemon"]], 10)
    finally:
        admiss.kill()
        kill_leftovers(list(pids.values()))


def test_without_containment_the_daemon_would_outlive_the_program(tmp_path):
    # The daemon the tests above see die is a real escape: run bare, it survives its program.
    record = tmp_path / "bare.json"
    done = subprocess.run([PYTHON, str(SCRIPTS / "setsid_child.py"), str(record), "exit"], input=b"",
                          stdout=subprocess.DEVNULL, timeout=30, start_new_session=True)
    pids = recorded_pids(record)
    try:
        assert done.returncode == 0 and not alive(pids["leader"])
        assert alive(pids["daemon"]) and _pgid(pids["daemon"]) != pids["leader"]
    finally:
        kill_leftovers(list(pids.values()))
