"""Checking bundles on a Ray cluster: the only module that imports ray.

``check_dataset`` checks JSON Lines of bundles (local paths and globs, or any URI that
pyarrow's filesystems open, such as ``s3://``) in a pool of Ray actors, and writes into an
output folder:

- ``reports.jsonl``: one line per bundle, in input order, byte for byte what
  ``admiss check --format json`` prints for the same files (errors as error lines);
- ``properties.parquet/``: one row per bundle and property, for analysis;
- ``summary.json``: counts by verdict and by exclusion reason, and the chains' spend.

How it runs, and why (measured over 200,000 bundles on two cores, docs/ray.md): the
driver cuts the files into byte ranges at line boundaries (admiss/pieces.py, as
``--jobs`` does) and hands one range at a time to each actor; an actor reads its range,
checks every line with the rubric it compiled once, and sends back one *segment*: the
range's reports as one bytes object, its error texts, its Parquet rows as one Arrow table
and its counts. The driver writes segments in input order as they complete, so its work
is per range, never per bundle, and nothing is sorted. Ray Data is not used for files:
reading lines into a dataset, mapping and sorting it cost more than the checking. A Ray
dataset of lines (:func:`lines_dataset`) is still accepted, checked in batches by an actor
pool the same way. Lines are read as bytes, so a bad line becomes its bundle's error
report, never a failed Ray task.

Starting Ray costs some 7 CPU-seconds on two cores (nine processes, most of them
importing ray), what checking some 130,000 bundles costs one process, so the driver checks
ranges itself until every actor has sent back its first: start-up time is spent checking
(with ``--ray local``, one actor fewer than the CPUs and the driver checking to the end).
Each actor checks one bundle at a time, so a gate
chain's model calls are bounded by the actor count (``concurrency``) times one rung's gates.
Install with ``pip install 'admiss[ray]'``.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import math
import os
import socket
import sys
import warnings
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
import ray

from admiss.api import Rubric, load
from admiss.checkrun import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_PASS, CheckOptions, CheckRun
from admiss.config import find_config
from admiss.errors import AdmissError
from admiss.files import atomic_writer, refuse_overwriting_inputs, write_atomically
from admiss.pieces import MIN_PIECE_BYTES, PIECES_PER_JOB, cut_pieces
from admiss.units import no_bundles, units_of

# What check_dataset writes into its output folder.
OUTPUT_FILES = ("reports.jsonl", "properties.parquet", "summary.json")
# Lines per batch handed to an actor when the input is a Ray dataset.
BATCH_SIZE = 4096
# Ranges are at least this large and about this many per actor: small enough that the
# last ones even out the actors' ends and the driver's start-up share, large enough that
# a range's round trip (about a millisecond) is lost in its checking (1,000 bundles take
# some 50 ms).
PIECE_BYTES = 1 << 20
PIECES_PER_ACTOR = 64
# Ranges queued at each actor, so it never waits for the driver between two.
QUEUED_PER_ACTOR = 2
# The Parquet file written in properties.parquet/ (one row group per segment, in order).
PARQUET_PART = "part-0.parquet"
# The Parquet rows' types, fixed: a segment whose bundles all failed has no property
# names, and inferred types would be null there (readers refuse to merge such files).
_PROPERTY_SCHEMA = pa.schema([
    ("bundle", pa.string()), ("bundle_verdict", pa.string()), ("property", pa.string()), ("verdict", pa.string()),
    ("evidence", pa.int64()), ("forbidden", pa.int64()), ("inadmissible", pa.int64()),
    ("shortcut_rejected", pa.int64()), ("error_code", pa.string())])
_REASONS = ("forbidden", "inadmissible", "shortcut-rejected")


class _Range(NamedTuple):
    """A piece of one input file: bytes [start, end) from line ``first_line`` on; end -1
    with first_line 0 for a local file read whole as one bundle (a .json file, or one that
    cannot be read), end -1 with first_line 1 for a URI read whole as JSON Lines."""

    file: int
    path: str
    uri: str | None
    start: int
    end: int
    first_line: int


def _expanded(paths: Iterable[str | Path]) -> list[str]:
    """Local globs expanded (sorted); URIs and plain paths kept as given."""
    out: list[str] = []
    for path in map(str, paths):
        matches = sorted(glob.glob(path)) if "://" not in path and glob.has_magic(path) else [path]
        out.extend(matches)
    return out


def _ranges(names: list[str], jobs: int, min_bytes: int | None = None) -> list[_Range]:
    """The input files cut into ranges, in input order: a local file at line boundaries
    (as ``--jobs`` cuts it for ``jobs`` workers, each at least ``min_bytes``, by default
    ``PIECE_BYTES``), a URI whole."""
    ranges = []
    for file, name in enumerate(names):
        if "://" in name:
            ranges.append(_Range(file, name, name, 0, -1, 1))
            continue
        for piece in cut_pieces([Path(name)], jobs, min_bytes or PIECE_BYTES):
            ranges.append(_Range(file, name, None, piece.start, piece.end, piece.first_line))
    return ranges


def _range_units(piece: _Range) -> Iterator[Any]:
    """The bundles of a range as units (path, line, text), or an AdmissError in place of a
    local file that cannot be read."""
    if piece.uri is None and piece.end < 0:
        yield from units_of([Path(piece.path)])
        return
    if piece.uri is None:
        try:
            with open(piece.path, "rb") as stream:
                stream.seek(piece.start)
                data = stream.read(piece.end - piece.start)
        except OSError:  # gone since it was cut: its reader says why, in its place
            yield from units_of([Path(piece.path)])
            return
    else:
        import pyarrow.fs

        filesystem, where = pyarrow.fs.FileSystem.from_uri(piece.uri)
        with filesystem.open_input_file(where) as stream:
            data = stream.read()
    for number, line in enumerate(data.split(b"\n"), start=piece.first_line):
        if line.strip():
            yield piece.path, number, line


class _RecordingRun(CheckRun):
    """A check run that turns what it shows (each report, or each error) into Parquet rows,
    exclusion counts and chain spend as it goes, so a segment's rows and counts come from
    the reports themselves: parsing the JSON written back took longer than checking the
    bundle (81 µs against 55 µs). It keeps no report: holding a range's reports alive
    until its end made the cyclic garbage collector walk them again and again (checking
    20,000 bundles took 2.3 CPU-seconds against 1.3 for a plain run)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.clear()

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.clear()

    def clear(self) -> None:
        self.rows: list[tuple] = []  # one a property, in _PROPERTY_SCHEMA's column order
        self.model_costs: list[float] = []
        self.gate_costs: list[float] = []

    def report_outcome(self, report, name: str):
        for result in report.properties:
            reasons = [exclusion.reason for _, exclusion in result.excluded]
            self.rows.append((name, report.verdict, result.prop.name, result.verdict, len(result.evidence),
                              *(reasons.count(reason) for reason in _REASONS), None))
        if report.chain is not None:
            self.model_costs.append(report.chain.model_cost_usd)
            self.gate_costs.append(report.chain.gate_cost_usd)
        return super().report_outcome(report, name)

    def error_outcome(self, error: AdmissError, name: str):
        self.rows.append((name, "error", None, None, 0, 0, 0, 0, error.diagnostics[0].code))
        return super().error_outcome(error, name)

    def taken(self) -> dict[str, Any]:
        """The Parquet rows (as Arrow IPC bytes), exclusion counts (the rows' own, added up)
        and chain spend recorded since the last call."""
        columns = list(zip(*self.rows)) or [() for _ in _PROPERTY_SCHEMA.names]
        table = pa.Table.from_arrays([pa.array(column, type=field.type) for column, field in
                                      zip(columns, _PROPERTY_SCHEMA)], schema=_PROPERTY_SCHEMA)
        taken = {"properties": _ipc_bytes(table), "reasons": [sum(column) for column in columns[5:8]],
                 "model_costs": self.model_costs, "gate_costs": self.gate_costs}
        self.clear()
        return taken


def _segment(run: _RecordingRun, file: int, path: str, units: Iterable[Any]) -> dict[str, Any]:
    """The outcomes of consecutive bundles of one file, as one record: their reports and
    error texts joined, their Parquet rows as Arrow IPC bytes, their counts."""
    reports: list[bytes] = []
    errors: list[str] = []
    verdicts = {"pass": 0, "fail": 0, "error": 0}
    for unit in units:
        shown, error, _, verdict = run.outcome(unit)
        if shown is not None:
            reports.append(shown)
        if error is not None:
            errors.append(error + "\n")
        verdicts[verdict] += 1
    return {"file": file, "path": path, "bundles": sum(verdicts.values()),
            "reports": b"".join(report + b"\n" for report in reports), "errors": "".join(errors),
            "verdicts": [verdicts["pass"], verdicts["fail"], verdicts["error"]], **run.taken()}


def _ipc_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _checked_range(run: _RecordingRun, piece: _Range) -> dict[str, Any]:
    return _segment(run, piece.file, piece.path, _range_units(piece))


class _RangeChecker:
    """A Ray actor: the check run (with its compiled rubric) unpickled once, then ranges."""

    def __init__(self, run: _RecordingRun):
        self.run = run

    def check(self, piece: _Range) -> dict[str, Any]:
        return _checked_range(self.run, piece)


class _BatchChecker:
    """A Ray Data actor: a batch of (file, line, path, text) rows checked into one segment
    per file run in it. A row without text stands for a piece without bundles."""

    def __init__(self, run: _RecordingRun):
        self.run = run

    def __call__(self, batch: dict[str, Any]) -> dict[str, list]:
        segments: list[dict[str, Any]] = []
        rows = list(zip(batch["file"], batch["line"], batch["path"], batch["text"]))
        start = 0
        while start < len(rows):
            file = int(rows[start][0])
            end = start
            while end < len(rows) and int(rows[end][0]) == file:
                end += 1
            units = [(str(path), int(line), bytes(text)) for _, line, path, text in rows[start:end] if text is not None]
            segments.append(_segment(self.run, file, str(rows[start][2]), units))
            start = end
        return {key: [segment[key] for segment in segments] for key in segments[0]} if segments else {}


def lines_dataset(paths: Iterable[str | Path], pieces_per_file: int = 8) -> Any:
    """The lines of JSON Lines files as a Ray dataset of (file, line, path, text) rows, in
    blocks: a local file is cut at line boundaries as ``admiss check --jobs`` cuts it, a
    URI is read whole by one task. For pipelines that build their own dataset;
    :func:`check_dataset` reads paths itself, faster."""
    import ray.data

    items = [piece._asdict() for piece in _ranges(_expanded(paths), pieces_per_file, MIN_PIECE_BYTES)]
    # Reading is light: it takes no CPU from the actors that check, and at most two tasks
    # read at once (zero-CPU tasks are otherwise started without bound).
    return ray.data.from_items(items, override_num_blocks=len(items)).flat_map(
        _lines_of, num_cpus=0, compute=ray.data.TaskPoolStrategy(size=2))


def _lines_of(item: dict[str, Any]) -> list[dict[str, Any]]:
    """A range's lines as rows; a range without a bundle gives one row without text. A
    file that cannot be read fails the task with its AdmissError."""
    piece = _Range(**item)
    rows = []
    for unit in _range_units(piece):
        if isinstance(unit, AdmissError):
            raise unit
        rows.append({"file": piece.file, "line": unit[1], "path": piece.path, "text": unit[2]})
    return rows or [{"file": piece.file, "line": 0, "path": piece.path, "text": None}]


def _made_for_the_run(folder: Path, stack: contextlib.ExitStack) -> None:
    """Make ``folder`` and the folders above it that are missing; a run that fails takes
    out again those of them it leaves empty (Ray that never started leaves no output)."""
    missing = [folder, *(p for p in folder.parents if not p.exists())]
    missing = missing if not folder.exists() else []
    folder.mkdir(parents=True, exist_ok=True)
    for made in reversed(missing):  # the stack calls back last first: the innermost goes first
        stack.callback(_remove_if_empty, made)


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not empty: the run wrote into it (or someone else did)
        folder.rmdir()


class _Output:
    """The output folder's files, written from segments in input order: reports and error
    texts appended, a row group per segment, counts added up. A file none of whose segments
    held a bundle gets its E180 error in its place, once."""

    def __init__(self, folder: Path, run: _RecordingRun, errors: Any, stack: contextlib.ExitStack):
        self.run, self.errors = run, errors
        _made_for_the_run(folder / "properties.parquet", stack)
        self.reports = stack.enter_context(atomic_writer(folder / "reports.jsonl")).buffer
        self.parquet_path = folder / "properties.parquet" / PARQUET_PART
        self.parquet_tmp = self.parquet_path.with_name(f".{PARQUET_PART}.tmp")
        stack.callback(self.parquet_tmp.unlink, missing_ok=True)  # a run that failed leaves none
        self.parquet = pq.ParquetWriter(self.parquet_tmp, _PROPERTY_SCHEMA)
        stack.callback(self.parquet.close)
        self.verdicts = [0, 0, 0]
        self.reasons = [0, 0, 0]
        self.model_costs: list[float] = []
        self.gate_costs: list[float] = []
        self.file: tuple[int, str] | None = None
        self.bundles_in_file = 0

    def add(self, segment: dict[str, Any]) -> None:
        if self.file is not None and self.file[0] != segment["file"]:
            self.file_ended()
        self.file = (segment["file"], segment["path"])
        self.bundles_in_file += segment["bundles"]
        self.written(segment)

    def file_ended(self) -> None:
        if self.file is not None and not self.bundles_in_file:
            file, path = self.file
            self.written(_segment(self.run, file, path, [no_bundles(path)]))
        self.bundles_in_file = 0

    def written(self, segment: dict[str, Any]) -> None:
        self.reports.write(segment["reports"])
        if segment["errors"] and self.errors is not None:
            self.errors.write(segment["errors"])
        table = pa.ipc.open_stream(segment["properties"]).read_all()
        if table.num_rows:
            self.parquet.write_table(table)
        self.verdicts = [a + b for a, b in zip(self.verdicts, segment["verdicts"])]
        self.reasons = [a + b for a, b in zip(self.reasons, segment["reasons"])]
        self.model_costs.extend(segment["model_costs"])
        self.gate_costs.extend(segment["gate_costs"])

    def finished(self) -> None:
        """The last file's E180 if it held no bundle; the Parquet file in its place."""
        self.file_ended()
        self.parquet.close()
        os.replace(self.parquet_tmp, self.parquet_path)

    def summary(self) -> dict[str, Any]:
        by_verdict = dict(zip(("pass", "fail", "error"), self.verdicts))
        # fsum: the spend is the same however the bundles were split into segments.
        return {"bundles": sum(self.verdicts), "by_verdict": by_verdict, "by_exclusion_reason": dict(zip(_REASONS, self.reasons)),
                "chain_spend": {"model_cost_usd": round(math.fsum(self.model_costs), 9),
                                "gate_cost_usd": round(math.fsum(self.gate_costs), 9)}}


class _Scheduler:
    """Hands ranges to actors, ``QUEUED_PER_ACTOR`` at a time each, and yields segments in
    input order. Until every actor has sent back a segment (Ray and the actors are still
    starting), the driver checks the next range itself; with ``alongside``, until none is
    left (it is one more checker, its own start-up already paid)."""

    def __init__(self, run: _RecordingRun, ranges: list[_Range], actors: int | None, started: Future | None,
                 check_while_starting: bool, alongside: bool = False):
        self.run, self.ranges, self.actor_count, self.started = run, ranges, actors, started
        self.check_while_starting, self.alongside = check_while_starting, alongside
        self.pending = deque(range(len(ranges)))
        self.done: dict[int, dict[str, Any]] = {}
        self.actors: list[Any] | None = None
        self.in_flight: dict[Any, tuple[int, int]] = {}
        self.warm: set[int] = set()
        self.checked_here = 0

    def in_order(self) -> Iterator[dict[str, Any]]:
        for index in range(len(self.ranges)):
            while index not in self.done:
                self.step()
            yield self.done.pop(index)

    def step(self) -> None:
        if self.actors is None and (self.started is None or self.started.done() or not self.local_work()):
            self.start_actors()
        if self.local_work():
            self.collect(timeout=0)
            if self.local_work():
                index = self.pending.popleft()
                self.done[index] = _checked_range(self.run, self.ranges[index])
                self.checked_here += 1
        else:
            self.collect(timeout=None)

    def local_work(self) -> bool:
        starting = self.actors is None or len(self.warm) < len(self.actors)
        return bool(self.pending) and (self.alongside or self.check_while_starting and starting)

    def start_actors(self) -> None:
        if self.started is not None:
            self.started.result()  # Ray's start-up error, if any, here
        checker = ray.remote(num_cpus=1)(_RangeChecker)
        self.actors = [checker.remote(self.run) for _ in range(self.actor_count or _cluster_cpus())]
        for actor in range(len(self.actors)):
            for _ in range(QUEUED_PER_ACTOR):
                self.hand_out(actor)

    def hand_out(self, actor: int) -> None:
        if self.pending and self.actors is not None:
            index = self.pending.popleft()
            self.in_flight[self.actors[actor].check.remote(self.ranges[index])] = (actor, index)

    def collect(self, timeout: float | None) -> None:
        if not self.in_flight:
            return
        ready, _ = ray.wait(list(self.in_flight), num_returns=1, timeout=timeout)
        for ref in ready:
            actor, index = self.in_flight.pop(ref)
            self.done[index] = ray.get(ref)
            self.warm.add(actor)
            self.hand_out(actor)


def _dataset_segments(dataset: Any, run: _RecordingRun, actors: int) -> Iterator[dict[str, Any]]:
    """The segments of a Ray dataset of lines, checked in batches by an actor pool, in order."""
    import ray.data

    checked = dataset.map_batches(_BatchChecker, fn_constructor_args=(run,), batch_size=BATCH_SIZE,
                                  compute=ray.data.ActorPoolStrategy(size=actors), batch_format="numpy", num_cpus=1)
    checked.context.execution_options.preserve_order = True  # this dataset's own context
    for row in checked.iter_rows():  # one row per segment: a file's run in a batch
        yield {**row, "file": int(row["file"]), "bundles": int(row["bundles"]),
               "verdicts": [int(n) for n in row["verdicts"]], "reasons": [int(n) for n in row["reasons"]],
               "model_costs": [float(c) for c in row["model_costs"]], "gate_costs": [float(c) for c in row["gate_costs"]]}


def _is_dataset(value: Any) -> bool:
    # A Ray dataset was built with ray.data imported; files alone never import it (it
    # brings pandas: seconds of start-up).
    data = sys.modules.get("ray.data")
    return data is not None and isinstance(value, data.Dataset)


def check_dataset(dataset_or_paths: Any, rubric: Rubric | str | Path, output: str | Path, *,
                  chain: str | None = None, report: str = "lean", concurrency: int | None = None,
                  config: str | Path | None = None, offline: bool = False, errors: Any = None,
                  starting: Callable[[], Any] | None = None, check_while_starting: bool = True,
                  check_alongside: bool = False) -> dict[str, Any]:
    """Check JSON Lines of bundles on Ray and write reports, Parquet and a summary into
    ``output``; the summary (also written as summary.json).

    ``dataset_or_paths`` is a path, a glob, a list of them (URIs too), or a Ray dataset of
    rows with ``file``, ``line``, ``path`` and ``text`` as :func:`lines_dataset` makes.
    ``concurrency`` is the number of actors (default: the cluster's CPUs). Error texts go
    to ``errors`` (a text stream) when given, in input order. ``starting`` starts Ray (it
    runs in a thread while this process checks); with ``check_while_starting`` (files
    only) this process checks ranges until every actor has checked one; with
    ``check_alongside`` (files only) it checks ranges beside the actors until none is left.
    """
    folder = Path(output)
    dataset = _is_dataset(dataset_or_paths)
    given = [] if dataset else [dataset_or_paths] if isinstance(dataset_or_paths, (str, Path)) \
        else list(dataset_or_paths)
    names = _expanded(given)
    source = None if isinstance(rubric, Rubric) else Path(rubric)
    config_file = find_config(Path(config) if config else None, source)
    refuse_overwriting_inputs([folder / name for name in OUTPUT_FILES], [*names, *filter(None, (source, config_file))])
    if not isinstance(rubric, Rubric):
        rubric = load(rubric, config, offline)
    run = _RecordingRun(CheckOptions(rubric=None, fmt="json", chain=chain, offline=offline, report=report), many=True,
                        rubric=rubric)
    with ThreadPoolExecutor(1) as thread, contextlib.ExitStack() as stack:
        started = thread.submit(starting) if starting is not None else None
        output_files = _Output(folder, run, errors, stack)
        if dataset:
            if started is not None:
                started.result()
            segments = _dataset_segments(dataset_or_paths, run, concurrency or _cluster_cpus())
        else:
            # Cut for this machine's CPUs (or the actors asked for): the cluster may not be up yet.
            checkers = (concurrency or os.cpu_count() or 1) + check_alongside
            jobs = checkers * PIECES_PER_ACTOR // PIECES_PER_JOB
            segments = _Scheduler(run, _ranges(names, jobs), concurrency, started, check_while_starting,
                                  check_alongside).in_order()
        for segment in segments:
            output_files.add(segment)
        if started is not None:
            started.result()  # Ray failed to start: an error, even if this process checked all
        output_files.finished()
    result = output_files.summary()
    write_atomically(folder / "summary.json", json.dumps(result, indent=2) + "\n")
    return result


def _cluster_cpus() -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _quiet() -> None:
    """Ray's own chatter off: its INFO lines, the C++ core worker's log, its warnings. For
    3 bundles Ray printed some 60 lines that said nothing about them. Ray's errors still
    come as exceptions, and admiss's own errors are still written."""
    # Read by the driver's core worker when ray.init starts it, so set before.
    os.environ["RAY_BACKEND_LOG_LEVEL"] = "fatal"
    logging.getLogger("ray").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module=r"ray(\.|$)")


@contextlib.contextmanager
def _stderr_kept_from_ray() -> Iterator[None]:
    """File descriptor 2 sent to /dev/null, and ``sys.stderr`` to a copy of the real one:
    Ray's C++ core writes its log lines to fd 2 (one saying which log level it read, as
    ray.init starts it in its thread), past Python's logging, while admiss's errors and any
    Python error are still shown."""
    shown = sys.stderr
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    stream = open(saved, "w", encoding=shown.encoding, errors=shown.errors, buffering=1, closefd=False)
    os.dup2(devnull, 2)
    sys.stderr = stream
    try:
        yield
    finally:
        stream.flush()
        sys.stderr = shown
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _ray_starter(address: str) -> Callable[[], None]:
    def start() -> None:
        if address == "local":
            # A Ray instance of this machine's own, reached over loopback only.
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False,
                     _node_ip_address="127.0.0.1")
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    return start


# How long an explicit cluster address gets to accept a TCP connection. ray.init itself
# retries an address nothing listens on for some 14 minutes, then raises.
REACH_SECONDS = 5.0


def unreachable(address: str, seconds: float = REACH_SECONDS) -> str | None:
    """Why nothing accepts a connection at a ``host:port`` or ``ray://host:port`` address,
    or None (also for ``local``, ``auto`` and forms Ray resolves itself)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if "://" in host or not host or not port.isdigit():
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=seconds).close()
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__
    return None


def run_on_ray(address: str, paths: list[Path], rubric: Path, output: Path, chain: str | None, report: str,
               config: Path | None, offline: bool = False, verbose: bool = False) -> int:
    """``admiss check --ray ADDRESS``: the exit code, as ``admiss check`` would give it.
    Ray's own logging is off unless ``verbose``."""
    why = unreachable(address)
    if why is not None:
        return _no_cluster(address, why)
    if not verbose:
        _quiet()
    with contextlib.nullcontext() if verbose else _stderr_kept_from_ray():
        try:
            summary = check_dataset([str(p) for p in paths], rubric, output, chain=chain, report=report,
                                    config=config, offline=offline, errors=sys.stderr, starting=_ray_starter(address),
                                    **_local_checkers() if address == "local" else {})
        except AdmissError as error:  # the rubric or an input file cannot be read
            sys.stderr.write(error.render() + "\n")
            return EXIT_BAD_INPUT
        except ConnectionError as exc:  # ray.init found no cluster ('auto' with none running)
            return _no_cluster(address, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        finally:
            ray.shutdown()
    counts = summary["by_verdict"]
    return EXIT_BAD_INPUT if counts["error"] else EXIT_FAIL if counts["fail"] else EXIT_PASS


def _local_checkers() -> dict[str, Any]:
    """On a Ray of this machine's own: one actor fewer than its CPUs, and this process
    checking beside them, so no CPU waits for an actor's start-up (an actor costs some 0.8
    CPU-seconds to import ray and admiss before its first bundle)."""
    return {"concurrency": max(1, (os.cpu_count() or 1) - 1), "check_alongside": True}


def _no_cluster(address: str, why: str) -> int:
    sys.stderr.write(f"admiss check: cannot reach a Ray cluster at {address}: {why}\n"
                     "  hint: start one (ray start --head), give its address, or use --ray local\n")
    return EXIT_BAD_INPUT
