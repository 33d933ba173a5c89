"""Calling a rung's model: the request it is sent, the candidate it makes, and the log of
every call a request made (the rung's, the judge's, the consistency samples').

Shared by the gateway's :class:`~admiss.serve.router.Router` and ``admiss check --live``.
A rung's request is the caller's messages after the rung's ``system`` message from
``[rungs.CHAIN.RUNG]``, with the rung's ``temperature`` and ``max_tokens`` unless the
request sets them itself.
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable, Collection, Mapping, Sequence

import attrs

from admiss.cascade import CompiledRung, ms_since
from admiss.gates.base import Candidate, GateContext
from admiss.jsonio import exact_text, joined_arrays
from admiss.providers import Call, Completion, ProviderError, cost_usd
from admiss.serve.memo import Known, Memo, known_runs

# Chat-completions request fields passed on to the rung's model as the client sent them.
PASSTHROUGH = frozenset({
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "presence_penalty",
    "frequency_penalty", "seed", "response_format", "logit_bias", "user", "reasoning_effort",
    "tools", "tool_choice", "parallel_tool_calls",
})
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
# The fields a message of each role may have; any other is refused by name, as an unknown
# top-level field is: nothing the gateway did not read is forwarded (docs/serve.md lists
# every field's fate).
MESSAGE_FIELDS = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset({"role", "content", "name", "tool_calls", "refusal"}),
    "tool": frozenset({"role", "content", "tool_call_id"}),
}
TOOL_CALL_FIELDS = frozenset({"id", "type", "function"})
FUNCTION_CALL_FIELDS = frozenset({"name", "arguments"})
TOOL_FIELDS = frozenset({"type", "function"})
FUNCTION_FIELDS = frozenset({"name", "description", "parameters", "strict"})
TOOL_CHOICES = frozenset({"none", "auto", "required"})
RUNG, JUDGE, CONSISTENCY = "rung", "judge", "consistency"
# A receipt flag (and a usage entry's key): the call's reported token counts were past
# providers.MAX_CALL_TOKENS, so they are null on the receipt and the call is not priced.
USAGE_OUT_OF_BOUNDS = "usage_out_of_bounds"


class RequestError(ValueError):
    """A request the gateway cannot send on; ``param`` names the field at fault."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


def check_array(messages: Any) -> None:
    """RequestError unless ``messages`` is a non-empty array (either wire format's first check)."""
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty array of messages", "messages")


def message_role(message: Any, where: str, roles: Collection[str]) -> str:
    """The ``role`` of the message at ``where``, one of ``roles``; RequestError otherwise."""
    if not isinstance(message, dict):
        raise RequestError(f"{where} must be an object", where)
    role = message.get("role")
    if not isinstance(role, str) or role not in roles:
        raise RequestError(f"{where}.role must be one of {', '.join(sorted(roles))}", f"{where}.role")
    return role


def checked_messages(messages: Any) -> list[dict[str, Any]]:
    """``messages`` when they are a non-empty list of chat messages, else RequestError."""
    return known_messages(messages)[0]


# The runs of messages that passed the checks, by exact content (admiss/serve/memo.py),
# each kept as its own reading: an agent resends them every turn. Checking a message cost
# about as much as finding it here, so what the look-up found is handed on to the
# conversation's memo, which saves more (benchmarks/bench_gateway_cpu.py).
_CHECKED = Memo(entries=8192, size=4 << 20, largest=64 << 10)


def known_messages(messages: Any, exact: bool = False) -> tuple[list[dict[str, Any]], Known | None]:
    """:func:`checked_messages`, with what the memo knows of them (None when a run has no key).
    ``exact``: the messages were read by orjson from JSON text (jsonio.loads_marked)."""
    check_array(messages)
    return messages, known_runs(messages, _run_ends(messages), _CHECKED, _check_run, exact)[1]


def _run_ends(messages: list) -> list[int]:
    """Where each run of the messages ends: before each message that is not a tool result, and at the end."""
    ends = [end for end, message in enumerate(messages[1:], 1)
            if type(message) is not dict or message.get("role") != "tool"]
    ends.append(len(messages))
    return ends


def _check_run(run: list, start: int) -> None:
    for index, message in enumerate(run, start):
        where = f"messages[{index}]"
        _check_message(message, message_role(message, where, ROLES), where)


def _check_message(message: dict[str, Any], role: str, where: str) -> None:
    _known_fields(message, MESSAGE_FIELDS[role], where, f"a {role} message")
    content = message.get("content")
    if not (content is None or isinstance(content, str) or _text_parts(content)):
        raise RequestError(f"{where}.content must be a string or an array of text parts", f"{where}.content")
    for key in ("name", "refusal", "tool_call_id"):
        if key in message and not isinstance(message[key], str):
            raise RequestError(f"{where}.{key} must be a string", f"{where}.{key}")
    if role == "tool" and "tool_call_id" not in message:
        raise RequestError(f"{where}.tool_call_id: missing (a tool message answers one tool call)",
                           f"{where}.tool_call_id")
    if message.get("tool_calls") is not None:
        _check_tool_calls(message["tool_calls"], f"{where}.tool_calls")


def _known_fields(holder: Mapping[str, Any], known: frozenset[str], where: str, what: str) -> None:
    if known.issuperset(holder):  # one C-level test for the usual case, a loop only to name the odd one
        return
    for key in holder:
        if key not in known:
            raise RequestError(f"{where}.{key}: unsupported field of {what} (the gateway forwards only fields "
                               f"it reads: {', '.join(sorted(known))})", f"{where}.{key}")


def _check_tool_calls(calls: Any, where: str) -> None:
    if not isinstance(calls, list):
        raise RequestError(f"{where} must be an array of tool calls", where)
    for j, call in enumerate(calls):
        at = f"{where}[{j}]"
        if not isinstance(call, dict):
            raise RequestError(f"{at} must be an object", at)
        _known_fields(call, TOOL_CALL_FIELDS, at, "a tool call")
        if not isinstance(call.get("id"), str) or not call["id"]:
            raise RequestError(f"{at}.id must be a non-empty string", f"{at}.id")
        if call.get("type", "function") != "function":
            raise RequestError(f"{at}.type must be \"function\"", f"{at}.type")
        function = call.get("function")
        if not isinstance(function, dict):
            raise RequestError(f"{at}.function must be an object", f"{at}.function")
        _known_fields(function, FUNCTION_CALL_FIELDS, f"{at}.function", "a function call")
        for key in ("name", "arguments"):
            if not isinstance(function.get(key), str):
                raise RequestError(f"{at}.function.{key} must be a string", f"{at}.function.{key}")


def _text_parts(content: Any) -> bool:
    return isinstance(content, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content)


# Fields whose type a client gets wrong most often, checked here: a bad one sent upstream
# would fail every rung in turn and exhaust the chain at the price of every call.
_NUMBERS = {"temperature": (0, 2), "top_p": (0, 1), "presence_penalty": (-2, 2), "frequency_penalty": (-2, 2)}
_COUNTS = ("max_tokens", "max_completion_tokens")


def checked_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The request fields to pass on; RequestError for one the gateway cannot honour."""
    for name, value in params.items():
        if name == "n" and value not in (None, 1):
            raise RequestError("n must be 1: the gateway gates and serves one output", "n")
        if name not in PASSTHROUGH and name != "n":
            raise RequestError(f"unsupported parameter: {name}", name)
        if value is not None:
            _check_value(name, value)
    _check_tools(params.get("tools"), params.get("tool_choice"), params.get("parallel_tool_calls"))
    return {name: value for name, value in params.items() if name in PASSTHROUGH and value is not None}


def _check_value(name: str, value: Any) -> None:
    if name in _NUMBERS:
        low, high = _NUMBERS[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise RequestError(f"{name} must be a number from {low} to {high}", name)
    if name in _COUNTS and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise RequestError(f"{name} must be an integer of at least 1", name)


def _check_tools(tools: Any, choice: Any, parallel: Any) -> None:
    """``tools``, ``tool_choice`` and ``parallel_tool_calls`` in the shapes OpenAI defines,
    each tool a function with a name; RequestError naming the field otherwise."""
    names = set()
    if tools is not None:
        if not isinstance(tools, list):
            raise RequestError("tools must be an array of tools", "tools")
        for j, tool in enumerate(tools):
            at = f"tools[{j}]"
            if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
                raise RequestError(f'{at} must be {{"type": "function", "function": {{...}}}}', at)
            _known_fields(tool, TOOL_FIELDS, at, "a tool")
            function = tool["function"]
            _known_fields(function, FUNCTION_FIELDS, f"{at}.function", "a function")
            name = function.get("name")
            if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
                raise RequestError(f"{at}.function.name must be 1 to 64 letters, digits, _ or -", f"{at}.function.name")
            if name in names:
                raise RequestError(f"{at}.function.name: a second tool named {name!r}", f"{at}.function.name")
            names.add(name)
            if "parameters" in function and not isinstance(function["parameters"], dict):
                raise RequestError(f"{at}.function.parameters must be a JSON Schema object", f"{at}.function.parameters")
    if choice is not None and not (isinstance(choice, str) and choice in TOOL_CHOICES):
        named = choice["function"].get("name") if isinstance(choice, dict) and isinstance(
            choice.get("function"), dict) and choice.get("type") == "function" else None
        if not isinstance(named, str) or named not in names:
            raise RequestError('tool_choice must be "none", "auto", "required" or '
                               '{"type": "function", "function": {"name": NAME}} naming one of the tools',
                               "tool_choice")
    if parallel is not None and not isinstance(parallel, bool):
        raise RequestError("parallel_tool_calls must be true or false", "parallel_tool_calls")


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """The conversation as one text, for gates that read "the prompt" (the judge fences it)."""
    texts = [(m["role"], _content_text(m.get("content")) + _calls_text(m.get("tool_calls"))) for m in messages]
    if len(texts) == 1 and texts[0][0] == "user":
        return texts[0][1]
    return "\n\n".join(f"[{role}]\n{text}" for role, text in texts)


def _calls_text(calls: Any) -> str:
    """An assistant message's tool calls as lines of text (the transcript holds the whole turn)."""
    if not calls:
        return ""
    return "".join(f"\n[tool call {c['id']}] {c['function']['name']}({c['function']['arguments']})" for c in calls)


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content)
    return content or ""


# The gate kinds that never read a candidate's prompt. A rung of only these gets none: the
# transcript of an agent's 40-message conversation was 3 % of its request's CPU in the
# gateway (py-spy, benchmarks/bench_gateway.py's agent rounds). Any other kind (judge,
# subprocess, consistency, one added later) gets it.
PROMPTLESS_GATES = frozenset({"non_empty", "json_valid", "schema", "tool_calls", "admissibility"})


def reads_prompt(rung: CompiledRung) -> bool:
    """Whether a gate of ``rung`` may read its candidate's prompt."""
    return any(gate.ir.kind not in PROMPTLESS_GATES for gate in rung.gates)


@attrs.frozen
class RungPlan:
    """What a rung's model call adds to every request, from ``[rungs.CHAIN.RUNG]`` and the
    rung's gates: made once per rung, not once per request."""

    # The rung's system message ahead of the request's (empty without one). Shared by every
    # request's call: nothing downstream changes a message it is sent.
    system: list[dict[str, Any]]
    # Its exact JSON text (None where orjson cannot write it).
    system_text: bytes | None
    # The request fields the settings set (the request's own win).
    params: dict[str, Any]
    reads_prompt: bool


def rung_plan(ctx: GateContext, chain: str, rung: CompiledRung) -> RungPlan:
    """``rung``'s :class:`RungPlan` under ``ctx``'s configuration."""
    settings = ctx.config.rung_settings(chain, rung.name)
    system = [{"role": "system", "content": settings.system}] if settings.system else []
    return RungPlan(system, exact_text(system), settings.params(), reads_prompt(rung))


@attrs.define
class RungCall:
    """One rung's model call that returned."""

    completion: Completion
    cost_usd: float
    latency_ms: float


class LiveRungs:
    """The ``produce`` of :meth:`CompiledChain.arun` that calls a rung's model when the rung
    has no supplied candidate, and keeps what each rung cost and how long it took."""

    def __init__(self, ctx: GateContext, chain: str, messages: list[dict[str, Any]] | None,
                 params: Mapping[str, Any] | None = None, supplied: Mapping[str, Candidate] | None = None,
                 supplied_cost: Mapping[str, float] | None = None, calls: list[Call] | None = None,
                 evidence: tuple[dict, ...] = (), meta: dict | None = None,
                 conversation: Callable[[str, str | None], tuple[dict, ...]] | None = None,
                 carry: Callable[[Completion], Completion | str] | None = None,
                 plans: dict[str, RungPlan] | None = None, messages_text: bytes | None = None):
        """``conversation(rung, output)``, when given, makes a made candidate's evidence: the
        request's conversation with the candidate's output as the final answer. ``carry``,
        when given, turns a completion into what the client's wire format serves of it, or
        says why that format cannot carry it (the rung then escalates, its call billed).
        ``plans``: each rung's :class:`RungPlan` by name, filled as rungs are reached; a
        caller that runs the chain again and again (the router) keeps one for all its runs.
        ``messages_text``: the exact JSON text of ``messages`` (jsonio.exact_text), when the
        caller has it, which the rungs' upstream bodies copy in."""
        self.ctx = ctx
        self.plans = {} if plans is None else plans
        self.carry = carry
        self.conversation = conversation
        # What a made candidate carries besides its output: the bundle's evidence and meta.
        self.evidence = evidence
        self.meta = meta or {}
        self.chain = chain
        self.messages = messages
        self.messages_text = messages_text
        self.params = dict(params or {})
        self.supplied = supplied or {}
        self.supplied_cost = supplied_cost or {}
        self.calls: dict[str, RungCall] = {}
        self.errors: dict[str, str] = {}
        # The call log of the request and where each rung's stretch of it starts, so every
        # logged call can be put down to the rung (and the gate) that made it.
        self._log = calls
        self._starts: list[tuple[str, str | None, int, float]] = []

    async def produce(self, rung: CompiledRung) -> tuple[Candidate | None, float, str]:
        self._starts.append((rung.name, rung.model, len(self._log or ()), time.perf_counter()))
        if rung.name in self.supplied:
            return self.supplied[rung.name], self.supplied_cost.get(rung.name, 0.0), ""
        if self.messages is None:
            return None, 0.0, "not run: the bundle has no prompt to send to the rung's model"
        plan = self.plans.get(rung.name) or self.plans.setdefault(rung.name, rung_plan(self.ctx, self.chain, rung))
        messages = plan.system + self.messages
        text = self.messages_text
        if text is not None and plan.system:
            text = joined_arrays([plan.system_text, text]) if plan.system_text is not None else None
        params = {**plan.params, **self.params} if plan.params else self.params
        started = time.perf_counter_ns()
        try:
            completion = await self.ctx.providers.complete(rung.model or "", messages, params, text)
        except ProviderError as exc:
            self.errors[rung.name] = exc.reason
            return None, 0.0, f"not run: the rung's model call failed: {exc.reason}"
        cost, _ = cost_usd(self.ctx.config, rung.model or "", [completion.usage])
        carried = self.carry(completion) if self.carry is not None else completion
        if isinstance(carried, str):
            self.errors[rung.name] = carried
            return None, cost, f"not run: {carried}"
        completion = carried
        self.calls[rung.name] = RungCall(completion, cost, ms_since(started))
        evidence = self.conversation(rung.name, completion.text) if self.conversation else self.evidence
        prompt = transcript(messages) if plan.reads_prompt else None
        candidate = Candidate(output=completion.text, model=rung.model, prompt=prompt, meta=self.meta,
                              evidence=evidence, rung=rung.name, messages=tuple(messages), params=params,
                              tool_calls=completion.tool_calls)
        return candidate, cost, ""

    def latency_ms(self, finished: float) -> dict[str, float]:
        """Each reached rung's wall time: its model call and its gates."""
        ends = [start for *_, start in self._starts[1:]] + [finished]
        return {name: round((end - start) * 1000, 3) for (name, _, _, start), end in zip(self._starts, ends)}

    def usage(self) -> list[dict[str, Any]]:
        """Every logged call with the rung it served, its purpose, tokens and price."""
        log = self._log or []
        bounds = [index for _, _, index, _ in self._starts[1:]] + [len(log)]
        out = []
        for (rung, model, first, _), last in zip(self._starts, bounds):
            for position, call in enumerate(log[first:last]):
                # A rung's own call comes first in its stretch: one that returned (or that
                # returned and was refused, so it is billed); gates run only after it.
                ran = rung in self.calls or rung in self.errors
                purpose = RUNG if position == 0 and ran else CONSISTENCY if call.model == model else JUDGE
                usable = call.usage is not None and not call.usage.out_of_bounds
                entry = {
                    "rung": rung,
                    "model": call.model,
                    "purpose": purpose,
                    "prompt_tokens": call.usage.input_tokens if usable else None,
                    "completion_tokens": call.usage.output_tokens if usable else None,
                    "cost_usd": cost_usd(self.ctx.config, call.model, [call.usage])[0],
                }
                if call.usage is not None and call.usage.out_of_bounds:
                    entry[USAGE_OUT_OF_BOUNDS] = True
                out.append(entry)
        return out

    def flags(self) -> list[str]:
        """What the receipt must warn of: an upstream's token counts past belief."""
        return [USAGE_OUT_OF_BOUNDS] if any(c.usage and c.usage.out_of_bounds for c in self._log or ()) else []
