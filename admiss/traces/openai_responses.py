"""OpenAI Responses API items: an object with ``input`` and/or ``output`` item lists (a
request, a response, or both merged; ``instructions`` and ``model`` are read too), or a
bare array of items.

``input`` items come before ``output`` items. A ``message`` item (or an input item with a
``role`` and no ``type``) gives a ``system`` step (roles ``system``, ``developer``), a
``user`` step or an ``assistant_text`` step from its text parts (``input_text``,
``output_text``, ``refusal``), joined by newlines; a ``function_call`` item is a tool call,
with JSON-text ``arguments``; a ``function_call_output`` item is the result of the call its
``call_id`` names; a ``reasoning`` item gives a ``reasoning`` step from its summary (or, with
no summary, its content) texts. Items of other types (built-in tools such as web search)
are skipped. A string ``input`` is one user message.
"""

from __future__ import annotations

from typing import Any

from admiss.traces.build import Steps, fail, field, text_error, type_word, typed
from admiss.traces.steps import ASSISTANT_TEXT, REASONING, SYSTEM, USER, Step, StepRef, Trace

NAME = "openai_responses"
_ROLES = {"system": SYSTEM, "developer": SYSTEM, "user": USER, "assistant": ASSISTANT_TEXT}
_TEXT_PARTS = {"input_text": "text", "output_text": "text", "refusal": "refusal"}
ITEM_TYPES = frozenset(("message", "function_call", "function_call_output", "reasoning"))


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not a Responses API trace, or None when it is one."""
    if isinstance(value, dict):
        if "input" not in value and "output" not in value:
            return "$", "no \"input\" or \"output\" item list"
        if "messages" in value:
            return "messages", "a message list is Chat Completions' or Anthropic's"
        items = [(key, value[key]) for key in ("input", "output") if key in value]
        for key, listed in items:
            if not isinstance(listed, list) and not (key == "input" and isinstance(listed, str)):
                return key, "not an array of items"
        return None
    if not isinstance(value, list):
        return "$", "neither an object with \"input\"/\"output\" nor an array of items"
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            return f"$[{i}]", "an item must be an object"
        if "type" not in item:
            return f"$[{i}]", "an item with no \"type\" (a bare array of items needs typed items)"
    return None


def read(value: Any, name: str) -> Trace:
    """The Trace of Responses API ``value``; TraceError at the first element that breaks the format."""
    steps = Steps(NAME, name)
    if isinstance(value, list):
        _items(steps, value, "$", name)
        return steps.trace()
    typed(value, dict, name, "$")
    if "input" not in value and "output" not in value:
        fail(name, "$", "no items: a Responses trace is an object with \"input\" or \"output\", or an array of items")
    if "instructions" in value and value["instructions"] is not None:
        text = typed(value["instructions"], str, name, "instructions")
        if text:
            steps.add(Step(SYSTEM, StepRef(NAME, "instructions"), text))
        else:
            steps.skip(StepRef(NAME, "instructions"), "empty instructions")
    given = value.get("input")
    if type(given) is str:
        if given:
            steps.add(Step(USER, StepRef(NAME, "input"), text=given))
        else:
            steps.skip(StepRef(NAME, "input"), "empty input")
    elif given is not None:
        _items(steps, typed(given, list, name, "input"), "input", name)
    if "output" in value:
        _items(steps, typed(value["output"], list, name, "output"), "output", name)
    return steps.trace(value.get("model"))


def _items(steps: Steps, items: list, base: str, name: str) -> None:
    for i, item in enumerate(items):
        where = f"{base}[{i}]"
        if type(item) is not dict:
            typed(item, dict, name, where)
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            _message(steps, item, i, where, name)
        elif kind == "function_call":
            call_id = field(item, "call_id", str, name, where)
            if "arguments" not in item:
                fail(name, f"{where}.arguments", "missing")
            steps.call(StepRef(NAME, where, i, call_id, None, _id(item)), field(item, "name", str, name, where),
                       item["arguments"], call_id, "call_id")
        elif kind == "function_call_output":
            call_id = field(item, "call_id", str, name, where)
            text = message_text(item.get("output"), name, f"{where}.output")
            steps.answer(call_id, text, text_error(text), StepRef(NAME, where, i, call_id, None, _id(item)),
                         "call_id", from_text=True)
        elif kind == "reasoning":
            text = reasoning_text(item, name, where)
            if text:
                steps.add(Step(REASONING, StepRef(NAME, where, i, None, None, _id(item)), text))
            else:
                steps.skip(StepRef(NAME, where, i, None, None, _id(item)), "reasoning with no readable text")
        elif kind is None:
            fail(name, f"{where}.type", "missing", hint="items: " + ", ".join(sorted(ITEM_TYPES)))
        else:
            steps.skip(StepRef(NAME, where, i, None, None, _id(item)), f"{typed(kind, str, name, f'{where}.type')} item")


def _id(item: dict) -> str | None:
    item_id = item.get("id")
    return item_id if type(item_id) is str else None


def _message(steps: Steps, item: dict, i: int, where: str, name: str) -> None:
    role = field(item, "role", str, name, where)
    if role not in _ROLES:
        fail(name, f"{where}.role", f"unknown role '{role}'", hint="roles: " + ", ".join(_ROLES))
    text = message_text(item.get("content"), name, f"{where}.content")
    ref = StepRef(NAME, where, i, None, None, _id(item))
    if text:
        steps.add(Step(_ROLES[role], ref, text))
    else:
        steps.skip(ref, f"{role} message with no text")


def message_text(content: Any, name: str, where: str) -> str:
    """The text of a string, or of a list of content parts (their text parts joined by newlines)."""
    if content is None or type(content) is str:
        return content or ""
    if type(content) is not list:
        fail(name, where, f"must be a string or an array of content parts, not {type_word(content)}")
    texts = []
    for j, part in enumerate(content):  # a part's path is made only for an error
        kind = part.get("type") if type(part) is dict else None
        if type(kind) is not str:
            kind = field(typed(part, dict, name, f"{where}[{j}]"), "type", str, name, f"{where}[{j}]")
        key = _TEXT_PARTS.get(kind)
        if key is not None:
            text = part.get(key)
            texts.append(text if type(text) is str else field(part, key, str, name, f"{where}[{j}]"))
    return "\n".join(texts)


def reasoning_text(item: dict, name: str, where: str) -> str:
    for key in ("summary", "content"):
        parts = item.get(key)
        if parts:
            texts = [field(typed(part, dict, name, f"{where}.{key}[{j}]"), "text", str, name, f"{where}.{key}[{j}]")
                     for j, part in enumerate(typed(parts, list, name, f"{where}.{key}"))]
            if any(texts):
                return "\n".join(texts)
    return ""
