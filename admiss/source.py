"""Source text and spans: where a node came from, and the snippet that shows it."""

from __future__ import annotations

import attrs


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


@attrs.frozen
class Source:
    """A named text, kept so diagnostics can quote the offending line."""

    name: str
    text: str = attrs.field(repr=False)

    def line_text(self, line: int) -> str:
        lines = self.text.splitlines()
        return lines[line - 1] if 1 <= line <= len(lines) else ""

    def snippet(self, span: Span) -> str:
        """The source line of ``span`` and a caret line under the spanned columns."""
        if span.line <= 0:
            return ""
        text = self.line_text(span.line).expandtabs(1)
        if span.end_line == span.line and span.end_column > span.column:
            width = span.end_column - span.column
        else:
            width = max(1, len(text) - span.column + 1)
        return f"  {text}\n  {' ' * (span.column - 1)}{'^' * max(1, width)}"
