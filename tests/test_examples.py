"""The shipped example rubrics compile, are written the way the docs recommend, and their
bundles give the results recorded in rubrics/bundles/expected.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import admiss

RUBRICS = Path(__file__).resolve().parent.parent / "rubrics"
BUNDLES = RUBRICS / "bundles"
EXPECTED = {k: v for k, v in json.loads((BUNDLES / "expected.json").read_text()).items() if k != "$comment"}
UNTRUSTED = {"final_answer", "reasoning_trace", "summary", "interpretation", "flawed_tool_call"}


def test_every_bundle_has_an_expectation():
    shipped = {p.relative_to(BUNDLES).as_posix() for p in BUNDLES.glob("*/*.json")}
    assert shipped == set(EXPECTED)


@pytest.mark.parametrize("path", sorted(RUBRICS.glob("*.rubric")), ids=lambda p: p.stem)
def test_rubric_is_exemplary(path: Path):
    rubric = admiss.load(path).ir
    assert rubric.properties
    for prop in rubric.properties:
        # Each property must name its lookalikes, shut out every untrusted kind, and say
        # DEFAULT no out loud rather than rely on the implicit default.
        assert prop.shortcuts, prop.name
        assert UNTRUSTED <= {ref.value for ref in prop.forbid}, prop.name
        assert prop.default.value == "no" and prop.default.span.line > 0, prop.name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundle_result(name: str):
    bundle_path = BUNDLES / name
    bundle = json.loads(bundle_path.read_text(encoding="utf-8"))
    expected = EXPECTED[name]
    rubric = admiss.load(bundle_path.parent / bundle["rubric"], offline=expected.get("offline", False))
    report = rubric.check(bundle).to_dict()
    assert report.get("offline", False) == expected.get("offline", False)
    assert report["aggregate"] == expected["aggregate"]
    assert report["missing_evidence_count"] == expected["missing_evidence_count"]
    assert [p["verdict"] for p in report["properties"]] == expected["verdicts"]
    assert report["verdict"] == expected.get("verdict", expected["aggregate"])
    if "served" in expected:
        assert report["chain"]["served"] == expected["served"]
    if "text" in expected:
        assert rubric.check(bundle).to_text() == (BUNDLES / expected["text"]).read_text(encoding="utf-8")


TRACES = RUBRICS / "traces"
TRACE_EXPECTED = {k: v for k, v in json.loads((TRACES / "expected.json").read_text()).items() if k != "$comment"}


def test_every_trace_has_an_expectation():
    shipped = {p.relative_to(TRACES).as_posix() for p in TRACES.glob("*/*.json")}
    assert shipped == set(TRACE_EXPECTED)


@pytest.mark.parametrize("name", sorted(TRACE_EXPECTED))
def test_trace_result(name: str):
    expected = TRACE_EXPECTED[name]
    trace = json.loads((TRACES / name).read_text(encoding="utf-8"))
    with admiss.load(RUBRICS / expected["rubric"], offline=expected.get("offline", False)) as rubric:
        report = rubric.check(trace).to_dict()
    assert report.get("offline", False) == expected.get("offline", False)
    assert report["aggregate"] == expected["aggregate"]
    assert report["missing_evidence_count"] == expected["missing_evidence_count"]
    assert [p["verdict"] for p in report["properties"]] == expected["verdicts"]
    assert report["verdict"] == expected["verdict"]
    assert report["chain"]["served"] == expected["served"]


def test_a_refund_claimed_after_the_tool_errored_fails_in_every_format():
    # The shipped example has a trace in each of the first five formats; the readers added
    # since are tested on traces their producers wrote (tests/traces/producers/), which are
    # not made to fit this example.
    shipped = ("adk", "anthropic", "openai_chat", "openai_responses", "otel_genai")

    with admiss.load(RUBRICS / "booking_cancellation.rubric") as rubric:
        reports = [rubric.check(json.loads(path.read_text(encoding="utf-8"))).to_dict(full=True)
                   for path in sorted((TRACES / "booking_cancellation").glob("refund_claimed_after_error*.json"))]
    assert sorted(r["trace"]["format"] for r in reports) == sorted(shipped)
    for report in reports:
        assert report["verdict"] == "fail", report["trace"]["format"]
        cancelled, refunded = report["properties"]
        assert cancelled["verdict"] == "yes" and len(cancelled["evidence_steps"]) == 1
        # The failed refund call is flawed, and the agent's own claim is only a final answer.
        assert [(e["kind"], e["reason"]) for e in refunded["excluded"]] == [
            ("flawed_tool_call", "forbidden"), ("final_answer", "forbidden")], report["trace"]["format"]
