"""Hypothesis strategies for random well-formed traces of each format.

Each strategy draws ``(value, elements)``: the trace as decoded JSON, and the JSON paths of
the source elements a reader must account for exactly once (as a step, a step's result, or
a skipped element), recorded while the trace is built.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

WORDS = st.sampled_from(["refund", "booking", "NR-1", "cancel", "ok", "déjà", "数据", "error", "Error:", "ERROR",
                         "Errors", "error_code", " ", "\n", "{", "[", "null", "done"])
TEXTS = st.lists(WORDS, max_size=5).map(" ".join)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), TEXTS)
OBJECTS = st.dictionaries(st.sampled_from(["status", "error", "id", "amount", "error_message"]),
                          st.one_of(SCALARS, st.sampled_from(["error", "ok", {}, {"code": 3}, []])), max_size=4)
RESULT_TEXTS = st.one_of(TEXTS, OBJECTS.map(json.dumps), st.lists(SCALARS, max_size=3).map(json.dumps),
                         st.sampled_from(["{not json", "[1,", "  {\"error\": \"timeout\"}", "{\"error\": null}",
                                          "{\"status\": \"error\", \"error_message\": \"card declined\"}",
                                          "{\"status\": \"error\"}", "{\"status\": \"ok\"}", "Error: 502"]))
ARG_TEXTS = st.one_of(OBJECTS.map(json.dumps), OBJECTS.map(json.dumps), OBJECTS.map(json.dumps), st.sampled_from(["{", "{'id': 1}", "", "not json", "[1, 2]", "3"]))
TOOLS = st.sampled_from(["lookup_booking", "cancel_booking", "issue_refund", "search"])


def _answered_now(draw, open_ids: list[str]) -> list[str]:
    """Most of the open calls, in a drawn order, to answer now; they are no longer open.
    The others stay open, to be answered later or never."""
    now = [call_id for call_id in draw(st.permutations(open_ids)) if draw(st.integers(0, 3))]
    for call_id in now:
        open_ids.remove(call_id)
    return now


@st.composite
def openai_chat(draw):
    wrapped = draw(st.booleans())
    base = "messages" if wrapped else "$"
    messages, elements, open_ids, counter = [], [], [], 0

    def content():
        if draw(st.booleans()):
            return draw(st.one_of(TEXTS, st.none()))
        parts = draw(st.lists(st.one_of(TEXTS.map(lambda t: {"type": "text", "text": t}),
                                        st.just({"type": "image_url", "image_url": {"url": "https://x.invalid/a.png"}})),
                              max_size=3))
        return parts

    def answers():
        for call_id in _answered_now(draw, open_ids):
            elements.append(f"{base}[{len(messages)}]")
            body = draw(RESULT_TEXTS)
            messages.append({"role": "tool", "tool_call_id": call_id,
                             "content": body if draw(st.booleans()) else [{"type": "text", "text": body}]})

    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["system", "developer", "user", "assistant", "assistant", "tools"]))
        if kind == "tools":
            answers()
            continue
        message = {"role": kind, "content": content()}
        path = f"{base}[{len(messages)}]"
        if isinstance(message["content"], list):  # a part with no text is accounted for as skipped
            elements += [f"{path}.content[{j}]" for j, part in enumerate(message["content"]) if part["type"] != "text"]
        if kind == "assistant":
            calls = []
            for j in range(draw(st.integers(0, 3))):
                counter += 1
                call_id = f"call_{counter}"
                calls.append({"id": call_id, "type": "function",
                              "function": {"name": draw(TOOLS), "arguments": draw(ARG_TEXTS)}})
                elements.append(f"{path}.tool_calls[{j}]")
                open_ids.append(call_id)
            if calls or draw(st.booleans()):
                message["tool_calls"] = calls
            text_of = message["content"]
            has_text = bool(text_of if isinstance(text_of, str) or text_of is None
                            else "\n".join(p["text"] for p in text_of if p["type"] == "text"))
            if has_text or not calls:
                elements.append(path)
        else:
            elements.append(path)
        messages.append(message)
        answers()
    value = {"model": "gpt-4.1", "messages": messages} if wrapped else messages
    return value, elements


@st.composite
def anthropic(draw):
    wrapped = draw(st.booleans())
    base = "messages" if wrapped else "$"
    value = {"model": "claude-sonnet-4-5"} if wrapped else None
    elements, messages, open_ids, counter = [], [], [], 0
    if wrapped and draw(st.booleans()):
        value["system"] = draw(st.one_of(TEXTS, st.lists(TEXTS.map(lambda t: {"type": "text", "text": t}), max_size=2)))
        elements.append("system")
    for i in range(draw(st.integers(0, 8))):
        role = draw(st.sampled_from(["user", "assistant"]))
        path = f"{base}[{i}]"
        if draw(st.integers(0, 3)) == 0:
            messages.append({"role": role, "content": draw(TEXTS)})
            elements.append(path)
            continue
        blocks = []
        kinds = ["text", "text", "image"] + (["thinking", "tool_use", "tool_use", "redacted_thinking"]
                                             if role == "assistant" else ["tool_result"] * 3)
        for kind in draw(st.lists(st.sampled_from(kinds), max_size=4)):
            at = f"{path}.content[{len(blocks)}]"
            if kind == "text":
                blocks.append({"type": "text", "text": draw(TEXTS)})
                continue
            if kind == "tool_result":
                now = _answered_now(draw, open_ids)[:1]
                if not now:
                    continue
                block = {"type": "tool_result", "tool_use_id": now[0]}
                if draw(st.booleans()):
                    block["is_error"] = draw(st.booleans())
                body = draw(RESULT_TEXTS)
                block["content"] = body if draw(st.booleans()) else [{"type": "text", "text": body}]
                blocks.append(block)
            elif kind == "tool_use":
                counter += 1
                open_ids.append(f"toolu_{counter}")
                blocks.append({"type": "tool_use", "id": f"toolu_{counter}", "name": draw(TOOLS), "input": draw(OBJECTS)})
            elif kind == "thinking":
                blocks.append({"type": "thinking", "thinking": draw(TEXTS), "signature": "c2ln"})
            elif kind == "image":
                blocks.append({"type": "image", "source": {"type": "url", "url": "https://x.invalid/a.png"}})
            else:
                blocks.append({"type": "redacted_thinking", "data": "ZW5j"})
            elements.append(at)
        text = "".join(b["text"] for b in blocks if b["type"] == "text")
        if text or all(b["type"] == "text" for b in blocks):
            elements.append(path)
        messages.append({"role": role, "content": blocks})
    if wrapped:
        value["messages"] = messages
        return value, elements
    return messages, elements


@st.composite
def openai_responses(draw):
    wrapped = draw(st.booleans())
    value, elements, open_ids, counter = {"model": "gpt-5-mini"}, [], [], 0

    def parts(kinds, image=True):
        image = [st.just({"type": "input_image", "image_url": "https://x.invalid/a.png"})] if image else []
        return st.lists(st.one_of(*[TEXTS.map(lambda t, k=k: {"type": k, "text": t}) for k in kinds], *image),
                        max_size=3)

    def items(base, typed_only):
        nonlocal counter
        listed = []
        for _ in range(draw(st.integers(0, 7))):
            kind = draw(st.sampled_from(["message", "message", "function_call", "function_call",
                                         "function_call_output", "reasoning", "web_search_call"]))
            if kind == "function_call_output":
                now = _answered_now(draw, open_ids)[:1]
                if not now:
                    continue
                body = draw(RESULT_TEXTS)
                item = {"type": kind, "call_id": now[0],
                        "output": body if draw(st.booleans()) else [{"type": "input_text", "text": body}]}
            elif kind == "function_call":
                counter += 1
                open_ids.append(f"call_{counter}")
                item = {"type": kind, "id": f"fc_{counter}", "call_id": f"call_{counter}", "name": draw(TOOLS),
                        "arguments": draw(ARG_TEXTS)}
            elif kind == "message":
                role = draw(st.sampled_from(["user", "system", "developer", "assistant"]))
                item = {"role": role, "content": draw(st.one_of(TEXTS, st.just(None), parts(
                    ["output_text", "refusal"] if role == "assistant" else ["input_text"])))}
                if item["content"] and not isinstance(item["content"], str) and role == "assistant":
                    item["content"] = [{"type": "refusal", "refusal": p["text"]} if p["type"] == "refusal" else p
                                       for p in item["content"]]
                if typed_only or draw(st.booleans()):
                    item["type"] = "message"
            elif kind == "reasoning":
                item = {"type": kind, "id": "rs", "summary": draw(parts(["summary_text"], image=False))}
                if draw(st.booleans()):
                    item["content"] = draw(parts(["reasoning_text"], image=False))
            else:
                item = {"type": kind, "id": "ws", "status": "completed"}
            elements.append(f"{base}[{len(listed)}]")
            listed.append(item)
        return listed

    if not wrapped:
        return items("$", True), elements
    if draw(st.booleans()):
        value["instructions"] = draw(TEXTS)
        elements.append("instructions")
    if draw(st.integers(0, 3)) == 0:
        value["input"] = draw(TEXTS)
        elements.append("input")
    else:
        value["input"] = items("input", False)
    if draw(st.booleans()):
        value["output"] = items("output", False)
    return value, elements


@st.composite
def adk(draw):
    camel = draw(st.booleans())
    call_key, response_key = ("functionCall", "functionResponse") if camel else ("function_call", "function_response")
    with_ids = draw(st.booleans())
    events, elements, open_calls, counter = [], [], [], 0
    for i in range(draw(st.integers(0, 8))):
        path = f"events[{i}]"
        kind = draw(st.sampled_from(["user", "model", "model", "responses", "state"]))
        if kind == "state":
            events.append({"id": f"ev{i}", "author": "agent", "actions": {"state_delta": {"k": 1}}})
            elements.append(path)
            continue
        parts = []
        if kind == "responses":
            for call_id, name in [c for c in draw(st.permutations(open_calls)) if draw(st.integers(0, 3))]:
                open_calls.remove((call_id, name))
                response = {"name": name, "response": draw(st.one_of(OBJECTS, st.just({"result": "ok"})))}
                if with_ids:
                    response["id"] = call_id
                elements.append(f"{path}.content.parts[{len(parts)}]")
                parts.append({response_key: response})
            if not parts:
                elements.append(path)  # content with no parts
        else:
            for _ in range(draw(st.integers(0, 4))):
                part_kind = draw(st.sampled_from(["text", "text", "thought", "call", "call", "other"]
                                                 if kind == "model" else ["text", "text", "other"]))
                at = f"{path}.content.parts[{len(parts)}]"
                if part_kind == "text":
                    parts.append({"text": draw(TEXTS)})
                    continue
                if part_kind == "thought":
                    parts.append({"text": draw(TEXTS), "thought": True})
                elif part_kind == "call":
                    counter += 1
                    call = {"name": draw(TOOLS), "args": draw(OBJECTS)}
                    if with_ids:
                        call["id"] = f"adk-{counter}"
                    open_calls.append((call.get("id"), call["name"]))
                    parts.append({call_key: call})
                else:
                    parts.append({"inline_data": {"mime_type": "image/png", "data": "iVBO"}})
                elements.append(at)
            text = "".join(p["text"] for p in parts if "text" in p and not p.get("thought"))
            if text or all("text" in p and not p.get("thought") for p in parts):
                elements.append(path)
        content = {"role": "user" if kind != "model" else "model", "parts": parts}
        events.append({"id": f"ev{i}", "author": "user" if kind == "user" else "agent", "content": content})
    return {"id": "session-1", "appName" if camel else "app_name": "concierge", "events": events}, elements


def any_value(value):
    """``value`` as an OTLP JSON AnyValue."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": any_value(v)} for k, v in value.items()]}}
    return {}


@st.composite
def otel_genai(draw):
    """An agent run as spans: model calls whose outputs request tools, tool spans that answer
    some of them (with a result, an error, or nothing), tool results echoed in the next model
    call's input, lone tool spans, and agent spans; written in a shuffled file order."""
    spans, elements, history, open_ids, answered_ids, counter = [], [], [], [], [], 0

    def attribute_value(value):
        return {"stringValue": json.dumps(value)} if draw(st.booleans()) else any_value(value)

    def add(attributes, extra=None):
        spans.append({"spanId": f"{len(spans):016x}", "startTimeUnixNano": str(1000 * (len(spans) + 1)),
                      "attributes": [{"key": k, "value": v} for k, v in attributes.items()], **(extra or {})})
        return len(spans) - 1

    def tool_span(name, call_id, alone):
        attributes = {"gen_ai.operation.name": any_value("execute_tool"), "gen_ai.tool.name": any_value(name)}
        if call_id is not None:
            attributes["gen_ai.tool.call.id"] = any_value(call_id)
        if alone:
            attributes["gen_ai.tool.call.arguments"] = any_value(draw(ARG_TEXTS))
        ending = draw(st.sampled_from(["result", "result", "error", "error_type", "nothing"]))
        extra = {}
        if ending == "result":
            attributes["gen_ai.tool.call.result"] = draw(st.one_of(RESULT_TEXTS.map(any_value), OBJECTS.map(any_value)))
        elif ending == "error":
            extra["status"] = {"code": draw(st.sampled_from([2, "STATUS_CODE_ERROR"])), "message": "failed"}
        elif ending == "error_type":
            attributes["error.type"] = any_value("TimeoutError")
        elements.append((add(attributes, extra), ""))  # the call, its result, or skipped as giving nothing
        return ending != "nothing"

    system = draw(TEXTS)
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["chat", "chat", "chat", "alone", "agent"]))
        if kind == "agent":
            elements.append((add({"gen_ai.operation.name": any_value("invoke_agent")}), ""))
            continue
        if kind == "alone":
            counter += 1
            tool_span(draw(TOOLS), draw(st.sampled_from([None, f"lone_{counter}"])), True)
            continue
        k = len(spans)
        attributes = {"gen_ai.operation.name": any_value("chat"), "gen_ai.response.model": any_value("gpt-4.1")}
        if draw(st.booleans()):
            if draw(st.integers(0, 2)) == 0:
                system = draw(TEXTS)
            attributes["gen_ai.system_instructions"] = attribute_value([{"type": "text", "content": system}])
            elements.append((k, '.attributes["gen_ai.system_instructions"]'))
        new = []
        answers = [call_id for call_id in draw(st.permutations(open_ids)) if draw(st.booleans())]
        # Results a tool span gave, echoed as the next model call's input (read as skipped).
        answers += [call_id for call_id in answered_ids if draw(st.booleans())]
        answered_ids = [call_id for call_id in answered_ids if call_id not in answers]
        if answers:
            new.append({"role": "tool", "parts": [
                {"type": "tool_call_response", "id": call_id, "response": draw(RESULT_TEXTS)} for call_id in answers]})
            for call_id in answers:
                if call_id in open_ids:
                    open_ids.remove(call_id)
        for _ in range(draw(st.integers(0, 2))):
            new.append({"role": draw(st.sampled_from(["user", "system"])),
                        "parts": [{"type": "text", "content": draw(TEXTS)}]})
        for m, message in enumerate(new):
            at = f'.attributes["gen_ai.input.messages"][{len(history) + m}]'
            if message["role"] == "tool":
                elements.extend((k, f"{at}.parts[{j}]") for j in range(len(message["parts"])))
            else:
                elements.append((k, at))
        history.extend(new)
        attributes["gen_ai.input.messages"] = attribute_value(history)
        parts, requested = [], []
        for _ in range(draw(st.integers(0, 3))):
            part_kind = draw(st.sampled_from(["text", "text", "reasoning", "tool_call", "tool_call"]))
            at = f'.attributes["gen_ai.output.messages"][0].parts[{len(parts)}]'
            if part_kind == "text":
                parts.append({"type": "text", "content": draw(TEXTS)})
                continue
            if part_kind == "reasoning":
                parts.append({"type": "reasoning", "content": draw(TEXTS)})
            else:
                counter += 1
                requested.append((f"call_{counter}", draw(TOOLS)))
                parts.append({"type": "tool_call", "id": f"call_{counter}", "name": requested[-1][1],
                              "arguments": draw(st.one_of(ARG_TEXTS, OBJECTS))})
            elements.append((k, at))
        if "\n".join(p["content"] for p in parts if p["type"] == "text") or all(p["type"] == "text" for p in parts):
            elements.append((k, '.attributes["gen_ai.output.messages"][0]'))
        output = {"role": "assistant", "parts": parts, "finish_reason": "stop"}
        attributes["gen_ai.output.messages"] = attribute_value([output])
        history.append(output)
        add(attributes)
        for call_id, name in requested:
            if draw(st.integers(0, 3)):
                (answered_ids if tool_span(name, call_id, False) else open_ids).append(call_id)
            else:
                open_ids.append(call_id)
    order = draw(st.permutations(range(len(spans))))  # order[i]: the file position of the i-th span in time
    listed = [None] * len(spans)
    for k, span in enumerate(spans):
        listed[order[k]] = span
    base = "resourceSpans[0].scopeSpans[0].spans"
    value = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": any_value("desk")}]},
                                "scopeSpans": [{"scope": {"name": "genai"}, "spans": listed}]}]}
    return value, [f"{base}[{order[k]}]{suffix}" for k, suffix in elements]
