"""JSON in and out through orjson: the one module that imports it.

orjson parses bundles about three times and writes reports about ten times faster than the
standard library (measured in docs/performance.md). The standard library stays where
orjson cannot do what is needed: wording and locating a syntax error (bundle.py), and
writing a value that orjson refuses (below).

Output is deterministic: fields in the order the report builds them, no spaces, UTF-8.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from admiss import limits
from admiss.untrusted import UntrustedInput

DecodeError = orjson.JSONDecodeError
loads = orjson.loads


def loads_any(data: bytes | str) -> Any:
    """``data`` parsed by orjson, else by the standard library, which also takes what orjson
    refuses (a lone surrogate escape, a number beyond a double); ValueError when neither can."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def loads_marked(data: bytes | str) -> tuple[Any, bool]:
    """:func:`loads_any`'s value, and whether orjson read it: then the value holds only
    JSON's own values (no NaN nor infinity, every integer within 64 bits, no lone
    surrogate), so that :func:`exact_text` of any part of it tells it from every other."""
    try:
        return orjson.loads(data), True
    except orjson.JSONDecodeError:
        return json.loads(data), False


def dumps_line(value: Any) -> bytes:
    """``value`` as one line of compact JSON (no final newline)."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return _dumps_escaped(value, None)


def exact_text(value: Any) -> bytes | None:
    """orjson's compact JSON text of ``value``, or None where orjson cannot write it (a lone
    surrogate, an integer beyond 64 bits, nesting too deep): a key for a value, not output."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return None


def with_part(value: dict, key: str, text: bytes) -> bytes | None:
    """:func:`exact_text` of ``value`` whose member ``key`` is already written as ``text``
    (which must be :func:`exact_text` of that member): the rest is written, ``text`` copied
    in as it is. None where orjson cannot write the rest."""
    try:
        return orjson.dumps({**value, key: orjson.Fragment(text)})
    except orjson.JSONEncodeError:
        return None


def joined_arrays(texts: list[bytes]) -> bytes:
    """The exact text of one array holding the items of the arrays written as ``texts``
    (each :func:`exact_text` of a non-empty list or tuple), in order: theirs, copied, not
    written again."""
    return b"[" + b",".join([text[1:-1] for text in texts]) + b"]"


def exact_texts(values: list) -> list[bytes | None]:
    """:func:`exact_text` of each of ``values``."""
    try:
        return [orjson.dumps(value) for value in values]
    except orjson.JSONEncodeError:
        return [exact_text(value) for value in values]


def dumps_indented(value: Any) -> bytes:
    """``value`` as JSON indented by two spaces (no final newline)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError:
        return _dumps_escaped(value, 2)


def _dumps_escaped(value: Any, indent: int | None) -> bytes:
    """What orjson refuses, written by the standard library with every non-ASCII character
    as a \\u escape, in the same layout.

    orjson refuses a string holding a lone surrogate (which a bundle can bring in as the
    escape "\\ud800") and an integer beyond 64 bits. The escape is valid JSON and gives the
    reader back the very string the bundle held, so only that one report is written this
    way; every other report keeps its UTF-8.
    """
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(_finite(value), ensure_ascii=True, indent=indent, separators=separators,
                      allow_nan=False).encode("ascii")


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as null, as orjson writes them (JSON has neither)."""
    if type(value) is float:
        return value if math.isfinite(value) else None
    if type(value) is dict:
        return {key: _finite(item) for key, item in value.items()}
    if type(value) is list or type(value) is tuple:
        return [_finite(item) for item in value]
    return value


# ---------------------------------------------------------------- untrusted JSON


class LongInteger(ValueError):
    """A JSON integer with more digits than limits.MAX_INTEGER_DIGITS; carries its text."""


def bounded_int(digits: str) -> int:
    """``digits`` as an int; LongInteger past Python's own int-conversion limit, on every version."""
    if len(digits.lstrip("-")) > limits.MAX_INTEGER_DIGITS:
        raise LongInteger(digits)
    return int(digits)


class UnreadableJSON(UntrustedInput):
    """Untrusted JSON text admiss refuses to read; the message is a reason fit for a report.

    ``well_formed`` is False when the text is not JSON at all, True when it is JSON by the
    grammar but breaks a rule admiss keeps for every reader downstream: an integer longer
    than limits.MAX_INTEGER_DIGITS, a number beyond a double's range, nesting too deep to
    read, a key repeated in one object.
    """

    def __init__(self, reason: str, well_formed: bool):
        super().__init__(reason)
        self.well_formed = well_formed


class _NotFinite(ValueError):
    pass


class _Constant(ValueError):
    pass


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


def _constant(name: str) -> Any:
    raise _Constant(name)


def _lenient_int(digits: str) -> int | float:
    return float(digits) if len(digits.lstrip("-")) > limits.MAX_INTEGER_DIGITS else int(digits)


def loads_untrusted(text: str, lenient_numbers: bool = False) -> Any:
    """The JSON value of ``text``, every number exact, or UnreadableJSON saying why not.

    The standard library reads it, not orjson: orjson reads an integer beyond 64 bits as a
    float, losing the digits a schema's ``maximum`` or ``const`` compares. Whatever the text
    makes the reader raise becomes UnreadableJSON, so no text can raise anything else here.
    A key repeated in one object is refused, not read as its last value (which a reviewer,
    or another reader, may not see): the reading that lets it pass may not be the one meant.
    With ``lenient_numbers`` an integer too long to read exactly, or a number beyond a
    double, is read as a float (maybe infinite) instead, for text whose numbers matter only
    when they are in a small range (a gate program's score) and are otherwise ignored.
    """
    integers, floats = (_lenient_int, float) if lenient_numbers else (bounded_int, _finite_float)
    try:
        value = json.loads(text, parse_int=integers, parse_float=floats, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise UnreadableJSON(f"{exc.msg} at line {exc.lineno} column {exc.colno}", well_formed=False) from None
    except _Constant as exc:
        raise UnreadableJSON(f"{exc} is not a JSON value", well_formed=False) from None
    except LongInteger as exc:
        digits = len(str(exc).lstrip("-"))
        raise UnreadableJSON(f"an integer of {digits:,} digits; the limit is {limits.MAX_INTEGER_DIGITS:,}",
                             well_formed=True) from None
    except _NotFinite as exc:
        raise UnreadableJSON(f"the number {_clipped(str(exc))} is beyond a double's range", well_formed=True) from None
    except RecursionError:
        raise UnreadableJSON("nested too deeply to read", well_formed=True) from None
    try:
        found = first_repeated_key(text, value)
    except RecursionError:
        raise UnreadableJSON("nested too deeply to check for a repeated key", well_formed=True) from None
    if found is not None:
        path, offset = found
        line, column = line_column(text, offset)
        raise UnreadableJSON(f"{path}: key given twice in one object at line {line} column {column} "
                             "(a reader would keep one of them without a word)", well_formed=True)
    return value


def _clipped(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:20]}...{text[-10:]} ({len(text):,} characters)"


# Repeated keys. A JSON decoder keeps the last of a repeated key without a word, so a text
# could show a reviewer one value and hand admiss another. Finding them needs a walk in
# Python, so it runs only when a count done in C says a key may have been dropped:
#
#   colons in the text + ":" escapes (\u003a) in it  =  keys + colons in every string written
#   colons in the decoded value written back compactly  =  keys kept + colons in strings kept
#
# Every key has exactly one colon outside strings, and a colon in a string is written as
# itself or as an escape, so the first count minus the second is the number of keys dropped
# plus the colons in the strings dropped with them (plus other \\u003 escapes): never
# negative, and zero only when nothing was dropped. So equal counts prove there is no
# repeated key, and any difference runs the exact walk below.


def first_repeated_key(text: str | bytes, value: Any, back: bytes | None = None) -> tuple[str, int] | None:
    """(JSON path, offset in the text as str) of the first key repeated within one object of
    ``text``, which decoded to ``value``; None when no key is. RecursionError when the text is
    nested too deeply to walk (a repeat can then be neither ruled out nor located).
    ``back``: :func:`exact_text` of ``value``, when the caller has it made (see :func:`with_part`)."""
    if not _may_repeat_keys(text, value, back):
        return None
    return _RepeatedKeys(as_text(text)).first(0, "")


def _may_repeat_keys(text: str | bytes, value: Any, back: bytes | None) -> bool:
    if not isinstance(value, (dict, list)):
        return False
    # Text that is the value written back, byte for byte, repeats no key: an object written
    # back has each of its keys once. A client that writes compact UTF-8 JSON (orjson, the
    # official SDKs' httpx) sends such text, and one comparison then saves both counts,
    # which took about as long as writing the value back (timeit, a 5.6 kB agent request).
    # orjson refuses deep nesting with an error, so writing back cannot exhaust the stack.
    if back is None:
        back = exact_text(value)
    if back is not None and back == text:
        return False
    # \u003 starts both spellings of the colon escape (\u003a, \u003A) and a few other
    # escapes: counting those too only ever errs towards the exact walk.
    colon, escape = (":", "\\u003") if isinstance(text, str) else (b":", b"\\u003")
    written = text.count(colon) + text.count(escape)
    if not written:
        return False  # no key at all (writing deep arrays back could exhaust the stack)
    # What orjson refuses (a lone surrogate) jsonio writes with escapes, which add no colon.
    return written != (back if back is not None else dumps_line(value)).count(b":")


def member_path(path: str, key: str) -> str:
    """The JSON path of member ``key`` of the object at ``path`` ("" is the root)."""
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path or '$'}[{json.dumps(key)}]"


class _RepeatedKeys:
    """A walk over JSON text already known to be valid, tracking each object's keys."""

    _BLANKS = re.compile(r"[ \t\n\r]*")

    def __init__(self, text: str):
        self.text = text
        self.scalar_end = json.JSONDecoder(parse_int=_lenient_int, parse_float=float).scan_once

    def skip(self, pos: int) -> int:
        return self._BLANKS.match(self.text, pos).end()

    def first(self, pos: int, path: str) -> tuple[str, int] | None:
        """(JSON path, offset) of the first repeated key in the value at ``pos``; sets self.end."""
        pos = self.skip(pos)
        opener = self.text[pos]
        if opener not in "{[":
            self.end = self.scalar_end(self.text, pos)[1]
            return None
        closer, seen, index = ("}" if opener == "{" else "]"), set(), 0
        pos = self.skip(pos + 1)
        while self.text[pos] != closer:
            if opener == "{":
                key, after = json.decoder.scanstring(self.text, pos + 1)
                where = member_path(path, key)
                if key in seen:
                    return where, pos
                seen.add(key)
                pos = self.skip(after) + 1  # past the colon
            else:
                where, index = f"{path or '$'}[{index}]", index + 1
            found = self.first(pos, where)
            if found is not None:
                return found
            pos = self.skip(self.end)
            if self.text[pos] == ",":
                pos = self.skip(pos + 1)
        self.end = pos + 1
        return None


def nested_deeper_than(value: Any, depth: int) -> bool:
    """Whether a JSON value nests more than ``depth`` arrays and objects (``[]`` is one, ``[[]]``
    two), walked with an explicit stack so that any depth is measured."""
    pending = [(value, 0)]
    while pending:
        value, level = pending.pop()
        if isinstance(value, (dict, list)):
            if level == depth:
                return True
            pending.extend((child, level + 1) for child in (value.values() if isinstance(value, dict) else value))
    return False


def as_text(text: str | bytes) -> str:
    """``text`` as str (bytes decoded as UTF-8, anything undecodable replaced)."""
    return text if isinstance(text, str) else text.decode("utf-8", "replace")


def line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``text``."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1
