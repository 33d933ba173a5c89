"""`admiss test`: real processes on test files in a temporary folder. A broken case fails
with an evidence-first report; a bad test file is a located error (exit 2), never a
traceback; the JUnit output is valid against the public schema; run_file is the API the
pytest plugin uses."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from admiss.testing import TEST_GLOB, find_test_files, run_file
from tests.ci.junit_schema import junit_schema

ROOT = Path(__file__).resolve().parents[2]
SEC = ROOT / "rubrics" / "sec_filings.rubric"

BROKEN = '''\
[[case]]
name = "holds"
[case.bundle]
evidence = [{ kind = "verified_external_source", detail = "The 10-K names Apex.", source_label = "10-K filing" }]
[case.expect]
verdict = "pass"

[[case]]
name = "wrongly expects an 8-K exhibit to count"
[case.bundle]
evidence = [
  { kind = "verified_external_source", detail = "8-K exhibit names Apex.", source_label = "8-K press-release exhibit" },
]
[case.expect]
properties = { named_operator = "yes" }
excluded = [{ property = "named_operator", reason = "forbidden", value = "summary" }]
'''


def _folder(tmp_path: Path, tests: str, name: str = "sec_filings.rubric.test.toml") -> Path:
    shutil.copy(SEC, tmp_path / "sec_filings.rubric")
    (tmp_path / name).write_text(tests)
    return tmp_path / name


def test_a_broken_case_fails_evidence_first_with_the_clause(admiss_cli, tmp_path):
    _folder(tmp_path, BROKEN)
    ran = admiss_cli("test")
    assert ran.code == 1, ran.out + ran.err
    report = ran.out
    # The second [[case]] header is line 8 of the file.
    block = report.split("FAIL sec_filings.rubric.test.toml:8: wrongly expects an 8-K exhibit to count\n")[1]
    first = block.split("\n\n")[0]
    lines = first.splitlines()
    assert lines[0] == "  expect.properties.named_operator"
    assert lines[1] == "    evidence:"
    assert lines[2] == ("      excluded '8-K exhibit names Apex.' (shortcut-rejected) by REJECT SHORTCUT "
                        '"8-K press-release exhibit" at sec_filings.rubric:9:19')
    assert lines[3] == "    clause:   DEFAULT no at sec_filings.rubric:10:11"
    assert lines[4:6] == ["    expected: yes", "    got:      no"]
    assert "  expect.excluded[0]" in first and "got:      no excluded item matches" in first
    assert "2 cases: 1 passed, 1 failed, 0 errors in 1 test file" in report
    assert "FAIL" not in report.split("wrongly expects")[0].replace("FAIL sec_filings.rubric.test.toml:8: ", "")


def test_a_broken_case_in_json_and_in_valid_junit(admiss_cli, tmp_path):
    schema = junit_schema()
    _folder(tmp_path, BROKEN)
    data = json.loads(admiss_cli("test", "--format", "json").out)
    (file,) = data["files"]
    assert [c["outcome"] for c in file["cases"]] == ["pass", "fail"]
    failure = file["cases"][1]["failures"][0]
    assert failure["expected"] == "yes" and failure["got"] == "no"
    assert failure["clause"] == "DEFAULT no at sec_filings.rubric:10:11"
    ran = admiss_cli("test", "--format", "junit")
    assert ran.code == 1
    schema.validate(ran.out)
    cases = ET.fromstring(ran.out).findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["holds", "wrongly expects an 8-K exhibit to count"]
    assert cases[0].find("failure") is None
    assert "expected: yes" in cases[1].find("failure").text


@pytest.mark.parametrize("text, where, message", [
    ("[[case]]\nname = \"x\"\nbundel = \"b.json\"\n", ":1:1: E192", "case 1: unknown key 'bundel'"),
    ("[[case]]\nname = \"x\n", ":2:", "E001 TOML syntax error"),
    ('[[case]]\nname = "x"\nbundle = { evidence = [] }\nexpect.properties = { named_operater = "yes" }\n',
     ":1:1: E192", "expect.properties.named_operater: the rubric has no property 'named_operater'"),
    ('[[case]]\nname = "x"\nbundle = "missing.json"\nexpect.verdict = "pass"\n', "missing.json", "E001"),
    ('[[case]]\nname = "x"\nbundle = { evidence = [] }\nexpect.verdict = "passed"\n', ":1:1: E192",
     "expect.verdict: 'passed' is not one of pass, fail"),
    ('rubric = "nope.rubric"\n[[case]]\nname = "x"\nbundle = { evidence = [] }\nexpect.verdict = "pass"\n',
     "nope.rubric", "E001"),
])
def test_a_bad_test_file_is_a_located_error(admiss_cli, tmp_path, text, where, message):
    _folder(tmp_path, text)
    ran = admiss_cli("test")
    assert ran.code == 2, ran.out + ran.err
    assert where in ran.out and message in ran.out, ran.out
    assert "Traceback" not in ran.out + ran.err


def test_the_hint_says_what_was_meant(admiss_cli, tmp_path):
    _folder(tmp_path, "[[case]]\nname = \"x\"\nbundel = \"b.json\"\n")
    assert "hint: did you mean 'bundle'?" in admiss_cli("test").out


def test_a_case_whose_bundle_breaks_the_bundle_rules_errors(admiss_cli, tmp_path):
    _folder(tmp_path, '[[case]]\nname = "x"\nbundle = { evidence = [{ kind = "summary" }] }\nexpect.verdict = "fail"\n')
    ran = admiss_cli("test")
    assert ran.code == 2
    assert "ERROR sec_filings.rubric.test.toml:1: x" in ran.out and "evidence[0]" in ran.out


def test_no_test_files_is_exit_2(admiss_cli, tmp_path):
    ran = admiss_cli("test", ".")
    assert ran.code == 2 and "E193 no test files found" in ran.err


def test_lcov_never_overwrites_an_input(admiss_cli, tmp_path):
    path = _folder(tmp_path, BROKEN.split("\n\n[[case]]")[0] + "\n")
    before = path.read_text()
    ran = admiss_cli("test", "--coverage", "--lcov", path.name)
    assert ran.code == 2 and "E006" in ran.err
    assert path.read_text() == before


def test_run_file_and_find_test_files_are_the_plugin_api(tmp_path):
    path = _folder(tmp_path, BROKEN)
    assert find_test_files([tmp_path]) == [path]
    assert TEST_GLOB == "*.rubric.test.toml"
    result = run_file(path)
    assert result.error is None and not result.passed
    assert [(c.name, c.outcome, c.line) for c in result.cases] == [
        ("holds", "pass", 1), ("wrongly expects an 8-K exhibit to count", "fail", 8)]
    broken = run_file(tmp_path / "missing.rubric.test.toml")
    assert broken.error is not None and broken.cases == ()


def test_a_recorded_judge_reply_is_read_by_the_real_judge_gate(tmp_path):
    (tmp_path / "r.rubric").write_text(
        'PROPERTY p "P" {\n  ADMIT verified_external_source\n  FORBID final_answer\n  REJECT SHORTCUT "blog"\n'
        '  DEFAULT no\n}\nCHAIN c {\n  RUNG only MODEL "openai/gpt-5-mini" {\n'
        '    GATE judge MODEL "anthropic/claude-sonnet-5" THRESHOLD 0.5\n'
        '      RUBRIC "Which claim is unsupported? List what could be wrong."\n      ON ABSTAIN fail_closed\n  }\n}\n')
    case = '''[[case]]
name = "{name}"
[case.bundle]
output = "Apex."
evidence = []
[case.replies]
"anthropic/claude-sonnet-5" = '{reply}'
[case.expect]
gates = [{{ rung = "only", gate = "judge", verdict = "{verdict}"{reason} }}]
'''
    good = '{"failure_hypotheses": ["wrong name"], "evidence": [], "rationale": "fine", "score": 0.9}'
    # Not the reply format the judge requires: its own parser rejects it, as it would a model's.
    bad = '{"score": 1.0}'
    (tmp_path / "r.rubric.test.toml").write_text(
        case.format(name="good", reply=good, verdict="pass", reason="")
        + case.format(name="bad", reply=bad, verdict="abstain", reason=', reason = "judge reply rejected"'))
    result = run_file(tmp_path / "r.rubric.test.toml")
    assert result.error is None, result.error
    assert [c.outcome for c in result.cases] == ["pass", "pass"], [c.failures for c in result.cases]


def test_what_a_bundle_or_case_wrote_cannot_forge_a_line(admiss_cli, tmp_path):
    _folder(tmp_path, '[[case]]\nname = "x\\nFAIL forged"\n[case.bundle]\nevidence = [{ kind = "verified_external_source", '
                      'detail = "\\u001b[2J\\n    expected: no", source_label = "news article" }]\n'
                      '[case.expect]\nproperties = { named_operator = "yes" }\n')
    ran = admiss_cli("test")
    assert ran.code == 1
    assert "\x1b" not in ran.out
    assert not any(line.startswith("FAIL forged") for line in ran.out.splitlines())
    assert [line for line in ran.out.splitlines() if line.strip().startswith("expected:")] == ["    expected: yes"]


def test_the_pytest_plugin_collects_and_runs_the_cases(tmp_path):
    """The plugin (admiss/integrations/pytest_plugin.py, a pytest11 entry point) asks
    admiss.testing for TEST_FILES, load_cases and run_case: a real pytest run over a broken
    test file."""
    import subprocess
    import sys

    _folder(tmp_path, BROKEN)
    ran = subprocess.run([sys.executable, "-m", "pytest", "--admiss-tests",
                          "-p", "no:cacheprovider", "-q", str(tmp_path)], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "1 failed, 1 passed" in ran.stdout
    assert "expect.properties.named_operator" in ran.stdout and "DEFAULT no at" in ran.stdout


@pytest.mark.parametrize("text,came_from", [
    ('rubric = "nope.rubric"\n[[case]]\nbundle = "b.json"\nexpect = "pass"\n',
     "the test file's rubric key, relative to its folder"),
    ('[[case]]\nbundle = "b.json"\nexpect = "pass"\n',
     "the test file's name: with no rubric key, NAME.test.toml tests NAME"),
], ids=["rubric key", "file name"])
def test_a_missing_rubric_says_where_its_name_came_from(admiss_cli, tmp_path, text, came_from):
    # As a bundle's "rubric" field does (issue 21, item 12): "nope.rubric: E001 no such file"
    # named a file the user never wrote down when the test file's own name implied it.
    (tmp_path / "nope.rubric.test.toml").write_text(text, encoding="utf-8")
    ran = admiss_cli("test", "nope.rubric.test.toml")
    assert ran.code == 2
    assert (f"nope.rubric.test.toml: E001 rubric: no such file 'nope.rubric' (the name comes from {came_from})\n"
            '    hint: fix or add rubric = "FILE"\n') in ran.out + ran.err, ran.out + ran.err
