"""Reading any trace: format detection, the B020 error that names every format tried, a
format named by the caller, and raw bytes that never crash the reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import admiss
from admiss.bundle import parse_bundle_text
from admiss.errors import AdmissError, TraceError
from admiss.traces.read import FORMAT_NAMES, read_trace
from admiss.traces.steps import Trace


def diagnostics(value, fmt=None):
    with pytest.raises(TraceError) as caught:
        read_trace(value, "t.json", fmt)
    return [d.render() for d in caught.value.diagnostics]


def test_no_format_names_every_format_and_where_it_broke():
    shown = diagnostics({"conversation_id": "x", "turns": []})
    assert shown[0] == ("t.json: B020 not a trace in any known format (tried " + ", ".join(FORMAT_NAMES) + ")\n"
                        "  hint: name the format to see all of its errors (--trace FORMAT; in Python, "
                        "trace_format= or read_trace(..., format=))")
    assert [line.split(":")[1].split()[-1] for line in shown[1:]] == list(FORMAT_NAMES)
    assert "t.json: B020 not openai_chat: $: no \"messages\" array" in shown


def test_a_bundle_read_as_a_trace_is_told_to_admiss_check():
    # admiss import of a bundle file listed 14 "not FORMAT" lines and named no way out.
    shown = diagnostics({"evidence": [{"kind": "test_run", "source": "ci", "detail": "ok"}]})
    assert shown[0].splitlines()[1] == ('  hint: this is an evidence bundle (it has "evidence"), not a trace: '
                                        "check it with admiss check --rubric FILE (rubric.check(bundle) in Python)")


def test_unhashable_values_where_names_are_expected_are_not_a_crash():
    assert diagnostics([{"role": "user", "content": [{"type": ["text"], "text": "x"}]}]) == [
        "t.json: B021 $[0].content[0].type: must be a string, not an array"]
    spans = {"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [
        {"key": "gen_ai.operation.name", "value": {"arrayValue": {"values": []}}}]}]}]}]}
    # Read without a crash, and refused: a span with no GenAI operation gives nothing to read.
    assert diagnostics(spans)[0].startswith("t.json: B031 resourceSpans: 1 spans, none with a gen_ai.operation.name")


def test_unknown_format_name_suggests_the_close_one():
    assert diagnostics([], "openai-chat") == ["t.json: B024 no trace format 'openai-chat'\n"
                                              "  hint: did you mean 'openai_chat'?"]


def test_a_format_that_is_not_a_name():
    assert diagnostics([], ["openai_chat"]) == ["t.json: B024 no trace format '['openai_chat']'\n"
                                                "  hint: formats: " + ", ".join(FORMAT_NAMES)]


def test_a_line_of_a_batch_is_located_in_its_file():
    from admiss.traces.build import located

    line = '[{"role": "tool", "tool_call_id": "c1", "content": "ok"}]'
    with pytest.raises(TraceError) as caught:
        read_trace(json.loads(line), "batch.jsonl:5")
    error = located(caught.value, line, line_offset=4)
    assert error.diagnostics[0].location() == "batch.jsonl:5:5:35"
    assert error.render().split("\n")[1:3] == ["  " + line, "  " + " " * 34 + "^"]


def test_a_named_format_reports_its_own_errors():
    assert diagnostics({"turns": []}, "openai_chat")[0].startswith("t.json: B021 $: no messages")


def test_api_reads_a_value_or_a_path(tmp_path):
    value = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(value))
    assert admiss.read_trace(value) == admiss.read_trace(path) == admiss.read_trace(str(path), format="openai_chat")
    assert admiss.read_trace(value).final_answer == "hello"


def test_api_file_errors_are_located(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('[{"role": "user",\n  "content": }]')
    with pytest.raises(AdmissError) as caught:
        admiss.read_trace(broken)
    assert caught.value.diagnostics[0].code == "B001"
    assert caught.value.render().startswith(f"{broken}:2:14: B001 invalid JSON")
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'[{"role": "user", "content": "caf\xe9"}]')
    with pytest.raises(AdmissError) as caught:
        admiss.read_trace(latin)
    assert caught.value.diagnostics[0].file == str(latin)
    with pytest.raises(AdmissError) as caught:
        admiss.read_trace(tmp_path / "missing.json")
    assert caught.value.diagnostics[0].code == "E001"


def test_deeply_nested_file_is_a_located_error(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"messages": ' + "[" * 200_000 + "]" * 200_000 + "}")
    with pytest.raises(AdmissError) as caught:
        admiss.read_trace(deep)
    assert caught.value.diagnostics[0].file == str(deep)


def test_deeply_nested_value_built_in_python_is_a_located_error():
    value = []
    for _ in range(100_000):
        value = [value]
    with pytest.raises(TraceError) as caught:
        read_trace({"messages": [{"role": "user", "content": value}]}, "t.json")
    assert caught.value.diagnostics[0].file == "t.json"


# Fragments of every format, so random bytes often come close to a real trace.
FRAGMENTS = st.sampled_from([b'{"messages": [', b'{"role": "tool", "tool_call_id": "c1", "content": "x"}',
                             b'{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", '
                             b'"arguments": "{"}}]}', b'"type": "function_call"', b'{"resourceSpans": [',
                             b'"events": [', b'"eval_cases": [', b'"content": [{"type": "tool_use"', b"]", b"}",
                             b",", b"null", b'"\xff"', b"1e999", b'"\\ud800"', b"[" * 50])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(FRAGMENTS, st.binary(max_size=8)), max_size=12).map(b"".join))
def test_raw_bytes_give_a_trace_or_an_admiss_error(raw):
    try:
        result = read_trace(parse_bundle_text(raw, "fuzz.json"), "fuzz.json")
    except AdmissError as error:
        assert error.diagnostics and all(d.file == "fuzz.json" for d in error.diagnostics)
    else:
        assert isinstance(result, Trace)


def test_errors_in_a_file_point_at_line_and_column(tmp_path):
    trace = tmp_path / "chat.json"
    trace.write_text('{"messages": [\n  {"role": "user", "content": "hi"},\n'
                     '  {"role": "tool", "tool_call_id": "call_9", "content": "ok"}\n]}\n')
    with pytest.raises(TraceError) as caught:
        admiss.read_trace(trace)
    assert str(caught.value) == (
        f"{trace}:3:36: B022 messages[1].tool_call_id: a tool result for no tool call before it (id 'call_9')\n"
        '    {"role": "tool", "tool_call_id": "call_9", "content": "ok"}\n'
        "  " + " " * 35 + "^\n"
        "  hint: a result must come after the tool call it answers, naming the call's id")


def test_a_missing_field_points_at_its_holder_and_b020_stays_unlocated(tmp_path):
    trace = tmp_path / "chat.json"
    trace.write_text('[\n {"role": "user", "content": "hi"},\n {"content": "no role"}\n]')
    with pytest.raises(TraceError) as caught:
        admiss.read_trace(trace, format="openai_chat")
    assert caught.value.diagnostics[0].location() == f"{trace}:3:2"
    trace.write_text('{"turns": []}')
    with pytest.raises(TraceError) as caught:
        admiss.read_trace(trace)
    assert {d.location() for d in caught.value.diagnostics} == {str(trace)}


@pytest.mark.parametrize("path, expected", [
    ("messages[1].content[1].a", "2"), ("messages[1].role", '"tool"'), ("messages[9]", "["), ("$", "{"),
    ("messages[0].missing", "{"), ('messages[1].attributes["x.y"][0]', "{"),
])
def test_json_offset_finds_the_deepest_element_on_the_path(path, expected):
    from admiss.traces.build import json_offset

    text = '{"messages": [\n {"role": "user", "content": "hi"},\n {"role": "tool", "content": [1, {"a": 2}]}\n]}'
    assert text[json_offset(text, path):].startswith(expected)


FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("*.json")) + sorted(
    (Path(__file__).parent / "fixtures" / "public").glob("langfuse_*.json"))
JUNK = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6)),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                    max_leaves=6)


def _subtrees(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _subtrees(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _subtrees(item, path + (i,))


def _replaced(value, path, new):
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
def test_fixtures_with_a_part_replaced_give_a_trace_or_a_located_error(fixture):
    original = json.loads(fixture.read_text(encoding="utf-8"))
    paths = list(_subtrees(original))

    @settings(max_examples=150, deadline=None)
    @given(st.sampled_from(paths), JUNK, st.sampled_from([None, *FORMAT_NAMES]))
    def replaced(path, junk, fmt):
        try:
            result = read_trace(_replaced(original, path, junk), "t.json", fmt)
        except TraceError as error:
            assert error.diagnostics and all(d.file == "t.json" and d.code.startswith("B0") for d in error.diagnostics)
        else:
            assert isinstance(result, Trace)

    replaced()


# Results of every shape that could hide an error from a quick look at the text: "error" as
# a key, a value or a first word, spelled with escapes, nested, in any case.
_SIGNAL_KEYS = ["error", "status", "message", "error_message", "x", "isError", "is_error", "result", "response_type",
                "error_details", "content"]
_SIGNAL_VALUES = ["error", "Error", "eRrOr", "ok", "", "errors", "confirmed", "Error: boom",
                  "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN", "Tool execution was not approved.",
                  "An error occurred while running the tool. Please try again."]
_error_texts = st.one_of(
    st.recursive(st.none() | st.booleans() | st.integers() | st.sampled_from(_SIGNAL_VALUES),
                 lambda inner: st.lists(inner, max_size=3)
                 | st.dictionaries(st.sampled_from(_SIGNAL_KEYS), inner, max_size=3),
                 max_leaves=6).map(json.dumps),
    st.text(alphabet="errorERO{}[]\":, \\u0065", max_size=30),
)


@settings(max_examples=400, deadline=None)
@given(text=_error_texts, escaped=st.booleans())
def test_a_results_error_is_found_without_parsing_the_same_as_with(text, escaped):
    from admiss.traces.build import error_in, text_error
    from admiss.traces.steps import result_value

    if escaped:  # the same JSON with every "e" written as an escape
        text = text.replace("e", "\\u0065")
    assert text_error(text) == error_in(result_value(text))


def _first_wins(pairs):
    found = {}
    for key, value in pairs:
        found.setdefault(key, value)
    return found


@settings(max_examples=400, deadline=None)
@given(fields=st.lists(st.tuples(st.sampled_from(_SIGNAL_KEYS), st.none() | st.booleans() | st.sampled_from(_SIGNAL_VALUES)),
                       min_size=1, max_size=4))
def test_a_result_that_repeats_a_key_is_an_error_whenever_either_reading_of_it_is(fields):
    """The quick look at a result's text may skip a repeated key only where no decoder,
    keeping the first or the last of it, would read an error."""
    from admiss.traces.build import error_in, text_error

    text = "{" + ", ".join(f"{json.dumps(key)}: {json.dumps(value)}" for key, value in fields) + "}"
    if error_in(json.loads(text)) is not None or error_in(json.loads(text, object_pairs_hook=_first_wins)) is not None:
        assert text_error(text) is not None


def test_a_result_parsed_for_a_key_alone_no_more():
    """A booking's "status": "confirmed" says nothing of an error: the result is not parsed
    (so a key given twice elsewhere in it is no failure either; one that could be is above)."""
    from admiss.traces.build import text_error

    assert text_error('{"status": "confirmed", "fare": 1, "fare": 2}') is None
    assert text_error('{"status": "ERROR", "fare": 1, "fare": 2}') is not None


def test_a_step_reference_is_a_value():
    from admiss.traces.steps import StepRef

    first, again = StepRef("openai_chat", "messages[2]", 2, "call_1"), StepRef("openai_chat", "messages[2]", 2, "call_1")
    assert first == again and hash(first) == hash(again) and {first: "seen"}[again] == "seen"
    assert first != StepRef("openai_chat", "messages[2]", 2, "call_2")


def test_only_a_run_that_ends_on_the_agents_text_has_a_final_answer():
    call = {"role": "assistant", "content": "I'll look up the weather.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
    ended_on_a_result = read_trace([{"role": "user", "content": "weather?"}, call, result], "t.json")
    assert ended_on_a_result.final_answer is None
    assert [s.type for s in ended_on_a_result.steps] == ["user", "assistant_text", "tool_call"]
    answered = read_trace([call, result, {"role": "assistant", "content": "It is sunny."}], "t.json")
    assert answered.final_answer == "It is sunny."
    assert read_trace([call, result, {"role": "assistant", "content": "sunny"}, {"role": "user", "content": "ok"}],
                      "t.json").final_answer is None


def test_python_checks_every_case_of_an_eval_set():
    evalset = json.loads((Path(__file__).parent / "fixtures" / "adk_evalset.json").read_text())
    evalset["eval_cases"] = evalset["eval_cases"] * 2
    rubric = admiss.compile_source("PROPERTY p { ADMIT procedurally_sound_tool_call }")
    runs = rubric.check_runs(evalset, "set.json")
    assert [(name, report.verdict) for name, report in runs] == [
        ("set.json#eval_cases[0]", "pass"), ("set.json#eval_cases[1]", "pass")]
    assert [name for name, _ in rubric.import_runs([{"messages": []}, {"events": []}], "runs.json")] == [
        "runs.json#[0]", "runs.json#[1]"]
    with pytest.raises(TraceError):
        rubric.check(evalset)  # one report stands for one run: B026


@pytest.mark.parametrize("value", [
    [{"type": ["user"], "sessionId": "s"}],  # an unhashable type word, tested against a set of words
    {"resourceSpans": [{"scopeSpans": [{"spans": True}]}]},  # a field that must be an array, iterated
    {"resourceSpans": [{"scopeSpans": True}]},
])
def test_detection_refuses_odd_values_with_an_error_not_an_exception(value):
    with pytest.raises(TraceError) as raised:
        read_trace(value)
    assert raised.value.diagnostics[0].code in ("B020", "B021")  # no format, or OTel's shape broken
