"""admiss fmt: the canonical layout, comments kept in place, idempotence, the IR unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

import admiss
from admiss.errors import RubricSyntaxError
from admiss.fmt import format_source
from admiss.parser import parse_with_comments
from admiss.source import Source
from strategies import rubric_sources

ROOT = Path(__file__).resolve().parent.parent


def comments_of(text: str) -> list[tuple[str, bool]]:
    """Each comment's text and whether it stands alone on its line, in order."""
    source = Source("r.rubric", text)
    return [(c.text.rstrip(), c.stands_alone(source)) for c in parse_with_comments(source)[1]]


@settings(max_examples=300, deadline=None)
@given(rubric_sources(chains=True))
def test_fmt_is_idempotent_keeps_comments_in_place_and_never_changes_the_ir(case):
    source, _ = case
    formatted = format_source(source, "r.rubric")
    assert format_source(formatted, "r.rubric") == formatted
    assert comments_of(formatted) == comments_of(source)
    assert admiss.compile_source(formatted, "r.rubric").ir == admiss.compile_source(source, "r.rubric").ir


@pytest.mark.parametrize("path", sorted((ROOT / "rubrics").glob("*.rubric")), ids=lambda p: p.stem)
def test_shipped_rubrics_are_in_canonical_layout(path):
    text = path.read_text(encoding="utf-8")
    assert format_source(text, str(path)) == text


def test_layout():
    source = (
        '# head\n\n\nRUBRIC r "t"   # title\nKINDS a,b\n'
        'PROPERTY p "P" { ADMIT a, b FORBID final_answer,reasoning_trace,summary,interpretation,flawed_tool_call,'
        'procedurally_sound_tool_call\n\n\n  REJECT SHORTCUT "x",   # why x\n "y" DEFAULT no }\n'
        '# about c\nCHAIN c { RUNG r MODEL "m" { GATE non_empty ON ABSTAIN fail_closed GATE judge MODEL "j" '
        'THRESHOLD 0.7 RUBRIC "Which claim in the answer has no cited passage that states it outright? Score 0." } }'
    )
    assert format_source(source) == (
        '# head\n'
        '\n'
        'RUBRIC r "t"  # title\n'
        '\n'
        'KINDS a, b\n'
        '\n'
        'PROPERTY p "P" {\n'
        '  ADMIT a, b\n'
        '  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call,\n'
        '         procedurally_sound_tool_call\n'
        '\n'
        '  REJECT SHORTCUT "x",  # why x\n'
        '                  "y"\n'
        '  DEFAULT no\n'
        '}\n'
        '\n'
        '# about c\n'
        'CHAIN c {\n'
        '  RUNG r MODEL "m" {\n'
        '    GATE non_empty ON ABSTAIN fail_closed\n'
        '    GATE judge MODEL "j" THRESHOLD 0.7\n'
        '      RUBRIC "Which claim in the answer has no cited passage that states it outright? Score 0."\n'
        '  }\n'
        '}\n'
    )


def test_own_line_comments_keep_their_place_in_blocks_and_lists():
    source = "PROPERTY p {\n# first\n  ADMIT a,\n      # before b\n    b\n    # last\n}\nKINDS a, b\n"
    assert format_source(source) == (
        "PROPERTY p {\n  # first\n  ADMIT a,\n        # before b\n        b\n  # last\n}\n\nKINDS a, b\n"
    )


def test_tokens_are_printed_as_written():
    source = 'CHAIN c { GATE subprocess CMD ["a\\u0041", "\\"q\\""] TIMEOUT 1.50s BUDGET 0.20 WINDOW 050 }\n'
    assert format_source(source) == (
        'CHAIN c {\n  GATE subprocess CMD ["a\\u0041", "\\"q\\""] TIMEOUT 1.50s BUDGET 0.20 WINDOW 050\n}\n'
    )


def test_empty_and_comment_only_files():
    assert format_source("") == ""
    assert format_source("\n\n  \n") == ""
    assert format_source("  # only   \r\n\r\n\r\n# two\r\n") == "# only\n\n# two\n"


def test_a_file_that_does_not_parse_is_an_error():
    with pytest.raises(RubricSyntaxError) as caught:
        format_source("PROPERTY p {\n", "bad.rubric")
    assert caught.value.diagnostics[0].code == "E100"


def test_two_comments_on_lines_the_layout_joins_both_survive():
    # `KINDS # a` then `receipt # b` become one line: the second comment gets its own line.
    from admiss.fmt import format_source

    text = "KINDS # before the names\n  receipt # after a name\nPROPERTY p { ADMIT # nothing yet\n  receipt }\n"
    formatted = format_source(text, "c.rubric")
    assert "KINDS receipt  # before the names\n" in formatted and "\n# after a name\n" in formatted
    assert format_source(formatted, "c.rubric") == formatted
