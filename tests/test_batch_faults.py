"""Faults in a batch cost only their own bundles (issue 8, class 8; issue 11, item 4):
a --jobs worker killed by a real gate program, a cut-off line, invalid UTF-8, an empty
file, and SIGTERM / SIGINT to the parent, which must take every worker with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import admiss
from admiss.pieces import cut_pieces
from processes import children, cmdline, gone_within
from test_seed import SHORTCUT, STRICT, TEN_K

# A gate program that kills the process running it (its parent: an admiss worker) when the
# candidate says so, passes "ok", and sleeps on "sleep" (so a test can find the workers busy).
GATE = """import json, os, signal, sys, time
candidate = json.load(sys.stdin)["candidate"]
if candidate == "KILL":
    # The worker: the parent, or on Linux the parent's parent (admiss.gates.reaper runs the program).
    parent = os.getppid()
    with open(f"/proc/{parent}/cmdline", "rb") if os.path.exists("/proc") else open(os.devnull, "rb") as f:
        if b"reaper.py" in f.read():
            parent = int(open(f"/proc/{parent}/stat").read().rsplit(")", 1)[1].split()[1])
    os.kill(parent, signal.SIGKILL)
    time.sleep(5)
if candidate == "sleep":
    time.sleep(60)
print(json.dumps({"verdict": "pass"}))
"""
CHAIN_RUBRIC = STRICT + """
CHAIN serve {
  GATE subprocess CMD ["%s", "gate.py"] TIMEOUT 90s
}
""" % sys.executable.replace("\\", "\\\\")


def bundle_line(output: str, n: int, padding: int = 0) -> str:
    return json.dumps({"evidence": [dict(TEN_K, detail=f"item {n}")], "output": output, "prompt": "x" * padding})


@pytest.fixture
def chain_folder(tmp_path):
    (tmp_path / "gate.py").write_text(GATE)
    (tmp_path / "chain.rubric").write_text(CHAIN_RUBRIC)
    return tmp_path


def test_a_worker_killed_by_its_gate_costs_only_that_bundle(admiss_cli, chain_folder):
    outputs = ["ok"] * 30
    outputs[4] = outputs[21] = "KILL"
    (chain_folder / "b.jsonl").write_text("".join(bundle_line(o, n) + "\n" for n, o in enumerate(outputs)))
    ran = admiss_cli("check", "--rubric", "chain.rubric", "--format", "json", "--jobs", "2", "b.jsonl")
    assert "Traceback" not in ran.err and ran.code == 2, ran.err
    out = [json.loads(line) for line in ran.out.splitlines()]
    assert [o["bundle"] for o in out] == [f"b.jsonl:{n}" for n in range(1, 31)]
    for n, report in enumerate(out):
        if outputs[n] == "KILL":
            assert report["error"][0]["code"] == "E181" and report["error"][0]["line"] == n + 1
        else:
            assert report["verdict"] == "pass", report
    assert "b.jsonl:5:1: E181 the worker process checking this bundle died (killed by SIGKILL)" in ran.err
    assert "b.jsonl:22:1: E181" in ran.err


def test_jobs_output_is_byte_identical_over_many_pieces(admiss_cli, tmp_path):
    (tmp_path / "sec.rubric").write_text(STRICT)
    lines = [json.dumps({"evidence": [dict(TEN_K if n % 4 else SHORTCUT, detail=f"item {n} " + "x" * 50)]})
             for n in range(3000)]
    lines[1000] = "{cut off"
    lines[2000] = ""
    (tmp_path / "big.jsonl").write_text("\n".join(lines) + "\n")
    assert len(cut_pieces([tmp_path / "big.jsonl"], 3)) >= 6
    for fmt in ("json", "text"):
        one = admiss_cli("check", "--rubric", "sec.rubric", "--format", fmt, "big.jsonl")
        three = admiss_cli("check", "--rubric", "sec.rubric", "--format", fmt, "--jobs", "3", "big.jsonl")
        assert (three.out, three.err, three.code) == (one.out, one.err, one.code)
        assert one.code == 2 and "big.jsonl:1001:" in one.err


def test_pieces_start_at_line_starts_with_their_line_numbers(tmp_path):
    path = tmp_path / "p.jsonl"
    text = "".join(f'{{"n": {n}}}' + " " * (n % 17) + "\n" for n in range(60000)) + '{"last": true}'
    path.write_text(text)
    pieces = cut_pieces([path, tmp_path / "x.json", path], 4, min_bytes=1000)  # crosses 1 MiB blocks
    data = path.read_bytes()
    assert [p.index for p in pieces] == list(range(len(pieces)))
    first = [p for p in pieces if p.file == 0]
    assert first[0].start == 0 and first[-1].end == len(data) and len(first) >= 6
    for before, after in zip(first, first[1:]):
        assert before.end == after.start and data[after.start - 1:after.start] == b"\n"
        assert after.first_line == data[:after.start].count(b"\n") + 1
    assert [p.end for p in pieces if p.file == 1] == [-1]


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("ending", ["", "\n"])
def test_a_cut_off_last_line_is_located_on_its_own_line(admiss_cli, tmp_path, jobs, ending):
    (tmp_path / "sec.rubric").write_text(STRICT)
    (tmp_path / "b.jsonl").write_text(json.dumps({"evidence": [TEN_K]}) + '\n{"evidence": [' + ending)
    ran = admiss_cli("check", "--rubric", "sec.rubric", "--format", "json", "--jobs", jobs, "b.jsonl")
    assert ran.code == 2
    assert ran.err.startswith("b.jsonl:2:15: B001 invalid JSON"), ran.err
    error = json.loads(ran.out.splitlines()[1])["error"][0]
    assert (error["line"], error["column"]) == (2, 15)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_invalid_utf8_line_is_located_and_the_others_are_checked(admiss_cli, tmp_path, jobs):
    (tmp_path / "sec.rubric").write_text(STRICT)
    good = json.dumps({"evidence": [TEN_K]}).encode()
    bad = b'{"evidence": [], "prompt": "caf\xe9"}'
    (tmp_path / "b.jsonl").write_bytes(good + b"\n" + bad + b"\n" + good + b"\n")
    ran = admiss_cli("check", "--rubric", "sec.rubric", "--format", "json", "--jobs", jobs, "b.jsonl")
    assert "Traceback" not in ran.err and ran.code == 2
    out = [json.loads(line) for line in ran.out.splitlines()]
    assert [o.get("verdict") for o in out] == ["pass", None, "pass"]
    assert ran.err.startswith("b.jsonl:2:32: B001 invalid JSON: not UTF-8 text (byte 0xe9)"), ran.err
    assert "caf\ufffd" in ran.err


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_a_jsonl_file_without_bundles_is_an_error(admiss_cli, tmp_path, jobs, content):
    (tmp_path / "sec.rubric").write_text(STRICT)
    (tmp_path / "empty.jsonl").write_text(content)
    (tmp_path / "one.jsonl").write_text(json.dumps({"evidence": [TEN_K]}) + "\n")
    ran = admiss_cli("check", "--rubric", "sec.rubric", "--format", "json", "--jobs", jobs, "empty.jsonl",
                     "one.jsonl")
    assert ran.code == 2
    assert ran.err.startswith("empty.jsonl: E180 nothing to read: the file is empty or holds only blank lines")
    first, second = (json.loads(line) for line in ran.out.splitlines())
    assert first["error"][0]["code"] == "E180" and second["verdict"] == "pass"
    alone = admiss_cli("check", "--rubric", "sec.rubric", "--format", "text", "--jobs", jobs, "empty.jsonl")
    assert alone.code == 2 and alone.out == "" and "E180" in alone.err


def workers_of(pid: int) -> list[int]:
    """The --jobs workers of admiss process ``pid``: the children of its fork server."""
    servers = [child for child in children(pid) if b"multiprocessing.forkserver" in cmdline(child)]
    return sorted(worker for server in servers for worker in children(server))


def _threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("\nThreads:", 1)[1].split()[0])


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_signal_to_the_parent_takes_every_worker_with_it(chain_folder, signum):
    """Even SIGKILL, which the parent cannot act on: each worker watches it, and the fork
    server that forked them ends once they have."""
    # Lines long enough for the file to be cut into a piece per worker.
    (chain_folder / "b.jsonl").write_text("".join(bundle_line("sleep", n, 40_000) + "\n" for n in range(4)))
    proc = subprocess.Popen([sys.executable, "-m", "admiss", "check", "--rubric", "chain.rubric", "--format",
                             "json", "--jobs", "2", "b.jsonl"], cwd=chain_folder, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        # Wait until both workers run a gate program (the grandchildren), so they are busy.
        while time.monotonic() < deadline:
            workers = set(workers_of(proc.pid))
            if len(workers) >= 2 and all(children(w) for w in workers):
                break
            time.sleep(0.1)
        assert len(workers) >= 2 and all(children(w) for w in workers)
        servers = {child for child in children(proc.pid) if b"multiprocessing.forkserver" in cmdline(child)}
        # Workers are forked from it, and a fork copies only the forking thread: with another
        # thread running, a lock it held would be copied held, and the worker could hang on it.
        assert [_threads(server) for server in servers] == [1]
        workers |= servers
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert "Traceback" not in err
    assert proc.returncode != 0
    assert gone_within(workers, 10)


def test_check_many_loses_only_the_bundle_whose_gate_kills_its_worker(chain_folder, monkeypatch):
    monkeypatch.chdir(chain_folder)  # the gate's CMD names gate.py relative to the working folder
    rubric = admiss.load(chain_folder / "chain.rubric")
    outputs = ["ok"] * 12
    outputs[3] = "KILL"
    bundles = [json.loads(bundle_line(o, n)) for n, o in enumerate(outputs)]
    results = list(admiss.check_many(rubric, bundles, jobs=2, chunk_size=4))
    assert len(results) == 12
    for n, result in enumerate(results):
        if outputs[n] == "KILL":
            assert isinstance(result, admiss.AdmissError) and result.diagnostics[0].code == "E181"
        else:
            assert result.verdict == "pass", n


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
def test_check_many_checks_in_workers_forked_from_the_fork_server_while_the_caller_runs_a_thread():
    # The caller may run threads (here one holding a lock): its workers must not be forked
    # from it, but from the one-thread fork server, as admiss check --jobs's are.
    held = threading.Lock()
    held.acquire()
    waiter = threading.Thread(target=held.acquire, daemon=True)
    waiter.start()
    rubric = admiss.compile_source(STRICT, "strict.rubric")
    bundles = [{"evidence": [dict(TEN_K, detail=f"filing #{n}")]} for n in range(40)]
    alone = [report.to_dict() for report in admiss.check_many(rubric, bundles)]
    results = admiss.check_many(rubric, bundles, jobs=2, chunk_size=4)
    first = next(results)
    servers = {child for child in children(os.getpid()) if b"multiprocessing.forkserver" in cmdline(child)}
    assert [_threads(server) for server in servers] == [1]
    assert len(workers_of(os.getpid())) == 2  # the pool's two, children of the server
    assert [first.to_dict()] + [report.to_dict() for report in results] == alone
    held.release()
