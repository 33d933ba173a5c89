"""Inspect AI logs as Inspect wrote them (tests/traces/producers/inspect_ai_logs.py): the
.json log and the .eval zip, one run per sample; each error signal; the zip's bounds."""

from __future__ import annotations

import json
import shutil
import struct
import zipfile
from pathlib import Path

import pytest

from admiss.errors import TraceError
from admiss.traces import inspect_eval
from admiss.traces.inspect_eval import eval_file_samples
from admiss.traces.read import read_trace, read_traces

FIXTURES = Path(__file__).parent / "fixtures"
ANSWER = "It is sunny in Paris. I could not book the flight."


def test_a_json_log_gives_one_run_per_sample_in_order():
    log = json.loads((FIXTURES / "inspect_generate.json").read_text())
    runs = read_traces(log, "log.json")
    assert [name for name, _ in runs] == ["log.json#samples[0]", "log.json#samples[1]"]
    for _, trace in runs:
        assert [(s.tool_name, s.outcome) for s in trace.steps if s.type == "tool_call"] == [
            ("get_weather", "ok"), ("book_flight", "error")]
        assert trace.final_answer == ANSWER and trace.model == "gpt-4.1-mini"
    assert runs[1][1].steps[1].ref.path == "samples[1].messages[1].tool_calls[0]"


def test_a_log_of_several_samples_read_as_one_trace_is_refused():
    log = json.loads((FIXTURES / "inspect_generate.json").read_text())
    with pytest.raises(TraceError) as raised:
        read_trace(log, "log.json")
    assert raised.value.diagnostics[0].code == "B026"


def test_the_eval_zip_gives_the_same_runs_as_the_json_log():
    for task in ("generate", "react"):
        from_json = [t for _, t in read_traces(json.loads((FIXTURES / f"inspect_{task}.json").read_text()))]
        from_zip = [read_trace(value, name) for name, value, _, _, _ in eval_file_samples(FIXTURES / f"inspect_{task}.eval")]
        assert [[(s.type, s.tool_name, s.outcome, s.text) for s in t.steps] for t in from_zip] == \
               [[(s.type, s.tool_name, s.outcome, s.text) for s in t.steps] for t in from_json]


def sample(*messages, **extra):
    return {"id": 1, "epoch": 1, "input": "x", "messages": list(messages), **extra}


CALL = {"role": "assistant", "content": "", "tool_calls": [
    {"id": "c1", "function": "book", "arguments": {"to": "Paris"}, "type": "function"}]}


def test_a_tool_message_error_is_an_error_and_nothing_else_is():
    failed = {"role": "tool", "tool_call_id": "c1", "function": "book", "content": "",
              "error": {"type": "timeout", "message": "took too long"}}
    [call] = read_trace(sample(CALL, failed)).steps
    assert (call.outcome, call.error) == ("error", "timeout: took too long")
    said = {"role": "tool", "tool_call_id": "c1", "function": "book", "content": "Error: but not flagged"}
    [call] = read_trace(sample(CALL, said)).steps
    assert call.outcome == "ok"


def test_a_result_without_id_answers_the_open_call_of_its_function():
    [call] = read_trace(sample(CALL, {"role": "tool", "function": "book", "content": "booked"})).steps
    assert (call.outcome, call.result) == ("ok", "booked")


def test_arguments_inspect_could_not_parse_are_bad_args():
    broken = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "function": "book", "arguments": {}, "parse_error": "Expecting value", "type": "function"}]}
    [call] = read_trace(sample(broken)).steps
    assert call.outcome == "bad_args"


def test_a_run_ending_on_submit_answers_with_its_answer_argument():
    submit = {"role": "assistant", "content": "Submitting.", "tool_calls": [
        {"id": "s1", "function": "submit", "arguments": {"answer": "42"}, "type": "function"}]}
    trace = read_trace(sample({"role": "user", "content": "6*7?"}, submit,
                              {"role": "tool", "tool_call_id": "s1", "function": "submit", "content": "42"}))
    assert trace.final_answer == "42"
    assert trace.steps[-1].ref.path == "messages[1].tool_calls[0].arguments.answer"
    not_last = read_trace(sample(submit, {"role": "tool", "tool_call_id": "s1", "content": "42"},
                                 {"role": "user", "content": "again"}))
    assert not_last.final_answer != "42"


def test_a_sample_that_ended_in_an_error_says_so_and_its_calls_have_no_result():
    trace = read_trace(sample(CALL, error={"message": "RuntimeError('boom')", "traceback": "..."}))
    assert trace.steps[0].outcome == "no_result"
    assert [(s.ref.path, s.reason) for s in trace.skipped] == [
        ("error", "the sample ended in an error: RuntimeError('boom')")]


# ---------------------------------------------------------------- the zip is untrusted input


def refused(path: Path) -> str:
    with pytest.raises(TraceError) as raised:
        list(eval_file_samples(path))
    [diagnostic] = raised.value.diagnostics
    assert diagnostic.code == "B027"
    return diagnostic.message


def test_a_file_that_is_not_a_zip_is_refused(tmp_path):
    bad = tmp_path / "log.eval"
    bad.write_text("{}")
    assert refused(bad).startswith("not a readable .eval zip")


def test_a_zip_with_no_samples_is_refused(tmp_path):
    empty = tmp_path / "log.eval"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("header.json", "{}")
    assert "no samples" in refused(empty)


def test_a_sample_larger_than_the_bound_is_refused_before_it_is_decompressed(tmp_path, monkeypatch):
    bomb = tmp_path / "log.eval"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("samples/1_epoch_1.json", b" " * 2_000_000)
    assert bomb.stat().st_size < 10_000
    monkeypatch.setattr(inspect_eval, "MAX_SAMPLE_BYTES", 1_000_000)
    assert "more than 1000000" in refused(bomb)


def test_too_many_entries_are_refused(tmp_path, monkeypatch):
    many = tmp_path / "log.eval"
    with zipfile.ZipFile(many, "w") as archive:
        for i in range(11):
            archive.writestr(f"samples/{i}_epoch_1.json", "{}")
    monkeypatch.setattr(inspect_eval, "MAX_ZIP_ENTRIES", 10)
    assert refused(many) == "11 entries: more than 10"


def _understated(source: Path, target: Path, entry: str) -> None:
    """``source`` with ``entry``'s size, as its central directory declares it, one byte smaller."""
    data = bytearray(source.read_bytes())
    central = data.index(b"PK\x01\x02")
    while data[central + 46:central + 46 + len(entry)] != entry.encode():
        central = data.index(b"PK\x01\x02", central + 4)
    (size,) = struct.unpack_from("<I", data, central + 24)
    struct.pack_into("<I", data, central + 24, size - 1)
    target.write_bytes(bytes(data))


def test_an_entry_that_decompresses_to_more_than_it_declares_is_refused(tmp_path):
    """Inspect's own zstd entries, and deflate ones: the declared size is the bound."""
    zstd = tmp_path / "zstd.eval"
    _understated(FIXTURES / "inspect_generate.eval", zstd, "samples/1_epoch_1.json")
    assert "samples/1_epoch_1.json" in refused(zstd)
    plain = tmp_path / "plain.json.eval"
    with zipfile.ZipFile(plain, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("samples/1_epoch_1.json", json.dumps(sample(CALL)))
    deflated = tmp_path / "deflate.eval"
    _understated(plain, deflated, "samples/1_epoch_1.json")
    assert "samples/1_epoch_1.json" in refused(deflated)


def test_import_reads_an_eval_zip_one_line_per_sample(admiss_cli, tmp_path):
    rubric = tmp_path / "r.rubric"
    rubric.write_text('PROPERTY p "p" {\n  ADMIT procedurally_sound_tool_call\n  FORBID flawed_tool_call\n}\n')
    log = tmp_path / "log.eval"
    shutil.copy(FIXTURES / "inspect_generate.eval", log)
    ran = admiss_cli("import", "--rubric", rubric, log)
    assert ran.code == 0, ran.err
    printed = [json.loads(line) for line in ran.out.splitlines()]
    assert [b["trace"]["run"] for b in printed] == [f"{log}#samples/1_epoch_1.json", f"{log}#samples/2_epoch_1.json"]
    broken = tmp_path / "broken.eval"
    broken.write_bytes(b"PK\x03\x04 not really")
    ran = admiss_cli("import", "--rubric", rubric, broken)
    assert ran.code == 2 and "B027" in ran.err and "Traceback" not in ran.err


def test_check_reads_a_log_of_many_samples_one_report_each(admiss_cli, tmp_path):
    rubric = tmp_path / "r.rubric"
    rubric.write_text('PROPERTY p "p" {\n  ADMIT procedurally_sound_tool_call\n  FORBID flawed_tool_call\n}\n')
    log = FIXTURES / "inspect_generate.json"
    ran = admiss_cli("check", "--rubric", rubric, "--format", "json", log)
    printed = [json.loads(line) for line in ran.out.splitlines()]
    samples = json.loads(log.read_text(encoding="utf-8"))["samples"]
    assert [p["bundle"] for p in printed] == [f"{log}#samples[{i}]" for i in range(len(samples))]
    assert ran.code == (0 if all(p["verdict"] == "pass" for p in printed) else 1), ran.err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_check_reads_an_eval_zip_one_report_per_sample(admiss_cli, tmp_path, jobs):
    rubric = tmp_path / "r.rubric"
    rubric.write_text('PROPERTY p "p" {\n  ADMIT procedurally_sound_tool_call\n  FORBID flawed_tool_call\n}\n')
    log = tmp_path / "log.eval"
    shutil.copy(FIXTURES / "inspect_generate.eval", log)
    ran = admiss_cli("check", "--jobs", jobs, "--rubric", rubric, "--format", "json", log)
    printed = [json.loads(line) for line in ran.out.splitlines()]  # JSON Lines: a log holds many runs
    assert [p["bundle"] for p in printed] == [f"{log}#samples/1_epoch_1.json", f"{log}#samples/2_epoch_1.json"]
    assert ran.code == (0 if all(p["verdict"] == "pass" for p in printed) else 1), ran.err
    broken = tmp_path / "broken.eval"
    broken.write_bytes(b"PK\x03\x04 not really")
    ran = admiss_cli("check", "--jobs", jobs, "--rubric", rubric, broken, log)
    assert ran.code == 2 and "B027" in ran.err and "Traceback" not in ran.err
    assert ran.out.count("==> ") == 2  # the log after the broken one is still checked
