"""Runs compiled checkers over bundles and gathers the results into reports.

A :class:`Runtime` holds what lives for one run over many bundles: the built gate chains,
their error budgets, the event loop and the provider clients.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from admiss.bundle import evidence_rows, rung_problems
from admiss.compiler import CompiledRubric, PropertyResult, offered
from admiss.errors import input_error
from admiss.report.json import report_dict
from admiss.report.text import report_text

if TYPE_CHECKING:
    import asyncio


class CheckReport:
    """The outcome of checking one bundle: per-property results, the chain, the verdict."""

    __slots__ = ("rubric", "bundle_name", "properties", "missing_evidence_count", "aggregate", "chain", "verdict")

    def __init__(self, rubric: CompiledRubric, bundle_name: str | None, properties: list[PropertyResult],
                 chain=None):
        self.rubric = rubric
        self.bundle_name = bundle_name
        self.properties = properties
        self.missing_evidence_count = [r.verdict for r in properties].count("no")
        self.aggregate = "pass" if self.missing_evidence_count == 0 else "fail"
        self.chain = chain
        # With a CHAIN the chain decides; without one, the properties' aggregate does.
        self.verdict = self.aggregate if chain is None else chain.verdict

    def to_dict(self) -> dict[str, Any]:
        return report_dict(self)

    def to_text(self) -> str:
        return report_text(self)


class Runtime:
    """Run state shared by the bundles of one run: chains, budgets, loop, clients."""

    def __init__(self, rubric: CompiledRubric, config_path: Path | None = None, config=None):
        self.rubric = rubric
        self.config_path = config_path
        # A Config object given directly wins over finding a file.
        self.config = config
        self._chains: dict[str, Any] = {}
        self._context = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def chain_name(self, requested: str | None) -> str | None:
        names = [c.name for c in self.rubric.ir.chains]
        if requested is not None:
            if requested not in names:
                from admiss.errors import did_you_mean

                raise input_error(self.rubric.origin or self.rubric.name, f"no CHAIN named '{requested}'",
                                  hint=did_you_mean(requested, names) or f"chains: {', '.join(names) or 'none'}",
                                  code="E003")
            return requested
        if len(names) > 1:
            raise input_error(self.rubric.origin or self.rubric.name, "the rubric has several chains",
                              hint=f"pick one with --chain: {', '.join(names)}", code="E003")
        return names[0] if names else None

    def gate_context(self):
        if self._context is None:
            from admiss.config import load_config
            from admiss.gates.base import GateContext

            origin = Path(self.rubric.origin) if self.rubric.origin else None
            self._context = GateContext(
                rubric_dir=origin.parent if origin else Path.cwd(),
                config=self.config if self.config is not None else load_config(self.config_path, origin),
                rubric_file=self.rubric.origin,
                properties={p.name: p for p in self.rubric.properties},
            )
        return self._context

    def chain(self, name: str):
        if name not in self._chains:
            from admiss.budget import ErrorBudget
            from admiss.cascade import CompiledChain

            ctx = self.gate_context()
            chain_ir = next(c for c in self.rubric.ir.chains if c.name == name)
            self._chains[name] = CompiledChain(chain_ir, ctx, lambda g: ErrorBudget.for_gate(g, ctx.config.gates))
        return self._chains[name]

    def event_loop(self) -> asyncio.AbstractEventLoop:
        # One loop for the whole run, so provider clients keep their connections.
        if self._loop is None:
            import asyncio  # only gate chains need it, and it is slow to import

            self._loop = asyncio.new_event_loop()
        return self._loop

    def close(self) -> None:
        """Close provider clients and the event loop; the runtime can be used again after."""
        if self._loop is None:
            return
        if self._context is not None:
            self._loop.run_until_complete(self._context.providers.aclose())
            self._context = None
            self._chains.clear()
        self._loop.close()
        self._loop = None


def check_bundle(rubric: CompiledRubric, bundle: Any, bundle_name: str | None = None,
                 runtime: Runtime | None = None, chain: str | None = None, live: bool = False) -> CheckReport:
    """Check ``bundle`` (a decoded JSON value) against ``rubric``; BundleError if it is malformed.

    ``live``: a rung with no candidate in the bundle calls its model with the bundle's
    prompt (see admiss.serve.calls); otherwise it is skipped and escalates.
    """
    name = bundle_name or "<bundle>"
    rows, scoped = evidence_rows(bundle, name, rubric.property_names)
    results = [prop.check(offered(rows, prop.name) if scoped else rows) for prop in rubric.properties]
    if not rubric.ir.chains:
        return CheckReport(rubric, bundle_name, results)
    runtime = runtime or Runtime(rubric)
    chain_name = runtime.chain_name(chain)
    return CheckReport(rubric, bundle_name, results, _run_chain(runtime, chain_name, bundle, name, live))


def _run_chain(runtime: Runtime, chain_name: str, bundle: dict, name: str, live: bool = False):
    from admiss.cascade import candidates_by_rung

    compiled = runtime.chain(chain_name)
    rung_problems(bundle, compiled.rung_names, name)
    candidates, costs = candidates_by_rung(bundle, compiled)
    if not live:
        return compiled.run(candidates, costs, runtime.event_loop())
    from admiss.serve.calls import LiveRungs

    prompt = bundle.get("prompt")
    rungs = LiveRungs(runtime.gate_context(), chain_name, None if prompt is None else [{"role": "user", "content": prompt}],
                      supplied=candidates, supplied_cost=costs, evidence=tuple(bundle.get("evidence", ())),
                      meta=bundle.get("meta", {}))
    return runtime.event_loop().run_until_complete(compiled.arun(rungs.produce))
