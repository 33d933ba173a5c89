"""LangChain and LangSmith: a conversation of LangChain messages, as ``messages_to_dict``
writes it (``[{"type": "ai", "data": {...}}, ...]``) or as ``dumpd`` does (``{"lc": 1,
"type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}``), or a trace's runs in
LangSmith's Run schema (``run_type``, ``inputs``, ``outputs``, ``error``), flat with
``parent_run_id`` as LangSmith lists them, or nested in ``child_runs``.

Messages: ``human`` gives a ``user`` step, ``system`` a ``system`` step, ``ai`` an
``assistant_text`` step (its ``content``: a string, or blocks whose ``text`` is joined) and
a tool call per ``tool_calls`` entry (``args`` already JSON) and per ``invalid_tool_calls``
entry (arguments that did not parse); a ``tool`` message answers the call its
``tool_call_id`` names.

Runs, in ``dotted_order`` (the trace's tree order; else ``start_time``): an ``llm`` run's
output message (``outputs.generations[0][0].message``) is read as an ``ai`` message, and
the new messages of its ``inputs.messages`` (after the last ``ai`` one) as messages; a
``tool`` run answers the open call its output ToolMessage's ``tool_call_id`` names (else
the earliest open call of its ``name``), or is the call itself; other runs (chain,
retriever, prompt, parser) are skipped, and an error on one is listed in ``skipped``.

Errors: a ToolMessage with ``status`` "error" (what LangChain writes when a tool's
exception is handled: ``handle_tool_error``, LangGraph's ToolNode); a tool run with an
``error`` (the exception, when it was not handled). Any other result is judged by the rule
for formats without an error flag.
"""

from __future__ import annotations

from typing import Any

from admiss.traces.build import Steps, fail, field, short, text_error, type_word, typed
from admiss.traces.steps import ASSISTANT_TEXT, SYSTEM, USER, Step, StepRef, Trace

NAME = "langchain"
_KINDS = {"human": "human", "HumanMessage": "human", "ai": "ai", "AIMessage": "ai", "AIMessageChunk": "ai",
          "system": "system", "SystemMessage": "system", "tool": "tool", "ToolMessage": "tool"}
_TEXT_STEPS = {"human": USER, "system": SYSTEM}


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not LangChain messages or LangSmith runs, or None."""
    if isinstance(value, dict) and "run_type" in value:
        return None
    if not isinstance(value, list) or not value:
        return "$", "neither an array of LangChain messages or LangSmith runs, nor a run"
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            return f"$[{i}]", "not an object"
        if not ("run_type" in item or isinstance(item.get("data"), dict) and "type" in item
                or item.get("lc") == 1 and isinstance(item.get("kwargs"), dict)):
            return f"$[{i}]", ("neither a run (\"run_type\") nor a message (\"type\" and \"data\", or \"lc\" and "
                               "\"kwargs\")")
    return None


class _RunSteps(Steps):
    """The run's steps, and the model its last message named."""

    model: str | None = None


def read(value: Any, name: str) -> Trace:
    """The Trace of LangChain messages or LangSmith runs; TraceError where they break."""
    steps = _RunSteps(NAME, name)
    if not isinstance(value, dict):
        typed(value, list, name, "$")
    if isinstance(value, dict) or value and isinstance(value[0], dict) and "run_type" in value[0]:
        runs = _flat([value] if isinstance(value, dict) else value, "$" if isinstance(value, dict) else None, name)
        runs.sort(key=lambda run: run[:2])
        for _, _, run, where in runs:
            _run(steps, run, where, name)
    else:
        for i, item in enumerate(value):
            where = f"$[{i}]"
            kind, data, at = _message(item, name, where)
            _read_message(steps, kind, data, at, StepRef(NAME, where, i), name)
    return steps.trace(steps.model)


def _message(item: Any, name: str, where: str) -> tuple[str, dict, str]:
    """A message's kind (human, ai, system, tool, or another), its fields and their JSON
    path, in either serialisation."""
    typed(item, dict, name, where)
    if item.get("lc") == 1:
        ident = field(item, "id", list, name, where)
        kind = ident[-1] if ident and type(ident[-1]) is str else ""
        return _KINDS.get(kind, kind), field(item, "kwargs", dict, name, where), f"{where}.kwargs"
    kind = field(item, "type", str, name, where)
    return _KINDS.get(kind, kind), field(item, "data", dict, name, where), f"{where}.data"


def _read_message(steps: _RunSteps, kind: str, data: dict, where: str, ref: StepRef, name: str) -> None:
    """The step of one message, found at ``ref``, its fields at ``where``."""
    if kind in _TEXT_STEPS:
        text = _content(data.get("content"), name, f"{where}.content")
        steps.add(Step(_TEXT_STEPS[kind], ref, text=text)) if text else steps.skip(ref, f"{kind} message with no text")
    elif kind == "ai":
        _ai(steps, data, where, ref, name)
    elif kind == "tool":
        call_id = field(data, "tool_call_id", str, name, where)
        text = _content(data.get("content"), name, f"{where}.content")
        steps.answer(call_id, text, _tool_message_error(data, text),
                     StepRef(NAME, ref.path, ref.message_index, call_id), "", from_text=True)
    else:
        steps.skip(ref, f"{kind} message")


def _tool_message_error(data: dict, text: str) -> str | None:
    if data.get("status") == "error":
        return short(text) or "status: error"
    return text_error(text)


def _ai(steps: _RunSteps, data: dict, where: str, ref: StepRef, name: str) -> None:
    text = _content(data.get("content"), name, f"{where}.content")
    if text:
        steps.add(Step(ASSISTANT_TEXT, ref, text=text))
    metadata = data.get("response_metadata")
    if isinstance(metadata, dict) and type(metadata.get("model_name")) is str:
        steps.model = metadata["model_name"]
    made = False
    for key in ("tool_calls", "invalid_tool_calls"):
        given = data.get(key)
        if not given:  # most messages make no call: no path is worded for them
            continue
        for j, call in enumerate(typed(given, list, name, f"{where}.{key}")):
            at = f"{where}.{key}[{j}]"
            typed(call, dict, name, at)
            call_id = call.get("id") if type(call.get("id")) is str else None
            args = call.get("args")
            step = steps.call(StepRef(NAME, f"{ref.path}.{key}[{j}]", ref.message_index, call_id), field(call, "name", str, name, at),
                              {} if args is None else args, call_id)
            if key == "invalid_tool_calls":  # LangChain kept the text that did not parse
                step.args_parsed = False
            made = True
    if not text and not made:
        steps.skip(ref, "ai message with no text and no tool calls")


def _content(content: Any, name: str, where: str) -> str:
    if content is None or type(content) is str:
        return content or ""
    if type(content) is not list:
        fail(name, where, f"must be a string or an array of blocks, not {type_word(content)}")
    texts = []
    for j, block in enumerate(content):
        if type(block) is str:
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and type(block.get("text")) is str:
            texts.append(block["text"])
    return "".join(texts)


# ---------------------------------------------------------------- LangSmith runs


def _flat(runs: list, base: str | None, name: str) -> list[tuple[str, int, dict, str]]:
    """Each run with its sort key, its place in the file and its JSON path, nested
    ``child_runs`` included (an explicit stack: a tree can be deeper than Python's)."""
    found: list[tuple[str, int, dict, str]] = []
    stack = [(run, base if base is not None else f"$[{i}]") for i, run in reversed(list(enumerate(runs)))]
    while stack:
        run, where = stack.pop()
        typed(run, dict, name, where)
        order = run.get("dotted_order") or run.get("start_time")
        found.append((order if type(order) is str else "", len(found), run, where))
        children = run.get("child_runs") or []
        for k in range(len(typed(children, list, name, f"{where}.child_runs")) - 1, -1, -1):
            stack.append((children[k], f"{where}.child_runs[{k}]"))
    return found


def _run(steps: _RunSteps, run: dict, where: str, name: str) -> None:
    kind = run.get("run_type")
    run_id = run.get("id") if type(run.get("id")) is str else None
    ref = StepRef(NAME, where, span_id=run_id)
    if kind == "tool":
        _tool_run(steps, run, ref, name)
    elif kind == "llm" and not run.get("error"):
        _llm_run(steps, run, ref, name)
    else:
        error = run.get("error")
        steps.skip(ref, f"{kind} run" + (f" that failed: {short(_first_line(error))}" if type(error) is str and error
                                          else ""))


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _llm_run(steps: _RunSteps, run: dict, ref: StepRef, name: str) -> None:
    inputs = run.get("inputs")
    given = inputs.get("messages") if isinstance(inputs, dict) else None
    if isinstance(given, list) and given and isinstance(given[0], list):
        given = given[0]  # one list of messages per prompt of the batch
    if isinstance(given, list):
        read_from = max((j + 1 for j, item in enumerate(given) if isinstance(item, dict)
                         and _message(item, name, f"{ref.path}.inputs.messages[{j}]")[0] == "ai"), default=0)
        for j in range(read_from, len(given)):
            at = f"{ref.path}.inputs.messages[{j}]"
            kind, data, fields = _message(given[j], name, at)
            if kind in _TEXT_STEPS:
                _read_message(steps, kind, data, fields, StepRef(NAME, at, j, span_id=ref.span_id), name)
    outputs = run.get("outputs")
    generations = outputs.get("generations") if isinstance(outputs, dict) else None
    try:
        message = generations[0][0]["message"]
    except (TypeError, IndexError, KeyError):
        steps.skip(ref, "llm run with no output message")
        return
    at = f"{ref.path}.outputs.generations[0][0].message"
    _, data, fields = _message(message, name, at)
    _ai(steps, data, fields, StepRef(NAME, at, span_id=ref.span_id), name)


def _tool_run(steps: _RunSteps, run: dict, ref: StepRef, name: str) -> None:
    tool = field(run, "name", str, name, ref.path)
    outputs = run.get("outputs")
    output = outputs.get("output") if isinstance(outputs, dict) else None
    message = output if isinstance(output, dict) and output.get("type") == "tool" else None
    call_id = message.get("tool_call_id") if message is not None and type(message.get("tool_call_id")) is str else None
    ref = StepRef(NAME, ref.path, tool_call_id=call_id, span_id=ref.span_id)
    error = run.get("error")
    if message is not None:
        text = _content(message.get("content"), name, f"{ref.path}.outputs.output.content")
        reason = _tool_message_error(message, text)
    else:
        text = output if type(output) is str else ("" if output is None else str(output))
        reason = text_error(text) if output is not None else None
    if type(error) is str and error:
        reason = short(_first_line(error))
    answered = output is not None or reason is not None
    requested = steps.is_open(call_id) if call_id is not None else steps.has_open_call_of(tool)
    if requested and answered:
        steps.answer(call_id, text, reason, ref, "", tool_name=tool, from_text=True)
    elif requested:
        steps.skip(ref, "tool run with no output recorded")
    else:
        inputs = run.get("inputs")
        args = inputs.get("input") if isinstance(inputs, dict) and set(inputs) == {"input"} else inputs
        call = steps.call(ref, tool, {} if args is None else args, call_id)
        if answered:
            steps.resolve(call, text, reason, None, from_text=True)
