"""Hostile numbers and strings: located errors or plain reports, never a crash."""

from __future__ import annotations

import json

import pytest

import admiss
from admiss import limits
from admiss.api import ir_from_json, parse_source
from admiss.bundle import parse_bundle_text
from admiss.limits import MAX_INTEGER_DIGITS
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


# ---------------------------------------------------------------- bundle limits


@pytest.fixture
def small_limits(monkeypatch):
    monkeypatch.setattr(limits, "MAX_BUNDLE_BYTES", 2000)
    monkeypatch.setattr(limits, "MAX_EVIDENCE_ITEMS", 3)
    monkeypatch.setattr(limits, "MAX_STRING_CHARS", 100)


def _item(detail: str = "d") -> dict:
    return {"kind": "summary", "detail": detail, "source_label": "s"}


def test_a_bundle_over_the_size_limit_is_b004_before_it_is_parsed(small_limits):
    for text in ("[" * 2001, b"[" * 2001):  # not even JSON: the size is checked first
        with pytest.raises(BundleError) as caught:
            parse_bundle_text(text, "b.json")
        assert _single(caught.value)[:2] == ("B004", "the bundle is 2,001 bytes; the limit is 2,000")


def test_too_many_evidence_items_is_b005_counting_the_candidates(small_limits):
    rubric = admiss.compile_source(RUBRIC)
    with pytest.raises(BundleError) as caught:
        rubric.check({"evidence": [_item(), _item()], "candidates": [{"rung": "r", "evidence": [_item(), _item()]}]})
    assert _single(caught.value)[:2] == ("B005", "evidence: 4 evidence items in the bundle; the limit is 3")
    assert rubric.check({"evidence": [_item()] * 3}).verdict == "fail"
    # A trace's steps are its evidence: the same limit holds.
    trace = [{"role": "user", "content": "Go."}] + [{"role": "assistant", "content": f"step {n}"} for n in range(4)]
    with pytest.raises(BundleError) as caught:
        rubric.check(trace)
    assert _single(caught.value)[:2] == ("B005", "evidence: 4 evidence items in the bundle; the limit is 3")


def test_a_string_over_the_limit_is_b006_at_its_path(small_limits):
    text = json.dumps({"evidence": [_item(), _item("x" * 101)]})
    with pytest.raises(BundleError) as caught:
        parse_bundle_text(text, "b.json")
    assert _single(caught.value)[:2] == ("B006", "evidence[1].detail: a string of 101 characters; the limit is 100")
    parse_bundle_text(json.dumps({"evidence": [_item("x" * 100)]}), "b.json")


def test_a_file_larger_than_the_limit_is_not_read_whole(admiss_cli, tmp_path):
    # /dev/zero never ends: reading stops at the limit with a located error.
    ran = admiss_cli("compile", "/dev/zero")
    assert ran.code == 2 and "/dev/zero: E001 is larger than 33,554,432 bytes" in ran.err


# ---------------------------------------------------------------- rendering many errors


class _CountingText(str):
    """Source text that counts how often it is split into lines."""

    splits = 0

    def splitlines(self, *args, **kwargs):
        type(self).splits += 1
        return super().splitlines(*args, **kwargs)


def test_rendering_many_compile_errors_splits_the_source_once():
    text = _CountingText("".join(f"PROPERTY p{i} {{ ADMIT no_such_kind_{i} }}\n" for i in range(300)))
    with pytest.raises(RubricCompileError) as caught:
        parse_source(text, "m.rubric")
    _CountingText.splits = 0
    rendered = caught.value.render()
    assert rendered.count("E101 unknown evidence kind") == 300
    assert _CountingText.splits <= 1


def test_a_snippet_of_a_huge_line_shows_a_window_around_the_column():
    from admiss.source import SNIPPET_WIDTH

    text = '{"a": "' + "x" * 100_000 + '", oops}'
    with pytest.raises(BundleError) as caught:
        parse_bundle_text(text, "b.json")
    source_line, caret = caught.value.render().splitlines()[1:3]
    assert len(source_line) <= SNIPPET_WIDTH + 2 and "oops" in source_line
    assert source_line[caret.index("^")] == "o"
