"""Batches on the command line: --jobs keeps order, a bad line never loses the others,
--fail-fast stops at it, reports stream out of a pipe, and the quick argument parser
behaves exactly as typer does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from admiss.launch import quick_check_arguments
from admiss.pieces import MIN_PIECE_BYTES
from admiss.runner import CheckOptions
from test_seed import SHORTCUT, STRICT, TEN_K


# Lines per batch, and a line in its middle: the batch is cut into several pieces for --jobs.
CHUNK_SIZE = 512


@pytest.fixture
def batch(tmp_path):
    """A .jsonl cut into several pieces for --jobs, with a bad line, blank lines and a malformed bundle."""
    (tmp_path / "sec.rubric").write_text(STRICT)
    lines = []
    for n in range(2 * CHUNK_SIZE + 40):
        item = dict(TEN_K if n % 3 else SHORTCUT, detail=f"item {n}")
        lines.append(json.dumps({"evidence": [item]}))
    lines[5] = "{not json"
    lines[CHUNK_SIZE + 7] = ""
    lines[CHUNK_SIZE + 9] = json.dumps({"evidence": [{"kind": "final_answer"}]})
    (tmp_path / "batch.jsonl").write_text("\n".join(lines) + "\n")
    assert (tmp_path / "batch.jsonl").stat().st_size > 2 * MIN_PIECE_BYTES
    return tmp_path


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_jobs_keeps_the_input_order_and_the_output_of_one_job(admiss_cli, batch, fmt):
    one = admiss_cli("check", "--rubric", "sec.rubric", "--format", fmt, "batch.jsonl")
    two = admiss_cli("check", "--rubric", "sec.rubric", "--format", fmt, "--jobs", "2", "batch.jsonl")
    assert (two.out, two.err, two.code) == (one.out, one.err, one.code)
    assert one.code == 2


@pytest.mark.parametrize("fmt", ["json", "text"])
@pytest.mark.parametrize("mode", ["wb", "ab"])  # a copy inside the kernel (sendfile) would refuse "ab"
def test_jobs_writes_one_process_output_into_a_file_opened_for_writing_or_appending(batch, fmt, mode):
    def check(jobs: str, out_path) -> bytes:
        out_path.write_bytes(b"kept\n")
        with open(out_path, mode) as out:
            subprocess.run([sys.executable, "-m", "admiss", "check", "--rubric", "sec.rubric", "--format", fmt,
                            "--jobs", jobs, "batch.jsonl"], cwd=batch, stdout=out, stderr=subprocess.DEVNULL,
                           timeout=60)
        return out_path.read_bytes()

    one, two = check("1", batch / "one.out"), check("2", batch / "two.out")
    assert two == one and one.count(b"\n") > 2 * CHUNK_SIZE
    assert one.startswith(b"kept\n") == (mode == "ab")


def test_a_bad_line_is_reported_on_its_line_and_the_others_still_are(admiss_cli, batch):
    ran = admiss_cli("check", "--rubric", "sec.rubric", "--format", "json", "-j", "2", "batch.jsonl")
    out = [json.loads(line) for line in ran.out.splitlines()]
    assert len(out) == 2 * CHUNK_SIZE + 39  # one line per bundle; the blank line is skipped
    assert out[5]["error"][0]["code"] == "B001" and out[5]["bundle"].endswith("batch.jsonl:6")
    assert out[CHUNK_SIZE + 8]["error"][0]["code"] == "B002"
    assert [o["bundle"].rsplit(":", 1)[1] for o in out[:3]] == ["1", "2", "3"]
    assert out[-1]["bundle"].endswith(f"batch.jsonl:{2 * CHUNK_SIZE + 40}") and "verdict" in out[-1]
    assert ran.code == 2


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_fail_fast_stops_at_the_first_bundle_that_cannot_be_loaded(admiss_cli, batch, jobs):
    ran = admiss_cli("check", "--rubric", "sec.rubric", "--format", "json", "--jobs", jobs, "--fail-fast",
                     "batch.jsonl")
    out = [json.loads(line) for line in ran.out.splitlines()]
    assert len(out) == 6 and "error" in out[-1] and all("verdict" in o for o in out[:5])
    assert ran.err.count("B001") == 1 and "B002" not in ran.err
    assert ran.code == 2


def test_fail_fast_does_not_stop_at_a_failing_verdict(admiss_cli, batch):
    (batch / "fails.jsonl").write_text("\n".join(json.dumps({"evidence": [SHORTCUT]}) for _ in range(3)))
    ran = admiss_cli("check", "--rubric", "sec.rubric", "--format", "json", "--fail-fast", "fails.jsonl")
    assert len(ran.out.splitlines()) == 3 and ran.code == 1


@pytest.mark.parametrize("jobs", ["1", "2"])  # a FIFO cannot be cut: --jobs 2 streams it in one process
def test_reports_stream_out_while_a_pipe_is_still_being_written(batch, jobs):
    fifo = batch / "live.jsonl"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "admiss", "check", "--rubric", "sec.rubric", "--format", "json",
                             "--jobs", jobs, str(fifo)], cwd=batch, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    first_report = []
    with open(fifo, "w") as writer:
        writer.write(json.dumps({"evidence": [TEN_K]}) + "\n")
        writer.flush()
        reader = threading.Thread(target=lambda: first_report.append(proc.stdout.readline()))
        reader.start()
        reader.join(timeout=30)
        # The first report arrived while the pipe is still open, with more to come.
        assert first_report and json.loads(first_report[0])["verdict"] == "pass"
        writer.write(json.dumps({"evidence": [SHORTCUT]}) + "\n")
    rest, _ = proc.communicate(timeout=30)
    assert json.loads(rest)["verdict"] == "fail"
    assert proc.returncode == 1


# ---------------------------------------------------------------- the quick argument parser

TYPER = "import sys; from admiss.cli import main; sys.argv[0] = 'admiss'; main()"


@pytest.mark.parametrize("args", [
    ["check", "--rubric", "sec.rubric", "--format", "json", "batch.jsonl"],
    ["check", "batch.jsonl", "-r", "sec.rubric", "-f", "text", "--jobs=2"],
    ["check", "--format=json", "--rubric=sec.rubric", "--fail-fast", "-j", "1", "--", "batch.jsonl"],
    ["check", "-r", "sec.rubric", "--format", "text", "missing.jsonl", "batch.jsonl"],
    ["check", "-r", "sec.rubric", "--chain", "nope", "--format", "json", "batch.jsonl"],
    ["check", "-r", "missing.rubric", "batch.jsonl"],
    ["check", "-r", "sec.rubric", "-f", "json", "--report", "full", "-j", "2", "missing.jsonl", "batch.jsonl"],
])
def test_the_quick_parser_runs_a_command_line_as_typer_does(batch, args):
    quick = subprocess.run([sys.executable, "-m", "admiss", *args], cwd=batch, capture_output=True, text=True, timeout=60)
    typer = subprocess.run([sys.executable, "-c", TYPER, *args], cwd=batch, capture_output=True, text=True, timeout=60)
    assert (quick.stdout, quick.stderr, quick.returncode) == (typer.stdout, typer.stderr, typer.returncode)


@pytest.mark.parametrize("args", [
    [], ["compile", "x.rubric"], ["check"], ["check", "--help"], ["check", "b.json", "--help"],
    ["check", "--format", "xml", "b.json"], ["check", "--jobs", "0", "b.json"], ["check", "--jobs", "two", "b.json"],
    ["check", "-r", "a", "-r", "b", "b.json"], ["check", "--rubric"], ["check", "--rubric", "--format", "b.json"],
    ["check", "-rsec.rubric", "b.json"], ["check", "--fail-fast=yes", "b.json"], ["check", "--unknown", "b.json"],
    ["check", ""], ["--version"], ["check", "--format=", "b.json"],
])
def test_the_quick_parser_leaves_anything_unusual_to_typer(args):
    assert quick_check_arguments(args) is None


def test_the_quick_parser_reads_what_typer_would(monkeypatch):
    from pathlib import Path

    paths, options = quick_check_arguments(["check", "a.jsonl", "-", "--jobs", "3", "-f", "json", "--config", "c.toml"])
    assert paths == [Path("a.jsonl"), Path("-")]
    assert options == CheckOptions(rubric=None, fmt="json", chain=None, config=Path("c.toml"), jobs=3, fail_fast=False)


def test_help_still_comes_from_typer_and_lists_the_batch_options(admiss_cli):
    ran = admiss_cli("check", "--help")
    assert ran.code == 0 and "--jobs" in ran.out and "--fail-fast" in ran.out
