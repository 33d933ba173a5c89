"""The format-neutral trace: a list of steps, each with a reference back into its source.

Every trace reader (one module per format in this package) turns its format into a
``Trace``; the evidence mapping (``mapping.py``) reads only these types, so a new format
never touches the mapping and the mapping never knows a format.
"""

from __future__ import annotations

from typing import Any

import attrs

# What a step is. A reader marks the last assistant text of the run FINAL_ANSWER.
USER, SYSTEM, ASSISTANT_TEXT, REASONING, TOOL_CALL, FINAL_ANSWER = (
    "user", "system", "assistant_text", "reasoning", "tool_call", "final_answer",
)
STEP_TYPES = (USER, SYSTEM, ASSISTANT_TEXT, REASONING, TOOL_CALL, FINAL_ANSWER)

# How a tool call ended. Only OK counts as a successful call.
OK, ERROR, NO_RESULT, BAD_ARGS = "ok", "error", "no_result", "bad_args"
OUTCOMES = (OK, ERROR, NO_RESULT, BAD_ARGS)


@attrs.frozen
class StepRef:
    """Where a step came from, stable across reads of the same file.

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

    def to_dict(self) -> dict[str, Any]:
        """The reference as JSON, without the fields the format does not give."""
        # Read field by field, not with attrs.asdict: every evidence item of a trace makes one.
        return {key: value for key in _REF_FIELDS if (value := getattr(self, key)) is not None}


_REF_FIELDS = tuple(field.name for field in attrs.fields(StepRef))


@attrs.frozen
class Step:
    """One step of an agent run.

    ``text`` is the message, reasoning or final answer text. For a TOOL_CALL: ``tool_name``;
    ``args`` (parsed JSON where the format sent JSON text, else the text, with
    ``args_parsed`` False); ``result`` (the tool's result, JSON-parsed where it parses, else
    its text; None when no result came back); ``outcome`` (one of OUTCOMES); ``error`` (a
    short reason when the outcome is not OK); ``result_ref`` (where the result stood, when
    apart from the call).
    """

    type: str
    ref: StepRef
    text: str | None = None
    tool_name: str | None = None
    args: Any = None
    args_parsed: bool = True
    result: Any = None
    outcome: str | None = None
    error: str | None = None
    result_ref: StepRef | None = None


@attrs.frozen
class Skipped:
    """An element of the source that a reader read but made no step of, and why.

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
