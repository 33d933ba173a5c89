"""The pytest plugin (admiss/integrations/pytest_plugin.py), run by pytest itself through
``pytester``: its fixtures, its assertion's message, its cost to runs that never use it, and
the collection of rubric test files through the ``admiss.testing`` contract."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

# In-process pytester runs drop the modules a run imported; imported here, admiss's modules
# stay one set of classes across the runs of this file (else AdmissError of one run is not
# that of the next).
import admiss.api  # noqa: F401

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester folder holding the shipped rubrics, bundles and traces under rubrics/."""
    shutil.copytree(ROOT / "rubrics", pytester.path / "rubrics")
    return pytester


def test_loading_the_plugin_imports_nothing_of_admiss_beyond_itself():
    # pytest loads the entry point in every run, the project's own suite included.
    code = ("import sys, admiss.integrations.pytest_plugin\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('admiss', 'lark', 'rich', 'typer', 'httpx')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['admiss', 'admiss.integrations', 'admiss.integrations.pytest_plugin']"


def test_a_run_that_uses_no_fixture_is_left_alone(pytester):
    pytester.makepyfile("""
        import sys

        def test_plain(request):
            assert request.config.pluginmanager.has_plugin("admiss")  # the entry point loaded
            assert "admiss.api" not in sys.modules
        """)
    pytester.makefile(".json", example='{"evidence": []}')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_passing_bundle_passes_and_a_failing_one_fails_with_the_report(project):
    mixed = json.loads((project.path / "rubrics/bundles/sec_filings/mixed_evidence.json").read_text())
    del mixed["evidence"][2]  # the 10-K: what is left is excluded
    (project.path / "unproven.json").write_text(json.dumps(mixed))
    project.makepyfile("""
        import pytest

        @pytest.mark.admiss(rubric="rubrics/sec_filings.rubric")
        def test_ten_k(admiss_check):
            report = admiss_check("rubrics/bundles/sec_filings/ten_k_filing.json")
            assert report.verdict == "pass"

        @pytest.mark.admiss(rubric="rubrics/sec_filings.rubric")
        def test_eight_k(admiss_check):
            admiss_check("unproven.json")
        """)
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "E *AssertionError: admiss: expected pass, got fail (unproven.json, "
        "rubric sec_filings)",
        "E *property: Named operator evidence comes from a 10-K or 10-Q filing",
        "E *evidence: []",
        "E *excluded: Final answer says the 10-K confirms the operator. (forbidden); "
        "8-K exhibit says the operator is named. (shortcut-rejected)",
        "E *aggregate: fail",
        "E *excluded, by clause:",
        "E *named_operator: 'Final answer says the 10-K confirms the operator.' forbidden by FORBID final_answer "
        "(*rubrics/sec_filings.rubric:8:10)",
        "E *named_operator: '8-K exhibit says the operator is named.' rejected by REJECT SHORTCUT "
        "8-K press-release exhibit (*rubrics/sec_filings.rubric:9:19)",
    ])


def test_expect_fail_passes_on_a_failing_bundle_and_fails_on_a_passing_one(project):
    project.makepyfile("""
        import pytest

        pytestmark = pytest.mark.admiss(rubric="rubrics/sec_filings.rubric")

        def test_shortcut_fails(admiss_check):
            admiss_check("rubrics/bundles/sec_filings/eight_k_shortcut.json", expect="fail")

        def test_proof_does_not_fail(admiss_check):
            admiss_check("rubrics/bundles/sec_filings/ten_k_filing.json", expect="fail")
        """)
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["E *AssertionError: admiss: expected fail, got pass (*ten_k_filing.json, *"])


def test_a_trace_is_checked_through_the_rubrics_map_block(project):
    project.makeini("""
        [pytest]
        admiss_rubric = rubrics/booking_cancellation.rubric
        """)
    project.makepyfile("""
        def test_proven(admiss_check):
            report = admiss_check("rubrics/traces/booking_cancellation/cancelled_and_refunded.json")
            assert report.trace["format"] == "openai_chat"

        def test_refund_claimed_after_an_error(admiss_check):
            admiss_check("rubrics/traces/booking_cancellation/refund_claimed_after_error.json")
        """)
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["E *AssertionError: admiss: expected pass, got fail (*refund_claimed_after_error.json, "
                                 "rubric booking_cancellation)",
                                 "E *refund_issued: * forbidden by FORBID flawed_tool_call (*booking_cancellation.rubric:*)"])


def test_the_command_line_rubric_overrides_the_ini_one_and_a_dict_is_checked(project):
    project.makeini("""
        [pytest]
        admiss_rubric = rubrics/booking_cancellation.rubric
        """)
    project.makepyfile("""
        def test_inline(admiss_check, admiss_rubric):
            assert admiss_rubric.name == "sec_filings"
            admiss_check({"evidence": [{"kind": "verified_external_source", "detail": "10-K says so.",
                                        "source_label": "10-K filing"}]})
        """)
    result = project.runpytest("-p", "no:cacheprovider", "--admiss-rubric", "rubrics/sec_filings.rubric")
    result.assert_outcomes(passed=1)


def test_admiss_load_gives_one_rubric_per_path_for_the_session(project):
    project.makepyfile("""
        SEEN = []

        def test_one(admiss_load):
            SEEN.append(admiss_load("rubrics/sec_filings.rubric"))
            assert admiss_load("rubrics/../rubrics/sec_filings.rubric") is SEEN[0]

        def test_two(admiss_load, admiss_check):
            rubric = admiss_load("rubrics/sec_filings.rubric")
            assert rubric is SEEN[0]
            admiss_check({"evidence": []}, expect="fail", rubric=rubric)
        """)
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_the_ini_loads_chains_offline_and_names_their_config(project):
    # The serve example's judge has no provider here: offline it abstains, online it is E140.
    (project.path / "empty.toml").write_text("")
    project.makeini("""
        [pytest]
        admiss_rubric = rubrics/sec_filings_serve.rubric
        admiss_config = empty.toml
        admiss_offline = true
        """)
    project.makepyfile("""
        def test_escalated(admiss_check):
            report = admiss_check("rubrics/bundles/sec_filings_serve/escalated_to_strong.json", expect="fail")
            assert report.to_text().startswith("offline: no model was called")
        """)
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    result = project.runpytest("-p", "no:cacheprovider", "-o", "admiss_offline=false")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*E140*openai/gpt-5*"])
    result = project.runpytest("-p", "no:cacheprovider", "-o", "admiss_config=missing.toml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*missing.toml: E001 config file not found*"])


def test_no_rubric_named_fails_with_what_to_do(pytester):
    pytester.makepyfile("""
        def test_x(admiss_check):
            admiss_check({"evidence": []})
        """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*admiss_rubric: no rubric named: mark the test @pytest.mark.admiss(rubric=*"])


def test_a_bad_rubric_or_bundle_fails_with_its_located_error_not_a_traceback(project):
    (project.path / "typo.rubric").write_text("PROPERTY p {\n  ADMIT verified_extrenal_source\n}\n")
    (project.path / "bad.json").write_text('{"evidence": [{"kind": "final_answer"}]}')
    project.makepyfile("""
        import pytest

        @pytest.mark.admiss(rubric="typo.rubric")
        def test_typo(admiss_rubric):
            pass

        @pytest.mark.admiss(rubric="rubrics/sec_filings.rubric")
        def test_bad_bundle(admiss_check):
            admiss_check("bad.json")
        """)
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=0, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*typo.rubric:2:9: E10* unknown evidence kind*", "*did you mean*",
                                 "*bad.json*evidence[[]0[]].detail: missing*"])
    assert "admiss/api.py" not in result.stdout.str() and "Traceback" not in result.stdout.str()


def test_assert_verdict_is_importable_for_reports_made_elsewhere():
    import admiss
    from admiss.integrations.pytest_plugin import assert_verdict

    rubric = admiss.load(ROOT / "rubrics" / "sec_filings.rubric")
    report = rubric.check({"evidence": [{"kind": "summary", "detail": "A summary.", "source_label": "notes"}]})
    assert_verdict(report, "fail")
    with pytest.raises(AssertionError) as raised:
        assert_verdict(report)
    assert "'A summary.' forbidden by FORBID summary" in str(raised.value)
    assert "verdict: no" in str(raised.value)


def test_text_a_bundle_wrote_cannot_forge_a_line_of_the_message():
    import admiss
    from admiss.integrations.pytest_plugin import failure_message

    rubric = admiss.load(ROOT / "rubrics" / "sec_filings.rubric")
    forged = "x\nadmiss: expected pass, got pass\x1b[2J"
    report = rubric.check({"evidence": [{"kind": "summary", "detail": forged, "source_label": "notes"}]})
    lines = failure_message(report, "pass").splitlines()
    assert [line for line in lines if line.startswith("admiss:")] == [lines[0]]
    assert "\x1b" not in "".join(lines)


# ---------------------------------------------------------------- rubric test files


def test_asking_for_rubric_tests_without_admiss_testing_is_a_usage_error(pytester, monkeypatch):
    # admiss.testing exists now (admiss test): an admiss without it is one where importing it fails.
    monkeypatch.setitem(sys.modules, "admiss.testing", None)
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", "--admiss-tests")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--admiss-tests: this admiss has no admiss.testing module*"])


class Case:
    def __init__(self, name: str, line: int, holds: bool):
        self.name, self.line, self.holds = name, line, holds


class Outcome:
    def __init__(self, passed: bool, message: str):
        self.passed, self.message = passed, message


@pytest.fixture
def contract(monkeypatch) -> types.ModuleType:
    """A module keeping the admiss.testing contract the plugin documents: each line of a
    ``*.cases`` file is a case "name holds|breaks" (``admiss test`` brings the real format)."""
    from admiss.errors import Diagnostic, TraceError

    def load_cases(path: Path) -> list[Case]:
        lines = path.read_text().splitlines()
        if "broken" in lines:
            raise TraceError([Diagnostic("B020", "not a case", file=str(path))])
        return [Case(*line.split()[:1], i + 1, line.endswith("holds")) for i, line in enumerate(lines)]

    module = types.ModuleType("admiss.testing")
    module.TEST_FILES = ("*.cases",)
    module.load_cases = load_cases
    module.run_case = lambda case: Outcome(case.holds, f"expected pass, got fail at line {case.line}")
    monkeypatch.setitem(sys.modules, "admiss.testing", module)
    return module


def test_rubric_test_files_are_collected_only_when_asked(pytester, contract):
    pytester.makefile(".cases", rubric="shortcut holds\nproof breaks")
    pytester.makepyfile("def test_x(): pass")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    result = pytester.runpytest("-p", "no:cacheprovider", "--admiss-tests", "-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["rubric.cases::shortcut PASSED*", "rubric.cases::proof FAILED*"])
    result.stdout.fnmatch_lines(["expected pass, got fail at line 2"])


def test_the_ini_can_switch_collection_on_and_name_the_files(pytester, contract):
    pytester.makeini("""
        [pytest]
        admiss_tests = true
        admiss_test_files = *.mine
        """)
    pytester.makefile(".cases", ignored="a breaks")
    pytester.makefile(".mine", chosen="b holds")
    result = pytester.runpytest("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["chosen.mine::b PASSED*"])


def test_a_malformed_test_file_is_a_collection_error_with_its_message(pytester, contract):
    pytester.makefile(".cases", bad="broken")
    result = pytester.runpytest("-p", "no:cacheprovider", "--admiss-tests")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*bad.cases: B020 not a case*"])
    assert "Traceback" not in result.stdout.str()
