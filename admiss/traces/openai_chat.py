"""OpenAI Chat Completions messages: a JSON array of messages, or an object with ``messages``.

Each message has a ``role``: ``system`` and ``developer`` give SYSTEM steps, ``user`` USER
steps, ``assistant`` an ASSISTANT_TEXT step (when it has text) and one TOOL_CALL per entry
of its ``tool_calls``; a ``tool`` message is the result of the call its ``tool_call_id``
names. ``content`` is a string or a list of parts, whose ``text`` (and ``refusal``) parts
are joined by newlines; image, audio and file parts hold no text. A tool result is an error
by ``build.error_in``; a call with no tool message after it has no result.
"""

from __future__ import annotations

from typing import Any, Iterator

from admiss.traces.build import (
    Mismatch, Steps, fail, field, message_dicts, text_error, type_word, typed,
)
from admiss.traces.steps import ASSISTANT_TEXT, SYSTEM, USER, Step, StepRef, Trace

NAME = "openai_chat"
_TEXT_ROLES = {"system": SYSTEM, "developer": SYSTEM, "user": USER}
ROLES = ("system", "developer", "user", "assistant", "tool")
# Marks of the other message formats, so a trace in one of them is not read as this one.
ANTHROPIC_BLOCKS = frozenset(("tool_use", "tool_result", "thinking", "redacted_thinking"))


def messages_of(value: Any, name: str) -> tuple[list, str]:
    """The message list of ``value`` and the JSON path it stands at."""
    if isinstance(value, list):
        return value, "$"
    if isinstance(value, dict) and "messages" in value:
        return typed(value["messages"], list, name, "messages"), "messages"
    fail(name, "$", "no messages: a Chat Completions trace is an array of messages or an object with \"messages\"")


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not a Chat Completions trace, or None when it is one."""
    if isinstance(value, dict) and "messages" in value and "system" in value:
        return "system", "a top-level system prompt is Anthropic's, not Chat Completions'"
    try:
        return _message_mismatch(message_dicts(value))
    except Mismatch as broken:
        return broken.args


def _message_mismatch(messages: Iterator[tuple[str, dict]]) -> tuple[str, str] | None:
    for where, message in messages:
        if "type" in message:
            return f"{where}.type", "typed items are the Responses API's; messages have only a role"
        role = message.get("role")
        if role not in ROLES:
            return f"{where}.role", f"{role!r} is not a Chat Completions role"
        if role != "user" and role != "assistant" or "tool_calls" in message:
            return None  # only Chat Completions has these roles and tool_calls
        content = message.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict) and type(part.get("type")) is str and part["type"] in ANTHROPIC_BLOCKS:
                    return f"{where}.content[{j}].type", f"{part['type']} blocks are Anthropic's"
    return None


def read(value: Any, name: str) -> Trace:
    """The Trace of Chat Completions ``value``; TraceError at the first element that breaks the format."""
    messages, base = messages_of(value, name)
    steps = Steps(NAME, name)
    for i, message in enumerate(messages):
        where = f"{base}[{i}]"
        if type(message) is not dict:
            typed(message, dict, name, where)
        role = message.get("role")
        if type(role) is not str:
            field(message, "role", str, name, where)
        if role == "assistant":
            _assistant(steps, message, i, where, name)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if type(call_id) is not str:
                field(message, "tool_call_id", str, name, where)
            text = content_text(message.get("content"), name, where, steps, i)
            steps.answer(call_id, text, text_error(text), StepRef(NAME, where, i, call_id), "tool_call_id",
                         from_text=True)
        elif role in _TEXT_ROLES:
            text = content_text(message.get("content"), name, where, steps, i)
            if text:
                steps.add(Step(_TEXT_ROLES[role], StepRef(NAME, where, i), text=text))
            else:
                steps.skip(StepRef(NAME, where, i), f"{role} message with no text")
        else:
            fail(name, f"{where}.role", f"unknown role '{role}'", hint="roles: " + ", ".join(ROLES))
    model = value.get("model") if isinstance(value, dict) else None
    return steps.trace(model)


def _assistant(steps: Steps, message: dict, i: int, where: str, name: str) -> None:
    text = content_text(message.get("content"), name, where, steps, i)
    if not text and isinstance(message.get("refusal"), str):
        text = message["refusal"]
    if text:
        steps.add(Step(ASSISTANT_TEXT, StepRef(NAME, where, i), text=text))
    calls = message.get("tool_calls")
    if calls is None:
        if not text:
            steps.skip(StepRef(NAME, where, i), "assistant message with no text and no tool calls")
        return
    if type(calls) is not list:
        typed(calls, list, name, f"{where}.tool_calls")
    # Each field is tested where it is read; ``field`` is called only to word the error.
    for j, call in enumerate(calls):
        at = f"{where}.tool_calls[{j}]"
        if type(call) is not dict:
            typed(call, dict, name, at)
        call_id, function = call.get("id"), call.get("function")
        if type(call_id) is not str:
            field(call, "id", str, name, at)
        if type(function) is not dict:
            field(call, "function", dict, name, at)
        tool = function.get("name")
        if type(tool) is not str:
            field(function, "name", str, name, f"{at}.function")
        if "arguments" not in function:
            fail(name, f"{at}.function.arguments", "missing")
        steps.call(StepRef(NAME, at, i, call_id), tool, function["arguments"], call_id, "id")
    if not text and not calls:
        steps.skip(StepRef(NAME, where, i), "assistant message with no text and no tool calls")


def content_text(content: Any, name: str, where: str, steps: Steps, i: int) -> str:
    """The text of a message's ``content``: a string, or its text parts joined by newlines.
    Other parts (images, audio, files) are listed as skipped; an Anthropic block (a tool call
    or result written Anthropic's way) is refused, as reading past it would lose a call."""
    if content is None or type(content) is str:
        return content or ""
    if type(content) is not list:
        fail(name, f"{where}.content", f"must be a string or an array of parts, not {type_word(content)}")
    texts = []
    for j, part in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = field(typed(part, dict, name, at), "type", str, name, at)
        if kind == "text" or kind == "refusal":
            texts.append(field(part, kind, str, name, at))
        elif kind in ANTHROPIC_BLOCKS:
            fail(name, f"{at}.type", f"a {kind} block is Anthropic's, in a trace read as Chat Completions",
                 hint="a trace mixes the two formats; if it is Anthropic Messages, name it: --trace anthropic "
                      "(trace_format=\"anthropic\" in Python)")
        else:
            steps.skip(StepRef(NAME, at, i), f"{kind} part")
    return "\n".join(texts)
