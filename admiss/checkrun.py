"""Checking one bundle in ``admiss check``: the options, the rubrics loaded so far, each
bundle's outcome, and writing outcomes in order. Used alike by this process and by
``--jobs`` workers (admiss/workers.py), so both print the same bytes."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any, BinaryIO, Callable, NamedTuple

from admiss.api import load
from admiss.bundle import parse_bundle_text, rubric_path, validate_bundle
from admiss.errors import AdmissError, TraceError, input_error
from admiss.jsonio import dumps_line
from admiss.terminal import one_line
from admiss.traces.input import is_inspect_log, is_trace
from admiss.units import Unit, line_text

EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2


class Document(NamedTuple):
    """A format written once for the whole run: each outcome's part, then the document."""

    part: Callable[[Any], Any]
    error_part: Callable[[str, AdmissError], Any]
    whole: Callable[[list], bytes]


DOCUMENTS = ("junit", "markdown")


@functools.cache
def document(fmt: str) -> Document:
    # Imported here for start-up time: only these two formats need an XML or Markdown writer.
    if fmt == "junit":
        from admiss.report import junit

        return Document(junit.report_suite, junit.error_suite, junit.junit_xml)
    from admiss.report import markdown

    return Document(markdown.report_row, markdown.error_row, markdown.markdown_summary)


class CheckOptions(NamedTuple):
    rubric: Path | None
    fmt: str  # "text", "json", "rich", or a whole-run document: "junit" or "markdown"
    chain: str | None = None
    config: Path | None = None
    jobs: int = 1
    fail_fast: bool = False
    offline: bool = False
    report: str = "lean"  # the JSON report's shape: "lean" or "full"
    trace: str | None = None  # --trace FORMAT: read every input as a trace in that format
    live: bool = False
    # --bundle-timeout: with --jobs, a worker that spends longer on one bundle is ended
    # and the bundle reported E183 (admiss/workers.py's watchdog).
    bundle_timeout: float = 600.0


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
        # First: the exporter process starts up (imports the SDK) while the rubric compiles.
        self.telemetry = check_telemetry(options)
        self.fixed_rubric = rubric if rubric is not None else self.rubric_at(options.rubric) if options.rubric else None
        if self.fixed_rubric is not None:
            # Before any bundle: a gate's missing provider stops the run here, once.
            self.fixed_rubric.prepare(options.chain, options.live)

    def __getstate__(self) -> dict:
        return {"options": self.options, "many": self.many, "fixed_rubric": self.fixed_rubric, "rubrics": {}}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        # Each worker process exports its own reports' events.
        self.telemetry = check_telemetry(self.options)

    def rubric_at(self, path: Path):
        key = path.resolve()
        if key not in self.rubrics:
            self.rubrics[key] = load(path, self.options.config, self.options.offline)
        return self.rubrics[key]

    def close(self) -> None:
        for rubric in self.rubrics.values():
            rubric.close()
        if self.telemetry is not None:
            self.telemetry.close()

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
        where = number - 1 if number else 0  # the line the value's text starts after
        try:
            if number:
                text = line_text(text, path, number)
            value = parse_bundle_text(text, path, number - 1 if number else 0)
            from admiss.traces import adk  # the readers load only for a value that may be a trace
            from admiss.traces.read import is_run_list

            from admiss.traces.build import located_at

            # A reader's error is located in the text, as a bundle's is: file:line:col and a caret.
            if self.options.trace is not None or is_run_list(value) or adk.eval_cases(value) is not None \
                    or is_inspect_log(value):
                return self.runs_outcome(value, path, name, lambda error, run: located_at(
                    error, text, where, path if number else None, run[len(name):]))
            report = self.report_for(value, path, name)
        except TraceError as error:
            from admiss.traces.build import located_at

            return self.error_outcome(located_at(error, text, where, path if number else None), name)
        except AdmissError as error:
            return self.error_outcome(error, name)
        return self.report_outcome(report, name)

    def trace_unit_outcome(self, unit: Any) -> Outcome:
        """The outcome of a run file read whole (admiss/trace_import.py's trace units: an
        Inspect .eval sample, a Claude Code session), its reader errors located in its text."""
        if isinstance(unit, AdmissError):
            return self.error_outcome(unit, unit.diagnostics[0].file or "")
        from admiss.traces.build import located_at

        name, value, text, where, _ = unit
        try:
            return self.runs_outcome(value, name, name, lambda error, _: located_at(error, text, where))
        except AdmissError as error:
            return self.error_outcome(error, name)

    def report_outcome(self, report, name: str) -> Outcome:
        if self.telemetry is not None:
            self.telemetry.report(report)
        return self.shown(report), warned(report, name), EXIT_PASS if report.verdict == "pass" else EXIT_FAIL, \
            report.verdict

    def runs_outcome(self, value: Any, path: str, name: str, locate=None) -> Outcome:
        """The outcome of a value that may hold several runs (a JSON array of runs, an ADK
        eval set or result): a report per run, in order, each named for its index. ``locate``
        gives a reader's error of the run it names its place in the file's text."""
        runs = self.rubric_for(value, path, name).check_runs(value, name, self.options.chain, self.options.trace,
                                                            self.options.live)
        if locate is not None:
            runs = [(run_name, locate(run, run_name) if isinstance(run, TraceError) else run) for run_name, run in runs]
        if len(runs) == 1 and not isinstance(runs[0][1], AdmissError):
            return self.report_outcome(runs[0][1], name)
        many, self.many = self.many, True
        try:
            outcomes = [self.error_outcome(run, run_name) if isinstance(run, AdmissError) else
                        self.report_outcome(run, run_name) for run_name, run in runs]
        finally:
            self.many = many
        shown = [o[0] for o in outcomes if o[0] is not None]
        gap = b"\n\n" if self.options.fmt == "text" else b"\n"
        errors = "\n".join(o[1] for o in outcomes if o[1] is not None) or None
        code = max(o[2] for o in outcomes)
        verdict = "error" if code == EXIT_BAD_INPUT else "fail" if code == EXIT_FAIL else "pass"
        listed = self.options.fmt == "rich" or self.options.fmt in DOCUMENTS
        return (shown if listed else gap.join(shown) if shown else None), errors, code, verdict

    def shown(self, report) -> Any:
        # One bundle prints one report as it is; several print JSON Lines, or text reports
        # under a "==> name <==" line each (the blank line between them is the writer's).
        fmt = self.options.fmt
        if fmt == "json":
            return report.to_json(self.options.report == "full", indent=not self.many)
        if fmt == "rich":
            return report
        if fmt in DOCUMENTS:
            return document(fmt).part(report)
        text = f"==> {one_line(report.bundle_name)} <==\n{report.to_text()}" if self.many else report.to_text()
        # A lone surrogate (a "\ud800" escape in a bundle) is written as that escape.
        return text.encode("utf-8", "backslashreplace")

    def error_outcome(self, error: AdmissError, name: str) -> Outcome:
        shown = None
        if self.options.fmt in DOCUMENTS:
            shown = document(self.options.fmt).error_part(name, error)
        elif self.options.fmt == "json" and self.many:
            # Keep one output line per input line, so results stay aligned with the batch.
            shown = dumps_line({"bundle": name, "error": [d.to_dict() for d in error.diagnostics]})
        return shown, error.render(), EXIT_BAD_INPUT, "error"


def check_telemetry(options: CheckOptions):
    """OpenTelemetry out for ``admiss check`` (admiss/integrations/otel.py), or None when
    neither an OTEL_* variable nor a [telemetry] table asks for it."""
    from admiss.configfile import find_config, may_ask_for_telemetry, may_have_table

    path = find_config(options.config, options.rubric)
    named = path is not None and may_have_table(path, "telemetry")
    if not may_ask_for_telemetry(named):
        return None  # start-up time: neither the config reader nor the integration is imported
    from admiss.config import read_config
    from admiss.integrations.otel import telemetry_for

    settings = read_config(path).telemetry if named else None

    return telemetry_for(settings, spans=False)  # check makes no spans: no tracer to start


def warned(report, name: str) -> str | None:
    """The warnings of a trace's report, for stderr (a trace that gave no steps)."""
    warnings = (report.trace or {}).get("warnings") if getattr(report, "trace", None) else None
    return "\n".join(f"{name}: warning: {warning}" for warning in warnings) if warnings else None


class Writer:
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
        # A whole-run document (junit, markdown) gathers every outcome's part and is written by finish().
        self.parts: list = []

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
                for report in shown if isinstance(shown, list) else (shown,):
                    self.rich_writer().write(report)
            elif self.run.options.fmt in DOCUMENTS:
                self.parts.extend(shown if isinstance(shown, list) else (shown,))
            else:
                if self.printed and self.gap:
                    self.out.write(b"\n")
                self.out.write(shown + b"\n")
                if self.flush_each:
                    self.out.flush()
            self.printed += 1
        self.counts[verdict] += 1

    def finish(self) -> None:
        """Write the whole-run document, when the format is one."""
        if self.run.options.fmt in DOCUMENTS:
            self.out.write(document(self.run.options.fmt).whole(self.parts))

    @property
    def exit_code(self) -> int:
        counts = self.counts
        return EXIT_BAD_INPUT if counts["error"] else EXIT_FAIL if counts["fail"] else EXIT_PASS
