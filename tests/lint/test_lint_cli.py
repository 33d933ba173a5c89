"""``admiss lint`` and ``admiss fmt`` on the command line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WEAK = """PROPERTY p {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
}
"""
CLEAN = WEAK.replace("}\n", '  REJECT SHORTCUT "news article"\n}\n')


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_rubrics_are_lint_clean(admiss_cli):
    shipped = len(list((ROOT / "rubrics").glob("*.rubric")))
    ran = admiss_cli("lint", ROOT / "rubrics")
    assert (ran.code, ran.out) == (0, f"No problems in {shipped} files.\n"), ran.out + ran.err


def test_shipped_rubrics_are_fmt_clean(admiss_cli):
    ran = admiss_cli("fmt", "--check", ROOT / "rubrics")
    assert (ran.code, ran.out) == (0, ""), ran.out + ran.err


def test_folder_is_searched_and_findings_exit_1(admiss_cli, tmp_path):
    write(tmp_path, "a/weak.rubric", WEAK)
    write(tmp_path, "a/b/clean.rubric", CLEAN)
    write(tmp_path, "a/notes.txt", "not a rubric")
    ran = admiss_cli("lint", "a")
    assert ran.code == 1
    assert ran.out.startswith("a/weak.rubric:1:1: ADM004 property 'p' rejects no shortcuts\n  PROPERTY p {\n")
    assert ran.out.endswith("Found 1 problem (0 errors, 1 warning) in 1 file.\n")


def test_unreadable_file_exits_2_and_the_rest_are_still_linted(admiss_cli, tmp_path):
    write(tmp_path, "weak.rubric", WEAK)
    ran = admiss_cli("lint", "missing.rubric", "weak.rubric")
    assert ran.code == 2
    assert ran.err.startswith("missing.rubric: E001 no such file")
    assert "weak.rubric:1:1: ADM004" in ran.out


def test_syntax_error_is_a_finding(admiss_cli, tmp_path):
    write(tmp_path, "bad.rubric", "PROPERTY p {\n  ADMIT\n}\n")
    ran = admiss_cli("lint", "bad.rubric")
    assert ran.code == 1
    assert ran.out.startswith("bad.rubric:3:1: E100 syntax error: unexpected '}'")


def test_select_and_ignore_take_codes_and_prefixes(admiss_cli, tmp_path):
    write(tmp_path, "weak.rubric", WEAK.replace("ADMIT verified_external_source", "ADMIT summary"))
    codes = lambda ran: sorted({d["code"] for d in json.loads(ran.out)})  # noqa: E731
    assert codes(admiss_cli("lint", "-f", "json", "weak.rubric")) == ["ADM003", "ADM004", "ADM019"]
    assert codes(admiss_cli("lint", "-f", "json", "--select", "ADM003,adm004", "weak.rubric")) == ["ADM003", "ADM004"]
    assert codes(admiss_cli("lint", "-f", "json", "--ignore", "ADM00", "weak.rubric")) == ["ADM019"]
    ran = admiss_cli("lint", "--select", "ADM02", "--ignore", "ADM021", "weak.rubric")
    assert (ran.code, ran.out) == (0, "No problems in 1 file.\n")


def test_unknown_code_is_a_usage_error(admiss_cli, tmp_path):
    write(tmp_path, "weak.rubric", WEAK)
    ran = admiss_cli("lint", "--ignore", "ADM999", "weak.rubric")
    assert ran.code == 2 and "E004 'ADM999' is neither a lint rule code nor a prefix of one" in ran.err


def test_pyproject_and_admiss_toml_configure_lint(admiss_cli, tmp_path):
    write(tmp_path, "weak.rubric", WEAK)
    write(tmp_path, "pyproject.toml", '[tool.admiss.lint]\nignore = ["ADM004"]\n')
    sub = tmp_path / "sub"
    write(sub, "weak.rubric", WEAK)
    assert admiss_cli("lint", "weak.rubric").code == 0
    # The nearest folder that configures lint wins; admiss.toml before pyproject.toml.
    assert admiss_cli("lint", "weak.rubric", cwd=sub).code == 0
    write(sub, "admiss.toml", '[lint]\nselect = ["ADM004"]\n')
    assert admiss_cli("lint", "weak.rubric", cwd=sub).code == 1
    write(sub, "admiss.toml", '[lint]\nselects = ["ADM004"]\n')
    ran = admiss_cli("lint", "weak.rubric", cwd=sub)
    assert ran.code == 2 and "E004 unknown lint setting 'selects'" in ran.err


def test_inline_suppression(admiss_cli, tmp_path):
    write(tmp_path, "quiet.rubric", WEAK.replace("PROPERTY p {", "PROPERTY p {  # admiss: ignore[ADM004]"))
    assert admiss_cli("lint", "quiet.rubric").code == 0
    write(tmp_path, "stale.rubric", "# admiss: ignore[ADM004]\n" + CLEAN)
    ran = admiss_cli("lint", "stale.rubric")
    assert ran.code == 1 and "stale.rubric:1:1: ADM100 unused suppression: ADM004 is not reported on line 2" in ran.out


def test_sarif_and_github_formats(admiss_cli, tmp_path):
    write(tmp_path, "weak.rubric", WEAK)
    log = json.loads(admiss_cli("lint", "--format", "sarif", "weak.rubric").out)
    assert log["version"] == "2.1.0" and log["runs"][0]["results"][0]["ruleId"] == "ADM004"
    ran = admiss_cli("lint", "--format", "github", "weak.rubric")
    assert ran.out.startswith("::warning file=weak.rubric,line=1,col=1,")


# ------------------------------------------------------------------ fmt

MESSY = "PROPERTY p {ADMIT verified_external_source   # why\n FORBID final_answer,reasoning_trace }\n"
TIDY = "PROPERTY p {\n  ADMIT verified_external_source  # why\n  FORBID final_answer, reasoning_trace\n}\n"


def test_fmt_rewrites_files(admiss_cli, tmp_path):
    path = write(tmp_path, "r/messy.rubric", MESSY)
    write(tmp_path, "r/tidy.rubric", TIDY)
    ran = admiss_cli("fmt", "r")
    assert ran.code == 0 and path.read_text() == TIDY
    assert ran.err == "reformatted r/messy.rubric\n1 file reformatted, 1 file left unchanged\n"
    assert not [p for p in (tmp_path / "r").iterdir() if p.name.startswith(".")], "no temporary file left"


def test_fmt_check_prints_a_diff_and_writes_nothing(admiss_cli, tmp_path):
    path = write(tmp_path, "messy.rubric", MESSY)
    ran = admiss_cli("fmt", "--check", "messy.rubric")
    assert ran.code == 1 and path.read_text() == MESSY
    assert ran.out.startswith("--- messy.rubric\n+++ messy.rubric\n@@ ")
    assert "+  ADMIT verified_external_source  # why\n" in ran.out
    assert "would reformat messy.rubric" in ran.err


def test_fmt_diff_writes_nothing_and_exits_0(admiss_cli, tmp_path):
    path = write(tmp_path, "messy.rubric", MESSY)
    ran = admiss_cli("fmt", "--diff", "messy.rubric")
    assert ran.code == 0 and path.read_text() == MESSY and ran.out.startswith("--- messy.rubric\n")


def test_fmt_leaves_a_file_that_does_not_parse_untouched(admiss_cli, tmp_path):
    path = write(tmp_path, "bad.rubric", "PROPERTY p {\n  ADMIT\n}\n")
    good = write(tmp_path, "messy.rubric", MESSY)
    ran = admiss_cli("fmt", "bad.rubric", "messy.rubric")
    assert ran.code == 2
    assert ran.err.startswith("bad.rubric:3:1: E100 syntax error: unexpected '}'\n  }\n  ^\n")
    assert path.read_text() == "PROPERTY p {\n  ADMIT\n}\n" and good.read_text() == TIDY


def test_pre_commit_hooks_run_the_commands():
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    for hook, entry in (("admiss-lint", "admiss lint"), ("admiss-fmt", "admiss fmt")):
        assert f"- id: {hook}\n" in hooks and f"entry: {entry}\n" in hooks
    assert hooks.count("language: python\n") == 2 and hooks.count("files: \\.rubric$\n") == 2


def test_shipped_rubrics_copy_is_clean_after_fmt(admiss_cli, tmp_path):
    # Formatting the shipped rubrics changes nothing, so neither does linting after it.
    shutil.copytree(ROOT / "rubrics", tmp_path / "rubrics")
    shipped = len(list((ROOT / "rubrics").glob("*.rubric")))
    assert admiss_cli("fmt", "rubrics").err.endswith(f"0 files reformatted, {shipped} files left unchanged\n")


def test_summary_counts_the_files_that_could_not_be_read(admiss_cli, tmp_path):
    # The summary under an E001 must not read "No problems in 0 files." as if all were well.
    ran = admiss_cli("lint", "missing.rubric")
    assert ran.code == 2 and ran.err.startswith("missing.rubric: E001 no such file")
    assert ran.out == "No problems in 0 files read; 1 file could not be read.\n"
    write(tmp_path, "weak.rubric", WEAK)
    ran = admiss_cli("lint", "missing.rubric", "weak.rubric")
    assert ran.out.endswith("Found 1 problem (0 errors, 1 warning) in 1 file; 1 file could not be read.\n")


def test_a_folder_without_rubrics_warns_and_fails(admiss_cli, tmp_path):
    (tmp_path / "empty").mkdir()
    ran = admiss_cli("lint", "empty")
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == "warning: no .rubric files found in empty\n"
    # Beside a folder with a rubric, the empty one is still named, and the run is judged
    # by what was linted.
    write(tmp_path, "full/clean.rubric", CLEAN)
    ran = admiss_cli("lint", "empty", "full")
    assert (ran.code, ran.out, ran.err) == (0, "No problems in 1 file.\n", "warning: no .rubric files found in empty\n")


def test_fmt_summary_counts_the_files_it_could_not_format(admiss_cli, tmp_path):
    # "0 files reformatted, 0 files left unchanged" under an E001 reads as if nothing had gone wrong.
    write(tmp_path, "messy.rubric", MESSY)
    ran = admiss_cli("fmt", "--check", "missing.rubric", "messy.rubric")
    assert ran.code == 2 and ran.err.startswith("missing.rubric: E001 no such file")
    assert ran.err.endswith("1 file would be reformatted, 0 files left unchanged, 1 file could not be formatted\n")


def test_fmt_of_a_folder_without_rubrics_warns_and_fails(admiss_cli, tmp_path):
    # As lint does: `admiss fmt --check rubric/` (a typo'd folder) in CI must not pass.
    (tmp_path / "empty").mkdir()
    ran = admiss_cli("fmt", "--check", "empty")
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == "warning: no .rubric files found in empty\n"
