"""Candidate bundles: reading them and checking their shape, with JSON-path errors."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

from admiss import limits
from admiss.compiler import Row, rows_of
from admiss.errors import DOCS_URL, BundleError, Diagnostic, did_you_mean
from admiss.jsonio import (DecodeError as FastDecodeError, LongInteger, as_text, bounded_int,
                           first_repeated_key, line_column, loads as fast_loads, member_path)
from admiss.source import Source, Span

_EVIDENCE_FIELDS = ("kind", "detail", "source_label")
_EVIDENCE_HINT = "each evidence item needs string fields kind, detail and source_label"
TYPE_WORDS = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
               int: "a number", float: "a number", type(None): "null"}


def type_word(value: Any) -> str:
    """How a message names the JSON type of ``value`` ("an object", "a string", ...)."""
    return TYPE_WORDS.get(type(value), type(value).__name__)


def parse_bundle_text(text: str | bytes, name: str, line_offset: int = 0) -> Any:
    """The JSON value in ``text``, or BundleError B001 at the line and column that broke
    (B003 at a number too long to read, B008 at a key repeated in one object)."""
    if len(text) > limits.MAX_BUNDLE_BYTES:
        raise BundleError([Diagnostic("B004", f"the bundle is {len(text):,} bytes; the limit is "
                                      f"{limits.MAX_BUNDLE_BYTES:,}", file=name, hint=_LIMITS_HINT)])
    value = _decoded(text, name, line_offset)
    _refuse_repeated_keys(text, value, name, line_offset)
    if len(text) > limits.MAX_STRING_CHARS:  # only then can one string be too long
        _refuse_long_strings(value, name)
    return value


_LIMITS_HINT = f"the limits are in {DOCS_URL}security.md#limits"


def _refuse_long_strings(value: Any, name: str) -> None:
    """BundleError B006 naming the first string (or key) longer than the limit."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            for key, member in item.items():
                if len(key) > limits.MAX_STRING_CHARS:
                    _too_long(f"{path or '$'} (a key)", len(key), name)
                stack.append((member_path(path, key), member))
        elif isinstance(item, list):
            stack.extend((f"{path or '$'}[{i}]", member) for i, member in enumerate(item))
        elif isinstance(item, str) and len(item) > limits.MAX_STRING_CHARS:
            _too_long(path or "$", len(item), name)


def _too_long(path: str, length: int, name: str) -> None:
    raise BundleError([Diagnostic("B006", f"{path}: a string of {length:,} characters; the limit is "
                                  f"{limits.MAX_STRING_CHARS:,}", file=name, hint=_LIMITS_HINT)])


def evidence_count_problem(bundle: Any) -> tuple[str, str, str | None] | None:
    """(path, problem, hint) when the bundle holds more evidence items than the limit."""
    if type(bundle) is not dict:
        return None
    count = _length(bundle.get("evidence"))
    candidates = bundle.get("candidates")
    if type(candidates) is list:
        count += sum(_length(c.get("evidence")) for c in candidates if type(c) is dict)
    if count <= limits.MAX_EVIDENCE_ITEMS:
        return None
    return "evidence", f"{count:,} evidence items in the bundle; the limit is {limits.MAX_EVIDENCE_ITEMS:,}", \
        _LIMITS_HINT


def _length(items: Any) -> int:
    return len(items) if type(items) is list else 0


def _decoded(text: str | bytes, name: str, line_offset: int) -> Any:
    try:
        return fast_loads(text)
    except FastDecodeError:
        # orjson is stricter (NaN, huge integers, lone surrogates) and its messages differ:
        # the json module decides, and words the error.
        pass
    try:
        return json.loads(text, parse_int=bounded_int)
    except json.JSONDecodeError as exc:
        raise _located(name, text, line_offset, exc.lineno, exc.colno, "B001", f"invalid JSON: {exc.msg}",
                       "a bundle is one JSON object (a .jsonl file: one per line)") from None
    except LongInteger as exc:
        digits = str(exc.args[0])
        line, column = line_column(as_text(text), as_text(text).find(digits))
        raise _located(name, text, line_offset, line, column, "B003",
                       f"a number with {len(digits.lstrip('-'))} digits; the limit is {limits.MAX_INTEGER_DIGITS}",
                       "write a number this long as a string") from None
    except RecursionError:
        raise BundleError([Diagnostic("B001", "invalid JSON: nested too deeply", file=name)]) from None
    except UnicodeDecodeError:  # bytes that are not UTF-8 (check_many takes bytes)
        raise BundleError([Diagnostic("B001", "invalid JSON: not UTF-8 text", file=name)]) from None


def repeated_key(text: str, value: Any) -> str | None:
    """The JSON path of the first key repeated within one object of JSON ``text`` (whose
    decoded value is ``value``), "$" when it is nested too deeply to tell; else None. For
    JSON inside a trace (a tool's result, an attribute's text), where the same rule holds."""
    try:
        found = first_repeated_key(text, value)
    except (RecursionError, ValueError):  # too deep to walk, or a number too long: unproven
        return "$"
    return found[0] if found is not None else None


def _refuse_repeated_keys(text: str | bytes, value: Any, name: str, line_offset: int) -> None:
    """BundleError B008 at the first key repeated within one object of ``text``, if any."""
    try:
        found = first_repeated_key(text, value)
    except RecursionError:
        # Too deep to walk, so a repeat can be neither ruled out nor located: refused unproven.
        raise BundleError([Diagnostic("B008", "a key may be repeated in an object nested too deeply to check",
                                      file=name, hint="nest objects less deeply")]) from None
    if found is not None:
        path, offset = found
        line, column = line_column(as_text(text), offset)
        raise _located(name, text, line_offset, line, column, "B008", f"{path}: key given twice in one object",
                       "a decoder would silently keep the last one; keep one")


def _located(name: str, text: str | bytes, line_offset: int, line: int, column: int, code: str, message: str,
             hint: str) -> BundleError:
    """A BundleError at ``line``:``column`` of ``text`` (a line of a file when ``line_offset``)."""
    line += line_offset
    source = Source(name, "\n" * line_offset + as_text(text))
    return BundleError([Diagnostic(code, message, Span.point(line, column), file=name, hint=hint)], source)


def _shape_problems(bundle: Any) -> Iterator[tuple[str, str, str | None]]:
    """(path, problem, hint) for every way ``bundle`` breaks the bundle rules."""
    if not isinstance(bundle, dict):
        yield "$", f"a bundle must be a JSON object, not {type_word(bundle)}", None
        return
    for key in ("rubric", "prompt", "model", "output"):
        if key in bundle and not isinstance(bundle[key], str) and not (key == "output" and bundle[key] is None):
            yield key, f"must be a string, not {type_word(bundle[key])}", None
    if "meta" in bundle and not isinstance(bundle["meta"], dict):
        yield "meta", f"must be an object, not {type_word(bundle['meta'])}", None
    yield from _string_list_problems(bundle, "samples", "samples")
    yield from _cost_problems(bundle, "cost_usd")
    yield from _evidence_problems(bundle.get("evidence", []), "evidence")
    yield from _candidates_problems(bundle.get("candidates", []))


def _cost_problems(holder: dict, path: str) -> Iterator[tuple[str, str, str | None]]:
    cost = holder.get("cost_usd", 0)
    # An integer is compared with the largest double before any conversion: one beyond it
    # (a JSON number may have 4,300 digits) makes float() and math.isfinite() raise.
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not 0 <= cost <= sys.float_info.max:
        yield path, "must be a number >= 0", None


def _string_list_problems(holder: dict, key: str, path: str) -> Iterator[tuple[str, str, str | None]]:
    if key not in holder:
        return
    values = holder[key]
    if not isinstance(values, list):
        yield path, f"must be an array of strings, not {type_word(values)}", None
        return
    for i, value in enumerate(values):
        if not isinstance(value, str):
            yield f"{path}[{i}]", f"must be a string, not {type_word(value)}", None


def _evidence_problems(items: Any, path: str) -> Iterator[tuple[str, str, str | None]]:
    if not isinstance(items, list):
        yield path, f"must be an array, not {type_word(items)}", None
        return
    for i, item in enumerate(items):
        where = f"{path}[{i}]"
        if not isinstance(item, dict):
            yield where, f"must be an object, not {type_word(item)}", _EVIDENCE_HINT
            continue
        for field in _EVIDENCE_FIELDS:
            if field not in item:
                yield f"{where}.{field}", "missing", _EVIDENCE_HINT
            elif not isinstance(item[field], str):
                yield f"{where}.{field}", f"must be a string, not {type_word(item[field])}", _EVIDENCE_HINT
        if "property" in item and not isinstance(item["property"], str):
            yield f"{where}.property", f"must be a string, not {type_word(item['property'])}", None


def _candidates_problems(candidates: Any) -> Iterator[tuple[str, str, str | None]]:
    if not isinstance(candidates, list):
        yield "candidates", f"must be an array, not {type_word(candidates)}", None
        return
    for i, cand in enumerate(candidates):
        where = f"candidates[{i}]"
        if not isinstance(cand, dict):
            yield where, f"must be an object, not {type_word(cand)}", None
            continue
        if not isinstance(cand.get("rung"), str):
            yield f"{where}.rung", "missing" if "rung" not in cand else "must be a string", \
                "a candidate names the RUNG it answers for"
        for key in ("model",):
            if key in cand and not isinstance(cand[key], str):
                yield f"{where}.{key}", f"must be a string, not {type_word(cand[key])}", None
        if "output" in cand and not isinstance(cand["output"], (str, type(None))):
            yield f"{where}.output", f"must be a string, not {type_word(cand['output'])}", None
        yield from _cost_problems(cand, f"{where}.cost_usd")
        yield from _string_list_problems(cand, "samples", f"{where}.samples")
        yield from _evidence_problems(cand.get("evidence", []), f"{where}.evidence")


def validate_bundle(bundle: Any, name: str, properties: frozenset[str] | None = None) -> dict:
    """``bundle`` itself when it keeps the bundle rules, else BundleError listing every break.

    With ``properties`` (the rubric's property names), evidence offered to a property the
    rubric lacks is a break too.
    """
    too_many = evidence_count_problem(bundle)
    if too_many is not None:
        raise BundleError([Diagnostic("B005", f"{too_many[0]}: {too_many[1]}", hint=too_many[2], file=name)])
    problems = list(_shape_problems(bundle))
    if not problems and properties is not None:
        problems = list(_property_problems(bundle, properties))
    if problems:
        raise BundleError([Diagnostic("B002", f"{path}: {problem}", hint=hint, file=name)
                           for path, problem, hint in problems])
    return bundle


# Top-level fields the one-pass check reads itself, with the exact types a decoded JSON
# bundle holds when they keep the rules; a bundle with candidates or samples goes to the
# full validator.
_PLAIN_FIELD_TYPES = {"rubric": (str,), "prompt": (str,), "model": (str,), "output": (str, type(None)),
                      "meta": (dict,), "evidence": (list,)}
_FULL_CHECK_FIELDS = frozenset(("candidates", "samples", "cost_usd"))


def evidence_rows(bundle: Any, name: str, properties: frozenset[str]) -> tuple[list[Row], bool]:
    """The bundle's evidence rows and whether any item names a property, when the bundle keeps
    the bundle rules; else BundleError listing every break.

    Well-formed bundles are checked and turned into rows in one pass over the items; only
    when that pass meets something unusual does the full validator run, to say exactly
    what is wrong and where (or to accept what the quick pass was too strict about).
    """
    if evidence_count_problem(bundle) is None:  # else no rows are built: the validator says why
        plain = _plain_rows(bundle, properties)
        if plain is not None:
            return plain
    validate_bundle(bundle, name, properties)
    rows = rows_of(bundle.get("evidence", ()))
    return rows, any(row[3] is not None for row in rows)


def _plain_rows(bundle: Any, properties: frozenset[str]) -> tuple[list[Row], bool] | None:
    """Rows (and whether any item names a property) of a bundle whose fields all hold the
    exact types the rules ask for; else None."""
    if type(bundle) is not dict:
        return None
    for key, value in bundle.items():
        allowed = _PLAIN_FIELD_TYPES.get(key)
        if allowed is not None and type(value) not in allowed or key in _FULL_CHECK_FIELDS:
            return None
    rows: list[Row] = []
    append = rows.append
    scoped = False
    try:
        for item in bundle.get("evidence", ()):
            kind, label = item["kind"], item["source_label"]
            if type(kind) is not str or type(label) is not str or type(item["detail"]) is not str:
                return None
            if "property" in item:
                offered_to = item["property"]
                if type(offered_to) is not str or offered_to not in properties:
                    return None
                append((kind, label, item, offered_to))
                scoped = True
            else:
                append((kind, label, item, None))
    except (KeyError, TypeError):  # an item that is not an object, or lacks a field
        return None
    return rows, scoped


def _property_problems(bundle: dict, names: frozenset[str]) -> Iterator[tuple[str, str, str | None]]:
    for where, item in _all_evidence(bundle):
        if "property" in item and item["property"] not in names:
            hint = did_you_mean(item["property"], names) or (
                "properties: " + ", ".join(sorted(names)) if names else "the rubric has no properties")
            yield f"{where}.property", f"no property '{item['property']}' in the rubric", hint


def _all_evidence(bundle: dict) -> Iterator[tuple[str, dict]]:
    for i, item in enumerate(bundle.get("evidence", ())):
        yield f"evidence[{i}]", item
    for c, cand in enumerate(bundle.get("candidates", ())):
        for i, item in enumerate(cand.get("evidence", ())):
            yield f"candidates[{c}].evidence[{i}]", item


def rung_problems(bundle: dict, rungs: frozenset[str], name: str) -> None:
    """Raise BundleError when a candidate names a rung the chain lacks."""
    problems = [
        Diagnostic("B002", f"candidates[{i}].rung: no RUNG '{cand['rung']}' in the chain",
                   hint=did_you_mean(cand["rung"], rungs) or "rungs: " + ", ".join(sorted(rungs)), file=name)
        for i, cand in enumerate(bundle.get("candidates", ()))
        if cand["rung"] not in rungs
    ]
    if problems:
        raise BundleError(problems)


# A bundle's "rubric" field may name only a rubric source or compiled IR in the tree it may read.
_RUBRIC_SUFFIXES = (".rubric", ".json")
_RUBRIC_HINT = "name a .rubric or .json file below the bundle's folder (or the working folder), or pass --rubric FILE"


def rubric_path(bundle_file: str, field: str, name: str) -> Path:
    """The file a bundle's ``rubric`` field names, kept inside the tree the bundle may read.

    A bundle is untrusted: its field must not make admiss read (and quote in an error) any
    other file on the machine, nor a device such as /dev/zero. So the path must be relative,
    name a .rubric or .json file, be a regular file (a missing one is E001, saying
    that the bundle's field named it), and stay, after following every symlink, inside the working
    folder when the bundle lies inside it (a project's bundles name its rubrics, as in
    rubrics/bundles/), else inside the bundle's own folder. Only --rubric, which the user
    writes, can name a rubric anywhere else.
    """
    folder = os.path.dirname(bundle_file) or "."
    problem = _rubric_field_problem(_readable_root(os.path.realpath(folder)), field, folder)
    if problem is not None:
        raise BundleError([Diagnostic("B007", f"rubric: {problem}", hint=_RUBRIC_HINT, file=name)])
    path = Path(folder) / field
    if not os.path.lexists(path):
        # Said here, not where the rubric is read: there the name would seem to come from nowhere.
        raise BundleError([Diagnostic(
            "E001", f"rubric: no such file {str(path)!r} (the name comes from the bundle's \"rubric\" field, "
            "relative to the bundle's folder)", hint='fix the bundle\'s "rubric" field, or pass --rubric FILE',
            file=name)])
    return path


def _readable_root(folder: str) -> str:
    working = os.path.realpath(os.getcwd())
    return working if _inside(working, folder) else folder


def _inside(root: str, path: str) -> bool:
    return os.path.commonpath([root, path]) == root


def _rubric_field_problem(root: str, field: str, folder: str) -> str | None:
    if "\0" in field or not field or _has_surrogate(field):
        return "is not a usable path"
    if os.path.isabs(field):
        return "must be a path relative to the bundle's folder, not an absolute one"
    if not field.endswith(_RUBRIC_SUFFIXES):
        return "must name a .rubric or .json file"
    target = os.path.realpath(os.path.join(folder, field))
    if not _inside(root, target):
        return "leads out of the folder bundles may read rubrics from"
    if os.path.lexists(target) and not os.path.isfile(target):
        return "is not a regular file"
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
