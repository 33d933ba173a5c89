"""What compile and lint check on disk: schema files and gate programs (E119, E120), and an
explicit --config, whether or not a chain will read it."""

from __future__ import annotations

from pathlib import Path

import pytest

import admiss
from admiss.errors import InputError, RubricCompileError

SCHEMA_GATE = 'CHAIN c {\n  GATE schema FILE "answer.schema.json"\n}\n'
PROPERTY_ONLY = "PROPERTY p { ADMIT summary }\n"


def _rubric(folder: Path, text: str, name: str = "r.rubric") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _codes(error) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.column) for d in error.diagnostics]


def test_a_missing_schema_file_is_e119_at_the_file_name(tmp_path):
    with pytest.raises(RubricCompileError) as caught:
        admiss.load(_rubric(tmp_path, SCHEMA_GATE))
    assert _codes(caught.value) == [("E119", 2, 20)]
    assert "schema FILE 'answer.schema.json' not found" in caught.value.render()
    (tmp_path / "answer.schema.json").write_text("{}", encoding="utf-8")
    admiss.load(tmp_path / "r.rubric")


def test_the_file_is_checked_on_a_cache_hit_too(tmp_path, monkeypatch):
    monkeypatch.setenv("ADMISS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ADMISS_NO_CACHE", raising=False)
    (tmp_path / "answer.schema.json").write_text("{}", encoding="utf-8")
    admiss.load(_rubric(tmp_path, SCHEMA_GATE))
    (tmp_path / "answer.schema.json").unlink()
    with pytest.raises(RubricCompileError):
        admiss.load(tmp_path / "r.rubric")


@pytest.mark.parametrize("program,problem", [
    ("pyth0n-no-such-program", "program 'pyth0n-no-such-program' is not on PATH"),
    ("./missing.sh", "program './missing.sh' is not an executable file"),
    ("./not_executable.sh", "program './not_executable.sh' is not an executable file"),
    ("run_tests.py", "program 'run_tests.py' is not on PATH"),  # a bare name is never taken from the folder
])
def test_a_program_that_cannot_run_is_e120(tmp_path, program, problem):
    (tmp_path / "not_executable.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    (tmp_path / "run_tests.py").write_text("", encoding="utf-8")
    with pytest.raises(RubricCompileError) as caught:
        admiss.load(_rubric(tmp_path, f'CHAIN c {{\n  GATE subprocess CMD ["{program}", "x"]\n}}\n'))
    [d] = caught.value.diagnostics
    assert (d.code, d.message, d.span.line) == ("E120", problem, 2)


def test_programs_on_path_or_beside_the_rubric_compile(tmp_path):
    script = tmp_path / "tools" / "check.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    admiss.load(_rubric(tmp_path, 'CHAIN c {\n  GATE subprocess CMD ["sh", "-c", "true"]\n'
                                  '  GATE subprocess CMD ["./tools/check.sh"]\n}\n'))


def test_a_rubric_compiled_from_a_string_checks_no_files():
    admiss.compile_source(SCHEMA_GATE + 'CHAIN d { GATE subprocess CMD ["no-such-program-x"] }\n')


def test_compile_source_with_an_origin_checks_files(tmp_path):
    with pytest.raises(RubricCompileError):
        admiss.compile_source(SCHEMA_GATE, "r.rubric", origin=str(tmp_path / "r.rubric"))


def test_the_cli_compile_and_lint_report_them(admiss_cli, tmp_path):
    _rubric(tmp_path, 'CHAIN c {\n  GATE schema FILE "missing.json"\n  GATE subprocess CMD ["no-such-prog"]\n}\n')
    ran = admiss_cli("compile", "r.rubric")
    assert ran.code == 2 and "r.rubric:2:20: E119" in ran.err and "r.rubric:3:19: E120" in ran.err
    ran = admiss_cli("lint", "r.rubric")
    assert ran.code == 1 and "r.rubric:2:20: E119" in ran.out and "r.rubric:3:19: E120" in ran.out


# ---------------------------------------------------------------- --config


@pytest.mark.parametrize("config_text,message", [
    (None, "config file not found: admiss.toml"),
    ("[gates]\nno_such_key = 1\n", "no_such_key"),
    ("[gates\n", "TOML syntax error"),
])
def test_a_bad_config_is_an_error_without_a_chain_too(admiss_cli, tmp_path, config_text, message):
    _rubric(tmp_path, PROPERTY_ONLY)
    (tmp_path / "b.json").write_text('{"evidence": []}', encoding="utf-8")
    if config_text is not None:
        (tmp_path / "admiss.toml").write_text(config_text, encoding="utf-8")
    ran = admiss_cli("check", "--rubric", "r.rubric", "--config", "admiss.toml", "-f", "text", "b.json")
    assert ran.code == 2 and message in ran.err and "Traceback" not in ran.err


def test_the_api_checks_a_named_config_on_load(tmp_path):
    with pytest.raises(InputError):
        admiss.load(_rubric(tmp_path, PROPERTY_ONLY), config=tmp_path / "missing.toml")


def test_compiled_ir_is_checked_too_and_names_its_source(tmp_path):
    (tmp_path / "answer.schema.json").write_text("{}", encoding="utf-8")
    ir_file = tmp_path / "r.json"
    ir_file.write_text(admiss.load(_rubric(tmp_path, SCHEMA_GATE)).to_ir_json(), encoding="utf-8")
    (tmp_path / "answer.schema.json").unlink()
    with pytest.raises(RubricCompileError) as caught:
        admiss.load(ir_file)
    [d] = caught.value.diagnostics
    assert d.code == "E119" and d.file == f"{ir_file} (compiled from r.rubric)" and d.span.line == 2
