"""Anthropic's Messages API as admiss's model calls speak it, for a provider with
``api = "anthropic"`` in admiss.toml (admiss/providers.py sends; this module translates).

Every caller (a gateway rung, ``admiss check --live``, the judge, the consistency samples
and the meaning model) makes a chat-completions call: messages and request fields. For an
Anthropic provider that call becomes one ``POST {base_url}/v1/messages``:

- ``system`` and ``developer`` messages are lifted out into ``system`` (joined by a blank
  line, in order); ``tool`` messages become ``tool_result`` blocks of a user turn, an
  assistant's ``tool_calls`` its ``tool_use`` blocks (arguments that are no JSON object
  cannot be an ``input``: the call is not sent); turns of one role in a row are joined into
  one, as the API wants them; an assistant turn with nothing in it is left out.
- ``max_tokens`` (or ``max_completion_tokens``) is sent as ``max_tokens``, which the API
  requires: the provider's ``max_tokens`` when the call sets none. ``stop`` (as
  ``stop_sequences``), ``user`` (as ``metadata.user_id``), ``tools`` (``parameters`` as
  ``input_schema``), ``tool_choice`` and ``parallel_tool_calls`` (as
  ``disable_parallel_tool_use``) have twins; a field without one is refused by name, never
  dropped without a word: ``seed``, ``response_format``, ``logit_bias``, ... and the
  sampling fields ``temperature`` and ``top_p``, which the API as the official ``anthropic``
  client (2.x) describes it no longer takes.

The reply is untrusted: read with the reader that refuses a key given twice and a number
beyond a double (:func:`admiss.jsonio.loads_untrusted`), its ``text`` blocks joined into the
completion's text, each ``tool_use`` block a tool call (its ``input`` object as compact
JSON text), ``thinking`` blocks left out (they are not served), any other block refused.
``stop_reason`` is kept, and mapped to the chat-completions finish reason.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import attrs

from admiss import jsonio
from admiss.jsonio import UnreadableJSON

PATH = "/v1/messages"
VERSION = "2023-06-01"
# Anthropic's own status for "overloaded": the request was not worked on, so it is retried.
OVERLOADED = 529
# Each stop reason the API documents, with the chat-completions finish reason it is.
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
                  "model_context_window_exceeded": "length", "tool_use": "tool_calls", "refusal": "content_filter"}
SKIPPED_BLOCKS = frozenset({"thinking", "redacted_thinking"})
TOOL_CHOICES = {"auto": "auto", "required": "any", "none": "none"}
# Chat-completions sampling fields, which the Messages API (anthropic 2.x) no longer takes.
SAMPLING = frozenset({"temperature", "top_p"})
# The usage counts of input tokens: the uncached ones and those read from or written to the
# prompt cache (all priced at the provider's input price).
INPUT_COUNTS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class CannotSend(ValueError):
    """The call holds something the Messages API cannot carry; the message says what."""


class NotAMessage(ValueError):
    """The reply is not a Messages API message; the message says why."""


@attrs.frozen
class Message:
    """What admiss reads of a reply: unchecked token counts (the caller bounds them)."""

    text: str | None
    tool_calls: tuple[dict[str, Any], ...]
    stop_reason: str | None
    finish_reason: str | None
    # The input counts present in the reply and its output count, as the server sent them.
    input_counts: tuple[Any, ...]
    output_count: Any


def request_body(model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any],
                 max_tokens: int) -> dict[str, Any]:
    """The Messages request of a chat-completions call; CannotSend for what it cannot carry."""
    system, turns = _turns(messages)
    fields = dict(params)
    newer, older = fields.pop("max_completion_tokens", None), fields.pop("max_tokens", None)
    limit = newer if newer is not None else older if older is not None else max_tokens
    body: dict[str, Any] = {"model": model, "max_tokens": limit}
    if system:
        body["system"] = system
    body["messages"] = turns
    body.update(_fields(fields))
    return body


def _turns(messages: Sequence[Mapping[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            system.append(_text(message.get("content")))
            continue
        if role == "assistant":
            role, blocks = "assistant", _assistant_blocks(message)
        elif role == "tool":
            role, blocks = "user", [{"type": "tool_result", "tool_use_id": message.get("tool_call_id"),
                                     "content": _text(message.get("content"))}]
        else:
            role, blocks = "user", _text_blocks(message.get("content"))
        if role == "assistant" and not blocks:
            continue  # an empty turn says nothing, and the API refuses one
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] = _as_blocks(turns[-1]["content"]) + blocks
        else:
            turns.append({"role": role, "content": _plain(blocks)})
    return "\n\n".join(s for s in system if s), turns


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _text_blocks(content: Any) -> list[dict[str, Any]]:
    text = _text(content)
    return [{"type": "text", "text": text}] if text else []


def _assistant_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    text = _text(message.get("content"))
    blocks = [{"type": "text", "text": text}] if text else []
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        # The client's own history, read by the model and no gate (the gates read the
        # conversation through its trace reader), so the fast reader will do: the strict one
        # cost 12 us a call, 160 of 235 us for a 40-message agent request.
        try:
            arguments = jsonio.loads_any(function.get("arguments") or "{}")
        except (ValueError, RecursionError):
            raise CannotSend(f"tool call {call.get('id')}: arguments are not JSON") from None
        if not isinstance(arguments, dict):
            raise CannotSend(f"tool call {call.get('id')}: arguments are not a JSON object, which a tool_use "
                             "block's input must be")
        blocks.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name"), "input": arguments})
    return blocks


def _as_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return content


def _plain(blocks: list[dict[str, Any]]) -> Any:
    """A turn of one text block as a plain string, as clients write it (and traces read it)."""
    if not blocks:
        return ""
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        return blocks[0]["text"]
    return blocks


def _fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None or name in ("tools", "tool_choice", "parallel_tool_calls"):
            continue
        if name in SAMPLING:
            raise CannotSend(f"{name}: the Messages API takes no sampling parameters (remove it from the "
                             "rung's [rungs.CHAIN.RUNG] table or the request)")
        if name == "stop":
            out["stop_sequences"] = _stop_sequences(value)
        elif name == "user":
            out["metadata"] = {"user_id": value}
        else:
            raise CannotSend(f"{name}: the Messages API has no such field")
    if fields.get("tools") is not None:
        out["tools"] = [_tool(tool) for tool in fields["tools"]]
    choice = _tool_choice(fields.get("tool_choice"), fields.get("parallel_tool_calls"))
    if choice is not None:
        out["tool_choice"] = choice
    return out


def _stop_sequences(value: Any) -> list[str]:
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise CannotSend("stop must be a string or an array of strings")
    return stops


def _tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool.get("function") or {}
    out = {"name": function.get("name"), "input_schema": function.get("parameters") or {"type": "object"}}
    if function.get("description") is not None:
        out["description"] = function["description"]
    return out


def _tool_choice(choice: Any, parallel: Any) -> dict[str, Any] | None:
    if isinstance(choice, dict):
        out = {"type": "tool", "name": (choice.get("function") or {}).get("name")}
    elif choice is not None:
        out = {"type": TOOL_CHOICES.get(choice, choice)}
    elif parallel is False:
        out = {"type": "auto"}
    else:
        return None
    if parallel is False and out["type"] != "none":
        out["disable_parallel_tool_use"] = True
    return out


def message(body: str) -> Message:
    """What admiss reads of a reply's text; NotAMessage for anything but a Messages message."""
    try:
        data = jsonio.loads_untrusted(body)
    except UnreadableJSON as exc:
        raise NotAMessage(f"not JSON admiss reads: {exc}") from None
    if not isinstance(data, dict):
        raise NotAMessage("not a JSON object")
    if data.get("type") == "error":
        raise NotAMessage(f"an error: {error_message(data) or 'no message'}")
    if data.get("type", "message") != "message" or not isinstance(data.get("content"), list):
        raise NotAMessage("not a message (a \"content\" array of blocks)")
    texts, calls = [], []
    for index, block in enumerate(data["content"]):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use":
            calls.append(_call(block, index))
        elif kind not in SKIPPED_BLOCKS:
            raise NotAMessage(f"content[{index}] is not a text, tool_use or thinking block admiss reads")
    stop = data.get("stop_reason")
    stop = stop if isinstance(stop, str) and stop in FINISH_REASONS else None
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return Message("".join(texts) if texts else None, tuple(calls), stop, FINISH_REASONS.get(stop or ""),
                   tuple(usage.get(name) for name in INPUT_COUNTS if usage.get(name) is not None),
                   usage.get("output_tokens"))


def _call(block: Mapping[str, Any], index: int) -> dict[str, Any]:
    """A ``tool_use`` block as a tool call in OpenAI's shape, rebuilt from the fields read."""
    where = f"content[{index}]"
    for key in ("id", "name"):
        if not isinstance(block.get(key), str) or not block[key]:
            raise NotAMessage(f"{where}: a tool_use block's {key} must be a non-empty string")
    if not isinstance(block.get("input"), dict):
        raise NotAMessage(f"{where}: tool_use {block['id']} ({block['name']}): input is not a JSON object")
    return {"id": block["id"], "type": "function",
            "function": {"name": block["name"], "arguments": jsonio.dumps_line(block["input"]).decode()}}


def error_message(data: Any) -> str | None:
    """The message of an error reply (``{"type": "error", "error": {"type", "message"}}``),
    as ``type: message``; None when it has none."""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return None
    kind = error.get("type")
    return f"{kind}: {error['message']}" if isinstance(kind, str) and kind else error["message"]
