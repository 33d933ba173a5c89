"""Every reader reads in linear time: the time to read a trace of 8n steps over the time
for n steps stays near 8 (a quadratic reader gives 64). A ratio, not an absolute time, so
a slow or busy machine moves both readings alike."""

from __future__ import annotations

import json
import time

import pytest

from admiss.traces.read import read_trace


def chat(n):
    messages = []
    for i in range(n):
        messages.append({"role": "assistant", "content": "step", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "t", "arguments": '{"i": 1}'}}]})
        messages.append({"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'})  # one id, reused
    return messages


def responses(n):
    items = []
    for i in range(n):
        items.append({"type": "function_call", "call_id": f"c{i}", "name": "t", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": "ok"})
    return {"model": "m", "output": items}


def anthropic(n):
    messages = []
    for i in range(n):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "t", "input": {}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]})
    return {"messages": messages}


def otel(n):
    def attribute(key, value):
        return {"key": key, "value": {"stringValue": value}}

    spans = [{"spanId": f"{i}", "startTimeUnixNano": str(i), "attributes": [
        attribute("gen_ai.operation.name", "execute_tool"), attribute("gen_ai.tool.name", "t"),
        attribute("gen_ai.tool.call.id", "c1"), attribute("gen_ai.tool.call.result", "ok")]} for i in range(n)]
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def adk(n):
    calls = [{"function_call": {"name": f"t{i % 3}", "args": {}}} for i in range(n)]  # no ids: matched by name
    answers = [{"function_response": {"name": f"t{i % 3}", "response": {"ok": True}}} for i in range(n)]
    return {"events": [{"author": "agent", "content": {"role": "model", "parts": calls}},
                       {"author": "user", "content": {"role": "user", "parts": answers}}]}


def langfuse(n):
    observations = []
    for i in range(n):  # one observation id and one call id throughout: nothing is paired by them
        observations.append({"type": "GENERATION", "startTime": f"{i:08d}", "input": [{"role": "user", "content": "u"}],
                             "output": {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}})
        observations.append({"type": "TOOL", "name": "t", "startTime": f"{i:08d}", "id": "o1", "input": "{}",
                             "output": "ok", "metadata": {"attributes": {"gen_ai.tool.call.id": "c1"}}})
    return {"trace": {"id": "t"}, "observations": observations}


def best_seconds(value) -> float:
    value = json.loads(json.dumps(value))
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        read_trace(value, "t.json")
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize("make", [chat, responses, anthropic, otel, adk, langfuse], ids=lambda make: make.__name__)
def test_reading_time_grows_linearly(make):
    n = 1500
    ratio = best_seconds(make(8 * n)) / best_seconds(make(n))
    assert ratio < 24, f"8x the steps took {ratio:.1f}x the time"
