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
    """``admiss import``: the explained bundle of every trace in ``paths``; the exit code."""
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
            explained = rubric.import_trace(parse_bundle_text(text, path, number - 1 if number else 0),
                                            name, trace_format)
        except AdmissError as error:
            sys.stdout.flush()
            sys.stderr.write(error.render() + "\n")
            exit_code = EXIT_BAD_INPUT
            continue
        sys.stdout.buffer.write((dumps_line if many else dumps_indented)(explained) + b"\n")
    return exit_code
