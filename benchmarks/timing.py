"""Repeated timing with perf_counter, in process and of subprocesses.

The machines are noisy (two shared cores), so every figure is taken several times and
reported as the best and the median; ratios are only ever taken between figures measured
in the same run.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence


@dataclass(frozen=True)
class Timing:
    """Seconds per call over several repeats."""

    samples: tuple[float, ...]

    @property
    def best(self) -> float:
        return min(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


def calls_per_repeat(fn: Callable[[], object], min_seconds: float) -> int:
    """How many calls make one repeat last at least ``min_seconds``.

    Doubling from one call also serves as the warm-up: caches and lazy imports settle
    before the timed repeats start.
    """
    count = 1
    while True:
        start = time.perf_counter()
        for _ in range(count):
            fn()
        if time.perf_counter() - start >= min_seconds:
            return count
        count *= 2


def time_call(fn: Callable[[], object], repeats: int, min_seconds: float) -> Timing:
    """Seconds per call of ``fn``: each repeat runs it enough times to last ``min_seconds``."""
    count = calls_per_repeat(fn, min_seconds)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(count):
            fn()
        samples.append((time.perf_counter() - start) / count)
    return Timing(tuple(samples))


def time_interleaved(fns: Sequence[Callable[[], object]], repeats: int, min_seconds: float) -> list[Timing]:
    """Seconds per call of each of ``fns``, their repeats taken in turn (a, b, a, b, ...),
    so that a burst of load on the machine weighs on all of them alike; a ratio of two
    of these is steadier than one of two figures taken one after the other."""
    counts = [calls_per_repeat(fn, min_seconds) for fn in fns]
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, count, taken in zip(fns, counts, samples):
            start = time.perf_counter()
            for _ in range(count):
                fn()
            taken.append((time.perf_counter() - start) / count)
    return [Timing(tuple(taken)) for taken in samples]


def time_once_each(fns: Sequence[Callable[[], object]]) -> Timing:
    """Seconds of one call of each of ``fns``, for work too slow or stateful to loop."""
    samples = []
    for fn in fns:
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return Timing(tuple(samples))


def bytecode_cached(env: Mapping[str, str], folder: Path) -> dict[str, str]:
    """``env`` for processes that cache their bytecode in ``folder``, as an installed admiss
    has it (pip compiles the modules at install), even where PYTHONDONTWRITEBYTECODE is set:
    without a cache every process compiles admiss's modules (measured on a quiet host: 0.3-0.4
    CPU-s of one `admiss check`), paid again by each interpreter ``--jobs`` starts (its fork
    server 0.41-0.43 CPU-s against 0.08-0.09 with a cache)."""
    kept = {key: value for key, value in env.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**kept, "PYTHONPYCACHEPREFIX": str(folder / "bytecode")}


@contextlib.contextmanager
def installed_bytecode(folder: Path) -> Iterator[None]:
    """Inside, every subprocess started caches its bytecode in ``folder`` (bytecode_cached)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(bytecode_cached(saved, folder))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@dataclass(frozen=True)
class ProcessRun:
    seconds: float
    returncode: int
    # Peak resident set of the process (and the children it waited for), in bytes.
    max_rss: int
    stderr: str
    # User and system CPU time of the process and the children it waited for (its workers).
    cpu_seconds: float = 0.0


def run_process(cmd: Sequence[str], stdin: Path | None = None, stdout: Path | None = None,
                env: Mapping[str, str] | None = None, cwd: Path | None = None) -> ProcessRun:
    """Run ``cmd`` to completion (in ``env`` and ``cwd``, else this process's), timing it and reading its own peak RSS.

    os.wait4 gives the rusage of this one child; getrusage(RUSAGE_CHILDREN) would report
    the maximum over every child this run has ever waited for.
    """
    stdin_file = open(stdin, "rb") if stdin else subprocess.DEVNULL
    if stdout and Path(stdout).is_file():
        # A new file, not the last run's truncated: on ext4 a file truncated to 0 is sent to
        # disk when closed (auto_da_alloc), so each run's output (267 MB in the batch
        # section) was written to disk while the next run was timed.
        Path(stdout).unlink(missing_ok=True)
    stdout_file = open(stdout, "wb") if stdout else subprocess.DEVNULL
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=stdin_file, stdout=stdout_file, stderr=subprocess.PIPE, env=env, cwd=cwd)
        # Drain stderr before waiting so a chatty child cannot block on a full pipe.
        stderr = proc.stderr.read() if proc.stderr else b""
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    finally:
        for f in (stdin_file, stdout_file):
            if hasattr(f, "close"):
                f.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.stderr:
        proc.stderr.close()
    # ru_maxrss is in kilobytes on Linux.
    return ProcessRun(seconds, proc.returncode, usage.ru_maxrss * 1024, stderr.decode(errors="replace"),
                      usage.ru_utime + usage.ru_stime)


def time_process(cmd: Sequence[str], repeats: int, stdin: Path | None = None, stdout: Path | None = None) -> tuple[Timing, list[ProcessRun]]:
    """Seconds per run of ``cmd`` over ``repeats`` runs, with every run's details."""
    runs = [run_process(cmd, stdin, stdout) for _ in range(repeats)]
    return Timing(tuple(r.seconds for r in runs)), runs
