"""Where a chain's verdict and the properties' aggregate differ, every report says in words
which one is the answer (issue 21, item 1); where they agree, or there is no chain, nothing
is added, so the seed's text stays byte for byte."""

from __future__ import annotations

import io

import admiss
from admiss.report.rich import print_report, report_console

# A property that passes, and a chain whose only rung fails: aggregate pass, verdict fail.
SOURCE = """PROPERTY sourced "Claims rest on a filing" {
  ADMIT verified_external_source
  FORBID final_answer
}
CHAIN serve {
  GATE json_valid
}
"""
EVIDENCE = [{"kind": "verified_external_source", "detail": "10-K names it.", "source_label": "10-K"}]
DIFFER = {"evidence": EVIDENCE, "output": "not json"}
AGREE = {"evidence": EVIDENCE, "output": "{}"}
NOTE = "the answer is fail: the chain's verdict decides the bundle, not the properties' aggregate (pass)"


def _rich(report) -> str:
    out = io.StringIO()
    print_report(report, report_console(file=out, width=200, color_system=None))
    return out.getvalue()


def test_text_report_says_which_verdict_is_the_answer():
    report = admiss.compile_source(SOURCE, "t.rubric").check(DIFFER)
    assert (report.aggregate, report.verdict) == ("pass", "fail")
    assert report.to_text().endswith(f"\nverdict: fail\nnote: {NOTE}")


def test_json_report_has_the_note_only_where_they_differ():
    rubric = admiss.compile_source(SOURCE, "t.rubric")
    assert rubric.check(DIFFER).to_dict()["verdict_note"] == NOTE
    agreeing = rubric.check(AGREE)
    assert agreeing.verdict == agreeing.aggregate == "pass"
    assert "verdict_note" not in agreeing.to_dict()
    assert "note:" not in agreeing.to_text()


def test_rich_report_says_which_verdict_is_the_answer():
    rubric = admiss.compile_source(SOURCE, "t.rubric")
    assert NOTE in _rich(rubric.check(DIFFER))
    assert "the answer is" not in _rich(rubric.check(AGREE))


def test_no_chain_no_note():
    rubric = admiss.compile_source(SOURCE.split("CHAIN")[0], "t.rubric")
    report = rubric.check({"evidence": []})
    assert report.verdict_note is None and "verdict_note" not in report.to_dict()
