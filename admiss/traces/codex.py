"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): one JSON object per
line, ``{"timestamp", "type", "payload"}``, read as a whole file (the array of its lines'
values: ``$[i]`` is line i+1), one session per file.

The steps are the ``response_item`` lines: Responses API items as Codex keeps them. A
``message`` gives a ``system`` step (role ``developer``), a ``user`` step or an
``assistant_text`` step from its text parts; a ``function_call`` (``arguments`` as JSON
text), a ``custom_tool_call`` (``input``: apply_patch's patch text) or a ``local_shell_call``
(``action``) is a tool call, answered by the ``function_call_output`` or
``custom_tool_call_output`` naming its ``call_id``; a ``reasoning`` item gives a
``reasoning`` step from its summary texts. Codex's own notes to the model, sent as user
messages (``<environment_context>``, ``<user_instructions>``), and every other line
(``session_meta``, ``turn_context``, ``event_msg``, ...) are skipped with their reason.

Errors (what Codex writes for a failed call, by version): a command whose output header
says ``Process exited with code N`` with N other than 0 (0.171), or whose output is the
JSON ``{"output", "metadata": {"exit_code"}}`` with an exit code other than 0 (0.47); a
``CommandExecution`` that an ``event_msg`` ``item_completed`` line reports ``failed`` or
with an exit code other than 0; Codex's answer to a tool it does not have
(``unsupported call: NAME``); else the rule for formats without an error flag. The model is
the last ``turn_context``'s. The final answer is the last assistant text, when the session
ends on it.
"""

from __future__ import annotations

import re
from typing import Any

from admiss.bundle import repeated_key
from admiss.traces.build import Steps, fail, field, int_text, short, text_error, typed
from admiss.traces.openai_responses import message_text, reasoning_text
from admiss.traces.steps import ASSISTANT_TEXT, REASONING, SYSTEM, USER, Step, StepRef, Trace, loads_json

NAME = "codex"
_ROLES = {"developer": SYSTEM, "system": SYSTEM, "user": USER, "assistant": ASSISTANT_TEXT}
# What Codex sends the model as user messages of its own, not the person's words.
_NOTES = ("<environment_context>", "<user_instructions>")
_CALLS = {"function_call": "arguments", "custom_tool_call": "input", "local_shell_call": "action"}
_OUTPUTS = frozenset(("function_call_output", "custom_tool_call_output"))
# Codex's answer to a call of a tool it does not have.
_UNSUPPORTED = "unsupported call: "
# The header Codex (0.171) puts above a command's output, up to the line "Output:".
_EXIT_LINE = re.compile(r"Process exited with code (-?\d+)")


def is_line(value: Any) -> bool:
    """Whether a .jsonl line's value is a line of a Codex rollout."""
    return isinstance(value, dict) and type(value.get("type")) is str and type(value.get("payload")) is dict \
        and "timestamp" in value


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not a Codex rollout's lines, or None."""
    if not isinstance(value, list) or not value:
        return "$", "not the lines of a Codex rollout (a .jsonl file)"
    for i, line in enumerate(value):
        if not is_line(line):
            return f"$[{i}]", "not a Codex rollout line (a \"timestamp\", a \"type\" and a \"payload\" object)"
    return None


def read(value: Any, name: str) -> Trace:
    """The Trace of a Codex rollout's lines; TraceError at the line that breaks."""
    lines = typed(value, list, name, "$")
    steps = Steps(NAME, name)
    failed = _failed_commands(lines)
    model = None
    for i, line in enumerate(lines):
        where = f"$[{i}]"
        kind = field(typed(line, dict, name, where), "type", str, name, where)
        payload = field(line, "payload", dict, name, where)
        if kind == "turn_context" and type(payload.get("model")) is str:
            model = payload["model"]
        if kind == "response_item":
            _item(steps, payload, i, f"{where}.payload", failed, name)
        else:
            steps.skip(StepRef(NAME, where, i), f"{kind} line")
    return steps.trace(model)


def _item(steps: Steps, item: dict, i: int, where: str, failed: dict[str, str], name: str) -> None:
    kind = field(item, "type", str, name, where)
    ref = StepRef(NAME, where, i, event_id=item["id"] if type(item.get("id")) is str else None)
    if kind == "message":
        role = field(item, "role", str, name, where)
        if role not in _ROLES:
            fail(name, f"{where}.role", f"unknown role '{role}'", hint="roles: " + ", ".join(_ROLES))
        text = message_text(item.get("content"), name, f"{where}.content")
        if role == "user" and text.lstrip().startswith(_NOTES):
            steps.skip(ref, "Codex's own note to the model (" + text.lstrip().split(">", 1)[0] + ">)")
        elif text:
            steps.add(Step(_ROLES[role], ref, text=text))
        else:
            steps.skip(ref, f"{role} message with no text")
    elif kind in _CALLS:
        call_id = field(item, "call_id", str, name, where)
        if _CALLS[kind] not in item:
            fail(name, f"{where}.{_CALLS[kind]}", "missing")
        tool = "local_shell" if kind == "local_shell_call" else field(item, "name", str, name, where)
        steps.call(StepRef(NAME, where, i, call_id, event_id=ref.event_id), tool, _arguments(item, kind), call_id,
                   "call_id")
    elif kind in _OUTPUTS:
        call_id = field(item, "call_id", str, name, where)
        text = message_text(item.get("output"), name, f"{where}.output")
        steps.answer(call_id, text, failed.get(call_id) or output_error(text),
                     StepRef(NAME, where, i, call_id, event_id=ref.event_id), "call_id", from_text=True)
    elif kind == "reasoning":
        text = reasoning_text(item, name, where)
        if text:
            steps.add(Step(REASONING, ref, text=text))
        else:
            steps.skip(ref, "reasoning with no readable text (Codex keeps it encrypted)")
    else:
        steps.skip(ref, f"{kind} item")


def _arguments(item: dict, kind: str) -> Any:
    """A call's arguments: JSON text for a function call, ``{"input": patch}`` for a custom
    tool's free text, the action object of a local shell call."""
    value = item[_CALLS[kind]]
    return {"input": value} if kind == "custom_tool_call" and type(value) is str else value


def output_error(text: str) -> str | None:
    """Why the output of a Codex call says the call failed, or None."""
    if text.startswith(_UNSUPPORTED):
        return short(text)
    if text.startswith("Chunk ID:") or text.startswith("Wall time:"):
        header = text.split("\nOutput:", 1)[0]
        match = _EXIT_LINE.search(header)
        if match is not None and int_text(match.group(1)) != 0:
            return f"exited with code {match.group(1)}"
    elif text.startswith('{"output"'):
        return _metadata_error(text)
    return text_error(text)


def _metadata_error(text: str) -> str | None:
    """The failure an older Codex's ``{"output", "metadata": {"exit_code"}}`` output reports."""
    try:
        value = loads_json(text)
    except (ValueError, RecursionError):
        return text_error(text)
    if type(value) is not dict:
        return text_error(text)
    if repeated_key(text, value) is not None:
        return "the output's JSON gives a key twice (read as a failure)"
    metadata = value.get("metadata")
    code = metadata.get("exit_code") if type(metadata) is dict else None
    if type(code) is int and code != 0:
        return f"exited with code {code}"
    output = value.get("output")
    return text_error(output) if type(output) is str else None


def _failed_commands(lines: list) -> dict[str, str]:
    """The call ids of the commands Codex reports failed in ``item_completed`` events, each
    with why (the event may come before or after the call's output line)."""
    failed: dict[str, str] = {}
    for line in lines:
        payload = line.get("payload") if type(line) is dict and line.get("type") == "event_msg" else None
        item = payload.get("item") if type(payload) is dict and payload.get("type") == "item_completed" else None
        if type(item) is not dict or item.get("type") != "CommandExecution" or type(item.get("id")) is not str:
            continue
        code, status = item.get("exit_code"), item.get("status")
        if status != "completed" or (code is not None and code != 0):
            failed[item["id"]] = f"the command {status if isinstance(status, str) else 'ended'}" + (
                f" with exit code {code}" if type(code) is int else "")
    return failed
