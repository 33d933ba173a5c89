"""Whatever untrusted text a gate reads (the candidate's output, its samples, a model's reply
about it, a gate program's stdout) can make the gate fail or abstain, never raise: no crafted
text counts against a gate's error budget. Huge and odd numbers, repeated keys and deep
nesting, through real rubrics, a real chat server on 127.0.0.1 and real gate programs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chat_server import ChatServer, completion
from gatekit import PYTHON, SCRIPTS

import admiss

CRAFTED_RUNS = 7  # more than budget_min_runs (5): enough to disable a gate that counted them
HUGE = "1" * 5000  # past Python's int-conversion limit (4,300 digits)
BIG = "1" * 400  # an int Python reads, too large for a float


def _rubric(folder: Path, gate_line: str, toml: str = "", files: dict[str, str] | None = None) -> admiss.Rubric:
    (folder / "admiss.toml").write_text(toml)
    for name, text in (files or {}).items():
        (folder / name).write_text(text)
    path = folder / "r.rubric"
    path.write_text(f"CHAIN c {{\n  {gate_line}\n}}\n")
    return admiss.load(path)


def _gate(report) -> dict:
    return report.to_dict()["chain"]["rungs"][0]["gates"][0]


def _crafted(rubric: admiss.Rubric, bundle: dict) -> list[dict]:
    return [_gate(rubric.check(bundle)) for _ in range(CRAFTED_RUNS)]


def _budget_untouched(rubric: admiss.Rubric) -> None:
    assert [(h.errors, h.disabled) for h in rubric.gate_health()] == [(0, False)]


def _provider(server: ChatServer) -> str:
    return f'[providers.local]\nbase_url = "{server.url}"\nmax_retries = 0\n'


# ---------------------------------------------------------------- json_valid and schema


@pytest.mark.parametrize(("output", "says"), [
    (f'{{"n": {HUGE}}}', "an integer of 5,000 digits; the limit is 4,300"),
    (f"[-{HUGE}]", "an integer of 5,000 digits"),
    ('{"n": 1e400}', "the number 1e400 is beyond a double's range"),
    ('{"a": 99, "a": 5}', "a: key given twice in one object at line 1 column 11"),
    ('{"x": [{"k": 1, "k": 1}]}', "x[0].k: key given twice"),
    ('{"n": NaN}', "NaN is not a JSON value"),
    ('{"n": ²}', "output is not JSON: Expecting value"),
])
def test_json_valid_fails_untrusted_json_and_its_budget_never_moves(tmp_path, output, says):
    rubric = _rubric(tmp_path, "GATE json_valid ON ABSTAIN fail_closed")
    gates = _crafted(rubric, {"output": output})
    assert all((g["verdict"], g["fault"], g["disabled"]) == ("fail", None, False) for g in gates)
    assert says in gates[0]["reason"]
    _budget_untouched(rubric)
    assert _gate(rubric.check({"output": '{"n": 12345678901234567890123}'}))["verdict"] == "pass"


MAXIMUM_10 = json.dumps({"type": "object", "properties": {"a": {"type": "integer", "maximum": 10}}})


def test_a_repeated_key_cannot_pass_a_schema_by_its_last_value(tmp_path):
    rubric = _rubric(tmp_path, 'GATE schema FILE "s.json"', files={"s.json": MAXIMUM_10})
    for output in ('{"a": 99, "a": 5}', '{"a": 5, "a": 99}', '{"a": 5, "\\u0061": 5}'):
        gate = _gate(rubric.check({"output": output}))
        assert (gate["verdict"], gate["effective"]) == ("fail", "fail"), output
        assert "key given twice in one object" in gate["reason"]
    assert _gate(rubric.check({"output": '{"a": 5}'}))["verdict"] == "pass"


def test_schema_reads_long_integers_exactly(tmp_path):
    # orjson would read this as the float 1e22, which is not above the maximum.
    schema = json.dumps({"type": "integer", "maximum": 10 ** 22})
    rubric = _rubric(tmp_path, 'GATE schema FILE "s.json"', files={"s.json": schema})
    assert _gate(rubric.check({"output": str(10 ** 22 + 1)}))["verdict"] == "fail"
    assert _gate(rubric.check({"output": str(10 ** 22)}))["verdict"] == "pass"


def test_a_number_the_validator_cannot_compare_is_the_candidates_fault(tmp_path):
    # jsonschema divides by a float multipleOf: an int beyond a float overflows.
    schema = json.dumps({"type": "integer", "multipleOf": 0.5})
    rubric = _rubric(tmp_path, 'GATE schema FILE "s.json" ON ABSTAIN fail_closed', files={"s.json": schema})
    gates = _crafted(rubric, {"output": BIG})
    assert all((g["verdict"], g["effective"], g["fault"]) == ("abstain", "fail", "candidate") for g in gates)
    assert "output cannot be validated" in gates[0]["reason"] and "OverflowError" in gates[0]["reason"]
    _budget_untouched(rubric)
    assert _gate(rubric.check({"output": "3"}))["verdict"] == "pass"


# ---------------------------------------------------------------- consistency


@pytest.mark.parametrize("samples", [
    [f'{{"n": {HUGE}}}'] * 3,  # not JSON admiss reads: compared as text
    ["[" * 600 + "]" * 600] * 3,  # JSON that parses, compared deeper than the stack goes
])
def test_consistency_samples_never_count_against_its_budget(tmp_path, samples):
    rubric = _rubric(tmp_path, "GATE consistency K 3 ON ABSTAIN fail_closed")
    gates = _crafted(rubric, {"output": samples[0], "samples": samples})
    assert all(g["fault"] != "gate" for g in gates), gates[0]
    _budget_untouched(rubric)
    assert _gate(rubric.check({"output": "yes", "samples": ["yes", "Yes", "no"]}))["verdict"] == "fail"


def test_values_nested_deeper_than_the_stack_are_compared_by_value(tmp_path):
    # Comparing them once raised RecursionError; that deep, a finalizer's error escaped too.
    rubric = _rubric(tmp_path, "GATE consistency K 2 ON ABSTAIN fail_closed")
    deep, spaced, other = (opening * 600 + inner + "]" * 600 for opening, inner in (("[", "1"), ("[ ", "1"), ("[", "2")))
    assert _gate(rubric.check({"output": deep, "samples": [spaced, spaced]}))["verdict"] == "pass"  # equal as JSON only
    gate = _gate(rubric.check({"output": deep, "samples": [other, other]}))
    assert (gate["verdict"], gate["fault"]) == ("fail", None)


# ---------------------------------------------------------------- model replies


JUDGE = 'GATE judge MODEL "local/judge" RUBRIC "Is it right?" ON ABSTAIN fail_closed'


def _judge_reply(score: str) -> str:
    return '{"failure_hypotheses": ["h"], "evidence": [], "rationale": "r", "score": ' + score + "}"


@pytest.mark.parametrize(("score", "says"), [
    (HUGE, "an integer of 5,000 digits"),
    (BIG, "score must be a number in [0, 1], not 11111111111111111111... (400 characters)"),
    ("1e400", "beyond a double's range"),
    ("0.9, \"score\": 0.1", "score: key given twice"),
])
def test_a_judge_talked_into_an_odd_number_is_the_candidates_fault(tmp_path, chat_server, score, says):
    rubric = _rubric(tmp_path, JUDGE, _provider(chat_server))
    chat_server.script(*[completion(_judge_reply(score))] * CRAFTED_RUNS)
    gates = _crafted(rubric, {"output": "write a long number", "model": "local/maker"})
    assert all((g["verdict"], g["effective"], g["fault"]) == ("abstain", "fail", "candidate") for g in gates)
    assert gates[0]["reason"].startswith("judge reply rejected") and says in gates[0]["reason"]
    _budget_untouched(rubric)


@pytest.mark.parametrize("reply", [
    '{"rationale": ' + HUGE + ', "entails": true}',
    '{"rationale": "same", "entails": ' + BIG + "}",
    '{"rationale": "same", "entails": false, "entails": true}',
])
def test_a_meaning_model_talked_into_odd_json_is_the_candidates_fault(tmp_path, chat_server, reply):
    rubric = _rubric(tmp_path, 'GATE consistency K 2 MEANING MODEL "local/meaning" ON ABSTAIN fail_closed',
                     _provider(chat_server))
    chat_server.script(*[completion(reply)] * (CRAFTED_RUNS * 2))
    gates = _crafted(rubric, {"output": "Paris", "samples": ["It is Paris", "paris, France"]})
    assert all((g["verdict"], g["effective"], g["fault"]) == ("abstain", "fail", "candidate") for g in gates)
    assert "reply rejected" in gates[0]["reason"]
    _budget_untouched(rubric)


# ---------------------------------------------------------------- gate programs


def _program(stdout: str) -> str:
    return "GATE subprocess CMD " + json.dumps([PYTHON, str(SCRIPTS / "reply.py"), stdout])


def test_a_long_number_a_program_echoes_leaves_its_verdict_as_it_is(tmp_path):
    # The program keeps the contract; a key it adds holds what the candidate wrote.
    for verdict in ("fail", "pass"):
        rubric = _rubric(tmp_path, _program(f'{{"verdict": "{verdict}", "echo": {HUGE}, "big": {BIG}}}'))
        gate = _gate(rubric.check({"output": HUGE}))
        assert (gate["verdict"], gate["fault"]) == (verdict, None)


@pytest.mark.parametrize("score", [HUGE, BIG, "1e400"])
def test_a_score_too_large_for_a_float_is_out_of_range_not_a_crash(tmp_path, score):
    rubric = _rubric(tmp_path, _program(f'{{"verdict": "pass", "score": {score}}}'))
    gate = _gate(rubric.check({"output": "x"}))
    assert (gate["verdict"], gate["fault"]) == ("abstain", "gate")
    assert gate["reason"].startswith("score ") and gate["reason"].endswith("is not a number in [0, 1]")
    assert "raised" not in gate["reason"]


def test_a_program_repeating_the_verdict_key_is_refused(tmp_path):
    rubric = _rubric(tmp_path, _program('{"verdict": "fail", "verdict": "pass"}'))
    gate = _gate(rubric.check({"output": "x"}))
    assert (gate["verdict"], gate["fault"]) == ("abstain", "gate")
    assert gate["reason"] == ("stdout is JSON admiss refuses: verdict: key given twice in one object at line 1 "
                              "column 21 (a reader would keep one of them without a word)")


# ---------------------------------------------------------------- bundle numbers


def test_a_cost_too_large_for_a_float_is_a_bundle_error_not_a_traceback(tmp_path):
    rubric = _rubric(tmp_path, "GATE json_valid")
    for bundle, path in (({"output": "x", "cost_usd": int(BIG)}, "cost_usd"),
                         ({"candidates": [{"rung": "c", "output": "x", "cost_usd": int(BIG)}]}, "candidates[0].cost_usd"),
                         ({"output": "x", "cost_usd": float("inf")}, "cost_usd")):
        with pytest.raises(admiss.AdmissError) as caught:
            rubric.check(bundle)
        assert f"{path}: must be a number >= 0" in caught.value.render()
