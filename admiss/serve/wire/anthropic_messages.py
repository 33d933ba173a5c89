"""Anthropic's Messages wire format: ``POST /v1/messages``, as the official ``anthropic``
client speaks it.

A request is read into the gateway's neutral request: its ``system`` and ``messages`` (text,
``tool_use``, ``tool_result`` and ``thinking`` blocks) become the chat-completions messages
the rungs' providers are sent, its ``tools`` (``input_schema``) and ``tool_choice`` their
chat-completions twins; the conversation itself, as the client sent it, is read by the
Anthropic Messages trace reader, so a receipt's step references point into this request
(``messages[2].content[0]``) and a ``tool_result`` with ``is_error: true`` is a failed call.
Any field or block the gateway does not read is refused by name (docs/serve.md lists each
one's fate): nothing it did not read is forwarded.

A ``tool_use`` block's ``input`` is a JSON object, so a rung's tool call whose arguments are
not one cannot be served in this format: that rung escalates, as after a failed call. The
arguments it serves are the compact JSON text of that object: the gates check that text, the
receipt keeps it, and strict mode (``tool_evidence = "served"``) compares a returning
``tool_use`` by it.

The answer is a ``message`` with the ``admiss`` object beside Anthropic's fields, or, with
``stream: true``, Anthropic's event stream (``message_start``, ``content_block_start`` /
``_delta`` / ``_stop`` with ``text_delta`` or ``input_json_delta``, ``message_delta``,
``message_stop``), sent only after the gates passed, as every answer is.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Callable, Mapping

import attrs

from admiss import jsonio
from admiss.gates.json_valid import NotJSON, call_arguments
from admiss.providers import Completion
from admiss.serve.calls import RequestError, check_array, checked_params, message_role
from admiss.serve.memo import Known, Memo, known_runs
from admiss.serve.router import Request, Served
from admiss.serve.wire import Incoming, admiss_object, pieces, sse
from admiss.traces import anthropic

PATH = "/v1/messages"
# Anthropic's clients send x-api-key (older ones) or Authorization: Bearer (newer ones).
KEY_HEADERS = "x-api-key: KEY or Authorization: Bearer KEY"
# Request fields read, each with the chat-completions field it becomes (None: read here).
FIELDS = {"model": None, "messages": None, "system": None, "stream": None, "max_tokens": "max_tokens",
          "temperature": "temperature", "top_p": "top_p", "stop_sequences": "stop", "metadata": None,
          "tools": None, "tool_choice": None}
# The fields of each content block read; ``cache_control`` is a prompt-caching hint for
# Anthropic's own servers, which no rung's provider takes: accepted and not sent on.
BLOCK_FIELDS = {
    "text": frozenset({"type", "text", "cache_control", "citations"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
}
# Which role may send which block.
ROLE_BLOCKS = {"user": frozenset({"text", "tool_result"}),
               "assistant": frozenset({"text", "tool_use", "thinking", "redacted_thinking"})}
MESSAGE_FIELDS = frozenset({"role", "content"})
TOOL_FIELDS = frozenset({"name", "description", "input_schema", "type", "cache_control"})
TOOL_CHOICE_TYPES = {"auto": "auto", "any": "required", "none": "none"}
# A chat-completions finish reason as Anthropic's stop reason.
STOP_REASONS = {"tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"}
# Anthropic's error types where the gateway's status has one of its own.
ERROR_TYPES = {401: "authentication_error", 404: "not_found_error", 413: "request_too_large"}


def api_key(header: Callable[[bytes], str | None]) -> str | None:
    """The key of ``x-api-key: KEY`` (what Anthropic's clients send), else of ``Authorization: Bearer KEY``."""
    key = header(b"x-api-key")
    if key is not None:
        return key.strip()
    scheme, _, key = (header(b"authorization") or "").partition(" ")
    return key.strip() if scheme.lower() == "bearer" else None


def read(body: dict[str, Any], exact: bool = False) -> Incoming:
    """The neutral request of a Messages body (its ``model`` already read); RequestError
    naming the field at fault. ``exact``: orjson read the body (jsonio.loads_marked), which
    lets the messages' memo go by their JSON text alone."""
    for name in body:
        if name not in FIELDS:
            raise RequestError(f"unsupported parameter: {name} (the gateway forwards only fields it reads: "
                               f"{', '.join(sorted(FIELDS))})", name)
    if "max_tokens" not in body:
        raise RequestError("max_tokens: missing (the Messages API requires it)", "max_tokens")
    temperature = body.get("temperature")
    if temperature is not None and not (isinstance(temperature, (int, float)) and not isinstance(temperature, bool)
                                        and 0 <= temperature <= 1):
        raise RequestError("temperature must be a number from 0 to 1", "temperature")
    conversation = {"messages": body.get("messages")}
    system = _system(body["system"]) if "system" in body else []
    if "system" in body:
        conversation["system"] = body["system"]
    turns, known, turns_text = known_turns(body.get("messages"), exact)
    messages = system + turns
    messages_text = turns_text
    if system and turns_text is not None:
        system_text = jsonio.exact_text(system)
        messages_text = jsonio.joined_arrays([system_text, turns_text]) if system_text is not None else None
    params = {chat: body[name] for name, chat in FIELDS.items() if chat is not None and name in body}
    if "stop" in params and not (isinstance(params["stop"], list) and all(isinstance(s, str) for s in params["stop"])):
        raise RequestError("stop_sequences must be an array of strings", "stop_sequences")
    params.update(_metadata(body.get("metadata")))
    params.update(_known_tools(body.get("tools"), body.get("tool_choice"), exact))
    try:
        params = checked_params(params)
    except RequestError as exc:  # named as chat completions has the field: named as the client sent it
        raise RequestError(_anthropic_names(str(exc)), _anthropic_names(exc.param or "") or None) from None
    request = Request(messages, params, conversation, anthropic.NAME, carry, known, messages_text)
    return Incoming(request, body.get("stream") is True)


def _anthropic_names(text: str) -> str:
    return text.replace(".function.parameters", ".input_schema").replace(".function.", ".")


def _system(system: Any) -> list[dict[str, Any]]:
    if isinstance(system, str):
        text = system
    elif isinstance(system, list):
        text = "".join(_text(block, f"system[{j}]") for j, block in enumerate(system))
    else:
        raise RequestError("system must be a string or an array of text blocks", "system")
    return [{"role": "system", "content": text}] if text else []


def _text(block: Any, where: str) -> str:
    if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
        raise RequestError(f'{where} must be a text block {{"type": "text", "text": "..."}}', where)
    _known(block, BLOCK_FIELDS["text"], where, "a text block")
    if block.get("citations") is not None:
        raise RequestError(f"{where}.citations: unsupported (the gateway sends text only)", f"{where}.citations")
    return block["text"]


def _known(holder: Mapping[str, Any], known: frozenset[str], where: str, what: str) -> None:
    if known.issuperset(holder):  # one C-level test for every block of a conversation; a loop only to name the odd one
        return
    for key in holder:
        if key not in known:
            raise RequestError(f"{where}.{key}: unsupported field of {what} (the gateway forwards only fields "
                               f"it reads: {', '.join(sorted(known))})", f"{where}.{key}")


# The runs of messages that passed the checks, each with its chat-completions messages, by
# exact content (admiss/serve/memo.py), as calls._CHECKED keeps the chat route's: an agent
# resends them every turn, and checking and translating them was a sixth of the route's CPU
# in cProfile's view (benchmarks/bench_gateway_cpu.py; the trace reader's reading of them, which
# conversation.Readings keeps, a quarter). The messages kept are handed to every request with
# that content; nothing downstream changes a message it is sent.
_CHECKED = Memo(entries=8192, size=4 << 20, largest=64 << 10)


def known_turns(messages: Any, exact: bool = False) -> tuple[list[dict[str, Any]], Known | None, bytes | None]:
    """The conversation as chat-completions messages (:func:`_run`), with what the memo knows
    of its runs (None when a run has no key) and the exact JSON text of those messages (None
    where orjson cannot write one); RequestError at the first message at fault.
    ``exact``: the messages were read by orjson from JSON text."""
    check_array(messages)
    runs, known = known_runs(messages, _run_ends(messages), _CHECKED, _run, exact)
    texts = [text for _, text in runs]
    text = None if None in texts else jsonio.joined_arrays(texts)
    return [message for run, _ in runs for message in run], known, text


def _run_ends(messages: list) -> list[int]:
    """Where each run of the messages ends: before each message that is not a user turn with
    tool results (which joins the run of the calls it answers), and at the end."""
    ends = [end for end, message in enumerate(messages[1:], 1)
            if type(message) is not dict or message.get("role") != "user" or not _has_result(message.get("content"))]
    return ends + [len(messages)]


def _has_result(content: Any) -> bool:
    if type(content) is list:
        for block in content:
            if type(block) is dict and block.get("type") == "tool_result":
                return True
    return False


def _run(run: list, start: int) -> tuple[list[dict[str, Any]], bytes | None]:
    """:func:`_translated` run and its exact JSON text, kept with it: the rung's upstream body
    copies the text in rather than write the messages again (benchmarks/callgrind_gateway.py)."""
    translated = _translated(run, start)
    return translated, jsonio.exact_text(translated)


def _translated(run: list, start: int) -> list[dict[str, Any]]:
    """A run of the conversation (its first message at ``messages[start]``) as chat-completions
    messages: a user turn's tool results become ``tool`` messages (ahead of its text, as chat
    completions has them), an assistant turn's ``tool_use`` blocks its ``tool_calls``; thinking
    is not sent on (chat completions has no place for it) but stays in the conversation the
    gates read."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(run, start):
        where = f"messages[{index}]"
        role = message_role(message, where, ROLE_BLOCKS)
        _known(message, MESSAGE_FIELDS, where, "a message")
        content = message.get("content")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
        elif isinstance(content, list):
            out += _turn(role, content, where)
        else:
            raise RequestError(f"{where}.content must be a string or an array of content blocks", f"{where}.content")
    return out


def _turn(role: str, blocks: list, where: str) -> list[dict[str, Any]]:
    texts, calls, results = [], [], []
    for j, block in enumerate(blocks):
        at = f"{where}.content[{j}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(kind, str) or kind not in ROLE_BLOCKS[role]:
            raise RequestError(f"{at}.type: {kind!r} is not a content block a {role} message may send here "
                               f"(supported: {', '.join(sorted(ROLE_BLOCKS[role]))})", f"{at}.type")
        _known(block, BLOCK_FIELDS[kind], at, f"a {kind} block")
        if kind == "text":
            texts.append(_text(block, at))
        elif kind == "tool_use":
            calls.append(_call(block, at))
        elif kind == "tool_result":
            results.append(_result(block, at))
        elif kind == "thinking" and not isinstance(block.get("thinking"), str):
            raise RequestError(f"{at}.thinking must be a string", f"{at}.thinking")
    if role == "user":
        return results + ([{"role": "user", "content": "".join(texts)}] if texts else [])
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    return [message]


def _call(block: dict[str, Any], at: str) -> dict[str, Any]:
    for key in ("id", "name"):
        if not isinstance(block.get(key), str) or not block[key]:
            raise RequestError(f"{at}.{key} must be a non-empty string", f"{at}.{key}")
    arguments = block.get("input", {})
    if not isinstance(arguments, dict):
        raise RequestError(f"{at}.input must be an object", f"{at}.input")
    return {"id": block["id"], "type": "function",
            "function": {"name": block["name"], "arguments": jsonio.dumps_line(arguments).decode()}}


def _result(block: dict[str, Any], at: str) -> dict[str, Any]:
    if not isinstance(block.get("tool_use_id"), str):
        raise RequestError(f"{at}.tool_use_id must be a string", f"{at}.tool_use_id")
    if not isinstance(block.get("is_error", False), bool):
        raise RequestError(f"{at}.is_error must be true or false", f"{at}.is_error")
    content = block.get("content", "")
    if isinstance(content, list):
        content = "".join(_text(part, f"{at}.content[{k}]") for k, part in enumerate(content))
    elif not isinstance(content, str):
        raise RequestError(f"{at}.content must be a string or an array of text blocks", f"{at}.content")
    return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": content}


def _metadata(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise RequestError("metadata must be an object", "metadata")
    _known(metadata, frozenset({"user_id"}), "metadata", "metadata")
    user = metadata.get("user_id")
    if user is not None and not isinstance(user, str):
        raise RequestError("metadata.user_id must be a string", "metadata.user_id")
    return {"user": user} if user is not None else {}


# The tools and tool_choice translated, by exact content: an agent sends the same ones every
# turn, and translating them was about 1 % of a Messages agent request's instructions
# (benchmarks/callgrind_gateway.py). What is kept is shared by every request with that
# content; nothing downstream changes the tools it is sent.
_TOOLS = Memo(entries=256, size=1 << 20, largest=64 << 10)


def _known_tools(tools: Any, choice: Any, exact: bool) -> dict[str, Any]:
    """:func:`_tools`, taken from the memo when the same content was translated before."""
    content = (tools, choice)
    key = jsonio.exact_text(content)
    out = _TOOLS.get(key, content, exact) if key is not None else None
    if out is None:
        out = _tools(tools, choice)
        if key is not None:
            _TOOLS.put(key, content, out, len(key), exact)
    return out


def _tools(tools: Any, choice: Any) -> dict[str, Any]:
    """``tools`` and ``tool_choice`` as chat completions has them (checked_params checks the names)."""
    out: dict[str, Any] = {}
    if tools is not None:
        if not isinstance(tools, list):
            raise RequestError("tools must be an array of tools", "tools")
        out["tools"] = [_tool(tool, f"tools[{j}]") for j, tool in enumerate(tools)]
    if choice is not None:
        if not isinstance(choice, dict) or not isinstance(choice.get("type"), str):
            raise RequestError('tool_choice must be {"type": "auto" | "any" | "tool" | "none"}', "tool_choice")
        kind = choice["type"]
        _known(choice, frozenset({"type", "name", "disable_parallel_tool_use"}), "tool_choice", "tool_choice")
        if kind == "tool":
            offered = [tool.get("name") for tool in tools or () if isinstance(tool, dict)]
            if choice.get("name") not in offered:
                raise RequestError("tool_choice.name must name one of the tools", "tool_choice.name")
            out["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
        elif kind in TOOL_CHOICE_TYPES:
            out["tool_choice"] = TOOL_CHOICE_TYPES[kind]
        else:
            raise RequestError(f"tool_choice.type: {kind!r} is not auto, any, tool or none", "tool_choice.type")
        if "disable_parallel_tool_use" in choice:
            parallel = choice["disable_parallel_tool_use"]
            if not isinstance(parallel, bool):
                raise RequestError("tool_choice.disable_parallel_tool_use must be true or false",
                                   "tool_choice.disable_parallel_tool_use")
            out["parallel_tool_calls"] = not parallel
    return out


def _tool(tool: Any, at: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise RequestError(f"{at} must be a tool object", at)
    _known(tool, TOOL_FIELDS, at, "a tool")
    if tool.get("type", "custom") != "custom":
        raise RequestError(f"{at}.type: {tool['type']!r}: only custom tools (name, input_schema) are supported",
                           f"{at}.type")
    schema = tool.get("input_schema")
    if not isinstance(schema, dict):
        raise RequestError(f"{at}.input_schema must be a JSON Schema object", f"{at}.input_schema")
    function = {"name": tool.get("name"), "parameters": schema}
    if "description" in tool:
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def carry(completion: Completion) -> Completion | str:
    """The completion as this format serves it (each tool call's arguments as the compact
    JSON text of the object that becomes its ``input``), or why it cannot serve it."""
    if not completion.tool_calls:
        return completion
    calls = []
    for call in completion.tool_calls:
        try:
            arguments = call_arguments(call)
        except NotJSON as exc:
            return f"{exc}: a tool_use block's input must be a JSON object (Anthropic Messages)"
        if not isinstance(arguments, dict):
            return (f"tool call {call['id']} ({call['function']['name']}): arguments are not a JSON object, which a "
                    "tool_use block's input must be (Anthropic Messages)")
        calls.append({**call, "function": {**call["function"], "arguments": jsonio.dumps_line(arguments).decode()}})
    return attrs.evolve(completion, tool_calls=tuple(calls))


def error(status: int, message: str, kind: str, code: str | None = None, param: str | None = None,
          receipt_id: str | None = None) -> dict[str, Any]:
    """Anthropic's error shape, with the gateway's code, the field at fault and the receipt id."""
    error: dict[str, Any] = {"type": ERROR_TYPES.get(status, kind), "message": message, "code": code, "param": param}
    if receipt_id is not None:
        error["receipt_id"] = receipt_id
    return {"type": "error", "error": error}


def response(served: Served, created: int) -> dict[str, Any]:
    """The ``message`` of a served output."""
    return {**_head(served), "content": _blocks(served), "stop_reason": _stop_reason(served),
            "usage": _usage(served), "admiss": admiss_object(served)}


def _head(served: Served) -> dict[str, Any]:
    return {"id": "msg_" + served.receipt["request_id"].partition("-")[2], "type": "message", "role": "assistant",
            "model": served.model, "stop_sequence": None}


def _blocks(served: Served) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": served.output}] if served.output else []
    for call in served.tool_calls:
        function = call["function"]
        blocks.append({"type": "tool_use", "id": call["id"], "name": function["name"],
                       "input": jsonio.loads(function["arguments"])})
    return blocks


def _stop_reason(served: Served) -> str:
    """The finish reason as Anthropic has it; an Anthropic upstream's own reason where the
    finish reason alone cannot tell (``stop_sequence`` from ``end_turn``)."""
    return STOP_REASONS.get(served.finish_reason or "") or served.stop_reason or "end_turn"


def _usage(served: Served) -> dict[str, int]:
    usage = served.usage
    return {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]}


async def events(served: Served, created: int, incoming: Incoming) -> AsyncIterator[bytes]:
    """The verified output as Anthropic's event stream, a word or so per delta."""
    usage = _usage(served)
    start = {**_head(served), "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0},
             "admiss": admiss_object(served)}
    yield sse({"type": "message_start", "message": start}, "message_start")
    index = 0
    if served.output:
        yield _block_start(index, {"type": "text", "text": ""})
        for piece in pieces(served.output):
            yield _delta(index, {"type": "text_delta", "text": piece})
        yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        index += 1
    for call in served.tool_calls:
        # As Anthropic streams a call: the block with its id, name and an empty input, then
        # the input's JSON text in pieces.
        function = call["function"]
        yield _block_start(index, {"type": "tool_use", "id": call["id"], "name": function["name"], "input": {}})
        for piece in pieces(function["arguments"]):
            yield _delta(index, {"type": "input_json_delta", "partial_json": piece})
        yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        index += 1
    yield sse({"type": "message_delta", "delta": {"stop_reason": _stop_reason(served), "stop_sequence": None},
               "usage": {"output_tokens": usage["output_tokens"]}}, "message_delta")
    yield sse({"type": "message_stop"}, "message_stop")


def _block_start(index: int, block: dict[str, Any]) -> bytes:
    return sse({"type": "content_block_start", "index": index, "content_block": block}, "content_block_start")


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")
