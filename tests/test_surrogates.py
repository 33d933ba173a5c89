"""A lone surrogate in a bundle string (the JSON escape "\\ud800") never crashes a writer:
text and rich show it escaped, JSON writes it as the escape it came in as, and the JSON
stays valid JSON (issue 8, class 1)."""

from __future__ import annotations

import json

import pytest

from admiss.jsonio import dumps_indented, dumps_line
from test_seed import STRICT

# Written with the escapes, as a bundle must bring a surrogate: raw UTF-8 cannot hold one.
BUNDLE = ('{"output": "out \\ud800", "evidence": [{"kind": "final_answer", "detail": "bad \\ud800 detail", '
          '"source_label": "x", "note": "\\udfff"}, {"kind": "final_answer", "detail": "plain é", '
          '"source_label": "x"}]}')


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "sec.rubric").write_text(STRICT)
    (tmp_path / "one.json").write_text(BUNDLE)
    plain = BUNDLE.replace("\\ud800", "ok").replace("\\udfff", "ok")
    (tmp_path / "many.jsonl").write_text(BUNDLE + "\n" + plain + "\n")
    return tmp_path


@pytest.mark.parametrize("fmt", ["text", "rich"])
def test_text_and_rich_show_the_surrogate_escaped(admiss_cli, folder, fmt):
    ran = admiss_cli("check", "--rubric", "sec.rubric", "--format", fmt, "one.json", "many.jsonl")
    assert "Traceback" not in ran.err and ran.code == 1, ran.err
    assert "bad \\ud800 detail" in ran.out and "plain é" in ran.out


@pytest.mark.parametrize("shape", ["lean", "full"])
@pytest.mark.parametrize("bundle", ["one.json", "many.jsonl"])
def test_json_keeps_the_string_and_stays_valid_json(admiss_cli, folder, bundle, shape):
    ran = admiss_cli("check", "--rubric", "sec.rubric", "--format", "json", "--report", shape, bundle)
    assert "Traceback" not in ran.err and ran.code == 1, ran.err
    reports = [json.loads(ran.out)] if bundle == "one.json" else [json.loads(line) for line in ran.out.splitlines()]
    assert len(reports) == (1 if bundle == "one.json" else 2)
    excluded = reports[0]["properties"][0]["excluded"]
    assert [e["detail"] for e in excluded] == ["bad \ud800 detail", "plain é"]
    if shape == "full":
        assert excluded[0]["note"] == "\udfff"
    if bundle == "many.jsonl":
        # Only the report holding the surrogate is ASCII-escaped; the next keeps its UTF-8.
        first, second = ran.out.encode("utf-8", "surrogateescape").splitlines()
        assert b"\\u00e9" in first and "é".encode() in second


def test_the_writers_escape_what_orjson_refuses_in_the_same_layout():
    value = {"a": "\ud800", "b": [1, float("nan")], "c": 2 ** 70}
    assert dumps_line(value) == b'{"a":"\\ud800","b":[1,null],"c":1180591620717411303424}'
    assert dumps_indented(value) == (b'{\n  "a": "\\ud800",\n  "b": [\n    1,\n    null\n  ],\n'
                                     b'  "c": 1180591620717411303424\n}')
    assert dumps_line({"a": "é", "b": [1.5, float("inf")]}) == '{"a":"é","b":[1.5,null]}'.encode()
