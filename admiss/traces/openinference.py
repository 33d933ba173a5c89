"""OpenInference spans: an OTLP JSON export (``resourceSpans``) whose spans carry
OpenInference's attributes (``openinference.span.kind``, ``llm.*``, ``tool.*``), as its
instrumentations (OpenAI, LangChain, LlamaIndex, the Agents SDK, ...) write them.

Spans are read in order of ``startTimeUnixNano`` (ties in file order); a step's
``span_id`` is its span's. By ``openinference.span.kind``:

- ``LLM``: messages are flattened attributes, ``llm.input_messages.{i}.message.role`` /
  ``.content`` / ``.contents.{j}.message_content.text`` / ``.tool_calls.{k}.tool_call.id``
  / ``.function.name`` / ``.function.arguments`` / ``.tool_call_id``. Of the input messages
  only those after the last ``assistant`` one are new (the rest is history earlier spans
  gave): ``system`` and ``user`` messages give steps, a ``tool`` message answers the call
  its ``tool_call_id`` names when no TOOL span answered it. Each output message gives an
  ``assistant_text`` step and its tool calls. The model is ``llm.model_name``.
- ``TOOL``: the result of the call an LLM span asked for with the same ``tool_call.id``
  (with no id: the earliest open call of the same ``tool.name``); with none, the span is the
  call itself. ``input.value`` is the arguments, ``output.value`` the result.
- any other kind (CHAIN, AGENT, RETRIEVER, EMBEDDING, ...): skipped.

Errors: a TOOL span with an ERROR status or an ``exception`` event is an error (the status
message, or the exception's type and message), and so is one whose ``output.value`` is an
error by the rule for formats without an error flag; a TOOL span with neither and no
``output.value`` gives no result (outputs can be hidden, so such a span proves nothing). A
result given only in a later LLM span's input messages is judged by the rule for formats
without an error flag.
"""

from __future__ import annotations

from typing import Any, Callable

from admiss.traces.build import Steps, fail, short, text_error, typed
from admiss.traces.otel_genai import _attributes, _exports, _in_order, _span_error, is_export_list, one_trace, trace_runs, traces_of
from admiss.traces.steps import ASSISTANT_TEXT, SYSTEM, USER, Step, StepRef, Trace

NAME = "openinference"
KIND = "openinference.span.kind"
_ROLES = {"system": SYSTEM, "user": USER}


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not an OTLP export of OpenInference spans (an object, or an
    array of export requests), or None."""
    exports = value if is_export_list(value) else [value]
    if not all(isinstance(export, dict) and isinstance(export.get("resourceSpans"), list) for export in exports):
        return "$", "no \"resourceSpans\" array (an OTLP JSON trace export)"
    for export in exports:
        for resource in export["resourceSpans"]:
            for scope in _listed(resource, "scopeSpans"):
                for span in _listed(scope, "spans"):
                    # _listed inlined: every OTLP file's spans are walked here before the
                    # otel_genai reader is tried, and the call per span was a third of the walk.
                    attributes = span.get("attributes") if isinstance(span, dict) else None
                    for pair in attributes if isinstance(attributes, list) else ():
                        if isinstance(pair, dict) and pair.get("key") == KIND:
                            return None
    return "resourceSpans", f"no span has an {KIND} attribute"


def _listed(holder: Any, key: str) -> list:
    """``holder[key]`` when ``holder`` is an object and that is an array, else no items (the
    reader then says what breaks)."""
    items = holder.get(key) if isinstance(holder, dict) else None
    return items if isinstance(items, list) else []


def read(value: Any, name: str) -> Trace:
    """The Trace of an OTLP export of OpenInference spans of one trace; TraceError where it
    breaks, B026 when it holds several traces."""
    miss = mismatch(value)
    if miss is not None:  # spans of another convention would read as an empty run
        fail(name, miss[0], miss[1], hint="OpenInference spans carry openinference.span.kind (LLM, TOOL, ...)")
    [(_, spans, _)] = one_trace(traces_of(_exports(value, name), name, logs=False), name)
    return _read_spans(spans, [], name)


def runs(value: Any) -> list[tuple[str, Callable[[str], Trace]]] | None:
    """Each trace of ``value`` (``traceId=ID``; ``""`` for a file of one trace) and what reads
    it given its name; None when ``value`` breaks the format (``read`` says where)."""
    return None if mismatch(value) is not None else trace_runs(value, _read_spans, lambda exports: traces_of(exports, NAME, logs=False))


def _read_spans(spans: list, _records: list, name: str) -> Trace:
    """The Trace of one trace's spans (each with its path)."""
    steps = Steps(NAME, name)
    model = None
    for span, where in _in_order(spans, name):
        attributes = _attributes(span.get("attributes", []), name, where)
        span_id = span.get("spanId") if type(span.get("spanId")) is str else None
        trace_id = span.get("traceId") if type(span.get("traceId")) is str else None
        ref = StepRef(NAME, where, span_id=span_id, trace_id=trace_id)
        kind = attributes.get(KIND)
        if kind == "LLM":
            _llm(steps, attributes, ref, name)
            if type(attributes.get("llm.model_name")) is str:
                model = attributes["llm.model_name"]
        elif kind == "TOOL":
            _tool(steps, span, attributes, ref, name)
        else:
            steps.skip(ref, f"{kind} span" if type(kind) is str else "span with no OpenInference kind")
    return steps.trace(model)


def messages(attributes: dict, prefix: str) -> list[dict]:
    """The flattened messages under ``prefix`` (``llm.input_messages``), in index order, each
    as ``{"message.role": ..., ...}``; one pass over the attributes."""
    found: dict[int, dict] = {}
    start = len(prefix) + 1
    for key, value in attributes.items():
        if key.startswith(prefix) and key[start - 1:start] == ".":
            index, _, rest = key[start:].partition(".")
            if index.isdigit():
                found.setdefault(int(index), {})[rest] = value
    return [found[i] for i in sorted(found)]


def _numbered(message: dict, prefix: str) -> list[dict]:
    """The numbered parts of one message under ``prefix`` (``message.tool_calls``), in order."""
    return messages(message, prefix)


def _text(message: dict) -> str:
    content = message.get("message.content")
    if type(content) is str:
        return content
    return "\n".join(part["message_content.text"] for part in _numbered(message, "message.contents")
                     if type(part.get("message_content.text")) is str)


def _llm(steps: Steps, attributes: dict, ref: StepRef, name: str) -> None:
    given = messages(attributes, "llm.input_messages")
    start = max((i + 1 for i, m in enumerate(given) if m.get("message.role") == "assistant"), default=0)
    for i in range(start, len(given)):
        message = given[i]
        at = StepRef(NAME, f"{ref.path}.attributes[\"llm.input_messages.{i}\"]", i, span_id=ref.span_id, trace_id=ref.trace_id)
        role = message.get("message.role")
        if type(role) is str and role in _ROLES:
            text = _text(message)
            steps.add(Step(_ROLES[role], at, text=text)) if text else steps.skip(at, f"{role} message with no text")
        elif role == "tool":
            _tool_message(steps, message, at)
        else:
            steps.skip(at, f"{role!r} input message")
    for i, message in enumerate(messages(attributes, "llm.output_messages")):
        base = f"{ref.path}.attributes[\"llm.output_messages.{i}\"]"
        text = _text(message)
        if text:
            steps.add(Step(ASSISTANT_TEXT, StepRef(NAME, base, i, span_id=ref.span_id, trace_id=ref.trace_id), text=text))
        for k, call in enumerate(_numbered(message, "message.tool_calls")):
            call_id = call.get("tool_call.id") if type(call.get("tool_call.id")) is str else None
            tool = call.get("tool_call.function.name")
            if type(tool) is not str:
                fail(name, f"{base}.message.tool_calls[{k}]", "no tool_call.function.name string")
            steps.call(StepRef(NAME, f"{base}.message.tool_calls[{k}]", i, call_id, span_id=ref.span_id, trace_id=ref.trace_id), tool,
                       call.get("tool_call.function.arguments", "{}"), call_id)


def _tool_message(steps: Steps, message: dict, ref: StepRef) -> None:
    call_id = message.get("message.tool_call_id")
    ref = StepRef(NAME, ref.path, ref.message_index, call_id if type(call_id) is str else None, span_id=ref.span_id, trace_id=ref.trace_id)
    if type(call_id) is str and steps.is_open(call_id):
        text = _text(message)
        steps.answer(call_id, text, text_error(text), ref, "", from_text=True)
    else:
        steps.skip(ref, "a tool result its TOOL span already gave" if type(call_id) is str and steps.has_call(call_id)
                   else "a tool message naming no call of this trace")


def _tool(steps: Steps, span: dict, attributes: dict, ref: StepRef, name: str) -> None:
    tool = attributes.get("tool.name")
    if type(tool) is not str:
        fail(name, f"{ref.path}.attributes", "no tool.name string on a TOOL span")
    call_id = attributes.get("tool_call.id") if type(attributes.get("tool_call.id")) is str else None
    ref = StepRef(NAME, ref.path, tool_call_id=call_id, span_id=ref.span_id, trace_id=ref.trace_id)
    exception = _exception(span, ref.path, name)
    error = _span_error(span, attributes, [exception] if exception else [])
    has_output = "output.value" in attributes
    output = attributes.get("output.value")
    text = output if type(output) is str else ("" if output is None else str(output))
    if error is None and has_output:
        error = text_error(text)
    requested = steps.is_open(call_id) if call_id is not None else steps.has_open_call_of(tool)
    if not requested:
        call = steps.call(ref, tool, attributes.get("input.value", "{}"), call_id)
        if error is not None or has_output:
            steps.resolve(call, text, error, None, from_text=True)
        return
    if error is None and not has_output:
        steps.skip(ref, "TOOL span with no output recorded")
        return
    steps.answer(call_id, text, error, ref, "", tool_name=tool, from_text=True)


def _exception(span: dict, where: str, name: str) -> str | None:
    """The exception an ``exception`` event records (OTel's record_exception), if any."""
    for i, event in enumerate(typed(span.get("events") or [], list, name, f"{where}.events")):
        if isinstance(event, dict) and event.get("name") == "exception":
            found = _attributes(event.get("attributes", []), name, f"{where}.events[{i}]")
            parts = [str(found[key]) for key in ("exception.type", "exception.message") if found.get(key)]
            return short(": ".join(parts)) if parts else "exception"
    return None
