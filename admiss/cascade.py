"""Running a CHAIN: rungs in order, each a conjunction of gates, cheapest first.

On a rung the cheap gates run inline in the order written; the first effective fail stops
the rung before any costly gate starts. The costly gates (subprocess, judge, consistency)
then run concurrently on one event loop, and the first effective fail cancels the rest. A
rung whose gates all pass serves; a fail escalates one rung; the last rung failing
exhausts the chain. A gate that raises is an abstain with the error as its reason: one
broken gate never aborts the bundle.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from typing import Any, Awaitable, Callable, Iterable

import attrs

from admiss import ir
from admiss.gates.base import ABSTAIN, FAIL, PASS, Candidate, GateCheck, GateContext, GateResult

SKIPPED = "skipped"
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


@attrs.define
class RungRecord:
    rung: str
    model: str | None
    cost_usd: float
    outcome: str
    gates: list[GateRecord]


@attrs.define
class ChainResult:
    name: str
    served: str | None
    rungs: list[RungRecord]

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
    """A built gate with its ON ABSTAIN policy and its error budget."""

    def __init__(self, gate: ir.Gate, check: GateCheck, budget):
        self.ir = gate
        self.check = check
        self.budget = budget

    def effective(self, verdict: str) -> str:
        if verdict == ABSTAIN:
            return PASS if self.ir.on_abstain == "fail_open" else FAIL
        return verdict


class CompiledRung:
    def __init__(self, rung: ir.Rung, gates: list[CompiledGate]):
        self.name = rung.name
        self.model = rung.model
        self.gates = gates
        self.cheap = [g for g in gates if g.check.cheap]
        self.costly = [g for g in gates if not g.check.cheap]


class CompiledChain:
    def __init__(self, chain: ir.Chain, ctx: GateContext, budget_for):
        self.name = chain.name
        self.rungs = [
            CompiledRung(r, [CompiledGate(g, build_gate(g, ctx), budget_for(g)) for g in r.gates])
            for r in chain.rungs
        ]
        self.rung_names = frozenset(r.name for r in self.rungs)

    def run(self, candidates: dict[str, Candidate], cost: dict[str, float],
            loop: asyncio.AbstractEventLoop) -> ChainResult:
        records: list[RungRecord] = []
        for index, rung in enumerate(self.rungs):
            candidate = candidates.get(rung.name)
            last = index == len(self.rungs) - 1
            if candidate is None:
                records.append(unrun_rung(rung, last, _NO_CANDIDATE))
                continue
            records.append(rung_record(rung, candidate, cost.get(rung.name, 0.0), self.run_rung(rung, candidate, loop), last))
            if records[-1].outcome == SERVED:
                return ChainResult(self.name, rung.name, records)
        return ChainResult(self.name, None, records)

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
                return ChainResult(self.name, rung.name, records)
        return ChainResult(self.name, None, records)

    def run_rung(self, rung: CompiledRung, candidate: Candidate, loop: asyncio.AbstractEventLoop) -> list[GateRecord]:
        results, failed = _cheap_first(rung, candidate)
        if failed is None and rung.costly:
            results.update(loop.run_until_complete(_run_costly(rung.costly, candidate)))
        return _in_written_order(rung, results, failed or _CANCELLED)

    async def arun_rung(self, rung: CompiledRung, candidate: Candidate) -> list[GateRecord]:
        """:meth:`run_rung` inside a running event loop."""
        results, failed = _cheap_first(rung, candidate)
        if failed is None and rung.costly:
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
            return results, f"not run: {gate.ir.kind} failed first"
    return results, None


def build_gate(gate: ir.Gate, ctx: GateContext) -> GateCheck:
    """The runnable check for a GATE line, from the module named after its kind."""
    return importlib.import_module(f"admiss.gates.{gate.kind}").build(gate, ctx)


def _guarded(run, candidate: Candidate) -> GateResult:
    try:
        return run(candidate)
    except Exception as exc:  # a broken gate is an abstain, never an aborted bundle
        return GateResult(ABSTAIN, reason=f"gate raised {type(exc).__name__}: {exc}", error=True)


def _disabled(gate: CompiledGate) -> GateRecord | None:
    if not gate.budget.disabled:
        return None
    return GateRecord(gate.ir.kind, SKIPPED, SKIPPED, reason=gate.budget.disabled_reason, disabled=True)


def _finish(gate: CompiledGate, result: GateResult, started: float) -> GateRecord:
    gate.budget.record(result.error)
    return GateRecord(
        gate=gate.ir.kind,
        verdict=result.verdict,
        effective=gate.effective(result.verdict),
        score=result.score,
        reason=result.reason,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
        gate_cost_usd=result.cost_usd,
        details=result.details,
    )


def _run_cheap(gate: CompiledGate, candidate: Candidate) -> GateRecord:
    disabled = _disabled(gate)
    if disabled is not None:
        return disabled
    started = time.perf_counter()
    return _finish(gate, _guarded(gate.check.run, candidate), started)


async def _run_one(gate: CompiledGate, candidate: Candidate) -> GateRecord:
    disabled = _disabled(gate)
    if disabled is not None:
        return disabled
    started = time.perf_counter()
    try:
        result = await gate.check.arun(candidate)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # see _guarded
        result = GateResult(ABSTAIN, reason=f"gate raised {type(exc).__name__}: {exc}", error=True)
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
    """Each rung's Candidate from the bundle, and each rung's model cost."""
    shared = tuple(bundle.get("evidence", ()))
    entries: Iterable[dict] = bundle.get("candidates") or []
    if not entries and len(chain.rungs) == 1 and "output" in bundle:
        entries = [{**{k: bundle[k] for k in ("output", "model", "samples", "cost_usd") if k in bundle},
                    "rung": chain.rungs[0].name}]
    candidates, costs = {}, {}
    for entry in entries:
        candidates[entry["rung"]] = Candidate(
            output=entry.get("output"),
            model=entry.get("model"),
            prompt=bundle.get("prompt"),
            meta=bundle.get("meta", {}),
            samples=tuple(entry["samples"]) if "samples" in entry else None,
            evidence=shared + tuple(entry.get("evidence", ())),
            rung=entry["rung"],
        )
        costs[entry["rung"]] = float(entry.get("cost_usd", 0.0))
    return candidates, costs
