"""The format-neutral trace: a list of steps, each with a reference back into its source.

Every trace reader (one module per format in this package) turns its format into a
``Trace``; the evidence mapping (``mapping.py``) reads only these types, so a new format
never touches the mapping and the mapping never knows a format.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import attrs

from admiss.jsonio import first_repeated_key, loads as fast_loads

# What a step is. A reader marks the last assistant text of the run FINAL_ANSWER.
USER, SYSTEM, ASSISTANT_TEXT, REASONING, TOOL_CALL, FINAL_ANSWER = (
    "user", "system", "assistant_text", "reasoning", "tool_call", "final_answer",
)
STEP_TYPES = (USER, SYSTEM, ASSISTANT_TEXT, REASONING, TOOL_CALL, FINAL_ANSWER)

# How a tool call ended. Only OK counts as a successful call.
OK, ERROR, NO_RESULT, BAD_ARGS = "ok", "error", "no_result", "bad_args"
OUTCOMES = (OK, ERROR, NO_RESULT, BAD_ARGS)


# StepRef and Step are read-only by contract but not frozen: a reader makes one of each
# per step, and a frozen class's constructor costs three times as much (a trace of 40 steps
# is read in well under a millisecond, and their construction was a fifth of it). Readers
# pass the fields of both by position where they make many: a construction with keywords
# took a third more instructions (about 3,700 against 2,400, under callgrind).
@attrs.define(unsafe_hash=True)  # hashable by value, as a read-only reference should be
class StepRef:
    """Where a step came from, stable across reads of the same file. Read-only.

    ``path`` is the JSON path of the step's element in the source (``messages[3]``,
    ``resourceSpans[0].scopeSpans[0].spans[4]``); the other fields are the identifiers the
    format itself gives, where it gives them.
    """

    format: str
    path: str
    message_index: int | None = None
    tool_call_id: str | None = None
    span_id: str | None = None
    event_id: str | None = None
    # The span's trace, where the format gives one with its span id (OTLP exports).
    trace_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The reference as JSON, without the fields the format does not give."""
        # Spelled out, not a loop over the fields: every evidence item of a trace makes one.
        out: dict[str, Any] = {"format": self.format, "path": self.path}
        if self.message_index is not None:
            out["message_index"] = self.message_index
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.span_id is not None:
            out["span_id"] = self.span_id
        if self.event_id is not None:
            out["event_id"] = self.event_id
        if self.trace_id is not None:
            out["trace_id"] = self.trace_id
        return out


class Step:
    """One step of an agent run. Read-only.

    ``text`` is the message, reasoning or final answer text. For a TOOL_CALL: ``tool_name``;
    ``args`` (parsed JSON where the format sent JSON text, else the text, with
    ``args_parsed`` False); ``args_text`` (the arguments as the source wrote them, when it
    wrote text); ``result`` (the tool's result, JSON-parsed where it parses, else
    its text; None when no result came back); ``outcome`` (one of OUTCOMES); ``error`` (a
    short reason when the outcome is not OK); ``result_ref`` (where the result stood, when
    apart from the call).

    A reader that has a result as text passes ``result_text`` instead of ``result``: it is
    read as JSON only when ``result`` is first asked for. Most results are never looked
    into (only a MAP rule's WHERE or DETAIL reads them), and parsing every one was a tenth
    of the time of checking a trace.
    """

    __slots__ = ("type", "ref", "text", "tool_name", "args", "args_parsed", "args_text", "_result", "_result_text",
                 "outcome", "error", "result_ref")

    def __init__(self, type: str, ref: StepRef, text: str | None = None, tool_name: str | None = None,
                 args: Any = None, args_parsed: bool = True, result: Any = None, outcome: str | None = None,
                 error: str | None = None, result_ref: StepRef | None = None, result_text: str | None = None,
                 args_text: str | None = None):
        # One statement per field: unpacking a tuple into them costs half as much again.
        self.type = type
        self.ref = ref
        self.text = text
        self.tool_name = tool_name
        self.args = args
        self.args_parsed = args_parsed
        self.args_text = args_text
        self.outcome = outcome
        self.error = error
        self.result_ref = result_ref
        self._result = result
        self._result_text = result_text

    @property
    def result(self) -> Any:
        if self._result_text is not None:
            self._result, self._result_text = result_value(self._result_text), None
        return self._result

    def _fields(self) -> tuple:
        return (self.type, self.ref, self.text, self.tool_name, self.args, self.args_parsed, self.args_text,
                self.result, self.outcome, self.error, self.result_ref)

    def __eq__(self, other: object) -> bool:
        if type(other) is not Step:
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # equal steps may hold unhashable args

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={value!r}" for name, value in zip(_STEP_FIELDS, self._fields()))
        return f"Step({values})"


_STEP_FIELDS = ("type", "ref", "text", "tool_name", "args", "args_parsed", "args_text", "result", "outcome", "error",
                "result_ref")


def result_value(text: str) -> Any:
    """A tool result's text, JSON-parsed when it is an object or array that parses (past
    blanks and invisible characters before it).

    Scalars stay text: a result reading ``null`` or ``true`` is still a result. So does JSON
    that repeats a key in one object: a decoder keeps the later value, and a MAP rule reading
    that field (WHERE, LABEL, DETAIL) could be shown one value and admit on the other, so
    no field of it is read (docs/security.md, "JSON inside a trace").
    """
    at = 0 if text[:1] == "{" or text[:1] == "[" else visible_start(text)
    start = text[at:at + 1]
    if start == "{" or start == "[":
        json_text = text[at:] if at else text
        try:
            value = loads_json(json_text)
            if first_repeated_key(json_text, value) is None:
                return value
        except (ValueError, RecursionError):
            pass
    return text


# Categories of characters that show nothing (a byte-order mark, zero-width spaces and
# joiners, direction marks): before a result's first word they would hide an "Error:" or a
# "{" from the rules that read it.
_INVISIBLE = frozenset(("Cf", "Zs", "Zl", "Zp", "Cc"))


def visible_start(text: str) -> int:
    """Where the first character of ``text`` that shows stands (past blanks and invisible characters)."""
    start = 0
    # The first test answers for nearly every text, without a category look-up; so does the
    # last for printable ASCII ("!" to "~": no character there is in _INVISIBLE), such as the
    # "{" of a JSON result.
    while start < len(text) and not text[start].isalnum() and (
            text[start].isspace() or not "!" <= text[start] <= "~" and unicodedata.category(text[start]) in _INVISIBLE):
        start += 1
    return start


def loads_json(text: str) -> Any:
    """The JSON value of ``text``; orjson reads tool arguments and results several times
    faster, and what it refuses (NaN, huge integers) the json module decides."""
    try:
        return fast_loads(text)
    except ValueError:
        return json.loads(text)


# Read-only by contract but not frozen, as StepRef: a trace of a Langfuse export skips one
# element per model turn that asks for tools, and the frozen constructor was 3% of its reading.
@attrs.define(unsafe_hash=True)
class Skipped:
    """An element of the source that a reader read but made no step of, and why. Read-only.

    With the steps (and their ``result_ref``), the skipped elements account for every
    element of the source exactly once: nothing a trace holds is silently lost.
    """

    ref: StepRef
    reason: str


@attrs.frozen
class Trace:
    """A whole run: its steps in order, and what a CHAIN gates (the final answer, the model).

    ``skipped`` lists the source elements that gave no step (an empty message, an item type
    that carries no evidence), each with its reason.
    """

    format: str
    steps: tuple[Step, ...]
    model: str | None = None
    skipped: tuple[Skipped, ...] = ()

    @property
    def final_answer(self) -> str | None:
        """The text of the run's FINAL_ANSWER step, if it has one."""
        for step in reversed(self.steps):
            if step.type == FINAL_ANSWER:
                return step.text
        return None

    @property
    def prompt(self) -> str | None:
        """The first user message's text: the task the run was given."""
        return next((step.text for step in self.steps if step.type == USER), None)

    def warnings(self) -> list[str]:
        """What a reader of the report must be told: a trace that gives no steps (a check
        would say "no evidence" as if the agent did nothing), with what its elements were."""
        if self.steps:
            return []
        reasons: dict[str, int] = {}
        for skipped in self.skipped:
            reasons[skipped.reason] = reasons.get(skipped.reason, 0) + 1
        found = "; ".join(f"{count} × {reason}" for reason, count in reasons.items())
        return [f"the trace gives no steps ({found or 'it holds nothing'}): nothing in it is evidence"]

    def request_messages(self) -> list[dict[str, str]]:
        """The run's system and user messages, in order, as chat messages: the request a
        rung's model is sent to answer the same task (``admiss check --live``). The agent's
        own steps (its tool calls and replies) are its work, not the task, and are left out."""
        roles = {SYSTEM: "system", USER: "user"}
        return [{"role": roles[step.type], "content": step.text or ""} for step in self.steps if step.type in roles]
