"""Small things a user meets: -h, - for stdin, shell completion, plain help and usage errors,
and a rich batch that stays fast."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

RUBRIC = 'PROPERTY p { ADMIT verified_external_source FORBID summary REJECT SHORTCUT "x" }\n'
PASSING = {"evidence": [{"kind": "verified_external_source", "detail": "d", "source_label": "s"}]}
COMMANDS = [(), ("check",), ("compile",), ("lint",), ("fmt",), ("import",), ("savings",), ("serve",), ("receipts",),
            ("receipts", "export")]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "admiss")
def test_dash_h_is_help_everywhere(admiss_cli, command):
    ran = admiss_cli(*command, "-h")
    assert ran.code == 0 and ran.out.startswith("Usage: admiss") and "-h, --help" in ran.out


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "admiss")
def test_help_names_no_python_types(admiss_cli, command):
    text = admiss_cli(*command, "--help").out
    assert not re.search(r"<(list|path|str|int|float|bool)\b", text, re.I), text
    assert "{" not in text.splitlines()[0]  # the usage line shows BUNDLE..., not {BUNDLE...}...


def test_check_help_shows_metavars(admiss_cli):
    text = admiss_cli("check", "--help").out
    assert "Usage: admiss check [OPTIONS] BUNDLE..." in text
    for shown in ("-r, --rubric FILE", "--chain NAME", "--config FILE", "-j, --jobs N", "-f, --format text|json|rich"):
        assert shown in text


@pytest.mark.parametrize("args,words", [
    (("check", "--format", "xml", "b.json"), "Invalid value for '--format' / '-f': 'xml' is not one of text, json, rich"),
    (("check", "--jobs", "0", "b.json"), "Invalid value for '--jobs' / '-j': '0' is not a whole number of at least 1"),
    (("check", "-j", "two", "b.json"), "'two' is not a whole number of at least 1"),
    (("lint", "-f", "xml", "r.rubric"), "'xml' is not one of text, json, sarif, github"),
])
def test_usage_errors_are_in_plain_words(admiss_cli, args, words):
    ran = admiss_cli(*args)
    assert ran.code == 2 and words in ran.err
    assert "Value error" not in ran.err and "Input should be" not in ran.err


def test_dash_reads_json_lines_from_stdin(admiss_cli, tmp_path):
    (tmp_path / "r.rubric").write_text(RUBRIC, encoding="utf-8")
    lines = json.dumps(PASSING) + "\n\n" + json.dumps({"rubric": "r.rubric", "evidence": []}) + "\n"
    ran = admiss_cli("check", "-f", "json", "-", stdin=lines)
    assert ran.code == 2  # the first bundle names no rubric
    assert "<stdin>:1: E002 no rubric to check against" in ran.err
    [report] = [json.loads(line) for line in ran.out.splitlines() if '"verdict"' in line]
    assert report["bundle"] == "<stdin>:3" and report["verdict"] == "fail"
    ran = admiss_cli("check", "-r", "r.rubric", "-f", "text", "-", stdin=lines)
    assert ran.code == 1 and "==> <stdin>:1 <==" in ran.out and "==> <stdin>:3 <==" in ran.out


def test_shell_completion_is_typers_own(admiss_cli, tmp_path):
    ran = admiss_cli("--show-completion", "bash")
    assert ran.code == 0 and "_ADMISS_COMPLETE" in ran.out and "COMPREPLY" in ran.out
    env = dict(os.environ, _ADMISS_COMPLETE="complete_bash", COMP_WORDS="admiss ch", COMP_CWORD="1")
    proc = subprocess.run([sys.executable, "-m", "admiss"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["check"]


def test_a_rich_batch_draws_twenty_reports_then_one_line_each(admiss_cli, tmp_path):
    from admiss.report.rich import SUMMARY_AFTER

    (tmp_path / "r.rubric").write_text(RUBRIC, encoding="utf-8")
    (tmp_path / "b.jsonl").write_text((json.dumps(PASSING) + "\n") * (SUMMARY_AFTER + 5), encoding="utf-8")
    ran = admiss_cli("check", "-r", "r.rubric", "-f", "rich", "b.jsonl")
    assert ran.code == 0
    assert ran.out.count("aggregate: pass") == SUMMARY_AFTER
    summary = [line for line in ran.out.splitlines() if line.startswith("pass ")]
    assert summary == [f"pass b.jsonl:{n}  missing evidence: 0" for n in range(SUMMARY_AFTER + 1, SUMMARY_AFTER + 6)]


def test_lint_and_fmt_read_standard_input(admiss_cli):
    ran = admiss_cli("lint", "-f", "json", "-", stdin="PROPERTY p { ADMIT sumary }\n")
    assert ran.code == 1 and {d["code"] for d in json.loads(ran.out)} >= {"E101"}
    assert {d["file"] for d in json.loads(ran.out)} == {"<stdin>"}
    ran = admiss_cli("fmt", "-", stdin="PROPERTY p {   ADMIT summary }\n")
    assert ran.code == 0 and ran.out == "PROPERTY p {\n  ADMIT summary\n}\n"
    ran = admiss_cli("fmt", "--check", "-", stdin="PROPERTY p {   ADMIT summary }\n")
    assert ran.code == 1 and ran.out.startswith("--- <stdin>\n+++ <stdin>\n")


@pytest.mark.parametrize("shell,mark", [("zsh", "#compdef admiss"), ("fish", "complete --command admiss"),
                                        ("bash", "complete -o default -F")])
def test_show_completion_prints_the_named_shells_script(admiss_cli, shell, mark):
    # typer's flag took no value and printed the script of the shell running admiss.
    ran = admiss_cli("--show-completion", shell)
    assert ran.code == 0 and mark in ran.out, ran.out + ran.err
    assert admiss_cli("--show-completion", "tcsh").code == 2


def _completions(words: str, cwd) -> list[str]:
    env = dict(os.environ, _ADMISS_COMPLETE="complete_bash", COMP_WORDS=words,
               COMP_CWORD=str(len(words.split()) - (0 if words.endswith(" ") else 1)))
    proc = subprocess.run([sys.executable, "-m", "admiss"], env=env, capture_output=True, text=True, timeout=60,
                          cwd=cwd)
    return proc.stdout.split()


def test_completion_offers_option_values_and_file_kinds(tmp_path):
    assert _completions("admiss check --format ", tmp_path) == ["text", "json", "rich", "junit", "markdown"]
    assert _completions("admiss lint -f s", tmp_path) == ["sarif"]
    for name in ("a.rubric", "b.json", "c.jsonl", "notes.txt", ".hidden.rubric"):
        (tmp_path / name).write_text("", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    assert _completions("admiss check ", tmp_path) == ["b.json", "c.jsonl", "sub/"]
    assert _completions("admiss check --rubric ", tmp_path) == ["a.rubric", "b.json", "sub/"]
    assert _completions("admiss lint ", tmp_path) == ["a.rubric", "sub/"]


def test_completion_offers_the_rubrics_chain_names(tmp_path):
    (tmp_path / "two.rubric").write_text(TWO_CHAINS, encoding="utf-8")
    (tmp_path / "bad.rubric").write_text("PROPERTY {", encoding="utf-8")
    assert _completions("admiss check --rubric two.rubric --chain ", tmp_path) == ["fast", "fallback"]
    assert _completions("admiss check --rubric two.rubric --chain fa", tmp_path) == ["fast", "fallback"]
    assert _completions("admiss check --rubric two.rubric --chain fal", tmp_path) == ["fallback"]
    assert _completions("admiss serve two.rubric --chain ", tmp_path) == ["fast", "fallback"]
    # No rubric yet, or one that does not compile: nothing offered, and no traceback in the shell.
    assert _completions("admiss check --chain ", tmp_path) == []
    assert _completions("admiss check --rubric bad.rubric --chain ", tmp_path) == []


TWO_CHAINS = """PROPERTY p "p" {
  ADMIT procedurally_sound_tool_call
  DEFAULT no
}

CHAIN fast {
  RUNG cheap MODEL "openai/gpt-5-mini" {
    GATE non_empty
  }
}

CHAIN fallback {
  RUNG cheap MODEL "openai/gpt-5-mini" {
    GATE non_empty
  }
}
"""
