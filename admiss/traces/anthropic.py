"""Anthropic Messages: an object with ``messages`` (and optionally ``system`` and ``model``),
or a bare array of messages, as sent to the Messages API.

Each message has a ``role`` (``user`` or ``assistant``) and a ``content`` that is a string
or a list of content blocks. A message's ``text`` blocks are joined into one step (a
``user`` step, or ``assistant_text``) where its first text block stands; ``thinking``
blocks give ``reasoning`` steps; ``tool_use`` blocks give tool calls (their ``input`` is
already JSON); a ``tool_result`` block is the result of the call its ``tool_use_id``
names, an error when ``is_error`` is true or when its text is one by ``build.text_error``
(an agent loop that writes ``Error: ...`` and forgets the flag must not pass a failed
call). Other blocks (images, documents, redacted
thinking, server tools) are skipped.
"""

from __future__ import annotations

from typing import Any

from admiss.traces.build import Mismatch, Steps, fail, field, message_dicts, short, text_error, type_word, typed
from admiss.traces.steps import ASSISTANT_TEXT, REASONING, SYSTEM, USER, Step, StepRef, Trace

NAME = "anthropic"
ROLES = ("user", "assistant")
_TEXT_TYPES = {"user": USER, "assistant": ASSISTANT_TEXT}


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not an Anthropic Messages trace, or None when it is one."""
    try:
        for where, message in message_dicts(value):
            if message.get("role") not in ROLES:
                return f"{where}.role", f"{message.get('role')!r} is not an Anthropic role (user, assistant)"
            if "tool_calls" in message or "type" in message:
                return where, "has " + ("\"tool_calls\"" if "tool_calls" in message else "a \"type\"")
    except Mismatch as broken:
        return broken.args
    return None


def read(value: Any, name: str) -> Trace:
    """The Trace of Anthropic Messages ``value``; TraceError at the first element that breaks the format."""
    steps = Steps(NAME, name)
    if isinstance(value, dict):
        if "messages" not in value:
            fail(name, "$", "no messages: an Anthropic trace is an object with \"messages\" or an array of messages")
        messages, base = typed(value["messages"], list, name, "messages"), "messages"
        if "system" in value:
            _system(steps, value["system"], name)
    else:
        messages, base = typed(value, list, name, "$"), "$"
    for i, message in enumerate(messages):
        where = f"{base}[{i}]"
        typed(message, dict, name, where)
        role = field(message, "role", str, name, where)
        if role not in _TEXT_TYPES:
            fail(name, f"{where}.role", f"unknown role '{role}'", hint="roles: user, assistant")
        content = message.get("content")
        if type(content) is str:
            if content:
                steps.add(Step(_TEXT_TYPES[role], StepRef(NAME, where, i), text=content))
            else:
                steps.skip(StepRef(NAME, where, i), f"{role} message with no text")
        elif type(content) is list:
            _blocks(steps, content, role, i, where, name)
        else:
            fail(name, f"{where}.content", f"must be a string or an array of blocks, not {type_word(content)}")
    return steps.trace(value.get("model") if isinstance(value, dict) else None)


def _system(steps: Steps, system: Any, name: str) -> None:
    if type(system) is not str and type(system) is not list:
        fail(name, "system", f"must be a string or an array of text blocks, not {type_word(system)}")
    text = system if type(system) is str else _texts(system, name, "system")
    if text:
        steps.add(Step(SYSTEM, StepRef(NAME, "system"), text=text))
    else:
        steps.skip(StepRef(NAME, "system"), "system prompt with no text")


def _texts(blocks: list, name: str, where: str) -> str:
    return "".join(field(typed(block, dict, name, f"{where}[{j}]"), "text", str, name, f"{where}[{j}]")
                   for j, block in enumerate(blocks) if isinstance(block, dict) and block.get("type") == "text")


def _blocks(steps: Steps, blocks: list, role: str, i: int, where: str, name: str) -> None:
    texts: list[str] = []
    text_at = steps.position()  # the message's text step goes where its first text block stands
    only_text = True
    for j, block in enumerate(blocks):
        kind = block.get("type") if type(block) is dict else None
        if kind == "text" and type(block.get("text")) is str:  # the common block: no path worded for it
            if not texts:
                text_at = steps.position()
            texts.append(block["text"])
            continue
        at = f"{where}.content[{j}]"
        kind = field(typed(block, dict, name, at), "type", str, name, at)
        if kind == "text":
            texts.append(field(block, "text", str, name, at))  # raises: its text is no string
        only_text = False
        if kind == "thinking":
            steps.add(Step(REASONING, StepRef(NAME, at, i), text=field(block, "thinking", str, name, at)))
        elif kind == "tool_use":
            call_id = field(block, "id", str, name, at)
            steps.call(StepRef(NAME, at, i, call_id), field(block, "name", str, name, at), block.get("input", {}),
                       call_id, "id")
        elif kind == "tool_result":
            call_id = field(block, "tool_use_id", str, name, at)
            content = block.get("content", "")
            text = content if type(content) is str else _texts(typed(content, list, name, f"{at}.content"), name,
                                                                f"{at}.content")
            is_error = block.get("is_error", False)
            if type(is_error) is not bool:
                typed(is_error, bool, name, f"{at}.is_error")
            error = (short(text) or "is_error: true") if is_error else text_error(text)
            steps.answer(call_id, text, error, StepRef(NAME, at, i, call_id), "tool_use_id", from_text=True)
        else:
            steps.skip(StepRef(NAME, at, i), f"{kind} block")
    text = "".join(texts)
    if text:
        steps.insert(text_at, Step(_TEXT_TYPES[role], StepRef(NAME, where, i), text=text))
    elif only_text:
        steps.skip(StepRef(NAME, where, i), f"{role} message with no text")
