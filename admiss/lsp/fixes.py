"""Code actions: the edits that fix a finding whose fix is obvious.

ON ABSTAIN fail_closed for a gate left fail_open (ADM009, ADM040, ADM041), DEFAULT no for
DEFAULT yes (ADM001), a REJECT SHORTCUT list to fill in (ADM004), the untrusted kinds a
property leaves out added to FORBID (ADM005), a TIMEOUT for a subprocess gate (ADM011), a
repeated list entry removed (ADM020), a suppression's unused code removed (ADM100), and the
name a compile error's hint suggests.
"""

from __future__ import annotations

import re
from typing import Callable, Optional

import attrs

from admiss import ir
from admiss.errors import Diagnostic, suggestion
from admiss.lint.suppression import suppressions
from admiss.source import Comment, Source, Span

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CODE = re.compile(r"\b[A-Z]+[0-9]+\b")
# Compile errors whose hint suggests the name that was meant, at the name written.
_SPELLING = ("E101", "E105", "E108", "E111", "E133", "E134", "E137")


@attrs.frozen
class Edit:
    span: Span
    text: str


@attrs.frozen
class Fix:
    title: str
    diagnostic: Diagnostic
    edits: tuple[Edit, ...]


def fixes(rubric: ir.Rubric, source: Source, diagnostics: list[Diagnostic]) -> list[Fix]:
    """A fix for each of ``diagnostics`` that has an obvious one."""
    out = []
    for diagnostic in diagnostics:
        make = _FIXERS.get(diagnostic.code) or (_respell if diagnostic.code in _SPELLING else None)
        found = make(rubric, source, diagnostic) if make else None
        if found is not None:
            out.append(Fix(found[0], diagnostic, tuple(found[1])))
    return out


# A fix's title and edits, or None when the finding has no obvious fix here.
Found = Optional[tuple[str, list[Edit]]]


def _inside(span: Span, outer: Span) -> bool:
    return (outer.line, outer.column) <= (span.line, span.column) <= (outer.end_line, outer.end_column)


def _gate_at(rubric: ir.Rubric, span: Span) -> ir.Gate | None:
    return next((g for c in rubric.chains for r in c.rungs for g in r.gates if _inside(span, g.span)), None)


def _property_at(rubric: ir.Rubric, span: Span) -> ir.Property | None:
    return next((p for p in rubric.properties if _inside(span, p.span)), None)


def _insert(line: int, column: int, text: str) -> Edit:
    return Edit(Span(line, column, line, column), text)


def _fail_closed(rubric: ir.Rubric, source: Source, diagnostic: Diagnostic) -> Found:
    gate = _gate_at(rubric, diagnostic.span)
    if gate is None:
        return None
    if "on_abstain" in dict(gate.option_spans):
        edit = Edit(gate.value_span_of("on_abstain"), "fail_closed")
    else:
        edit = _insert(gate.span.end_line, gate.span.end_column, " ON ABSTAIN fail_closed")
    return "Set ON ABSTAIN fail_closed", [edit]


def _timeout(rubric: ir.Rubric, source: Source, diagnostic: Diagnostic) -> Found:
    gate = _gate_at(rubric, diagnostic.span)
    if gate is None:
        return None
    return "Add TIMEOUT 30s (the longest the check may take)", [
        _insert(gate.span.end_line, gate.span.end_column, " TIMEOUT 30s")]


def _default_no(rubric: ir.Rubric, source: Source, diagnostic: Diagnostic) -> Found:
    return "Write DEFAULT no", [Edit(diagnostic.span, "no")]


def _statement(prop: ir.Property, source: Source, statement: str) -> Edit:
    """``statement`` added to ``prop`` as its last statement, on a line of its own unless the
    property is written on one line."""
    line, column = prop.span.end_line, prop.span.end_column - 1  # the closing brace
    if prop.span.line == line:
        return _insert(line, column, f"{statement} ")
    opening = source.line_text(prop.span.line)
    indent = opening[:len(opening) - len(opening.lstrip())] + "  "
    return _insert(line, 1, f"{indent}{statement}\n") if not source.line_text(line)[:column - 1].strip() \
        else _insert(line, column, f"\n{indent}{statement}\n")


def _shortcuts(rubric: ir.Rubric, source: Source, diagnostic: Diagnostic) -> Found:
    prop = _property_at(rubric, diagnostic.span)
    if prop is None:
        return None
    return "Add a REJECT SHORTCUT list (name the lookalike sources to refuse)", [
        _statement(prop, source, 'REJECT SHORTCUT "news article", "press release"')]


def _forbid_untrusted(rubric: ir.Rubric, source: Source, diagnostic: Diagnostic) -> Found:
    prop = _property_at(rubric, diagnostic.span)
    if prop is None:
        return None
    named = {ref.value for ref in prop.admit + prop.forbid}
    missing = [kind for kind in ir.UNTRUSTED_KINDS if kind not in named]
    if not missing:
        return None
    if prop.forbid:
        last = max(prop.forbid, key=lambda r: (r.span.end_line, r.span.end_column)).span
        edit = _insert(last.end_line, last.end_column, "".join(f", {k}" for k in missing))
    else:
        edit = _statement(prop, source, "FORBID " + ", ".join(missing))
    return f"FORBID {', '.join(missing)}", [edit]


def _drop_repeat(rubric: ir.Rubric, source: Source, diagnostic: Diagnostic) -> Found:
    """The repeat and the comma before it (or after it, for a list's first entry), when the
    list is written on the repeat's line."""
    span = diagnostic.span
    line = source.line_text(span.line)
    before = re.search(r",\s*\Z", line[:span.column - 1])
    after = re.match(r"\s*,\s*", line[span.end_column - 1:])
    if before:
        cut = Span(span.line, before.start() + 1, span.line, span.end_column)
    elif after:
        cut = Span(span.line, span.column, span.line, span.end_column + after.end())
    else:
        return None
    return "Remove the repeated entry", [Edit(cut, "")]


def _unsuppress(rubric: ir.Rubric, source: Source, diagnostic: Diagnostic) -> Found:
    """The code ADM100 reports taken out of the suppression, or the whole comment when it was
    the only one (or the comment names none)."""
    span = diagnostic.span
    line = source.line_text(span.line)
    text = line[span.column - 1:span.end_column - 1]
    found = suppressions(source, [Comment(text, span)])
    if span.line != span.end_line or not found:
        return None
    named = _CODE.search(diagnostic.message)
    rest = [code for code in found[0].codes if named is None or code != named.group()]
    if rest:
        closing = text.index("]")
        return f"Remove {named.group()} from the suppression", [
            Edit(Span(span.line, span.column, span.line, span.column + closing + 1),
                 f"# admiss: ignore[{', '.join(rest)}]")]
    before = line[:span.column - 1]
    if not before.strip():  # a comment on a line of its own: the line goes
        return "Remove the suppression", [Edit(Span(span.line, 1, span.line + 1, 1), "")]
    kept = len(before.rstrip())
    return "Remove the suppression", [Edit(Span(span.line, kept + 1, span.line, span.end_column), "")]


def _respell(rubric: ir.Rubric, source: Source, diagnostic: Diagnostic) -> Found:
    meant = suggestion(diagnostic.hint)
    span = diagnostic.span
    written = source.line_text(span.line)[span.column - 1:span.end_column - 1]
    if meant is None or span.line != span.end_line or not _NAME.match(written):
        return None
    return f"Change to '{meant}'", [Edit(span, meant)]


_FIXERS: dict[str, Callable[[ir.Rubric, Source, Diagnostic], Found]] = {
    "ADM001": _default_no,
    "ADM004": _shortcuts,
    "ADM005": _forbid_untrusted,
    "ADM009": _fail_closed,
    "ADM011": _timeout,
    "ADM020": _drop_repeat,
    "ADM040": _fail_closed,
    "ADM041": _fail_closed,
    "ADM100": _unsuppress,
}
