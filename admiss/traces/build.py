"""What every trace reader shares: located errors, the run's steps with its tool calls
matched to their results, and the rules for arguments, results and tool errors.

A reader walks its source once, in order, calling ``Steps.add`` for each message step,
``Steps.call`` for each tool call and ``Steps.answer`` for each tool result; ``Steps.trace``
then builds the Trace, marking the last assistant text the final answer.
"""

from __future__ import annotations

import json
import re
from collections import deque
from typing import Any, Iterator, NoReturn

import attrs

from admiss.bundle import TYPE_WORDS, repeated_key, type_word
from admiss.errors import Diagnostic, TraceError
from admiss.redact import clipped
from admiss.source import Source, Span
from admiss.traces.steps import (
    ASSISTANT_TEXT, BAD_ARGS, ERROR, FINAL_ANSWER, NO_RESULT, OK, REASONING, TOOL_CALL, Skipped, Step, StepRef, Trace, loads_json,
    result_value, visible_start,
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
    """``error_in`` of the result whose text is ``text``, reading the text as JSON when it
    is an object or array that could hold an error (a JSON text that gives one of the keys
    the rule reads twice in an object is an error: which of the two a reader believes is
    the reading that could pass a failed call)."""
    start = visible_start(text)
    head = text[start:start + 1]
    if head != "{" and head != "[":
        return error_in(text)
    # Every value that makes an object an error holds one of these in lower case, unless
    # written with an escape: most results hold none and are not parsed here (parsing and
    # checking every one took a trace's reading from 0.40x to 0.27x the speed of json.loads;
    # a mark of a key alone, such as "status", let a booking's "status": "confirmed" make
    # every result parsed, 0.27x again).
    if not _may_signal(text.lower()):
        return None
    try:
        value = loads_json(text[start:])
    except RecursionError:
        return error_in(text)
    except ValueError:
        try:  # an integer too long for int(): its digits still say nothing of an error
            value = json.loads(text[start:], parse_int=str)
        except (ValueError, RecursionError):  # not JSON after all: read as text
            return error_in(text)
    repeated = repeated_key(text[start:], value)
    if repeated is not None:
        return f"the result's JSON gives the key at {repeated} twice (read as a failure)"
    return error_in(value)


# The texts that producers put in place of a failed tool's output. The OpenAI Agents SDK's
# default failure_error_function answers every exception with the first (its arguments'
# JSON error with the second), and a call a person did not approve with the third.
FAILURE_TEXTS = (
    "an error occurred while running the tool",
    "an error occurred while parsing tool arguments",
    "tool execution was not approved",
)
# What the lower-cased text of a JSON result that could be an error holds (see text_error):
# "rror" is in every key and value of error_in's rules ("error", "isError", "is_error",
# a "status" of error in any case, ADK's ERROR_HANDLED_... answer, a "result" text that
# starts with error, the failure texts but the last), "approved" in the last failure
# text, and a backslash in any of them written with an escape.
_SIGNAL_MARKS = ("rror", "approved", "\\")


def _may_signal(lowered: str) -> bool:
    """Whether lower-cased text holds one of _SIGNAL_MARKS. Spelled out rather than ``any()``
    over a generator: twice as fast, and every OpenAI tool result of a conversation passes
    here (tests/traces/test_error_signals.py holds the two to the same answers)."""
    return "rror" in lowered or "approved" in lowered or "\\" in lowered


# ADK's ReflectAndRetryToolPlugin answers a tool's exception with this response_type.
_ADK_RETRY_ANSWER = "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"
def error_in(result: Any) -> str | None:
    """Why a tool result is an error, for formats that have no error flag; else None.

    A result is an error when it is a JSON object with a non-empty ``error`` field, with
    ``"status": "error"`` (any case), with an MCP ``isError`` (or ``is_error``) of true,
    or with ADK's retry plugin's ``response_type``; when it is an object whose only field
    ``result`` (ADK's wrapping of a tool's plain return value) is such a text; or when it is
    text whose first word (past blanks and invisible characters) is ``error`` in any case,
    ended by anything but a letter, digit or underscore (``Error: ...``, ``ERROR 404``,
    ``error``; not ``Errors: 0``), or that starts with one of ``FAILURE_TEXTS``.
    """
    if isinstance(result, dict):
        return _object_error(result)
    if isinstance(result, str):
        start = visible_start(result)
        head = result[start:start + 48].lower()
        if head[:5] == "error" and (len(head) == 5 or not (head[5].isalnum() or head[5] == "_")) or \
                head.startswith(FAILURE_TEXTS):
            return short(result[start:].strip())
    return None


def _object_error(result: dict) -> str | None:
    error = result.get("error")
    if error not in (None, False, "", {}, []):
        return short(error if isinstance(error, str) else json.dumps(error, ensure_ascii=False))
    status = result.get("status")
    key = "status" if isinstance(status, str) and status.lower() == "error" else _status_key(result)
    if key is not None:
        reason = result.get("error_message") or result.get("message")
        return short(reason) if isinstance(reason, str) else f"{key}: error"
    if result.get("isError") is True or result.get("is_error") is True:
        return short(_content_text(result.get("content")) or "isError: true")
    if result.get("response_type") == _ADK_RETRY_ANSWER:
        details = result.get("error_details") or result.get("error_type")
        return short(details) if isinstance(details, str) else "the tool raised an error"
    if len(result) == 1 and isinstance(result.get("result"), str):
        return error_in(result["result"])
    return None


def _status_key(result: dict) -> str | None:
    """A key of ``result`` ending in ``_status`` or ``Status`` whose value is "error" in any
    case: a tool's own status field (``"response_status": "Error"``, the C# agent's tool in
    Langfuse's test traces) says so as plainly as ``status`` does."""
    return next((key for key, value in result.items() if type(value) is str and type(key) is str
                 and key.endswith(("_status", "Status")) and value.lower() == "error"), None)


def _content_text(content: Any) -> str:
    """The text items of an MCP result's ``content``, joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return " ".join(item["text"] for item in content
                    if isinstance(item, dict) and isinstance(item.get("text"), str))


def int_text(text: str, max_digits: int = 20) -> int | None:
    """The integer ``text`` writes in ASCII digits (an optional "-", at most ``max_digits``
    digits), else None: ``str.isdigit`` takes "²" and other digits ``int`` refuses, and
    ``int`` refuses strings of more than 4,300 digits."""
    digits = text[1:] if text[:1] == "-" else text
    if digits.isascii() and digits.isdigit() and len(digits) <= max_digits:
        return int(text)
    return None


def short(text: str) -> str:
    """``text``, cut to a length fit to quote in a report (URL user-info masked first)."""
    return clipped(text, _ERROR_CHARS - 1, more="…")


class Steps:
    """The steps of one trace as a reader finds them, its tool calls open by id.

    A tool call is its Step from the start: its result, error and outcome are filled in
    when its result is read (an open call has no outcome yet), and ``trace`` settles the
    calls that got none.

    Pairing results with calls (docs/traces.md, "Pairing results with calls"): a result
    answers the open (unanswered) call with its id; an id may be used again once its call
    is answered. When several calls with one id are open, a result that names a tool
    answers the one open call of that tool; any other case of several open calls is
    ambiguous and refused (B023). A result with no id answers the earliest open call of
    its tool. Every look-up is by a dict and queues, so a trace is read in linear time.
    """

    def __init__(self, format: str, name: str):
        self.format, self.name = format, name
        self.items: list[Step] = []
        self.skipped: list[Skipped] = []
        self.calls: dict[str, list[Step]] = {}  # the calls with each id, in order
        self.tool_calls: list[Step] = []
        self._by_tool: dict[str | None, deque[Step]] = {}  # the calls of each tool, answered ones dropped lazily
        self._open: dict[str, int] = {}  # how many calls with each id are unanswered
        self._ids: dict[int, str] = {}  # the id of each call that has one, by the call's identity

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
        args, parsed = parse_arguments(arguments)
        call = Step(TOOL_CALL, ref, None, tool_name, args, parsed, None, None, None, None, None,
                    arguments if type(arguments) is str else None)  # by position: see StepRef
        if call_id is not None:  # a call with no id is answered by its tool name
            same = self.calls.get(call_id)
            if same is None:
                self.calls[call_id] = [call]
            else:
                same.append(call)
            self._open[call_id] = self._open.get(call_id, 0) + 1
            self._ids[id(call)] = call_id
        queue = self._by_tool.get(tool_name)
        if queue is None:
            self._by_tool[tool_name] = deque((call,))
        else:
            queue.append(call)
        self.items.append(call)
        self.tool_calls.append(call)
        return call

    def has_call(self, call_id: str) -> bool:
        """Whether a call with id ``call_id`` was made (answered or not)."""
        return call_id in self.calls

    def is_open(self, call_id: str) -> bool:
        """Whether a call with id ``call_id`` was made and has no result yet."""
        return self._open.get(call_id, 0) > 0

    def answer(self, call_id: str | None, result: Any, error: str | None, ref: StepRef, id_key: str,
               tool_name: str | None = None, from_text: bool = False) -> Step:
        """The result of the open call ``call_id`` (or, with no id, the earliest unanswered
        call of ``tool_name``), found at ``ref`` with its id at ``id_key`` under it;
        ``error`` says why it is an error result, if it is one.
        With ``from_text``, ``result`` is the result's text, read by ``result_value`` when
        the step's result is first used. Returns the call it answers."""
        call = self._open_call(call_id, tool_name, ref, id_key) if call_id is not None else self._unanswered(tool_name)
        if call is None:
            fail(self.name, _under(ref, id_key), f"a tool result for no tool call before it (id '{call_id}')"
                 if call_id is not None else f"a tool result for no unanswered call of '{tool_name}' before it",
                 DANGLING, hint="a result must come after the tool call it answers, naming the call's id")
        self.resolve(call, result, error, ref, from_text)
        return call

    def _open_call(self, call_id: str, tool_name: str | None, ref: StepRef, id_key: str) -> Step | None:
        """The one open call that a result naming ``call_id`` (and ``tool_name``) answers."""
        same = self.calls.get(call_id)
        if same is None:
            return None
        last = same[-1]
        if last.outcome is None and (len(same) == 1 or same[-2].outcome is not None):
            return last  # the common case: the id's one open call is its latest
        open_calls = [call for call in same if call.outcome is None]
        if not open_calls:
            fail(self.name, _under(ref, id_key), f"tool call '{call_id}' is answered twice", TWICE,
                 hint=f"its first result is at {(last.result_ref or last.ref).path}")
        if len(open_calls) > 1 and tool_name is not None:
            open_calls = [call for call in open_calls if call.tool_name == tool_name] or open_calls
        if len(open_calls) > 1:
            fail(self.name, _under(ref, id_key), f"{len(open_calls)} unanswered tool calls have the id '{call_id}': "
                 "which one this result answers is ambiguous", TWICE,
                 hint="each call that is open at once needs its own id (the calls are at "
                      + ", ".join(call.ref.path for call in open_calls) + ")")
        return open_calls[0]

    def resolve(self, call: Step, result: Any, error: str | None, ref: StepRef | None, from_text: bool = False
                ) -> None:
        """Give ``call`` its result, found at ``ref`` (None: in the call's own element)."""
        self._close(call)
        call.outcome = OK if error is None else ERROR
        call.error = error
        call.result_ref = ref
        if from_text:
            call._result_text = result
        else:
            call._result = result

    def no_result(self, call: Step, ref: StepRef, reason: str) -> None:
        """Close ``call``: its answer, at ``ref``, carries no result (``reason`` says how)."""
        self._close(call)
        call.outcome, call.error, call.result_ref = NO_RESULT, reason, ref

    def has_open_call_of(self, tool_name: str) -> bool:
        """Whether a call of ``tool_name`` has no result yet (a span or run that executes a
        tool without naming the call answers it)."""
        return self._unanswered(tool_name) is not None

    def _close(self, call: Step) -> None:
        call_id = self._ids.get(id(call))
        if call.outcome is None and call_id is not None:
            self._open[call_id] -= 1

    def _unanswered(self, tool_name: str | None) -> Step | None:
        """The earliest unanswered call of ``tool_name``."""
        queue = self._by_tool.get(tool_name)
        while queue and queue[0].outcome is not None:
            queue.popleft()
        return queue[0] if queue else None

    def trace(self, model: str | None = None) -> Trace:
        """The Trace: calls that got no result, or whose arguments do not parse, say so;
        a run whose last step is the agent's own text has that text as its final answer
        (a run that ends on a tool call, or on the user's turn, has none)."""
        for call in self.tool_calls:
            if not call.args_parsed:  # whatever came back: the call itself was broken
                call.outcome, call.error = BAD_ARGS, "arguments are not valid JSON"
            elif call.outcome is None:  # an error said while it was open says why it got none
                call.outcome, call.error = NO_RESULT, call.error or "no result"
        steps = self.items
        for i in range(len(steps) - 1, -1, -1):
            if steps[i].type == REASONING:
                continue  # thinking after the answer does not take the answer back
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


def located(error: TraceError, text: str, line_offset: int = 0, file: str | None = None, within: str = ""
            ) -> TraceError:
    """``error`` with each reader diagnostic (``path: message``, as ``fail`` words them)
    given the line and column where its JSON path stands in ``text``, the trace's raw JSON
    (a line of a file when ``line_offset``), its paths starting at the path ``within``; the
    source is kept to quote the line. Located diagnostics take the name ``file``, if given."""
    diagnostics = []
    for diagnostic in error.diagnostics:
        path = diagnostic.message.split(": ", 1)[0]
        offset = json_offset(text, f"{within}.{path}" if within else path) if diagnostic.code in _LOCATED else None
        if offset is not None:
            line = text.count("\n", 0, offset) + 1
            column = offset - (text.rfind("\n", 0, offset) + 1) + 1
            diagnostic = attrs.evolve(diagnostic, span=Span.point(line + line_offset, column),
                                      file=file or diagnostic.file)
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


def located_at(error: TraceError, text: str, where: "int | list[int]", file: str | None = None,
               run: str = "") -> TraceError:
    """``error`` located in ``text``: by the line its text starts after (``located``), or by
    the line each value of an event log starts at (``located_in_lines``). ``file``: the name
    located diagnostics take (a .jsonl line's file, where its run is named file:N); ``run``:
    the run's name, whose ``#[i]`` parts (an item of a JSON array of runs) say where in the
    text the paths of its diagnostics start."""
    if isinstance(where, list):
        return located_in_lines(error, text, where)
    return located(error, text, where, file, "".join(re.findall(r"#(\[\d+\])", run)))


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
