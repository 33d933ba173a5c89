"""Inline suppressions: ``# admiss: ignore[ADM004, ADM005]``.

A suppression at the end of a line covers that line; one on a line of its own covers the
next line that holds code (comment-only and blank lines in between are skipped).
"""

from __future__ import annotations

import re
from typing import Iterable

import attrs

from admiss.source import Comment, Source

_SUPPRESSION = re.compile(r"#\s*admiss:\s*ignore\[([^\]]*)\]")


@attrs.frozen
class Suppression:
    comment: Comment
    codes: tuple[str, ...]
    # The line whose findings it silences.
    line: int


def _code_line_after(source: Source, line: int) -> int:
    lines = source.text.splitlines()
    for number in range(line + 1, len(lines) + 1):
        stripped = lines[number - 1].strip()
        if stripped and not stripped.startswith("#"):
            return number
    return line


def suppressions(source: Source, comments: Iterable[Comment]) -> list[Suppression]:
    """The suppressions among ``comments``: a comment must start with ``# admiss: ignore[``."""
    found = []
    for comment in comments:
        match = _SUPPRESSION.match(comment.text)
        if match:
            codes = tuple(code.strip() for code in match.group(1).split(",") if code.strip())
            line = _code_line_after(source, comment.span.line) if comment.stands_alone(source) else comment.span.line
            found.append(Suppression(comment, codes, line))
    return found
