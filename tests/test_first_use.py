"""What a newcomer meets on a first run (issue 21): a --chain that names nothing, input that
is not UTF-8, hints that fit where they are read, where a rubric path came from."""

from __future__ import annotations

import json

import pytest

import admiss

RUBRIC = 'PROPERTY p { ADMIT verified_external_source FORBID summary REJECT SHORTCUT "x" }\n'
PASSING = {"evidence": [{"kind": "verified_external_source", "detail": "d", "source_label": "s"}]}


def _write(folder, name: str, text: str):
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_chain_asked_of_a_rubric_without_chains_is_an_error(admiss_cli, tmp_path):
    _write(tmp_path, "r.rubric", RUBRIC)
    _write(tmp_path, "b.json", json.dumps(PASSING))
    ran = admiss_cli("check", "--chain", "nope", "--rubric", "r.rubric", "b.json")
    assert ran.code == 2, ran.out + ran.err
    assert ran.err == "r.rubric: E003 no CHAIN named 'nope'\n  hint: the rubric has no CHAIN to run\n"
    assert ran.out == ""
    # The same from a bundle's own "rubric" field (no --rubric: nothing is prepared first).
    _write(tmp_path, "c.json", json.dumps({**PASSING, "rubric": "r.rubric"}))
    ran = admiss_cli("check", "--chain", "nope", "c.json")
    assert ran.code == 2 and "E003 no CHAIN named 'nope'" in ran.err, ran.out + ran.err


def test_chain_asked_of_a_rubric_without_chains_in_python():
    rubric = admiss.compile_source(RUBRIC, "t.rubric")
    with pytest.raises(admiss.AdmissError) as caught:
        rubric.check(PASSING, chain="nope")
    assert caught.value.diagnostics[0].code == "E003"
    with pytest.raises(admiss.AdmissError):
        rubric.prepare(chain="nope")
    assert rubric.check(PASSING).verdict == "pass"


def test_a_missing_rubric_named_by_the_bundle_says_where_the_name_came_from(admiss_cli, tmp_path):
    (tmp_path / "bundles").mkdir()
    _write(tmp_path, "bundles/b.json", json.dumps({**PASSING, "rubric": "refund.rubric"}))
    ran = admiss_cli("check", "bundles/b.json")
    assert ran.code == 2, ran.out + ran.err
    assert ran.err == (
        "bundles/b.json: E001 rubric: no such file 'bundles/refund.rubric' (the name comes from the bundle's "
        "\"rubric\" field, relative to the bundle's folder)\n"
        "  hint: fix the bundle's \"rubric\" field, or pass --rubric FILE\n")
    # A rubric the user names is reported as before: the user knows where that name came from.
    ran = admiss_cli("check", "--rubric", "refund.rubric", "bundles/b.json")
    assert ran.code == 2 and ran.err.startswith("refund.rubric: E001 no such file"), ran.err


def _latin1(folder, name: str, text: str):
    path = folder / name
    path.write_bytes(text.encode("latin-1"))
    return path


NOT_UTF8_HINT = "  hint: admiss reads UTF-8 text: save the file as UTF-8\n"


@pytest.mark.parametrize("command", [("check", "--rubric", "bad.rubric", "b.json"), ("lint", "bad.rubric"),
                                     ("compile", "bad.rubric"), ("fmt", "--check", "bad.rubric")],
                         ids=lambda c: c[0])
def test_a_rubric_that_is_not_utf8_is_located(admiss_cli, tmp_path, command):
    _latin1(tmp_path, "bad.rubric", RUBRIC + "# café\n")
    _write(tmp_path, "b.json", json.dumps(PASSING))
    ran = admiss_cli(*command)
    assert ran.code == 2, ran.out + ran.err
    assert ran.err.startswith("bad.rubric:2:6: E001 cannot read: not UTF-8 text (byte 0xe9)\n  # caf\ufffd\n       ^\n"
                              + NOT_UTF8_HINT), ran.err


@pytest.mark.parametrize("command", [("check", "--rubric", "r.rubric", "b.json"), ("savings", "reports.jsonl"),
                                     ("serve", "r.rubric", "--port", "0")], ids=lambda c: c[0])
def test_a_config_file_that_is_not_utf8_is_located(admiss_cli, tmp_path, command):
    _write(tmp_path, "r.rubric", RUBRIC)
    _write(tmp_path, "b.json", json.dumps(PASSING))
    _write(tmp_path, "reports.jsonl", "")
    _latin1(tmp_path, "admiss.toml", '[prices."local/llama"]\n# café\n')
    ran = admiss_cli(*command[:1], "--config", "admiss.toml", *command[1:])
    assert ran.code == 2, ran.out + ran.err
    assert ran.err.startswith("admiss.toml:2:6: E001 cannot read: not UTF-8 text (byte 0xe9)\n  # caf\ufffd\n       ^\n"
                              + NOT_UTF8_HINT), ran.err


def test_a_bundle_that_is_not_utf8_is_located(admiss_cli, tmp_path):
    _write(tmp_path, "r.rubric", RUBRIC)
    _latin1(tmp_path, "b.json", '{\n  "evidence": [],\n  "note": "café"\n}\n')
    ran = admiss_cli("check", "--rubric", "r.rubric", "b.json")
    assert ran.code == 2 and ran.out == ""
    assert ran.err == ("b.json:3:15: E001 cannot read: not UTF-8 text (byte 0xe9)\n"
                       '    "note": "caf\ufffd"\n                ^\n' + NOT_UTF8_HINT)


def test_a_jsonl_line_that_is_not_utf8_names_the_files_other_bundles(admiss_cli, tmp_path):
    _write(tmp_path, "r.rubric", RUBRIC)
    (tmp_path / "b.jsonl").write_bytes(json.dumps(PASSING).encode() + b"\n" + b'{"evidence": [], "x": "caf\xe9"}\n')
    ran = admiss_cli("check", "--rubric", "r.rubric", "b.jsonl")
    assert ran.code == 2
    assert "b.jsonl:2:27: B001 invalid JSON: not UTF-8 text (byte 0xe9)" in ran.err
    assert "hint: bundles are UTF-8 JSON; the file's other bundles are still checked" in ran.err
    assert "==> b.jsonl:1 <==" in ran.out


ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


def _shipped_example_lines(path) -> list[str]:
    """What a reader of an example reads: a rubric's comments, every line of its bundles,
    traces, test files and scripts."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.lstrip().startswith("#")] if path.suffix == ".rubric" else lines


def test_shipped_rubrics_name_no_document_a_newcomer_lacks():
    examples = sorted(p for p in (ROOT / "rubrics").rglob("*") if p.suffix in {".rubric", ".json", ".jsonl", ".toml", ".py"})
    assert any(p.suffix == ".json" for p in examples) and any(p.name.endswith(".test.toml") for p in examples)
    for path in examples:
        for line in _shipped_example_lines(path):
            for phrase in ("DESIGN.md", "seed", "Seed", "Admissibility Gate document"):
                assert phrase not in line, f"{path.relative_to(ROOT)}: {line}"


def _message_strings(path) -> list[tuple[int, str]]:
    """(line, text) of each string constant in a module that is not a docstring (the CLI's
    command docstrings are --help text, so those count)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
                  and not (path.name == "cli.py" and isinstance(node, ast.FunctionDef))}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_messages_name_docs_pages_by_their_address():
    # A hint that says "see docs/security.md" points a pip-installed user at a folder they lack.
    import re

    local = re.compile(r"(?<![\w/])docs/[\w/.-]+")
    found = [f"{path.relative_to(ROOT)}:{line}: {text[:80]!r}" for path in sorted((ROOT / "admiss").rglob("*.py"))
             for line, text in _message_strings(path) if local.search(text) and path.name != "docs.py"]
    assert not found, "\n".join(found)


def test_no_test_files_hint_links_the_testing_page(admiss_cli, tmp_path):
    (tmp_path / "empty").mkdir()
    ran = admiss_cli("test", "empty")
    assert ran.code == 2
    assert ran.err.endswith("  hint: https://github.com/admiss/admiss/blob/main/docs/testing.md shows how to write one\n"), ran.err


@pytest.mark.parametrize("command", ["check", "fmt", "savings", "serve"])
def test_help_links_the_docs_instead_of_a_local_docs_folder(admiss_cli, command):
    # A pip-installed admiss has no docs/ folder to open.
    text = admiss_cli(command, "--help").out
    assert "(docs/" not in text and "https://github.com/admiss/admiss/blob/main/docs/" in text, text


def test_the_savings_page_links_its_documentation():
    from admiss.report.html import savings_page
    from admiss.savings import savings

    page = savings_page(savings([]))
    # Named as a page of the documentation, not as a docs/ folder the user does not have.
    assert "the page savings.md of the admiss documentation" in page
    assert "docs/savings.md in admiss" not in page


def _check_stdin(folder, data: bytes):
    import subprocess
    import sys

    _write(folder, "r.rubric", RUBRIC)
    return subprocess.run([sys.executable, "-m", "admiss", "check", "--rubric", "r.rubric", "-"], cwd=folder,
                          input=data, capture_output=True, timeout=60)


@pytest.mark.parametrize("data", [b"", b"\n  \n"], ids=["empty", "blank lines"])
def test_empty_standard_input_says_so_in_its_own_words(tmp_path, data):
    # Not "the file is empty" with a hint about .jsonl files, and not a JSON error at line 3.
    ran = _check_stdin(tmp_path, data)
    assert ran.returncode == 2
    assert ran.stderr.decode() == ("<stdin>: E180 nothing to read: standard input is empty or holds only blank lines\n"
                                   "  hint: pipe in one JSON document, or JSON Lines (one per line)\n")


def test_a_document_on_standard_input_that_is_not_utf8_is_located(tmp_path):
    # As the same bytes in a .json file are (test_a_bundle_that_is_not_utf8_is_located).
    ran = _check_stdin(tmp_path, '{\n  "evidence": [],\n  "note": "café"\n}\n'.encode("latin-1"))
    assert ran.returncode == 2 and ran.stdout == b""
    assert ran.stderr.decode() == ("<stdin>:3:15: E001 cannot read: not UTF-8 text (byte 0xe9)\n"
                                   '    "note": "caf\ufffd"\n                ^\n' + NOT_UTF8_HINT)


def test_a_json_line_on_standard_input_that_is_not_utf8_names_the_other_lines(tmp_path):
    ran = _check_stdin(tmp_path, b'{"evidence": [], "x": "caf\xe9"}\n' + json.dumps(PASSING).encode() + b"\n")
    assert ran.returncode == 2
    assert "<stdin>:1:27: B001 invalid JSON: not UTF-8 text (byte 0xe9)" in ran.stderr.decode()
    assert "hint: bundles are UTF-8 JSON; standard input's other lines are still checked\n" in ran.stderr.decode()
    assert b"aggregate: pass" in ran.stdout


def test_a_bundle_that_is_also_a_trace_names_the_python_argument_in_python():
    # Raised from Rubric.check, a hint naming only --trace FORMAT names a flag the caller cannot pass.
    rubric = admiss.compile_source(RUBRIC, "t.rubric")
    with pytest.raises(admiss.AdmissError) as caught:
        rubric.check({"evidence": [], "messages": []})
    [both] = caught.value.diagnostics
    assert both.code == "B030" and "trace_format= in Python" in both.hint


def test_an_empty_jsonl_given_to_import_is_not_called_a_file_of_bundles(admiss_cli, tmp_path):
    # admiss import reads traces (a Claude Code session is a .jsonl): "no bundles" was out of place.
    _write(tmp_path, "r.rubric", RUBRIC)
    _write(tmp_path, "session.jsonl", "\n")
    ran = admiss_cli("import", "--rubric", "r.rubric", "session.jsonl")
    assert ran.code == 2
    assert ran.err == ("session.jsonl: E180 nothing to read: the file is empty or holds only blank lines\n"
                       "  hint: a .jsonl file holds one JSON value per line: a bundle, or a trace or its lines\n")
