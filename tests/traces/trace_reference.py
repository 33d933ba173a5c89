"""Plain reference readers of each trace format, for tests.

They restate docs/traces.md directly and simply, in two passes (collect the results by
call id first, then walk the calls), without the readers' shared machinery, so the tests
can compare the real readers against an independent reading. Each returns
``(rows, skipped)``: a row per step, ``(type, path, text, tool_name, args, args_parsed,
result, outcome, result_path)``, and the paths of the source elements that give no step.
Inputs are assumed well formed.
"""

from __future__ import annotations

import json
import re
import unicodedata

ERROR_WORD = re.compile(r"\s*error(?!\w)", re.I)


def rows_of_trace(trace):
    """The real reader's Trace in the reference's terms: (rows, skipped paths)."""
    rows = [(s.type, s.ref.path, s.text, s.tool_name, s.args, s.args_parsed, s.result, s.outcome,
             s.result_ref.path if s.result_ref else None) for s in trace.steps]
    return rows, [skip.ref.path for skip in trace.skipped]


def accounted_paths(trace):
    """Every source path the Trace accounts for, as often as it does."""
    paths = [s.ref.path for s in trace.steps] + [s.result_ref.path for s in trace.steps if s.result_ref]
    return paths + [skip.ref.path for skip in trace.skipped]


FAILURE_TEXTS = ("an error occurred while running the tool", "an error occurred while parsing tool arguments",
                 "tool execution was not approved")


def shown(text: str) -> str:
    """``text`` from its first character that shows: past whitespace and every character of
    the categories Cf (format: a byte-order mark, zero-width joiners), Zs, Zl, Zp and Cc."""
    for i, char in enumerate(text):
        if not (char.isspace() or unicodedata.category(char) in ("Cf", "Zs", "Zl", "Zp", "Cc")):
            return text[i:]
    return ""


def is_error(result) -> bool:
    """The documented rule for formats without an error flag."""
    if isinstance(result, dict):
        status = result.get("status")
        return (result.get("error") not in (None, False, "", {}, [])
                or isinstance(status, str) and status.lower() == "error"
                or result.get("isError") is True or result.get("is_error") is True
                or result.get("response_type") == "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"
                or list(result) == ["result"] and is_error_text(result["result"]))
    return is_error_text(result)


def is_error_text(text) -> bool:
    return isinstance(text, str) and (ERROR_WORD.match(shown(text)) is not None
                                      or shown(text).lower().startswith(FAILURE_TEXTS))


def parsed_result(text: str):
    if shown(text).startswith(("{", "[")):
        try:
            return json.loads(shown(text))
        except ValueError:
            return text
    return text


def parsed_args(args):
    if not isinstance(args, str):
        return args, True
    try:
        return json.loads(args), True
    except ValueError:
        return args, False


def outcome(args_ok: bool, answered: bool, error: bool) -> str:
    if not args_ok:
        return "bad_args"
    if error:
        return "error"
    return "ok" if answered else "no_result"


def call_row(path, name, raw_args, result_at, result_of, error_of=is_error):
    """A tool-call row; ``result_at`` is the result's path or None, ``result_of`` its value."""
    args, ok = parsed_args(raw_args)
    result = result_of if result_at is not None else None
    error = result_at is not None and error_of(result)
    return ("tool_call", path, None, name, args, ok, result, outcome(ok, result_at is not None, error), result_at)


def text_row(kind, path, text):
    return (kind, path, text, None, None, True, None, None, None)


def with_final_answer(rows):
    """The last row is the final answer when it is the agent's text (reasoning after it aside)."""
    said = [i for i, row in enumerate(rows) if row[0] != "reasoning"]
    if said and rows[said[-1]][0] == "assistant_text":
        rows[said[-1]] = ("final_answer",) + rows[said[-1]][1:]
    return rows


# ---------------------------------------------------------------- OpenAI Chat Completions


def chat_text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part[part["type"]] for part in content if part["type"] in ("text", "refusal"))


def chat_other_parts(content, path) -> list:
    """The paths of a message's parts that hold no text (images, audio, files): skipped."""
    if not isinstance(content, list):
        return []
    return [f"{path}.content[{j}]" for j, part in enumerate(content) if part["type"] not in ("text", "refusal")]


def openai_chat(value):
    messages = value["messages"] if isinstance(value, dict) else value
    base = "messages" if isinstance(value, dict) else "$"
    answers = {}
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            answers[message["tool_call_id"]] = (f"{base}[{i}]", parsed_result(chat_text(message.get("content"))))
    rows, skipped = [], []
    for i, message in enumerate(messages):
        path, role = f"{base}[{i}]", message["role"]
        text = chat_text(message.get("content"))
        skipped += chat_other_parts(message.get("content"), path)
        if role == "tool":
            continue  # accounted for by the call it answers
        if role == "assistant":
            text = text or message.get("refusal") or ""
            if text:
                rows.append(text_row("assistant_text", path, text))
            calls = message.get("tool_calls") or []
            for j, call in enumerate(calls):
                at, result = answers.get(call["id"], (None, None))
                rows.append(call_row(f"{path}.tool_calls[{j}]", call["function"]["name"],
                                     call["function"]["arguments"], at, result))
            if not text and not calls:
                skipped.append(path)
        elif text:
            rows.append(text_row("user" if role == "user" else "system", path, text))
        else:
            skipped.append(path)
    return with_final_answer(rows), skipped


# ---------------------------------------------------------------- Anthropic Messages


def anthropic_text(content) -> str:
    return content if isinstance(content, str) else "".join(b["text"] for b in content if b["type"] == "text")


def anthropic(value):
    messages, base = (value["messages"], "messages") if isinstance(value, dict) else (value, "$")
    answers = {}
    for i, message in enumerate(messages):
        if isinstance(message["content"], list):
            for j, block in enumerate(message["content"]):
                if block["type"] == "tool_result":
                    answers[block["tool_use_id"]] = (f"{base}[{i}].content[{j}]",
                                                     parsed_result(anthropic_text(block.get("content", ""))),
                                                     block.get("is_error", False))
    rows, skipped = [], []
    if isinstance(value, dict) and "system" in value:
        text = anthropic_text(value["system"])
        if text:
            rows.append(text_row("system", "system", text))
        else:
            skipped.append("system")
    for i, message in enumerate(messages):
        path, content = f"{base}[{i}]", message["content"]
        kind = "user" if message["role"] == "user" else "assistant_text"
        text = anthropic_text(content)
        if isinstance(content, str):
            if text:
                rows.append(text_row(kind, path, text))
            else:
                skipped.append(path)
            continue
        first_text = next((j for j, block in enumerate(content) if block["type"] == "text"), None)
        for j, block in enumerate(content):
            at = f"{path}.content[{j}]"
            if j == first_text and text:
                rows.append(text_row(kind, path, text))
            if block["type"] == "thinking":
                rows.append(text_row("reasoning", at, block["thinking"]))
            elif block["type"] == "tool_use":
                result_at, result, flagged = answers.get(block["id"], (None, None, False))
                rows.append(call_row(at, block["name"], block["input"], result_at, result,
                                     lambda value, flagged=flagged: flagged or is_error(value)))
            elif block["type"] not in ("text", "tool_result"):
                skipped.append(at)
        if not text and all(block["type"] == "text" for block in content):
            skipped.append(path)
    return with_final_answer(rows), skipped


# ---------------------------------------------------------------- OpenAI Responses


def responses_text(content) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "\n".join(part["refusal"] if part["type"] == "refusal" else part["text"]
                     for part in content if part["type"] in ("input_text", "output_text", "refusal"))


def openai_responses(value):
    if isinstance(value, list):
        sections = [("$", value)]
    else:
        sections = [(key, value[key]) for key in ("input", "output") if isinstance(value.get(key), list)]
    answers = {}
    for base, items in sections:
        for i, item in enumerate(items):
            if item.get("type") == "function_call_output":
                answers[item["call_id"]] = (f"{base}[{i}]", parsed_result(responses_text(item["output"])))
    rows, skipped = [], []
    if isinstance(value, dict):
        for key, kind in (("instructions", "system"), ("input", "user")):
            if isinstance(value.get(key), str):
                (rows.append(text_row(kind, key, value[key])) if value[key] else skipped.append(key))
    for base, items in sections:
        for i, item in enumerate(items):
            path, kind = f"{base}[{i}]", item.get("type", "message")
            if kind == "message":
                text = responses_text(item["content"])
                role = {"system": "system", "developer": "system", "user": "user"}.get(item["role"], "assistant_text")
                (rows.append(text_row(role, path, text)) if text else skipped.append(path))
            elif kind == "function_call":
                at, result = answers.get(item["call_id"], (None, None))
                rows.append(call_row(path, item["name"], item["arguments"], at, result))
            elif kind == "reasoning":
                summary = [part["text"] for part in item.get("summary") or []]
                content = [part["text"] for part in item.get("content") or []]
                text = "\n".join(summary) if any(summary) else "\n".join(content) if any(content) else ""
                (rows.append(text_row("reasoning", path, text)) if text else skipped.append(path))
            elif kind != "function_call_output":
                skipped.append(path)
    return with_final_answer(rows), skipped


# ---------------------------------------------------------------- Google ADK sessions


def adk_get(holder, snake, camel):
    return holder[snake] if snake in holder else holder.get(camel)


def adk(value):
    """Sessions only (eval cases are pinned by their fixture)."""
    events = value["events"]
    by_id, by_name = {}, {}
    for i, event in enumerate(events):
        for j, part in enumerate((event.get("content") or {}).get("parts") or []):
            response = adk_get(part, "function_response", "functionResponse")
            if response is not None:
                at = f"events[{i}].content.parts[{j}]"
                if response.get("id") is not None:
                    by_id[response["id"]] = (at, response["response"])
                else:
                    by_name.setdefault(response["name"], []).append((at, response["response"]))
    rows, skipped = [], []
    for i, event in enumerate(events):
        path = f"events[{i}]"
        if event.get("content") is None:
            skipped.append(path)
            continue
        parts = event["content"].get("parts") or []
        user = event.get("author") == "user" or event["content"].get("role") == "user"
        text = "".join(p["text"] for p in parts if "text" in p and not p.get("thought"))
        first_text = next((j for j, p in enumerate(parts) if "text" in p and not p.get("thought")), None)
        for j, part in enumerate(parts):
            at = f"{path}.content.parts[{j}]"
            if j == first_text and text:
                rows.append(text_row("user" if user else "assistant_text", path, text))
            call = adk_get(part, "function_call", "functionCall")
            if "text" in part:
                if part.get("thought"):
                    (rows.append(text_row("reasoning", at, part["text"])) if part["text"] else skipped.append(at))
            elif call is not None:
                if call.get("id") is not None:
                    result_at, result = by_id.get(call["id"], (None, None))
                else:
                    queue = by_name.get(call["name"], [])
                    result_at, result = queue.pop(0) if queue else (None, None)
                rows.append(call_row(at, call["name"], call.get("args", {}), result_at, result))
            elif adk_get(part, "function_response", "functionResponse") is None:
                skipped.append(at)
        if not text and all("text" in p and not p.get("thought") for p in parts):
            skipped.append(path)
    return with_final_answer(rows), skipped


# ---------------------------------------------------------------- OpenTelemetry GenAI spans


def otel_value(value):
    if not value:
        return None
    (kind, inner), = value.items()
    if kind == "intValue":
        return int(inner)
    if kind == "arrayValue":
        return [otel_value(v) for v in inner.get("values", [])]
    if kind == "kvlistValue":
        return {pair["key"]: otel_value(pair["value"]) for pair in inner.get("values", [])}
    return inner


def otel_attributes(span):
    """The span's attributes over its events' (the first event to give one wins)."""
    merged = {}
    for event in reversed(span.get("events", [])):
        merged.update({pair["key"]: otel_value(pair["value"]) for pair in event.get("attributes", [])})
    merged.update({pair["key"]: otel_value(pair["value"]) for pair in span.get("attributes", [])})
    return merged


def otel_json(value):
    return json.loads(value) if isinstance(value, str) else value


def otel_genai(value):
    spans = []
    for r, resource in enumerate(value["resourceSpans"]):
        for s, scope in enumerate(resource["scopeSpans"]):
            for k, span in enumerate(scope["spans"]):
                spans.append((int(span.get("startTimeUnixNano", 0)), len(spans), span,
                              f"resourceSpans[{r}].scopeSpans[{s}].spans[{k}]"))
    spans.sort(key=lambda entry: entry[:2])
    rows, skipped, calls, system = [], [], {}, None  # calls: id -> index of its row in rows
    asking = []  # the rows of the calls model outputs asked for

    def answer(index, path, result, error):
        kind, at, text, name, args, ok, _, _, _ = rows[index]
        rows[index] = (kind, at, text, name, args, ok, result, outcome(ok, True, error), path)

    for _, _, span, path in spans:
        attributes = otel_attributes(span)
        operation = attributes.get("gen_ai.operation.name")
        if operation == "execute_tool":
            call_id = attributes.get("gen_ai.tool.call.id")
            status = span.get("status") or {}
            has_result = "gen_ai.tool.call.result" in attributes
            result = attributes.get("gen_ai.tool.call.result")
            result = parsed_result(result) if isinstance(result, str) else result
            error = status.get("code") in (2, "STATUS_CODE_ERROR") or "error.type" in attributes or (
                has_result and is_error(result))
            # A span whose id no call has executes the earliest unanswered call of its tool a
            # model output asked for (ADK: the two ids differ).
            asked = None if call_id in calls else next(
                (i for i in asking if rows[i][3] == attributes["gen_ai.tool.name"] and rows[i][8] is None), None)
            if call_id in calls or asked is not None:
                if error or has_result:
                    answer(calls[call_id] if asked is None else asked, path, result, error)
                else:
                    skipped.append(path)
            else:
                row = call_row(path, attributes["gen_ai.tool.name"], attributes.get("gen_ai.tool.call.arguments"),
                               path if error or has_result else None, result, lambda _: error)
                rows.append(row[:8] + (None,))  # the result stands in the call's own span
                if call_id is not None:
                    calls[call_id] = len(rows) - 1
        elif operation == "chat":
            if "gen_ai.system_instructions" in attributes:
                at = f'{path}.attributes["gen_ai.system_instructions"]'
                text = "\n".join(p["content"] for p in otel_json(attributes["gen_ai.system_instructions"])
                                 if p["type"] == "text")
                if text and text != system:
                    rows.append(text_row("system", at, text))
                    system = text
                else:
                    skipped.append(at)
            inputs = otel_json(attributes.get("gen_ai.input.messages", "[]"))
            roles = [message["role"] for message in inputs]
            start = len(roles) - roles[::-1].index("assistant") if "assistant" in roles else 0
            for i in range(start, len(inputs)):
                at = f'{path}.attributes["gen_ai.input.messages"][{i}]'
                if inputs[i]["role"] == "tool":
                    for j, part in enumerate(inputs[i]["parts"]):
                        index = calls.get(part["id"])
                        if index is not None and rows[index][7] == "no_result" or (
                                index is not None and rows[index][7] == "bad_args" and rows[index][8] is None):
                            result = parsed_result(part["response"])
                            answer(index, f"{at}.parts[{j}]", result, is_error(result))
                        else:
                            if index is not None and rows[index][7] == "ok" and is_error(
                                    parsed_result(part["response"])):  # a failure either record shows
                                rows[index] = rows[index][:7] + ("error",) + rows[index][8:]
                            skipped.append(f"{at}.parts[{j}]")
                else:
                    text = "\n".join(p["content"] for p in inputs[i]["parts"] if p["type"] == "text")
                    (rows.append(text_row(inputs[i]["role"], at, text)) if text else skipped.append(at))
            for m, message in enumerate(otel_json(attributes.get("gen_ai.output.messages", "[]"))):
                at = f'{path}.attributes["gen_ai.output.messages"][{m}]'
                text = "\n".join(p["content"] for p in message["parts"] if p["type"] == "text")
                first_text = next((j for j, p in enumerate(message["parts"]) if p["type"] == "text"), None)
                for j, part in enumerate(message["parts"]):
                    if j == first_text and text:
                        rows.append(text_row("assistant_text", at, text))
                    if part["type"] == "reasoning":
                        rows.append(text_row("reasoning", f"{at}.parts[{j}]", part["content"]))
                    elif part["type"] == "tool_call":
                        rows.append(call_row(f"{at}.parts[{j}]", part["name"], part["arguments"], None, None))
                        calls[part["id"]] = len(rows) - 1
                        asking.append(len(rows) - 1)
                if not text and all(p["type"] == "text" for p in message["parts"]):
                    skipped.append(at)
        else:
            skipped.append(path)
    return with_final_answer(rows), skipped
