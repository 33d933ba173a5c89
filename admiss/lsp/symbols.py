"""Where each name of a rubric is written: properties, evidence kinds, gate kinds and policies.

Names come from the IR's spans (references, KINDS declarations, gate options) and, for a
property's own name, from its PROPERTY item in the parse tree (the IR keeps only the block's span).
"""

from __future__ import annotations

from typing import Iterator

import attrs

from admiss import ir
from admiss.parser import Tree
from admiss.source import Span

PROPERTY, KIND, GATE, POLICY, DEFAULT, OUTCOME = "property", "kind", "gate", "policy", "default", "outcome"


@attrs.frozen
class Occurrence:
    """A name written at ``span``: what it names, and whether it is where that is defined."""

    name: str
    what: str
    span: Span
    defines: bool = False


def occurrences(rubric: ir.Rubric, tree: Tree) -> list[Occurrence]:
    """Every name written in the rubric, in no particular order."""
    return [*_property_names(tree), *_kind_names(rubric), *_gate_words(rubric), *_map_words(rubric)]


def at(found: list[Occurrence], line: int, column: int) -> Occurrence | None:
    """The occurrence under the cursor at ``line``:``column`` (1-based; its end counts too)."""
    for occurrence in found:
        span = occurrence.span
        if span.line == line == span.end_line and span.column <= column <= span.end_column:
            return occurrence
    return None


def same_symbol(found: list[Occurrence], symbol: Occurrence) -> list[Occurrence]:
    """The occurrences of the symbol that ``symbol`` names, definitions first, in source order."""
    hits = [o for o in found if o.what == symbol.what and o.name == symbol.name]
    return sorted(hits, key=lambda o: (not o.defines, o.span.line, o.span.column))


def _property_names(tree: Tree) -> Iterator[Occurrence]:
    for item in tree.children:
        if item.data == "property":
            token = item.children[1]
            yield Occurrence(str(token), PROPERTY, Span(token.line, token.column, token.end_line, token.end_column),
                             defines=True)


def _kind_names(rubric: ir.Rubric) -> Iterator[Occurrence]:
    for ref in rubric.kinds:
        yield Occurrence(ref.value, KIND, ref.span, defines=True)
    for prop in rubric.properties:
        for ref in prop.admit + prop.forbid:
            yield Occurrence(ref.value, KIND, ref.span)
        if prop.default.span.line > 0:  # a DEFAULT left out is no, written nowhere
            yield Occurrence(prop.default.value, DEFAULT, prop.default.span)


def _gate_words(rubric: ir.Rubric) -> Iterator[Occurrence]:
    for chain in rubric.chains:
        for rung in chain.rungs:
            for gate in rung.gates:
                yield Occurrence(gate.kind, GATE, gate.span_of("kind"))
                for ref in gate.properties:
                    yield Occurrence(ref.value, PROPERTY, ref.span)
                if "on_abstain" in dict(gate.option_spans):
                    yield Occurrence(gate.on_abstain, POLICY, gate.value_span_of("on_abstain"))


def _map_words(rubric: ir.Rubric) -> Iterator[Occurrence]:
    for rule in rubric.mapping.rules if rubric.mapping else ():
        if rule.kind is not None:
            yield Occurrence(rule.kind.value, KIND, rule.kind.span)
        if rule.property is not None:
            yield Occurrence(rule.property.value, PROPERTY, rule.property.span)
        for ref in rule.outcomes:
            yield Occurrence(ref.value, OUTCOME, ref.span)
