"""Reading the input of ``admiss check``: each bundle of each file, as a stream.

A unit is one bundle to check: (file path, line number, its JSON text as str or bytes), the
line number 0 for a .json file or a single document on standard input, or an AdmissError
in place of a file that could not be read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from admiss.api import read_text
from admiss.errors import AdmissError, BundleError, Diagnostic, input_error
from admiss.files import not_utf8_at, reading
from admiss.limits import MAX_BUNDLE_BYTES
from admiss.source import Source, Span

# The bundle path that means standard input: one JSON document or JSON Lines.
STDIN = "-"
STDIN_NAME = "<stdin>"

Unit = tuple


def units_of(paths: Iterable[Path]) -> Iterator[Unit | AdmissError]:
    """Each bundle of each file, read as a stream; a file that cannot be read, or a .jsonl
    file without a bundle, is an error in its place."""
    for path in paths:
        try:
            yield from _units_in(path)
        except AdmissError as error:
            yield error


def _units_in(path: Path) -> Iterator[Unit]:
    if str(path) == STDIN:
        with reading(STDIN_NAME):
            yield from stdin().units()
        return
    if path.suffix != ".jsonl":
        yield str(path), 0, read_text(path)
        return
    name = str(path)
    with reading(path), path.open("rb") as lines:
        yield from _lines(name, lines)


def _lines(name: str, lines: Iterable[bytes], number: int = 0) -> Iterator[Unit]:
    found = False
    for number, line in enumerate(lines, start=number + 1):
        if line.strip():
            found = True
            yield name, number, line
    if not found:
        raise no_bundles(name)


def no_bundles(name: str) -> AdmissError:
    # Read by admiss check (bundles or traces) and admiss import (traces): JSON either way.
    if name == STDIN_NAME:
        return input_error(name, "nothing to read: standard input is empty or holds only blank lines",
                           hint="pipe in one JSON document, or JSON Lines (one per line)", code="E180")
    return input_error(name, "nothing to read: the file is empty or holds only blank lines",
                       hint="a .jsonl file holds one JSON value per line: a bundle, or a trace or its lines", code="E180")


class _Stdin:
    """Standard input, read as a file would be: one JSON document (pretty-printed, say) or
    JSON Lines, told apart by its first line that is not blank. JSON Lines are checked as
    they arrive; a document is read whole (up to a bundle's size limit)."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.head: list[bytes] = []  # the lines read to tell which, not yet handed out
        self.document: bool | None = None

    def is_one_document(self) -> bool:
        if self.document is None:
            for line in self.stream:
                self.head.append(line)
                if line.strip():
                    break
            # Only blank lines: JSON Lines without a line, so E180 says the input is empty.
            self.document = bool(self.head) and bool(self.head[-1].strip()) and _starts_a_document(self.head[-1])
        return self.document

    def units(self) -> Iterator[Unit]:
        document = self.is_one_document()
        head, self.head = self.head, []
        if document:
            rest = self.stream.read(MAX_BUNDLE_BYTES + 1)  # over the limit: B004 when parsed
            yield STDIN_NAME, 0, _document_text(b"".join(head) + rest)
            return
        yield from _lines(STDIN_NAME, _chained(head, self.stream))


def _document_text(raw: bytes) -> str:
    """A document read from standard input as text; E001 at its first byte that is not UTF-8,
    located as a .json file's is."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8_at(STDIN_NAME, raw, exc.start) from None


def _chained(head: list[bytes], rest: Iterable[bytes]) -> Iterator[bytes]:
    yield from head
    yield from rest


def _starts_a_document(line: bytes) -> bool:
    """Whether a first line is the start of a JSON value cut off at its end (``{`` of a
    pretty-printed bundle), not a whole value (a JSON line) nor text broken before its end
    (a bad JSON line, reported on its line)."""
    try:
        text = line.decode("utf-8").strip()
        json.loads(text)
    except json.JSONDecodeError as error:
        return error.pos >= len(text)
    except (ValueError, RecursionError):  # not UTF-8, a number too long, nesting too deep:
        return False  # a bad JSON line, whose reader says what is wrong with it
    return False


_stdin: _Stdin | None = None


def stdin() -> _Stdin:
    """This process's standard input, read once however many times ``-`` is named."""
    global _stdin
    if _stdin is None:
        _stdin = _Stdin(sys.stdin.buffer)
    return _stdin


def _others(path: str) -> str:
    return "standard input's other lines are" if path == STDIN_NAME else "the file's other bundles are"


def line_text(raw: str | bytes, path: str, number: int) -> str:
    """A .jsonl line as text without its line end (so a JSON error at the end of a cut-off
    line is placed on that line), or BundleError B001 at the first byte that is not UTF-8."""
    if isinstance(raw, str):
        return raw.rstrip("\r\n")
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        shown = raw.decode("utf-8", "replace").rstrip("\r\n")
        column = len(raw[: exc.start].decode("utf-8", "replace")) + 1
        raise BundleError([Diagnostic("B001", f"invalid JSON: not UTF-8 text (byte 0x{raw[exc.start]:02x})",
                                      Span.point(number, column), file=path,
                                      hint=f"bundles are UTF-8 JSON; {_others(path)} still checked")],
                          Source(path, "\n" * (number - 1) + shown)) from None
