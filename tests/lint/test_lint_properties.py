"""lint_source on random input: never an exception, always located, sorted diagnostics."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import admiss
from admiss.lint import lint_source
from admiss.parser import parse
from admiss.source import Source
from strategies import rubric_sources


@st.composite
def damaged_sources(draw) -> str:
    """A valid rubric with one slice cut out: a syntax error, a compile error, or still valid."""
    source, _ = draw(rubric_sources(chains=True))
    start = draw(st.integers(0, len(source)))
    end = draw(st.integers(start, min(len(source), start + 40)))
    return source[:start] + source[end:]


@settings(max_examples=300, deadline=None)
@given(damaged_sources() | st.text(max_size=60))
def test_lint_reports_located_sorted_diagnostics_and_never_raises(text):
    found = lint_source(text, "r.rubric")
    positions = [(d.span.line, d.span.column) for d in found]
    assert positions == sorted(positions)
    for diagnostic in found:
        assert diagnostic.span.line >= 1 and diagnostic.severity in ("error", "warning")
        assert diagnostic.render()


@settings(max_examples=200, deadline=None)
@given(damaged_sources())
def test_lint_reports_exactly_the_compile_errors_and_the_rules_still_run(text):
    try:
        admiss.compile_source(text, "r.rubric")
        compile_errors = []
    except admiss.AdmissError as error:
        compile_errors = [d.code for d in error.diagnostics]
    found = lint_source(text, "r.rubric")
    assert sorted(d.code for d in found if not d.code.startswith("ADM")) == sorted(compile_errors)
    try:
        parse(Source("r.rubric", text))
    except admiss.AdmissError:
        assert [d.code for d in found] == ["E100"], "nothing after a syntax error can be read"
