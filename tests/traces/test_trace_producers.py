"""Differential: every trace a real producer wrote (tests/traces/producers/ regenerates
them) read through `admiss import`, its tool calls, failed calls and final answer compared
with counts this test computes from the raw file in a few plain lines each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def spans(value):
    return [span for resource in value["resourceSpans"] for scope in resource["scopeSpans"] for span in scope["spans"]]


def attribute(span, key):
    return next((list(a["value"].values())[0] for a in span.get("attributes", []) if a["key"] == key), None)


def otel_expected(value):
    tools = [s for s in spans(value) if attribute(s, "gen_ai.operation.name") == "execute_tool"]
    failed = [s for s in tools if s.get("status", {}).get("code") in ("STATUS_CODE_ERROR", 2)
              or attribute(s, "gen_ai.tool.call.result") is None]
    return len(tools), len(failed), None


def adk_session_expected(value):
    parts = [(event.get("author"), part) for event in value["events"] for part in event["content"]["parts"]]
    calls = [part for _, part in parts if "function_call" in part]
    failed = [part for _, part in parts if "function_response" in part
              and part["function_response"]["response"].get("status") == "error"]
    author, last = parts[-1]
    return len(calls), len(failed), last.get("text") if author != "user" else None


CASES = {
    "otel_pydantic_ai.json": otel_expected,
    "otel_adk.json": otel_expected,
    "adk_session_real.json": adk_session_expected,
}


def imported(admiss_cli, path):
    rubric = Path(__file__).parent / "producers" / "any.rubric"
    ran = admiss_cli("import", "--rubric", rubric, path)
    return ran, json.loads(ran.out) if ran.code == 0 else None


@pytest.mark.parametrize("name", sorted(CASES))
def test_import_agrees_with_plain_counts(admiss_cli, name):
    path = FIXTURES / name
    ran, bundle = imported(admiss_cli, path)
    assert ran.code == 0, ran.err
    evidence = bundle["evidence"]
    calls = [e for e in evidence if e["kind"] in ("procedurally_sound_tool_call", "flawed_tool_call")]
    failed = [e for e in calls if e["kind"] == "flawed_tool_call"]
    answers = [e["detail"] for e in evidence if e["kind"] == "final_answer"]
    tools, failures, answer = CASES[name](json.loads(path.read_text()))
    assert (len(calls), len(failed)) == (tools, failures) and tools > 0
    assert answers == ([answer] if answer else [])


def test_spans_without_content_are_refused_not_read_as_empty(admiss_cli):
    ran, _ = imported(admiss_cli, FIXTURES / "otel_openai_v2_default.json")
    assert ran.code == 2 and "B031" in ran.err and "3 of them model calls with no messages" in ran.err
    assert "Traceback" not in ran.err
