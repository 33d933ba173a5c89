"""An upstream that plays an agent's model: replies with text or tool calls by turn.

The request's first user message that holds ``{"script": {...}}`` gives, per upstream model,
the list of its replies by turn (the number of assistant messages the request already
holds), so one script drives a whole agent loop. A reply is a text, or
``{"tool_calls": [{"name", "arguments"}], "text"?: ...}``; each call gets a fresh id.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent / "gates"))

from chat_server import SCRIPT_MARK, Recorded, Reply, completion  # noqa: E402


# A support agent's refund claim and how its conversation becomes evidence (the property and
# MAP block that tests of agents put their chains under).
REFUND_RULES = """
PROPERTY refund_issued "The refund was issued by the payments system" {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "order lookup", "refund request"
  DEFAULT no
}

MAP {
  WHEN TOOL "issue_refund" OUTCOME ok WHERE result.status == "refunded"
    AS procedurally_sound_tool_call LABEL "payments system" FOR refund_issued
  WHEN TOOL OUTCOME failed AS flawed_tool_call
  WHEN TOOL AS interpretation
  WHEN FINAL AS final_answer
  WHEN TEXT AS interpretation
}
"""


def call(name: str, arguments: Any) -> dict:
    """A scripted tool call; arguments given as a value are sent as JSON text."""
    return {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}


def agent_route(recorded: Recorded) -> Reply | None:
    """The reply the request's first scripted user message gives its model at this turn."""
    body = recorded.body if isinstance(recorded.body, dict) else {}
    messages = body.get("messages") or []
    for message in messages:
        text = message.get("content") if message.get("role") == "user" else None
        if isinstance(text, str) and SCRIPT_MARK in text:
            script, _ = json.JSONDecoder().raw_decode(text, text.index(SCRIPT_MARK))
            break
    else:
        return None
    turns = script["script"].get(body.get("model"))
    if turns is None:
        return None
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    spec = turns[min(turn, len(turns) - 1)]
    if isinstance(spec, str):
        return completion(spec)
    calls = [{"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function", "function": c} for c in spec["tool_calls"]]
    reply = completion("")
    message = reply.body["choices"][0]["message"]
    message["content"] = spec.get("text")
    message["tool_calls"] = calls
    reply.body["choices"][0]["finish_reason"] = "tool_calls"
    return reply


