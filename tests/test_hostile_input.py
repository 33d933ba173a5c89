"""Hostile numbers and strings: located errors or plain reports, never a crash."""

from __future__ import annotations

import json

import pytest

import admiss
from admiss import limits
from admiss.api import ir_from_json, parse_source
from admiss.bundle import MAX_INTEGER_DIGITS, parse_bundle_text
from admiss.errors import BundleError, IRError, RubricCompileError

RUBRIC = 'PROPERTY p { ADMIT verified_external_source FORBID summary }\n'


def _single(error) -> tuple[str, str, int, int]:
    [d] = error.diagnostics
    return d.code, d.message, d.span.line, d.span.column


@pytest.mark.parametrize("gate,message,column", [
    ("GATE consistency K " + "9" * 5000, "K must be at most 1,000", 30),
    ("GATE consistency K 1001", "K must be at most 1,000", 30),
    ("GATE non_empty BUDGET 0.5 WINDOW 1000001", "WINDOW must be at most 1,000,000", 44),
    ('GATE subprocess CMD ["x"] TIMEOUT 1441m', "TIMEOUT must be at most 86400s (one day)", 45),
    ('GATE subprocess CMD ["x"] TIMEOUT ' + "9" * 400 + "s", "TIMEOUT must be at most 86400s (one day)", 45),
])
def test_absurd_rubric_numbers_are_a_located_e118(gate, message, column):
    with pytest.raises(RubricCompileError) as caught:
        parse_source(f"CHAIN c {{ {gate} }}", "n.rubric")
    assert _single(caught.value) == ("E118", message, 1, column)


def test_numbers_at_their_bounds_compile():
    rubric = parse_source('CHAIN c { GATE consistency K 1000 BUDGET 1 WINDOW 1000000 }', "n.rubric")
    assert rubric.chains[0].rungs[0].gates[0].k == limits.MAX_K


def test_a_huge_threshold_is_reported_without_printing_it():
    with pytest.raises(RubricCompileError) as caught:
        parse_source('CHAIN c { GATE judge MODEL "m" RUBRIC "r" THRESHOLD ' + "9" * 400 + " }", "n.rubric")
    assert _single(caught.value)[:2] == ("E107", "THRESHOLD must lie in [0, 1], not a number that large")


def test_compiled_ir_with_absurd_numbers_is_refused():
    ir_json = json.loads(admiss.compile_source('CHAIN c { GATE consistency K 3 }').to_ir_json())
    ir_json["chains"][0]["rungs"][0]["gates"][0]["k"] = 10 ** 400
    with pytest.raises(IRError) as caught:
        ir_from_json(json.dumps(ir_json), "c.json")
    assert "K must be at most 1,000" in caught.value.render()


def test_compiled_ir_with_an_integer_past_the_digit_limit_is_an_ir_error():
    with pytest.raises(IRError):
        ir_from_json('{"ir_version": ' + "9" * 5000 + "}", "c.json")


@pytest.mark.parametrize("sign", ["", "-"])
def test_a_bundle_integer_past_the_digit_limit_is_a_located_b003(sign):
    text = '{"evidence": [],\n "meta": {"n": ' + sign + "7" * (MAX_INTEGER_DIGITS + 1) + "}}"
    with pytest.raises(BundleError) as caught:
        parse_bundle_text(text, "b.json")
    assert _single(caught.value) == ("B003", f"a number with {MAX_INTEGER_DIGITS + 1} digits; the limit is 4300",
                                     2, 16)


def test_a_long_integer_on_a_jsonl_line_is_located_on_that_line():
    with pytest.raises(BundleError) as caught:
        parse_bundle_text('{"meta": {"n": ' + "7" * 5000 + "}}", "b.jsonl", line_offset=6)
    assert _single(caught.value)[2:] == (7, 16)


def test_lone_surrogates_are_checked_and_shown_as_escapes_in_text():
    rubric = admiss.compile_source(RUBRIC)
    bundle = json.loads('{"evidence": [{"kind": "summary", "detail": "a\\ud800b", "source_label": "x"},'
                        '{"kind": "verified_external_source", "detail": "\\udfff", "source_label": "\\ud800"}]}')
    report = rubric.check(bundle)
    assert report.verdict == "pass"
    text = report.to_text()
    text.encode("utf-8")  # printable on any UTF-8 stream
    assert "excluded: a\\ud800b (forbidden)" in text
    assert "evidence: ['\\udfff']" in text


def test_surrogates_in_a_bundle_through_the_cli_give_a_text_report(admiss_cli, tmp_path):
    (tmp_path / "r.rubric").write_text(RUBRIC, encoding="utf-8")
    (tmp_path / "b.json").write_text('{"evidence": [{"kind": "summary", "detail": "\\ud800", "source_label": "x"}]}',
                                     encoding="utf-8")
    ran = admiss_cli("check", "--rubric", "r.rubric", "--format", "text", "b.json")
    assert ran.code == 1 and "Traceback" not in ran.err
    assert "excluded: \\ud800 (forbidden)" in ran.out
