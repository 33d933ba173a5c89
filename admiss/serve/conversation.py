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

An agent resends its whole conversation each turn, so a conversation is read in runs (a
message and the messages after it that answer its tool calls: Chat Completions' ``tool``
messages, Anthropic's user turns of ``tool_result`` blocks), each run read alone by the
same trace reader and mapped by the same mapping, and kept across requests by its exact
content (:class:`Readings`, admiss/serve/memo.py); Anthropic's ``system`` is read alone
too. A run read before is not read again: its steps' evidence items are moved to where the
run stands in this request. Reading the runs apart gives the whole reading's steps whenever
every call of a run before the last is answered in its run: a tool result answers only an
open call, so no run reaches into another. When that does not hold, or a run breaks a
trace's rule, the conversation is read whole, as before, and its error is the whole reading's.
"""

from __future__ import annotations

from typing import Any, Collection

from admiss import jsonio
from admiss.errors import TraceError
from admiss.receipts import call_key
from admiss.serve.calls import RequestError
from admiss.serve.memo import Known, Memo, content_key
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
                not_offered.append(_not_served(step.ref.to_dict(), step.tool_name))
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
        return {"steps": self.steps(), "evidence": len(self.items), "not_offered": self.not_offered}

    def steps(self) -> int:
        """How many steps the conversation's trace has."""
        return len(self.trace.steps)


def _not_served(ref: dict, tool: str | None) -> dict:
    """The not-offered entry of a call strict mode finds in no receipt."""
    return {"step": ref, "type": TOOL_CALL, "tool": tool, "reason": NOT_SERVED}


def _was_served(step: Step, served: Collection[str]) -> bool:
    return step.ref.tool_call_id is not None and _key(step) in served


# A run read alone: its step count, each step's (evidence item or not-offered entry, whether
# it is an item, (store key, tool) of a tool call or None, its reference's path after the
# message: what moving the reference keeps), and whether a call is left open.
Reading = tuple[int, tuple[tuple[dict, bool, tuple[str | None, str | None] | None, str | None], ...], bool]


class Readings:
    """The runs of conversations read under one mapping, kept across requests: each wire
    format's runs (a Chat Completions message and the tool messages after it; an Anthropic
    Messages message and the user turns of tool results after it) and Anthropic's ``system``,
    each read by its format's trace reader."""

    def __init__(self, mapping: CompiledMapping):
        self._mapping = mapping
        # 50 agents of 40 messages hold about 1,000 runs. The runs kept are those the checks'
        # memos keep (calls._CHECKED, wire/anthropic_messages._CHECKED), so they share their
        # content. A key names its reader: one content reads to other references in each.
        self.memo = Memo(entries=4096, size=4 << 20, largest=64 << 10)

    def parts(self, conversation: dict[str, Any], known: Known | None,
              reader: str = openai_chat.NAME) -> list[tuple[int, Reading]] | None:
        """Each run of the conversation with where it starts (Anthropic's ``system`` first, at
        0), or None when it must be read whole: no keys, another shape, a run that breaks a
        rule or leaves a call open."""
        messages = conversation.get("messages")
        fields = len(conversation) - (reader == anthropic.NAME and "system" in conversation)
        if known is None or fields != 1 or type(messages) is not list or not known.starts \
                or known.starts[-1] >= len(messages):
            return None
        parts, memo = [], self.memo
        if len(conversation) > 1:
            system = {"messages": [], "system": conversation["system"]}
            key = content_key(system["system"])
            reading = memo.get((reader, None, key), system) if key is not None else None
            if reading is None:
                reading = self._read(system, reader)
                if reading is None:
                    return None
                if key is not None:
                    memo.put((reader, None, key), system, reading, len(key))
            parts.append((0, reading))
        keys = [(reader, key) for key in known.keys]
        found = memo.get_all(keys, known.kept)
        for index, reading in enumerate(found):
            if reading is None:
                # The run kept is equal to messages[start:end], and what the key says.
                run = known.kept[index]
                found[index] = reading = self._read({"messages": run}, reader)
                if reading is None:
                    return None
                memo.put(keys[index], run, reading, len(known.keys[index]))
        parts += zip(known.starts, found)
        if any(reading[2] for _, reading in parts[:-1]):
            return None
        return parts

    def _read(self, conversation: dict[str, Any], reader: str) -> Reading | None:
        try:
            trace = conversation_trace(conversation, reader)
        except RequestError:
            return None
        entries, open_call = [], False
        for step in trace.steps:
            path = step.ref.path
            if path == "system" and "system" in conversation:
                tail = None  # Anthropic's system prompt: it stands before every message, never moved
            elif path.startswith(head := f"messages[{step.ref.message_index}]"):
                tail = path[len(head):]
            else:
                return None  # a reference this module could not move
            decision = self._mapping.decide(step)
            call = None
            if step.type == TOOL_CALL:
                call = (_key(step) if step.ref.tool_call_id is not None else None, step.tool_name)
                open_call = open_call or step.result_ref is None
            item = decision.item
            entries.append((item, True, call, tail) if item is not None else (decision.not_offered(), False, call, tail))
        return len(trace.steps), tuple(entries), open_call


def part_keys(parts: list[tuple[int, Reading]]) -> list[str]:
    """:func:`call_keys` of a conversation read in runs."""
    return [call[0] for _, (_, entries, _) in parts for _, _, call, _ in entries
            if call is not None and call[0] is not None]


class RecalledConversation(Conversation):
    """A :class:`Conversation` put together from its runs' readings (:class:`Readings`)."""

    def __init__(self, parts: list[tuple[int, Reading]], mapping: CompiledMapping,
                 served: Collection[str] | None = None):
        self._parts = parts
        self._mapping = mapping
        self._served = served
        self._mapped = None

    def steps(self) -> int:
        return sum(reading[0] for _, reading in self._parts)

    def _map(self) -> tuple[tuple[dict, ...], list[dict]]:
        # Every step of the conversation passes here on every request: the moving is written
        # out in the loop, each entry and reference copied once (the receipt takes them).
        items, not_offered = [], []
        served = self._served
        for offset, (_, entries, _) in self._parts:
            for entry, is_item, call, tail in entries:
                step = entry["step"].copy()
                if offset and tail is not None:
                    index = step["message_index"] + offset
                    step["path"] = f"messages[{index}]{tail}"
                    step["message_index"] = index
                if served is not None and call is not None and (call[0] is None or call[0] not in served):
                    not_offered.append(_not_served(step, call[1]))
                    continue
                moved = entry.copy()
                moved["step"] = step
                (items if is_item else not_offered).append(moved)
        return tuple(items), not_offered
