"""What every trace reader shares: located errors, the run's steps with its tool calls
matched to their results, and the rules for arguments, results and tool errors.

A reader walks its source once, in order, calling ``Steps.add`` for each message step,
``Steps.call`` for each tool call and ``Steps.answer`` for each tool result; ``Steps.trace``
then builds the Trace, marking the last assistant text the final answer.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator, NoReturn

import attrs

from admiss.bundle import TYPE_WORDS, type_word
from admiss.errors import Diagnostic, TraceError
from admiss.source import Source, Span
from admiss.traces.steps import (
    ASSISTANT_TEXT, BAD_ARGS, ERROR, FINAL_ANSWER, NO_RESULT, OK, TOOL_CALL, Skipped, Step, StepRef, Trace, loads_json,
    result_value,
)

# B021: a value of the wrong type, or a field missing, inside a recognised format.
# B022: a tool result that answers no tool call before it.
# B023: two tool calls with one id, or one call answered twice.
SHAPE, DANGLING, TWICE = "B021", "B022", "B023"
# The codes whose message starts with the JSON path of what broke.
_LOCATED = frozenset((SHAPE, DANGLING, TWICE, "B026"))

# Tool errors and results are quoted in reports; a whole page of traceback is not needed.
_ERROR_CHARS = 200


def fail(name: str, path: str, message: str, code: str = SHAPE, hint: str | None = None) -> NoReturn:
    """Raise TraceError ``code`` for the element at JSON ``path`` of trace ``name``."""
    raise TraceError([Diagnostic(code, f"{path}: {message}", hint=hint, file=name)])


def typed(value: Any, kind: type, name: str, path: str) -> Any:
    """``value`` when it is a ``kind`` (dict, list or str), else B021 at ``path``."""
    if type(value) is not kind and not isinstance(value, kind):
        fail(name, path, f"must be {TYPE_WORDS[kind]}, not {type_word(value)}")
    return value


class Mismatch(Exception):
    """A value is not of a format: ``args`` are the JSON path and why (for B020)."""


def message_dicts(value: Any) -> Iterator[tuple[str, dict]]:
    """Each message of a messages-shaped trace (an array of messages, or an object with a
    "messages" array) with its JSON path; Mismatch where that shape breaks. The formats
    that share the shape (Chat Completions, Anthropic) then test what is theirs."""
    if isinstance(value, dict):
        if "messages" not in value:
            raise Mismatch("$", "no \"messages\" array")
        messages, base = value["messages"], "messages"
        if not isinstance(messages, list):
            raise Mismatch(base, "not an array")
    elif isinstance(value, list):
        messages, base = value, "$"
    else:
        raise Mismatch("$", "neither an array of messages nor an object with \"messages\"")
    for i, message in enumerate(messages):
        where = f"{base}[{i}]"
        if not isinstance(message, dict):
            raise Mismatch(where, "a message must be an object")
        yield where, message


def field(holder: dict, key: str, kind: type, name: str, path: str) -> Any:
    """``holder[key]`` when it is there and a ``kind``, else B021 naming ``path.key``."""
    value = holder.get(key, _MISSING)
    if type(value) is kind:
        return value
    if value is _MISSING:
        fail(name, f"{path}.{key}", "missing")
    return typed(value, kind, name, f"{path}.{key}")


_MISSING = object()


def parse_arguments(value: Any) -> tuple[Any, bool]:
    """Tool-call arguments and whether they are usable: JSON text is parsed; text that does
    not parse is kept as it is, marked unparsed; an already structured value is kept."""
    if not isinstance(value, str):
        return value, True
    try:
        return loads_json(value), True
    except (ValueError, RecursionError):  # not JSON, a huge number, or nested too deeply
        return value, False


def text_error(text: str) -> str | None:
    """``error_in`` of the result whose text is ``text``, reading the text as JSON only when
    it could hold an error: an object's ``error`` key or ``"error"`` status must be written
    with those letters, or with an escape (a backslash, found faster than ``\\u``)."""
    head = text[:1]
    if head.isspace():
        head = text.lstrip()[:1]
    if (head == "{" or head == "[") and "error" not in text and "\\" not in text:
        return None
    return error_in(result_value(text))


def error_in(result: Any) -> str | None:
    """Why a tool result is an error, for formats that have no error flag; else None.

    A result is an error when it is a JSON object with a non-empty ``error`` field, or with
    ``"status": "error"``; or text whose first word is ``error`` in any case, ended by
    anything but a letter, digit or underscore (``Error: ...``, ``ERROR 404``, ``error``;
    not ``Errors: 0``).
    """
    if isinstance(result, dict):
        error = result.get("error")
        if error not in (None, False, "", {}, []):
            return short(error if isinstance(error, str) else json.dumps(error, ensure_ascii=False))
        if result.get("status") == "error":
            reason = result.get("error_message") or result.get("message")
            return short(reason) if isinstance(reason, str) else "status: error"
        return None
    if isinstance(result, str):
        head = result.lstrip()[:6]
        if head[:5].lower() == "error" and (len(head) == 5 or not (head[5].isalnum() or head[5] == "_")):
            return short(result.strip())
    return None


def short(text: str) -> str:
    """``text``, cut to a length fit to quote in a report."""
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"


class Steps:
    """The steps of one trace as a reader finds them, its tool calls open by id.

    A tool call is its Step from the start: its result, error and outcome are filled in
    when its result is read (an open call has no outcome yet), and ``trace`` settles the
    calls that got none.
    """

    def __init__(self, format: str, name: str):
        self.format, self.name = format, name
        self.items: list[Step] = []
        self.skipped: list[Skipped] = []
        self.calls: dict[str, Step] = {}
        self.tool_calls: list[Step] = []

    def add(self, step: Step) -> None:
        """A step that is not a tool call."""
        self.items.append(step)

    def position(self) -> int:
        """Where the next step will stand, for ``insert``."""
        return len(self.items)

    def insert(self, position: int, step: Step) -> None:
        """Put ``step`` at ``position``: a step read after the steps that must follow it."""
        self.items.insert(position, step)

    def skip(self, ref: StepRef, reason: str) -> None:
        """An element of the source that gives no step, and why."""
        self.skipped.append(Skipped(ref, reason))

    # Where a call's or result's id stands is given as its key under the step's element
    # (``ref.path``), and made a path only for an error: most traces have none.
    def call(self, ref: StepRef, tool_name: str, arguments: Any, call_id: str | None, id_key: str = "") -> Step:
        """A tool call with its ``arguments`` as the source gives them (JSON text, read by
        ``parse_arguments``, or a value); ``call_id`` (at ``id_key`` under the call's
        element) is how its result will name it."""
        if call_id in self.calls:
            fail(self.name, _under(ref, id_key), f"a second tool call with id '{call_id}'", TWICE,
                 hint="each tool call needs its own id, so its result can name it")
        args, parsed = parse_arguments(arguments)
        call = Step(TOOL_CALL, ref, None, tool_name, args, parsed,
                    args_text=arguments if type(arguments) is str else None)
        if call_id is not None:  # a call with no id is answered by its tool name
            self.calls[call_id] = call
        self.items.append(call)
        self.tool_calls.append(call)
        return call

    def has_call(self, call_id: str) -> bool:
        """Whether a call with id ``call_id`` was made (answered or not)."""
        return call_id in self.calls

    def is_open(self, call_id: str) -> bool:
        """Whether the call ``call_id`` was made and has no result yet."""
        call = self.calls.get(call_id)
        return call is not None and call.outcome is None

    def answer(self, call_id: str | None, result: Any, error: str | None, ref: StepRef, id_key: str,
               tool_name: str | None = None, from_text: bool = False) -> None:
        """The result of the open call ``call_id`` (or, with no id, the earliest unanswered
        call of ``tool_name``), found at ``ref`` with its id at ``id_key`` under it;
        ``error`` says why it is an error result, if it is one.
        With ``from_text``, ``result`` is the result's text, read by ``result_value`` when
        the step's result is first used."""
        call = self.calls.get(call_id) if call_id is not None else self._unanswered(tool_name)
        if call is None:
            fail(self.name, _under(ref, id_key), f"a tool result for no tool call before it (id '{call_id}')"
                 if call_id is not None else f"a tool result for no unanswered call of '{tool_name}' before it",
                 DANGLING, hint="a result must come after the tool call it answers, naming the call's id")
        if call.outcome is not None:
            fail(self.name, _under(ref, id_key), f"tool call '{call_id or tool_name}' is answered twice", TWICE,
                 hint=f"its first result is at {(call.result_ref or call.ref).path}")
        self.resolve(call, result, error, ref, from_text)

    @staticmethod
    def resolve(call: Step, result: Any, error: str | None, ref: StepRef | None, from_text: bool = False) -> None:
        """Give ``call`` its result, found at ``ref`` (None: in the call's own element)."""
        call.outcome = OK if error is None else ERROR
        call.error = error
        call.result_ref = ref
        if from_text:
            call._result_text = result
        else:
            call._result = result

    def _unanswered(self, tool_name: str | None) -> Step | None:
        """The earliest unanswered call of ``tool_name``."""
        return next((call for call in self.tool_calls if call.outcome is None and call.tool_name == tool_name), None)

    def trace(self, model: str | None = None) -> Trace:
        """The Trace: calls that got no result, or whose arguments do not parse, say so;
        the last assistant text is the final answer."""
        for call in self.tool_calls:
            if not call.args_parsed:  # whatever came back: the call itself was broken
                call.outcome, call.error = BAD_ARGS, "arguments are not valid JSON"
            elif call.outcome is None:
                call.outcome, call.error = NO_RESULT, "no result"
        steps = self.items
        for i in range(len(steps) - 1, -1, -1):
            if steps[i].type == ASSISTANT_TEXT:
                last = steps[i]
                steps[i] = Step(FINAL_ANSWER, last.ref, text=last.text)
                break
        return Trace(self.format, tuple(steps), model if isinstance(model, str) else None, tuple(self.skipped))


def _under(ref: StepRef, key: str) -> str:
    return f"{ref.path}.{key}" if key else ref.path


# ---------------------------------------------------------------- locating errors in the raw text

_SEGMENT = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\["[^"]*"\]')
_DECODER = json.JSONDecoder()
_BLANKS = " \t\r\n"


def located(error: TraceError, text: str, line_offset: int = 0) -> TraceError:
    """``error`` with each reader diagnostic (``path: message``, as ``fail`` words them)
    given the line and column where its JSON path stands in ``text``, the trace's raw JSON
    (a line of a file when ``line_offset``); the source is kept to quote the line."""
    diagnostics = []
    for diagnostic in error.diagnostics:
        path = diagnostic.message.split(": ", 1)[0]
        offset = json_offset(text, path) if diagnostic.code in _LOCATED else None
        if offset is not None:
            line = text.count("\n", 0, offset) + 1
            column = offset - (text.rfind("\n", 0, offset) + 1) + 1
            diagnostic = attrs.evolve(diagnostic, span=Span.point(line + line_offset, column))
        diagnostics.append(diagnostic)
    return TraceError(diagnostics, Source(diagnostic.file or "<input>", "\n" * line_offset + text))


def json_offset(text: str, path: str) -> int | None:
    """Where, in JSON ``text``, the deepest element on ``path`` (``messages[3].role``) that
    the text has starts; None when the text is not the JSON the path walks."""
    position = _skip_blanks(text, 0)
    for match in _SEGMENT.finditer(path):
        key, index = match.group(1), match.group(2)
        if key is None and index is None:
            break  # a key inside an attribute's JSON text: the attribute is as deep as the text goes
        try:
            found = _member(text, position, key) if key is not None else _item(text, position, int(index))
        except (ValueError, IndexError, RecursionError):
            found = None
        if found is None:
            break
        position = found
    return position if text.strip() else None


def _skip_blanks(text: str, position: int) -> int:
    while position < len(text) and text[position] in _BLANKS:
        position += 1
    return position


def _member(text: str, position: int, key: str) -> int | None:
    """Where the value of ``key`` starts in the object at ``position``."""
    if text[position] != "{":
        return None
    position = _skip_blanks(text, position + 1)
    while text[position] == '"':
        name, position = json.decoder.scanstring(text, position + 1)
        position = _skip_blanks(text, _skip_blanks(text, position) + 1)  # past the colon
        if name == key:
            return position
        position = _skip_blanks(text, _DECODER.raw_decode(text, position)[1])
        if text[position] != ",":
            return None
        position = _skip_blanks(text, position + 1)
    return None


def _item(text: str, position: int, index: int) -> int | None:
    """Where item ``index`` starts in the array at ``position``."""
    if text[position] != "[":
        return None
    position = _skip_blanks(text, position + 1)
    for _ in range(index):
        if text[position] == "]":
            return None
        position = _skip_blanks(text, _DECODER.raw_decode(text, position)[1])
        if text[position] != ",":
            return None
        position = _skip_blanks(text, position + 1)
    return None if text[position] == "]" else position


def located_in_lines(error: TraceError, text: str, starts: list[int]) -> TraceError:
    """``error`` of an event log read as the array of its lines' values (``$[i]`` is the
    i-th non-blank line, which starts at line ``starts[i]`` of the file's ``text``), each
    reader diagnostic given the line and column where its path stands."""
    lines = text.split("\n")
    diagnostics = []
    for diagnostic in error.diagnostics:
        path = diagnostic.message.split(": ", 1)[0]
        match = re.match(r"\$\[(\d+)\]", path) if diagnostic.code in _LOCATED else None
        if match is not None and int(match.group(1)) < len(starts):
            number = starts[int(match.group(1))]
            offset = json_offset(lines[number - 1], "$" + path[match.end():])
            if offset is not None:
                diagnostic = attrs.evolve(diagnostic, span=Span.point(number, offset + 1))
        diagnostics.append(diagnostic)
    return TraceError(diagnostics, Source(diagnostics[0].file or "<input>", text))
