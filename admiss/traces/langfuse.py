"""Langfuse: one trace with its observations, as the public API's ``GET
/api/public/traces/{id}`` returns it (the trace's fields with an ``observations`` array) or
as the UI's download gives it (``{"trace": {...}, "observations": [...]}``).

Observations are read in order of ``startTime`` (ties in file order). A ``TOOL``
observation is a tool call and its result in one: its ``input`` the arguments, its
``output`` the result; its tool name and call id are the OpenTelemetry ``gen_ai.tool.*`` (or
OpenInference ``tool.name``, ``tool_call.id``) attributes of its ``metadata`` when given,
else its ``name``. A ``GENERATION`` gives the new ``user`` and ``system`` texts of its
``input`` and the text of its ``output`` (the messages of whatever API the instrumentation
recorded: Chat Completions, Responses, OpenTelemetry GenAI parts, Gemini, Anthropic,
LangChain); the tool calls it requests are the TOOL observations', as with the Agents SDK's
trace export. A ``SPAN`` observation is a tool call's execution (the Agno, Koog and
LangGraph integrations record tools so) only when a GENERATION before it asked for a call of
its tool (the span's ``gen_ai.tool.name`` / ``tool.name`` attribute, else its ``name``) that
no observation has run yet, with the span's call id (its ``gen_ai.tool.call.id`` /
``tool_call.id`` attribute, or the ``tool_call_id`` of the LangChain ToolMessage it
outputs) when both have one, else with the same arguments as its ``input``; the call is the
model's request (its name, arguments and id) with the span's output as its result. A span
OpenInference marks as no TOOL (an AGENT, CHAIN, ...) is never one. Other observations
(SPAN, AGENT, CHAIN, EVENT, ...) are skipped, and so are the trace's own fields (its
``input``, ``output`` and ``scores`` are the framework's summary and the evaluators'
opinion, not the run).

Errors: an observation whose ``level`` is ``ERROR`` (what Langfuse sets from an OpenTelemetry
span's error status) failed, its ``statusMessage`` the reason; a TOOL observation's (or tool
SPAN's) output is else judged by the rule for formats without an error flag, and a LangChain
ToolMessage it outputs by its ``status`` ("error") first. A failed observation that is no
tool's is listed in ``skipped`` with its reason. Langfuse stores text fields as JSON text, and
the UI's download writes a string field as its JSON text again: a text that is a JSON
string is read as the string it holds.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

from admiss.traces.build import Steps, error_in, fail, field, short, text_error, type_word, typed
from admiss.traces.steps import ASSISTANT_TEXT, FINAL_ANSWER, SYSTEM, USER, Skipped, Step, StepRef, Trace, loads_json

NAME = "langfuse"
LEVELS = ("DEBUG", "DEFAULT", "WARNING", "ERROR")
_ROLES = {"user": USER, "human": USER, "system": SYSTEM, "developer": SYSTEM}
_ASSISTANT_ROLES = frozenset(("assistant", "model", "ai"))
# The parts of a model's message that are a tool call (OpenTelemetry GenAI, Responses,
# Anthropic), and those that are not its text (thinking, tool results).
_CALL_TYPES = frozenset(("tool_call", "function_call", "tool_use", "custom_tool_call"))
_NOT_TEXT_TYPES = frozenset(("thinking", "redacted_thinking", "reasoning", "tool_call_response", "tool_result",
                             "function_call_output", "tool"))
# Where a message's text sits in the shapes above: descended into.
_NESTED = frozenset(("choices", "candidates", "message", "content", "parts", "output", "messages", "contents"))
_TOOL_NAMES = ("gen_ai.tool.name", "tool.name")
_CALL_IDS = ("gen_ai.tool.call.id", "tool_call.id")
# Layers of JSON text read off a text field (the download writes a stored JSON text again).
_LAYERS = 4
_MISSING = object()


def mismatch(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not a Langfuse trace export, or None when it is one."""
    if not isinstance(value, dict) or "observations" not in value:
        return "$", "no \"observations\" of a Langfuse trace"
    if not isinstance(value["observations"], list):
        return "observations", "not an array"
    if not isinstance(value.get("trace"), dict) and "id" not in value:
        return "$", "neither a \"trace\" object (the UI's download) nor the trace's \"id\" (the public API's)"
    return None


class _Request:
    """A tool call a generation asked for, not yet run by an observation."""

    __slots__ = ("tool", "call_id", "arguments", "ref")

    def __init__(self, tool: str, call_id: str | None, arguments: Any, ref: StepRef):
        self.tool, self.call_id, self.arguments, self.ref = tool, call_id, arguments, ref


class _TraceSteps(Steps):
    """The trace's steps, the model its last generation named, whether the run ends on a
    model turn that asks for tools none of which ran after it, and the calls asked for that
    no observation ran yet (None in a trace with no SPAN: nothing would look them up)."""

    model: str | None = None
    asking: bool = False
    requests: list[_Request] | None = None
    # The observations a TOOL observation runs under: a SPAN among them wraps that tool's run
    # and is never a call itself (read as one, a sound wrapper beside its failed TOOL would
    # be a false pass).
    around_tools: frozenset = frozenset()


def read(value: Any, name: str) -> Trace:
    """The Trace of a Langfuse trace export; TraceError at the first element that breaks its shape."""
    typed(value, dict, name, "$")
    observations = field(value, "observations", list, name, "$")
    order = []
    spans = False
    for i, observation in enumerate(observations):
        at = f"observations[{i}]"
        if type(observation) is not dict:
            fail(name, at, f"must be an object, not {type_word(observation)}",
                 hint="a trace list gives observation ids only: export the trace itself (GET /api/public/traces/{id})")
        started = observation.get("startTime")
        spans = spans or observation.get("type") == "SPAN"
        order.append((started if type(started) is str else "", i, at, observation))
    # ISO times of one clock sort as text; ties in file order. No key: the index differs in
    # every pair, so the tuples' own comparison never reaches the observation.
    order.sort()
    steps = _TraceSteps(NAME, name)
    if spans:
        steps.requests = []
        steps.around_tools = _around_tools(observations)
    seen: set[tuple[str, str]] = set()
    for _, i, at, observation in order:
        kind = observation.get("type")
        if type(kind) is not str:
            kind = field(observation, "type", str, name, at)
        level = observation.get("level")
        if level != "DEFAULT":  # the first test answers for nearly every observation
            level = _level(level, name, at)
        given = observation.get("id")
        span_id = given if type(given) is str else None
        # The observation's own reference is made where it is used: a TOOL with a call id and
        # a GENERATION with text need none, and making it was a twentieth of the reading.
        if kind == "TOOL":
            _tool(steps, observation, level, at, i, span_id, name)
        elif kind == "SPAN" and steps.requests and _span(steps, observation, level,
                                                         StepRef(NAME, at, i, None, span_id)):
            pass  # read as the call it ran
        elif level == "ERROR":
            steps.skip(StepRef(NAME, at, i, None, span_id), f"{kind} observation that failed: {_failure(observation)}")
        elif kind == "GENERATION":
            _generation(steps, observation, at, i, span_id, seen)
        else:
            steps.skip(StepRef(NAME, at, i, None, span_id), f"{kind} observation")
    return _trace(steps)


def _level(level: Any, name: str, at: str) -> str:
    """An observation's ``level`` as given; B021 for one Langfuse does not have (an unknown
    word must not pass for a level that is no failure)."""
    if level is None:
        return "DEFAULT"
    if level not in LEVELS:
        fail(name, f"{at}.level", f"unknown level {short(repr(level))}", hint="levels: " + ", ".join(LEVELS))
    return level


def _failure(observation: dict) -> str:
    message = observation.get("statusMessage")
    return short(message.strip()) if type(message) is str and message.strip() else "level ERROR"


def text_of(value: Any) -> Any:
    """A field's value with the layers of JSON string text around it read off (the UI's
    download writes a stored text as its JSON text again); any other value as it is."""
    if type(value) is not str or _head(value) != '"':
        return value  # most values: no layer to read off
    for _ in range(_LAYERS):
        if type(value) is not str or _head(value) != '"':
            return value
        try:
            inner = loads_json(value)
        except (ValueError, RecursionError):  # text that only starts like JSON
            return value
        if type(inner) is not str:
            return value
        value = inner
    return value


def _head(text: str) -> str:
    """The first character of ``text`` past its blanks ("" when there is none)."""
    head = text[:1]
    # Most texts start with no blank: no stripped copy is made for them.
    return text.lstrip()[:1] if head.isspace() else head


def _json(value: Any) -> Any:
    """A field's value, its JSON text read as the object or array it holds."""
    if type(value) is not str:
        return value
    head = _head(value)
    if head == '"':
        value = text_of(value)
        head = _head(value) if type(value) is str else ""
    if head == "{" or head == "[":
        try:
            return loads_json(value)
        except (ValueError, RecursionError):  # text that only starts like JSON
            return value
    return value


def _attributes(observation: dict) -> dict:
    """The OpenTelemetry attributes in an observation's metadata (an object, or its JSON text)."""
    metadata = observation.get("metadata")
    if type(metadata) is str:
        if "tool" not in metadata:
            return {}  # the only attributes read are a tool's: most metadata is not parsed
        metadata = _json(metadata)
    attributes = metadata.get("attributes") if type(metadata) is dict else None
    return attributes if type(attributes) is dict else {}


def _tool(steps: _TraceSteps, observation: dict, level: str, at: str, i: int, span_id: str | None, name: str
          ) -> None:
    """A TOOL observation (at ``at``, the ``i``-th): a call and its result in one."""
    attributes = _attributes(observation)
    tool = _first_text(attributes, _TOOL_NAMES) or field(observation, "name", str, name, at)
    call_id = _first_text(attributes, _CALL_IDS)
    ref = StepRef(NAME, at, i, call_id, span_id)
    if steps.requests:  # the request this TOOL ran is no SPAN's to run
        request = next((r for r in steps.requests if r.tool == tool and (
            call_id is None or r.call_id is None or r.call_id == call_id)), None)
        if request is not None:
            steps.requests.remove(request)
    given = text_of(observation.get("input"))
    arguments = _arguments(given)
    call = steps.call(ref, tool, arguments, None)
    if type(given) is str and arguments is not given:
        call.args_text = given  # read once here, the text is kept as the source wrote it
    steps.asking = False
    output = text_of(observation.get("output"))
    if level == "ERROR":
        reason: str | None = _failure(observation)
    elif output is None:
        return  # no output recorded: the call stays without a result
    else:
        # Text is judged as text: its JSON read here would lose a key it gives twice.
        reason = text_error(output) if type(output) is str else error_in(output)
    steps.resolve(call, output, reason, None, from_text=type(output) is str)


def _span(steps: _TraceSteps, observation: dict, level: str, ref: StepRef) -> bool:
    """Whether a SPAN observation runs a call a generation before it asked for (module
    docstring); when it does, that call is read with the span's output as its result."""
    given = observation.get("id")
    if type(given) is str and given in steps.around_tools:  # an id that is no text wraps nothing
        return False
    attributes = _attributes(observation)
    marked = attributes.get("openinference.span.kind")
    if marked is not None and marked != "TOOL":
        return False
    output = text_of(observation.get("output"))
    message = _tool_message(output)
    call_id = _first_text(attributes, _CALL_IDS)
    if call_id is None and message is not None and type(message.get("tool_call_id")) is str:
        call_id = message["tool_call_id"]
    requests = steps.requests or []
    request = _asked(requests, _first_text(attributes, _TOOL_NAMES) or observation.get("name"), call_id, observation)
    if request is None:
        return False
    requests.remove(request)
    call = steps.call(StepRef(NAME, request.ref.path, request.ref.message_index, request.call_id, request.ref.span_id),
                      request.tool, request.arguments, None)
    steps.asking = False
    if level == "ERROR":
        reason: str | None = _failure(observation)
    elif output is None:
        return True  # no output recorded: the call stays without a result
    elif message is not None:
        content = message.get("content")
        if type(content) is str:
            output = content  # the tool's answer, as the LangChain reader takes a ToolMessage's
        if message.get("status") == "error":
            reason = short(content) if type(content) is str and content.strip() else "status: error"
        else:
            reason = text_error(output) if type(output) is str else error_in(output)
    else:
        reason = text_error(output) if type(output) is str else error_in(output)
    steps.resolve(call, output, reason, StepRef(NAME, ref.path, ref.message_index, request.call_id, ref.span_id),
                  from_text=type(output) is str)
    return True


def _around_tools(observations: list) -> frozenset:
    """The ids of the observations that TOOL observations run under, at any depth (an
    explicit walk up ``parentObservationId``; a cycle or a missing parent ends it)."""
    parents = {o["id"]: o.get("parentObservationId") for o in observations
               if type(o) is dict and type(o.get("id")) is str}
    around: set[str] = set()
    for observation in observations:
        if type(observation) is not dict or observation.get("type") != "TOOL":
            continue
        parent = observation.get("parentObservationId")
        while type(parent) is str and parent not in around:
            around.add(parent)
            parent = parents.get(parent)
    return frozenset(around)


def _asked(requests: list[_Request], tool: Any, call_id: str | None, observation: dict) -> _Request | None:
    """The earliest request of ``tool`` that a span runs: with its ``call_id`` when both
    have an id, else with arguments equal to the span's input (a name alone could be an
    agent's or a graph node's)."""
    given: Any = _MISSING
    for asked in requests:
        if asked.tool != tool:
            continue
        if call_id is not None and asked.call_id is not None:
            if asked.call_id == call_id:
                return asked
            continue
        if given is _MISSING:
            given = _arguments(text_of(observation.get("input")))
        try:
            if _arguments(text_of(asked.arguments)) == given:
                return asked
        except RecursionError:  # values nested past Python's stack are no match
            continue
    return None


def _tool_message(output: Any) -> dict | None:
    """The fields of the LangChain ToolMessage a tool span outputs (as ``messages_to_dict``'s
    data, or ``dumpd``'s ``kwargs``), or None when its output is none."""
    value = _json(output)
    if type(value) is not dict:
        return None
    if value.get("lc") == 1 and type(value.get("kwargs")) is dict:
        ident = value.get("id")
        return value["kwargs"] if type(ident) is list and ident and ident[-1] == "ToolMessage" else None
    return value if value.get("type") == "tool" and "tool_call_id" in value else None


def _requests_in(value: Any, ref: StepRef) -> list[_Request]:
    """The tool calls a generation's ``output`` asks for, in its order: Chat Completions
    ``tool_calls`` (also under LangChain's ``additional_kwargs``) and ``function_call``,
    OpenTelemetry GenAI / Responses / Anthropic / LangChain call parts, Gemini
    ``functionCall``, and Koog's message whose ``finish_reason`` is ``tool_calls`` and whose
    ``content`` is its calls' JSON text. An explicit stack: the value is the producer's."""
    found: list[_Request] = []
    stack: list[Any] = [_json(value)]
    while stack:
        item = stack.pop()
        if type(item) is list:
            stack.extend(reversed(item))
            continue
        if type(item) is not dict:
            continue
        function = item.get("function")
        kind = item.get("type")
        if type(function) is dict and type(function.get("name")) is str and "arguments" in function:
            found.append(_Request(function["name"], _id(item.get("id")), function.get("arguments"), ref))
            continue
        if type(kind) is str and kind in _CALL_TYPES and type(item.get("name")) is str:
            given = next((item[key] for key in ("arguments", "input", "args") if key in item), None)
            found.append(_Request(item["name"], _id(item.get("id")) or _id(item.get("call_id")), given, ref))
            continue
        for key in ("functionCall", "function_call"):
            call = item.get(key)
            if type(call) is dict and type(call.get("name")) is str:
                found.append(_Request(call["name"], _id(call.get("id")), call.get("args", call.get("arguments")), ref))
        koog = _koog_calls(item)
        if koog is not None:
            stack.extend(reversed(koog))
            continue
        stack.extend(reversed([child for child in item.values() if type(child) is list or type(child) is dict]))
    return found


def _id(value: Any) -> str | None:
    return value if type(value) is str and value else None


def _koog_calls(item: dict) -> list | None:
    """The calls of a message that Koog records with ``finish_reason`` ``tool_calls`` and
    its Chat Completions ``tool_calls`` array as the JSON text of its ``content``; else None."""
    content = item.get("content")
    if item.get("finish_reason") != "tool_calls" or type(content) is not str or _head(content) != "[":
        return None
    calls = _json(content)
    if type(calls) is not list or not calls or not all(type(c) is dict and type(c.get("function")) is dict
                                                       for c in calls):
        return None
    return calls


def _first_text(attributes: dict, keys: tuple[str, ...]) -> str | None:
    """The value of the first of ``keys`` that ``attributes`` gives as a non-empty string."""
    for key in keys:
        value = attributes.get(key)
        if type(value) is str and value:
            return value
    return None


def _arguments(given: Any) -> Any:
    """A TOOL observation's input (its JSON string layers read off) as arguments: JSON text
    as the value it holds, a value as it is; other text (Langfuse records what the tool was
    given, not the model's JSON, so it is no broken call) as ``{"input": text}``."""
    if given is None:
        return {}
    if type(given) is not str:
        return given
    try:
        return loads_json(given)
    except (ValueError, RecursionError):
        return {"input": given}


def _generation(steps: _TraceSteps, observation: dict, at: str, i: int, span_id: str | None,
                seen: set[tuple[str, str]]) -> None:
    """A GENERATION observation (at ``at``, the ``i``-th): its new input texts and its output's."""
    given = observation.get("input")
    for role, text in _texts(_new_messages(_json(given)), "user", None)[0] if given is not None else ():
        if role in _ROLES and (role, text) not in seen:
            seen.add((role, text))
            steps.add(Step(_ROLES[role], StepRef(NAME, f"{at}.input", i, None, span_id), text))
    said, asks = _texts(observation.get("output"), "assistant", "assistant")
    if not said:  # a turn that only asks for tools
        text = ""
    elif len(said) == 1:  # most outputs are one message with one text
        text = said[0][1] if said[0][0] in _ASSISTANT_ROLES else ""
    else:
        text = "\n".join(text for role, text in said if role in _ASSISTANT_ROLES)
    if text:
        steps.add(Step(ASSISTANT_TEXT, StepRef(NAME, f"{at}.output", i, None, span_id), text))
    elif not asks:
        steps.skip(StepRef(NAME, at, i, None, span_id), "GENERATION observation with no output text")
    if steps.requests is not None:
        for request in _requests_in(observation.get("output"), StepRef(NAME, f"{at}.output", i, None, span_id)):
            if request.call_id is None or not any(r.call_id == request.call_id and r.tool == request.tool
                                                  for r in steps.requests):
                steps.requests.append(request)  # a nested generation may record its parent's request again
    if asks:
        steps.skip(StepRef(NAME, at, i, None, span_id),
                   "GENERATION observation's tool calls (read from its TOOL observations)")
    steps.asking = asks
    if type(observation.get("model")) is str:
        steps.model = observation["model"]


def _new_messages(given: Any) -> Any:
    """The messages of a generation's input after its last assistant message (an input
    holds the whole conversation so far: walking it all for each generation would read a
    run in time quadratic in its length), or the whole input when it is no message list."""
    messages = given.get("messages", given.get("contents")) if type(given) is dict else given
    if type(messages) is not list:
        return given
    for j in range(len(messages) - 1, -1, -1):
        message = messages[j]
        role = message.get("role") if type(message) is dict else None
        if type(role) is str and role in _ASSISTANT_ROLES:
            return messages[j + 1:]
    return given


def _texts(value: Any, plain: str, nested: str | None) -> tuple[list[tuple[str | None, str]], bool]:
    """The (role, text) of each message text in a generation's ``input`` or ``output`` (a
    plain text is one of role ``plain``; a message that names no role, of ``nested``), and
    whether it asks for a tool call. An explicit stack: the value is the producer's, and may
    nest deeper than Python's."""
    found: list[tuple[str | None, str]] = []
    asks = False
    if value is None:
        return found, asks
    if type(value) is str:  # a value already parsed (a generation's input) needs no call
        value = _json(value)
    # The most common shapes, Chat Completions messages and lists of them, are read as the
    # walk below reads them, with no walk: it was two fifths of the time of reading a trace.
    if type(value) is dict:
        message = _chat_message(value)
        if message is not None:
            return message
    elif type(value) is list:
        if len(value) == 1:  # one message (most new inputs): no comprehensions to join
            message = _chat_message(value[0])
            if message is not None:
                return message
        messages = [_chat_message(item) for item in value]
        if None not in messages:
            return [said for texts, _ in messages for said in texts], any([asks for _, asks in messages])
    stack: list[tuple[Any, str | None]] = [(value, plain if type(value) is str else nested)]
    while stack:
        item, role = stack.pop()
        if type(item) is dict:
            given = item.get("role")
            if type(given) is str:
                role = given
            kind = item.get("type")
            if type(kind) is not str:
                kind = None  # an unhashable value could not be looked up
            if kind in _CALL_TYPES:
                asks = True
                continue
            if item.get("tool_calls") or "function_call" in item or "functionCall" in item or "toolCallId" in item:
                asks = True
            if kind in _NOT_TEXT_TYPES or role == "tool" or item.get("thought") is True:
                continue
            text = item.get("text")
            has_text = type(text) is str
            if has_text and text.strip():
                found.append((role, text))
            if _NESTED.isdisjoint(item):
                continue
            if "finish_reason" in item and _koog_calls(item) is not None:
                asks = True  # its content is its calls' JSON, not its text
                continue
            content = item.get("content")
            if type(content) is str and not has_text and len(_NESTED.intersection(item)) == 1:
                if content.strip():  # a plain message: its one text, with no walk
                    found.append((role, content))
                continue
            # In the source's order (pushed last to first): a message's keys, most often two or
            # three, are fewer than _NESTED. Loops, not comprehensions: a comprehension's own
            # frame was a third of the walk of a one-message input.
            for key, child in reversed(item.items()):
                if key in _NESTED and (type(child) is list or type(child) is dict
                                       or key == "content" and type(child) is str and not has_text):
                    stack.append((child, role))
        elif type(item) is list:
            stack.extend(zip(reversed(item), repeat(role)))
        elif type(item) is str and item.strip():
            found.append((role, item))
    return found, asks


# The keys of a Chat Completions message that _chat_message reads as the walk would.
_CHAT_KEYS = frozenset(("role", "content", "tool_calls"))


def _chat_message(item: Any) -> tuple[list[tuple[str | None, str]], bool] | None:
    """``_texts`` of a Chat Completions message (a text role, a text or null ``content``,
    perhaps ``tool_calls``, nothing else), read with no walk; None for any other value."""
    if type(item) is not dict or not _CHAT_KEYS.issuperset(item):
        return None
    role, content = item.get("role"), item.get("content")
    if type(role) is not str or content is not None and type(content) is not str:
        return None
    return ([(role, content)] if content is not None and role != "tool" and content.strip() else []), \
        bool(item.get("tool_calls"))


def _trace(steps: _TraceSteps) -> Trace:
    """The Trace; a run whose last model turn asks for tools that no TOOL observation (or
    tool SPAN) after it ran has no final answer (its text before them is the agent's, not its answer)."""
    trace = steps.trace(steps.model)
    if not steps.asking or not trace.steps or trace.steps[-1].type != FINAL_ANSWER:
        return trace
    last = trace.steps[-1]
    note = Skipped(last.ref, "the run ends on a model turn that asks for tools no TOOL observation or tool SPAN "
                             "ran: no final answer")
    return Trace(trace.format, trace.steps[:-1] + (Step(ASSISTANT_TEXT, last.ref, text=last.text),), trace.model,
                 trace.skipped + (note,))
