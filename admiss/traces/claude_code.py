"""Claude Code session transcripts (``~/.claude/projects/<project>/<session>.jsonl``): one
JSON object per line, read as a whole file (the array of its lines' values: ``$[i]`` is
line i+1), one session per file.

A line's ``type`` says what it is: ``user`` and ``assistant`` lines carry an Anthropic
Messages ``message`` (``role`` and ``content``: a string, or content blocks); Claude Code
writes each block of an assistant reply on a line of its own. ``text`` blocks give ``user``
or ``assistant_text`` steps, ``thinking`` blocks ``reasoning`` steps, ``tool_use`` blocks
tool calls, and a ``tool_result`` block answers the call its ``tool_use_id`` names. Lines of
other types (``summary``, ``system``, ``file-history-snapshot``, ...), Claude Code's own
notes to the model (``isMeta``) and a subagent's lines (``isSidechain``: its work reaches
the session as the result of the ``Task`` call that ran it) are skipped.

Errors: a ``tool_result`` with ``"is_error": true`` (a command that failed, a tool use the
user refused); nothing else is. The final answer is the last assistant text, when the
session ends on it.
"""

from __future__ import annotations

from typing import Any

from admiss.traces.build import Steps, fail, field, short, type_word, typed
from admiss.traces.steps import ASSISTANT_TEXT, REASONING, USER, Step, StepRef, Trace

NAME = "claude_code"
LINE_TYPES = frozenset(("user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"))
_TEXT_TYPES = {"user": USER, "assistant": ASSISTANT_TEXT}


def is_line(value: Any) -> bool:
    """Whether a .jsonl line's value is a line of a Claude Code transcript."""
    return isinstance(value, dict) and type(value.get("type")) is str and value["type"] in LINE_TYPES and (
        "sessionId" in value or "uuid" in value or value.get("type") == "summary")


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not a Claude Code transcript's lines, or None."""
    if not isinstance(value, list) or not value:
        return "$", "not the lines of a Claude Code transcript (a .jsonl file)"
    for i, line in enumerate(value):
        if not is_line(line):
            return f"$[{i}]", "not a Claude Code line (a \"type\" such as user or assistant, with a sessionId or uuid)"
    return None


def read(value: Any, name: str) -> Trace:
    """The Trace of a Claude Code transcript's lines; TraceError at the line that breaks."""
    steps = Steps(NAME, name)
    model = None
    for i, line in enumerate(typed(value, list, name, "$")):
        where = f"$[{i}]"
        kind = field(typed(line, dict, name, where), "type", str, name, where)
        ref = StepRef(NAME, where, i, event_id=line["uuid"] if type(line.get("uuid")) is str else None)
        if kind not in _TEXT_TYPES:
            steps.skip(ref, f"{kind} line")
        elif line.get("isSidechain") is True:
            steps.skip(ref, "a subagent's line (its work is the result of the call that ran it)")
        elif line.get("isMeta") is True:
            steps.skip(ref, "Claude Code's note to the model (isMeta)")
        else:
            message = field(line, "message", dict, name, where)
            _message(steps, kind, message, ref, name)
            if kind == "assistant" and type(message.get("model")) is str and message["model"] != "<synthetic>":
                model = message["model"]
    return steps.trace(model)


def _message(steps: Steps, kind: str, message: dict, ref: StepRef, name: str) -> None:
    where = f"{ref.path}.message"
    content = message.get("content")
    if type(content) is str:
        if content:
            steps.add(Step(_TEXT_TYPES[kind], ref, text=content))
        else:
            steps.skip(ref, f"{kind} line with no text")
        return
    if type(content) is not list:
        fail(name, f"{where}.content", f"must be a string or an array of blocks, not {type_word(content)}")
    texts: list[str] = []
    text_at = steps.position()
    for j, block in enumerate(content):
        at = f"{where}.content[{j}]"
        block_type = field(typed(block, dict, name, at), "type", str, name, at)
        block_ref = StepRef(NAME, at, ref.message_index, event_id=ref.event_id)
        if block_type == "text":
            text_at = text_at if texts else steps.position()
            texts.append(field(block, "text", str, name, at))
        elif block_type == "thinking":
            steps.add(Step(REASONING, block_ref, text=field(block, "thinking", str, name, at)))
        elif block_type == "tool_use":
            call_id = field(block, "id", str, name, at)
            steps.call(StepRef(NAME, at, ref.message_index, call_id, event_id=ref.event_id),
                       field(block, "name", str, name, at), block.get("input", {}), call_id, "id")
        elif block_type == "tool_result":
            _result(steps, block, at, ref, name)
        else:
            steps.skip(block_ref, f"{block_type} block")
    if texts:
        steps.insert(text_at, Step(_TEXT_TYPES[kind], ref, text="".join(texts)))
    elif not content:
        steps.skip(ref, f"{kind} line with no content")


def _result(steps: Steps, block: dict, at: str, ref: StepRef, name: str) -> None:
    call_id = field(block, "tool_use_id", str, name, at)
    content = block.get("content", "")
    if type(content) is list:  # text and image blocks: the text is the result
        content = "\n".join(part["text"] for part in content if isinstance(part, dict) and type(part.get("text")) is str)
    elif type(content) is not str:
        fail(name, f"{at}.content", f"must be a string or an array of blocks, not {type_word(content)}")
    is_error = block.get("is_error", False)
    if is_error is not None and type(is_error) is not bool:
        typed(is_error, bool, name, f"{at}.is_error")
    steps.answer(call_id, content, (short(content) or "is_error: true") if is_error else None,
                 StepRef(NAME, at, ref.message_index, call_id, event_id=ref.event_id), "tool_use_id", from_text=True)
