"""Calling a rung's model: the request it is sent, the candidate it makes, and the log of
every call a request made (the rung's, the judge's, the consistency samples').

Shared by the gateway's :class:`~admiss.serve.router.Router` and ``admiss check --live``.
A rung's request is the caller's messages after the rung's ``system`` message from
``[rungs.CHAIN.RUNG]``, with the rung's ``temperature`` and ``max_tokens`` unless the
request sets them itself.
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

import attrs

from admiss.cascade import CompiledRung
from admiss.gates.base import Candidate, GateContext
from admiss.providers import Call, Completion, ProviderError, cost_usd

# Chat-completions request fields passed on to the rung's model as the client sent them.
PASSTHROUGH = frozenset({
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "presence_penalty",
    "frequency_penalty", "seed", "response_format", "logit_bias", "user", "reasoning_effort",
})
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
RUNG, JUDGE, CONSISTENCY = "rung", "judge", "consistency"
# A receipt flag (and a usage entry's key): the call's reported token counts were past
# providers.MAX_CALL_TOKENS, so they are null on the receipt and the call is not priced.
USAGE_OUT_OF_BOUNDS = "usage_out_of_bounds"


class RequestError(ValueError):
    """A request the gateway cannot send on; ``param`` names the field at fault."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


def checked_messages(messages: Any) -> list[dict[str, Any]]:
    """``messages`` when they are a non-empty list of chat messages, else RequestError."""
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty array of messages", "messages")
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise RequestError(f"{where} must be an object", where)
        role = message.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise RequestError(f"{where}.role must be one of {', '.join(sorted(ROLES))}", f"{where}.role")
        content = message.get("content")
        if not (content is None or isinstance(content, str) or _text_parts(content)):
            raise RequestError(f"{where}.content must be a string or an array of text parts", f"{where}.content")
    return messages


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
    return {name: value for name, value in params.items() if name in PASSTHROUGH and value is not None}


def _check_value(name: str, value: Any) -> None:
    if name in _NUMBERS:
        low, high = _NUMBERS[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise RequestError(f"{name} must be a number from {low} to {high}", name)
    if name in _COUNTS and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise RequestError(f"{name} must be an integer of at least 1", name)


def transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """The conversation as one text, for gates that read "the prompt" (the judge fences it)."""
    texts = [(m["role"], _content_text(m.get("content"))) for m in messages]
    if len(texts) == 1 and texts[0][0] == "user":
        return texts[0][1]
    return "\n\n".join(f"[{role}]\n{text}" for role, text in texts)


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content)
    return content or ""


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
                 evidence: tuple[dict, ...] = (), meta: dict | None = None):
        self.ctx = ctx
        # What a made candidate carries besides its output: the bundle's evidence and meta.
        self.evidence = evidence
        self.meta = meta or {}
        self.chain = chain
        self.messages = messages
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
        settings = self.ctx.config.rung_settings(self.chain, rung.name)
        messages = ([{"role": "system", "content": settings.system}] if settings.system else []) + self.messages
        params = {**settings.params(), **self.params}
        started = time.perf_counter()
        try:
            completion = await self.ctx.providers.complete(rung.model or "", messages, params)
        except ProviderError as exc:
            self.errors[rung.name] = exc.reason
            return None, 0.0, f"not run: the rung's model call failed: {exc.reason}"
        cost, _ = cost_usd(self.ctx.config, rung.model or "", [completion.usage])
        self.calls[rung.name] = RungCall(completion, cost, round((time.perf_counter() - started) * 1000, 3))
        candidate = Candidate(output=completion.text, model=rung.model, prompt=transcript(messages), meta=self.meta,
                              evidence=self.evidence, rung=rung.name, messages=tuple(messages), params=params)
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
