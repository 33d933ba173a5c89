"""Checking many bundles: streamed from files or any iterable, in this process or in a pool.

Bundle files are read as a stream (a .jsonl file line by line), and reports are written in
input order as they are ready, so memory stays flat in the input size. With jobs > 1,
chunks of input go to a pool of worker processes that parse, check and render them, with
at most a few chunks in flight.

Workers are started with the "spawn" method and are handed the compiled rubric pickled
(by its IR), so each worker builds its own gate chains, error budgets, event loop and
provider clients: an error budget counts the errors one worker has seen, not the batch's.
"""

from __future__ import annotations

import json
import stat
import sys
from collections import deque
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from admiss.errors import AdmissError

EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2
# The bundle path that means standard input (read as JSON Lines).
STDIN = "-"
# Bundles per chunk sent to a worker: enough to amortise the pickling round trip.
CHUNK_SIZE = 256
# Progress is redrawn after this many bundles, so drawing never costs more than checking.
PROGRESS_EVERY = 500

# ---------------------------------------------------------------- ordered work, here or in a pool

_worker_state: Any = None  # what a worker process was handed, unpickled once at its start


def _start_worker(state: Any) -> None:
    global _worker_state
    _worker_state = state


def _work_in_worker(work: Callable[[Any, Any], Any], chunk: Any) -> Any:
    return work(_worker_state, chunk)


def in_order(work: Callable[[Any, Any], Any], chunks: Iterable[Any], jobs: int, state: Any) -> Iterator[Any]:
    """``work(state, chunk)`` for each chunk, in input order.

    With jobs > 1 each worker process of a pool holds its own unpickled copy of ``state``,
    and at most 2 × jobs chunks are in flight, so a long input is never read ahead whole.
    """
    if jobs <= 1:
        return map(partial(work, state), chunks)
    return _pooled(work, chunks, jobs, state)


def _pooled(work: Callable[[Any, Any], Any], chunks: Iterable[Any], jobs: int, state: Any) -> Iterator[Any]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start_worker, initargs=(state,))
    in_flight: deque = deque()
    try:
        for chunk in chunks:
            in_flight.append(pool.submit(_work_in_worker, work, chunk))
            if len(in_flight) > 2 * jobs:
                yield in_flight.popleft().result()
        while in_flight:
            yield in_flight.popleft().result()
    finally:
        # Stopping early (--fail-fast, an error, the caller gave up) drops queued chunks.
        pool.shutdown(wait=True, cancel_futures=True)


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
    results = in_order(_check_all, chunked(bundles, chunk_size), jobs, (rubric, chain))
    return (report for chunk in results for report in chunk)


def _check_all(state: tuple[Any, str | None], bundles: list[Any]) -> list[Any]:
    rubric, chain = state
    return [_checked(rubric, bundle, chain) for bundle in bundles]


def _checked(rubric, bundle: Any, chain: str | None) -> Any:
    from admiss.bundle import parse_bundle_text

    try:
        if isinstance(bundle, (str, bytes, bytearray)):
            bundle = parse_bundle_text(bundle, "<bundle>")
        return rubric.check(bundle, chain=chain)
    except AdmissError as error:
        return error


# ---------------------------------------------------------------- admiss check


class CheckOptions(NamedTuple):
    rubric: Path | None
    fmt: str  # "text", "json" or "rich"
    chain: str | None = None
    config: Path | None = None
    jobs: int = 1
    fail_fast: bool = False


# What crosses between processes is kept to plain tuples of strings and numbers: pickling
# them costs a tenth of pickling named tuples or Path objects, and a batch sends millions.
#
# A unit is one bundle to check: (file path, line number, JSON text), the line number 0 for
# a .json file (one bundle), or an AdmissError in place of a file that could not be read.
Unit = tuple
# An outcome is (what to show: text for stdout, a CheckReport to draw with rich, or None;
# an error message for stderr or None; the exit code; "pass", "fail" or "error").
Outcome = tuple


class CheckRun:
    """What checking a bundle needs: the options and the rubrics loaded so far. Pickles (to
    the workers of a pool) with the --rubric rubric; others are loaded again where needed."""

    def __init__(self, options: CheckOptions, many: bool):
        self.options = options
        self.many = many
        self.rubrics: dict[Path, Any] = {}
        self.fixed_rubric = self.rubric_at(options.rubric) if options.rubric else None

    def __getstate__(self) -> dict:
        return {"options": self.options, "many": self.many, "fixed_rubric": self.fixed_rubric, "rubrics": {}}

    def rubric_at(self, path: Path):
        from admiss.api import load

        key = path.resolve()
        if key not in self.rubrics:
            self.rubrics[key] = load(path, self.options.config)
        return self.rubrics[key]

    def close(self) -> None:
        for rubric in self.rubrics.values():
            rubric.close()

    def rubric_for(self, bundle: Any, path: str, name: str):
        from admiss.bundle import rubric_path, validate_bundle
        from admiss.errors import input_error

        if self.fixed_rubric is not None:
            return self.fixed_rubric
        # Check the bundle's shape first, so a bad "rubric" field is named as such.
        validate_bundle(bundle, name)
        if isinstance(bundle.get("rubric"), str):
            return self.rubric_at(rubric_path(path, bundle["rubric"], name))
        raise input_error(name, "no rubric to check against",
                          hint='pass --rubric FILE, or give the bundle a "rubric" field (a path relative to it)',
                          code="E002")

    def outcome(self, unit: Unit | AdmissError) -> Outcome:
        from admiss.bundle import parse_bundle_text

        if isinstance(unit, AdmissError):  # the file itself could not be read
            return self.error_outcome(unit, unit.diagnostics[0].file or "")
        path, number, text = unit
        # A line of a .jsonl file is named path:line; its JSON errors point into the file.
        name = f"{path}:{number}" if number else path
        try:
            bundle = parse_bundle_text(text, path, number - 1 if number else 0)
            report = self.rubric_for(bundle, path, name).check(bundle, name, self.options.chain)
        except AdmissError as error:
            return self.error_outcome(error, name)
        return self.shown(report), None, EXIT_PASS if report.verdict == "pass" else EXIT_FAIL, report.verdict

    def shown(self, report) -> Any:
        # One bundle prints one report as it is; several print JSON Lines, or text reports
        # under a "==> name <==" line each (the blank line between them is the writer's).
        fmt = self.options.fmt
        if fmt == "json":
            from admiss.report.json import report_json

            return report_json(report) if self.many else json.dumps(report.to_dict(), indent=2, ensure_ascii=False)
        if fmt == "rich":
            return report
        return f"==> {report.bundle_name} <==\n{report.to_text()}" if self.many else report.to_text()

    def error_outcome(self, error: AdmissError, name: str) -> Outcome:
        shown = None
        if self.options.fmt == "json" and self.many:
            # Keep one output line per input line, so results stay aligned with the batch.
            shown = json.dumps({"bundle": name, "error": [d.to_dict() for d in error.diagnostics]},
                               ensure_ascii=False)
        return shown, error.render(), EXIT_BAD_INPUT, "error"


def _check_units(run: CheckRun, units: list[Unit | AdmissError]) -> list[Outcome]:
    return [run.outcome(unit) for unit in units]


def units_of(paths: Iterable[Path]) -> Iterator[Unit | AdmissError]:
    """Each bundle of each file, read as a stream; a file that cannot be read is an error in its place."""
    for path in paths:
        try:
            yield from _units_in(path)
        except AdmissError as error:
            yield error


def _units_in(path: Path) -> Iterator[Unit]:
    from admiss.api import read_text
    from admiss.files import reading

    if str(path) == STDIN:  # JSON Lines as they arrive, each bundle named <stdin>:line
        with reading("<stdin>"):
            yield from _lines("<stdin>", sys.stdin)
        return
    if path.suffix != ".jsonl":
        yield str(path), 0, read_text(path)
        return
    name = str(path)
    with reading(path), path.open(encoding="utf-8") as lines:
        yield from _lines(name, lines)


def _lines(name: str, lines: Iterable[str]) -> Iterator[Unit]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield name, number, line


class _Writer:
    """Writes outcomes in order: reports to stdout, errors to stderr, the counts to a progress bar."""

    def __init__(self, run: CheckRun, progress, flush_each: bool):
        self.run = run
        self.progress = progress
        self.flush_each = flush_each
        self.printed = 0
        self.exit_code = EXIT_PASS
        self.counts = {"pass": 0, "fail": 0, "error": 0}
        self.unshown = 0
        self._rich = None

    def rich_writer(self):
        if self._rich is None:
            from admiss.report.rich import ReportWriter

            self._rich = ReportWriter()
        return self._rich

    def write(self, outcome: Outcome) -> None:
        shown, error, code, verdict = outcome
        if error is not None:
            sys.stdout.flush()  # keep stdout and stderr in order on a terminal
            sys.stderr.write(error + "\n")
        if shown is not None:
            if self.run.options.fmt == "rich":
                self.rich_writer().write(shown)
            else:
                gap = "\n" if self.printed and self.run.options.fmt == "text" else ""
                sys.stdout.write(f"{gap}{shown}\n")
                if self.flush_each:
                    sys.stdout.flush()
            self.printed += 1
        self.exit_code = max(self.exit_code, code)
        self.counts[verdict] += 1
        self.unshown += 1
        if self.progress is not None and self.unshown >= PROGRESS_EVERY:
            self.show_progress()

    def show_progress(self) -> None:
        self.unshown = 0
        if self.progress is not None:
            self.progress.show(self.counts)


def run_check(paths: list[Path], options: CheckOptions) -> int:
    """``admiss check``: every bundle in ``paths`` checked and reported; the exit code."""
    many = len(paths) > 1 or any(p.suffix == ".jsonl" or str(p) == STDIN for p in paths)
    try:
        run = CheckRun(options, many)
    except AdmissError as error:
        sys.stderr.write(error.render() + "\n")
        return EXIT_BAD_INPUT
    # Rich output is drawn by this process; text and JSON are rendered by the workers.
    jobs = 1 if options.fmt == "rich" else max(1, options.jobs)
    # Without a pool, a unit is checked as soon as it is read, so a slow producer (a pipe)
    # sees each report as its bundle arrives.
    chunks = chunked(units_of(paths), CHUNK_SIZE if jobs > 1 else 1)
    progress = _progress_for(many, options)
    # Input from a pipe may come slowly: then each report is flushed as soon as it is ready.
    writer = _Writer(run, progress, flush_each=not all(_regular_file(p) for p in paths))
    try:
        for outcomes in in_order(_check_units, chunks, jobs, run):
            for outcome in outcomes:
                writer.write(outcome)
                if options.fail_fast and outcome[2] == EXIT_BAD_INPUT:
                    return EXIT_BAD_INPUT
        return writer.exit_code
    finally:
        sys.stdout.flush()
        writer.show_progress()
        if progress is not None:
            progress.stop()
        run.close()


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
