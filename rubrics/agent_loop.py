"""An agent loop through `admiss serve`, with the official openai client (docs/serve.md, "A
worked example"). The gateway serves rubrics/support_agent_serve.rubric; this program is the
agent runtime: it sends each turn with its tools, runs the tool calls it is served, and
appends their results, until a reply with no tool call ends the loop.

    python rubrics/agent_loop.py http://127.0.0.1:8000/v1 "Please refund order A1 (20 EUR)."

It prints one JSON line per turn: the served rung and the tool calls or the reply, or, when
the gateway refuses to serve an unproven claim, the refusal and its receipt id.
"""

from __future__ import annotations

import json
import os
import sys

import openai

TOOLS = [
    {"type": "function", "function": {
        "name": "lookup_order", "description": "Read an order",
        "parameters": {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}}},
    {"type": "function", "function": {
        "name": "issue_refund", "description": "Refund an order through the payments system",
        "parameters": {"type": "object", "properties": {"order": {"type": "string"}, "amount": {"type": "number"}},
                       "required": ["order", "amount"]}}},
]


def run_tool(name: str, arguments: dict) -> dict:
    """The tools themselves: a stand-in for the shop's order and payments systems."""
    if name == "lookup_order":
        return {"order": arguments["order"], "status": "paid", "amount": 20}
    return {"order": arguments["order"], "status": "refunded", "refund_id": "rf_1001"}


def agent(client: openai.OpenAI, task: str, max_turns: int = 8) -> None:
    messages: list[dict] = [{"role": "user", "content": task}]
    for _ in range(max_turns):
        try:
            reply = client.chat.completions.create(model="support", messages=messages, tools=TOOLS)
        except openai.UnprocessableEntityError as refused:  # no rung's answer passed its gates
            print(json.dumps({"refused": refused.body["code"], "receipt_id": refused.body["receipt_id"]}))
            return
        message, served = reply.choices[0].message, reply.model_extra["admiss"]
        if not message.tool_calls:
            print(json.dumps({"served_rung": served["served_rung"], "reply": message.content}))
            return
        print(json.dumps({"served_rung": served["served_rung"], "tool_calls": [c.function.name for c in message.tool_calls]}))
        messages.append(message.model_dump(include={"role", "content", "tool_calls"}))
        for call in message.tool_calls:
            result = run_tool(call.function.name, json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})


if __name__ == "__main__":
    agent(openai.OpenAI(base_url=sys.argv[1], api_key=os.environ.get("ADMISS_KEY", "none")), sys.argv[2])
