"""The evidence mapping: MAP rules and the default taxonomy over steps built directly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import admiss
from admiss.traces.input import is_trace
from admiss.traces.mapping import DETAIL_CHARS, CompiledMapping, default_detail
from admiss.traces.steps import (
    ASSISTANT_TEXT, BAD_ARGS, ERROR, FINAL_ANSWER, NO_RESULT, OK, OUTCOMES, REASONING, STEP_TYPES, SYSTEM,
    TOOL_CALL, USER, Skipped, Step, StepRef, Trace,
)


def ref(i: int, **ids) -> StepRef:
    return StepRef("test", f"steps[{i}]", message_index=i, **ids)


def tool(i: int, name: str, outcome: str = OK, args=None, result=None, args_parsed: bool = True) -> Step:
    return Step(TOOL_CALL, ref(i, tool_call_id=f"call_{i}"), tool_name=name, args=args if args is not None else {},
                args_parsed=args_parsed, result=result, outcome=outcome,
                error=None if outcome == OK else f"{outcome} happened")


def text(i: int, kind: str, words: str = "words") -> Step:
    return Step(kind, ref(i), text=words)


def rubric(body: str, properties: str = "PROPERTY p { ADMIT procedurally_sound_tool_call }") -> admiss.Rubric:
    return admiss.compile_source(f"{properties}\nMAP {{\n{body}\n}}\n", "m.rubric")


def decide(r: admiss.Rubric, step: Step):
    return r.compiled.mapping.decide(step)


# ---------------------------------------------------------------- the default taxonomy

DEFAULTS = [
    (tool(0, "cancel_booking"), "procedurally_sound_tool_call", "cancel_booking"),
    (tool(0, "cancel_booking", ERROR), "flawed_tool_call", "cancel_booking"),
    (tool(0, "cancel_booking", NO_RESULT), "flawed_tool_call", "cancel_booking"),
    (tool(0, "cancel_booking", BAD_ARGS, args="{oops", args_parsed=False), "flawed_tool_call", "cancel_booking"),
    (text(0, FINAL_ANSWER), "final_answer", "final answer"),
    (text(0, REASONING), "reasoning_trace", "reasoning"),
    (text(0, ASSISTANT_TEXT), "interpretation", "assistant message"),
]


@pytest.mark.parametrize("step,kind,label", DEFAULTS, ids=lambda v: v if isinstance(v, str) else None)
def test_default_taxonomy(step, kind, label):
    decision = CompiledMapping(None).decide(step)
    assert decision.item["kind"] == kind
    assert decision.item["source_label"] == label
    assert decision.item["step"] == step.ref.to_dict()
    assert decision.why["default"] is True


@pytest.mark.parametrize("kind", [USER, SYSTEM])
def test_user_and_system_messages_are_never_offered(kind):
    r = rubric("WHEN TEXT AS interpretation")
    for mapping in (CompiledMapping(None), r.compiled.mapping):
        decision = mapping.decide(text(3, kind))
        assert decision.item is None
        assert decision.not_offered() == {"step": ref(3).to_dict(), "type": kind,
                                          "reason": f"a {kind} message offers no evidence"}


def test_default_detail_says_the_call_and_how_it_failed():
    # Arguments the source gave as a value are written as compact JSON...
    assert default_detail(tool(0, "refund", args={"id": "B-1"})) == 'refund({"id":"B-1"})'
    failed = default_detail(tool(0, "refund", ERROR, args={"id": "B-1"}))
    assert failed == 'refund({"id":"B-1"}) failed: error happened'
    # ...and arguments it gave as text are quoted as the agent wrote them.
    sent = Step(TOOL_CALL, ref(0), tool_name="refund", args={"id": "B-1"}, args_text='{ "id" : "B-1" }', outcome=OK)
    assert default_detail(sent) == 'refund({ "id" : "B-1" })'
    assert default_detail(tool(0, "refund", BAD_ARGS, args="{id: B", args_parsed=False)).startswith("refund({id: B)")
    long = default_detail(text(0, FINAL_ANSWER, "x" * 1000))
    assert len(long) == DETAIL_CHARS and long.endswith("…")


# ---------------------------------------------------------------- rules


def test_first_matching_rule_wins_and_skip_is_not_offered_with_its_line():
    r = rubric('WHEN TOOL "lookup_*" SKIP\n'
               '  WHEN TOOL AS procedurally_sound_tool_call\n'
               '  WHEN TOOL AS flawed_tool_call')
    skipped = decide(r, tool(0, "lookup_booking"))
    assert skipped.item is None
    assert skipped.not_offered()["reason"] == "SKIP" and skipped.not_offered()["line"] == 3
    assert skipped.not_offered()["tool"] == "lookup_booking"
    taken = decide(r, tool(1, "cancel_booking"))
    assert taken.item["kind"] == "procedurally_sound_tool_call" and taken.why["line"] == 4


def test_a_step_no_rule_matches_is_not_offered():
    r = rubric('WHEN TOOL "cancel_booking" AS procedurally_sound_tool_call')
    for step in (tool(0, "cancel_bookings"), text(1, FINAL_ANSWER), text(2, REASONING)):
        decision = decide(r, step)
        assert decision.item is None and decision.why == {"reason": "no MAP rule matches"}


@pytest.mark.parametrize("pattern,name,matches", [
    ("cancel_booking", "cancel_booking", True), ("cancel_booking", "cancel_booking_v2", False),
    ("cancel_*", "cancel_booking", True), ("cancel_*", "cancel_", True), ("cancel_*", "xcancel_booking", False),
    ("*_booking", "lookup_booking", True), ("*", "anything", True), ("a.b*", "axb", False), ("a.b*", "a.bc", True),
])
def test_tool_names_exact_or_with_wildcards(pattern, name, matches):
    r = rubric(f"WHEN TOOL {json.dumps(pattern)} AS procedurally_sound_tool_call")
    assert (decide(r, tool(0, name)).item is not None) is matches


@pytest.mark.parametrize("outcome_word,outcomes", [
    ("ok", {OK}), ("failed", {ERROR, NO_RESULT, BAD_ARGS}), ("error", {ERROR}), ("no_result", {NO_RESULT}),
    ("bad_args", {BAD_ARGS}), ("ok, no_result", {OK, NO_RESULT}),
])
def test_outcomes(outcome_word, outcomes):
    r = rubric(f"WHEN TOOL OUTCOME {outcome_word} AS procedurally_sound_tool_call")
    for outcome in OUTCOMES:
        assert (decide(r, tool(0, "t", outcome)).item is not None) is (outcome in outcomes), outcome


@pytest.mark.parametrize("condition,args,result,matches", [
    ('args.form == "10-K"', {"form": "10-K"}, None, True),
    ('args.form == "10-K"', {"form": "8-K"}, None, False),
    ('args.form == "10-K"', {}, None, False),
    ('result.status == "cancelled"', {}, {"status": "cancelled"}, True),
    ('result.status == "cancelled"', {}, "cancelled", False),
    ("result.items.1.n == 2", {}, {"items": [{"n": 1}, {"n": 2}]}, True),
    ("result.items.5.n == 2", {}, {"items": [{"n": 1}]}, False),
    ("result.n == 2", {}, {"n": 2.0}, True),
    ("result.ok == true", {}, {"ok": True}, True),
    ("result.ok == true", {}, {"ok": 1}, False),
    ("result.n == 1", {}, {"n": True}, False),
    ("result.gone == null", {}, {"gone": None}, True),
    ("result.gone == null", {}, {}, False),
])
def test_where_compares_json_values_by_dotted_path(condition, args, result, matches):
    r = rubric(f"WHEN TOOL WHERE {condition} AS procedurally_sound_tool_call")
    assert (decide(r, tool(0, "t", args=args, result=result)).item is not None) is matches


@pytest.mark.parametrize("condition,result,matches", [
    ('result MATCHES "FAILED*"', "FAILED: disk full", True),
    ('result MATCHES "FAILED*"', "deployed; FAILED later", False),  # a pattern without * is anchored
    ('result MATCHES "*rollback*"', "started; rollback at 12:00", True),
    ('result.log MATCHES "*rollback*"', {"log": "rollback"}, True),
    ('result.log MATCHES "*rollback*"', {"log": ["rollback"]}, False),  # only text matches a pattern
    ('result.code MATCHES "1*"', {"code": 12}, False),
    ('result MATCHES "a*b*c"', "abc", True),
    ('result MATCHES "a*b*c"', "acb", False),
    ('result MATCHES "ab*ba"', "aba", False),  # the prefix and suffix may not overlap
    ('result MATCHES "exact"', "exact", True),
])
def test_where_matches_a_text_pattern(condition, result, matches):
    r = rubric(f"WHEN TOOL WHERE {condition} AS procedurally_sound_tool_call")
    assert (decide(r, tool(0, "t", result=result)).item is not None) is matches


@settings(max_examples=300, deadline=None)
@given(st.text("ab*", max_size=6), st.text("ab", max_size=10))
def test_text_matches_agrees_with_a_regular_expression(pattern, text):
    import re

    from admiss.traces.mapping import text_matches

    regex = ".*".join(re.escape(piece) for piece in pattern.split("*"))
    assert text_matches(pattern, text) is (re.fullmatch(regex, text, re.DOTALL) is not None)


def test_a_pattern_survives_compiling_to_ir_and_reading_it_back():
    source = "PROPERTY p { ADMIT procedurally_sound_tool_call }\nMAP {\n  WHEN TOOL WHERE result MATCHES \"ok*\" AS procedurally_sound_tool_call\n}\n"
    compiled = admiss.compile_source(source, "m.rubric")
    ir_json = json.loads(compiled.to_ir_json())
    [condition] = ir_json["mapping"]["rules"][0]["where"]
    assert condition["matches"] == "ok*" and "value" not in condition
    from admiss.ir import from_dict

    [rule] = from_dict(ir_json).mapping.rules
    assert rule.where[0].matches and rule.where[0].value == "ok*"


def test_args_kept_as_text_have_no_fields():
    r = rubric('WHEN TOOL WHERE args.form == "10-K" AS procedurally_sound_tool_call')
    step = tool(0, "t", BAD_ARGS, args='{"form": "10-K"', args_parsed=False)
    assert decide(r, step).item is None


def test_label_and_detail_from_literals_or_paths_and_the_property_offered_to():
    r = rubric('WHEN TOOL AS verified_external_source LABEL result.title DETAIL args.form FOR p',
               "PROPERTY p { ADMIT verified_external_source }")
    item = decide(r, tool(0, "fetch", args={"form": "10-K"}, result={"title": "10-K filing"})).item
    assert item == {"kind": "verified_external_source", "detail": "10-K", "source_label": "10-K filing",
                    "property": "p", "step": ref(0, tool_call_id="call_0").to_dict()}
    r = rubric('WHEN FINAL AS final_answer LABEL "agent reply" DETAIL "the reply"')
    item = decide(r, text(0, FINAL_ANSWER)).item
    assert (item["source_label"], item["detail"]) == ("agent reply", "the reply")


def test_a_label_path_that_is_missing_makes_the_rule_not_match():
    # Falling back to the tool's name would let a fetch with no title pass a REJECT SHORTCUT.
    r = rubric("WHEN TOOL AS verified_external_source LABEL result.title\n  WHEN TOOL AS flawed_tool_call")
    assert decide(r, tool(0, "fetch", result={"title": 7})).item["source_label"] == "7"
    assert decide(r, tool(0, "fetch", result={"title": {"x": 1}})).item["kind"] == "flawed_tool_call"
    assert decide(r, tool(0, "fetch", result={})).item["kind"] == "flawed_tool_call"


def test_label_from_a_path_meets_reject_shortcut():
    r = admiss.compile_source('''
PROPERTY filed {
  ADMIT verified_external_source
  REJECT SHORTCUT "8-K press-release exhibit"
}
MAP { WHEN TOOL "fetch_filing" OUTCOME ok AS verified_external_source LABEL result.document }
''')
    def trace(document: str) -> Trace:
        return Trace("test", (tool(0, "fetch_filing", result={"document": document}),))
    assert r.check(trace("8-K press-release exhibit")).verdict == "fail"
    assert r.check(trace("10-K filing")).verdict == "pass"


# ---------------------------------------------------------------- whole traces

steps = st.one_of(
    st.builds(lambda k, i: text(i, k), st.sampled_from(STEP_TYPES).filter(lambda k: k != TOOL_CALL),
              st.integers(0, 99)),
    st.builds(lambda n, o, i, s: tool(i, n, o, result={"status": s}),
              st.sampled_from(["cancel_booking", "lookup_booking", "issue_refund"]), st.sampled_from(OUTCOMES),
              st.integers(0, 99), st.sampled_from(["cancelled", "refunded", "pending"])),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(steps, max_size=30), st.booleans())
def test_every_step_is_offered_once_or_listed_as_not_offered(run, default):
    shipped = admiss.load("rubrics/booking_cancellation.rubric").compiled.mapping
    mapping = CompiledMapping(None) if default else shipped
    trace = Trace("test", tuple(run), skipped=(Skipped(StepRef("test", "steps[100]"), "empty message"),))
    bundle, not_offered = mapping.bundle(trace)
    assert len(bundle["evidence"]) + len(not_offered) == len(run) + 1
    offered = [s.ref.to_dict() for s in run if mapping.decide(s).item is not None]
    assert [e["step"] for e in bundle["evidence"]] == offered
    assert [e["step"] for e in not_offered[:-1]] == [s.ref.to_dict() for s in run if mapping.decide(s).item is None]
    assert not_offered[-1] == {"step": {"format": "test", "path": "steps[100]"}, "type": "skipped",
                               "reason": "empty message"}


def test_a_checked_trace_reports_step_references_and_steps_not_offered():
    r = admiss.load("rubrics/booking_cancellation.rubric")
    trace = Trace("test", (
        text(0, USER, "cancel please"),
        tool(1, "cancel_booking", result={"status": "cancelled"}),
        tool(2, "issue_refund", ERROR),
        text(3, FINAL_ANSWER, "Cancelled and refunded."),
    ), model="m-1")
    report = r.check(trace, "t.json")
    data = report.to_dict()
    assert data["verdict"] == "fail"
    cancelled, refunded = data["properties"]
    assert cancelled["evidence_steps"] == [ref(1, tool_call_id="call_1").to_dict()]
    # The cancel call is offered to booking_cancelled only (FOR), so refund_issued sees two items.
    assert [e["step"] for e in refunded["excluded"]] == [ref(2, tool_call_id="call_2").to_dict(), ref(3).to_dict()]
    assert data["trace"] == {"format": "test", "not_offered": [
        {"step": ref(0).to_dict(), "type": "user", "reason": "a user message offers no evidence"}]}
    # The chain gates the trace's final answer.
    assert data["chain"]["rungs"][0]["gates"][0]["verdict"] == "pass"
    # The text report stays the seed's format: no step references in it.
    assert "steps[" not in report.to_text()


def test_the_final_answer_is_the_candidate_output():
    r = admiss.compile_source('PROPERTY p { ADMIT final_answer }\nCHAIN c { GATE json_valid }')
    as_json = Trace("test", (text(0, FINAL_ANSWER, '{"ok": true}'),), model="m")
    not_json = Trace("test", (text(0, FINAL_ANSWER, "done!"),), model="m")
    assert r.check(as_json).verdict == "pass"
    assert r.check(not_json).verdict == "fail"


@pytest.mark.parametrize("value,trace", [
    ({}, False), ({"evidence": []}, False), ({"prompt": "x", "meta": {}}, False), ({"output": "x"}, False),
    ({"output": None, "model": "m"}, False), ({"output": [], "model": "m"}, True), ({"samples": [], "x": 1}, False),
    ({"messages": []}, True), ([], False), ([{"role": "user", "content": "x"}], True), ({"events": []}, True),
    ([{"type": "message"}], True), ([{"kind": "summary", "detail": "d", "source_label": "s"}], False), ([3], False),
    ("text", False), (3, False),
])
def test_what_is_read_as_a_trace(value, trace):
    assert is_trace(value) is trace


def test_outcome_names_cover_exactly_the_outcomes_a_step_can_have():
    from admiss import ir

    assert frozenset().union(*ir.MAP_OUTCOME_SETS.values()) == set(OUTCOMES)
    assert ir.MAP_OUTCOME_SETS["failed"] == set(OUTCOMES) - {OK}
    assert set(ir.MAP_STEPS.values()) == set(STEP_TYPES) - {USER, SYSTEM}


def test_check_many_takes_traces_as_objects_dicts_and_json_text_in_a_pool():
    shipped = Path(__file__).resolve().parents[2] / "rubrics"
    r = admiss.load(shipped / "booking_cancellation.rubric")
    paths = sorted((shipped / "traces" / "booking_cancellation").glob("*.json"))
    texts = [p.read_text(encoding="utf-8") for p in paths]
    inputs = texts + [json.loads(t) for t in texts] + [admiss.read_trace(json.loads(texts[0]))]
    alone = [result(r.check(json.loads(t))) for t in texts]
    for jobs in (1, 2):
        reports = [result(report) for report in admiss.check_many(r, inputs, jobs=jobs, chunk_size=2)]
        assert reports == alone + alone + alone[:1]


def result(report) -> dict:
    """A report's data without what differs between runs (its name, gate durations)."""
    data = report.to_dict()
    data.pop("bundle")
    for rung in data["chain"]["rungs"]:
        for gate in rung["gates"]:
            gate.pop("duration_ms")
    return data


def test_the_rung_whose_model_ran_the_trace_gates_its_final_answer():
    r = admiss.compile_source('''
PROPERTY p { ADMIT final_answer }
CHAIN serve {
  RUNG draft MODEL "openai/gpt-5-mini" { GATE non_empty }
  RUNG strong MODEL "anthropic/claude-sonnet-5" { GATE non_empty }
}''')
    def served(model):
        return r.check(Trace("test", (text(0, FINAL_ANSWER, "done"),), model=model)).to_dict()["chain"]["served"]
    assert served("claude-sonnet-5") == "strong"
    assert served("openai/gpt-5-mini") == "draft"
    assert served("gpt-4o") is None  # no rung ran this model: no candidate, the chain is exhausted
    assert served(None) is None


def _chat_with_result(result_text: str) -> dict:
    return {"messages": [
        {"role": "user", "content": "Find the operator."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "fetch_filing", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": result_text},
        {"role": "assistant", "content": "The operator is named."}]}


@pytest.mark.parametrize("result_text, verdict", [
    ('{"form": "10-K"}', "yes"),
    ('{"form": "8-K", "form": "10-K"}', "no"),  # a decoder keeps the 10-K: the rule must not see it
    ('{"form": "10-K", "form": "10-K"}', "no"),
])
def test_a_result_that_repeats_a_key_gives_map_rules_no_field_to_read(result_text, verdict):
    r = rubric('WHEN TOOL "fetch_filing" OUTCOME ok WHERE result.form == "10-K"\n'
               '    AS verified_external_source LABEL "10-K filing"',
               "PROPERTY p { ADMIT verified_external_source }")
    report = r.check(_chat_with_result(result_text))
    assert report.to_dict()["properties"][0]["verdict"] == verdict
