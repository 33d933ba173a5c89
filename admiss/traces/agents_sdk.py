"""OpenAI Agents SDK: a run's items (``result.to_input_list()``: Responses API items, the
user's messages often untyped), its RunState (``result.to_state().to_json()``), or its
trace export (what the SDK's exporter sends: ``{"data": [trace, span, ...]}``, or the bare
array of exported objects).

Items and RunState: a message gives a ``system``, ``user`` or ``assistant_text`` step; a
``function_call`` item a tool call; a ``function_call_output`` item its result; a
``reasoning`` item a ``reasoning`` step; other items (handoffs, hosted tools) are skipped.
A RunState's ``original_input`` (a string, or items) comes first, then each
``generated_items[i].raw_item``.

Trace export, spans in order of ``started_at``: a ``function`` span is a tool call and its
result in one (``input`` the arguments' JSON text, ``output`` the result; the span has no
call id, so its ``span_id`` is its reference); a ``generation`` span (Chat Completions
models) gives the new ``user``/``system`` messages of its ``input`` and the text of its
``output``; its tool calls are the function spans'. ``response`` spans hold only the
response's id (the Responses API keeps the content), so a run on a Responses model gives
its tool calls but no text. Other spans (agent, turn, handoff, guardrail) are skipped.

Errors: a tool whose function raised gets, from the SDK's default ``failure_error_function``,
its failure text in place of its result ("An error occurred while running the tool. Please
try again.", one of ``build.FAILURE_TEXTS``), an error by the rule for formats without an
error flag, which judges every output; a function span with an ``error`` is an error (its
``message`` and ``data.error``).
"""

from __future__ import annotations

from typing import Any

from admiss.traces.build import FAILURE_TEXTS, Steps, fail, field, short, text_error, type_word, typed
from admiss.traces.openai_responses import message_text, reasoning_text
from admiss.traces.steps import ASSISTANT_TEXT, REASONING, SYSTEM, USER, Step, StepRef, Trace

NAME = "agents_sdk"
_ROLES = {"system": SYSTEM, "developer": SYSTEM, "user": USER, "assistant": ASSISTANT_TEXT}
_STATE_KEYS = (("original_input", "generated_items", "raw_item"), ("originalInput", "generatedItems", "rawItem"))


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not an Agents SDK run, or None when it is one."""
    if isinstance(value, dict):
        if "$schemaVersion" in value:
            return None if isinstance(value.get(_state_keys(value)[1]), list) else ("generated_items", "not an array")
        data = value.get("data")
        if not isinstance(data, list):
            return "$", "no \"data\" array of exported traces and spans, and no RunState \"$schemaVersion\""
        return _export_mismatch(data, "data")
    if not isinstance(value, list) or not value:
        return "$", "neither an array of run items, a trace export nor a RunState"
    if isinstance(value[0], dict) and value[0].get("object") in ("trace", "trace.span"):
        return _export_mismatch(value, "$")
    for i, item in enumerate(value):
        if not isinstance(item, dict) or ("type" not in item and "role" not in item):
            return f"$[{i}]", "a run item is an object with a \"type\" or a \"role\""
    if not any("type" in item for item in value):
        return "$", "no typed item: messages alone are Chat Completions'"
    if any(_sdk_mark(item) for item in value):
        return None
    return "$", "no mark of the SDK (an untyped message among typed items, provider_data, its failure text)"


def _sdk_mark(item: dict) -> bool:
    """Whether a run item shows it came from the SDK, not from a Responses API request."""
    return "type" not in item or "provider_data" in item or (
        item.get("type") == "function_call_output" and isinstance(item.get("output"), str)
        and item["output"].strip().lower().startswith(FAILURE_TEXTS))


def _export_mismatch(objects: list, base: str) -> tuple[str, str] | None:
    for i, item in enumerate(objects):
        if not isinstance(item, dict) or item.get("object") not in ("trace", "trace.span"):
            return f"{base}[{i}].object", "an exported object is a \"trace\" or a \"trace.span\""
    return None


def _state_keys(value: dict) -> tuple[str, str, str]:
    """The RunState's keys as the producer spells them: Python's snake_case or JavaScript's camelCase."""
    return _STATE_KEYS[0] if _STATE_KEYS[0][1] in value else _STATE_KEYS[1]


class _RunSteps(Steps):
    """The run's steps, and the model it last named (items and spans name it as they go)."""

    model: str | None = None


def read(value: Any, name: str) -> Trace:
    """The Trace of an Agents SDK run; TraceError at the first element that breaks its shape."""
    steps = _RunSteps(NAME, name)
    if isinstance(value, dict) and "$schemaVersion" in value:
        _state(steps, value, name)
    elif isinstance(value, dict):
        _spans(steps, typed(value.get("data"), list, name, "data"), "data", name)
    elif isinstance(typed(value, list, name, "$"), list) and value and isinstance(value[0], dict) and \
            value[0].get("object") in ("trace", "trace.span"):
        _spans(steps, value, "$", name)
    else:
        for i, item in enumerate(value):
            where = f"$[{i}]"
            _item(steps, typed(item, dict, name, where), i, where, name)
    return steps.trace(steps.model)


# ---------------------------------------------------------------- items and RunState


def _state(steps: _RunSteps, state: dict, name: str) -> None:
    given_key, items_key, raw_key = _state_keys(state)
    given = state.get(given_key)
    if type(given) is str:
        if given:
            steps.add(Step(USER, StepRef(NAME, given_key), text=given))
    elif given is not None:
        for i, item in enumerate(typed(given, list, name, given_key)):
            _item(steps, typed(item, dict, name, f"{given_key}[{i}]"), i, f"{given_key}[{i}]", name)
    for i, wrapper in enumerate(typed(state.get(items_key), list, name, items_key)):
        at = f"{items_key}[{i}]"
        raw = field(typed(wrapper, dict, name, at), raw_key, dict, name, at)
        _item(steps, raw, i, f"{at}.{raw_key}", name)


def _item(steps: _RunSteps, item: dict, i: int, where: str, name: str) -> None:
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        role = field(item, "role", str, name, where)
        if role not in _ROLES:
            fail(name, f"{where}.role", f"unknown role '{role}'", hint="roles: " + ", ".join(_ROLES))
        text = message_text(item.get("content"), name, f"{where}.content")
        ref = StepRef(NAME, where, i)  # made where used: most items are tool calls and results
        steps.add(Step(_ROLES[role], ref, text)) if text else steps.skip(ref, f"{role} message with no text")
        _note_model(steps, item)
    elif kind == "function_call":
        call_id = field(item, "call_id", str, name, where)
        if "arguments" not in item:
            fail(name, f"{where}.arguments", "missing")
        steps.call(StepRef(NAME, where, i, call_id), field(item, "name", str, name, where), item["arguments"],
                   call_id, "call_id")
        _note_model(steps, item)
    elif kind == "function_call_output":
        call_id = field(item, "call_id", str, name, where)
        text = message_text(item.get("output"), name, f"{where}.output")
        steps.answer(call_id, text, text_error(text), StepRef(NAME, where, i, call_id), "call_id", from_text=True)
    elif kind == "reasoning":
        text = reasoning_text(item, name, where)
        ref = StepRef(NAME, where, i)
        steps.add(Step(REASONING, ref, text)) if text else steps.skip(ref, "reasoning with no readable text")
    elif kind is None:
        fail(name, f"{where}.type", "missing", hint="a run item has a \"type\" (or is a message with a \"role\")")
    else:
        steps.skip(StepRef(NAME, where, i), f"{typed(kind, str, name, f'{where}.type')} item")


def _note_model(steps: _RunSteps, item: dict) -> None:
    """The model named in an item's ``provider_data``: the last one is the run's."""
    data = item.get("provider_data")
    if isinstance(data, dict) and type(data.get("model")) is str:
        steps.model = data["model"]


# ---------------------------------------------------------------- trace export


def _spans(steps: _RunSteps, objects: list, base: str, name: str) -> None:
    spans = []
    for i, item in enumerate(objects):
        at = f"{base}[{i}]"
        kind = field(typed(item, dict, name, at), "object", str, name, at)
        if kind == "trace.span":
            started = item.get("started_at")
            spans.append((started if type(started) is str else "", i, at, item))
        else:
            steps.skip(StepRef(NAME, at, i, span_id=_span_id(item)), f"{kind} object")
    spans.sort(key=lambda span: span[:2])  # ISO times of one clock sort as text; ties in file order
    seen = 0
    for _, i, at, span in spans:
        data = field(span, "span_data", dict, name, at)
        kind = field(data, "type", str, name, f"{at}.span_data")
        ref = StepRef(NAME, at, i, span_id=_span_id(span))
        if kind == "function":
            _function(steps, span, data, ref, name)
        elif kind == "generation":
            seen = _generation(steps, data, ref, seen, name)
        else:
            steps.skip(ref, f"{kind} span" + (" (holds only the response id)" if kind == "response" else ""))


def _span_id(span: dict) -> str | None:
    return span["id"] if type(span.get("id")) is str else None


def _function(steps: _RunSteps, span: dict, data: dict, ref: StepRef, name: str) -> None:
    where = f"{ref.path}.span_data"
    arguments = data.get("input")
    call = steps.call(ref, field(data, "name", str, name, where), "{}" if arguments is None else arguments, None)
    output = data.get("output")
    text = "" if output is None else typed(output, str, name, f"{where}.output")
    error = span.get("error")
    if error is not None:
        reason = _span_error(typed(error, dict, name, f"{ref.path}.error"))
    else:
        reason = text_error(text) if output is not None else None
    if output is None and error is None:
        return  # no output recorded: the call stays without a result
    steps.resolve(call, text, reason, None, from_text=True)


def _span_error(error: dict) -> str:
    data = error.get("data")
    detail = data.get("error") if isinstance(data, dict) else None
    message = error.get("message")
    parts = [part for part in (message, detail) if type(part) is str and part]
    return short(": ".join(parts)) if parts else "span error"


def _generation(steps: _RunSteps, data: dict, ref: StepRef, seen: int, name: str) -> int:
    """Steps of a generation span: the input messages after those earlier spans gave, and
    the output's text; the number of input messages now seen."""
    where = f"{ref.path}.span_data"
    given = data.get("input") or []
    typed(given, list, name, f"{where}.input")
    last_assistant = max((j for j, m in enumerate(given) if isinstance(m, dict) and m.get("role") == "assistant"),
                         default=-1)
    for j in range(max(seen, last_assistant + 1), len(given)):
        at = f"{where}.input[{j}]"
        message = typed(given[j], dict, name, at)
        role = message.get("role")
        if role in ("system", "developer", "user"):
            text = _chat_text(message.get("content"), name, f"{at}.content")
            if text:
                steps.add(Step(_ROLES[role], StepRef(NAME, at, ref.message_index, span_id=ref.span_id), text=text))
    for j, message in enumerate(typed(data.get("output") or [], list, name, f"{where}.output")):
        at = f"{where}.output[{j}]"
        text = _chat_text(typed(message, dict, name, at).get("content"), name, f"{at}.content")
        if text:
            steps.add(Step(ASSISTANT_TEXT, StepRef(NAME, at, ref.message_index, span_id=ref.span_id), text=text))
    if type(data.get("model")) is str:
        steps.model = data["model"]
    return len(given)


def _chat_text(content: Any, name: str, where: str) -> str:
    if content is None or type(content) is str:
        return content or ""
    if type(content) is not list:
        fail(name, where, f"must be a string or an array of parts, not {type_word(content)}")
    return "\n".join(part["text"] for part in content if isinstance(part, dict) and type(part.get("text")) is str)
