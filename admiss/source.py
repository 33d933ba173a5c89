"""Source text and spans: where a node came from, and the snippet that shows it."""

from __future__ import annotations

import attrs

from admiss.redact import redact
from admiss.terminal import pictured


@attrs.frozen
class Span:
    """A 1-based, end-inclusive-start / end-exclusive-end region of one source file."""

    line: int
    column: int
    end_line: int
    end_column: int

    def to_list(self) -> list[int]:
        return [self.line, self.column, self.end_line, self.end_column]

    @classmethod
    def from_list(cls, values: list[int]) -> "Span":
        line, column, end_line, end_column = values
        return cls(line, column, end_line, end_column)

    @classmethod
    def point(cls, line: int, column: int, width: int = 1) -> "Span":
        return cls(line, column, line, column + width)


@attrs.frozen
class Comment:
    """A ``#`` comment as written (``text`` starts with ``#``) and where it stands."""

    text: str
    span: Span

    def stands_alone(self, source: "Source") -> bool:
        """True when nothing but blanks precedes the comment on its line."""
        return not source.line_text(self.span.line)[: self.span.column - 1].strip()


# Nodes built by hand (or read from IR without positions) carry NO_SPAN.
NO_SPAN = Span(0, 0, 0, 0)


# A snippet shows at most this many characters of its line, around the column it points at:
# a one-line bundle of megabytes must not be printed whole under each error.
SNIPPET_WIDTH = 160


@attrs.frozen
class Source:
    """A named text, kept so diagnostics can quote the offending line."""

    name: str
    text: str = attrs.field(repr=False)
    # The text split into lines, made on first use and kept: rendering N diagnostics of one
    # source must split it once, not N times.
    _lines: list[str] | None = attrs.field(default=None, init=False, eq=False, repr=False)

    def line_text(self, line: int) -> str:
        lines = self._lines
        if lines is None:
            lines = self.text.splitlines()
            object.__setattr__(self, "_lines", lines)
        return lines[line - 1] if 1 <= line <= len(lines) else ""

    def snippet(self, span: Span) -> str:
        """The source line of ``span`` and a caret line under the spanned columns."""
        if span.line <= 0:
            return ""
        # Masked (one * per character, so the caret keeps its column) before the window cuts
        # the line: a URL's user-info straddling the window's edge would keep a part.
        text = redact(self.line_text(span.line).expandtabs(1), same_length=True)
        if span.end_line == span.line and span.end_column > span.column:
            width = span.end_column - span.column
        else:
            width = max(1, len(text) - span.column + 1)
        start = _window_start(len(text), span.column)
        # The line is the file's, whoever wrote it: nothing in it may act on the terminal,
        # and each character keeps its place under the caret.
        shown = pictured(text[start:start + SNIPPET_WIDTH])
        width = max(1, min(width, SNIPPET_WIDTH - (span.column - 1 - start)))
        return f"  {shown}\n  {' ' * (span.column - 1 - start)}{'^' * width}"


def _window_start(length: int, column: int) -> int:
    """Where a snippet of a line ``length`` long starts so that ``column`` shows."""
    if length <= SNIPPET_WIDTH or column <= SNIPPET_WIDTH // 2:
        return 0
    return min(column - 1 - SNIPPET_WIDTH // 4, max(0, length - SNIPPET_WIDTH))
