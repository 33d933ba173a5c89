"""Hypothesis properties of the parser, the IR and layout independence."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

import admiss
from admiss import ir
from admiss.errors import RubricCompileError, RubricSyntaxError
from strategies import rubric_sources

SETTINGS = settings(max_examples=150, deadline=None)


@SETTINGS
@given(rubric_sources())
def test_ir_json_round_trips_to_an_equal_ir(case):
    source, _ = case
    rubric = admiss.compile_source(source, "r.rubric").ir
    again = ir.from_dict(json.loads(ir.to_json(rubric)))
    assert again == rubric
    assert ir.to_json(again) == ir.to_json(rubric)


@SETTINGS
@given(rubric_sources())
def test_spans_do_not_take_part_in_equality(case):
    source, _ = case
    original = admiss.compile_source(source, "r.rubric").ir
    # Indenting every line moves every span but changes no meaning.
    shifted = admiss.compile_source("\n\n" + source.replace("\n", "\n    "), "r.rubric").ir
    assert shifted == original
    assert ir.to_json(shifted) != ir.to_json(original)


keyword_soup = st.lists(
    st.sampled_from(["PROPERTY", "CHAIN", "RUNG", "GATE", "ADMIT", "FORBID", "REJECT", "SHORTCUT", "DEFAULT",
                     "KINDS", "RUBRIC", "K", "ON", "ABSTAIN", "{", "}", "[", "]", ",", '"s"', "p", "3", "5s",
                     "0.5", "#c\n", "\n", '"\\u12"', "judge", "MODEL", "THRESHOLD", "CMD", "BUDGET", "WINDOW"]),
    max_size=30,
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80) | keyword_soup)
def test_random_text_raises_only_the_projects_errors(text):
    try:
        admiss.compile_source(text, "r.rubric")
    except (RubricSyntaxError, RubricCompileError) as error:
        assert error.diagnostics
        for diagnostic in error.diagnostics:
            assert diagnostic.span.line >= 1 and diagnostic.span.column >= 1
            assert diagnostic.render()
