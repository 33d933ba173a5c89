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
from typing import Any

import orjson

DecodeError = orjson.JSONDecodeError
loads = orjson.loads


def loads_any(data: bytes | str) -> Any:
    """``data`` parsed by orjson, else by the standard library, which also takes what orjson
    refuses (a lone surrogate escape, a number beyond a double); ValueError when neither can."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def dumps_line(value: Any) -> bytes:
    """``value`` as one line of compact JSON (no final newline)."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return _dumps_escaped(value, None)


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
