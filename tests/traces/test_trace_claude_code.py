"""Claude Code session transcripts: public samples (tests/traces/fixtures/public/SOURCES.md),
read as one run per file by admiss import, and each error signal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from admiss.errors import TraceError
from admiss.traces.read import read_trace

PUBLIC = Path(__file__).parent / "fixtures" / "public"
RUBRIC = 'PROPERTY p "p" {\n  ADMIT procedurally_sound_tool_call\n  FORBID flawed_tool_call, final_answer\n}\n'


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_sample_session_reads_its_calls_and_the_answer():
    trace = read_trace(lines(PUBLIC / "claude_code_representative.jsonl"))
    assert trace.format == "claude_code" and trace.model == "claude-3-sonnet-20240229"
    assert [(s.tool_name, s.outcome) for s in trace.steps if s.type == "tool_call"] == [("Edit", "ok"), ("Bash", "ok")]
    assert trace.steps[-2].text.startswith("Perfect! As you can see, the `@repeat(3)` decorator")
    assert trace.final_answer is None  # the session ends on the user's turn, not on the agent's text
    assert [s.reason for s in trace.skipped] == ["summary line"]


def line(kind, content, **extra):
    return {"type": kind, "sessionId": "s", "uuid": f"u-{len(str(content))}", "isSidechain": False,
            "message": {"role": kind, "content": content}, **extra}


USE = line("assistant", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make"}}])


def test_is_error_is_an_error_and_nothing_else_is():
    failed = line("user", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "make: *** Error 2",
                            "is_error": True}])
    [call] = read_trace([USE, failed]).steps
    assert (call.outcome, call.error, call.result_ref.path) == ("error", "make: *** Error 2", "$[1].message.content[0]")
    said = line("user", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Error: looks bad"}])
    [call] = read_trace([USE, said]).steps
    assert call.outcome == "ok"


def test_sidechain_and_meta_lines_are_skipped_with_their_reason():
    side = line("assistant", [{"type": "text", "text": "subagent"}], isSidechain=True)
    meta = line("user", "<command-name>/clear</command-name>", isMeta=True)
    trace = read_trace([USE, side, meta])
    assert [s.reason for s in trace.skipped] == [
        "a subagent's line (its work is the result of the call that ran it)", "Claude Code's note to the model (isMeta)"]
    assert trace.steps[0].outcome == "no_result"


def test_import_reads_a_session_file_as_one_run(admiss_cli, tmp_path):
    rubric = tmp_path / "r.rubric"
    rubric.write_text(RUBRIC)
    ran = admiss_cli("import", "--rubric", rubric, PUBLIC / "claude_code_representative.jsonl")
    assert ran.code == 0, ran.err
    [bundle] = [json.loads(line) for line in ran.out.splitlines()]  # one run, not a bundle per event
    assert bundle["trace"]["format"] == "claude_code"
    assert [e["source_label"] for e in bundle["evidence"] if e["kind"] == "procedurally_sound_tool_call"] == [
        "Edit", "Bash"]


def test_check_reads_a_session_file_as_one_run(admiss_cli, tmp_path):
    rubric = tmp_path / "r.rubric"
    rubric.write_text(RUBRIC)
    session = PUBLIC / "claude_code_representative.jsonl"
    ran = admiss_cli("check", "--rubric", rubric, "--format", "json", session)
    [report] = [json.loads(line) for line in ran.out.splitlines()]  # one report, not a B020 per line
    assert report["bundle"] == str(session) and report["trace"]["format"] == "claude_code"
    imported = json.loads(admiss_cli("import", "--rubric", rubric, session).out)
    assert [e["detail"] for p in report["properties"] for e in p["excluded"]] == [
        e["detail"] for e in imported["evidence"] if e["kind"] != "procedurally_sound_tool_call"] * len(report["properties"])
    assert ran.code == (0 if report["verdict"] == "pass" else 1), ran.err


@pytest.mark.parametrize("command", ["import", "check"])
def test_a_broken_line_is_refused_at_its_line_and_column(admiss_cli, tmp_path, command):
    rubric = tmp_path / "r.rubric"
    rubric.write_text(RUBRIC)
    ran = admiss_cli(command, "--rubric", rubric, "--trace", "claude_code", PUBLIC / "claude_code_edge_cases.jsonl")
    assert ran.code == 2 and "Traceback" not in ran.err
    assert "claude_code_edge_cases.jsonl:10:285: B021 $[9].message.content: must be a string or an array of blocks" \
           in ran.err


def test_a_line_that_is_no_object_is_a_located_error():
    with pytest.raises(TraceError) as raised:
        read_trace([USE, "massive error"], "s.jsonl", "claude_code")
    assert raised.value.diagnostics[0].message == "$[1]: must be an object, not a string"
