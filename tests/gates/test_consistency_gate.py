"""The consistency gate: agreement over k samples, from the bundle or from new calls."""

from __future__ import annotations

import json

import pytest
from chat_server import Reply, completion
from gatekit import gate, run_gate

from admiss.errors import InputError
from admiss.gates import consistency
from admiss.gates.base import ABSTAIN, FAIL, PASS, Candidate, GateContext


def consistent(ctx, candidate, **options):
    return run_gate(consistency.build(gate("consistency", **options), ctx), candidate, ctx)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Paris", "  paris\n", True),
        ("The  capital\tis Paris", "the capital is paris", True),
        ("Paris", "Paris, France", False),
        ('{"a": 1, "b": [1, 2]}', '{ "b": [1,2], "a": 1.0 }', True),
        ('{"a": "X"}', '{"a": "x"}', False),  # parsed JSON strings keep their case
        ('{"a": true}', '{"a": 1}', False),
        ("[1, 2]", "[2, 1]", False),
        ("true", "True", True),  # "True" is not JSON, so both compare as text
    ],
)
def test_equivalence(a, b, same):
    assert consistency.equivalent(a, b) is same


def test_bundle_samples_score_the_share_that_agree(tmp_path):
    candidate = Candidate(output="42", samples=("42", " 42 ", "41", "42.0", "forty-two", "unused"))
    result = consistent(GateContext(tmp_path), candidate, k=5, threshold=0.6)
    assert (result.verdict, result.score, result.cost_usd) == (PASS, 0.6, 0)
    assert result.reason == "3/5 samples agree: score 0.6 >= threshold 0.6"


def test_the_default_threshold_is_0_8_and_k_5(tmp_path):
    four_of_five = Candidate(output="a", samples=("a", "a", "a", "a", "b"))
    three_of_five = Candidate(output="a", samples=("a", "a", "a", "b", "b"))
    assert consistent(GateContext(tmp_path), four_of_five).verdict == PASS
    result = consistent(GateContext(tmp_path), three_of_five)
    assert (result.verdict, result.details["k"]) == (FAIL, 5)


def test_fewer_samples_than_k_abstains(tmp_path):
    result = consistent(GateContext(tmp_path), Candidate(output="a", samples=("a", "a")), k=3)
    assert (result.verdict, result.error) == (ABSTAIN, False)
    assert result.reason == "the bundle has 2 sample(s), K is 3"


def test_no_samples_and_no_provider_abstains_saying_why(tmp_path):
    result = consistent(GateContext(tmp_path), Candidate(output="a", model="openai/gpt-5"), k=3)
    assert result.verdict == ABSTAIN
    assert "no provider configured for the candidate's model (openai/gpt-5)" in result.reason
    assert "no prompt to resample" in result.reason


def test_no_prompt_abstains_without_calling(local_ctx, chat_server):
    result = consistent(local_ctx(), Candidate(output="a", model="local/maker"), k=3)
    assert result.verdict == ABSTAIN and "no prompt to resample" in result.reason
    assert chat_server.requests == []


def test_new_samples_are_drawn_from_the_candidates_model_and_priced(local_ctx, chat_server):
    chat_server.script(completion("Paris"), completion("paris."), completion(" PARIS "))
    candidate = Candidate(output="Paris", model="local/maker", prompt="Capital of France?")
    result = consistent(local_ctx(), candidate, k=3, threshold=0.6)
    assert (result.verdict, result.score) == (PASS, pytest.approx(2 / 3))
    assert result.details["samples_from"] == "provider"
    assert len(chat_server.requests) == 3
    assert all(r.body == {"model": "maker", "messages": [{"role": "user", "content": "Capital of France?"}]} for r in chat_server.requests)
    # 3 calls of 100 input tokens at $0.5/Mtok and 20 output tokens at $1/Mtok.
    assert result.cost_usd == pytest.approx(3 * (50e-6 + 20e-6))


def test_new_samples_are_drawn_concurrently(local_ctx, chat_server):
    # The server answers no request until all three have arrived: one call at a time would time out.
    chat_server.default = completion("x")
    chat_server.hold_replies_until(3)
    result = consistent(local_ctx(timeout_s=5), Candidate(output="x", model="local/maker", prompt="p"), k=3)
    assert (result.verdict, result.score) == (PASS, 1.0)


def test_a_failed_sampling_call_abstains_as_an_error_and_the_rest_are_priced(local_ctx, chat_server):
    chat_server.script(completion("a"), Reply(400, {"error": {"message": "bad request"}}), completion("a"))
    result = consistent(local_ctx(), Candidate(output="a", model="local/maker", prompt="p"), k=3)
    assert (result.verdict, result.error) == (ABSTAIN, True)
    assert "1 sampling call(s) failed: provider local: HTTP 400: bad request" in result.reason
    assert result.cost_usd == pytest.approx(2 * (50e-6 + 20e-6))


def test_json_outputs_agree_as_values(tmp_path):
    candidate = Candidate(output=json.dumps({"city": "Paris", "n": 1}), samples=('{"n": 1.0, "city": "Paris"}',) * 2)
    assert consistent(GateContext(tmp_path), candidate, k=2).score == 1.0


def test_k_below_one_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="K must be at least 1"):
        consistency.build(gate("consistency", k=0), GateContext(tmp_path))


@pytest.mark.parametrize(("failures", "fault"), [
    ((Reply(400, {"error": {"message": "prompt too long"}}),) * 3, "candidate"),
    ((Reply(400, {"error": {"message": "prompt too long"}}), Reply(503, "down")), "gate"),
])
def test_a_sampling_failure_is_the_candidates_fault_only_when_every_refusal_was_for_content(
        local_ctx, chat_server, failures, fault):
    chat_server.script(*failures, *[completion("a")] * (3 - len(failures)))
    result = consistent(local_ctx(max_retries=0), Candidate(output="a", model="local/maker", prompt="p"), k=3)
    assert (result.verdict, result.fault) == (ABSTAIN, fault)
