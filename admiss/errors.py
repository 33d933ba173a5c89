"""The error tree. Every user mistake becomes a Diagnostic; only these reach the CLI."""

from __future__ import annotations

import difflib
import re
from typing import Iterable

import attrs

from admiss.redact import redact
from admiss.source import NO_SPAN, Source, Span
from admiss.terminal import one_line

# Where docs/ is published. A hint names a page by this address: a pip-installed admiss ships
# no docs/ folder to open.
DOCS_URL = "https://github.com/admiss/admiss/blob/main/docs/"


@attrs.frozen
class Diagnostic:
    """One located problem: a stable code, a severity, a message and an optional hint."""

    code: str
    message: str
    span: Span = NO_SPAN
    severity: str = "error"
    hint: str | None = None
    file: str | None = None

    def location(self) -> str:
        name = self.file or "<input>"
        if self.span.line <= 0:
            return name
        return f"{name}:{self.span.line}:{self.span.column}"

    def render(self, source: Source | None = None) -> str:
        """``file:line:col: CODE message``, the source line with a caret, then the hint."""
        # A message or hint may quote what a bundle or rubric wrote: one line each, shown safe.
        lines = [f"{one_line(self.location())}: {self.code} {one_line(redact(self.message))}"]
        if source is not None and self.span.line > 0:
            snippet = source.snippet(self.span)  # masked by Source.snippet, before it cuts the line
            if snippet:
                lines.append(snippet)
        if self.hint:
            lines.append(f"  hint: {one_line(redact(self.hint))}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity,
            "message": redact(self.message),
            "file": self.file,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "hint": self.hint,
        }


class AdmissError(Exception):
    """Base of every error admiss raises for bad input. Carries its diagnostics."""

    exit_code = 2

    def __init__(self, diagnostics: Iterable[Diagnostic], source: Source | None = None):
        self.diagnostics = tuple(diagnostics)
        self.source = source
        super().__init__(self.render())

    def __reduce__(self):
        # Errors cross processes with batch work; rebuild from the diagnostics, not the text.
        return (type(self), (self.diagnostics, self.source))

    def render(self) -> str:
        return "\n".join(d.render(self.source) for d in self.diagnostics)


class RubricSyntaxError(AdmissError):
    """The rubric text does not parse."""


class RubricCompileError(AdmissError):
    """The rubric parses but is not a valid rubric (unknown kind, duplicate, ...)."""


class IRError(AdmissError):
    """A compiled-IR JSON file is not valid IR."""


class BundleError(AdmissError):
    """A candidate bundle is not valid JSON or breaks the bundle rules."""


class InputError(AdmissError):
    """A file is missing or unreadable, or an argument is wrong."""


def input_error(file: str, message: str, hint: str | None = None, code: str = "E001") -> InputError:
    return InputError([Diagnostic(code, message, hint=hint, file=file)])


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A hint naming the closest of ``choices`` to ``word``, if any is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


_SUGGESTED = re.compile(r"did you mean '([^']+)'\?")


def suggestion(hint: str | None) -> str | None:
    """The word a :func:`did_you_mean` hint suggests, for an editor's quick fix."""
    found = _SUGGESTED.search(hint or "")
    return found.group(1) if found else None


class TraceError(AdmissError):
    """An agent trace matches no trace format, or breaks the rules of its format (B020-B039)."""
