"""The two wire formats a client may speak to ``admiss serve``, each driven by its official
client (openai, anthropic), behind one small interface so that one test covers both routes.

A test builds its conversation with a wire's helpers (``made_call``, ``results``, ...), sends
it with :meth:`Wire.complete` and reads a :class:`Reply`, whatever the format. Paths into the
request (``call_path``) are the wire's own: a receipt's step references point into the
request as the client sent it.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import attrs
import openai
import pytest

from gatewaykit import KEY, Gateway


@attrs.frozen
class Call:
    id: str
    name: str
    arguments: str  # JSON text


@attrs.frozen
class Reply:
    """A served answer, in either format: its text, its tool calls, whether it stopped to call tools."""

    text: str | None
    calls: tuple[Call, ...]
    stopped_for_tools: bool
    served_rung: str
    receipt_id: str
    raw: Any


class OpenAIWire:
    name = "openai"
    statuses = {422: openai.UnprocessableEntityError, 400: openai.BadRequestError}

    def tools(self, tools: list[dict]) -> list[dict]:
        return tools

    def choice(self, parallel: bool) -> dict[str, Any]:
        return {"tool_choice": "auto", "parallel_tool_calls": parallel}

    def complete(self, gw: Gateway, messages: list[dict], chain: str, tools: list[dict], **more: Any) -> Reply:
        response = gw.client().chat.completions.create(model=chain, messages=messages, tools=tools, **more)
        message = response.choices[0].message
        calls = tuple(Call(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or ())
        admiss = response.model_extra["admiss"]
        return Reply(message.content, calls, response.choices[0].finish_reason == "tool_calls",
                     admiss["served_rung"], admiss["receipt_id"], response)

    def stream(self, gw: Gateway, messages: list[dict], chain: str, tools: list[dict]) -> tuple[list[Call], int, bool]:
        """(the streamed calls, how many events carried argument pieces, whether it stopped for tools)."""
        chunks = list(gw.client().chat.completions.create(model=chain, messages=messages, tools=tools, stream=True))
        calls: dict[int, dict] = {}
        for chunk in chunks:
            for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                entry = calls.setdefault(delta.index, {"id": delta.id, "name": delta.function.name, "arguments": ""})
                entry["arguments"] += delta.function.arguments or ""
        pieces = sum(1 for c in chunks if c.choices and c.choices[0].delta.tool_calls)
        return [Call(**c) for c in calls.values()], pieces, chunks[-1].choices[0].finish_reason == "tool_calls"

    def as_message(self, reply: Reply) -> dict:
        """The served assistant message as the next request's history holds it."""
        return reply.raw.choices[0].message.model_dump(exclude_none=True, exclude={"annotations", "audio",
                                                                                  "function_call", "refusal"})

    def made_call(self, call_id: str, name: str, arguments: Any) -> dict:
        """An assistant message proposing one call (written by the client, not served)."""
        arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return {"role": "assistant", "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]}

    def results(self, *results: tuple[str, Any], is_error: bool = False) -> list[dict]:
        """The messages that answer calls: (call id, result) each; ``is_error`` has no place here."""
        assert not is_error, "chat completions' tool messages have no error flag"
        return [{"role": "tool", "tool_call_id": call_id, "content": _text(result)} for call_id, result in results]

    def call_path(self, message: int, call: int) -> str:
        return f"messages[{message}].tool_calls[{call}]"

    def result_param(self, message: int, result: int) -> str:
        return f"messages[{message + result}].tool_call_id"

    def error_body(self, caught: pytest.ExceptionInfo) -> dict:
        return caught.value.body


class AnthropicWire:
    name = "anthropic"
    statuses = {422: anthropic.UnprocessableEntityError, 400: anthropic.BadRequestError}

    def tools(self, tools: list[dict]) -> list[dict]:
        out = []
        for tool in tools:
            function = tool["function"]
            out.append({"name": function["name"], "input_schema": function["parameters"],
                        **({"description": function["description"]} if "description" in function else {})})
        return out

    def choice(self, parallel: bool) -> dict[str, Any]:
        return {"tool_choice": {"type": "auto", "disable_parallel_tool_use": not parallel}}

    def client(self, gw: Gateway) -> anthropic.Anthropic:
        return anthropic.Anthropic(base_url=gw.url, api_key=KEY, max_retries=0)

    def complete(self, gw: Gateway, messages: list[dict], chain: str, tools: list[dict], **more: Any) -> Reply:
        response = self.client(gw).messages.create(model=chain, messages=messages, tools=tools, max_tokens=256,
                                                   **more)
        text = "".join(block.text for block in response.content if block.type == "text") or None
        calls = tuple(Call(b.id, b.name, json.dumps(b.input)) for b in response.content if b.type == "tool_use")
        admiss = response.model_extra["admiss"]
        return Reply(text, calls, response.stop_reason == "tool_use", admiss["served_rung"], admiss["receipt_id"],
                     response)

    def stream(self, gw: Gateway, messages: list[dict], chain: str, tools: list[dict]) -> tuple[list[Call], int, bool]:
        with self.client(gw).messages.stream(model=chain, messages=messages, tools=tools, max_tokens=256) as stream:
            events = list(stream)
            final = stream.get_final_message()
        pieces = sum(1 for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta")
        calls = [Call(b.id, b.name, json.dumps(b.input)) for b in final.content if b.type == "tool_use"]
        return calls, pieces, final.stop_reason == "tool_use"

    def as_message(self, reply: Reply) -> dict:
        # As an application using the SDK does: the response's blocks go back as they came.
        return {"role": "assistant", "content": reply.raw.content}

    def made_call(self, call_id: str, name: str, arguments: Any) -> dict:
        return {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]}

    def results(self, *results: tuple[str, Any], is_error: bool = False) -> list[dict]:
        """One user turn answering the calls, a tool_result block each."""
        return [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": _text(result),
             **({"is_error": True} if is_error else {})} for call_id, result in results]}]

    def call_path(self, message: int, call: int) -> str:
        return f"messages[{message}].content[{call}]"

    def result_param(self, message: int, result: int) -> str:
        return f"messages[{message}].content[{result}].tool_use_id"

    def error_body(self, caught: pytest.ExceptionInfo) -> dict:
        return caught.value.body["error"]


WIRES = [OpenAIWire(), AnthropicWire()]


def _text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result)
