"""``admiss check --format junit|markdown``: real `admiss` processes on the shipped example
bundles and on hostile ones. The JUnit document is validated against the public Windy Road
schema (tests/ci/junit_schema.py) with xmlschema, and its counts are compared with the JSON
reports of the same bundles, read independently."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.ci.junit_schema import junit_schema

ROOT = Path(__file__).resolve().parents[2]
RUBRICS = ROOT / "rubrics"
# Relative to rubrics/, where these tests run them: a bundle reads its rubric only below the working folder.
SEC = sorted(str(p.relative_to(RUBRICS)) for p in (RUBRICS / "bundles" / "sec_filings").glob("*.json"))
SERVE = sorted(str(p.relative_to(RUBRICS)) for p in (RUBRICS / "bundles" / "sec_filings_serve").glob("*.json"))

RUBRIC = 'PROPERTY p "P" {\n  ADMIT verified_external_source\n}\nPROPERTY q "Q" {\n  ADMIT summary\n}\n'
# Characters XML cannot hold, markup, a fence, a table pipe and a forged line: all from the bundle.
HOSTILE_DETAIL = "bell\x07 nul\x00 lone \ud800 ]]> <b>&amp; ``` | row | \n| forged | ✅ pass |"


def _hostile_bundle(folder: Path) -> Path:
    (folder / "r.rubric").write_text(RUBRIC)
    bundle = {"rubric": "r.rubric", "evidence": [
        {"kind": "summary", "detail": HOSTILE_DETAIL, "source_label": "s"},
        {"kind": "final_answer", "detail": HOSTILE_DETAIL, "source_label": "f"},
    ]}
    path = folder / "a|b<i>`x`.json"
    path.write_text(json.dumps(bundle))
    return path


def _suites(xml_text: str) -> list[ET.Element]:
    return ET.fromstring(xml_text).findall("testsuite")


def _json_reports(admiss_cli, paths, *flags) -> list[dict]:
    ran = admiss_cli("check", "--format", "json", *flags, *paths, cwd=RUBRICS)
    return [json.loads(line) for line in ran.out.splitlines()]


def test_junit_of_the_sec_bundles_is_valid_and_counts_what_the_json_reports_say(admiss_cli):
    schema = junit_schema()
    ran = admiss_cli("check", "--format", "junit", *SEC, cwd=RUBRICS)
    assert ran.code == 1, ran.err
    schema.validate(ran.out)
    reports = _json_reports(admiss_cli, SEC)
    suites = _suites(ran.out)
    assert [s.get("name") for s in suites] == [r["bundle"] for r in reports]
    for suite, report in zip(suites, reports):
        cases = suite.findall("testcase")
        assert [c.get("name") for c in cases] == [p["name"] for p in report["properties"]]
        failed = [c.get("name") for c in cases if c.find("failure") is not None]
        assert failed == [p["name"] for p in report["properties"] if p["verdict"] == "no"]
        assert int(suite.get("failures")) == len(failed) and int(suite.get("tests")) == len(cases)


def test_a_failed_property_carries_its_text_report(admiss_cli):
    shortcut = "bundles/sec_filings/eight_k_shortcut.json"
    ran = admiss_cli("check", "--format", "junit", shortcut, cwd=RUBRICS)
    failure = _suites(ran.out)[0].find("testcase/failure")
    text = admiss_cli("check", "--format", "text", shortcut, cwd=RUBRICS).out
    # The property block of the text report, without the aggregate lines that follow it.
    assert failure.text == text.split("\naggregate:")[0]
    assert "8-K exhibit says the operator is named. (shortcut-rejected)" in failure.text


def test_a_chain_gets_its_own_case_and_offline_is_said(admiss_cli):
    schema = junit_schema()
    ran = admiss_cli("check", "--offline", "--format", "junit", *SERVE, cwd=RUBRICS)
    schema.validate(ran.out)
    reports = _json_reports(admiss_cli, SERVE, "--offline")
    for suite, report in zip(_suites(ran.out), reports):
        chain = suite.find("testcase[@name='chain serve']")
        assert (chain.find("failure") is None) == (report["chain"]["served"] is not None)
        assert suite.find("properties/property[@name='offline']").get("value") == "true"
        if report["chain"]["served"] is None:
            assert "served: none (exhausted)" in chain.find("failure").text


def test_a_bundle_that_cannot_be_checked_is_an_errored_case_and_exit_2(admiss_cli, tmp_path):
    schema = junit_schema()
    (tmp_path / "r.rubric").write_text(RUBRIC)
    (tmp_path / "bad.json").write_text('{"rubric": "r.rubric", "evidence": [{"kind": "summary"}]}')
    good = tmp_path / "good.json"
    good.write_text('{"rubric": "r.rubric", "evidence": []}')
    ran = admiss_cli("check", "--format", "junit", "bad.json", "good.json")
    assert ran.code == 2
    schema.validate(ran.out)
    bad, ok = _suites(ran.out)
    error = bad.find("testcase/error")
    assert bad.get("errors") == "1" and error.get("type").startswith("B")
    assert "evidence[0]" in error.text
    assert ok.get("failures") == "2"  # both properties lack evidence


def test_hostile_text_stays_valid_xml(admiss_cli, tmp_path):
    schema = junit_schema()
    path = _hostile_bundle(tmp_path)
    ran = admiss_cli("check", "--format", "junit", path.name)
    assert ran.code == 1
    schema.validate(ran.out)
    failure = _suites(ran.out)[0].find("testcase[@name='p']/failure")
    assert "\\x07" in failure.text and "\\x00" in failure.text and "\\ud800" in failure.text
    assert "]]> <b>&amp;" in failure.text  # kept as text, escaped by the writer


def test_markdown_summary_counts_and_rows(admiss_cli):
    ran = admiss_cli("check", "--format", "markdown", *SEC, cwd=RUBRICS)
    assert ran.code == 1
    lines = ran.out.splitlines()
    assert lines[0] == "## admiss check: 2 passed, 2 failed, 0 could not be checked"
    rows = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    reports = _json_reports(admiss_cli, SEC)
    assert len(rows) == len(reports)
    for row, report in zip(rows, reports):
        assert ("✅ pass" in row) == (report["verdict"] == "pass")
    # Each failed bundle's report is shown, collapsed, in a fence.
    assert ran.out.count("<details>") == 2 and "(shortcut-rejected)" in ran.out


def test_markdown_from_a_hostile_bundle_forges_no_row_and_keeps_its_fence(admiss_cli, tmp_path):
    path = _hostile_bundle(tmp_path)
    ran = admiss_cli("check", "--format", "markdown", path.name)
    lines = ran.out.splitlines()
    rows = [line for line in lines if line.startswith("|")]
    assert len(rows) == 3  # the header, the rule and the one bundle
    # The row has its four cells: every | the name holds is escaped.
    assert rows[2].replace("\\|", "").count("|") == 5
    assert not any(line.startswith("| forged") for line in lines)
    fence = next(line for line in lines if line.startswith("```"))
    assert fence == "````text"  # longer than the ``` inside the report
    assert "<b>" not in ran.out.split("<details>")[1].split("````text")[0]
