"""What a bundle writes cannot act on the terminal that shows its report, nor forge a line
of it: control characters, escape sequences and bidirectional overrides are shown as their
escapes, a field's line ends stay inside its line, and in the rich view "[...]" is text,
not console markup (an unbalanced "[/]" was a traceback)."""

from __future__ import annotations

import json

import pytest

from admiss.terminal import one_line, pictured, printable

HOSTILE = "[/] [bold red]ok\x1b[2J\rverdict: pass\nverdict: pass\u202eevil\ud800"
RUBRIC = """PROPERTY p {
  ADMIT verified_external_source
  FORBID final_answer
  REJECT SHORTCUT "[draft] memo"
}
"""


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "r.rubric").write_text(RUBRIC)
    bundle = {"evidence": [{"kind": "final_answer", "detail": HOSTILE, "source_label": "s"},
                           {"kind": "verified_external_source", "detail": "memo", "source_label": "[draft] memo"}]}
    (tmp_path / "b.json").write_text(json.dumps(bundle))
    (tmp_path / "b.jsonl").write_text(json.dumps(bundle) + "\n" + json.dumps(bundle) + "\n")
    return tmp_path


@pytest.mark.parametrize("fmt", ["text", "rich"])
@pytest.mark.parametrize("bundle", ["b.json", "b.jsonl"])
def test_a_hostile_detail_is_shown_escaped_on_its_own_line(admiss_cli, folder, fmt, bundle):
    ran = admiss_cli("check", "--rubric", "r.rubric", "--format", fmt, bundle)
    assert ran.code == 1 and "Traceback" not in ran.err, ran.err
    assert "\x1b" not in ran.out and "\r" not in ran.out and "\u202e" not in ran.out
    assert "\\x1b[2J" in ran.out and "\\u202e" in ran.out and "\\ud800" in ran.out
    assert not any(line.startswith("verdict: pass") for line in ran.out.splitlines())
    assert "[/] [bold" in ran.out and "[draft] memo" in ran.out  # (rich wraps the cell after these)


def test_the_escapes_are_the_ones_python_writes():
    assert printable("a\x1bb\rc\x00d\x7fe\x9ff\u2066g\ud800h\ti\nj") == "a\\x1bb\\rc\\x00d\\x7fe\\x9ff\\u2066g\\ud800h\ti\nj"
    assert one_line("one\ntwo\x1b") == "one\\ntwo\\x1b"
    plain = "evidence: 10-K filing, Form 10-Q é ü 中文"
    assert printable(plain) is plain and one_line(plain) is plain


def test_a_diagnostic_quotes_a_hostile_line_safely_with_the_caret_in_place(admiss_cli, folder):
    (folder / "bad.json").write_text('{"evidence": [\x1b[2J "x"]}')
    ran = admiss_cli("check", "--rubric", "r.rubric", "bad.json")
    assert ran.code == 2 and "\x1b" not in ran.err
    quoted, caret = ran.err.splitlines()[1:3]
    assert quoted == '  {"evidence": [\u241b[2J "x"]}' and caret.index("^") == quoted.index("\u241b")
    bundle = {"evidence": [{"kind": "final_answer", "detail": "d", "source_label": "s",
                            "property": "p\nverdict: pass\x1b[31m"}]}
    (folder / "named.json").write_text(json.dumps(bundle))
    ran = admiss_cli("check", "--rubric", "r.rubric", "named.json")
    assert ran.code == 2 and "\x1b" not in ran.err and "p\\nverdict: pass\\x1b[31m" in ran.err
    assert not any(line.startswith("verdict") for line in ran.err.splitlines())


def test_a_pictured_line_keeps_every_character_in_its_place():
    line = "a\x1bb\x00c\x7fd\x85e\u202ef\ud800g"
    assert pictured(line) == "a\u241bb\u2400c\u2421d\ufffde\ufffdf\ufffdg" and len(pictured(line)) == len(line)
