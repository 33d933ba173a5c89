"""The lint rules: one module per rule, named for what it detects.

Each module has a docstring in fixed headings (What it does, Why it matters, Example, How
to fix it; docs/lint/ is generated from them) and one ``check`` function. The code table in
``admiss.lint.codes`` gives each rule its code and severity.
"""

from __future__ import annotations

from typing import Iterator

import attrs

from admiss import ir
from admiss.source import Span


@attrs.frozen
class Finding:
    """What a rule reports; the engine adds the code, severity and file."""

    span: Span
    message: str
    hint: str | None = None


def keyword_span(span: Span, keyword: str) -> Span:
    """The opening keyword of a block whose span starts at that keyword."""
    return Span.point(span.line, span.column, len(keyword))


def gates_in(rubric: ir.Rubric) -> Iterator[tuple[ir.Rung, ir.Gate]]:
    """Every gate with the rung it stands on, in source order."""
    for chain in rubric.chains:
        for rung in chain.rungs:
            for gate in rung.gates:
                yield rung, gate


def judge_questions(rubric: ir.Rubric) -> Iterator[tuple[ir.Gate, str]]:
    """Every judge gate that has a RUBRIC, with that question."""
    for _, gate in gates_in(rubric):
        if gate.kind == "judge" and gate.rubric is not None:
            yield gate, gate.rubric
