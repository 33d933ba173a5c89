"""admiss check and admiss import on trace files, as a user runs them: real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUBRIC = ROOT / "rubrics" / "booking_cancellation.rubric"
TRACES = ROOT / "rubrics" / "traces" / "booking_cancellation"
PASSING, AFTER_ERROR = TRACES / "cancelled_and_refunded.json", TRACES / "refund_claimed_after_error.json"


def _no_traceback(ran) -> None:
    assert "Traceback" not in ran.err + ran.out


@pytest.mark.parametrize("trace,code", [(PASSING, 0), (AFTER_ERROR, 1)])
def test_check_a_trace_exit_code_follows_the_verdict(admiss_cli, trace, code):
    ran = admiss_cli("check", "--rubric", RUBRIC, trace, "--format", "text")
    assert ran.code == code, ran.err
    assert ran.out.startswith("property: The booking was cancelled by the booking system\n")


def test_json_report_carries_step_references_and_steps_not_offered(admiss_cli):
    ran = admiss_cli("check", "--rubric", RUBRIC, AFTER_ERROR, "--format", "json")
    assert ran.code == 1
    report = json.loads(ran.out)
    cancelled, refunded = report["properties"]
    assert cancelled["evidence_steps"] == [{"format": "openai_chat", "path": "messages[2].tool_calls[0]",
                                            "message_index": 2, "tool_call_id": "call_cx02"}]
    # The lean report names an excluded item by its step (and index); the failed refund call
    # is excluded as forbidden (flawed_tool_call).
    [failed] = [e for e in refunded["excluded"] if e.get("step", {}).get("tool_call_id") == "call_rf02"]
    assert failed["reason"] == "forbidden" and set(failed) == {"detail", "reason", "index", "step"}
    assert report["trace"]["format"] == "openai_chat"
    assert [e["type"] for e in report["trace"]["not_offered"]] == ["system", "user"]


def test_a_jsonl_of_traces_checks_every_line_even_after_a_bad_one(admiss_cli, tmp_path):
    lines = [json.dumps(json.loads(PASSING.read_text())), '[{"role": "robot"}]', "{not json",
             json.dumps(json.loads(AFTER_ERROR.read_text()))]
    batch = tmp_path / "runs.jsonl"
    batch.write_text("\n".join(lines) + "\n")
    ran = admiss_cli("check", "--rubric", RUBRIC, batch, "--format", "json")
    _no_traceback(ran)
    assert ran.code == 2
    out = [json.loads(line) for line in ran.out.splitlines()]
    assert [o.get("verdict", "error") for o in out] == ["pass", "error", "error", "fail"]
    assert f"{batch}:2: B020" in ran.err and f"{batch}:3:2: B001" in ran.err


def test_trace_option_forces_a_format(admiss_cli):
    ran = admiss_cli("check", "--rubric", RUBRIC, "--trace", "anthropic", PASSING)
    assert ran.code == 2 and ("B021" in ran.err or "B020" in ran.err)
    ran = admiss_cli("check", "--rubric", RUBRIC, "--trace", "openai_chat", PASSING, "--format", "text")
    assert ran.code == 0
    ran = admiss_cli("check", "--rubric", RUBRIC, "--trace", "openai_chatt", PASSING)
    assert ran.code == 2 and "B024" in ran.err and "openai_chat" in ran.err
    _no_traceback(ran)


def test_a_trace_without_rubric_is_a_usage_error(admiss_cli):
    ran = admiss_cli("check", PASSING)
    assert ran.code == 2 and "E002" in ran.err and "--rubric" in ran.err


def test_import_prints_the_bundle_and_why_each_step_was_or_was_not_evidence(admiss_cli, tmp_path):
    ran = admiss_cli("import", "--rubric", RUBRIC, AFTER_ERROR)
    assert ran.code == 0, ran.err
    bundle = json.loads(ran.out)
    assert bundle["output"].startswith("Booking NR-48213 is cancelled")
    assert bundle["model"] == "gpt-4.1-mini-2025-04-14"
    rules = {e["step"]["path"]: e["why"] for e in bundle["evidence"]}
    assert rules["messages[2].tool_calls[0]"]["line"] == 30  # the cancel_booking rule
    assert rules["messages[4].tool_calls[0]"]["rule"] == "WHEN TOOL OUTCOME failed AS flawed_tool_call"
    assert rules["messages[6]"]["rule"] == "WHEN FINAL AS final_answer"
    assert len(bundle["trace"]["not_offered"]) == 2
    # The printed bundle checks the same as the trace.
    saved = tmp_path / "bundle.json"
    saved.write_text(ran.out)
    assert admiss_cli("check", "--rubric", RUBRIC, saved).code == 1
    # The full report keeps each item's own fields, the rule that made it among them.
    assert admiss_cli("check", "--rubric", RUBRIC, saved, "--format", "json", "--report", "full").out.count('"why"') > 0


def test_import_of_a_bad_trace_is_a_located_error(admiss_cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}]}')
    ran = admiss_cli("import", "--rubric", RUBRIC, bad)
    _no_traceback(ran)
    assert ran.code == 2 and "B022" in ran.err and "messages[0]" in ran.err


@pytest.mark.parametrize("command", ["check", "import"])
@pytest.mark.parametrize("layout", ["json", "jsonl", "runs"])
def test_check_and_import_locate_a_trace_error_with_line_column_and_caret(admiss_cli, tmp_path, layout, command):
    # The same located error, file:line:col with the line quoted and a caret, as a bundle's
    # (import once named a .jsonl line's error file:N:N:col).
    run = '{"messages": [\n  {"role": "user", "content": "hi"},\n  {"role": "tool", "tool_call_id": "nope", "content": "x"}\n]}'
    one_line = json.dumps(json.loads(run))
    text, name = {"json": (run, "t.json"), "jsonl": ('{"messages": []}\n' + one_line + "\n", "t.jsonl"),
                  "runs": ("[" + one_line + "]", "t.json")}[layout]
    path = tmp_path / name
    path.write_text(text)
    ran = admiss_cli(command, "--rubric", RUBRIC, path)
    _no_traceback(ran)
    line = 3 if layout == "json" else 2 if layout == "jsonl" else 1
    source = text.split("\n")[line - 1]
    column = source.index('"nope"') + 1  # where the dangling id stands in the file
    header = f"{path}{'#[0]' if layout == 'runs' else ''}:{line}:{column}: B022 "
    assert ran.code == 2 and header in ran.err, ran.err
    lines = ran.err.splitlines()
    at = next(i for i, text_line in enumerate(lines) if text_line.startswith(header))
    quoted, caret = lines[at + 1], lines[at + 2]
    indent = len(quoted) - len(quoted.lstrip(" ")) - (len(source) - len(source.lstrip(" ")))
    assert quoted[indent:] == source and caret.index("^") - indent == column - 1


def test_import_of_a_jsonl_prints_one_line_per_trace_and_goes_on_after_a_bad_one(admiss_cli, tmp_path):
    lines = [json.dumps(json.loads(PASSING.read_text())), '{"messages": 3}',
             json.dumps(json.loads(AFTER_ERROR.read_text()))]
    batch = tmp_path / "runs.jsonl"
    batch.write_text("\n".join(lines) + "\n")
    ran = admiss_cli("import", "--rubric", RUBRIC, batch)
    _no_traceback(ran)
    assert ran.code == 2 and f"{batch}:2" in ran.err
    printed = [json.loads(line) for line in ran.out.splitlines()]
    assert [b["output"][:20] for b in printed] == ["Booking NR-48213 is ", "Booking NR-48213 is "]
    # lookup, text, cancel, refund, answer; then cancel, refund, answer
    assert [len(b["evidence"]) for b in printed] == [5, 3]


FIXTURES = Path(__file__).parent / "fixtures"


def _chat_run(result: str) -> dict:
    return {"messages": [{"role": "user", "content": "book it"}, {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "book", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": result}]}


def test_a_file_of_runs_gives_a_report_per_run_in_order(admiss_cli, tmp_path):
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps([_chat_run("booked"), _chat_run("Error: sold out"), _chat_run("booked")]))
    rubric = tmp_path / "r.rubric"
    rubric.write_text("PROPERTY p { ADMIT procedurally_sound_tool_call }\n")
    ran = admiss_cli("check", "--rubric", rubric, runs, "--format", "json")
    _no_traceback(ran)
    reports = [json.loads(line) for line in ran.out.splitlines()]
    assert [(r["bundle"], r["verdict"]) for r in reports] == [
        (f"{runs}#[0]", "pass"), (f"{runs}#[1]", "fail"), (f"{runs}#[2]", "pass")]
    assert ran.code == 1
    imported = [json.loads(line) for line in admiss_cli("import", "--rubric", rubric, runs).out.splitlines()]
    assert [(b["run"], [e["kind"] for e in b["evidence"]]) for b in imported] == [
        (f"{runs}#[0]", ["procedurally_sound_tool_call"]), (f"{runs}#[1]", ["flawed_tool_call"]),
        (f"{runs}#[2]", ["procedurally_sound_tool_call"])]


def test_an_eval_set_of_several_cases_gives_a_report_per_case(admiss_cli, tmp_path):
    evalset = json.loads((FIXTURES / "adk_evalset.json").read_text())
    evalset["eval_cases"] = [evalset["eval_cases"][0]] * 3
    path = tmp_path / "set.evalset.json"
    path.write_text(json.dumps(evalset))
    ran = admiss_cli("check", "--rubric", RUBRIC, path, "--format", "json")
    _no_traceback(ran)
    assert [json.loads(line)["bundle"] for line in ran.out.splitlines()] == [
        f"{path}#eval_cases[{i}]" for i in range(3)]
    assert "B026" not in ran.err


def test_a_trace_with_an_evidence_field_is_refused(admiss_cli, tmp_path):
    both = tmp_path / "both.json"
    both.write_text(json.dumps({**_chat_run("Error: sold out"), "evidence": [
        {"kind": "procedurally_sound_tool_call", "detail": "booked", "source_label": "book"}]}))
    ran = admiss_cli("check", "--rubric", RUBRIC, both)
    assert ran.code == 2 and "B030" in ran.err and "--trace FORMAT" in ran.err
    assert admiss_cli("import", "--rubric", RUBRIC, both).code == 2
    # Named as a trace, it is read as one: the evidence field is not read.
    named = admiss_cli("import", "--rubric", RUBRIC, both, "--trace", "openai_chat")
    assert named.code == 0 and [e["kind"] for e in json.loads(named.out)["evidence"]] == ["flawed_tool_call"]


def test_a_trace_with_no_steps_warns(admiss_cli, tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"messages": [{"role": "assistant", "content": ""}]}))
    ran = admiss_cli("check", "--rubric", RUBRIC, empty)
    assert ran.code == 1
    assert f"{empty}: warning: the trace gives no steps (1 × assistant message with no text and no tool calls)" in ran.err
    imported = admiss_cli("import", "--rubric", RUBRIC, empty)
    assert imported.code == 0 and "warning: the trace gives no steps" in imported.err
    assert json.loads(imported.out)["trace"]["warnings"]
