"""OpenAI's Chat Completions wire format: ``POST /v1/chat/completions``.

The request's fields are chat-completions fields already, checked by admiss/serve/calls.py
(every field's fate is in docs/serve.md); the conversation is read by the OpenAI Chat
Completions trace reader. The answer is a ``chat.completion`` or, with ``stream: true``, its
``chat.completion.chunk`` events, each with the ``admiss`` object beside OpenAI's fields.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Callable

from admiss.serve.calls import checked_params, known_messages
from admiss.serve.router import Request, Served
from admiss.serve.wire import Incoming, admiss_object, pieces, sse

PATH = "/v1/chat/completions"
KEY_HEADERS = "Authorization: Bearer KEY"


def api_key(header: Callable[[bytes], str | None]) -> str | None:
    """The key of ``Authorization: Bearer KEY`` (``header`` gives a request header by its lower-case name)."""
    scheme, _, key = (header(b"authorization") or "").partition(" ")
    return key.strip() if scheme.lower() == "bearer" else None


def read(body: dict[str, Any], exact: bool = False) -> Incoming:
    """The neutral request of a chat-completions body (its ``model`` already read);
    RequestError naming the field at fault. ``exact``: orjson read the body
    (jsonio.loads_marked), which lets the messages' memo go by their JSON text alone."""
    fields = dict(body)
    fields.pop("model", None)
    stream = fields.pop("stream", False) is True
    options = fields.pop("stream_options", None)
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    messages, known = known_messages(fields.pop("messages", None), exact)
    request = Request(messages, checked_params(fields), {"messages": messages}, known=known,
                      messages_text=known.text if known is not None else None)
    return Incoming(request, stream, include_usage)


def error(status: int, message: str, kind: str, code: str | None = None, param: str | None = None,
          receipt_id: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape, with the receipt id when the request has a receipt."""
    error: dict[str, Any] = {"message": message, "type": kind, "param": param, "code": code}
    if receipt_id is not None:
        error["receipt_id"] = receipt_id
    return {"error": error}


def response(served: Served, created: int) -> dict[str, Any]:
    """The ``chat.completion`` of a served output."""
    return {
        "id": served.receipt["request_id"],
        "object": "chat.completion",
        "created": created,
        "model": served.model,
        "choices": [{"index": 0, "message": _message(served), "finish_reason": served.finish_reason,
                     "logprobs": None}],
        "usage": served.usage,
        "admiss": admiss_object(served),
    }


def _message(served: Served) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": served.output}
    if served.tool_calls:
        message["tool_calls"] = list(served.tool_calls)
    return message


async def events(served: Served, created: int, incoming: Incoming) -> AsyncIterator[bytes]:
    """The verified output as OpenAI chat.completion.chunk events, a word or so each."""
    head = {"id": served.receipt["request_id"], "object": "chat.completion.chunk", "created": created,
            "model": served.model}

    def chunk(delta: dict, finish: str | None = None, **extra: Any) -> bytes:
        return sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
                    **extra})

    yield chunk({"role": "assistant", "content": "" if served.output is not None or not served.tool_calls else None})
    for piece in pieces(served.output or ""):
        yield chunk({"content": piece})
    for index, call in enumerate(served.tool_calls):
        # As OpenAI streams a call: its id, type and name first, then its arguments in pieces.
        function = call["function"]
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": function["name"], "arguments": ""}}]})
        for piece in pieces(function["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, served.finish_reason, admiss=admiss_object(served))
    if incoming.include_usage:
        yield sse({**head, "choices": [], "usage": served.usage})
    yield b"data: [DONE]\n\n"
