"""``admiss check --jobs N``: the finished pieces' chunk files copied to stdout and stderr in
input order, so the output is byte for byte that of one process."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from admiss.checkrun import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_PASS, CheckRun, Writer
from admiss.errors import AdmissError
from admiss.pieces import BLOCK, Piece, pieces_of
from admiss.units import no_bundles
from admiss.workers import Point, Supervisor, Task


class _Stopped(BaseException):
    """SIGTERM reached the parent: stop every worker, then exit as that signal would."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Stopped()


def run_in_workers(run: CheckRun, paths: list[Path], progress) -> int:
    """Check ``paths`` in run.options.jobs worker processes; the exit code."""
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        with tempfile.TemporaryDirectory(prefix="admiss-chunks-") as folder:
            supervisor = Supervisor(run, pieces_of(paths, run.options.jobs, shrinking=True), folder, run.options.jobs)
            try:
                # The supervisor's list of pieces is whole before the first is copied out.
                return _Stitcher(run, paths, supervisor.pieces, progress).stitch_all(supervisor)
            finally:  # before the folder goes: no worker may still write into it
                supervisor.stop()
    except _Stopped:
        sys.stderr.write("admiss: stopped by SIGTERM; every worker was ended\n")
        return 128 + signal.SIGTERM
    except AdmissError as error:  # E182: workers that die before checking anything
        sys.stdout.flush()
        sys.stderr.write(error.render() + "\n")
        return EXIT_BAD_INPUT
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Stitcher:
    def __init__(self, run: CheckRun, paths: list[Path], pieces: list[Piece], progress):
        self.run, self.pieces, self.progress = run, pieces, progress
        self.printed = 0
        self.counts = {"pass": 0, "fail": 0, "error": 0}
        self.bundles_in_file = [0] * len(paths)

    def stitch_all(self, supervisor: Supervisor) -> int:
        """The exit code, once every piece is copied out (or --fail-fast stopped at one)."""
        for task, point in supervisor.in_order(self.show_progress if self.progress is not None else None):
            if self.stitch(task, point, supervisor.tend):
                return EXIT_BAD_INPUT
        return EXIT_BAD_INPUT if self.counts["error"] else EXIT_FAIL if self.counts["fail"] else EXIT_PASS

    def stitch(self, task: Task, point: Point, between_blocks: Callable[[], None]) -> bool:
        """Copy a finished piece's chunks out, calling ``between_blocks`` after each block (a
        large piece takes a tenth of a second to copy, in which another worker may finish
        and wait for its next piece); whether the run stops there (--fail-fast)."""
        stdout = sys.stdout.buffer
        with open(task.out_path, "rb") as chunk:
            # Each chunk's text reports all begin with a blank line; the batch's first does not.
            if self.printed == 0 and point.printed > 1 and self.run.options.fmt == "text":
                chunk.seek(1)
            # Read and written here: sendfile was measured too, and saved nothing (copying
            # 279 MB took 0.10-0.11 CPU-s in the kernel either way; this process's side is small).
            while block := chunk.read(BLOCK):
                stdout.write(block)
                between_blocks()
        stdout.flush()
        with open(task.err_path, "r", encoding="utf-8", errors="replace") as chunk:
            shutil.copyfileobj(chunk, sys.stderr, BLOCK)
        for path in (task.out_path, task.err_path, task.journal_path):
            os.unlink(path)  # a long run keeps only the chunks not yet copied out
        self.printed += point.printed - 1
        for verdict, count in zip(("pass", "fail", "error"), (point.passed, point.failed, point.errors)):
            self.counts[verdict] += count
        piece = task.piece
        self.bundles_in_file[piece.file] += point.bundles
        if self._last_of_file(piece) and self.bundles_in_file[piece.file] == 0 and piece.end >= 0:
            writer = Writer(self.run, stdout, sys.stderr)
            writer.printed = self.printed
            writer.write(self.run.error_outcome(no_bundles(piece.path), piece.path))
            self.printed = writer.printed
            self.counts["error"] += 1
            return self.run.options.fail_fast
        return bool(point.stopped)

    def _last_of_file(self, piece: Piece) -> bool:
        return piece.index + 1 == len(self.pieces) or self.pieces[piece.index + 1].file != piece.file

    def show_progress(self, in_flight: dict[str, int]) -> None:
        self.progress.show({verdict: count + in_flight[verdict] for verdict, count in self.counts.items()})
