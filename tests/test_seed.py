"""The Admissibility Gate document's five scenarios and its expected_report, byte for byte."""

import pytest

import admiss

STRICT = """
PROPERTY named_operator "Named operator evidence comes from a 10-K or 10-Q filing" {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit", "earnings recap", "news article"
  DEFAULT no
}
"""
# The seed's lenient_kind_spec: final answers admitted, the rest still forbidden.
LENIENT_KIND = """
PROPERTY named_operator "Named operator evidence comes from a 10-K or 10-Q filing" {
  ADMIT verified_external_source, final_answer
  FORBID reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit", "earnings recap", "news article"
}
"""
# The seed's lenient_shortcut_spec: no shortcut list.
LENIENT_SHORTCUT = """
PROPERTY named_operator "Named operator evidence comes from a 10-K or 10-Q filing" {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
}
"""

FINAL_ANSWER = {
    "kind": "final_answer",
    "detail": "Final answer says the 10-K confirms the operator.",
    "source_label": "final_answer",
}
SHORTCUT = {
    "kind": "verified_external_source",
    "detail": "8-K exhibit says the operator is named.",
    "source_label": "8-K press-release exhibit",
}
TEN_K = {
    "kind": "verified_external_source",
    "detail": "10-K filing says the operator is named.",
    "source_label": "10-K filing",
}

EXPECTED_REPORT = """property: Named operator evidence comes from a 10-K or 10-Q filing
admissible: verified_external_source
forbidden: final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
shortcut_rejections: 8-K press-release exhibit, earnings recap, news article
evidence: []
excluded: 8-K exhibit says the operator is named. (shortcut-rejected)
rationale: No admissible evidence supports this property.
default_verdict: no
verdict: no
aggregate: fail
missing_evidence_count: 1"""


def _property(source: str, item: dict) -> dict:
    return admiss.compile_source(source).check({"evidence": [item]}).to_dict()["properties"][0]


def _seed_excluded(prop: dict) -> list[dict]:
    return [{"detail": e["detail"], "reason": e["reason"]} for e in prop["excluded"]]


def test_strict_forbidden():
    prop = _property(STRICT, FINAL_ANSWER)
    assert prop["verdict"] == "no"
    assert _seed_excluded(prop) == [{"detail": FINAL_ANSWER["detail"], "reason": "forbidden"}]


def test_strict_shortcut():
    prop = _property(STRICT, SHORTCUT)
    assert prop["verdict"] == "no"
    assert _seed_excluded(prop) == [{"detail": SHORTCUT["detail"], "reason": "shortcut-rejected"}]


def test_strict_accept():
    prop = _property(STRICT, TEN_K)
    assert prop["verdict"] == "yes"
    assert prop["evidence"] == [TEN_K["detail"]]


def test_lenient_kind():
    prop = _property(LENIENT_KIND, FINAL_ANSWER)
    assert prop["verdict"] == "yes"
    assert prop["evidence"] == [FINAL_ANSWER["detail"]]


def test_lenient_shortcut():
    prop = _property(LENIENT_SHORTCUT, SHORTCUT)
    assert prop["verdict"] == "yes"
    assert prop["evidence"] == [SHORTCUT["detail"]]


def test_expected_report_byte_for_byte():
    report = admiss.compile_source(STRICT).check({"evidence": [SHORTCUT]})
    assert report.to_text() == EXPECTED_REPORT
    assert report.verdict == "fail"


@pytest.mark.parametrize(
    "item, verdict",
    [(FINAL_ANSWER, "fail"), (SHORTCUT, "fail"), (TEN_K, "pass")],
)
def test_seed_verdicts_drive_the_aggregate(item, verdict):
    report = admiss.compile_source(STRICT).check({"evidence": [item]})
    assert report.verdict == verdict
    assert report.missing_evidence_count == (0 if verdict == "pass" else 1)
