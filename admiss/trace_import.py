"""``admiss import``: the explained bundle each run makes, one per run read."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

from admiss.bundle import parse_bundle_text
from admiss.checkrun import EXIT_BAD_INPUT, EXIT_PASS
from admiss.errors import AdmissError, TraceError
from admiss.files import reading
from admiss.jsonio import dumps_indented, dumps_line
from admiss.units import line_text, units_of

# A trace unit: its name, JSON value, text, where the text stands in its file (the line it
# starts after; for an event log, the line each of its values starts at), and the file's
# name when the unit is one line of it (named file:N), to locate errors.
TraceUnit = tuple[str, Any, str, "int | list[int]", "str | None"]


def import_traces(rubric, paths: list[Path], trace_format: str | None) -> int:
    """``admiss import``: the explained bundle of every run in ``paths`` (a file of many runs,
    an eval set's cases or an Inspect log's samples, gives one per run, in order); the exit code."""
    from admiss.traces.build import located_at

    many = len(paths) > 1 or any(p.suffix in (".jsonl", ".eval") for p in paths)
    exit_code = EXIT_PASS
    for unit in trace_units(paths):
        if isinstance(unit, AdmissError):
            runs: list = [(None, unit)]
        else:
            name, value, text, where, file = unit
            runs = rubric.import_runs(value, name, trace_format)
            runs = [(run_name, located_at(run, text, where, file, run_name[len(name):])
                     if isinstance(run, TraceError) else run) for run_name, run in runs]
        for run_name, run in runs:
            sys.stdout.flush()
            if isinstance(run, AdmissError):
                sys.stderr.write(run.render() + "\n")
                exit_code = EXIT_BAD_INPUT
                continue
            for warning in run["trace"].get("warnings", ()):
                sys.stderr.write(f"{run_name}: warning: {warning}\n")
            if len(runs) > 1 or "#" in run_name:  # one of a file's many runs: name it
                run["trace"]["run"] = run_name
            shown = {"run": run_name, **run} if len(runs) > 1 else run
            sys.stdout.buffer.write((dumps_line if many or len(runs) > 1 else dumps_indented)(shown) + b"\n")
    return exit_code


def is_whole_run_file(path: Path) -> bool:
    """Whether the file at ``path`` is read whole rather than line by line: an Inspect
    ``.eval`` log (a zip of samples) or a ``.jsonl`` event log (one run's lines). A pipe is
    read line by line: peeking at its first line would take that line from the reader."""
    try:
        return path.suffix == ".eval" or (path.suffix == ".jsonl" and path.is_file() and _is_event_log(path))
    except (AdmissError, OSError):
        return False  # reading it line by line says what is wrong


def trace_units(paths: list[Path]) -> Iterator[TraceUnit | AdmissError]:
    """Each trace file, .jsonl line, .eval sample and event log (a .jsonl file that is one
    run's lines, a Claude Code session); an error in its place."""
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
            try:
                if number:
                    text = line_text(text, path_name, number)
                yield name, parse_bundle_text(text, path_name, number - 1 if number else 0), text, \
                    number - 1 if number else 0, path_name if number else None
            except AdmissError as error:
                yield error


def _is_event_log(path: Path) -> bool:
    """Whether the .jsonl file at ``path`` is read whole, by its first non-blank line: one
    run's event log, or lines of OTLP export requests (the Collector's file exporter writes a
    trace's spans and log events on several lines, and the traces of many runs interleaved:
    they are grouped by traceId)."""
    from admiss.traces.otel_genai import is_line
    from admiss.traces.read import is_event_log

    with reading(path), path.open("rb") as lines:
        for line in lines:
            if line.strip():
                try:
                    first = parse_bundle_text(line_text(line, str(path), 1), str(path))
                except AdmissError:
                    return False
                return is_event_log(first) or is_line(first)
    return False


def _event_log(path: Path) -> TraceUnit:
    """An event log's lines' values, its text and the line each value starts at."""
    from admiss.api import read_text

    name, text = str(path), read_text(path)
    values, starts = [], []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            values.append(parse_bundle_text(line, name, number - 1))
            starts.append(number)
    return name, values, text, starts, None
