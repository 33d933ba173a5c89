"""Checking many bundles: streamed from files or any iterable, in this process or in workers.

One bundle: ``CheckRun.report_for`` turns one parsed JSON value into its report; that is the
single per-bundle seam everything below goes through.

``admiss check`` reads bundle files as a stream (a .jsonl file line by line) and writes
reports in input order as they are ready, so memory stays flat in the input size. With
``--jobs N`` over regular files, the files are cut into byte ranges at line boundaries; N
worker processes each read their own ranges and write each range's output to a chunk file
of its own, and this process only copies the chunks to stdout and stderr in input order.
A worker that dies costs only the bundle it was checking (reported as a located error);
another worker carries on with the rest of its range. Inputs that cannot be cut (stdin,
pipes, FIFOs) are checked in this process as they arrive.

Workers are started with the "spawn" method and are handed the check run pickled (the
compiled rubric by its IR), so each worker builds its own gate chains, error budgets,
event loop and provider clients: an error budget counts the errors one worker has seen.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import sys
import tempfile
from collections import deque
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, NamedTuple

from admiss.api import load, read_text
from admiss.bundle import parse_bundle_text, rubric_path, validate_bundle
from admiss.collector import freeze_long_lived
from admiss.errors import AdmissError, BundleError, Diagnostic, input_error
from admiss.files import reading
from admiss.jsonio import dumps_indented, dumps_line
from admiss.source import Source, Span
from admiss.terminal import one_line
from admiss.traces.input import is_trace

EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2
# The bundle path that means standard input (read as JSON Lines).
STDIN = "-"
# Progress is redrawn after this many bundles, so drawing never costs more than checking.
PROGRESS_EVERY = 500

# ---------------------------------------------------------------- ordered work, here or in a pool

_worker_state: Any = None  # what a worker process was handed, unpickled once at its start


def _start_worker(state: Any) -> None:
    global _worker_state
    _worker_state = state


def _work_in_worker(work: Callable[[Any, Any], Any], chunk: Any) -> Any:
    return work(_worker_state, chunk)


def in_order(work: Callable[[Any, Any], Any], chunks: Iterable[Any], jobs: int, state: Any,
             lost: Callable[[Any, Any], Any]) -> Iterator[Any]:
    """``work(state, chunk)`` for each chunk, in input order.

    With jobs > 1 each worker process of a pool holds its own unpickled copy of ``state``,
    and at most 2 × jobs chunks are in flight, so a long input is never read ahead whole.
    A worker that dies takes the pool's chunks in flight with it: each is run again alone
    in a new pool, and one whose worker dies again gives ``lost(state, chunk)`` instead.
    """
    if jobs <= 1:
        return map(partial(work, state), chunks)
    return _pooled(work, chunks, jobs, state, lost)


def _pooled(work: Callable[[Any, Any], Any], chunks: Iterable[Any], jobs: int, state: Any,
            lost: Callable[[Any, Any], Any]) -> Iterator[Any]:
    from concurrent.futures.process import BrokenProcessPool

    pool = _pool(jobs, state)
    in_flight: deque = deque()
    chunks = iter(chunks)
    try:
        while True:
            while len(in_flight) <= 2 * jobs and (chunk := next(chunks, _END)) is not _END:
                in_flight.append((chunk, pool.submit(_work_in_worker, work, chunk)))
            if not in_flight:
                return
            chunk, future = in_flight.popleft()
            try:
                yield future.result()
                continue
            except BrokenProcessPool:
                pending = [chunk] + [waiting for waiting, _ in in_flight]
                in_flight.clear()
                pool.shutdown(wait=True, cancel_futures=True)
            pool = _pool(jobs, state)
            for chunk in pending:
                try:
                    yield pool.submit(_work_in_worker, work, chunk).result()
                except BrokenProcessPool:
                    pool.shutdown(wait=True)
                    yield lost(state, chunk)
                    pool = _pool(jobs, state)
    finally:
        # Stopping early (an error, the caller gave up) drops queued chunks.
        pool.shutdown(wait=True, cancel_futures=True)


_END = object()


def _pool(jobs: int, state: Any):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker,
                               initargs=(state,))


def chunked(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


# ---------------------------------------------------------------- admiss.check_many


def check_many(rubric, bundles: Iterable[Any], jobs: int | None = None, chain: str | None = None,
               chunk_size: int = 64) -> Iterator[Any]:
    """Check each bundle and yield its report, in input order, as soon as it is ready.

    A bundle is a decoded JSON object (a dict) or its JSON text (``str`` or ``bytes``,
    parsed by the worker). A bundle that is malformed yields its :class:`AdmissError`
    (a BundleError) in its place instead of stopping the run.

    With ``jobs`` > 1 the bundles are checked in a pool of that many worker processes, in
    chunks of ``chunk_size`` (so a report is yielded once its chunk is done); reports come
    back pickled and refer to this process's ``rubric``. Worker processes are spawned, so
    a script calling this needs the usual ``if __name__ == "__main__":`` guard.
    """
    if not jobs or jobs <= 1:
        return (_checked(rubric, bundle, chain) for bundle in bundles)
    results = in_order(_check_all, chunked(bundles, chunk_size), jobs, (rubric, chain), _check_each_alone)
    return (report for chunk in results for report in chunk)


def _check_each_alone(state: tuple[Any, str | None], bundles: list[Any]) -> list[Any]:
    """A chunk whose worker died even when it ran alone: each bundle checked in a worker of
    its own, so that only a bundle that kills its worker (a gate program can) is lost."""
    results = _pooled(_check_all, ([bundle] for bundle in bundles), 1, state, _worker_lost)
    return [report for chunk in results for report in chunk]


def _worker_lost(state: Any, bundles: list[Any]) -> list[AdmissError]:
    return [BundleError([Diagnostic("E181", "the worker process checking this bundle died",
                                    file="<bundle>", hint="a gate program may have killed it; "
                                    "the other bundles are still checked")]) for _ in bundles]


def _check_all(state: tuple[Any, str | None], bundles: list[Any]) -> list[Any]:
    rubric, chain = state
    return [_checked(rubric, bundle, chain) for bundle in bundles]


def _checked(rubric, bundle: Any, chain: str | None) -> Any:
    try:
        if isinstance(bundle, (str, bytes, bytearray)):
            bundle = parse_bundle_text(bundle, "<bundle>")
        return rubric.check(bundle, chain=chain)
    except AdmissError as error:
        return error


# ---------------------------------------------------------------- admiss check: one bundle


class CheckOptions(NamedTuple):
    rubric: Path | None
    fmt: str  # "text", "json" or "rich"
    chain: str | None = None
    config: Path | None = None
    jobs: int = 1
    fail_fast: bool = False
    offline: bool = False
    report: str = "lean"  # the JSON report's shape: "lean" or "full"
    trace: str | None = None  # --trace FORMAT: read every input as a trace in that format
    live: bool = False


# A unit is one bundle to check: (file path, line number, its JSON text as str or bytes),
# the line number 0 for a .json file (one bundle), or an AdmissError in place of a file
# that could not be read.
Unit = tuple
# An outcome is (what to show: bytes for stdout, a CheckReport to draw with rich, or None;
# an error message for stderr or None; the exit code; "pass", "fail" or "error").
Outcome = tuple


class CheckRun:
    """What checking a bundle needs: the options and the rubrics loaded so far. Pickles (to
    the workers) with the --rubric rubric; others are loaded again where needed."""

    def __init__(self, options: CheckOptions, many: bool, rubric=None):
        """``rubric`` (a loaded admiss.Rubric) takes the place of options.rubric."""
        self.options = options
        self.many = many
        self.rubrics: dict[Path, Any] = {}
        self.fixed_rubric = rubric if rubric is not None else self.rubric_at(options.rubric) if options.rubric else None
        if self.fixed_rubric is not None:
            # Before any bundle: a gate's missing provider stops the run here, once.
            self.fixed_rubric.prepare(options.chain, options.live)

    def __getstate__(self) -> dict:
        return {"options": self.options, "many": self.many, "fixed_rubric": self.fixed_rubric, "rubrics": {}}

    def rubric_at(self, path: Path):
        key = path.resolve()
        if key not in self.rubrics:
            self.rubrics[key] = load(path, self.options.config, self.options.offline)
        return self.rubrics[key]

    def close(self) -> None:
        for rubric in self.rubrics.values():
            rubric.close()

    def rubric_for(self, bundle: Any, path: str, name: str):
        if self.fixed_rubric is not None:
            return self.fixed_rubric
        if self.options.trace is not None or is_trace(bundle):
            raise input_error(name, "no rubric to check the trace against", hint="pass --rubric FILE", code="E002")
        # Check the bundle's shape first, so a bad "rubric" field is named as such.
        validate_bundle(bundle, name)
        if isinstance(bundle.get("rubric"), str):
            return self.rubric_at(rubric_path(path, bundle["rubric"], name))
        raise input_error(name, "no rubric to check against",
                          hint='pass --rubric FILE, or give the bundle a "rubric" field (a path relative to it)',
                          code="E002")

    def report_for(self, value: Any, path: str, name: str):
        """The report for one parsed JSON value from file ``path`` (``name`` is how reports
        and errors call it); AdmissError if it cannot be checked. The per-bundle seam."""
        return self.rubric_for(value, path, name).check(value, name, self.options.chain, self.options.trace,
                                                       self.options.live)

    def outcome(self, unit: Unit | AdmissError) -> Outcome:
        if isinstance(unit, AdmissError):  # the file itself could not be read
            return self.error_outcome(unit, unit.diagnostics[0].file or "")
        path, number, text = unit
        # A line of a .jsonl file is named path:line; its JSON errors point into the file.
        name = f"{path}:{number}" if number else path
        try:
            if number:
                text = _line_text(text, path, number)
            report = self.report_for(parse_bundle_text(text, path, number - 1 if number else 0), path, name)
        except AdmissError as error:
            return self.error_outcome(error, name)
        return self.shown(report), None, EXIT_PASS if report.verdict == "pass" else EXIT_FAIL, report.verdict

    def shown(self, report) -> Any:
        # One bundle prints one report as it is; several print JSON Lines, or text reports
        # under a "==> name <==" line each (the blank line between them is the writer's).
        fmt = self.options.fmt
        if fmt == "json":
            return report.to_json(self.options.report == "full", indent=not self.many)
        if fmt == "rich":
            return report
        text = f"==> {one_line(report.bundle_name)} <==\n{report.to_text()}" if self.many else report.to_text()
        # A lone surrogate (a "\ud800" escape in a bundle) is written as that escape.
        return text.encode("utf-8", "backslashreplace")

    def error_outcome(self, error: AdmissError, name: str) -> Outcome:
        shown = None
        if self.options.fmt == "json" and self.many:
            # Keep one output line per input line, so results stay aligned with the batch.
            shown = dumps_line({"bundle": name, "error": [d.to_dict() for d in error.diagnostics]})
        return shown, error.render(), EXIT_BAD_INPUT, "error"


def _line_text(raw: str | bytes, path: str, number: int) -> str:
    """A .jsonl line as text without its line end (so a JSON error at the end of a cut-off
    line is placed on that line), or BundleError B001 at the first byte that is not UTF-8."""
    if isinstance(raw, str):
        return raw.rstrip("\r\n")
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        shown = raw.decode("utf-8", "replace").rstrip("\r\n")
        column = len(raw[: exc.start].decode("utf-8", "replace")) + 1
        raise BundleError([Diagnostic("B001", f"invalid JSON: not UTF-8 text (byte 0x{raw[exc.start]:02x})",
                                      Span.point(number, column), file=path,
                                      hint="bundles are UTF-8 JSON; this line's other bundles are still checked")],
                          Source(path, "\n" * (number - 1) + shown)) from None


# ---------------------------------------------------------------- admiss check: reading the input


def units_of(paths: Iterable[Path]) -> Iterator[Unit | AdmissError]:
    """Each bundle of each file, read as a stream; a file that cannot be read, or a .jsonl
    file without a bundle, is an error in its place."""
    for path in paths:
        try:
            yield from _units_in(path)
        except AdmissError as error:
            yield error


def _units_in(path: Path) -> Iterator[Unit]:
    if str(path) == STDIN:  # JSON Lines as they arrive, each bundle named <stdin>:line
        with reading("<stdin>"):
            yield from _lines("<stdin>", sys.stdin.buffer)
        return
    if path.suffix != ".jsonl":
        yield str(path), 0, read_text(path)
        return
    name = str(path)
    with reading(path), path.open("rb") as lines:
        yield from _lines(name, lines)


def _lines(name: str, lines: Iterable[bytes]) -> Iterator[Unit]:
    found = False
    for number, line in enumerate(lines, start=1):
        if line.strip():
            found = True
            yield name, number, line
    if not found:
        raise no_bundles(name)


def no_bundles(name: str) -> AdmissError:
    return input_error(name, "no bundles: the file is empty or holds only blank lines",
                       hint="a .jsonl file holds one JSON bundle per line", code="E180")


# ---------------------------------------------------------------- admiss check: writing outcomes


class _Writer:
    """Writes outcomes in order: reports to ``out`` (bytes), errors to ``err`` (text), counts.

    With ``gap_first`` a text report is preceded by a blank line even when it is the first
    (a worker's chunk: the parent drops the gap of the very first report of the batch).
    """

    def __init__(self, run: CheckRun, out: BinaryIO, err, flush_each: bool = False, gap_first: bool = False):
        self.run = run
        self.out = out
        self.err = err
        self.flush_each = flush_each
        self.gap = run.options.fmt == "text"
        self.printed = 1 if gap_first else 0
        self.counts = {"pass": 0, "fail": 0, "error": 0}
        self._rich = None

    def rich_writer(self):
        if self._rich is None:
            from admiss.report.rich import ReportWriter

            self._rich = ReportWriter()
        return self._rich

    def write(self, outcome: Outcome) -> None:
        shown, error, code, verdict = outcome
        if error is not None:
            if self.err is sys.stderr:
                sys.stdout.flush()  # keep stdout and stderr in order on a terminal
            self.err.write(error + "\n")
        if shown is not None:
            if self.run.options.fmt == "rich":
                self.rich_writer().write(shown)
            else:
                if self.printed and self.gap:
                    self.out.write(b"\n")
                self.out.write(shown + b"\n")
                if self.flush_each:
                    self.out.flush()
            self.printed += 1
        self.counts[verdict] += 1

    @property
    def exit_code(self) -> int:
        counts = self.counts
        return EXIT_BAD_INPUT if counts["error"] else EXIT_FAIL if counts["fail"] else EXIT_PASS


def run_check(paths: list[Path], options: CheckOptions) -> int:
    """``admiss check``: every bundle in ``paths`` checked and reported; the exit code."""
    many = len(paths) > 1 or any(p.suffix == ".jsonl" or str(p) == STDIN for p in paths)
    try:
        run = CheckRun(options, many)
    except AdmissError as error:
        sys.stderr.write(error.render() + "\n")
        return EXIT_BAD_INPUT
    # The rubric and everything loaded so far live as long as the run: keep them out of
    # the collector's walks while reports are made in a tight loop.
    freeze_long_lived()
    progress = _progress_for(many, options)
    try:
        # Rich output is drawn by this process; text and JSON can be made by workers.
        if options.jobs > 1 and options.fmt != "rich" and all(_regular_file(p) for p in paths):
            return _run_in_workers(run, paths, progress)
        return _run_here(run, paths, progress)
    finally:
        sys.stdout.flush()
        if progress is not None:
            progress.stop()
        run.close()


def _run_here(run: CheckRun, paths: list[Path], progress) -> int:
    """Check every bundle in this process as it is read, writing each outcome at once."""
    if run.options.fmt == "rich" and hasattr(sys.stdout, "reconfigure"):
        # rich writes text: a lone surrogate (a "\ud800" escape in a bundle) is shown escaped.
        sys.stdout.reconfigure(errors="backslashreplace")
    # Input from a pipe may come slowly: then each report is flushed as soon as it is ready.
    writer = _Writer(run, sys.stdout.buffer, sys.stderr, flush_each=not all(_regular_file(p) for p in paths))
    unshown = 0
    for unit in units_of(paths):
        outcome = run.outcome(unit)
        writer.write(outcome)
        if run.options.fail_fast and outcome[2] == EXIT_BAD_INPUT:
            break
        unshown += 1
        if progress is not None and unshown >= PROGRESS_EVERY:
            unshown = 0
            progress.show(writer.counts)
    if progress is not None:
        progress.show(writer.counts)
    return writer.exit_code


def import_traces(rubric, paths: list[Path], trace_format: str | None) -> int:
    """``admiss import``: the explained bundle of every run of every trace in ``paths``; the
    exit code. A file of many runs (an eval set's cases, an Inspect log's samples) gives one
    bundle per run, in order, each naming its run (``trace.run``)."""
    from admiss.errors import TraceError
    from admiss.traces.build import located, located_in_lines
    from admiss.traces.mapping import explained_bundle
    from admiss.traces.read import read_traces

    many = len(paths) > 1 or any(p.suffix in (".jsonl", ".eval") for p in paths)
    exit_code = EXIT_PASS
    for unit in _trace_units(paths):
        if isinstance(unit, AdmissError):
            runs: list = [(None, unit)]
        else:
            name, value, text, where = unit
            locate = partial(located_in_lines, text=text, starts=where) if isinstance(where, list) else \
                partial(located, text=text, line_offset=where)
            runs = [(run, locate(read) if isinstance(read, TraceError) else read)
                    for run, read in read_traces(value, name, trace_format)]
        for run, read in runs:
            if isinstance(read, AdmissError):
                sys.stdout.flush()
                sys.stderr.write(read.render() + "\n")
                exit_code = EXIT_BAD_INPUT
                continue
            explained = explained_bundle(rubric.compiled.mapping, read)
            if len(runs) > 1 or "#" in run:
                explained["trace"]["run"] = run
            sys.stdout.buffer.write((dumps_line if many or len(runs) > 1 else dumps_indented)(explained) + b"\n")
    return exit_code


def _trace_units(paths: list[Path]) -> Iterator[tuple[str, Any, str, int | list[int]] | AdmissError]:
    """Each trace file, .jsonl line, .eval sample and event log (a .jsonl file that is one
    run): its name, JSON value, text, and where the text stands in the file (the line it
    starts after; for an event log, the line each of its values starts at), to locate
    errors; an error in its place."""
    from admiss.traces.inspect_eval import eval_file_samples

    for path in paths:
        try:
            if path.suffix == ".eval":
                yield from eval_file_samples(path)
                continue
            if path.suffix == ".jsonl" and _is_event_log(path):
                yield _event_log(path)
                continue
        except AdmissError as error:
            yield error
            continue
        for unit in units_of([path]):
            if isinstance(unit, AdmissError):
                yield unit
                continue
            path_name, number, text = unit
            name = f"{path_name}:{number}" if number else path_name
            if number:
                text = _line_text(text, path_name, number)
            try:
                yield name, parse_bundle_text(text, path_name, number - 1 if number else 0), text, \
                    number - 1 if number else 0
            except AdmissError as error:
                yield error


def _is_event_log(path: Path) -> bool:
    """Whether the .jsonl file at ``path`` is one run's event log (a Claude Code session),
    by its first non-blank line."""
    from admiss.traces.read import is_event_log

    with reading(path), path.open("rb") as lines:
        for line in lines:
            if line.strip():
                try:
                    return is_event_log(parse_bundle_text(_line_text(line, str(path), 1), str(path)))
                except AdmissError:
                    return False
    return False


def _event_log(path: Path) -> tuple[str, list, str, list[int]]:
    """An event log's lines' values, its text and the line each value starts at."""
    name, text = str(path), read_text(path)
    values, starts = [], []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            values.append(parse_bundle_text(line, name, number - 1))
            starts.append(number)
    return name, values, text, starts


def _regular_file(path: Path) -> bool:
    if str(path) == STDIN:
        return False
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return True  # reading it will say what is wrong


def _progress_for(many: bool, options: CheckOptions):
    """A progress bar on stderr for a batch, when stderr is a terminal (and the reports are not drawn there)."""
    if not many or options.fmt == "rich" or not sys.stderr.isatty():
        return None
    from admiss.report.rich import BatchProgress

    return BatchProgress()


# ---------------------------------------------------------------- admiss check --jobs N: pieces of files

# A piece is a byte range of a .jsonl file that starts at a line start, with the number of
# its first line; a .json file (or a file that cannot be read) is one piece of its own (end -1). Pieces are at least this
# large, and there are about this many per worker, so a slow worker does not hold up the end.
MIN_PIECE_BYTES = 32 * 1024
PIECES_PER_JOB = 4
_BLOCK = 1 << 20


class Piece(NamedTuple):
    index: int
    file: int  # which of the paths it belongs to
    path: str
    start: int
    end: int
    first_line: int


def cut_pieces(paths: list[Path], jobs: int, min_bytes: int = MIN_PIECE_BYTES) -> list[Piece]:
    """Pieces of ``paths`` in input order, each .jsonl file cut at line boundaries."""
    sizes = [_size(p) if p.suffix == ".jsonl" else 0 for p in paths]
    piece_bytes = max(min_bytes, sum(sizes) // (jobs * PIECES_PER_JOB) + 1)
    pieces: list[Piece] = []
    for file, (path, size) in enumerate(zip(paths, sizes)):
        ranges = _ranges(path, size, piece_bytes) if path.suffix == ".jsonl" and size >= 0 else [(0, -1, 0)]
        pieces.extend([Piece(len(pieces) + i, file, str(path), *r) for i, r in enumerate(ranges)])
    return pieces


def _size(path: Path) -> int:
    """The file's size, or -1 when it cannot be read (a worker then reports why in its place)."""
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _ranges(path: Path, size: int, piece_bytes: int) -> list[tuple[int, int, int]]:
    try:
        return _line_ranges(path, size, piece_bytes)
    except AdmissError:  # unreadable: one piece, whose worker reports the error in its place
        return [(0, -1, 0)]


def _line_ranges(path: Path, size: int, piece_bytes: int) -> list[tuple[int, int, int]]:
    """(start, end, first line number) of each piece of ``path``: one pass counting line
    ends in large blocks (at memory speed), cutting after the first line end past each
    ``piece_bytes``."""
    ranges = []
    start, first_line, lines, position, target = 0, 1, 0, 0, piece_bytes
    with reading(path), path.open("rb") as data:
        while block := data.read(_BLOCK):
            while target < position + len(block):
                cut = block.find(b"\n", max(0, target - position))
                if cut < 0:
                    break
                boundary = position + cut + 1
                if boundary < size:
                    ranges.append((start, boundary, first_line))
                    start, first_line = boundary, lines + block.count(b"\n", 0, cut + 1) + 1
                target = boundary + piece_bytes
            lines += block.count(b"\n")
            position += len(block)
    ranges.append((start, size, first_line))
    return ranges


# What a worker publishes about the piece it is checking, in shared memory (one slot of
# _FIELDS integers per worker): the line it is on (its offset), and the last point its chunk files were
# flushed to, with the counts up to there. A worker that dies is resumed from that point.
(_AT_OFFSET, _IN_BUNDLE, _OFFSET, _LINE, _OUT_BYTES, _ERR_BYTES, _PASS, _FAIL, _ERROR, _PRINTED, _BUNDLES,
 _STOPPED) = range(12)
_FIELDS = 12
# Chunk files are flushed (and the point of resumption moved) after this many bundles.
COMMIT_EVERY = 64


class _Slot:
    __slots__ = ("shared", "base")

    def __init__(self, shared, base: int):
        self.shared = shared
        self.base = base

    def get(self, field: int) -> int:
        return self.shared[self.base + field]

    def put(self, field: int, value: int) -> None:
        self.shared[self.base + field] = value

    def commit(self, offset: int, line: int, out: BinaryIO, err, writer: "_Writer", bundles: int,
               stopped: bool = False) -> None:
        out.flush()
        err.flush()
        counts = writer.counts
        for field, value in ((_OFFSET, offset), (_LINE, line), (_OUT_BYTES, out.tell()), (_ERR_BYTES, err.tell()),
                             (_PASS, counts["pass"]), (_FAIL, counts["fail"]), (_ERROR, counts["error"]),
                             (_PRINTED, writer.printed), (_BUNDLES, bundles), (_STOPPED, int(stopped))):
            self.put(field, value)


class Task(NamedTuple):
    """A piece to check, where its chunk files are, and where to resume after a worker died."""

    piece: Piece
    out_path: str
    err_path: str
    start: int  # where to (re)start reading, and the number of the line before it
    line_before: int
    # The lines whose worker died, by offset: the signal (or minus the exit status). Each
    # is reported as an error instead of being checked again.
    died: dict[int, int] | None = None


def _check_task(run: CheckRun, task: Task, slot: _Slot) -> None:
    """Check a task's piece, appending the outputs to its chunk files, committing as it goes."""
    piece = task.piece
    with open(task.out_path, "ab") as out, open(task.err_path, "a", encoding="utf-8", errors="backslashreplace") as err:
        writer = _Writer(run, out, err, gap_first=True)
        writer.counts = {"pass": slot.get(_PASS), "fail": slot.get(_FAIL), "error": slot.get(_ERROR)}
        writer.printed = max(1, slot.get(_PRINTED))
        bundles = slot.get(_BUNDLES)
        if piece.end < 0:  # a .json file: one bundle
            slot.put(_AT_OFFSET, 0)
            slot.put(_IN_BUNDLE, 1)
            outcome = (run.error_outcome(_worker_died(piece.path, 0, task.died[0]), piece.path) if task.died
                       else run.outcome(next(units_of([Path(piece.path)]))))
            writer.write(outcome)
            slot.put(_IN_BUNDLE, 0)
            slot.commit(0, 0, out, err, writer, 1, run.options.fail_fast and outcome[2] == EXIT_BAD_INPUT)
            return
        offset, number, since, stopped = task.start, task.line_before, 0, False
        died = task.died or {}
        # Gate chains are slow and a gate may kill its worker: then flush after each bundle,
        # so a resumed piece checks nothing twice.
        every = 1 if run.fixed_rubric is None or run.fixed_rubric.ir.chains else COMMIT_EVERY
        try:
            data = _opened(piece.path)
        except AdmissError as error:  # gone since it was cut: an error in its place
            writer.write(run.error_outcome(error, piece.path))
            slot.commit(offset, number, out, err, writer, bundles + 1, run.options.fail_fast)
            return
        with data:
            data.seek(offset)
            for raw in data:
                if offset >= piece.end:
                    break
                here, number, offset = offset, number + 1, offset + len(raw)
                if not raw.strip():
                    continue
                slot.put(_AT_OFFSET, here)
                slot.put(_IN_BUNDLE, 1)
                if here in died:
                    outcome = run.error_outcome(_worker_died(piece.path, number, died[here]), f"{piece.path}:{number}")
                else:
                    outcome = run.outcome((piece.path, number, raw))
                writer.write(outcome)
                slot.put(_IN_BUNDLE, 0)
                bundles += 1
                since += 1
                if run.options.fail_fast and outcome[2] == EXIT_BAD_INPUT:
                    stopped = True
                    break
                if since >= every:
                    since = 0
                    slot.commit(offset, number, out, err, writer, bundles)
        slot.commit(offset, number, out, err, writer, bundles, stopped)


def _opened(path: str) -> BinaryIO:
    with reading(path):
        return open(path, "rb")


def _worker_died(path: str, number: int, signum: int) -> AdmissError:
    try:
        how = f"killed by {signal.Signals(signum).name}" if signum > 0 else f"exited with status {-signum}"
    except ValueError:
        how = f"killed by signal {signum}"
    return BundleError([Diagnostic("E181", f"the worker process checking this bundle died ({how})",
                                   Span.point(number, 1), file=path,
                                   hint="a gate program may have killed it; the other bundles are still checked")])


def _worker_main(run: CheckRun, conn, shared, base: int) -> None:
    """A worker: check each task sent until told to stop (None) or the parent is gone."""
    # Ctrl-C reaches the whole process group: the parent decides, and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    freeze_long_lived()
    slot = _Slot(shared, base)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        _check_task(run, task, slot)
        conn.send(task.piece.index)


def _die_with_parent() -> None:
    """Ask Linux to send this worker SIGTERM when its parent dies, however it dies."""
    parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the closed pipe still ends the worker
        pass
    if os.getppid() != parent:
        os._exit(1)


class _Stopped(BaseException):
    """SIGTERM reached the parent: stop every worker, then exit as that signal would."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Stopped()


class _Workers:
    """``jobs`` worker processes, each with a pipe for tasks and a slot of shared memory."""

    def __init__(self, run: CheckRun, jobs: int):
        import multiprocessing

        self.context = multiprocessing.get_context("spawn")
        self.run = run
        self.shared = self.context.RawArray("q", jobs * _FIELDS)
        self.processes: list[Any] = [None] * jobs
        self.conns: list[Any] = [None] * jobs
        self.tasks: list[Task | None] = [None] * jobs
        for worker in range(jobs):
            self.start(worker)

    def start(self, worker: int) -> None:
        ours, theirs = self.context.Pipe()
        process = self.context.Process(target=_worker_main, args=(self.run, theirs, self.shared, worker * _FIELDS),
                                       daemon=True)
        process.start()
        theirs.close()
        self.processes[worker], self.conns[worker], self.tasks[worker] = process, ours, None

    def slot(self, worker: int) -> _Slot:
        return _Slot(self.shared, worker * _FIELDS)

    def give(self, worker: int, task: Task, counts: tuple[int, ...] = (0,) * 5) -> None:
        """Send a task, with the slot set to its starting point (so a worker that dies
        before its first commit is resumed from there)."""
        slot = self.slot(worker)
        for field, value in zip((_OFFSET, _LINE, _OUT_BYTES, _ERR_BYTES, _PASS, _FAIL, _ERROR, _PRINTED, _BUNDLES,
                                 _IN_BUNDLE, _STOPPED),
                                (task.start, task.line_before, os.path.getsize(task.out_path),
                                 os.path.getsize(task.err_path), *counts, 0, 0)):
            slot.put(field, value)
        self.tasks[worker] = task
        self.conns[worker].send(task)

    def stop(self) -> None:
        for worker, process in enumerate(self.processes):
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()


def _chunk_paths(folder: str, piece: Piece) -> tuple[str, str]:
    return os.path.join(folder, f"{piece.index}.out"), os.path.join(folder, f"{piece.index}.err")


class _Done(NamedTuple):
    counts: dict[str, int]
    printed: int
    bundles: int
    stopped: bool


def _run_in_workers(run: CheckRun, paths: list[Path], progress) -> int:
    """Check ``paths`` in run.options.jobs worker processes, each piece into chunk files of
    its own; copy the chunks to stdout and stderr in input order."""
    pieces = cut_pieces(paths, run.options.jobs)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        with tempfile.TemporaryDirectory(prefix="admiss-chunks-") as folder:
            workers = _Workers(run, min(run.options.jobs, len(pieces)))
            try:
                return _Stitcher(run, paths, pieces, folder, workers, progress).stitch_all()
            finally:  # before the folder goes: no worker may still write into it
                workers.stop()
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
    """Hands pieces to idle workers, resumes a piece whose worker died, and copies finished
    chunks to stdout and stderr in input order."""

    def __init__(self, run: CheckRun, paths: list[Path], pieces: list[Piece], folder: str, workers: _Workers,
                 progress):
        self.run, self.paths, self.pieces, self.workers, self.progress = run, paths, pieces, workers, progress
        self.queue: deque[Task] = deque()
        for piece in pieces:
            out_path, err_path = _chunk_paths(folder, piece)
            open(out_path, "wb").close()
            open(err_path, "wb").close()
            self.queue.append(Task(piece, out_path, err_path, piece.start, piece.first_line - 1))
        self.folder = folder
        self.done: dict[int, _Done] = {}
        self.resumed_counts: dict[int, tuple[int, ...]] = {}
        self.deaths_without_progress: dict[int, int] = {}
        self.printed = 0
        self.counts = {"pass": 0, "fail": 0, "error": 0}
        self.bundles_in_file = [0] * len(paths)

    def stitch_all(self) -> int:
        """The exit code, once every piece is copied out (or --fail-fast stopped at one)."""
        from multiprocessing.connection import wait

        workers = self.workers
        for index in range(len(self.pieces)):
            while index not in self.done:
                self.hand_out()
                busy = [w for w, task in enumerate(workers.tasks) if task is not None]
                ready = wait([workers.conns[w] for w in busy] + [workers.processes[w].sentinel for w in busy], 0.5)
                for worker in busy:
                    if workers.conns[worker] in ready or workers.processes[worker].sentinel in ready:
                        self.collect(worker)
                self.show_progress()
            if self.stitch(self.pieces[index]):
                return EXIT_BAD_INPUT
        return EXIT_BAD_INPUT if self.counts["error"] else EXIT_FAIL if self.counts["fail"] else EXIT_PASS

    def hand_out(self) -> None:
        workers = self.workers
        for worker, task in enumerate(workers.tasks):
            if task is None and self.queue:
                if not workers.processes[worker].is_alive():
                    workers.start(worker)
                task = self.queue.popleft()
                workers.give(worker, task, self.resumed_counts.pop(task.piece.index, (0,) * 5))

    def collect(self, worker: int) -> None:
        workers = self.workers
        conn, task = workers.conns[worker], workers.tasks[worker]
        try:
            finished = conn.poll() and conn.recv() == task.piece.index
        except (EOFError, OSError):
            finished = False
        slot = workers.slot(worker)
        if finished:
            self.done[task.piece.index] = _Done(
                {"pass": slot.get(_PASS), "fail": slot.get(_FAIL), "error": slot.get(_ERROR)},
                slot.get(_PRINTED), slot.get(_BUNDLES), bool(slot.get(_STOPPED)))
            workers.tasks[worker] = None
            return
        process = workers.processes[worker]
        process.join(5)
        if process.is_alive():  # the pipe broke but the process lives on: end it
            process.kill()
            process.join()
        # A signal's number, or minus the exit status.
        self.resume(task, slot, -(process.exitcode or 0))
        workers.start(worker)

    def resume(self, task: Task, slot: _Slot, signum: int) -> None:
        """Requeue what the dead worker had not flushed, with the line it died on as an error."""
        for path, field in ((task.out_path, _OUT_BYTES), (task.err_path, _ERR_BYTES)):
            os.truncate(path, slot.get(field))
        died = dict(task.died or {})
        if slot.get(_IN_BUNDLE):
            died[slot.get(_AT_OFFSET)] = signum
        index = task.piece.index
        if not slot.get(_IN_BUNDLE):
            self.deaths_without_progress[index] = self.deaths_without_progress.get(index, 0) + 1
            if self.deaths_without_progress[index] > 2:
                raise input_error(task.piece.path, "worker processes keep dying before checking a bundle",
                                  hint="run with --jobs 1 to see why", code="E182")
        self.resumed_counts[index] = tuple(slot.get(f) for f in (_PASS, _FAIL, _ERROR, _PRINTED, _BUNDLES))
        self.queue.appendleft(task._replace(start=slot.get(_OFFSET), line_before=slot.get(_LINE), died=died))

    def stitch(self, piece: Piece) -> bool:
        """Copy a finished piece's chunks out; whether the run stops there (--fail-fast)."""
        done = self.done.pop(piece.index)
        out_path, err_path = _chunk_paths(self.folder, piece)
        stdout = sys.stdout.buffer
        with open(out_path, "rb") as chunk:
            # Each chunk's text reports all begin with a blank line; the batch's first does not.
            if self.printed == 0 and done.printed > 1 and self.run.options.fmt == "text":
                chunk.seek(1)
            shutil.copyfileobj(chunk, stdout, _BLOCK)
        stdout.flush()
        with open(err_path, "r", encoding="utf-8", errors="replace") as chunk:
            shutil.copyfileobj(chunk, sys.stderr, _BLOCK)
        os.unlink(out_path)
        os.unlink(err_path)
        self.printed += done.printed - 1
        for verdict, count in done.counts.items():
            self.counts[verdict] += count
        self.bundles_in_file[piece.file] += done.bundles
        if self._last_of_file(piece) and self.bundles_in_file[piece.file] == 0 and piece.end >= 0:
            writer = _Writer(self.run, stdout, sys.stderr)
            writer.printed = self.printed
            writer.write(self.run.error_outcome(no_bundles(piece.path), piece.path))
            self.printed = writer.printed
            self.counts["error"] += 1
            return self.run.options.fail_fast
        return done.stopped

    def _last_of_file(self, piece: Piece) -> bool:
        return piece.index + 1 == len(self.pieces) or self.pieces[piece.index + 1].file != piece.file

    def show_progress(self) -> None:
        if self.progress is None:
            return
        counts = dict(self.counts)
        for worker, task in enumerate(self.workers.tasks):
            if task is not None:
                slot = self.workers.slot(worker)
                for verdict, field in (("pass", _PASS), ("fail", _FAIL), ("error", _ERROR)):
                    counts[verdict] += slot.get(field)
        self.progress.show(counts)
