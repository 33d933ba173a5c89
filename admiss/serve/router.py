"""The live cascade: call the cheapest rung's model, gate its output, escalate on a fail.

A rung's model is called only when every rung below it failed its gates (or its call
failed), so a rung above the one that serves is never called. Each request gets a receipt:
the JSON report's ``chain`` object plus the request id, the time, every model call's token
usage and price (the rungs', the judge's, the consistency samples'), and each rung's
latency. With a store, the receipt is committed before :meth:`Router.complete` returns.
:meth:`Router.gate` runs one rung's gates on an output made elsewhere (the LiteLLM
guardrail's), with the same conversation evidence and the same receipt.

    >>> router = admiss.Router("rubrics/sec_filings_serve.rubric", config="admiss.toml")
    >>> served = router.complete_sync([{"role": "user", "content": "Who operates it?"}])
    >>> served.output, served.receipt["id"]
"""

from __future__ import annotations

import asyncio
import os
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable

import attrs

from admiss.cascade import ChainResult, CompiledChain, CompiledRung
from admiss.config import ANTHROPIC_API, Config
from admiss.errors import Diagnostic, InputError
from admiss.gates.base import Candidate
from admiss.providers import Completion, ProviderError, recording_calls, split_model
from admiss.receipts import StoreError, StoreWriter, open_writer, utc_timestamp
from admiss.redact import redact, redacted_and_text
from admiss.report.json import chain_dict, shared
from admiss.serve.calls import LiveRungs, RungPlan, checked_params, known_messages, transcript
from admiss.serve.conversation import (
    Conversation, Readings, RecalledConversation, call_keys, conversation_trace, part_keys,
)
from admiss.serve.memo import Known
from admiss.traces import openai_chat

SERVED, EXHAUSTED = "served", "exhausted"
MODEL_GATES = ("judge",)  # gates that call a model of their own (consistency calls the rung's)


@attrs.frozen
class Served:
    """What a request got: the served output (None when the chain was exhausted) and its receipt."""

    output: str | None
    rung: str | None
    model: str | None
    finish_reason: str | None
    receipt: dict[str, Any]
    # The served candidate's tool calls, in OpenAI's shape.
    tool_calls: tuple[dict[str, Any], ...] = ()
    # The served rung's own stop reason when its provider speaks Anthropic's Messages API.
    stop_reason: str | None = None

    @property
    def outcome(self) -> str:
        return SERVED if self.rung is not None else EXHAUSTED

    @property
    def usage(self) -> dict[str, int]:
        """The request's token usage summed over every call it made (rungs and gates)."""
        prompt = sum(u["prompt_tokens"] or 0 for u in self.receipt["usage"])
        completion = sum(u["completion_tokens"] or 0 for u in self.receipt["usage"])
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@attrs.frozen
class Request:
    """A chat request in the gateway's own terms, whichever wire format it came in
    (admiss/serve/wire/ makes one): the checked chat-completions ``messages`` and ``params``
    the rungs' providers are sent, and the conversation as the client sent it, which the
    trace reader named ``reader`` reads when the chain's admissibility gates need it."""

    messages: list[dict[str, Any]]
    params: dict[str, Any]
    conversation: dict[str, Any]
    reader: str = openai_chat.NAME
    # What the wire format can carry of a reply: the completion as it will be served (the
    # gates check that), or why it cannot be served in this format (the rung escalates).
    carry: Callable[[Completion], Completion | str] | None = None
    # What the memo knows of the conversation's messages: what calls.known_messages gave for
    # these very messages, when the wire format asked; the conversation is then read in runs
    # kept across requests.
    known: Known | None = None
    # The exact JSON text of ``messages`` (jsonio.exact_text), when the wire format has it
    # made: the rungs' upstream bodies copy it in rather than write the messages again.
    messages_text: bytes | None = None


@attrs.frozen
class GateHealth:
    """One gate's error budget as /metrics shows it."""

    rung: str
    gate: str
    position: int
    error_rate: float
    disabled: bool


class Router:
    """The live cascade of one CHAIN of a rubric.

    ``rubric_or_path``: an :class:`admiss.Rubric` or the path of a ``.rubric`` / IR file.
    ``config``: an ``admiss.toml`` path or a :class:`~admiss.config.Config` (default: found
    beside the rubric, else in the working folder). ``chain``: the CHAIN, needed when the
    rubric has several. ``store``: a receipt store (an SQLite path or a postgresql:// URL;
    the router opens and closes it), a :class:`~admiss.receipts.StoreWriter` shared with others (its owner closes it), or
    None to store nothing. ``listeners`` are called with each receipt once it is stored.
    ``calls_rungs=False``: the router only gates outputs made elsewhere (:meth:`gate`), so
    its rungs need no MODEL nor provider (a judge's model still needs its provider).
    """

    def __init__(self, rubric_or_path: Any, config: str | Path | Config | None = None, chain: str | None = None,
                 store: str | Path | StoreWriter | None = None, calls_rungs: bool = True):
        from admiss.api import Rubric, load
        from admiss.interpreter import Runtime

        config_path = config if isinstance(config, (str, Path)) else None
        rubric = rubric_or_path if isinstance(rubric_or_path, Rubric) else load(rubric_or_path, config_path)
        self.rubric = rubric
        self._runtime = Runtime(rubric.compiled, Path(config_path) if config_path else None,
                                config=config if isinstance(config, Config) else None, gateway=True)
        name = self._runtime.chain_name(chain)
        if name is None:
            raise InputError([Diagnostic("E150", "the rubric has no CHAIN to serve", file=rubric.compiled.origin)])
        self.chain: CompiledChain = self._runtime.chain(name)
        self.ctx = self._runtime.gate_context()
        self.config: Config = self.ctx.config
        _check_servable(self.chain, self.config, rubric.compiled.origin, calls_rungs)
        _use_fast_sender(self.ctx.providers)
        self._owns_store = isinstance(store, (str, Path))
        self._store = store_writer(store) if self._owns_store else store
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        # Only a chain with admissibility gates reads the conversation (a tenth of a
        # millisecond for 40 messages, spent for nothing otherwise).
        self._reads_conversation = any(g.ir.kind == "admissibility" for r in self.chain.rungs for g in r.gates)
        self.readings = Readings(rubric.compiled.mapping)
        # Each rung's system message, settings' fields and prompt need, made on its first call.
        self._plans: dict[str, RungPlan] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def store(self) -> StoreWriter | None:
        return self._store

    def attach_store(self, writer: StoreWriter) -> None:
        """Store receipts through ``writer``, which its owner closes."""
        self._store, self._owns_store = writer, False

    @property
    def top_rung(self) -> CompiledRung:
        return self.chain.rungs[-1]

    async def complete(self, messages: Any, /, **params: Any) -> Served:
        """Run the cascade on a chat request; the served output and its (stored) receipt.

        Raises :class:`~admiss.serve.calls.RequestError` for a malformed request, before
        any model is called. ``messages`` is positional-only, so a request field of any name
        (``self``, ``messages``) lands in ``params`` and is refused there, not mistaken for
        an argument.
        """
        messages, known = known_messages(messages)
        return await self.run(Request(messages, checked_params(params), {"messages": messages}, known=known,
                                      messages_text=known.text if known is not None else None))

    async def run(self, request: Request) -> Served:
        """Run the cascade on a checked :class:`Request`; the served output and its (stored)
        receipt. RequestError when its conversation breaks a trace's rules."""
        started, created_at = time.perf_counter(), utc_timestamp()
        conversation = await self._conversation(request) if self._reads_conversation else None
        if conversation is not None:
            # Mapped in the loop's next turn, by when the rung's call is sent and waits for
            # the model; a rung that answers first maps it itself.
            asyncio.get_running_loop().call_soon(conversation.prepare)
        rungs = LiveRungs(self.ctx, self.chain.name, request.messages, request.params, calls=recording_calls(),
                          conversation=conversation.evidence if conversation else None, carry=request.carry,
                          plans=self._plans, messages_text=request.messages_text)
        result = await self.chain.arun(rungs.produce)
        call = rungs.calls.get(result.served) if result.served is not None else None
        tool_calls = call.completion.tool_calls if call else ()
        receipt = await self._receipt(result, rungs, started, created_at, conversation, tool_calls)
        return Served(
            output=call.completion.text if call else None,
            rung=result.served,
            model=self.chain_model(result.served),
            finish_reason=_finish_reason(call.completion) if call else None,
            receipt=receipt,
            tool_calls=tool_calls,
            stop_reason=call.completion.stop_reason if call else None,
        )

    async def gate(self, messages: Any, output: str | None, /, rung: str | None = None, model: str | None = None,
                   tool_calls: tuple[dict[str, Any], ...] = ()) -> Served:
        """One rung's gates on an output another proxy's model made for ``messages``
        (the LiteLLM guardrail's use): the conversation is the evidence as in
        :meth:`complete`, no rung's model is called, and the receipt is stored the same way.

        ``rung``: which rung's gates (default: the chain's only rung). ``model``: the model
        that made the output (default: the rung's MODEL), which a judge must not be.
        Served.output is ``output`` when the gates pass, None when they fail.
        """
        messages, known = known_messages(messages)
        chosen = self.gating_rung(rung)
        started, created_at = time.perf_counter(), utc_timestamp()
        conversation = await self._conversation(Request(messages, {}, {"messages": messages}, known=known)) \
            if self._reads_conversation else None
        candidate = Candidate(output=output, model=model or chosen.model, prompt=transcript(messages),
                              evidence=conversation.evidence(chosen.name, output) if conversation else (),
                              rung=chosen.name, messages=tuple(messages), tool_calls=tuple(tool_calls))
        rungs = LiveRungs(self.ctx, self.chain.name, None, supplied={chosen.name: candidate}, calls=recording_calls())
        await rungs.produce(chosen)  # starts the rung's stretch of the call log
        result = await self.chain.agate(chosen, candidate)
        served = result.served is not None
        receipt = await self._receipt(result, rungs, started, created_at, conversation,
                                      candidate.tool_calls if served else ())
        return Served(output=output if served else None, rung=result.served, model=candidate.model,
                      finish_reason=None, receipt=receipt, tool_calls=candidate.tool_calls if served else ())

    def gating_rung(self, name: str | None = None) -> CompiledRung:
        """The rung whose gates :meth:`gate` runs; InputError E190 when ``name`` is none of
        the chain's, or is missing and the chain has several rungs."""
        if name is None and len(self.chain.rungs) == 1:
            return self.chain.rungs[0]
        found = next((r for r in self.chain.rungs if r.name == name), None)
        if found is None:
            names = ", ".join(r.name for r in self.chain.rungs)
            said = f"rung {name!r} is not in" if name is not None else "name the rung to gate with: there are several in"
            raise InputError([Diagnostic("E190", f"{said} chain '{self.chain.name}'", file=self.rubric.compiled.origin,
                                         hint=f"rungs: {names}")])
        return found

    async def _receipt(self, result: ChainResult, rungs: LiveRungs, started: float, created_at: str,
                       conversation: Conversation | None, tool_calls: tuple[dict[str, Any], ...]) -> dict[str, Any]:
        """The request's receipt, stored (when there is a store) before this returns."""
        finished = time.perf_counter()
        # One draw from the system's randomness for both ids.
        token = os.urandom(24).hex()
        receipt, text = self._redacted({
            "id": "rcpt_" + token[:24],
            "request_id": "chatcmpl-" + token[24:],
            "created_at": created_at,
            # The receipt takes the evidence's step references as they are, uncopied: they
            # were made for this request and nothing else holds them once it returns (a
            # deep copy of each was 5% of a 40-message agent request's CPU in cProfile's view,
            # benchmarks/bench_gateway_cpu.py).
            "chain": chain_dict(result, own=shared),
            "usage": rungs.usage(),
            "latency_ms": rungs.latency_ms(finished),
            "total_latency_ms": round((finished - started) * 1000, 3),
            "top_rung": {"rung": self.top_rung.name, "model": self.top_rung.model},
            "model_errors": [{"rung": rung, "error": error} for rung, error in rungs.errors.items()],
            "flags": rungs.flags(),
            **({"tool_calls": list(tool_calls)} if tool_calls else {}),
            **({"conversation": conversation.summary()} if conversation is not None else {}),
        })
        await self._keep(receipt, text)
        return receipt

    async def _conversation(self, request: Request) -> Conversation:
        """The request's conversation as evidence (RequestError when it breaks a trace's
        rules); in strict mode only with the tool calls this gateway served."""
        parts = self.readings.parts(request.conversation, request.known, request.reader)
        trace = conversation_trace(request.conversation, request.reader) if parts is None else None
        served = None
        if self.config.serve.tool_evidence == "served":
            keys = call_keys(trace) if trace is not None else part_keys(parts)  # type: ignore[arg-type]
            served = set()
            if keys and self._store is not None:
                served = await self._store.aread(lambda store, wanted: store.served(wanted), keys)
        if trace is None:
            return RecalledConversation(parts, self.rubric.compiled.mapping, served)  # type: ignore[arg-type]
        return Conversation(trace, self.rubric.compiled.mapping, served)

    async def _keep(self, receipt: dict[str, Any], text: str | None = None) -> None:
        """Store and count the receipt (``text``: its JSON text, when the redaction's look
        made it). Once queued it is committed and counted even if the caller gives up while
        it waits, so the store and the counters never disagree: the writer counts it (calls
        ``stored``) whether or not the wait was cancelled. (asyncio.shield, which kept a
        cancel off the writer's future instead, cost each answer a loop turn more: 20 against
        10 us of CPU for the hand-off alone, an SQLite writer's queue and wait with its write
        taken out, one request at a time.)"""
        if self._store is None:
            self._tell(receipt)
            return
        await self._store.queue(receipt, text, partial(self._tell, receipt))

    def _tell(self, receipt: dict[str, Any]) -> None:
        for listener in self.listeners:
            listener(receipt)

    def complete_sync(self, messages: Any, /, **params: Any) -> Served:
        """:meth:`complete` for code without an event loop (one loop kept across calls, so
        provider connections are reused)."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(self.complete(messages, **params))

    def chain_model(self, rung: str | None) -> str | None:
        return next((r.model for r in self.chain.rungs if r.name == rung), None)

    def gate_health(self) -> list[GateHealth]:
        """Each gate's error rate over its budget window, and whether its budget disabled it."""
        return [GateHealth(rung, gate, position, budget.error_rate, budget.disabled)
                for rung, gate, position, budget in self.gate_budgets()]

    def gate_budgets(self) -> list[tuple[str, str, int, Any]]:
        """(rung, gate kind, position in the rung, its error budget) for every gate: the
        budgets themselves, which change as gates run (read, never change them)."""
        return [(rung.name, gate.ir.kind, index, gate.budget)
                for rung in self.chain.rungs for index, gate in enumerate(rung.gates)]

    def unready(self) -> list[str]:
        """What stops the chain from being served now (an unset provider key), in words."""
        problems = []
        for model in sorted(self.models()):
            try:
                name = split_model(model)[0]
            except ProviderError as exc:
                problems.append(exc.reason)
                continue
            if name not in self.config.providers:
                problems.append(f"{model}: no [providers.{name}] table in admiss.toml")
                continue
            env = self.config.providers[name].api_key_env
            if env and not os.environ.get(env):
                problems.append(f"provider {name}: environment variable {env} is not set")
        return sorted(set(problems))

    async def unreachable(self) -> list[str]:
        """The chain's providers that cannot be reached through their proxy, in words."""
        names = set()
        for model in self.models():
            try:
                names.add(split_model(model)[0])
            except ProviderError:
                continue  # unready() says so
        return await self.ctx.providers.unreachable(sorted(names))

    def routes(self) -> dict[str, str]:
        """Each configured provider's proxy and trust store, in words fit for the log."""
        return self.ctx.providers.routes()

    def unpriced(self) -> list[str]:
        """The models the chain may call that have no ``[prices]`` in admiss.toml: their calls
        are recorded at $0, so receipts and ``admiss savings`` undercount them."""
        return sorted(model for model in self.models() if self.config.price_for(model) is None)

    def models(self) -> set[str]:
        """Every model the chain may call: the rungs' and the judges'."""
        return {r.model for r in self.chain.rungs if r.model} | {
            g.ir.model for r in self.chain.rungs for g in r.gates if g.ir.kind in MODEL_GATES and g.ir.model}

    def _redacted(self, receipt: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        # A provider may echo what it was sent in an error, and errors go on the receipt:
        # every text on it passes the one redaction (admiss.redact) before it is stored. The
        # look's JSON text is the stored row's body: encoding the receipt once, not twice,
        # saves about 8 us of an agent's receipt (benchmarks/bench_gateway_cpu.py).
        return redacted_and_text(receipt, self.ctx.secrets)

    async def aclose(self) -> None:
        """Close provider connections and write what the store has queued."""
        await self.ctx.providers.aclose()
        if self._owns_store and self._store is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._store.close)
            self._store = None

    def close(self) -> None:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self.aclose())
        self._loop.close()
        self._loop = None


def _finish_reason(completion: Completion) -> str:
    """The served finish reason: "tool_calls" when the candidate proposes tool calls."""
    if completion.tool_calls:
        return "tool_calls"
    return completion.finish_reason or "stop"


def _check_servable(chain: CompiledChain, config: Config, origin: str | None, calls_rungs: bool = True) -> None:
    """Every rung needs a MODEL whose provider admiss.toml configures (E150) when the router
    calls rungs, and rung settings must name rungs of the chain (E151: a misspelt rung must
    not silently lose its system prompt)."""
    problems = []
    for rung in chain.rungs if calls_rungs else ():
        if not rung.model:
            problems.append(Diagnostic("E150", f"rung '{rung.name}' of chain '{chain.name}' has no MODEL to call",
                                       file=origin, hint='write RUNG name MODEL "provider/model"'))
            continue
        try:
            provider = split_model(rung.model)[0]
        except ProviderError as exc:
            problems.append(Diagnostic("E150", f"rung '{rung.name}': {exc.reason}", file=origin))
            continue
        if provider not in config.providers:
            where = str(config.path) if config.path else "admiss.toml (none found)"
            problems.append(Diagnostic("E150", f"rung '{rung.name}' calls {rung.model}, but {where} has no "
                                       f"[providers.{provider}] table", file=origin,
                                       hint=f"add [providers.{provider}] with its base_url"))
        elif config.providers[provider].api == ANTHROPIC_API:
            problems += _unsendable_settings(chain.name, rung.name, provider, config, origin)
    names = {r.name for r in chain.rungs}
    for rung in config.rungs.get(chain.name, {}):
        if rung not in names:
            problems.append(Diagnostic("E151", f"[rungs.{chain.name}.{rung}] in {config.path} names no rung of "
                                       f"chain '{chain.name}'", file=origin, hint=f"rungs: {', '.join(sorted(names))}"))
    if problems:
        raise InputError(problems)


def _unsendable_settings(chain: str, rung: str, provider: str, config: Config, origin: str | None) -> list[Diagnostic]:
    """E151 for a rung setting the Messages API takes no place for: every call of the rung
    would fail on it, so the gateway says so at start rather than escalating every request."""
    if config.rung_settings(chain, rung).temperature is None:
        return []
    return [Diagnostic("E151", f"[rungs.{chain}.{rung}] sets temperature, but the rung's provider {provider} speaks "
                       "Anthropic's Messages API (api = \"anthropic\"), which takes no sampling parameters",
                       file=origin, hint=f"remove temperature from [rungs.{chain}.{rung}] in {config.path}")]


def routers_for(rubric_path: str | Path, config: str | Path | None = None, chain: str | None = None,
                store: str | Path | None = None) -> dict[str, Router]:
    """One router per chain served (``chain``, or every CHAIN of the rubric), sharing one
    receipt store: ``store``, else ``[serve] store`` of the config. Close the store
    (``router.store.close()``) after the routers."""
    from admiss.api import load

    rubric = load(rubric_path, config)
    names = [chain] if chain is not None else [c.name for c in rubric.ir.chains]
    if not names:
        raise InputError([Diagnostic("E150", "the rubric has no CHAIN to serve", file=str(rubric_path))])
    first = Router(rubric, config, names[0])
    writer = store_writer(store if store is not None else first.config.serve.store)
    routers = {names[0]: first}
    routers.update({name: Router(rubric, config, name) for name in names[1:]})
    for router in routers.values():
        router.attach_store(writer)
    return routers


def store_writer(where: str | Path) -> StoreWriter:
    """A writer on the receipt store at ``where`` (an SQLite path, made when missing, or a
    postgresql:// URL); InputError E152 when it is not a receipt store or cannot be opened."""
    try:
        return open_writer(where)
    except StoreError as exc:
        # A URL's password stays out of the message (the error's own text is masked).
        raise InputError([Diagnostic("E152", str(exc), file=redact(str(where)))]) from None


def _use_fast_sender(providers) -> None:
    """Send model calls through the gateway's own connection pool when the serve extra is
    installed, for the providers that need nothing only a general client does (no proxy, no
    client certificate, ...), and through aiohttp for the others but those only httpx can
    send (HTTP/2, a SOCKS proxy): httpx costs the gateway far more CPU per call (see
    transport.py and aiosender.py)."""
    try:
        from admiss.serve.aiosender import AiohttpSender
        from admiss.serve.transport import PooledSender
    except ImportError:
        return
    providers.use_sender(PooledSender, routed=AiohttpSender)
