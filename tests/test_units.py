"""Reading the input of admiss check (admiss/units.py): standard input is read like a file,
one JSON document or JSON Lines (issue 21, item 2), and a line's errors name the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEC = ROOT / "rubrics" / "sec_filings.rubric"
SHIPPED = sorted((ROOT / "rubrics" / "bundles" / "sec_filings").glob("*.json"))


@pytest.mark.parametrize("bundle", SHIPPED, ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_pretty_printed_bundle_on_stdin_reports_as_its_file_does(admiss_cli, bundle, fmt):
    text = bundle.read_text(encoding="utf-8")
    assert text.count("\n") > 3  # pretty-printed: the case that gave one B001 per line
    from_file = admiss_cli("check", "--rubric", SEC, "--format", fmt, bundle)
    from_stdin = admiss_cli("check", "--rubric", SEC, "--format", fmt, "-", stdin=text)
    assert from_stdin.err == "" and from_stdin.code == from_file.code
    assert from_stdin.out == from_file.out.replace(str(bundle), "<stdin>")


def test_a_broken_document_on_stdin_is_one_located_error(admiss_cli):
    text = '{\n  "evidence": [\n    {"kind": "final_answer", "detail": "x", "source_label": "y"}\n  ],\n}\n'
    ran = admiss_cli("check", "--rubric", SEC, "--format", "json", "-", stdin=text)
    assert ran.code == 2 and ran.err.count("B001") == 1, ran.err
    assert ran.err.startswith("<stdin>:5:1: B001 invalid JSON")


def test_json_lines_on_stdin_are_still_read_line_by_line(admiss_cli):
    good = json.dumps({"evidence": [{"kind": "verified_external_source", "detail": "10-K.",
                                     "source_label": "10-K filing"}]})
    text = "\n" + good + "\n{not json\n" + good + "\n"
    ran = admiss_cli("check", "--rubric", SEC, "--format", "json", "-", stdin=text)
    out = [json.loads(line) for line in ran.out.splitlines()]
    assert [o["bundle"] for o in out] == ["<stdin>:2", "<stdin>:3", "<stdin>:4"]
    assert [o.get("verdict") for o in out] == ["pass", None, "pass"] and ran.code == 2
    assert ran.err.startswith("<stdin>:3:2: B001")


def test_a_line_that_is_not_utf8_says_the_files_other_bundles_are_checked(admiss_cli, tmp_path):
    (tmp_path / "b.jsonl").write_bytes(b'{"evidence": [], "prompt": "caf\xe9"}\n{"evidence": []}\n')
    ran = admiss_cli("check", "--rubric", SEC, "--format", "json", "b.jsonl")
    assert "hint: bundles are UTF-8 JSON; the file's other bundles are still checked" in ran.err
    assert "this line's" not in ran.err


@pytest.mark.parametrize("first", ["[" * 100_000, "1" * 5_000, '{"evidence": []} trailing', "\ufeff{"])
def test_a_hostile_first_line_on_stdin_is_a_located_error_not_a_traceback(admiss_cli, first):
    ran = admiss_cli("check", "--rubric", SEC, "--format", "json", "-", stdin=first + "\n")
    assert ran.code == 2 and "Traceback" not in ran.err and ran.err.startswith("<stdin>"), ran.err
