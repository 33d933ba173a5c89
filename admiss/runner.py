"""Checking many bundles: ``admiss check`` over files, and ``admiss.check_many`` over any iterable.

``admiss check`` reads bundle files as a stream (admiss/units.py) and writes reports in
input order as they are ready, so memory stays flat in the input size; one bundle's
outcome is admiss/checkrun.py's. With ``--jobs N`` over regular files the files are cut
into pieces (admiss/pieces.py) checked by worker processes (admiss/workers.py) into chunk
files copied out in input order (admiss/stitch.py). Inputs that cannot be cut (stdin,
pipes, FIFOs) are checked in this process as they arrive.
"""

from __future__ import annotations

import pickle
import stat
import sys
from collections import deque
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from admiss.bundle import parse_bundle_text
from admiss.checkrun import EXIT_BAD_INPUT, CheckOptions, CheckRun, Writer
from admiss.collector import collector_paused, freeze_long_lived
from admiss.errors import AdmissError, BundleError, Diagnostic
from admiss.trace_import import is_whole_run_file, trace_units
from admiss.units import STDIN, stdin, units_of

__all__ = ["CheckOptions", "check_many", "run_check"]

# Progress is redrawn after this many bundles, so drawing never costs more than checking.
PROGRESS_EVERY = 500

# ---------------------------------------------------------------- ordered work, here or in a pool

_worker_state: Any = None  # what a worker process was handed, unpickled once at its start


def _start_worker(state: Any) -> None:
    global _worker_state
    _worker_state = state
    freeze_long_lived()  # a worker is admiss's own process: nothing of a caller's is frozen


def _work_in_worker(work: Callable[[Any, Any], Any], chunk: Any) -> bytes:
    """The chunk's results, pickled here, so that the caller unpickles them with the
    collector paused (_unpickled)."""
    return pickle.dumps(work(_worker_state, chunk), pickle.HIGHEST_PROTOCOL)


def _unpickled(results: bytes) -> Any:
    # Unpickling a chunk of reports makes many containers at once; with the collector on,
    # its full collections walk everything the caller holds each time: 10k small reports
    # unpickled in 0.64 CPU-s with it on, 0.15 s paused (more than checking them, 0.51 s).
    with collector_paused():
        return pickle.loads(results)


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
                yield _unpickled(future.result())
                continue
            except BrokenProcessPool:
                pending = [chunk] + [waiting for waiting, _ in in_flight]
                in_flight.clear()
                pool.shutdown(wait=True, cancel_futures=True)
            pool = _pool(jobs, state)
            for chunk in pending:
                try:
                    yield _unpickled(pool.submit(_work_in_worker, work, chunk).result())
                except BrokenProcessPool:
                    pool.shutdown(wait=True)
                    yield lost(state, chunk)
                    pool = _pool(jobs, state)
    finally:
        # Stopping early (an error, the caller gave up) drops queued chunks.
        pool.shutdown(wait=True, cancel_futures=True)


_END = object()


def _pool(jobs: int, state: Any):
    from concurrent.futures import ProcessPoolExecutor

    from admiss.workerstart import worker_context

    return ProcessPoolExecutor(jobs, mp_context=worker_context(), initializer=_start_worker,
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
    back pickled and refer to this process's ``rubric``. Workers are forked from
    multiprocessing's fork server (admiss/workerstart.py; never from this process, which
    may run threads), which imports a script's main module in each, so a script calling
    this needs the usual ``if __name__ == "__main__":`` guard.
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


def run_check(paths: list[Path], options: CheckOptions) -> int:
    """``admiss check``: every bundle in ``paths`` checked and reported; the exit code."""
    if options.jobs <= 1:
        return _exit_code(paths, options, False)
    from admiss.workerstart import stop_worker_server, worker_server  # start-up time: only --jobs needs them

    if not _in_workers(paths, options):
        stop_worker_server()  # the command line may have started it for --jobs: it is not needed
        return _exit_code(paths, options, False)
    with worker_server():  # first (if the command line did not): it starts up while the rubric loads here
        return _exit_code(paths, options, True)


def _exit_code(paths: list[Path], options: CheckOptions, in_workers: bool) -> int:
    many = len(paths) > 1 or any(p.suffix in (".jsonl", ".eval") or str(p) == STDIN for p in paths)
    try:
        run = CheckRun(options, many)
    except AdmissError as error:
        sys.stderr.write(error.render() + "\n")
        return EXIT_BAD_INPUT
    if [str(p) for p in paths] == [STDIN]:
        # One document on stdin reports as one bundle file would; JSON Lines as a .jsonl.
        run.many = not stdin().is_one_document()
    # The rubric and everything loaded so far live as long as the run: keep them out of
    # the collector's walks while reports are made in a tight loop.
    freeze_long_lived()
    progress = _progress_for(many, options)
    try:
        if in_workers:
            from admiss.stitch import run_in_workers

            return run_in_workers(run, paths, progress)
        return _run_here(run, paths, progress)
    finally:
        sys.stdout.flush()
        if progress is not None:
            progress.stop()
        run.close()


def _in_workers(paths: list[Path], options: CheckOptions) -> bool:
    """Whether the bundles are checked by --jobs workers. Rich output is drawn by this
    process; text and JSON can be made by workers. Whole-run documents (junit, markdown) are
    gathered here too, and a file read whole (an .eval zip, an event log) cannot be cut into
    pieces, nor can stdin, a pipe or a FIFO."""
    return options.jobs > 1 and options.fmt in ("text", "json") and all(_regular_file(p) for p in paths) \
        and not any(is_whole_run_file(p) for p in paths)


def _run_here(run: CheckRun, paths: list[Path], progress) -> int:
    """Check every bundle in this process as it is read, writing each outcome at once."""
    if run.options.fmt == "rich" and hasattr(sys.stdout, "reconfigure"):
        # rich writes text: a lone surrogate (a "\ud800" escape in a bundle) is shown escaped.
        sys.stdout.reconfigure(errors="backslashreplace")
    # Input from a pipe may come slowly: then each report is flushed as soon as it is ready.
    writer = Writer(run, sys.stdout.buffer, sys.stderr, flush_each=not all(_regular_file(p) for p in paths))
    unshown = 0
    for outcome in _outcomes(run, paths):
        writer.write(outcome)
        if run.options.fail_fast and outcome[2] == EXIT_BAD_INPUT:
            break
        unshown += 1
        if progress is not None and unshown >= PROGRESS_EVERY:
            unshown = 0
            progress.show(writer.counts)
    if progress is not None:
        progress.show(writer.counts)
    writer.finish()
    return writer.exit_code


def _outcomes(run: CheckRun, paths: list[Path]) -> Iterator[Any]:
    """Each bundle's or run's outcome, file by file: a bundle per line or file, a run per
    sample of an .eval log or per event log."""
    for path in paths:
        if is_whole_run_file(path):  # never stdin: it has no .eval suffix and is no regular file
            yield from map(run.trace_unit_outcome, trace_units([path]))
        else:
            yield from map(run.outcome, units_of([path]))


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
