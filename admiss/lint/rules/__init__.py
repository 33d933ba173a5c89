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


# Outcomes a tool call can end with other than success, and all of them.
FAILED_OUTCOMES = ir.MAP_OUTCOME_SETS["failed"]
_ALL_OUTCOMES = FAILED_OUTCOMES | ir.MAP_OUTCOME_SETS["ok"]


def map_rules(rubric: ir.Rubric) -> Iterator[ir.MapRule]:
    """The MAP block's rules in order (none without a MAP block)."""
    return iter(rubric.mapping.rules if rubric.mapping is not None else ())


def outcomes_of(rule: ir.MapRule) -> frozenset[str]:
    """The tool-call outcomes a rule takes (every outcome without OUTCOME)."""
    if not rule.outcomes:
        return _ALL_OUTCOMES
    return frozenset().union(*(ir.MAP_OUTCOME_SETS.get(ref.value, ()) for ref in rule.outcomes))


def always_applies(rule: ir.MapRule) -> bool:
    """Whether a rule decides every step its selector and OUTCOME pick: no WHERE, and no
    LABEL or DETAIL path that could be missing and pass the step on."""
    paths = [v for v in (rule.label, rule.detail) if v is not None and v.is_path]
    return not rule.where and not paths


def offered_to(rubric: ir.Rubric, rule: ir.MapRule) -> list[ir.Property]:
    """The properties a rule's items are offered to: its FOR property, else every one."""
    if rule.property is None:
        return list(rubric.properties)
    return [p for p in rubric.properties if p.name == rule.property.value]

