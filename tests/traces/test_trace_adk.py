"""Google ADK: a realistic session and eval set read step by step, and bad traces."""

from __future__ import annotations

from pathlib import Path

import pytest

import admiss
import admiss.traces.read
from admiss.errors import TraceError
from admiss.traces.read import read_trace
from admiss.traces.steps import Skipped, Step, StepRef

FIXTURES = Path(__file__).parent / "fixtures"
CHECK, MODIFY = "adk-3b6f0e0c-61a4-4d57-b1a5-9c2e1f0d4e11", "adk-8e2d5a17-0c3b-4f8e-8d0c-6a7b1e9f2c33"


def ref(path, index, event, call_id=None):
    return StepRef("adk", path, message_index=index, tool_call_id=call_id, event_id=event)


def test_session_reads_to_exact_steps():
    trace = admiss.read_trace(FIXTURES / "adk.json")
    assert (trace.format, trace.model) == ("adk", None)
    assert trace.skipped == (Skipped(ref("events[6]", 6, "Yc9dM4hi"), "event with no content"),)
    assert list(trace.steps) == [
        Step("user", ref("events[0]", 0, "Wm0q1hLr"),
             text="Move my reservation HX-2207 to check in on October 14 instead."),
        Step("reasoning", ref("events[1].content.parts[0]", 1, "k2V9tPq8"),
             text="The guest wants a date change; I need availability first."),
        Step("tool_call", ref("events[1].content.parts[1]", 1, "k2V9tPq8", CHECK), tool_name="check_availability",
             args={"hotel": "Harbor View", "check_in": "2025-10-14", "nights": 2},
             result={"available": True, "rate_usd": 212}, outcome="ok",
             result_ref=ref("events[2].content.parts[0]", 2, "Qx8nB3ce", CHECK)),
        Step("tool_call", ref("events[3].content.parts[0]", 3, "Lr4mZ0yd", MODIFY), tool_name="modify_reservation",
             args={"reservation_id": "HX-2207", "check_in": "2025-10-14"},
             result={"status": "error", "error_message": "reservation HX-2207 is prepaid and cannot be changed online"},
             outcome="error", error="reservation HX-2207 is prepaid and cannot be changed online",
             result_ref=ref("events[4].content.parts[0]", 4, "Tn6pK1wf", MODIFY)),
        Step("final_answer", ref("events[5]", 5, "Vb2sJ7ug"),
             text="Done! Your reservation HX-2207 now checks in on October 14 at 212 USD per night."),
    ]


def test_eval_set_reads_to_exact_steps():
    trace = admiss.read_trace(FIXTURES / "adk_evalset.json")
    at = "eval_cases[0].conversation[0]"
    data = f"{at}.intermediate_data"
    assert trace.skipped == ()
    assert list(trace.steps) == [
        Step("user", ref(f"{at}.user_content", 0, "e-41f0a9c2"), text="Can you move booking HX-3310 to November 2?"),
        Step("tool_call", ref(f"{data}.tool_uses[0]", 0, "e-41f0a9c2", "adk-0f1e2d3c"), tool_name="get_reservation",
             args={"reservation_id": "HX-3310"}, result={"reservation_id": "HX-3310", "prepaid": True}, outcome="ok",
             result_ref=ref(f"{data}.tool_responses[0]", 0, "e-41f0a9c2", "adk-0f1e2d3c")),
        # No ids: the response answers the earliest unanswered call of its tool name.
        Step("tool_call", ref(f"{data}.tool_uses[1]", 0, "e-41f0a9c2"), tool_name="modify_reservation",
             args={"reservation_id": "HX-3310", "check_in": "2025-11-02"},
             result={"error": "prepaid reservations cannot be modified"}, outcome="error",
             error="prepaid reservations cannot be modified", result_ref=ref(f"{data}.tool_responses[1]", 0, "e-41f0a9c2")),
        Step("assistant_text", ref(f"{data}.intermediate_responses[0]", 0, "e-41f0a9c2"),
             text="Prepaid rate: changes need a supervisor."),
        Step("final_answer", ref(f"{at}.final_response", 0, "e-41f0a9c2"),
             text="Your booking HX-3310 has been moved to November 2."),
    ]


def test_camel_case_eval_case_and_invocation_events():
    case = {"evalId": "c1", "conversation": [{
        "invocationId": "e-1",
        "userContent": {"role": "user", "parts": [{"text": "Cancel HX-1"}]},
        "intermediateData": {"invocationEvents": [
            {"author": "agent", "content": {"role": "model", "parts": [
                {"functionCall": {"id": "a1", "name": "cancel", "args": {"id": "HX-1"}}}]}}]},
        "finalResponse": {"role": "model", "parts": [{"text": "Cancelled."}]}}]}
    trace = read_trace(case, "t.json")
    assert [(s.type, s.ref.path, s.outcome) for s in trace.steps] == [
        ("user", "conversation[0].userContent", None),
        ("tool_call", "conversation[0].intermediateData.invocationEvents[0].content.parts[0]", "no_result"),
        ("final_answer", "conversation[0].finalResponse", None)]


def first_error(value):
    with pytest.raises(TraceError) as caught:
        read_trace(value, "t.json", "adk")
    return caught.value.diagnostics[0].render().split("\n")[0]


def event(*parts, author="agent"):
    return {"author": author, "content": {"role": "model", "parts": list(parts)}}


@pytest.mark.parametrize("value, message", [
    ({"events": [event({"function_response": {"id": "x9", "name": "f", "response": {}}})]},
     "B022 events[0].content.parts[0].function_response.id: a tool result for no tool call before it (id 'x9')"),
    ({"events": [event({"function_response": {"name": "f", "response": {}}})]},
     "B022 events[0].content.parts[0].function_response.name: a tool result for no unanswered call of 'f' before it"),
    ({"events": [event({"function_call": {"id": "a", "args": {}}})]},
     "B021 events[0].content.parts[0].function_call.name: missing"),
    ({"events": [event({"text": 5})]}, "B021 events[0].content.parts[0].text: must be a string, not a number"),
    ({"events": [{"content": "hi"}]}, "B021 events[0].content: must be an object, not a string"),
    ({"eval_cases": []}, "B026 eval_cases: an eval set of 0 eval cases: a trace is one run"),
    ({"eval_cases": [{"conversation": []}, {"conversation": []}]},
     "B026 eval_cases: an eval set of 2 eval cases: a trace is one run"),
    ({"conversation": [{"intermediate_data": {"intermediate_responses": [["agent"]]}}]},
     "B021 conversation[0].intermediate_data.intermediate_responses[0]: must be an [author, parts] pair, not an array"),
    ({"session": {}}, "B021 $: no \"events\", \"conversation\", \"eval_cases\" or \"eval_case_results\": not an ADK "
                      "session, eval case, eval set or eval result"),
])
def test_wrong_shapes_are_located(value, message):
    assert first_error(value) == f"t.json: {message}"


def test_an_eval_set_of_several_cases_is_read_as_one_trace_per_case():
    from admiss.traces.read import read_traces

    good = {"eval_id": "ok", "conversation": [{"user_content": {"parts": [{"text": "Cancel HX-1"}]},
                                               "final_response": {"parts": [{"text": "Cancelled."}]}}]}
    broken = {"eval_id": "bad", "conversation": [{"final_response": {"parts": [{"text": 3}]}}]}
    runs = read_traces({"eval_set_id": "s", "eval_cases": [good, broken, good]}, "set.json")
    assert [name for name, _ in runs] == ["set.json#eval_cases[0]", "set.json#eval_cases[1]", "set.json#eval_cases[2]"]
    first, second, third = (run for _, run in runs)
    assert [(s.type, s.ref.path) for s in first.steps] == [
        ("user", "eval_cases[0].conversation[0].user_content"), ("final_answer", "eval_cases[0].conversation[0].final_response")]
    assert isinstance(second, TraceError)
    assert second.render() == ("set.json#eval_cases[1]: B021 eval_cases[1].conversation[0].final_response.parts[0].text: "
                               "must be a string, not a number")
    assert third.steps[0].ref.path == "eval_cases[2].conversation[0].user_content"
    assert read_traces({"events": []}, "s.json") == [("s.json", read_trace({"events": []}, "s.json"))]
    [(name, error)] = read_traces({"turns": []}, "x.json")
    assert (name, error.diagnostics[0].code) == ("x.json", "B020")


def _session(*parts_by_event):
    return {"events": [{"author": author, "content": {"role": "model" if author != "user" else "user", "parts": parts}}
                       for author, parts in parts_by_event]}


def test_a_part_with_both_spellings_of_a_field_is_refused():
    call = {"id": "c1", "name": "book", "args": {}}
    both = _session(("agent", [{"function_call": call}]), ("user", [{
        "function_response": {"id": "c1", "name": "book", "response": {"error": "booking locked"}},
        "functionResponse": {"id": "c1", "name": "book", "response": {"status": "ok"}}}]))
    with pytest.raises(TraceError) as caught:
        read_trace(both, "t.json")
    assert caught.value.diagnostics[0].render().startswith(
        't.json: B021 events[1].content.parts[0].functionResponse: both "function_response" and "functionResponse"')


def test_a_function_response_without_response_has_no_result():
    # One rule across readers: an answer that carries no result is no_result, never ok.
    trace = read_trace(_session(("agent", [{"function_call": {"id": "c1", "name": "book", "args": {}}}]),
                                ("user", [{"function_response": {"id": "c1", "name": "book"}}])), "t.json")
    [call] = trace.steps
    assert (call.outcome, call.error, call.result_ref.path) == (
        "no_result", "function_response with no response", "events[1].content.parts[0]")


def test_user_role_function_responses_with_errors_are_read():
    trace = read_trace(_session(("agent", [{"function_call": {"name": "book", "args": {}}}]),
                                ("user", [{"function_response": {"name": "book", "response": {
                                    "status": "error", "error_message": "sold out"}}}])), "t.json")
    assert [(s.outcome, s.error) for s in trace.steps] == [("error", "sold out")]


def test_an_eval_cases_tool_uses_are_expected_not_failed():
    case = {"eval_id": "e1", "conversation": [{"invocation_id": "i1", "user_content": {"parts": [{"text": "go"}]},
                                              "intermediate_data": {"tool_uses": [{"name": "book", "args": {}}]},
                                              "final_response": {"parts": [{"text": "booked"}]}}]}
    trace = read_trace(case, "t.json")
    assert [s.type for s in trace.steps] == ["user", "final_answer"]
    assert [s.reason for s in trace.skipped] == [
        "expected tool call (an eval case's reference trajectory, not a call that ran)"]



def test_an_eval_result_is_read_from_its_actual_invocations():
    def invocation(response):
        return {"invocation_id": "i1", "user_content": {"parts": [{"text": "refund me"}]},
                "intermediate_data": {"tool_uses": [{"id": "a1", "name": "refund", "args": {}}],
                                      "tool_responses": [{"id": "a1", "name": "refund", "response": response}]},
                "final_response": {"parts": [{"text": "done"}]}}

    case_result = {"eval_id": "e1", "eval_metric_result_per_invocation": [
        {"actual_invocation": invocation({"error": "card declined"}), "expected_invocation": invocation({"ok": 1})}]}
    results = {"eval_set_result_id": "r1", "eval_set_id": "s1", "eval_case_results": [case_result, case_result]}
    [(first_name, first), (second_name, _)] = admiss.traces.read.read_traces(results, "r.json")
    assert (first_name, second_name) == ("r.json#eval_case_results[0]", "r.json#eval_case_results[1]")
    assert [(s.type, s.outcome, s.error) for s in first.steps] == [
        ("user", None, None), ("tool_call", "error", "card declined"), ("final_answer", None, None)]
    assert first.steps[1].ref.path == (
        "eval_case_results[0].eval_metric_result_per_invocation[0].actual_invocation.intermediate_data.tool_uses[0]")
