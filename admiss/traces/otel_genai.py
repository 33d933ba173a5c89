"""OpenTelemetry GenAI spans: an OTLP JSON export (``resourceSpans[].scopeSpans[].spans[]``)
following the GenAI semantic conventions.

Spans are read in order of ``startTimeUnixNano`` (ties in file order). A span's
``gen_ai.operation.name`` says what it is:

- ``execute_tool``: a tool call (``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
  ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``). When an earlier chat span's
  output requested the call (same id), the span is that call's result; otherwise it is the
  call and its result. It is an error when the span's ``status.code`` is ERROR (``2`` or
  ``"STATUS_CODE_ERROR"``) or it has an ``error.type`` attribute; with neither and no
  result recorded, the call has no result.
- ``chat``, ``generate_content``, ``text_completion``: a model call. Its
  ``gen_ai.system_instructions`` give a system step (when they differ from the last ones
  read); of its ``gen_ai.input.messages``, the messages after the last assistant message
  are new (the rest is history that earlier spans gave): their user and system texts give
  steps and their ``tool_call_response`` parts answer calls no tool span answered; its
  ``gen_ai.output.messages`` give assistant text (text parts joined by newlines, where the
  first stands), ``reasoning`` steps and tool calls (``tool_call`` parts).
- any other operation (``invoke_agent``, ``create_agent``, ``embeddings``), or none: skipped.

Attributes are looked up on the span, then on its events. Values are OTLP JSON AnyValues
(``{"stringValue": ...}``, ``intValue``, ``kvlistValue``, ...); message lists and tool
arguments or results given as JSON text are parsed.

Content written as log events (``resourceLogs[].scopeLogs[].logRecords[]``, in the same
object as the spans, or in lines of their own as the OpenTelemetry Collector's file exporter
writes them) is read with the span its ``traceId`` and ``spanId`` name, in file order:

- ``gen_ai.client.inference.operation.details``: its ``gen_ai.input.messages``,
  ``gen_ai.output.messages`` and ``gen_ai.system_instructions`` attributes are read as a
  chat span's (when the span holds them too, they must be the same);
- ``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
  ``gen_ai.tool.message`` (the request's messages; those after the last assistant one are
  new: system and user ``content`` give steps, a tool message's ``content`` answers the
  call its ``id`` names) and ``gen_ai.choice`` (the reply: its ``message.content`` is
  assistant text, its ``message.tool_calls`` tool calls), the events of the OpenAI
  instrumentation's default mode.

A log event names its event by ``eventName`` (or an ``event.name`` attribute); others are
skipped. A GenAI event tied to no span in the file is refused (B032); a file whose GenAI
events carry no content, and whose spans none, is refused as one with no content (B031).

A file of several traces (a Collector's file, a service's dump: spans of many traces,
interleaved) holds one run per ``traceId`` (``runs``), in order of each trace's first span;
a log record goes with its trace. Records naming a trace no span has are a run of their own
when one of them is a GenAI event (refused, B032: its content has no span to stand in);
other such records (an application's own logs) are skipped in the first run. ``read`` of a
file of several traces is refused (B026): one trace is one run.
"""

from __future__ import annotations

from collections import deque
from functools import partial
from typing import Any, Callable

from admiss.bundle import repeated_key
from admiss.errors import DOCS_URL, TraceError
from admiss.traces.build import DANGLING, Steps, error_in, fail, field, int_text, short, text_error, type_word, typed
from admiss.traces.steps import ASSISTANT_TEXT, ERROR, OK, REASONING, SYSTEM, TOOL_CALL, USER, Step, StepRef, Trace, loads_json

NAME = "otel_genai"
CHAT_OPERATIONS = frozenset(("chat", "generate_content", "text_completion"))
_ERROR_CODES = (2, "2", "STATUS_CODE_ERROR")
_ROLES = {"user": USER, "system": SYSTEM}
# The log events of a model call: the one of the latest conventions, and the default mode's.
DETAILS, CHOICE = "gen_ai.client.inference.operation.details", "gen_ai.choice"
_MESSAGE_EVENTS = {f"gen_ai.{role}.message": role for role in ("system", "user", "assistant", "tool")}
# The attributes of a model call's content.
_CONTENT = frozenset(("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"))
# The attributes the reader reads: an event may repeat one only with the span's own value.
_READ = frozenset(("gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.tool.call.arguments",
                   "gen_ai.tool.call.result", "gen_ai.input.messages", "gen_ai.output.messages",
                   "gen_ai.system_instructions", "error.type"))


def is_line(value: Any) -> bool:
    """Whether ``value`` is one OTLP JSON export request (spans or logs), a line of a file the
    Collector's file exporter writes."""
    return type(value) is dict and ("resourceSpans" in value or "resourceLogs" in value)


def is_export_list(value: Any) -> bool:
    """Whether ``value`` is an array of OTLP export requests (a Collector file's lines): one
    file, whose spans and log records are grouped by trace, not a run per item."""
    return type(value) is list and bool(value) and all(is_line(item) for item in value)


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not an OTLP JSON export of spans (and their log events), or
    None when it is one: an object, or an array of export requests."""
    if is_export_list(value):
        return None
    if not isinstance(value, dict) or ("resourceSpans" not in value and "resourceLogs" not in value):
        return "$", "no \"resourceSpans\" array (an OTLP JSON trace export)"
    for key in ("resourceSpans", "resourceLogs"):
        if key in value and not isinstance(value[key], list):
            return key, "not an array"
    return None


# The OTLP nestings of spans and of log records.
SPANS, LOGS = ("resourceSpans", "scopeSpans", "spans"), ("resourceLogs", "scopeLogs", "logRecords")
# B026: a file of several traces read as one trace (each trace is a run).
MANY_TRACES = "B026"
# A trace's spans and its log records, each as (object, path).
Group = tuple["str | None", list, list]


def read(value: Any, name: str) -> Trace:
    """The Trace of OTLP JSON ``value`` holding one trace; TraceError at the first element that
    breaks the format, or B026 when it holds several traces."""
    [(_, spans, records)] = one_trace(conversations(traces_of(_exports(value, name), name)), name)
    return _read_trace(spans, records, name)


def runs(value: Any) -> list[tuple[str, Callable[[str], Trace]]] | None:
    """Each trace of ``value``: ``traceId=ID`` and what reads it given its name (``""`` for a
    file of one trace); None when ``value`` breaks the format (``read`` says where)."""
    return trace_runs(value, _read_trace, lambda exports: conversations(traces_of(exports, NAME)))


def trace_runs(value: Any, read_group: Callable[[list, list, str], Trace],
               grouped: Callable[[list], list[Group]]) -> list[tuple[str, Callable[[str], Trace]]] | None:
    """The runs of an OTLP value, ``grouped(exports)``, each read by ``read_group(spans, records, name)``."""
    try:
        groups = grouped(_exports(value, NAME))
    except TraceError:
        return None
    if len(groups) == 1:
        return [("", partial(read_group, groups[0][1], groups[0][2]))]
    return [(f"traceId={trace_id or '(none)'}", partial(read_group, spans, records)) for trace_id, spans, records in groups]


def one_trace(groups: list[Group], name: str) -> list[Group]:
    """``groups`` when they are one trace; else TraceError B026 at the first element of the second."""
    if len(groups) > 1:
        second = (groups[1][1] or groups[1][2])[0][1]
        ids = ", ".join(short(str(trace_id)) for trace_id, _, _ in groups[:3]) + (", ..." if len(groups) > 3 else "")
        fail(name, second, f"a file of {len(groups)} traces (traceId {ids}): one trace is one run, and this "
             "element starts the second", MANY_TRACES,
             hint="read each trace as a run of its own: admiss check and admiss import do; in Python, "
                  "rubric.check_runs or admiss.traces.read.read_traces")
    return groups


def traces_of(exports: list[tuple[dict, str]], name: str, logs: bool = True) -> list[Group]:
    """The traces of ``exports``, each its traceId, spans and log records, in order of its
    first span's start (ties in file order); one group when there are no spans. Records of a
    trace with no spans are a group of their own when one is a GenAI event; other such
    records go with the first trace (where they are skipped)."""
    records = _items(exports, name, *LOGS) if logs else []
    by_trace: dict[str | None, tuple[list, list]] = {}
    for span, where in _items(exports, name, *SPANS):
        trace_id = span.get("traceId")
        key = trace_id if type(trace_id) is str and trace_id else None
        group = by_trace.get(key)
        if group is None:  # not setdefault: its default pair would be made for every span
            group = by_trace[key] = ([], [])
        group[0].append((span, where))
    if not by_trace:
        return [(None, [], records)]
    stray: dict[str | None, list] = {}
    for record, where in records:
        trace_id = _id(record, "traceId", name, where)
        (by_trace[trace_id][1] if trace_id in by_trace else stray.setdefault(trace_id, [])).append((record, where))
    groups = [(trace_id, spans, held) for trace_id, (spans, held) in by_trace.items()]
    if len(groups) > 1:  # one trace (most files) needs no start times here: its spans are sorted once, to read
        groups.sort(key=lambda group: min(_start(span, name, where) for span, where in group[1]))
    for trace_id, held in stray.items():
        if any(_event_name(record, name, where)[0].startswith("gen_ai.") for record, where in held):
            groups.append((trace_id, [], held))
        else:
            groups[0][2].extend(held)
    return groups


def conversations(groups: list[Group]) -> list[Group]:
    """``groups`` (traces), a trace joined to an earlier trace's run when its requests name a
    call that trace asked for (in their history or their results) and it did not: an app with
    no span around its agent loop writes each model call as a trace of its own, each request
    carrying the conversation so far. A joined run's traceId is its traces' ids joined by "+".
    When a trace cannot be read, the file is one run, so its error is the file's."""
    if len(groups) == 1:
        return groups
    run_of: list[int] = []  # each group's run, a union-find over group indices
    asked: dict[str, int] = {}  # each call id to the latest group whose trace asked for it

    def root(i: int) -> int:
        while run_of[i] != i:
            run_of[i] = i = run_of[run_of[i]]
        return i

    for i, (_, spans, records) in enumerate(groups):
        run_of.append(i)
        if not spans:
            continue  # log records of no span: a run refused (B032), which asks for no call
        named: set[str] = set()
        try:
            own = {step.ref.tool_call_id for step in _read_trace(spans, records, NAME, named).steps
                   if step.type == TOOL_CALL and step.ref.tool_call_id is not None}
        except TraceError:
            return [(groups[0][0], [span for group in groups for span in group[1]],
                     [record for group in groups for record in group[2]])]
        for call_id in named - own:
            if call_id in asked:
                run_of[root(asked[call_id])] = root(i)
        asked.update(dict.fromkeys(own, i))
    runs: dict[int, list[Group]] = {}
    for i, group in enumerate(groups):
        runs.setdefault(root(i), []).append(group)
    return [joined[0] if len(joined) == 1 else
            ("+".join(str(trace_id) for trace_id, _, _ in joined), [span for _, spans, _ in joined for span in spans],
             [record for _, _, records in joined for record in records]) for joined in runs.values()]


def _read_trace(spans: list, records: list, name: str, elsewhere: set[str] | None = None) -> Trace:
    """The Trace of one trace's spans and log records (``elsewhere``: see ``_Reading``)."""
    reading = _Reading(Steps(NAME, name), name, _by_span(records, name), elsewhere)
    ordered = _in_order(spans, name)
    for span, where in ordered:
        reading.span(span, where)
    reading.orphans()
    trace = reading.steps.trace(reading.model)
    if reading.logged and not reading.logged_content and not reading.span_content:
        fail(name, _where_logs(records), f"{reading.logged} GenAI log events, none with content: content capture "
             "was off where the trace was written", NO_CONTENT, hint=_CAPTURE_HINT)
    if not trace.steps and (reading.contentless or ordered and not reading.operations):
        fail(name, "resourceSpans", _no_content(len(ordered), reading), NO_CONTENT, hint=_CAPTURE_HINT)
    return trace


def _exports(value: Any, name: str) -> list[tuple[dict, str]]:
    """The export objects ``value`` holds, each with the path prefix of its elements."""
    if type(value) is list:
        return [(typed(item, dict, name, f"$[{i}]"), f"$[{i}].") for i, item in enumerate(value)]
    typed(value, dict, name, "$")
    if "resourceSpans" not in value and "resourceLogs" not in value:
        fail(name, "$", "no \"resourceSpans\": an OTel GenAI trace is an OTLP JSON export")
    return [(value, "")]


def _where_logs(records: list) -> str:
    """The path of the ``resourceLogs`` that holds the first of ``records``."""
    where = records[0][1]
    return where[:where.index("resourceLogs") + len("resourceLogs")]


# B031: spans that hold no agent content a reader can read.
NO_CONTENT = "B031"
_CAPTURE_HINT = ("turn content capture on where the trace is written: for the OpenTelemetry GenAI "
                 "instrumentations, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true and export the log "
                 "events with the spans (resourceLogs), or OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental "
                 "with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only (content on the spans); for "
                 f"Google ADK, ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=true; see {DOCS_URL}traces.md")
# B032: a GenAI log event tied to no span in the file.
NO_SPAN = "B032"


def _no_content(spans: int, reading: "_Reading") -> str:
    """What a file of spans that gave no step held, for B031."""
    if reading.contentless:
        return (f"{spans} spans, {reading.contentless} of them model calls with no messages: the content was not "
                "captured (or went to log events that are not in the file)")
    found = ", ".join(f"{prefix}.*" for prefix in sorted(reading.foreign)[:6]) or "none"
    return f"{spans} spans, none with a gen_ai.operation.name (attributes found: {found}): no GenAI content"


def _in_order(spans: list, name: str) -> list[tuple[dict, str]]:
    """``spans`` (each with its path) by start time (ties in file order)."""
    starts = [_start(span, name, where) for span, where in spans]
    # Exporters write most spans in order already: then no sort is needed. Else sorted by
    # (start, index) pairs: the index differs in every pair, so no span is ever compared.
    if all(a <= b for a, b in zip(starts, starts[1:])):
        return spans
    return [spans[i] for _, i in sorted(zip(starts, range(len(starts))))]


def _by_span(records: list, name: str) -> dict[tuple[str | None, str | None], list]:
    """Log ``records`` (each with its path) by the (traceId, spanId) they name, in file order."""
    found: dict[tuple[str | None, str | None], list] = {}
    for record, where in records:
        key = (_id(record, "traceId", name, where), _id(record, "spanId", name, where))
        found.setdefault(key, []).append((record, where))
    return found


def _items(exports: list[tuple[dict, str]], name: str, resources: str, scopes: str, items: str) -> list:
    """Each object of the OTLP nesting ``resources[].scopes[].items[]`` of ``exports``, with its path."""
    found = []
    for value, prefix in exports:
        if resources not in value:
            continue
        for r, resource in enumerate(typed(value[resources], list, name, f"{prefix}{resources}")):
            at = f"{prefix}{resources}[{r}]"
            for s, scope in enumerate(field(typed(resource, dict, name, at), scopes, list, name, at)):
                at_scope = f"{at}.{scopes}[{s}]"
                for k, item in enumerate(field(typed(scope, dict, name, at_scope), items, list, name, at_scope)):
                    where = f"{at_scope}.{items}[{k}]"
                    found.append((typed(item, dict, name, where), where))
    return found


def _id(holder: dict, key: str, name: str, where: str) -> str | None:
    value = holder.get(key)
    return None if value is None or value == "" else typed(value, str, name, f"{where}.{key}")


def _event_name(record: dict, name: str, where: str) -> tuple[str, dict]:
    """A log record's event name ("" when it has none) and its attributes."""
    attributes = _attributes(record.get("attributes", []), name, where)
    named, attribute = record.get("eventName"), attributes.get("event.name")
    if named not in (None, "") and attribute is not None and named != attribute:
        fail(name, f"{where}.eventName", "differs from the record's event.name attribute: which event "
             "it is is ambiguous", hint="an exporter writes one of them; keep one")
    event = named if named not in (None, "") else attribute
    return (typed(event, str, name, f"{where}.eventName") if event is not None else ""), attributes


def _start(span: dict, name: str, where: str) -> int:
    start = span.get("startTimeUnixNano", 0)
    if type(start) is int:
        return start
    if type(start) is str and len(start) <= 20 and start.isdigit() and start.isascii():  # as OTLP JSON writes it
        return int(start)
    nanoseconds = int_text(start) if type(start) is str else None
    if nanoseconds is not None and nanoseconds >= 0:
        return nanoseconds
    fail(name, f"{where}.startTimeUnixNano", f"must be a number of nanoseconds, not "
         f"{'the text ' + repr(short(start)) if type(start) is str else type_word(start)}")


def any_value(value: Any, name: str, where: str) -> Any:
    """The plain value of an OTLP JSON AnyValue (``{"stringValue": "x"}`` is ``"x"``)."""
    typed(value, dict, name, where)
    if not value:
        return None
    kind, inner = next(iter(value.items()))
    if kind == "stringValue" or kind == "boolValue" or kind == "doubleValue" or kind == "bytesValue":
        return inner
    if kind == "intValue":
        number = int_text(inner) if type(inner) is str else None
        return inner if number is None else number  # OTLP JSON writes a 64-bit integer as text
    if kind == "arrayValue":
        values = field(typed(inner, dict, name, f"{where}.arrayValue"), "values", list, name, f"{where}.arrayValue") \
            if inner else []
        return [any_value(item, name, f"{where}.arrayValue.values[{i}]") for i, item in enumerate(values)]
    if kind == "kvlistValue":
        return _attributes(typed(inner, dict, name, f"{where}.kvlistValue").get("values", []), name,
                           f"{where}.kvlistValue", "values")
    fail(name, where, f"unknown AnyValue kind '{kind}'")


def _attributes(pairs: Any, name: str, holder: str, member: str = "attributes") -> dict[str, Any]:
    """``{key: plain value}`` of an OTLP key-value list, the ``member`` of the element at
    ``holder`` (the list's path is made only for an attribute that is no text)."""
    out = {}
    if type(pairs) is not list:
        typed(pairs, list, name, f"{holder}.{member}")
    for i, pair in enumerate(pairs):
        # Nearly every attribute is a text (``{"key": k, "value": {"stringValue": v}}``): read
        # here, with no path made and no call, it took a third off reading an OTLP file's
        # attributes. Anything else is read by the checks below.
        if type(pair) is dict:
            key, value = pair.get("key"), pair.get("value")
            if type(key) is str and type(value) is dict and len(value) == 1 and "stringValue" in value \
                    and key not in out:
                out[key] = value["stringValue"]
                continue
        at = f"{holder}.{member}[{i}]"
        key = field(typed(pair, dict, name, at), "key", str, name, at)
        if key in out:  # which of the two a reader keeps is the reading that could pass a failed call
            fail(name, f"{at}.key", f"attribute '{short(key)}' given twice in one attribute list",
                 hint="an exporter writes each key once; keep one")
        out[key] = any_value(pair.get("value", {}), name, f"{at}.value")
    return out


class _Reading:
    """The state of one pass over the spans: the steps, the last system instructions read,
    the model of the last chat span, the log records not yet joined to their span."""

    def __init__(self, steps: Steps, name: str, logs: dict[tuple[str | None, str | None], list],
                 elsewhere: set[str] | None = None):
        self.steps, self.name = steps, name
        # While seeing which traces are one conversation: the call ids that its requests'
        # history and results name (a result for no call of the trace is noted, not refused).
        self.elsewhere = elsewhere
        self.system: str | None = None
        self.model: str | None = None
        self.contentless = 0  # model-call spans with no content captured
        self.span_content = 0  # model-call spans with content on the span
        self.operations = 0  # spans with a GenAI operation of any kind
        self.foreign: set[str] = set()  # attribute namespaces of the spans with no GenAI operation
        self.logs = logs
        self.joined: set[tuple[str, str]] = set()  # the (traceId, spanId) whose log records were read
        self.logged = 0  # GenAI log events read
        self.logged_content = 0  # of them, those that carry content
        self.requested: dict[str | None, deque[Step]] = {}  # the calls model outputs asked for, by tool

    def span(self, span: dict, where: str) -> None:
        attributes = _attributes(span.get("attributes", []), self.name, where)
        events = span.get("events", [])
        exceptions: list[str] = []
        for i, event in enumerate(typed(events, list, self.name, f"{where}.events") if events != [] else ()):
            at = f"{where}.events[{i}]"
            typed(event, dict, self.name, at)
            for key, value in _attributes(event.get("attributes", []), self.name, at).items():
                if key in _READ and key in attributes and attributes[key] != value:
                    fail(self.name, f"{at}.attributes", f"'{key}' here differs from the span's or an earlier "
                         "event's: which one holds is ambiguous", hint="an exporter writes each key once; keep one")
                if event.get("name") == "exception" and key == "exception.message":
                    exceptions.append(str(value))
                attributes.setdefault(key, value)
        span_id, trace_id = span.get("spanId"), span.get("traceId")
        span_id = span_id if type(span_id) is str else None
        trace_id = trace_id if type(trace_id) is str else None
        operation = attributes.get("gen_ai.operation.name")
        records = self.records(trace_id, span_id, where) if self.logs or self.joined else None
        named = type(operation) is str
        self.operations += named
        if named and operation == "execute_tool" and records is None:
            self.tool(span, attributes, where, span_id, trace_id, exceptions)  # it makes the span's one reference
            return
        ref = StepRef(NAME, where, None, None, span_id, None, trace_id)
        if named and operation in CHAT_OPERATIONS:
            logged = self.logged_content
            self.span_content += not _CONTENT.isdisjoint(attributes)
            self.chat(attributes, ref)
            if records:
                self.events(records, attributes, ref)
            self.contentless += _CONTENT.isdisjoint(attributes) and self.logged_content == logged
            return
        for _, at in records or ():
            self.steps.skip(StepRef(NAME, at, None, None, span_id, None, trace_id), "log record of a span that is "
                            "no model call")
        if not named:
            self.steps.skip(ref, "span with no GenAI operation")
            self.foreign.update(key.split(".", 1)[0] for key in attributes if "." in key)
        elif operation == "execute_tool":
            self.tool(span, attributes, where, span_id, trace_id, exceptions)
        else:
            self.steps.skip(ref, f"{operation} span")

    def records(self, trace_id: str | None, span_id: str | None, where: str) -> list | None:
        """The log records tied to the span with these ids (at ``where``), if any."""
        if trace_id is None or span_id is None:
            return None
        key = (trace_id, span_id)
        if key in self.joined:
            fail(self.name, f"{where}.spanId", f"a second span with spanId '{short(span_id)}' in trace "
                 f"'{short(trace_id)}': which one its log events belong to is ambiguous", NO_SPAN,
                 hint="each span of a trace has its own spanId")
        records = self.logs.pop(key, None)
        if records is not None:
            self.joined.add(key)
        return records

    def orphans(self) -> None:
        """The log records no span of the file named: a GenAI event is refused (its content
        would be lost), any other record skipped."""
        for (trace_id, span_id), records in self.logs.items():
            for record, where in records:
                event = _event_name(record, self.name, where)[0]
                if event.startswith("gen_ai."):
                    fail(self.name, where, f"a {short(event)} log event tied to no span in the file "
                         f"(traceId {short(str(trace_id))}, spanId {short(str(span_id))})", NO_SPAN,
                         hint="export the spans with their log events (the Collector: one file exporter in both "
                              "the traces and the logs pipelines)")
                self.steps.skip(StepRef(NAME, where, None, None, span_id, None, trace_id),
                                "log record of no span in the file")

    def events(self, records: list, attributes: dict, span: StepRef) -> None:
        """The content of a model call's log events (``attributes``: the span's)."""
        inputs, choices = [], []
        for record, where in records:
            event, record_attributes = _event_name(record, self.name, where)
            ref = StepRef(NAME, where, None, None, span.span_id, None, span.trace_id)
            if event == DETAILS:
                self.logged += 1
                self.details(record_attributes, attributes, ref)
            elif event in _MESSAGE_EVENTS or event == CHOICE:
                self.logged += 1
                body = self.body(record, where)
                (choices if event == CHOICE else inputs).append((_MESSAGE_EVENTS.get(event), body, where))
            else:
                self.steps.skip(ref, f"log record '{short(event)}'" if event else "log record with no event name")
        if (inputs or choices) and not _CONTENT.isdisjoint(attributes):
            fail(self.name, inputs[0][2] if inputs else choices[0][2], "a model call's messages both on its span "
                 "and in log events: which ones hold is ambiguous", hint="keep one of them")
        self.event_inputs(inputs, span)
        for body, where in ((body, where) for _, body, where in choices):
            self.choice(body, where, span)

    def body(self, record: dict, where: str) -> dict | None:
        """A GenAI event's body as an object (None when it has none)."""
        if record.get("body") is None:
            return None
        value = any_value(record["body"], self.name, f"{where}.body")
        if type(value) is str:  # an exporter that writes the body as JSON text
            value = _json(value, self.name, f"{where}.body")
        return None if value is None else typed(value, dict, self.name, f"{where}.body")

    def details(self, record_attributes: dict, attributes: dict, ref: StepRef) -> None:
        """A ``gen_ai.client.inference.operation.details`` event: the content attributes of its span."""
        content = {key: record_attributes[key] for key in _CONTENT if key in record_attributes}
        self.logged_content += bool(content)
        held = [key for key in content if key in attributes]
        for key in held:
            if _json(attributes[key], self.name, ref.path) != _json(content[key], self.name, f"{ref.path}.attributes"):
                fail(self.name, f"{ref.path}.attributes", f"'{key}' here differs from its span's or an earlier "
                     "event's: which one holds is ambiguous", hint="keep one")
        if held or not content:
            self.steps.skip(ref, "content its span holds too" if held else "operation details with no content")
            return
        attributes.update(content)
        self.chat(content, ref)

    def event_inputs(self, inputs: list, span: StepRef) -> None:
        """The message events of a model call's request: those after the last assistant one are new."""
        start = max((i + 1 for i, (role, _, _) in enumerate(inputs) if role == "assistant"), default=0)
        if self.elsewhere is not None:
            self.mention(call for _, body, _ in inputs[:start] if body is not None
                         for call in (body.get("tool_calls") if isinstance(body.get("tool_calls"), list) else [body]))
        for i, (role, body, where) in enumerate(inputs):
            self.logged_content += body is not None and "content" in body
            ref = StepRef(NAME, where, i, None, span.span_id, None, span.trace_id)
            if i < start:
                self.steps.skip(ref, "a message earlier model calls gave")
            elif role == "tool":
                self.event_tool(body, where, i, span)
            elif role in _ROLES:
                text = _content_text(body.get("content") if body else None, self.name, f"{where}.body.content")
                if text:
                    self.steps.add(Step(_ROLES[role], ref, text))
                else:
                    self.steps.skip(ref, f"{role} message with no content captured")
            else:
                self.steps.skip(ref, f"{role} message")

    def event_tool(self, body: dict | None, where: str, i: int, span: StepRef) -> None:
        """A ``gen_ai.tool.message`` event: the result of the call its ``id`` names."""
        if body is None or "id" not in body:
            fail(self.name, f"{where}.body.id", "missing: a tool message event names the call it answers")
        call_id = typed(body["id"], str, self.name, f"{where}.body.id")
        ref = StepRef(NAME, where, i, call_id, span.span_id, None, span.trace_id)
        if "content" not in body:  # its call stays open, and has no result
            self.steps.skip(ref, "tool message with no content captured")
        elif self.steps.is_open(call_id):
            content = body["content"]
            if type(content) is list:
                content = _content_text(content, self.name, f"{where}.body.content")
            if isinstance(content, str):
                self.steps.answer(call_id, content, text_error(content), ref, "body.id", from_text=True)
            else:
                self.steps.answer(call_id, content, error_in(content), ref, "body.id")
        elif self.steps.has_call(call_id):
            self.steps.skip(ref, "a result an earlier event already gave")
        else:
            self.dangling(call_id, f"{where}.body.id", ref)

    def choice(self, body: dict | None, where: str, span: StepRef) -> None:
        """A ``gen_ai.choice`` event: the model's reply, its text and tool calls."""
        ref = StepRef(NAME, where, None, None, span.span_id, None, span.trace_id)
        message = body.get("message") if body else None
        if message is None:
            self.steps.skip(ref, "choice with no message")
            return
        at = f"{where}.body.message"
        typed(message, dict, self.name, at)
        text = _content_text(message.get("content"), self.name, f"{at}.content")
        calls = message.get("tool_calls")
        captured = "content" in message
        if text:
            self.steps.add(Step(ASSISTANT_TEXT, ref, text))
        for j, call in enumerate(typed(calls, list, self.name, f"{at}.tool_calls") if calls is not None else ()):
            call_at = f"{at}.tool_calls[{j}]"
            function = field(typed(call, dict, self.name, call_at), "function", dict, self.name, call_at)
            call_id = call.get("id")
            call_id = None if call_id is None else typed(call_id, str, self.name, f"{call_at}.id")
            captured = captured or "arguments" in function
            self.asking(self.steps.call(
                StepRef(NAME, call_at, j, call_id, span.span_id, None, span.trace_id),
                field(function, "name", str, self.name, f"{call_at}.function"), function.get("arguments"), call_id,
                "id"))
        self.logged_content += captured
        if not text and not calls:
            self.steps.skip(ref, "choice with no content captured")

    def tool(self, span: dict, attributes: dict, where: str, span_id: str | None, trace_id: str | None,
             exceptions: list[str]) -> None:
        """An execute_tool span (at ``where``): a call's result, or the call and its result."""
        tool = attributes.get("gen_ai.tool.name")
        if not isinstance(tool, str):
            fail(self.name, f"{where}.attributes", "no gen_ai.tool.name string on an execute_tool span")
        call_id = attributes.get("gen_ai.tool.call.id")
        call_id = call_id if isinstance(call_id, str) else None
        ref = StepRef(NAME, where, None, call_id, span_id, None, trace_id)
        has_result = "gen_ai.tool.call.result" in attributes
        result = attributes.get("gen_ai.tool.call.result")
        self.span_content += has_result or "gen_ai.tool.call.arguments" in attributes
        from_text = isinstance(result, str)
        error = _span_error(span, attributes, exceptions)
        if error is None and has_result:
            error = text_error(result) if from_text else error_in(result)
        requested = call_id is not None and self.steps.is_open(call_id)  # by an earlier chat span's output
        # ADK names the model's function-call part by its own fallback id (name_index) and the
        # execute_tool span by the adk-... id it gave the call: the span is that call's execution.
        joined = None if requested or call_id is not None and self.steps.has_call(call_id) else self.asked(tool)
        if error is None and not has_result:
            if requested or joined is not None:  # the span is not the call itself, and gives it nothing
                self.steps.skip(ref, "execute_tool span with no result recorded" + (
                    f" (of the call at {joined.ref.path})" if joined is not None else ""))
            else:
                call = self.steps.call(ref, tool, attributes.get("gen_ai.tool.call.arguments"), call_id)
                call.error = _uncaptured(span)  # kept if nothing later answers the call
            return
        if requested:
            self.steps.answer(call_id, result, error, ref, "attributes", from_text=from_text)
        elif joined is not None:  # one call, one step: the model's part, its result at this span
            self.steps.resolve(joined, result, error, ref, from_text)
        else:  # the result stands in the call's own span: no result_ref apart from the call
            call = self.steps.call(ref, tool, attributes.get("gen_ai.tool.call.arguments"), call_id)
            self.steps.resolve(call, result, error, None, from_text)

    def asking(self, call: Step) -> None:
        """A call a model call's output asked for, which an execute_tool span may execute."""
        queue = self.requested.get(call.tool_name)
        if queue is None:
            self.requested[call.tool_name] = deque((call,))
        else:
            queue.append(call)

    def asked(self, tool: str) -> Step | None:
        """The earliest call of ``tool`` a model call's output asked for that has no result yet."""
        queue = self.requested.get(tool)
        while queue and queue[0].outcome is not None:
            queue.popleft()
        return queue[0] if queue else None

    def chat(self, attributes: dict, ref: StepRef) -> None:
        where = ref.path
        model = attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model")
        if isinstance(model, str):
            self.model = model
        if "gen_ai.system_instructions" in attributes:
            at = f"{where}.attributes[\"gen_ai.system_instructions\"]"
            text = _parts_text(_json(attributes["gen_ai.system_instructions"], self.name, at), self.name, at)
            at_ref = StepRef(NAME, at, None, None, ref.span_id, None, ref.trace_id)
            if text and text != self.system:
                self.system = text
                self.steps.add(Step(SYSTEM, at_ref, text))
            else:
                self.steps.skip(at_ref, "the system instructions already read" if text else "no text")
        if "gen_ai.input.messages" in attributes:
            at = f"{where}.attributes[\"gen_ai.input.messages\"]"
            self.inputs(typed(_json(attributes["gen_ai.input.messages"], self.name, at), list, self.name, at), at, ref)
        if "gen_ai.output.messages" in attributes:
            at = f"{where}.attributes[\"gen_ai.output.messages\"]"
            self.outputs(typed(_json(attributes["gen_ai.output.messages"], self.name, at), list, self.name, at), at,
                         ref)

    def inputs(self, messages: list, where: str, span: StepRef) -> None:
        start = 0
        for i in range(len(messages) - 1, -1, -1):  # from the end: a request holds the whole conversation
            message = messages[i]
            if isinstance(message, dict) and message.get("role") == "assistant":
                start = i + 1
                break
        if self.elsewhere is not None:
            self.mention(part for message in messages[:start] if isinstance(message, dict)
                         and isinstance(message.get("parts"), list) for part in message["parts"])
        for i in range(start, len(messages)):
            at = f"{where}[{i}]"
            message = typed(messages[i], dict, self.name, at)
            role = field(message, "role", str, self.name, at)
            parts = field(message, "parts", list, self.name, at)
            ref = StepRef(NAME, at, i, None, span.span_id, None, span.trace_id)
            if role in _ROLES:
                text = _parts_text(parts, self.name, f"{at}.parts")
                # ADK sends a tool's response back in a user message
                responses = [j for j, part in enumerate(parts) if isinstance(part, dict)
                             and part.get("type") == "tool_call_response"]
                if text:
                    self.steps.add(Step(_ROLES[role], ref, text))
                elif not responses:
                    self.steps.skip(ref, f"{role} message with no text")
                if responses:
                    self.tool_responses([parts[j] for j in responses], f"{at}.parts", i, span, responses)
            elif role == "tool":
                self.tool_responses(parts, f"{at}.parts", i, span)
            else:
                fail(self.name, f"{at}.role", f"unknown role '{role}' after the last assistant message",
                     hint="roles: system, user, assistant, tool")

    def tool_responses(self, parts: list, where: str, i: int, span: StepRef, numbers: list[int] | None = None
                       ) -> None:
        """The parts of a tool message (``numbers``: where each stands in its message, when
        they are some of its parts)."""
        for n, part in enumerate(parts):
            j = numbers[n] if numbers is not None else n
            at = f"{where}[{j}]"
            typed(part, dict, self.name, at)
            call_id = field(part, "id", str, self.name, at) if part.get("type") == "tool_call_response" else None
            ref = StepRef(NAME, at, i, call_id, span.span_id, None, span.trace_id)
            if call_id is None:
                self.steps.skip(ref, f"{part.get('type')} part of a tool message")
            elif self.steps.is_open(call_id):
                result = part.get("response", part.get("result"))
                if isinstance(result, str):
                    self.steps.answer(call_id, result, text_error(result), ref, "id", from_text=True)
                else:
                    self.steps.answer(call_id, result, error_in(result), ref, "id")
            elif self.steps.has_call(call_id):
                self.steps.skip(ref, self.again(call_id, part.get("response", part.get("result"))))
            else:
                self.dangling(call_id, f"{at}.id", ref)

    def mention(self, items: Any) -> None:
        """Note the call ids of a request's history (its earlier calls and results: objects
        with an ``id``), while seeing which traces are one conversation."""
        self.elsewhere.update(item["id"] for item in items if isinstance(item, dict) and type(item.get("id")) is str)

    def dangling(self, call_id: str, where: str, ref: StepRef) -> None:
        """A result naming ``call_id``, which no call before it in the trace has: B022, or,
        while seeing which traces are one conversation, noted as a call another trace asked for."""
        if self.elsewhere is None:
            fail(self.name, where, f"a tool result for no tool call before it (id '{short(call_id)}')", DANGLING,
                 hint="a result must come after the tool call it answers, naming the call's id")
        self.elsewhere.add(call_id)
        self.steps.skip(ref, "a result for a call of another trace")

    def again(self, call_id: str, result: Any) -> str:
        """Why a response to the answered call ``call_id`` gives no step: its execute_tool span
        gave the result. When this one is a failure and the span's was not, the call fails (ADK
        sends a tool's error payload back in the function response): either record's failure
        is the call's."""
        error = text_error(result) if isinstance(result, str) else error_in(result)
        call = self.steps.calls[call_id][-1]
        if error is None or call.outcome != OK:
            return "a result its execute_tool span already gave"
        call.outcome, call.error = ERROR, error
        return "a failure its execute_tool span's result did not show: the call failed"

    def outputs(self, messages: list, where: str, span: StepRef) -> None:
        for i, message in enumerate(messages):
            at = f"{where}[{i}]"
            parts = message.get("parts") if type(message) is dict else None
            if type(parts) is not list:
                parts = field(typed(message, dict, self.name, at), "parts", list, self.name, at)
            texts, text_at, only_text = [], self.steps.position(), True
            for j, part in enumerate(parts):
                kind = _part_type(part, self.name, at, j)
                if kind == "text":
                    if not texts:
                        text_at = self.steps.position()
                    texts.append(_part_field(part, "content", self.name, at, j))
                    continue
                only_text = False
                part_at = f"{at}.parts[{j}]"
                if kind == "reasoning":
                    self.steps.add(Step(REASONING, StepRef(NAME, part_at, i, None, span.span_id, None, span.trace_id),
                                        _part_field(part, "content", self.name, at, j)))
                elif kind == "tool_call":
                    call_id = _part_field(part, "id", self.name, at, j)
                    self.asking(self.steps.call(
                        StepRef(NAME, part_at, i, call_id, span.span_id, None, span.trace_id),
                        _part_field(part, "name", self.name, at, j), part.get("arguments"), call_id, "id"))
                else:
                    self.steps.skip(StepRef(NAME, part_at, i, None, span.span_id, None, span.trace_id),
                                    f"{kind} part")
            text = "\n".join(texts)
            if text:
                self.steps.insert(text_at, Step(ASSISTANT_TEXT, StepRef(NAME, at, i, None, span.span_id, None, span.trace_id), text))
            elif only_text:
                self.steps.skip(StepRef(NAME, at, i, None, span.span_id, None, span.trace_id), "output message with no text")


# A message's parts are read with their paths made only for an error (``at``: the message's
# path, ``j``: the part's index): most parts have none, and making them was a tenth of the
# reading of an OTLP file.
def _part_type(part: Any, name: str, at: str, j: int) -> str:
    """The ``type`` of part ``j`` of the message at ``at``; B021 when it is no object with a text type."""
    kind = part.get("type") if type(part) is dict else None
    if type(kind) is str:
        return kind
    return field(typed(part, dict, name, f"{at}.parts[{j}]"), "type", str, name, f"{at}.parts[{j}]")


def _part_field(part: dict, key: str, name: str, at: str, j: int) -> str:
    """The text ``key`` of part ``j`` of the message at ``at``; B021 when it is missing or no text."""
    value = part.get(key)
    if type(value) is str:
        return value
    return field(part, key, str, name, f"{at}.parts[{j}]")


_OK_CODES = (1, "1", "STATUS_CODE_OK")


def _uncaptured(span: dict) -> str:
    """Why an execute_tool span that failed in no way gives its call no result: what its
    status says of the run (the result is still unknown, so the call stays no_result)."""
    status = span.get("status")
    ran = isinstance(status, dict) and status.get("code") in _OK_CODES
    return ("no result recorded: the span's status OK says the tool ran without an error; what it returned "
            "was not captured" if ran else "no result recorded, and the span sets no status")


def _span_error(span: dict, attributes: dict, exceptions: list[str]) -> str | None:
    """Why an execute_tool span failed: its ERROR status, its error.type, or an exception
    event (their messages kept as the reason); else None."""
    status = span.get("status")
    failed = isinstance(status, dict) and status.get("code") in _ERROR_CODES
    kind = attributes.get("error.type")
    if not failed and kind is None and not exceptions:
        return None
    message = status.get("message") if isinstance(status, dict) else None
    reasons = [str(reason) for reason in (kind, message) if reason]
    reasons += [text for text in exceptions if text and not any(text in reason for reason in reasons)]
    return short(": ".join(reasons)) if reasons else "status ERROR"


def _json(value: Any, name: str, where: str) -> Any:
    """A structured attribute as it is; one given as JSON text, parsed."""
    if not isinstance(value, str):
        return value
    try:
        parsed = loads_json(value)
    except (ValueError, RecursionError):
        fail(name, where, "not valid JSON")
    repeated = repeated_key(value, parsed)
    if repeated is not None:
        fail(name, where, f"its JSON gives the key at {repeated} twice in one object",
             hint="a decoder would silently keep the last one; keep one")
    return parsed


def _parts_text(parts: Any, name: str, where: str) -> str:
    """The ``content`` of the ``text`` parts of a part list, joined by newlines."""
    texts = []
    for j, part in enumerate(typed(parts, list, name, where)):  # paths made only for an error
        if type(part) is not dict:
            typed(part, dict, name, f"{where}[{j}]")
        if part.get("type") == "text":
            content = part.get("content")
            texts.append(content if type(content) is str else field(part, "content", str, name, f"{where}[{j}]"))
    return "\n".join(texts)


def _content_text(content: Any, name: str, where: str) -> str:
    """A message event's ``content``: its text, or the text of its content parts (OpenAI's
    ``[{"type": "text", "text": ...}]``) joined by newlines; "" when there is none."""
    if content is None or type(content) is str:
        return content or ""
    return "\n".join(typed(part["text"], str, name, f"{where}[{j}].text")
                     for j, part in enumerate(typed(content, list, name, where))
                     if typed(part, dict, name, f"{where}[{j}]").get("type") == "text" and "text" in part)
