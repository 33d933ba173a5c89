"""The command line as a user runs it: real files, real subprocesses, exit codes 0/1/2."""

import json

import pytest

from test_seed import EXPECTED_REPORT, FINAL_ANSWER, SHORTCUT, STRICT, TEN_K


@pytest.fixture
def seed(tmp_path):
    (tmp_path / "sec.rubric").write_text(STRICT)
    for name, item in (("forbidden", FINAL_ANSWER), ("shortcut", SHORTCUT), ("ten_k", TEN_K)):
        (tmp_path / f"{name}.json").write_text(json.dumps({"rubric": "sec.rubric", "evidence": [item]}))
    return tmp_path


def _no_traceback(ran) -> None:
    assert "Traceback" not in ran.err and "Traceback" not in ran.out


def test_check_prints_the_seed_report_byte_for_byte(admiss_cli, seed):
    ran = admiss_cli("check", "--rubric", "sec.rubric", "--format", "text", "shortcut.json")
    assert ran.out == EXPECTED_REPORT + "\n"
    assert ran.code == 1


@pytest.mark.parametrize("bundle, code", [("forbidden.json", 1), ("shortcut.json", 1), ("ten_k.json", 0)])
def test_exit_code_follows_the_verdict(admiss_cli, seed, bundle, code):
    assert admiss_cli("check", bundle).code == code


def test_rubric_comes_from_the_bundle_relative_to_it(admiss_cli, seed, tmp_path):
    elsewhere = tmp_path / "run"
    elsewhere.mkdir()
    ran = admiss_cli("check", seed / "ten_k.json", cwd=elsewhere)
    assert ran.code == 0, ran.err
    assert "verdict: yes" in ran.out


def test_json_format(admiss_cli, seed):
    ran = admiss_cli("check", "--format", "json", "shortcut.json")
    report = json.loads(ran.out)
    assert report["verdict"] == "fail"
    assert report["missing_evidence_count"] == 1
    excluded = report["properties"][0]["excluded"]
    assert excluded == [{"detail": "8-K exhibit says the operator is named.", "reason": "shortcut-rejected",
                         "index": 0}]


def test_json_format_full_report_gives_the_item_and_the_clause(admiss_cli, seed):
    ran = admiss_cli("check", "--format", "json", "--report", "full", "shortcut.json")
    excluded = json.loads(ran.out)["properties"][0]["excluded"][0]
    assert excluded["reason"] == "shortcut-rejected" and excluded["kind"] == "verified_external_source"
    assert excluded["clause"] == {"keyword": "REJECT SHORTCUT", "value": "8-K press-release exhibit",
                                  "line": 5, "column": 19}


def test_several_bundles_text_named_and_separated_by_a_blank_line(admiss_cli, seed):
    ran = admiss_cli("check", "--format", "text", "ten_k.json", "shortcut.json")
    first, second = ran.out.split("\n\n")
    assert first.startswith("==> ten_k.json <==\n") and first.endswith("missing_evidence_count: 0")
    assert second == "==> shortcut.json <==\n" + EXPECTED_REPORT + "\n"
    assert ran.code == 1


def test_several_bundles_json_are_json_lines(admiss_cli, seed):
    ran = admiss_cli("check", "--format", "json", "ten_k.json", "shortcut.json")
    assert [json.loads(line)["verdict"] for line in ran.out.splitlines()] == ["pass", "fail"]


def test_jsonl_gives_one_report_per_line_and_keeps_going_past_a_bad_line(admiss_cli, seed, tmp_path):
    lines = [json.dumps({"evidence": [TEN_K]}), "{not json", json.dumps({"evidence": [SHORTCUT]}), ""]
    (tmp_path / "batch.jsonl").write_text("\n".join(lines))
    ran = admiss_cli("check", "--rubric", "sec.rubric", "--format", "json", "batch.jsonl")
    out = [json.loads(line) for line in ran.out.splitlines()]
    assert [o.get("verdict") for o in out] == ["pass", None, "fail"]
    assert out[1]["bundle"].endswith("batch.jsonl:2")
    assert out[1]["error"][0]["code"] == "B001"
    assert "batch.jsonl:2:2: B001" in ran.err
    assert ran.code == 2


def test_check_through_ir_equals_check_through_source(admiss_cli, seed):
    assert admiss_cli("compile", "sec.rubric", "-o", "sec.json").code == 0
    via_ir = admiss_cli("check", "--rubric", "sec.json", "--format", "json", "shortcut.json")
    via_source = admiss_cli("check", "--rubric", "sec.rubric", "--format", "json", "shortcut.json")
    assert via_ir.out == via_source.out and via_ir.code == via_source.code == 1


def test_compile_is_deterministic(admiss_cli, seed):
    first = admiss_cli("compile", "sec.rubric").out
    second = admiss_cli("compile", "sec.rubric").out
    assert first == second
    assert json.loads(first)["ir_version"] == 2


def test_compile_failure_leaves_the_output_file_alone(admiss_cli, seed, tmp_path):
    (tmp_path / "out.json").write_text("previous")
    (tmp_path / "bad.rubric").write_text("PROPERTY p { ADMIT nope }")
    ran = admiss_cli("compile", "bad.rubric", "-o", "out.json")
    assert ran.code == 2
    assert (tmp_path / "out.json").read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.json")] == []


BAD_INPUTS = {
    "syntax error": ("PROPERTY p {\n  ADMIT summary,\n}\n", '{"evidence": []}', "bad.rubric:3:1: E100"),
    "unknown kind": ("PROPERTY p {\n  ADMIT verifed_external_source\n}\n", '{"evidence": []}',
                     "bad.rubric:2:9: E101"),
    "invalid JSON": (STRICT, '{"evidence": [}', "bundle.json:1:15: B001"),
    "non-object bundle": (STRICT, "[1, 2]", "bundle.json: B002 $: a bundle must be a JSON object"),
    "item without kind": (STRICT, '{"evidence": [{"detail": "d", "source_label": "s"}]}',
                          "bundle.json: B002 evidence[0].kind: missing"),
    "malformed item": (STRICT, '{"evidence": ["text"]}', "bundle.json: B002 evidence[0]: must be an object"),
    "bad rubric field": (STRICT, '{"rubric": 5}', "bundle.json: B002 rubric: must be a string"),
    "nan cost": (STRICT, '{"candidates": [{"rung": "r", "cost_usd": NaN}]}',
                 "bundle.json: B002 candidates[0].cost_usd: must be a number >= 0"),
    "unknown property": (STRICT, '{"evidence": [{"kind": "summary", "detail": "d", "source_label": "s", '
                                 '"property": "named_operatr"}]}',
                         "B002 evidence[0].property: no property 'named_operatr'"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_2_with_a_located_message(admiss_cli, tmp_path, case):
    rubric, bundle, expected = BAD_INPUTS[case]
    (tmp_path / "bad.rubric").write_text(rubric)
    (tmp_path / "bundle.json").write_text(bundle)
    ran = admiss_cli("check", "--rubric", "bad.rubric", "bundle.json")
    assert ran.code == 2
    assert expected in ran.err
    _no_traceback(ran)


@pytest.mark.parametrize(
    "args, expected",
    [
        (("check", "--rubric", "missing.rubric", "b.json"), "missing.rubric: E001 no such file"),
        (("check", "--rubric", "sec.rubric", "missing.json"), "missing.json: E001 no such file"),
        (("check", "nr.json"), "nr.json: E002 no rubric to check against"),
        (("compile", "missing.rubric"), "missing.rubric: E001 no such file"),
        (("check", "--rubric", "sec.rubric", "."), ".: E001 is a folder"),
    ],
)
def test_missing_files_exit_2(admiss_cli, seed, tmp_path, args, expected):
    (tmp_path / "nr.json").write_text('{"evidence": []}')
    ran = admiss_cli(*args)
    assert ran.code == 2
    assert expected in ran.err
    _no_traceback(ran)


def test_usage_error_exits_2(admiss_cli):
    ran = admiss_cli("check", "--format", "yaml", "x.json")
    assert ran.code == 2
    _no_traceback(ran)


def test_bad_ir_file_exits_2(admiss_cli, seed, tmp_path):
    (tmp_path / "ir.json").write_text('{"ir_version": 99}')
    ran = admiss_cli("check", "--rubric", "ir.json", "ten_k.json")
    assert ran.code == 2
    assert "I001" in ran.err
    _no_traceback(ran)


def test_version(admiss_cli):
    from admiss import __version__

    ran = admiss_cli("--version")
    assert ran.out.strip() == f"admiss {__version__}" and ran.code == 0
