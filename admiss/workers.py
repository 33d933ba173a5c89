"""``admiss check --jobs N``: worker processes that check pieces of files into chunk files.

Each worker is the one process of a ``concurrent.futures.ProcessPoolExecutor`` of its own,
which starts it (forked from the fork server of admiss/workerstart.py, handed the check
run pickled) and tells when it dies. One
executor per worker, not one for all: a dead worker breaks only its own executor (whose
queues it may have left locked), so the others carry on, and its death is known to be
that piece's.

A worker checks a piece (admiss/pieces.py) bundle by bundle, appending reports to the
piece's chunk files and, every few bundles, a *commit* to the piece's journal: one
fixed-size record, written in one ``write`` that never crosses a page and carrying its own
CRC, saying how far the piece is read and how long the chunk files are there. A worker
killed at any instant leaves a journal whose last whole record is a true resume point:
the next worker cuts the chunk files back to it and reads on from its offset, so every
bundle is reported exactly once.

Each worker also keeps, in shared memory, its pid, the offset of the bundle it is checking
(one 8-byte word, written in one store) and a count of bundles begun. From these the
parent knows which bundle a dead worker was on (checked again once; a bundle its worker
dies on twice is reported E181) and sees a worker that makes no progress: past
``--bundle-timeout`` on one bundle (a gate that hangs it, or SIGSTOPs it) the parent kills
it and reports that bundle E183; the rest of its piece is checked by a new worker.
"""

from __future__ import annotations

import multiprocessing.util
import os
import select
import signal
import struct
import threading
import time
import zlib
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

from admiss.checkrun import EXIT_BAD_INPUT, CheckRun, Writer
from admiss.collector import freeze_long_lived
from admiss.errors import AdmissError, BundleError, Diagnostic, input_error
from admiss.files import reading
from admiss.pieces import Piece
from admiss.source import Span
from admiss.units import units_of
from admiss.workerstart import worker_context

# Chunk files are flushed, and a commit written, after this many bundles (after each one
# when the rubric has gate chains: gates are slow, may cost money and may kill the worker,
# so a resumed piece checks none of them twice).
COMMIT_EVERY = 64
# How often the parent looks at its workers (deaths are seen at once; this paces the
# watchdog and the progress line).
TICK_SECONDS = 0.25
# A bundle whose worker dies on it this many times is reported E181 instead of checked again.
DEATHS_TO_BLAME = 2
# Pieces whose worker died this many times before checking any bundle stop the run (E182).
DEATHS_WITHOUT_PROGRESS = 3


# ---------------------------------------------------------------- the journal


class Point(NamedTuple):
    """A resume point: where a piece is read to, and what its chunk files hold up to there."""

    offset: int  # the next line starts here; the line before it has this number:
    line: int
    out_bytes: int
    err_bytes: int
    passed: int
    failed: int
    errors: int
    printed: int  # reports written, plus one (each chunk's first text report has a gap)
    bundles: int
    stopped: int  # 1 when --fail-fast stopped the piece here


_FIELDS = struct.Struct("<10q")
# 128 bytes: records start at multiples of 128, so none crosses a 4 KiB page, and a record
# is whole or (cut by the kill) short, which the file size shows.
_RECORD = struct.Struct("<80sI44x")


def start_point(piece: Piece) -> Point:
    return Point(piece.start, piece.first_line - 1, 0, 0, 0, 0, 0, 1, 0, 0)


def last_point(path: str) -> Point | None:
    """The journal's last whole record whose CRC holds, or None for a journal without one.
    Read from the end: only a record cut short by a kill, if any, precedes it there."""
    with open(path, "rb") as journal:
        size = os.fstat(journal.fileno()).st_size
        for end in range(size - size % _RECORD.size, 0, -_RECORD.size):
            fields, crc = _RECORD.unpack(os.pread(journal.fileno(), _RECORD.size, end - _RECORD.size))
            if zlib.crc32(fields) == crc:
                return Point(*_FIELDS.unpack(fields))
    return None


def _record(point: Point) -> bytes:
    fields = _FIELDS.pack(*point)
    return _RECORD.pack(fields, zlib.crc32(fields))


# ---------------------------------------------------------------- a worker


class Task(NamedTuple):
    """A piece to check and where its files are; ``skipped`` holds the bundles (by offset)
    reported as errors instead of being checked: (code, what happened)."""

    piece: Piece
    out_path: str
    err_path: str
    journal_path: str
    skipped: dict[int, tuple[str, str]]


# Shared memory, per worker: its pid, the offset + 1 of the bundle it is checking (0: none),
# and how many bundles it has begun.
_PID, _AT, _BEGUN = range(3)
_SLOT = 3


class _WorkerState(NamedTuple):
    run: CheckRun
    shared: Any
    base: int


_state: _WorkerState | None = None


def _start_worker(run: CheckRun, shared: Any, worker: int, parent: int) -> None:
    """A worker's start: keep what it was handed, publish its pid, and end with ``parent``
    (the admiss process; a forked worker's own parent is the fork server)."""
    global _state
    # Ctrl-C reaches the whole process group: the parent decides, and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    freeze_long_lived()
    _state = _WorkerState(run, shared, worker * _SLOT)
    if run.telemetry is not None:
        # A worker ends through multiprocessing's exit, which runs its finalizers and no atexit
        # handler: this one waits until the worker's exporter has sent what it holds, so the
        # parent, which waits for its workers, ends after every event is out.
        multiprocessing.util.Finalize(None, run.telemetry.close, exitpriority=10)
    shared[_state.base + _PID] = os.getpid()
    threading.Thread(target=_end_with, args=(parent,), name="admiss-parent-watch", daemon=True).start()


def _end_with(parent: int) -> None:
    # A worker whose parent is gone (killed, say) would otherwise check the rest of its piece
    # for no one. The fork server does not end with the parent either: each worker holds its
    # "parent alive" pipe open, so it outlives the parent as long as a worker does.
    try:
        watch = os.pidfd_open(parent)  # Linux: readable once the process has ended
    except (AttributeError, OSError):
        watch = None
    if watch is not None:
        select.select([watch], [], [])
    else:
        while _alive(parent):
            time.sleep(1)
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:  # gone, or (PermissionError) the number is another user's process now
        return False
    return True


def check_piece(task: Task) -> Point:
    """Check a task's piece from its journal's last commit on; the final point."""
    point = _PieceChecker(task, *_state).checked()
    if _state.run.telemetry is not None:
        _state.run.telemetry.flush()  # the piece's events leave before the parent hears it is done
    return point


class _PieceChecker:
    def __init__(self, task: Task, run: CheckRun, shared: Any, base: int):
        self.task, self.run, self.shared, self.base = task, run, shared, base

    def checked(self) -> Point:
        task = self.task
        point = last_point(task.journal_path) or start_point(task.piece)
        if point.stopped or (task.piece.end < 0 and point.bundles):
            return point  # finished before: the worker that finished it died sending the result
        for path, size in ((task.out_path, point.out_bytes), (task.err_path, point.err_bytes)):
            # Cut back only what a dead worker wrote past its commit. A truncate to 0, even of
            # an empty file, marks it as replaced on ext4 (auto_da_alloc), and closing it then
            # sends its pages to disk: every --jobs run wrote its 267 MB of chunks (100k
            # bundles) to disk, and the parent's unlink of each waited for that.
            if os.stat(path).st_size > size:
                os.truncate(path, size)
        with open(task.out_path, "ab") as self.out, \
                open(task.err_path, "a", encoding="utf-8", errors="backslashreplace") as self.err, \
                open(task.journal_path, "ab", buffering=0) as self.journal:
            self.writer = Writer(self.run, self.out, self.err, gap_first=True)
            self.writer.counts = {"pass": point.passed, "fail": point.failed, "error": point.errors}
            self.writer.printed = point.printed
            if task.piece.end < 0:  # a .json file: one bundle, read by check once marked under way
                outcome = self.check(0, None, 0)
                return self.commit(0, 0, 1, self.stops(outcome))
            return self.lines_checked(point)

    def lines_checked(self, point: Point) -> Point:
        piece, run = self.task.piece, self.run
        path, end, fail_fast, check = piece.path, piece.end, run.options.fail_fast, self.check
        offset, number, bundles, since = point.offset, point.line, point.bundles, 0
        every = 1 if run.fixed_rubric is None or run.fixed_rubric.ir.chains else COMMIT_EVERY
        try:
            data = _opened(piece.path)
        except AdmissError as error:  # gone since it was cut: an error in its place
            self.writer.write(run.error_outcome(error, piece.path))
            return self.commit(offset, number, bundles + 1, run.options.fail_fast)
        with data:
            data.seek(offset)
            # The loop's own work is kept to a few steps a bundle (locals, no closure or name
            # made per bundle): it ran 2.3 % more instructions a bundle than one process's loop.
            for raw in data:
                if offset >= end:
                    break
                here, number, offset = offset, number + 1, offset + len(raw)
                if not raw.strip():
                    continue
                outcome = check(here, (path, number, raw), number)
                bundles += 1
                since += 1
                if fail_fast and outcome[2] == EXIT_BAD_INPUT:
                    return self.commit(offset, number, bundles, True)
                if since >= every:
                    since = 0
                    self.commit(offset, number, bundles)
        return self.commit(offset, number, bundles)

    def check(self, offset: int, unit: Any, number: int):
        """The outcome of the bundle at ``offset`` (its unit: line ``number``'s, or None for a
        .json file, number 0), written; the shared word says it is under way. A .json file is
        read here, inside the mark: a worker that dies reading it (a huge or hostile file: the
        out-of-memory killer, a FIFO put in its place) dies on that bundle, which then gets its
        E181 or E183, instead of a death without progress, which stops the run (E182)."""
        shared, base, task = self.shared, self.base, self.task
        shared[base + _AT] = offset + 1
        shared[base + _BEGUN] += 1
        if offset in task.skipped:
            path = task.piece.path
            outcome = self.run.error_outcome(_not_checked(path, number, *task.skipped[offset]),
                                             f"{path}:{number}" if number else path)
        else:
            outcome = self.run.outcome(unit or next(units_of([Path(task.piece.path)])))
        self.writer.write(outcome)
        shared[base + _AT] = 0
        return outcome

    def stops(self, outcome) -> bool:
        return self.run.options.fail_fast and outcome[2] == EXIT_BAD_INPUT

    def commit(self, offset: int, line: int, bundles: int, stopped: bool = False) -> Point:
        """Flush the chunk files, then record the point in the journal in one write."""
        self.out.flush()
        self.err.flush()
        counts = self.writer.counts
        done = Point(offset, line, os.fstat(self.out.fileno()).st_size, os.fstat(self.err.fileno()).st_size,
                     counts["pass"], counts["fail"], counts["error"], self.writer.printed, bundles, int(stopped))
        self.journal.write(_record(done))
        return done


def _opened(path: str):
    with reading(path):
        return open(path, "rb")


def _not_checked(path: str, number: int, code: str, how: str) -> AdmissError:
    if code == "E181":
        message = f"the worker process checking this bundle died ({how})"
        hint = ("it died again when the bundle was checked once more: a gate program may kill it; "
                "the other bundles are still checked")
    else:
        message = f"the worker process checking this bundle was ended: {how}"
        hint = "a gate may hang or stop it (SIGSTOP); --bundle-timeout sets the deadline; the other bundles are still checked"
    return BundleError([Diagnostic(code, message, Span.point(number, 1), file=path, hint=hint)])


# ---------------------------------------------------------------- the parent


class _Worker:
    """One worker process: its executor, the task it holds, and what the watchdog saw."""

    def __init__(self, supervisor: "Supervisor", index: int):
        self.supervisor, self.index, self.base = supervisor, index, index * _SLOT
        self.executor: ProcessPoolExecutor | None = None
        self.task: Task | None = None
        self.future: Future | None = None

    def word(self, field: int) -> int:
        return self.supervisor.shared[self.base + field]

    def give(self, task: Task) -> None:
        self.task, self.begun_at_start = task, self.word(_BEGUN)
        self.seen_begun, self.seen_at, self.ended = self.begun_at_start, None, None
        try:
            self.future = self.started().submit(check_piece, task)
        except BrokenProcessPool:  # its worker died while it had no task
            self.executor.shutdown(wait=True)
            self.executor = None
            self.future = self.started().submit(check_piece, task)

    def started(self) -> ProcessPoolExecutor:
        if self.executor is None:
            shared = self.supervisor.shared
            shared[self.base + _PID] = shared[self.base + _AT] = 0
            self.executor = ProcessPoolExecutor(1, mp_context=worker_context(),
                                                initializer=_start_worker,
                                                initargs=(self.supervisor.run, shared, self.index, os.getpid()))
        return self.executor

    def done(self) -> None:
        self.task = self.future = None

    def processes(self) -> list[Any]:
        """The executor's worker process. concurrent.futures says only that a worker died and
        cannot end one (before 3.14); its process table, the private ``_processes`` (there
        since 3.2), holds the process: why it died, and a handle to kill it safely."""
        return list((getattr(self.executor, "_processes", None) or {}).values())

    def exit_status(self) -> int | None:
        """The dead worker's exit code (minus a signal's number), its executor shut down."""
        processes = self.processes()
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.executor = None
        codes = [process.exitcode for process in processes if process.exitcode is not None]
        return codes[0] if codes else None

    def kill(self) -> None:
        if self.future is not None and not self.future.done():
            for process in self.processes():
                process.kill()

    def watch(self, now: float, timeout: float) -> None:
        """End a worker that has begun no bundle for ``timeout`` seconds since it started."""
        if self.ended is not None or not self.word(_PID):
            return
        begun = self.word(_BEGUN)
        if self.seen_at is None or begun != self.seen_begun:
            self.seen_begun, self.seen_at = begun, now
            return
        if now - self.seen_at > timeout:
            at, pid = self.word(_AT), self.word(_PID)
            stopped = "; it was stopped (SIGSTOP or the like)" if _stopped(pid) else ""
            self.ended = (at - 1 if at else None, f"no progress in {timeout:g} s{stopped}")
            self.kill()


def _stopped(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"T"
    except (OSError, IndexError):
        return False


def _how(exit_code: int | None) -> str:
    if exit_code is None:
        return "for a reason not known"
    if exit_code >= 0:
        return f"exited with status {exit_code}"
    try:
        return f"killed by {signal.Signals(-exit_code).name}"
    except ValueError:
        return f"killed by signal {-exit_code}"


class Supervisor:
    """Hands pieces to idle workers, resumes a piece whose worker died or was ended, and
    yields finished pieces in input order."""

    def __init__(self, run: CheckRun, pieces: Iterator[Piece], folder: str, jobs: int):
        """``pieces`` are cut as they are handed out: the first ones go to workers as soon
        as they are cut, and the rest are cut while those workers start."""
        self.run, self.folder, self.uncut = run, folder, pieces
        self.pieces: list[Piece] = []
        self.tasks: list[Task] = []
        self.shared = worker_context().RawArray("q", jobs * _SLOT)
        self.queue: deque[Task] = deque()  # pieces cut and not yet handed out, and pieces to resume
        self.workers = [_Worker(self, index) for index in range(jobs)]
        self.finished: dict[int, Point] = {}
        self.deaths: dict[tuple[int, int], int] = {}
        self.deaths_without_progress: dict[int, int] = {}

    def _task(self, piece: Piece) -> Task:
        paths = [os.path.join(self.folder, f"{piece.index}.{kind}") for kind in ("out", "err", "log")]
        for path in paths:
            open(path, "wb").close()
        return Task(piece, *paths, {})

    def in_order(self, on_tick: Callable[[dict[str, int]], None] | None = None) -> Iterator[tuple[Task, Point]]:
        """Each piece's task with its final point, in input order, as soon as it and those
        before are done. While the caller copies a piece out, it calls ``tend`` now and
        then, so that a worker whose piece finishes meanwhile is handed its next at once."""
        self.hand_out()
        self.cut_all()
        for piece in self.pieces:
            while piece.index not in self.finished:
                self.tend(TICK_SECONDS)
                if on_tick is not None:
                    on_tick(self.in_flight_counts())
            yield self.tasks[piece.index], self.finished.pop(piece.index)

    def tend(self, seconds: float = 0) -> None:
        """Wait up to ``seconds`` for a worker to finish; collect every finished piece, watch
        the others, and hand pieces to idle workers."""
        self.hand_out()
        busy = [worker for worker in self.workers if worker.future is not None]
        if seconds:
            wait([worker.future for worker in busy], seconds, FIRST_COMPLETED)
        now = time.monotonic()
        for worker in busy:
            if worker.future.done():
                self.collect(worker)
            else:
                worker.watch(now, self.run.options.bundle_timeout)
        self.hand_out()

    def hand_out(self) -> None:
        for worker in self.workers:
            if worker.future is None and (self.queue or self.cut_one()):
                worker.give(self.queue.popleft())

    def cut_one(self) -> bool:
        """Cut the next piece and queue it; False when every piece is cut."""
        piece = next(self.uncut, None)
        if piece is None:
            return False
        self.pieces.append(piece)
        self.tasks.append(self._task(piece))
        self.queue.append(self.tasks[-1])
        return True

    def cut_all(self) -> None:
        while self.cut_one():
            pass

    def collect(self, worker: _Worker) -> None:
        try:
            point = worker.future.result()
        except BrokenProcessPool:
            self.resume(worker)
            return
        except Exception as error:  # the worker could not write its chunks (a full disk, say)
            raise input_error(worker.task.piece.path, f"a worker process failed: {error}", code="E182") from None
        self.finished[worker.task.piece.index] = point
        worker.done()

    def resume(self, worker: _Worker) -> None:
        """Queue the dead worker's piece again, from its last commit, first in line."""
        task, at, begun = worker.task, worker.word(_AT), worker.word(_BEGUN)
        how = _how(worker.exit_status())
        skipped = dict(task.skipped)
        if worker.ended is not None:  # the watchdog ended it
            if worker.ended[0] is not None:
                skipped[worker.ended[0]] = ("E183", worker.ended[1])
        elif at:
            key = (task.piece.index, at - 1)
            self.deaths[key] = self.deaths.get(key, 0) + 1
            if self.deaths[key] >= DEATHS_TO_BLAME:
                skipped[at - 1] = ("E181", how)
        elif begun == worker.begun_at_start:
            index = task.piece.index
            self.deaths_without_progress[index] = self.deaths_without_progress.get(index, 0) + 1
            if self.deaths_without_progress[index] >= DEATHS_WITHOUT_PROGRESS:
                raise input_error(task.piece.path, f"worker processes keep dying before checking a bundle ({how})",
                                  hint="run with --jobs 1 to see why", code="E182")
        worker.done()
        self.queue.appendleft(task._replace(skipped=skipped))

    def in_flight_counts(self) -> dict[str, int]:
        counts = {"pass": 0, "fail": 0, "error": 0}
        for worker in self.workers:
            point = worker.task and last_point(worker.task.journal_path)
            if point:
                counts["pass"] += point.passed
                counts["fail"] += point.failed
                counts["error"] += point.errors
        return counts

    def stop(self) -> None:
        """End every worker, and wait until none can still write into the chunk folder."""
        for worker in self.workers:
            worker.kill()
        for worker in self.workers:
            if worker.executor is not None:
                worker.executor.shutdown(wait=True, cancel_futures=True)
