"""Langfuse trace exports: Langfuse's own framework traces (tests/traces/fixtures/public/
SOURCES.md), the public API's shape of the same trace, and each error signal an
observation gives."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from admiss.errors import TraceError
from admiss.traces.read import detect, read_trace

PUBLIC = Path(__file__).parent / "fixtures" / "public"
AGENTS = "langfuse_openai_agents_2025_09_30.trace.json"
PYDANTIC = "langfuse_pydantic_ai_tools_2025_12_04.trace.json"
ADK = "langfuse_google_adk_2025_08_28.trace.json"


def load(name):
    return json.loads((PUBLIC / name).read_text())


def calls(trace):
    return [s for s in trace.steps if s.type == "tool_call"]


def tool_observation(value, tool):
    return next(o for o in value["observations"] if o["type"] == "TOOL" and tool in o["name"])


def test_an_agents_sdk_run_reads_its_tool_and_answer():
    trace = read_trace(load(AGENTS))
    assert trace.format == "langfuse" and trace.model == "gpt-4.1-2025-04-14"
    assert [s.type for s in trace.steps] == ["user", "tool_call", "final_answer"]
    call = trace.steps[1]
    assert (call.tool_name, call.args, call.result, call.outcome) == (
        "get_weather", {"city": "Tokyo"}, "The weather in Tokyo is sunny.", "ok")
    assert call.ref.span_id == "5b99c3e3411ed17b" and trace.prompt == "What's the weather in Tokyo?"
    assert trace.final_answer.startswith("The weather in Tokyo is currently sunny.")


def test_tool_names_and_ids_come_from_the_spans_attributes():
    trace = read_trace(load(PYDANTIC))
    assert [(c.tool_name, c.ref.tool_call_id, c.args) for c in calls(trace)] == [
        ("get_pun_suggestion", "call_X0OSgjUukT5inyEQvuZQnHrk", {"topic": "programming"}),
        ("get_dad_joke_suggestion", "call_WxZcCvSDhGT4RJHlcU01k10x", {"topic": "programming"}),
        ("get_one_liner_suggestion", "call_aRaObiWKKt6GzgDkkUl3bu1Q", {"topic": "programming"})]
    assert all(c.outcome == "ok" for c in calls(trace))


def test_a_run_that_ends_on_a_tool_call_has_no_final_answer():
    # pydantic-ai's evaluator answers through its output tool, final_result: no TOOL observation ran it.
    trace = read_trace(load(PYDANTIC))
    assert trace.final_answer is None and trace.steps[-1].type == "user"
    assert any("asks for tools" in s.reason or "tool calls" in s.reason for s in trace.skipped)


def test_the_public_apis_shape_reads_the_same():
    """GET /api/public/traces/{id} gives the trace's fields with its observations beside them
    (TraceWithFullDetails in Langfuse's API definition), and its fields as values, not text."""
    value = load(AGENTS)
    api = dict(value["trace"], observations=value["observations"])
    for observation in api["observations"]:
        for key in ("input", "output", "metadata"):
            if isinstance(observation.get(key), str):
                try:
                    observation[key] = json.loads(observation[key])
                except ValueError:
                    pass
    assert detect(api).NAME == "langfuse"
    mine, theirs = read_trace(api), read_trace(load(AGENTS))
    assert [(s.type, s.text, s.tool_name, s.args, s.result, s.outcome) for s in mine.steps] == [
        (s.type, s.text, s.tool_name, s.args, s.result, s.outcome) for s in theirs.steps]


def test_an_error_level_tool_is_a_failed_call_with_its_status_message():
    value = load(AGENTS)
    tool = tool_observation(value, "get_weather")
    tool.update(level="ERROR", statusMessage="ConnectionError: weather service down")
    call = calls(read_trace(value))[0]
    assert (call.outcome, call.error) == ("error", "ConnectionError: weather service down")


def test_an_error_level_tool_without_a_message_or_output_still_failed():
    value = load(AGENTS)
    tool = tool_observation(value, "get_weather")
    tool.update(level="ERROR", statusMessage=None, output=None)
    call = calls(read_trace(value))[0]
    assert (call.outcome, call.error) == ("error", "level ERROR")


@pytest.mark.parametrize("output,reason", [
    ("An error occurred while running the tool. Please try again.", "An error occurred"),
    ('"Error: city not found"', "Error: city not found"),  # a JSON string, as the download writes one
    ('{"error": "rate limited"}', "rate limited"),
    ({"isError": True, "content": [{"type": "text", "text": "no such city"}]}, "no such city"),
    ('{"status": "ok", "status": "error"}', "twice"),
])
def test_a_tool_output_is_judged_by_the_generic_rule(output, reason):
    value = load(AGENTS)
    tool_observation(value, "get_weather")["output"] = output
    call = calls(read_trace(value))[0]
    assert call.outcome == "error" and reason in call.error


def test_a_warning_is_no_failure():
    value = load(AGENTS)
    tool_observation(value, "get_weather").update(level="WARNING", statusMessage="slow")
    assert calls(read_trace(value))[0].outcome == "ok"


def test_a_tool_with_no_output_has_no_result():
    value = load(ADK)
    tool_observation(value, "say_hello")["output"] = None
    assert calls(read_trace(value))[0].outcome == "no_result"


def test_a_failed_observation_that_is_no_tool_is_listed_with_its_reason():
    value = load(AGENTS)
    generation = next(o for o in value["observations"] if o["type"] == "GENERATION" and "function_call_output" in o["input"])
    generation.update(level="ERROR", statusMessage="RateLimitError: 429")
    trace = read_trace(value)
    assert trace.final_answer is None
    assert "GENERATION observation that failed: RateLimitError: 429" in [s.reason for s in trace.skipped]


@pytest.mark.parametrize("level", ["error", "FATAL", 3, ""])
def test_a_level_langfuse_does_not_have_is_refused(level):
    value = load(AGENTS)
    tool_observation(value, "get_weather")["level"] = level
    with pytest.raises(TraceError) as caught:
        read_trace(value, "t.json")
    index = value["observations"].index(tool_observation(value, "get_weather"))
    assert caught.value.diagnostics[0].code == "B021"
    assert caught.value.diagnostics[0].message.startswith(f"observations[{index}].level: unknown level")


def test_reused_ids_are_separate_calls():
    """A TOOL observation holds its call and its result: nothing is paired by id, so a call id
    (or an observation id) given twice is two calls, each with its own result."""
    value = load(AGENTS)
    tool = tool_observation(value, "get_weather")
    again = copy.deepcopy(tool)
    again.update(startTime="2025-09-30T09:04:01.500Z", output="Error: second call failed")
    value["observations"].append(again)
    trace = read_trace(value)
    assert [(c.ref.span_id, c.outcome) for c in calls(trace)] == [(tool["id"], "ok"), (tool["id"], "error")]


@pytest.mark.parametrize("value,path", [
    ({"trace": {}, "observations": ["e5a76f27f51ad40e"]}, "observations[0]"),
    ({"trace": {}, "observations": [{"name": "x"}]}, "observations[0].type"),
    ({"trace": {}, "observations": [{"type": "TOOL", "input": "{}"}]}, "observations[0].name"),
])
def test_a_broken_observation_is_refused_at_its_path(value, path):
    with pytest.raises(TraceError) as caught:
        read_trace(value, "t.json")
    assert caught.value.diagnostics[0].code == "B021" and caught.value.diagnostics[0].message.startswith(path + ":")


def test_detection_says_why_a_value_is_not_a_langfuse_trace():
    with pytest.raises(TraceError) as caught:
        read_trace({"observations": []}, "t.json")
    messages = [d.message for d in caught.value.diagnostics]
    assert 'not langfuse: $: neither a "trace" object (the UI\'s download) nor the trace\'s "id" (the public API\'s)' \
        in messages


def test_deep_hostile_values_never_raise():
    deep = "[" * 50000 + "]" * 50000
    value = {"trace": {}, "observations": [
        {"type": "GENERATION", "input": deep, "output": {"content": deep}},
        {"type": "TOOL", "name": "t", "input": deep, "output": deep, "metadata": '{"attributes": ' + deep + "}"}]}
    trace = read_trace(value, "t.json")
    assert calls(trace)[0].args == {"input": deep}


def test_text_before_tools_that_never_ran_is_no_final_answer():
    """The model says it will look it up and asks for a tool; the trace ends there."""
    value = load(AGENTS)
    first = min((o for o in value["observations"] if o["type"] == "GENERATION"), key=lambda o: o["startTime"])
    response = json.loads(first["output"])
    response["output"].insert(0, {"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": "Let me look up the weather."}]})
    first["output"] = json.dumps(response)
    value["observations"] = [o for o in value["observations"] if o["type"] != "TOOL" and (
        o["type"] != "GENERATION" or o is first)]
    trace = read_trace(value)
    assert [s.type for s in trace.steps] == ["user", "assistant_text"] and trace.final_answer is None
    assert trace.steps[-1].text == "Let me look up the weather."


def test_a_later_turns_user_message_is_read_once_in_its_place():
    """Each generation's input holds the conversation so far: only what follows its last
    assistant message is new."""
    first = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Oslo?"}]
    second = first + [{"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "And Bergen?"}]
    value = {"trace": {"id": "t"}, "observations": [
        {"type": "GENERATION", "startTime": "1", "input": json.dumps(first), "output": '{"role": "assistant", "content": "Sunny."}'},
        {"type": "GENERATION", "startTime": "2", "input": json.dumps(second), "output": '"Rainy."'}]}
    trace = read_trace(value)
    assert [(s.type, s.text) for s in trace.steps] == [
        ("system", "Be brief."), ("user", "Weather in Oslo?"), ("assistant_text", "Sunny."), ("user", "And Bergen?"),
        ("final_answer", "Rainy.")]


def test_a_gemini_function_call_part_asks_for_a_tool():
    """ADK's model response says a word and asks for say_hello; the trace ends there."""
    value = load(ADK)
    asking = next(o for o in value["observations"] if o["type"] == "GENERATION" and "function_call" in o["output"])
    response = json.loads(asking["output"])
    response["content"]["parts"].insert(0, {"text": "Let me greet you."})
    asking["output"] = json.dumps(response)
    value["observations"] = [asking]
    trace = read_trace(value)
    assert [s.type for s in trace.steps] == ["user", "assistant_text"] and trace.final_answer is None


def test_an_array_of_traces_is_one_run_each():
    from admiss.traces.read import read_traces

    runs = read_traces([load(AGENTS), load(ADK)], "many.json")
    assert [(name, [c.tool_name for c in calls(trace)]) for name, trace in runs] == [
        ("many.json#[0]", ["get_weather"]), ("many.json#[1]", ["say_hello"])]


# Agno, Koog and LangGraph record a tool's execution as a SPAN observation (SOURCES.md).
AGNO = "langfuse_agno_2025_06_11.trace.json"
KOOG = "langfuse_koog_2025_08_26.trace.json"
LANGGRAPH_JS = "langfuse_langgraph_js_2025_10_30.trace.json"
LANGGRAPH_PY = "langfuse_langgraph_python_2025_08_22.trace.json"
BEEAI = "langfuse_beeai_2025_08_01.trace.json"


def span_named(value, name):
    return next(o for o in value["observations"] if o["type"] == "SPAN" and o["name"] == name)


def test_a_tool_span_is_the_call_its_generation_asked_for():
    # Koog's span names its call's id; the request is the generation's, the result the span's.
    trace = read_trace(load(KOOG))
    assert [(c.tool_name, c.ref.tool_call_id, c.args, c.result, c.outcome) for c in calls(trace)] == [
        ("ByeTool", "call_dOeEHJDI0liHrCdFWTpkTsuO", {"name": "Bob"}, "Bye my dear Bob!", "ok"),
        ("HelloTool", "call_n2HaWg9KFP0BZDqXv6G4b3nJ", {"name": "Bob"}, "Hello my darling Bob!", "ok")]
    assert [c.result_ref.span_id for c in calls(trace)] == ["33188493784a060d", "66f269083a2fff81"]
    # Koog writes the calls as its message's content text: they are no assistant text.
    assert [s.type for s in trace.steps] == ["system", "user", "tool_call", "tool_call", "final_answer"]


def test_a_langgraph_tool_span_is_paired_by_its_tool_messages_id_and_gives_its_content():
    trace = read_trace(load(LANGGRAPH_JS))
    (call,) = calls(trace)
    assert (call.tool_name, call.ref.tool_call_id, call.args, call.result) == (
        "get_weather", "call_VEZJgIQLgzcb80IIyQJm7JCi", {"city": "San Francisco"},
        "It's always sunny in San Francisco!")
    assert call.result_ref.span_id == "c3a547a43cb47b18"  # not the "tools" node around it


@pytest.mark.parametrize("name,tool", [(KOOG, "tool.ByeTool"), (LANGGRAPH_JS, "get_weather"),
                                       (LANGGRAPH_PY, "Web-Search"), (AGNO, "duckduckgo_search")])
def test_an_error_level_tool_span_is_a_failed_call(name, tool):
    value = load(name)
    span_named(value, tool).update(level="ERROR", statusMessage="TimeoutError: tool took too long")
    failed = [c for c in calls(read_trace(value)) if c.outcome == "error"]
    assert [c.error for c in failed] == ["TimeoutError: tool took too long"]


def test_a_tool_span_whose_tool_message_has_status_error_failed():
    # LangGraph's ToolNode answers a tool's exception with a ToolMessage of status "error".
    value = load(LANGGRAPH_JS)
    span = span_named(value, "get_weather")
    span["output"] = span["output"].replace('"status":"success","content":"It\'s always sunny in San Francisco!"',
                                            '"status":"error","content":"Error: ValueError(\'no such city\')"')
    (call,) = calls(read_trace(value))
    assert (call.outcome, call.error) == ("error", "Error: ValueError('no such city')")
    value = load(LANGGRAPH_PY)
    span = span_named(value, "Web-Search")
    span["output"] = span["output"].replace('"status": "success"', '"status": "error"')
    (call,) = calls(read_trace(value))
    assert call.outcome == "error"


def test_a_span_with_a_tools_name_but_other_arguments_and_no_id_is_no_call():
    # Agno's span has no call id: only the arguments tie it to the request.
    value = load(AGNO)
    span_named(value, "duckduckgo_search")["input"] = '{"query": "something else"}'
    trace = read_trace(value)
    assert calls(trace) == [] and "SPAN observation" in [s.reason for s in trace.skipped]


def test_a_span_no_generation_asked_for_is_no_call():
    value = load(KOOG)
    for observation in value["observations"]:  # the model's request taken out: its content is text again
        if observation["type"] == "GENERATION" and "ByeTool" in str(observation["output"]):
            observation["output"] = json.dumps([{"role": "assistant", "content": "Hi Bob!"}])
    trace = read_trace(value)
    assert calls(trace) == []


def test_a_span_openinference_marks_as_no_tool_is_no_call():
    value = load(AGNO)
    span = span_named(value, "duckduckgo_search")
    assert '"openinference.span.kind":"TOOL"' in span["metadata"]
    span["metadata"] = span["metadata"].replace('"openinference.span.kind":"TOOL"',
                                                '"openinference.span.kind":"AGENT"')
    assert calls(read_trace(value)) == []


def test_a_span_around_a_tool_observation_is_not_a_second_call():
    # A wrapper SPAN with the tool's name and input, whose TOOL observation inside it failed:
    # read as a call of its own, its sound output beside the failed TOOL was a false pass.
    value = load(AGNO)
    span = span_named(value, "duckduckgo_search")
    value["observations"].append(dict(span, id="0000000000tool01", type="TOOL", parentObservationId=span["id"],
                                      level="ERROR", statusMessage="RateLimitError: search quota spent",
                                      output=None))
    failed = [(c.tool_name, c.outcome, c.error) for c in calls(read_trace(value))]
    assert failed == [("duckduckgo_search", "error", "RateLimitError: search quota spent")]


def test_a_tool_span_whose_id_is_no_text_is_read_without_a_crash():
    # An id that is a list was looked up among the TOOL observations' parents: TypeError.
    value = load(AGNO)
    span_named(value, "duckduckgo_search")["id"] = []
    assert [c.tool_name for c in calls(read_trace(value))] == ["duckduckgo_search"]


def test_beeais_tool_calls_are_not_read():
    # BeeAI's agent.react.update spans name the tool the agent chose (OpenInference kind AGENT)
    # and its generations record no output: no request is read, so no span is a call, and
    # its two tool calls (Wikipedia, OpenMeteoTool) are missing (docs/traces.md says so).
    trace = read_trace(load(BEEAI))
    assert calls(trace) == [] and trace.final_answer is None


def test_deep_hostile_tool_spans_never_raise():
    deep = "[" * 50000 + "]" * 50000
    asked = {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": deep}}]}
    value = {"trace": {}, "observations": [
        {"type": "GENERATION", "startTime": "1", "output": json.dumps(asked)},
        {"type": "GENERATION", "startTime": "2", "output": deep},
        {"type": "SPAN", "name": "t", "startTime": "3", "input": deep, "output": deep}]}
    (call,) = calls(read_trace(value, "t.json"))
    assert call.tool_name == "t" and call.outcome == "bad_args"
