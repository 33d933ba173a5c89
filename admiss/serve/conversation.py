"""A chat request's conversation as evidence for the chain's admissibility gates.

The request's ``messages`` are an agent trace: they are read by the trace reader of the
request's wire format (OpenAI Chat Completions, or Anthropic Messages with its ``system``)
and mapped by the rubric's MAP block (or the default taxonomy), as ``admiss check`` reads a
trace file. Two things differ from a trace file:

- the run's final answer is the rung's candidate, not the conversation's last assistant
  text: that text is the agent's earlier word (an ``assistant_text`` step), never proof;
- the candidate's own tool calls are proposed actions, not evidence: no step is made of
  them, so they can never admit a property.

Each evidence item keeps its step reference into the request as the client sent it
(``messages[3]``, ``messages[2].tool_calls[0]``, ``messages[2].content[1]``), which the
receipt's admissibility gate reports carry.

With ``[serve] tool_evidence = "served"`` (the strict mode), an assistant tool call counts
only when this gateway served it: its id, tool name and arguments are those of a tool call
in one of the gateway's receipts. Any other call, and its result, is not offered. A call
whose arguments came as a JSON value (Anthropic's ``input``) is compared by that value's
compact JSON text, which is the text the gateway served it as (see wire/anthropic_messages.py).
"""

from __future__ import annotations

from typing import Any, Collection

from admiss import jsonio
from admiss.errors import TraceError
from admiss.receipts import call_key
from admiss.serve.calls import RequestError
from admiss.traces import anthropic, openai_chat
from admiss.traces.mapping import CompiledMapping
from admiss.traces.steps import ASSISTANT_TEXT, FINAL_ANSWER, TOOL_CALL, Step, StepRef, Trace

# Where the candidate's final-answer step stands: not in the request, but in the receipt.
CANDIDATE_FORMAT = "gateway"
NOT_SERVED = "strict mode: this gateway did not serve this tool call (its id, tool and arguments are in no receipt)"
# The trace reader of each wire format's conversation (what :class:`Request` names).
READERS = {openai_chat.NAME: openai_chat.read, anthropic.NAME: anthropic.read}


def conversation_trace(conversation: dict[str, Any], reader: str = openai_chat.NAME) -> Trace:
    """The request's conversation (``{"messages": ...}``, with Anthropic's ``system``) as a
    Trace whose every assistant text is the agent's earlier word; RequestError at the
    message that breaks the trace's rules (a tool result that answers no call before it, a
    call answered twice, two calls with one id)."""
    try:
        trace = READERS[reader](conversation, "request")
    except TraceError as error:
        diagnostic = error.diagnostics[0]
        where = diagnostic.message.split(": ", 1)[0]
        hint = f" ({diagnostic.hint})" if diagnostic.hint else ""
        raise RequestError(f"{diagnostic.message}{hint}", where) from None
    steps = tuple(Step(ASSISTANT_TEXT, s.ref, text=s.text) if s.type == FINAL_ANSWER else s for s in trace.steps)
    return Trace(trace.format, steps, trace.model, trace.skipped)


def call_keys(trace: Trace) -> list[str]:
    """The store keys of the conversation's assistant tool calls (what strict mode looks up)."""
    return [_key(s) for s in trace.steps if s.type == TOOL_CALL and s.ref.tool_call_id is not None]


def _key(step: Step) -> str:
    arguments = step.args_text if step.args_text is not None else jsonio.dumps_line(step.args).decode()
    return call_key(step.ref.tool_call_id or "", step.tool_name or "", arguments)


class Conversation:
    """The evidence a request's conversation offers; :meth:`evidence` adds a rung's candidate.

    The steps are mapped to evidence when first needed, or by :meth:`prepare`, which the
    router schedules to run while the rung's model is being called: the trace was read (and
    checked) before the call, and its mapping, which no refusal depends on, need not hold
    the call up (it was a twelfth of an agent request's CPU, benchmarks/bench_gateway_cpu.py).
    """

    def __init__(self, trace: Trace, mapping: CompiledMapping, served: Collection[str] | None = None):
        """``served``: in strict mode, the store key of every conversation call this gateway
        served (None: every call counts)."""
        self.trace = trace
        self._mapping = mapping
        self._served = served
        self._mapped: tuple[tuple[dict, ...], list[dict]] | None = None

    def prepare(self) -> None:
        """Map the steps now, if not done yet (a loop callback: nothing to return)."""
        if self._mapped is None:
            self._mapped = self._map()

    def _map(self) -> tuple[tuple[dict, ...], list[dict]]:
        items, not_offered = [], []
        served, decide = self._served, self._mapping.decide
        for step in self.trace.steps:
            if served is not None and step.type == TOOL_CALL and not _was_served(step, served):
                not_offered.append({"step": step.ref.to_dict(), "type": TOOL_CALL, "tool": step.tool_name,
                                    "reason": NOT_SERVED})
                continue
            decision = decide(step)
            if decision.item is not None:
                items.append(decision.item)
            else:
                not_offered.append(decision.not_offered())
        return tuple(items), not_offered

    @property
    def items(self) -> tuple[dict, ...]:
        """The conversation's evidence items, in step order."""
        self.prepare()
        return self._mapped[0]  # type: ignore[index]

    @property
    def not_offered(self) -> list[dict]:
        """The steps that gave no evidence item, each with why."""
        self.prepare()
        return self._mapped[1]  # type: ignore[index]

    def evidence(self, rung: str, output: str | None) -> tuple[dict, ...]:
        """The conversation's items and the candidate's output as the run's final answer."""
        if not output:
            return self.items
        item = self._mapping.decide(Step(FINAL_ANSWER, StepRef(CANDIDATE_FORMAT, f"candidate[{rung}]"), text=output)).item
        return self.items + ((item,) if item is not None else ())

    def summary(self) -> dict[str, Any]:
        """What the receipt says of the conversation: its size and the steps not offered."""
        return {"steps": len(self.trace.steps), "evidence": len(self.items), "not_offered": self.not_offered}


def _was_served(step: Step, served: Collection[str]) -> bool:
    return step.ref.tool_call_id is not None and _key(step) in served
