"""The exporter process in trouble, as a real process: stopped (the gateway's queue fills:
what does not fit is dropped, counted and said, and no request waits) and killed in the
middle of ``admiss check`` (the check completes with its own exit code and says what was
lost), and outliving a check killed in the middle (it sends what it has and ends quietly).
The processes are stopped and killed with signals, as a kernel or an operator would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from otlp_receiver import Receiver, events
from processes import children, cmdline, gone_within
from test_otel_check import BUNDLE, check, plain_env, write_case

sys.path.insert(0, str(Path(__file__).parent.parent / "serve"))
sys.path.insert(0, str(Path(__file__).parent.parent / "gates"))

from chat_server import ChatServer, scripted_by_prompt  # noqa: E402
from gatewaykit import GOOD, Gateway, prompt  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the exporter process in /proc")


def exporter_of(pid: int, timeout_s: float = 30) -> int:
    """The pid of the telemetry exporter process under process ``pid``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pending = [pid]
        while pending:
            for child in children(pending.pop()):
                if b"admiss.integrations.otel" in cmdline(child):
                    return child
                pending.append(child)
        time.sleep(0.005)
    raise AssertionError("no exporter process started")


def test_a_check_whose_exporter_is_killed_completes_and_says_what_was_lost(tmp_path, receiver):
    rubric, _ = write_case(tmp_path)
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(BUNDLE) + "\n" for _ in range(3000)))
    args = ["--rubric", str(rubric), "--format", "json", str(batch)]
    expected_code = check(tmp_path, *args, env=plain_env()).returncode
    # With its exporter stopped, the pipe fills (3,000 reports' facts are more than it
    # holds) and the check waits to write the next group.
    env = plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
    run = subprocess.Popen([sys.executable, "-m", "admiss", "check", *args], cwd=tmp_path, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    exporter = exporter_of(run.pid)
    os.kill(exporter, signal.SIGSTOP)
    time.sleep(1.0)
    os.kill(exporter, signal.SIGKILL)
    out, err = run.communicate(timeout=120)
    # Telemetry lost changes nothing of the check: every report, the same exit code.
    assert run.returncode == expected_code == 1, err
    assert len(out.splitlines()) == 3000
    assert "the exporter process ended before it was done (killed by signal 9)" in err
    assert "the exporter process is gone: the events and spans that follow are dropped and counted" in err
    dropped = int(err.split(" events and spans were dropped in all")[0].rsplit("admiss: telemetry: ", 1)[1])
    assert 0 < dropped <= 3000 * 3
    assert "Traceback" not in err


def test_a_check_killed_midway_leaves_an_exporter_that_sends_what_it_has_and_ends_quietly(tmp_path, receiver):
    rubric, _ = write_case(tmp_path)
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(BUNDLE) + "\n" for _ in range(100000)))
    env = plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
    run = subprocess.Popen([sys.executable, "-m", "admiss", "check", "--rubric", str(rubric), "--format", "json",
                            str(batch)], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    exporter = exporter_of(run.pid)
    deadline = time.monotonic() + 60
    while not events(receiver) and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(run.pid, signal.SIGKILL)
    assert run.wait(30) == -signal.SIGKILL  # killed in the middle, not done before
    before = len(events(receiver))
    # The exporter holds the same stderr: the pipe ends once it has ended too. Nobody is
    # left to read its count of what it sent, which it must not take for a failure.
    assert gone_within([exporter], 30)
    err = run.stderr.read()
    assert "Traceback" not in err and "Error" not in err, err
    assert len(events(receiver)) >= before > 0


def test_a_check_whose_exporter_stops_a_while_waits_for_it_and_loses_nothing(tmp_path, receiver):
    rubric, bundle = write_case(tmp_path)
    env = plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
    assert check(tmp_path, "--rubric", str(rubric), "--format", "json", str(bundle), env=env).returncode == 1
    per_bundle = len(events(receiver))
    assert per_bundle > 0
    receiver.clear()
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(BUNDLE) + "\n" for _ in range(3000)))
    run = subprocess.Popen([sys.executable, "-m", "admiss", "check", "--rubric", str(rubric), "--format", "json",
                            str(batch)], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    exporter = exporter_of(run.pid)
    os.kill(exporter, signal.SIGSTOP)
    time.sleep(1.0)
    # The facts of 3,000 reports are more than the pipe holds: the check waits for room.
    assert run.poll() is None
    os.kill(exporter, signal.SIGCONT)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 1, err
    assert len(out.splitlines()) == 3000
    assert "dropped" not in err and "Traceback" not in err, err
    assert len(events(receiver)) == 3000 * per_bundle


def test_a_gateway_whose_exporter_falls_behind_drops_counts_and_says_so(tmp_path):
    upstream = ChatServer(route=scripted_by_prompt, keep_alive=True).start()
    otlp = Receiver().start()
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_BLRP_MAX_QUEUE_SIZE": "2",
           "OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_BLRP_SCHEDULE_DELAY": "50"}
    gateway = Gateway(tmp_path, upstream, extra_env=env)
    try:
        exporter = exporter_of(gateway.process.pid)
        os.kill(exporter, signal.SIGSTOP)  # its pipe fills, then the gateway's queue
        client = gateway.client()
        total = 120
        for _ in range(total):
            _, text = prompt({"cheap": GOOD})
            reply = client.chat.completions.create(model="json", messages=[{"role": "user", "content": text}])
            assert reply.choices[0].message.content  # served, never held up by telemetry
        os.kill(exporter, signal.SIGCONT)
        assert gateway.stop() == 0
        log = gateway.log.read_text()
        assert "the exporter falls behind: requests' spans and events past the queue of 2" in log
        dropped = int(log.split(" requests' spans and events were dropped in all")[0].rsplit("admiss: telemetry: ", 1)[1])
        assert 0 < dropped < total
        # What was not dropped arrived: one request span for each request kept.
        served = [span for _, span in otlp.spans() if span.kind == 2]
        assert len(served) == total - dropped
    finally:
        gateway.stop()
        otlp.stop()
        upstream.stop()
