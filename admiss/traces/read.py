"""Reading a trace in any known format: the format named, or detected from the value's shape.

Each format is one module with ``NAME``, ``mismatch(value)`` (where and why a value is not
in the format, or None) and ``read(value, name)`` (the Trace, or TraceError). Detection
tries the formats in ``FORMATS`` order and reads with the first that matches.
"""

from __future__ import annotations

from functools import partial
from types import ModuleType
from typing import Any, Callable

from admiss.collector import collector_paused
from admiss.errors import Diagnostic, TraceError, did_you_mean
from admiss.traces import adk, agents_sdk, anthropic, api_response, claude_code, codex, inspect_eval, langchain, langfuse, openai_chat, openinference, openai_responses, otel_genai, swe_agent
from admiss.traces.input import RUN_FIELDS
from admiss.traces.steps import Trace

# B020: the value matches no format. B024: an unknown format name. B025: nested too deeply.
NO_FORMAT, UNKNOWN_FORMAT, TOO_DEEP = "B020", "B024", "B025"

FORMATS: dict[str, ModuleType] = {module.NAME: module for module in (
    inspect_eval, claude_code, codex, agents_sdk, langfuse, langchain, openai_chat, openai_responses, anthropic, openinference, otel_genai, adk, api_response, swe_agent)}
FORMAT_NAMES: tuple[str, ...] = tuple(FORMATS)
# The formats whose .jsonl file is one run, a line per event, not a run per line.
EVENT_LOGS: tuple[ModuleType, ...] = (claude_code, codex)


def is_event_log(first: Any) -> bool:
    """Whether a .jsonl file whose first line's value is ``first`` is one run's event log."""
    return any(module.is_line(first) for module in EVENT_LOGS)


def read_trace(value: Any, name: str = "<input>", format: str | None = None) -> Trace:
    """The Trace of an already-parsed JSON ``value``, in ``format`` or the one its shape shows.

    Raises TraceError: B020 when no format matches (naming each format and where and why it
    did not), B024 for an unknown ``format``, and the format's own located errors.
    """
    module = format_module(format, name) if format is not None else detect(value, name)
    return _reading(module.read, value, name)


def read_traces(value: Any, name: str = "<input>", format: str | None = None) -> list[tuple[str, Trace | TraceError]]:
    """Every run ``value`` holds, in order, each with its name: the one trace of most
    values; one per item of a JSON array of runs (``name#[i]``); one per case of an ADK
    eval set or eval result (``name#eval_cases[i]``); one per sample of an Inspect log; one
    per trace of an OTLP file of several (``name#traceId=ID``). A
    run that cannot be read has its TraceError in place of its Trace; the others are still
    read."""
    if is_run_list(value):
        return [(f"{name}#[{i}]", error_or_trace) for i, item in enumerate(value)
                for _, error_or_trace in read_traces(item, f"{name}#[{i}]", format)]
    try:
        module = format_module(format, name) if format is not None else detect(value, name)
    except TraceError as error:
        return [(name, error)]
    if module is adk:
        cases = adk.eval_cases(value)
        if cases is not None:
            return [(f"{name}#{path}", _or_error(partial(adk.read_case, path=path), case, f"{name}#{path}"))
                    for path, case in cases]
    runs = getattr(module, "runs", None)
    found = runs(value) if runs is not None else None
    if found is None:
        return [(name, _or_error(module.read, value, name))]
    return [(f"{name}#{path}" if path else name,
             _or_error(lambda _, run_name, read=read: read(run_name), None, f"{name}#{path}" if path else name))
            for path, read in found]


def is_run_list(value: Any) -> bool:
    """Whether ``value`` is a JSON array of runs (of objects that each hold a whole run),
    not one run's array of messages or items."""
    # A LangSmith run has "events" too (its timing events), but a flat array of them is one
    # trace: the runs of one agent's execution, tied by their parent ids. OTLP export requests
    # are one file too: a trace's spans and log events can stand in several, and one can hold
    # several traces, so they are grouped by traceId (otel_genai.runs).
    return type(value) is list and bool(value) and not otel_genai.is_export_list(value) and all(
        type(item) is dict and not RUN_FIELDS.isdisjoint(item) and "run_type" not in item for item in value)


def _or_error(read: Callable[[Any, str], Trace], value: Any, name: str) -> Trace | TraceError:
    try:
        return _reading(read, value, name)
    except TraceError as error:
        return error


def _reading(read: Callable[[Any, str], Trace], value: Any, name: str) -> Trace:
    try:
        # Every object a reader makes stays alive until the Trace is built: the collector
        # could free nothing, and would walk them all again and again.
        with collector_paused():
            return read(value, name)
    except RecursionError:  # a value built in Python can nest deeper than the stack
        raise TraceError([Diagnostic(TOO_DEEP, "the trace is nested too deeply to read", file=name)]) from None


def format_module(format: str, name: str) -> ModuleType:
    """The reader module of the format called ``format``, or TraceError B024."""
    module = FORMATS.get(format) if isinstance(format, str) else None
    if module is None:
        hint = isinstance(format, str) and did_you_mean(format, FORMATS) or "formats: " + ", ".join(FORMAT_NAMES)
        raise TraceError([Diagnostic(UNKNOWN_FORMAT, f"no trace format '{format}'", hint=hint, file=name)])
    return module


# A bundle handed to a trace reader (admiss import of a bundle file): what to run instead.
_BUNDLE_HINT = ('this is an evidence bundle (it has "evidence"), not a trace: check it with '
                "admiss check --rubric FILE (rubric.check(bundle) in Python)")


def _is_bundle(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("evidence"), list)


def detect(value: Any, name: str = "<input>") -> ModuleType:
    """The reader module of the first format ``value`` matches, or TraceError B020 saying,
    for each format, the JSON path where the value stopped matching it and why."""
    misses = []
    for module in FORMATS.values():
        miss = module.mismatch(value)
        if miss is None:
            return module
        misses.append((module.NAME, miss))
    first = Diagnostic(NO_FORMAT, "not a trace in any known format (tried " + ", ".join(FORMAT_NAMES) + ")",
                       hint=_BUNDLE_HINT if _is_bundle(value) else
                       "name the format to see all of its errors (--trace FORMAT; in Python, trace_format= "
                       "or read_trace(..., format=))", file=name)
    raise TraceError([first] + [Diagnostic(NO_FORMAT, f"not {fmt}: {path}: {why}", file=name)
                                for fmt, (path, why) in misses])
