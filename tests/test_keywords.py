"""Keywords end at a word boundary: a keyword glued to more name characters is a name."""

from __future__ import annotations

import pytest

from admiss.api import parse_source
from admiss.errors import RubricSyntaxError

GLUED = [
    ('PROPERTYp { ADMIT final_answer }', 1, "unexpected name 'PROPERTYp'"),
    ('PROPERTY p { ADMITT final_answer }', 14, "unexpected name 'ADMITT'"),
    ('PROPERTY p { ADMIT final_answer FORBIDsummary }', 33, "unexpected name 'FORBIDsummary'"),
    ('PROPERTY p { ADMIT final_answer DEFAULTno }', 33, "unexpected name 'DEFAULTno'"),
    ('RUBRICr "t"', 1, "unexpected name 'RUBRICr'"),
    ('CHAINc { GATE non_empty }', 1, "unexpected name 'CHAINc'"),
    ('CHAIN c { GATE non_empty ON ABSTAINfail_open }', 29, "unexpected name 'ABSTAINfail_open'"),
]


@pytest.mark.parametrize("text,column,message", GLUED)
def test_a_keyword_glued_to_a_name_is_a_syntax_error_at_it(text, column, message):
    with pytest.raises(RubricSyntaxError) as caught:
        parse_source(text, "k.rubric")
    [diagnostic] = caught.value.diagnostics
    assert message in diagnostic.message
    assert (diagnostic.span.line, diagnostic.span.column) == (1, column)


def test_a_glued_option_keyword_is_not_that_option():
    # `K5` is a property name, not K 5: the gate lacks K and names an undefined property.
    with pytest.raises(Exception) as caught:
        parse_source("CHAIN c { GATE consistency K5 }", "k.rubric")
    codes = {d.code for d in caught.value.diagnostics}
    assert "E110" in codes and "E105" in codes


def test_keywords_followed_by_punctuation_or_space_still_parse():
    rubric = parse_source('PROPERTY p{ADMIT final_answer,summary FORBID reasoning_trace}\n'
                          'CHAIN c{GATE consistency K 3 THRESHOLD 0.5 BUDGET 0.5 WINDOW 10}', "k.rubric")
    assert [p.name for p in rubric.properties] == ["p"]
    assert rubric.chains[0].rungs[0].gates[0].k == 3


def test_expected_keywords_are_named_plainly():
    with pytest.raises(RubricSyntaxError) as caught:
        parse_source("PROPERTY p { ADMITT x }", "k.rubric")
    assert caught.value.diagnostics[0].hint == "expected one of: '}', ADMIT, DEFAULT, FORBID, REJECT"
