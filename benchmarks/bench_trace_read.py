"""Reading traces: json.loads of each line of a .jsonl of traces, against json.loads plus
admiss.read_trace, for each trace format.

Each file holds 200 traces of 40 steps and about 20 KB (13 turns of a customer-service run:
the user asks, the agent calls a lookup tool whose JSON result carries a booking history,
then answers), the shape issue 9 sets its speed target on. The target (reading and
checking at 0.3x the speed of json.loads alone) covers checking too; this section shows
the readers' share of it.
"""

from __future__ import annotations

import gc
import json
import statistics
from typing import Any, Callable

from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, ratio_text, seconds_text
from benchmarks.timing import time_interleaved

TRACES, TURNS = 200, 13
# Repeats of each format's pair of timings, in a quick run too: with the quick run's 3, one
# format read 0.24x in one quiet run and 0.37x in the next.
MIN_REPEATS = 11


def _record(k: int, turn: int) -> dict:
    """A tool result: a booking and its history, about 1.1 KB as JSON."""
    history = [{"at": f"2025-09-{day:02d}T10:00:00Z", "event": "fare change", "amount_eur": 12.5 + day,
                "agent": f"desk-{(k + day) % 7}"} for day in range(1, 10)]
    return {"booking_id": f"NR-{k}-{turn}", "status": "confirmed", "fare_eur": 84.5, "refundable": True,
            "history": history}


def _openai_chat(k: int) -> Any:
    messages = [{"role": "system", "content": "You are the support agent for Northwind Rail."}]
    for t in range(TURNS):
        call = f"call_{k}_{t}"
        messages += [
            {"role": "user", "content": f"What is the status of booking NR-{k}-{t}?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": call, "type": "function", "function": {
                "name": "lookup_booking", "arguments": json.dumps({"booking_id": f"NR-{k}-{t}"})}}]},
            {"role": "tool", "tool_call_id": call, "content": json.dumps(_record(k, t))},
            {"role": "assistant", "content": f"Booking NR-{k}-{t} is confirmed and refundable."},
        ]
    return {"model": "gpt-4.1", "messages": messages}


def _openai_responses(k: int) -> Any:
    items = []
    for t in range(TURNS):
        call = f"call_{k}_{t}"
        items += [
            {"role": "user", "content": f"What is the status of booking NR-{k}-{t}?"},
            {"type": "function_call", "id": f"fc_{t}", "call_id": call, "name": "lookup_booking",
             "arguments": json.dumps({"booking_id": f"NR-{k}-{t}"})},
            {"type": "function_call_output", "call_id": call, "output": json.dumps(_record(k, t))},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": f"Booking NR-{k}-{t} is confirmed and refundable."}]},
        ]
    return {"model": "gpt-5-mini", "instructions": "You are the support agent.", "input": items[:-1],
            "output": items[-1:]}


def _anthropic(k: int) -> Any:
    messages = []
    for t in range(TURNS):
        call = f"toolu_{k}_{t}"
        messages += [
            {"role": "user", "content": f"What is the status of booking NR-{k}-{t}?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": call, "name": "lookup_booking",
                                               "input": {"booking_id": f"NR-{k}-{t}"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                          "content": json.dumps(_record(k, t))}]},
            {"role": "assistant", "content": [{"type": "text", "text": f"Booking NR-{k}-{t} is confirmed."}]},
        ]
    return {"model": "claude-sonnet-4-5", "system": "You are the support agent.", "messages": messages}


def _otel_genai(k: int) -> Any:
    def attributes(**values: str) -> list:
        return [{"key": key, "value": {"stringValue": value}} for key, value in values.items()]

    spans, history = [], []
    for t in range(TURNS):
        call = f"call_{k}_{t}"
        history.append({"role": "user", "parts": [{"type": "text", "content": f"Status of NR-{k}-{t}?"}]})
        output = {"role": "assistant", "finish_reason": "tool_call", "parts": [
            {"type": "tool_call", "id": call, "name": "lookup_booking", "arguments": {"booking_id": f"NR-{k}-{t}"}}]}
        spans.append({"spanId": f"{2 * t:016x}", "startTimeUnixNano": str(1000 * (3 * t + 1)), "attributes": attributes(
            **{"gen_ai.operation.name": "chat", "gen_ai.response.model": "gpt-4.1",
               "gen_ai.input.messages": json.dumps(history[-1:]), "gen_ai.output.messages": json.dumps([output])})})
        spans.append({"spanId": f"{2 * t + 1:016x}", "startTimeUnixNano": str(1000 * (3 * t + 2)), "attributes": attributes(
            **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_booking",
               "gen_ai.tool.call.id": call, "gen_ai.tool.call.result": json.dumps(_record(k, t))})})
        answer = {"role": "assistant", "finish_reason": "stop",
                  "parts": [{"type": "text", "content": f"Booking NR-{k}-{t} is confirmed."}]}
        spans.append({"spanId": f"a{t:015x}", "startTimeUnixNano": str(1000 * (3 * t + 3)), "attributes": attributes(
            **{"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([answer])})})
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}


def _adk(k: int) -> Any:
    events = []
    for t in range(TURNS):
        call = f"adk-{k}-{t}"
        events += [
            {"id": f"u{t}", "author": "user", "content": {"role": "user", "parts": [{"text": f"Status of NR-{k}-{t}?"}]}},
            {"id": f"c{t}", "author": "agent", "content": {"role": "model", "parts": [
                {"functionCall": {"id": call, "name": "lookup_booking", "args": {"booking_id": f"NR-{k}-{t}"}}}]}},
            {"id": f"r{t}", "author": "agent", "content": {"role": "user", "parts": [
                {"functionResponse": {"id": call, "name": "lookup_booking", "response": _record(k, t)}}]}},
            {"id": f"a{t}", "author": "agent", "content": {"role": "model", "parts": [
                {"text": f"Booking NR-{k}-{t} is confirmed and refundable."}]}},
        ]
    return {"id": f"session-{k}", "appName": "support", "events": events}


def _agents_sdk(k: int) -> Any:
    items = _openai_responses(k)["input"]
    items[2]["provider_data"] = {"model": "gpt-4.1-mini"}  # the SDK's mark, as to_input_list() writes it
    return items


def _inspect(k: int) -> Any:
    messages = []
    for t in range(TURNS):
        call = f"call_{k}_{t}"
        messages += [
            {"id": f"u{t}", "role": "user", "content": f"What is the status of booking NR-{k}-{t}?", "source": "input"},
            {"id": f"a{t}", "role": "assistant", "content": "", "source": "generate", "tool_calls": [
                {"id": call, "function": "lookup_booking", "arguments": {"booking_id": f"NR-{k}-{t}"},
                 "type": "function"}]},
            {"id": f"r{t}", "role": "tool", "tool_call_id": call, "function": "lookup_booking",
             "content": json.dumps(_record(k, t))},
            {"id": f"f{t}", "role": "assistant", "content": f"Booking NR-{k}-{t} is confirmed.", "source": "generate"},
        ]
    return {"id": k, "epoch": 1, "input": "status", "messages": messages}


def _langchain(k: int) -> Any:
    messages = []
    for t in range(TURNS):
        call = f"call_{k}_{t}"
        messages += [
            {"type": "human", "data": {"content": f"What is the status of booking NR-{k}-{t}?", "type": "human"}},
            {"type": "ai", "data": {"content": "", "type": "ai", "tool_calls": [
                {"name": "lookup_booking", "args": {"booking_id": f"NR-{k}-{t}"}, "id": call, "type": "tool_call"}]}},
            {"type": "tool", "data": {"content": json.dumps(_record(k, t)), "type": "tool", "tool_call_id": call,
                                      "status": "success"}},
            {"type": "ai", "data": {"content": f"Booking NR-{k}-{t} is confirmed.", "type": "ai"}},
        ]
    return messages


def _openinference(k: int) -> Any:
    spans = []
    for t in range(TURNS):
        call = f"call_{k}_{t}"
        llm = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4.1",
               "llm.input_messages.0.message.role": "user",
               "llm.input_messages.0.message.content": f"Status of NR-{k}-{t}?",
               "llm.output_messages.0.message.role": "assistant",
               "llm.output_messages.0.message.tool_calls.0.tool_call.id": call,
               "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup_booking",
               "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments":
                   json.dumps({"booking_id": f"NR-{k}-{t}"})}
        tool = {"openinference.span.kind": "TOOL", "tool.name": "lookup_booking", "tool_call.id": call,
                "input.value": json.dumps({"booking_id": f"NR-{k}-{t}"}), "output.value": json.dumps(_record(k, t))}
        answer = {"openinference.span.kind": "LLM", "llm.output_messages.0.message.role": "assistant",
                  "llm.output_messages.0.message.content": f"Booking NR-{k}-{t} is confirmed."}
        for n, attributes in enumerate((llm, tool, answer)):
            spans.append({"spanId": f"{3 * t + n:016x}", "startTimeUnixNano": str(1000 * (3 * t + n + 1)),
                          "status": {"code": "STATUS_CODE_OK"},
                          "attributes": [{"key": key, "value": {"stringValue": value}}
                                         for key, value in attributes.items()]})
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}


def _claude_code(k: int) -> Any:
    lines = []
    for t in range(TURNS):
        call = f"toolu_{k}_{t}"
        for kind, content in (
                ("user", f"What is the status of booking NR-{k}-{t}?"),
                ("assistant", [{"type": "tool_use", "id": call, "name": "lookup_booking",
                                "input": {"booking_id": f"NR-{k}-{t}"}}]),
                ("user", [{"type": "tool_result", "tool_use_id": call, "content": json.dumps(_record(k, t)),
                           "is_error": False}]),
                ("assistant", [{"type": "text", "text": f"Booking NR-{k}-{t} is confirmed."}])):
            lines.append({"type": kind, "sessionId": f"s{k}", "uuid": f"u{k}-{len(lines)}", "isSidechain": False,
                          "message": {"role": kind, "content": content}})
    return lines


def _swe_agent(k: int) -> Any:
    steps = [{"thought": f"Look up booking NR-{k}-{t}.", "action": f"lookup_booking NR-{k}-{t}\n",
              "observation": json.dumps(_record(k, t))} for t in range(TURNS * 2)]
    return {"trajectory": steps, "info": {"exit_status": "submitted", "submission": "done"}}


def _langfuse(k: int) -> Any:
    observations = []
    for t in range(TURNS):
        call, at = f"call_{k}_{t}", f"2025-09-30T09:{t:02d}:0"
        observations += [
            {"id": f"g{t}", "type": "GENERATION", "name": "chat", "level": "DEFAULT", "startTime": f"{at}1.000Z",
             "model": "gpt-4.1", "input": json.dumps([{"role": "user", "content": f"Status of NR-{k}-{t}?"}]),
             "output": json.dumps({"role": "assistant", "content": None, "tool_calls": [{"id": call, "type": "function", "function": {
                 "name": "lookup_booking", "arguments": json.dumps({"booking_id": f"NR-{k}-{t}"})}}]})},
            {"id": f"t{t}", "type": "TOOL", "name": "lookup_booking", "level": "DEFAULT", "startTime": f"{at}2.000Z",
             "metadata": json.dumps({"attributes": {"gen_ai.tool.name": "lookup_booking", "gen_ai.tool.call.id": call}}),
             "input": json.dumps({"booking_id": f"NR-{k}-{t}"}), "output": json.dumps(_record(k, t))},
            {"id": f"a{t}", "type": "GENERATION", "name": "chat", "level": "DEFAULT", "startTime": f"{at}3.000Z",
             "model": "gpt-4.1", "input": None,
             "output": json.dumps({"role": "assistant", "content": f"Booking NR-{k}-{t} is confirmed."})},
        ]
    return {"trace": {"id": f"trace-{k}", "name": "support"}, "observations": observations}


GENERATORS: dict[str, Callable[[int], Any]] = {
    "openai_chat": _openai_chat, "openai_responses": _openai_responses, "anthropic": _anthropic,
    "otel_genai": _otel_genai, "adk": _adk, "agents_sdk": _agents_sdk, "inspect": _inspect,
    "langchain": _langchain, "openinference": _openinference, "claude_code": _claude_code, "swe_agent": _swe_agent,
    "langfuse": _langfuse,
}


def run(settings: Settings) -> None:
    from admiss.traces.read import read_trace

    print_section("trace_read: json.loads vs json.loads + admiss.read_trace, per format")
    rows = []
    for fmt, make in GENERATORS.items():
        lines = [json.dumps(make(k)) for k in range(TRACES)]
        steps = len(read_trace(json.loads(lines[0])).steps)
        gc.collect()  # the last format's garbage is not this one's to collect
        # Interleaved: on a shared machine, two figures taken one after the other were seen
        # to put one reader at 0.26x in one run and 1.30x in the next.
        floor, reading = time_interleaved(
            (lambda: [json.loads(line) for line in lines],
             lambda: [read_trace(json.loads(line), "bench.jsonl") for line in lines]),
            max(settings.repeats, MIN_REPEATS), settings.min_repeat_seconds)
        # The speed is the median of each repeat's own ratio: its two timings are taken one
        # right after the other, so a burst of load weighs on both, which a ratio of the two
        # medians (taken from different repeats) does not ensure.
        ratios = sorted(f / r for f, r in zip(floor.samples, reading.samples))
        size = sum(map(len, lines)) / len(lines) / 1024
        rows.append([fmt, f"{size:.1f} KB", str(steps), seconds_text(floor.median), seconds_text(reading.median),
                     ratio_text(statistics.median(ratios)), f"{ratios[0]:.2f}–{ratios[-1]:.2f}"])
    print_table(f"{TRACES} traces per format, {max(settings.repeats, MIN_REPEATS)} repeats; speed is json.loads alone "
                "over json.loads + read_trace (1.00x: as fast), the median of the repeats' ratios",
                ["format", "trace", "steps", "json.loads", "+ read_trace", "speed vs json.loads", "repeats' range"], rows)
