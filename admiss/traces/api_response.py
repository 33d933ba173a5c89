"""Single API response objects, each one turn's trace: an OpenAI ``chat.completion`` (its
single ``choice``) or an Anthropic ``Message`` (``"type": "message"``).

A response is the model's side of one turn: its text gives an ``assistant_text`` step
(the final answer when the turn makes no tool call: the run ends on the agent's text),
its tool calls give tool calls, which have no result (the tool ran after the response, if
at all, so a response alone proves no call succeeded). An Anthropic ``thinking`` block gives
a ``reasoning`` step; other blocks (server tools, redacted thinking) are skipped.
"""

from __future__ import annotations

from typing import Any

from admiss.traces.build import Steps, fail, field, typed
from admiss.traces.openai_chat import content_text
from admiss.traces.steps import ASSISTANT_TEXT, REASONING, Step, StepRef, Trace

NAME = "api_response"


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not a single response object, or None when it is one."""
    if not isinstance(value, dict):
        return "$", "not an object (a chat.completion or an Anthropic Message)"
    if value.get("object") == "chat.completion":
        return None if isinstance(value.get("choices"), list) else ("choices", "not an array")
    if value.get("type") == "message" and value.get("role") == "assistant":
        return None if isinstance(value.get("content"), list) else ("content", "not an array of blocks")
    return "$", "neither \"object\": \"chat.completion\" nor an Anthropic Message (\"type\": \"message\")"


def read(value: Any, name: str) -> Trace:
    """The Trace of one response object; TraceError at the first element that breaks it."""
    typed(value, dict, name, "$")
    steps = Steps(NAME, name)
    if value.get("object") == "chat.completion":
        _completion(steps, typed(value.get("choices"), list, name, "choices"), name)
    elif value.get("type") == "message":
        _message(steps, typed(value.get("content"), list, name, "content"), name)
    else:
        fail(name, "$", "not a chat.completion or an Anthropic Message")
    return steps.trace(value.get("model"))


def _completion(steps: Steps, choices: list, name: str) -> None:
    if len(choices) != 1:
        # Several choices are samples of one turn, not one run: which one the agent acted on
        # the response does not say.
        fail(name, "choices", f"{len(choices)} choices: a response read as a trace has exactly one",
             hint="keep the choice the agent acted on (choices[0] in a request with n=1)")
    where = "choices[0].message"
    message = field(typed(choices[0], dict, name, "choices[0]"), "message", dict, name, "choices[0]")
    text = content_text(message.get("content"), name, where, steps, 0) or (message.get("refusal") or "")
    if text:
        steps.add(Step(ASSISTANT_TEXT, StepRef(NAME, where, 0), text=typed(text, str, name, f"{where}.refusal")))
    calls = message.get("tool_calls") or []
    for j, call in enumerate(typed(calls, list, name, f"{where}.tool_calls")):
        at = f"{where}.tool_calls[{j}]"
        call_id = field(typed(call, dict, name, at), "id", str, name, at)
        function = field(call, "function", dict, name, at)
        if "arguments" not in function:
            fail(name, f"{at}.function.arguments", "missing")
        steps.call(StepRef(NAME, at, 0, call_id), field(function, "name", str, name, f"{at}.function"),
                   function["arguments"], call_id, "id")
    if not text and not calls:
        steps.skip(StepRef(NAME, where, 0), "a response with no text and no tool calls")


def _message(steps: Steps, blocks: list, name: str) -> None:
    texts: list[str] = []
    text_at = 0
    for j, block in enumerate(blocks):
        at = f"content[{j}]"
        kind = field(typed(block, dict, name, at), "type", str, name, at)
        if kind == "text":
            text_at = text_at if texts else steps.position()
            texts.append(field(block, "text", str, name, at))
        elif kind == "thinking":
            steps.add(Step(REASONING, StepRef(NAME, at, 0), text=field(block, "thinking", str, name, at)))
        elif kind == "tool_use":
            call_id = field(block, "id", str, name, at)
            steps.call(StepRef(NAME, at, 0, call_id), field(block, "name", str, name, at), block.get("input", {}),
                       call_id, "id")
        else:
            steps.skip(StepRef(NAME, at, 0), f"{kind} block")
    if texts:  # one step, where the first text block stands (citations split a text into blocks)
        steps.insert(text_at, Step(ASSISTANT_TEXT, StepRef(NAME, "content", 0), text="".join(texts)))
