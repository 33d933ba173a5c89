"""--jobs workers (admiss/workers.py): a worker killed at any instant loses no bundle and
repeats none (issue 25), a worker stopped by gate code does not hang the batch (issue 18,
item 19), and the journal's resume point survives a record cut short."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from admiss.checkrun import CheckOptions, CheckRun
from admiss.pieces import pieces_of
from admiss.workers import Point, Supervisor, _record, last_point
from processes import alive
from test_batch_faults import CHAIN_RUBRIC, bundle_line, workers_of
from test_seed import SHORTCUT, STRICT, TEN_K

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the workers in /proc")

BUNDLES = 12_000
RUNS = 6
KILLS_PER_RUN = 3


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """A .jsonl of many pieces with bad lines among good ones, and one process's output on it."""
    folder = tmp_path_factory.mktemp("kills")
    (folder / "sec.rubric").write_text(STRICT)
    lines = [json.dumps({"evidence": [dict(TEN_K if n % 5 else SHORTCUT, detail=f"item {n}")]}) for n in range(BUNDLES)]
    lines[777] = "{cut off"
    lines[5000] = json.dumps({"evidence": [{"kind": "final_answer"}]})
    (folder / "b.jsonl").write_text("\n".join(lines) + "\n")
    one = subprocess.run([sys.executable, "-m", "admiss", "check", "--rubric", "sec.rubric", "--format", "json",
                          "b.jsonl"], cwd=folder, capture_output=True, timeout=120)
    assert one.returncode == 2 and len(one.stdout.splitlines()) == BUNDLES
    return folder, one


def _piece_in_hand(worker: int) -> str | None:
    """The chunk file a worker is writing (so it is checking that piece), if any."""
    try:
        for fd in os.listdir(f"/proc/{worker}/fd"):
            target = os.readlink(f"/proc/{worker}/fd/{fd}")
            if "admiss-chunks-" in target and target.endswith(".out"):
                return target
    except OSError:
        pass
    return None


def _run_with_kills(folder: Path, seed: int, kills: int, *args: str) -> tuple[subprocess.CompletedProcess, int]:
    """Run --jobs 2 and SIGKILL workers at random instants while they check a piece (each
    piece at most once, so no bundle can be in hand at two deaths); the run, the kills made."""
    rng = random.Random(seed)
    command = [sys.executable, "-m", "admiss", "check", "--rubric", "sec.rubric", "--format", "json", "--jobs", "2",
               *args, "b.jsonl"]
    proc = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed_pieces: set[str] = set()

    def killer():
        deadline = time.monotonic() + 60
        while len(killed_pieces) < kills and proc.poll() is None and time.monotonic() < deadline:
            busy = [(w, piece) for w in workers_of(proc.pid) if (piece := _piece_in_hand(w)) not in (None, *killed_pieces)]
            if not busy:
                time.sleep(0.002)
                continue
            victim, piece = rng.choice(busy)
            time.sleep(rng.uniform(0, 0.03))
            if _piece_in_hand(victim) == piece:
                os.kill(victim, signal.SIGKILL)
                killed_pieces.add(piece)

    thread = threading.Thread(target=killer)
    thread.start()
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        thread.join()
    return subprocess.CompletedProcess(command, proc.returncode, out, err), len(killed_pieces)


@pytest.mark.parametrize("seed", range(RUNS))
def test_workers_killed_at_random_instants_lose_and_repeat_no_bundle(batch, seed):
    folder, one = batch
    ran, kills = _run_with_kills(folder, seed, KILLS_PER_RUN)
    assert b"Traceback" not in ran.stderr
    names = [json.loads(line)["bundle"] for line in ran.stdout.splitlines()]
    assert names == [f"b.jsonl:{n}" for n in range(1, BUNDLES + 1)]  # each once, in order
    # A bundle whose worker died once is checked again: the output is one process's.
    assert (ran.stdout, ran.stderr, ran.returncode) == (one.stdout, one.stderr, one.returncode)
    assert kills >= 1  # the run lasted long enough to be killed in


def test_a_worker_killed_at_random_instants_with_fail_fast_stops_where_one_process_does(batch):
    folder, _ = batch
    one = subprocess.run([sys.executable, "-m", "admiss", "check", "--rubric", "sec.rubric", "--format", "json",
                          "--fail-fast", "b.jsonl"], cwd=folder, capture_output=True, timeout=120)
    ran, _ = _run_with_kills(folder, 99, KILLS_PER_RUN, "--fail-fast")
    assert (ran.stdout, ran.stderr, ran.returncode) == (one.stdout, one.stderr, one.returncode)


# ---------------------------------------------------------------- a worker that dies reading a .json bundle


def _holding(worker: int, path: Path) -> bool:
    """Whether the worker has ``path`` open (so it is reading it)."""
    try:
        return any(os.readlink(f"/proc/{worker}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{worker}/fd"))
    except OSError:
        return False


@pytest.mark.parametrize("fault", ["killed", "hung"])
def test_a_worker_that_dies_or_hangs_reading_a_json_bundle_costs_only_that_bundle(tmp_path, fault):
    # x.json becomes a FIFO once the workers are up (after the parent saw regular files), so a
    # worker reading it blocks there, at a fixed point inside the read: it is killed there,
    # or (hung) left for the watchdog. Read before the bundle was marked under way, each
    # death counted as one without progress (the run stopped with E182) and each watchdog
    # kill left no bundle to blame (the piece was retried for ever).
    (tmp_path / "sec.rubric").write_text(STRICT)
    lines = [json.dumps({"evidence": [dict(TEN_K, detail=f"item {n}")]}) for n in range(3000)]
    (tmp_path / "b.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "c.json").write_text(lines[0])
    fifo = tmp_path / "x.json"
    fifo.write_text(lines[0])
    os.mkfifo(tmp_path / "x.fifo")
    one = subprocess.run([sys.executable, "-m", "admiss", "check", "--rubric", "sec.rubric", "--format", "json",
                          "b.jsonl", "c.json"], cwd=tmp_path, capture_output=True, timeout=120)
    timeout = ["--bundle-timeout", "3"] if fault == "hung" else []
    kills, writer = 0, None
    with (tmp_path / "out").open("wb") as out, (tmp_path / "err").open("wb") as err:  # no pipe to fill up
        proc = subprocess.Popen([sys.executable, "-m", "admiss", "check", "--rubric", "sec.rubric", "--format", "json",
                                 "--jobs", "2", *timeout, "b.jsonl", "x.json", "c.json"], cwd=tmp_path,
                                stdout=out, stderr=err)
    try:
        deadline = time.monotonic() + 60
        while not workers_of(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.001)
        os.rename(tmp_path / "x.fifo", fifo)
        while fault == "killed" and proc.poll() is None and kills < 5 and time.monotonic() < deadline:
            if writer is None:  # held open from the first reader on, so each reader blocks in its read
                with contextlib.suppress(OSError):  # ENXIO: no reader yet
                    writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            for worker in workers_of(proc.pid):
                if writer is not None and _holding(worker, fifo):
                    os.kill(worker, signal.SIGKILL)
                    kills += 1
                    while alive(worker):
                        time.sleep(0.001)
            time.sleep(0.002)
        proc.wait(timeout=60)
    finally:
        proc.kill()
        if writer is not None:
            os.close(writer)
    out, err = (tmp_path / "out").read_bytes(), (tmp_path / "err").read_bytes()
    assert b"Traceback" not in err and proc.returncode == 2, err
    reports = out.splitlines()
    assert reports[:3000] + reports[3001:] == one.stdout.splitlines()
    error = json.loads(reports[3000])
    assert error["bundle"] == "x.json" and error["error"][0]["code"] == ("E181" if fault == "killed" else "E183")
    if fault == "killed":
        assert kills == 2  # checked once more after the first death, not read after the second
        assert b"x.json: E181 the worker process checking this bundle died (killed by SIGKILL)" in err
    else:
        assert b"x.json: E183 the worker process checking this bundle was ended: no progress in 3 s" in err


# ---------------------------------------------------------------- a worker stopped by its gate

# Long enough that a sound bundle's gate program (a Python start-up) never takes it on a
# loaded 2-core CI machine: at 2 s a sound bundle was once ended too.
NO_PROGRESS_S = 8
STOP_GATE = """import json, os, signal, sys
candidate = json.load(sys.stdin)["candidate"]
if candidate == "STOP":
    # The worker: the parent, or on Linux the parent's parent (admiss.gates.reaper runs the program).
    parent = os.getppid()
    with open(f"/proc/{parent}/cmdline", "rb") as f:
        if b"reaper.py" in f.read():
            parent = int(open(f"/proc/{parent}/stat").read().rsplit(")", 1)[1].split()[1])
    os.kill(parent, signal.SIGSTOP)
print(json.dumps({"verdict": "pass"}))
"""


def test_a_worker_stopped_by_its_gate_is_ended_and_only_its_bundle_is_an_error(tmp_path):
    (tmp_path / "gate.py").write_text(STOP_GATE)
    (tmp_path / "chain.rubric").write_text(CHAIN_RUBRIC)
    outputs = ["ok"] * 8
    outputs[5] = "STOP"
    (tmp_path / "b.jsonl").write_text("".join(bundle_line(o, n, 10_000) + "\n" for n, o in enumerate(outputs)))
    proc = subprocess.Popen([sys.executable, "-m", "admiss", "check", "--rubric", "chain.rubric", "--format", "json",
                             "--jobs", "2", "--bundle-timeout", str(NO_PROGRESS_S), "b.jsonl"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 90
        while proc.poll() is None and time.monotonic() < deadline:
            seen.update(workers_of(proc.pid))
            time.sleep(0.05)
        out, err = proc.communicate(timeout=1)
    finally:
        proc.kill()
        for pid in seen:  # a worker the fix fails to end must not outlive the test
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert "Traceback" not in err and proc.returncode == 2, err
    reports = [json.loads(line) for line in out.splitlines()]
    assert [r["bundle"] for r in reports] == [f"b.jsonl:{n}" for n in range(1, 9)]
    for n, report in enumerate(reports):
        if outputs[n] == "STOP":
            assert report["error"][0]["code"] == "E183" and report["error"][0]["line"] == n + 1
        else:
            assert report["verdict"] == "pass", report
    assert (f"b.jsonl:6:1: E183 the worker process checking this bundle was ended: no progress in {NO_PROGRESS_S} s; "
            "it was stopped (SIGSTOP or the like)") in err
    assert not any(alive(pid) for pid in seen)


def test_bundle_timeout_is_a_positive_number_of_seconds(admiss_cli, tmp_path):
    (tmp_path / "sec.rubric").write_text(STRICT)
    ran = admiss_cli("check", "--rubric", "sec.rubric", "--jobs", "2", "--bundle-timeout", "0", "x.jsonl")
    assert ran.code == 2 and "Invalid value for '--bundle-timeout'" in ran.err and "Traceback" not in ran.err


# ---------------------------------------------------------------- the journal


def _point(n: int) -> Point:
    return Point(n * 100, n, n * 10, n, n, 0, 0, n + 1, n, 0)


def test_the_resume_point_is_the_last_whole_record(tmp_path):
    journal = tmp_path / "0.log"
    journal.write_bytes(b"".join(_record(_point(n)) for n in range(1, 4)))
    assert last_point(str(journal)) == _point(3)
    with journal.open("ab") as data:  # a record cut short by the kill
        data.write(_record(_point(4))[:50])
    assert last_point(str(journal)) == _point(3)
    damaged = bytearray(journal.read_bytes()[: 3 * 128])
    damaged[2 * 128 + 5] ^= 0xFF  # a record whose bytes are not those written
    journal.write_bytes(bytes(damaged))
    assert last_point(str(journal)) == _point(2)
    journal.write_bytes(b"")
    assert last_point(str(journal)) is None


def test_a_record_never_crosses_a_page():
    assert 4096 % len(_record(_point(1))) == 0


def test_the_first_pieces_go_to_workers_before_the_rest_of_the_input_is_cut(tmp_path):
    (tmp_path / "sec.rubric").write_text(STRICT)
    path = tmp_path / "b.jsonl"
    path.write_text("".join(json.dumps({"evidence": [dict(TEN_K, detail=f"item {n}")]}) + "\n" for n in range(3000)))
    run = CheckRun(CheckOptions(rubric=tmp_path / "sec.rubric", fmt="json", jobs=2), True)
    (tmp_path / "chunks").mkdir()
    busy_when_cut = []

    def pieces():
        for piece in pieces_of([path], 2, min_bytes=1000, shrinking=True):
            busy_when_cut.append(sum(worker.future is not None for worker in supervisor.workers))
            yield piece

    supervisor = Supervisor(run, pieces(), str(tmp_path / "chunks"), 2)
    try:
        points = [point for _, point in supervisor.in_order()]
    finally:
        supervisor.stop()
    # The first piece is cut with no worker busy, the second once the first worker has its
    # piece, the third (and the rest) once both have theirs.
    assert busy_when_cut[:3] == [0, 1, 2] and len(busy_when_cut) > 3
    assert sum(point.bundles for point in points) == 3000


def _pages_copied_by_a_collection() -> int:
    """Run in a worker: the pages its first full collection copies from the fork server."""
    import gc
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    gc.collect()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_a_worker_s_collections_copy_none_of_the_fork_server_s_heap():
    # Unfrozen, the first collection wrote to every object header the server had loaded:
    # about 1,100 pages copied in each worker before it checked a bundle.
    from concurrent.futures import ProcessPoolExecutor

    from admiss.workerstart import worker_context

    with ProcessPoolExecutor(1, mp_context=worker_context()) as pool:
        assert pool.submit(_pages_copied_by_a_collection).result() < 100
