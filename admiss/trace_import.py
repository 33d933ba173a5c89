"""``admiss import``: the explained bundle each trace makes, one per trace read."""

from __future__ import annotations

import sys
from pathlib import Path

from admiss.bundle import parse_bundle_text
from admiss.checkrun import EXIT_BAD_INPUT, EXIT_PASS
from admiss.errors import AdmissError
from admiss.jsonio import dumps_indented, dumps_line
from admiss.units import line_text, units_of


def import_traces(rubric, paths: list[Path], trace_format: str | None) -> int:
    """``admiss import``: the explained bundle of every run in ``paths`` (a file of many runs
    gives one per run, in order); the exit code."""
    many = len(paths) > 1 or any(p.suffix == ".jsonl" for p in paths)
    exit_code = EXIT_PASS
    for unit in units_of(paths):
        try:
            if isinstance(unit, AdmissError):
                raise unit
            path, number, text = unit
            name = f"{path}:{number}" if number else path
            if number:
                text = line_text(text, path, number)
            runs = rubric.import_runs(parse_bundle_text(text, path, number - 1 if number else 0), name, trace_format)
        except AdmissError as error:
            runs = [(None, error)]
        for run_name, run in runs:
            sys.stdout.flush()
            if isinstance(run, AdmissError):
                sys.stderr.write(run.render() + "\n")
                exit_code = EXIT_BAD_INPUT
                continue
            for warning in run["trace"].get("warnings", ()):
                sys.stderr.write(f"{run_name}: warning: {warning}\n")
            shown = {"run": run_name, **run} if len(runs) > 1 else run
            sys.stdout.buffer.write((dumps_line if many or len(runs) > 1 else dumps_indented)(shown) + b"\n")
    return exit_code
