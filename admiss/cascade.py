"""Running a CHAIN: rungs in order, each a conjunction of gates, cheapest first.

On a rung the cheap gates run inline in the order written; the first effective fail stops
the rung before any costly gate starts. The costly gates (subprocess, judge, consistency)
then run concurrently on one event loop, and the first effective fail cancels the rest. A
rung whose gates all pass serves; a fail escalates one rung; the last rung failing
exhausts the chain. A gate that raises is an abstain with the error as its reason: one
broken gate never aborts the bundle.

A gate whose own errors exceed its error budget is disabled for the rest of the run: it
no longer runs, and counts as a fail or as skipped by ``[gates] on_disabled``. The
disablement is told once (``notify``) and stays readable through :meth:`CompiledChain.gate_health`.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from typing import Any, Awaitable, Callable, Iterable

import attrs

from admiss import ir
from admiss.config import ModelCall
from admiss.gates.base import (ABSTAIN, CANDIDATE_FAULT, FAIL, GATE_FAULT, PASS, Candidate, GateCheck, GateContext,
                               GateResult)
from admiss.source import Span
from admiss.untrusted import UntrustedInput

SKIPPED = "skipped"
# The gate kinds that may call a model (consistency does when the bundle has no samples).
MODEL_GATES = ("judge", "consistency")
SERVED, ESCALATED, EXHAUSTED = "served", "escalated", "exhausted"


@attrs.define
class GateRecord:
    """One gate's line on the receipt."""

    gate: str
    verdict: str
    effective: str
    score: float | None = None
    reason: str = ""
    duration_ms: float = 0.0
    gate_cost_usd: float = 0.0
    disabled: bool = False
    details: dict[str, Any] | None = None
    # Whose fault an error was ("gate" or "candidate"), None when the gate judged the candidate.
    fault: str | None = None


@attrs.frozen
class GateHealth:
    """One gate's error budget as it stands in this run (what a /metrics page would show)."""

    chain: str
    rung: str
    gate: str
    # Where the GATE line is: "file:line:col".
    where: str
    disabled: bool
    reason: str | None
    runs: int
    errors: int
    error_rate: float


@attrs.define
class RungRecord:
    rung: str
    model: str | None
    cost_usd: float
    outcome: str
    gates: list[GateRecord]


@attrs.frozen
class TopRung:
    """The chain's last rung, and what the bundle says its candidate cost (None: not given).

    It prices serving every request from the top rung (``admiss savings``), even when a
    lower rung served and the top rung's gates never ran.
    """

    rung: str
    model: str | None
    cost_usd: float | None


@attrs.define
class ChainResult:
    name: str
    served: str | None
    rungs: list[RungRecord]
    top_rung: TopRung | None = None
    # True when the run was offline and this chain has gates that call models.
    offline: bool = False

    @property
    def verdict(self) -> str:
        return PASS if self.served is not None else FAIL

    @property
    def model_cost_usd(self) -> float:
        return sum(r.cost_usd for r in self.rungs)

    @property
    def gate_cost_usd(self) -> float:
        return sum(g.gate_cost_usd for r in self.rungs for g in r.gates)


class CompiledGate:
    """A built gate with its ON ABSTAIN policy, its error budget and what it counts as disabled."""

    def __init__(self, gate: ir.Gate, check: GateCheck, budget, ctx: GateContext,
                 notify: Callable[[str], None] | None = None):
        self.ir = gate
        self.check = check
        self.budget = budget
        self.notify = notify
        self.redact = ctx.redact
        self.on_disabled = ctx.config.gates.on_disabled
        self.where = f"{ctx.rubric_file or '<rubric>'}:{gate.span.line}:{gate.span.column}"

    def effective(self, result: GateResult) -> str:
        # ON ABSTAIN says what to do when the gate itself cannot judge (a provider down, a
        # program that crashed). When the candidate's own content stopped the gate, fail_open
        # would let a crafted output switch the check off, so that abstain always fails.
        if result.verdict == ABSTAIN:
            if result.fault == CANDIDATE_FAULT:
                return FAIL
            return PASS if self.ir.on_abstain == "fail_open" else FAIL
        return result.verdict

    def disabled_reason(self) -> str:
        counts = "counts as a fail" if self.on_disabled == "fail" else "is skipped"
        return f'{self.budget.disabled_reason}; it {counts} ([gates] on_disabled = "{self.on_disabled}")'


class CompiledRung:
    def __init__(self, rung: ir.Rung, gates: list[CompiledGate]):
        self.name = rung.name
        self.model = rung.model
        self.gates = gates
        self.cheap = [g for g in gates if g.check.cheap]
        self.costly = [g for g in gates if not g.check.cheap]


class CompiledChain:
    def __init__(self, chain: ir.Chain, ctx: GateContext, budget_for,
                 notify: Callable[[str], None] | None = None):
        """``notify`` is told once per gate, when its error budget disables it."""
        self.name = chain.name
        self.rungs = [
            CompiledRung(r, [CompiledGate(g, build_gate(g, ctx), budget_for(g), ctx, notify) for g in r.gates])
            for r in chain.rungs
        ]
        self.rung_names = frozenset(r.name for r in self.rungs)
        self.offline = ctx.offline and any(g.kind in MODEL_GATES for r in chain.rungs for g in r.gates)

    def gate_health(self) -> list[GateHealth]:
        """Every gate's budget state, in written order: disabled or not, and its error rate."""
        return [
            GateHealth(self.name, rung.name, g.ir.kind, g.where, g.budget.disabled,
                       g.disabled_reason() if g.budget.disabled else None,
                       g.budget.runs, g.budget.errors, g.budget.error_rate)
            for rung in self.rungs for g in rung.gates
        ]

    def run(self, candidates: dict[str, Candidate], cost: dict[str, float],
            loop: asyncio.AbstractEventLoop) -> ChainResult:
        records: list[RungRecord] = []
        top = self.top_rung(candidates, cost)
        for index, rung in enumerate(self.rungs):
            candidate = candidates.get(rung.name)
            last = index == len(self.rungs) - 1
            if candidate is None:
                records.append(unrun_rung(rung, last, _NO_CANDIDATE))
                continue
            records.append(rung_record(rung, candidate, cost.get(rung.name, 0.0), self.run_rung(rung, candidate, loop), last))
            if records[-1].outcome == SERVED:
                return ChainResult(self.name, rung.name, records, top, self.offline)
        return ChainResult(self.name, None, records, top, self.offline)

    def top_rung(self, candidates: dict[str, Candidate], cost: dict[str, float]) -> TopRung:
        rung = self.rungs[-1]
        candidate = candidates.get(rung.name)
        return TopRung(rung.name, candidate.model if candidate and candidate.model else rung.model,
                       cost.get(rung.name))

    async def arun(self, produce: Callable[[CompiledRung], Awaitable[tuple[Candidate | None, float, str]]]) -> ChainResult:
        """The cascade with each rung's candidate made only when the rung is reached:
        ``produce(rung)`` gives (candidate or None, model cost, why there is none). A rung
        above the one that serves is never produced."""
        records: list[RungRecord] = []
        for index, rung in enumerate(self.rungs):
            last = index == len(self.rungs) - 1
            candidate, cost, missing = await produce(rung)
            if candidate is None:
                records.append(unrun_rung(rung, last, missing, cost))
                continue
            records.append(rung_record(rung, candidate, cost, await self.arun_rung(rung, candidate), last))
            if records[-1].outcome == SERVED:
                return ChainResult(self.name, rung.name, records, self._live_top(records), self.offline)
        return ChainResult(self.name, None, records, self._live_top(records), self.offline)

    async def agate(self, rung: CompiledRung, candidate: Candidate) -> ChainResult:
        """One rung's gates on a candidate made elsewhere (a LiteLLM proxy's model): the
        chain serves it when they pass and is exhausted otherwise; no other rung runs."""
        record = rung_record(rung, candidate, 0.0, await self.arun_rung(rung, candidate), last=True)
        served = rung.name if record.outcome == SERVED else None
        return ChainResult(self.name, served, [record], TopRung(rung.name, record.model, None), self.offline)

    def _live_top(self, records: list[RungRecord]) -> TopRung:
        # Live, the top rung's cost is known only when it was called.
        top = self.rungs[-1]
        ran = next((r for r in records if r.rung == top.name), None)
        return TopRung(top.name, ran.model if ran else top.model, ran.cost_usd if ran else None)

    def run_rung(self, rung: CompiledRung, candidate: Candidate, loop: asyncio.AbstractEventLoop) -> list[GateRecord]:
        results, failed = _cheap_first(rung, candidate)
        if failed is None and rung.costly:
            results.update(loop.run_until_complete(_run_costly(rung.costly, candidate)))
        return _in_written_order(rung, results, failed or _CANCELLED)

    async def arun_rung(self, rung: CompiledRung, candidate: Candidate) -> list[GateRecord]:
        """:meth:`run_rung` inside a running event loop."""
        if not rung.costly:
            return _cheap_only(rung, candidate)
        results, failed = _cheap_first(rung, candidate)
        if failed is None:
            results.update(await _run_costly(rung.costly, candidate))
        return _in_written_order(rung, results, failed or _CANCELLED)


_NO_CANDIDATE = "not run: the bundle has no candidate for this rung"
_CANCELLED = "cancelled: another gate on the rung failed"


def rung_record(rung: CompiledRung, candidate: Candidate, cost: float, gates: list[GateRecord], last: bool) -> RungRecord:
    """A gated rung's line on the receipt: served when every gate passed (or was disabled)."""
    served = all(g.effective == PASS or g.effective == SKIPPED and g.disabled for g in gates)
    outcome = SERVED if served else EXHAUSTED if last else ESCALATED
    return RungRecord(rung.name, candidate.model or rung.model, cost, outcome, gates)


def unrun_rung(rung: CompiledRung, last: bool, reason: str, cost: float = 0.0) -> RungRecord:
    """A rung with no candidate to gate: it escalates, every gate skipped for ``reason``."""
    return RungRecord(rung.name, rung.model, cost, EXHAUSTED if last else ESCALATED,
                      [GateRecord(g.ir.kind, SKIPPED, SKIPPED, reason=reason) for g in rung.gates])


def _cheap_first(rung: CompiledRung, candidate: Candidate) -> tuple[dict[int, GateRecord], str | None]:
    """The cheap gates' records, and why the rest are not run when one of them failed."""
    results: dict[int, GateRecord] = {}
    for gate in rung.cheap:
        record = _run_cheap(gate, candidate)
        results[id(gate)] = record
        if record.effective == FAIL:
            return results, _failed_first(gate)
    return results, None


def _cheap_only(rung: CompiledRung, candidate: Candidate) -> list[GateRecord]:
    """The records of a rung whose gates are all cheap, in written order: :func:`_cheap_first`
    without the dict by gate that puts costly gates' records among them (the served request's
    usual rung: non_empty, tool_calls, admissibility)."""
    records = []
    for gate in rung.gates:
        record = _run_cheap(gate, candidate)
        records.append(record)
        if record.effective == FAIL:
            reason = _failed_first(gate)
            records += [GateRecord(g.ir.kind, SKIPPED, SKIPPED, reason=reason) for g in rung.gates[len(records):]]
            break
    return records


def _failed_first(gate: CompiledGate) -> str:
    """Why the gates after a failed cheap ``gate`` are not run."""
    return f"not run: {gate.ir.kind} failed first"


def model_calls(chain: ir.Chain) -> list[ModelCall]:
    """The models a chain's gates call whatever the bundle holds: each judge's MODEL, each
    consistency gate's MEANING MODEL."""
    return [ModelCall(model, f"{gate.kind} gate on rung {rung.name}", span)
            for rung in chain.rungs for gate in rung.gates for model, span in _models_called(gate)]


def rung_calls(chain: ir.Chain) -> list[ModelCall]:
    """The models of a chain's rungs, which a live run (``check --live``) calls for a rung
    the bundle gives no candidate."""
    return [ModelCall(rung.model, f"rung {rung.name} (run with --live)", rung.span) for rung in chain.rungs
            if rung.model is not None]


def _models_called(gate: ir.Gate) -> list[tuple[str, Span]]:
    if gate.kind == "judge" and gate.model:
        return [(gate.model, gate.span)]
    if gate.kind == "consistency" and gate.meaning_model:
        return [(gate.meaning_model, gate.span_of("meaning_model"))]
    return []


def resampling_calls(chain: CompiledChain, candidates: dict[str, Candidate]) -> list[ModelCall]:
    """The candidate models a consistency gate will draw new samples from, for one bundle."""
    from admiss.gates.consistency import draws_samples

    return [ModelCall(candidate.model or "", f"consistency gate on rung {rung.name} (no samples in the bundle, "
                                             "so it draws new ones from the candidate's model)", gate.ir.span)
            for rung in chain.rungs if (candidate := candidates.get(rung.name)) is not None
            for gate in rung.gates if gate.ir.kind == "consistency" and draws_samples(candidate)]


def build_gate(gate: ir.Gate, ctx: GateContext) -> GateCheck:
    """The runnable check for a GATE line, from the module named after its kind."""
    return importlib.import_module(f"admiss.gates.{gate.kind}").build(gate, ctx)


def _raised(exc: Exception) -> GateResult:
    """A raising gate's abstain: one broken gate never aborts the bundle.

    The one place that says whose fault an exception is: UntrustedInput (what a gate raises
    from reading untrusted data, admiss.gates.base.untrusted) is the candidate's; anything
    else is a bug in the gate, and counts against its error budget.
    """
    if isinstance(exc, UntrustedInput):
        return GateResult(ABSTAIN, reason=f"cannot read the candidate's data: {exc}", fault=CANDIDATE_FAULT)
    return GateResult(ABSTAIN, reason=f"gate raised {type(exc).__name__}: {exc}", fault=GATE_FAULT)


def _disabled(gate: CompiledGate) -> GateRecord | None:
    if not gate.budget.disabled:
        return None
    effective = FAIL if gate.on_disabled == "fail" else SKIPPED
    return GateRecord(gate.ir.kind, SKIPPED, effective, reason=gate.disabled_reason(), disabled=True)


def ms_since(started_ns: int) -> float:
    """The milliseconds since ``started_ns`` (``time.perf_counter_ns()``), to the microsecond,
    in integers: ``round(seconds * 1000, 3)`` took about a microsecond a call (python -m
    timeit), and a served request paid it once per gate and once per rung."""
    return (time.perf_counter_ns() - started_ns + 500) // 1000 / 1000


def _finish(gate: CompiledGate, result: GateResult, started: int) -> GateRecord:
    if gate.budget.record(result.fault == GATE_FAULT) and gate.notify is not None:
        gate.notify(f"{gate.where}: warning: gate {gate.ir.kind} {gate.disabled_reason()}")
    return GateRecord(
        gate=gate.ir.kind,
        verdict=result.verdict,
        effective=gate.effective(result),
        score=result.score,
        reason=gate.redact(result.reason),
        duration_ms=ms_since(started),
        gate_cost_usd=result.cost_usd,
        details=result.details,
        fault=result.fault,
    )


def _run_cheap(gate: CompiledGate, candidate: Candidate) -> GateRecord:
    # The budget's test and the guard spelled out here: a served request runs three cheap
    # gates, and each of their two calls was paid per gate.
    if gate.budget.disabled_reason is not None:
        return _disabled(gate)
    started = time.perf_counter_ns()
    try:
        result = gate.check.run(candidate)
    except Exception as exc:
        result = _raised(exc)
    return _finish(gate, result, started)


async def _run_one(gate: CompiledGate, candidate: Candidate) -> GateRecord:
    disabled = _disabled(gate)
    if disabled is not None:
        return disabled
    started = time.perf_counter_ns()
    try:
        result = await gate.check.arun(candidate)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        result = _raised(exc)
    return _finish(gate, result, started)


async def _run_costly(gates: list[CompiledGate], candidate: Candidate) -> dict[int, GateRecord]:
    tasks = {asyncio.ensure_future(_run_one(g, candidate)): g for g in gates}
    done: dict[int, GateRecord] = {}
    pending = set(tasks)
    try:
        while pending:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                done[id(tasks[task])] = task.result()
            if any(done[id(tasks[t])].effective == FAIL for t in finished):
                break
    finally:
        for task in pending:
            task.cancel()
        # Wait for cancelled gates to clean up (kill their processes) before moving on.
        await asyncio.gather(*pending, return_exceptions=True)
    return done


def _in_written_order(rung: CompiledRung, results: dict[int, GateRecord], unrun_reason: str) -> list[GateRecord]:
    return [results.get(id(g)) or GateRecord(g.ir.kind, SKIPPED, SKIPPED, reason=unrun_reason) for g in rung.gates]


def candidates_by_rung(bundle: dict, chain: CompiledChain) -> tuple[dict[str, Candidate], dict[str, float]]:
    """Each rung's Candidate from the bundle, and each rung's model cost where the bundle gives one."""
    shared = tuple(bundle.get("evidence", ()))
    entries: Iterable[dict] = bundle.get("candidates") or []
    if not entries and len(chain.rungs) == 1 and "output" in bundle:
        entries = [{**{k: bundle[k] for k in ("output", "model", "samples", "cost_usd") if k in bundle},
                    "rung": chain.rungs[0].name}]
    candidates, costs = {}, {}
    rung_models = {rung.name: rung.model for rung in chain.rungs}
    for entry in entries:
        candidates[entry["rung"]] = Candidate(
            output=entry.get("output"),
            # Without the candidate's own model, the rung's MODEL made it (maker = checker needs one).
            model=entry.get("model") or rung_models.get(entry["rung"]),
            prompt=bundle.get("prompt"),
            meta=bundle.get("meta", {}),
            samples=tuple(entry["samples"]) if "samples" in entry else None,
            evidence=shared + tuple(entry.get("evidence", ())),
            rung=entry["rung"],
        )
        if "cost_usd" in entry:
            costs[entry["rung"]] = float(entry["cost_usd"])
    return candidates, costs
