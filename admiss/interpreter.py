"""Runs compiled checkers over bundles and gathers the results into reports.

A :class:`Runtime` holds what lives for one run over many bundles: the built gate chains,
their error budgets, the event loop and the provider clients.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from admiss.bundle import evidence_count_problem, evidence_rows, rung_problems
from admiss.compiler import CompiledRubric, offered, rows_of
from admiss.errors import input_error
from admiss.report import CheckReport

if TYPE_CHECKING:
    import asyncio

    from admiss.traces.steps import Trace


def chosen_chain(rubric: CompiledRubric, requested: str | None,
                 option: str = "--chain NAME (chain=NAME in Python)") -> str | None:
    """The CHAIN to run: ``requested``, which must be one of the rubric's (E003 otherwise, a
    rubric without chains too: a chain asked for and silently not run would read as a pass),
    or the rubric's only one. ``option`` is how the caller's user picks one (``chain=`` in
    Python's Router), for the hint."""
    names = [c.name for c in rubric.ir.chains]
    if requested is not None:
        if requested not in names:
            from admiss.errors import did_you_mean

            raise input_error(rubric.origin or rubric.name, f"no CHAIN named '{requested}'",
                              hint=did_you_mean(requested, names) or (f"chains: {', '.join(names)}" if names
                                                                  else "the rubric has no CHAIN to run"),
                              code="E003")
        return requested
    if len(names) > 1:
        raise input_error(rubric.origin or rubric.name, "the rubric has several chains",
                          hint=f"pick one with {option}: {', '.join(names)}", code="E003")
    return names[0] if names else None


class Runtime:
    """Run state shared by the bundles of one run: chains, budgets, loop, clients."""

    def __init__(self, rubric: CompiledRubric, config_path: Path | None = None, offline: bool = False, config=None,
                 gateway: bool = False):
        self.rubric = rubric
        # For admiss.Router and admiss serve, which run live: hints name chain= and never
        # suggest an offline run.
        self.gateway = gateway
        self.config_path = config_path
        # Offline runs make no model calls on purpose; otherwise every model a gate calls
        # must have its provider configured before a bundle is checked.
        self.offline = offline
        # A Config object given directly wins over finding a file.
        self.config = config
        self._chains: dict[str, Any] = {}
        self._context = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def chain_name(self, requested: str | None) -> str | None:
        return chosen_chain(self.rubric, requested, *(("chain=NAME",) if self.gateway else ()))

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
                offline=self.offline,
            )
        return self._context

    def chain(self, name: str):
        if name not in self._chains:
            from admiss.budget import ErrorBudget
            from admiss.cascade import CompiledChain, model_calls

            ctx = self.gate_context()
            chain_ir = next(c for c in self.rubric.ir.chains if c.name == name)
            self.require_providers(model_calls(chain_ir))
            self._chains[name] = CompiledChain(chain_ir, ctx, lambda g: ErrorBudget.for_gate(g, ctx.config.gates),
                                               _warn)
        return self._chains[name]

    def require_rung_providers(self, name: str) -> None:
        """E140 for a rung of chain ``name`` whose model's provider admiss.toml lacks: a
        live run calls them."""
        from admiss.cascade import rung_calls

        self.require_providers(rung_calls(next(c for c in self.rubric.ir.chains if c.name == name)))

    def require_providers(self, calls: list) -> None:
        """Raise InputError E140 for every call whose provider admiss.toml lacks (unless offline)."""
        from admiss.config import missing_providers
        from admiss.errors import InputError

        if self.offline:
            return
        problems = missing_providers(self.gate_context().config, calls, self.rubric.origin, not self.gateway)
        if problems:
            raise InputError(problems, _rubric_source(self.rubric.origin))

    def _cancel_running_gates(self) -> None:
        import asyncio

        running = asyncio.all_tasks(self._loop)
        for task in running:
            task.cancel()
        if running:
            self._loop.run_until_complete(asyncio.gather(*running, return_exceptions=True))

    def gate_health(self) -> list:
        """The error-budget state of every gate of the chains run so far (``cascade.GateHealth``)."""
        return [health for chain in self._chains.values() for health in chain.gate_health()]

    def event_loop(self) -> asyncio.AbstractEventLoop:
        # One loop for the whole run, so provider clients keep their connections.
        if self._loop is None:
            import asyncio  # only gate chains need it, and it is slow to import

            self._loop = asyncio.new_event_loop()
        return self._loop

    def close(self) -> None:
        """Close provider clients and the event loop; the runtime can be used again after.

        Gates still running (the run was interrupted: Ctrl-C, SIGTERM) are cancelled first,
        which kills their programs' process groups and drops their requests.
        """
        if self._loop is None:
            return
        self._cancel_running_gates()
        if self._context is not None:
            self._loop.run_until_complete(self._context.providers.aclose())
            self._context = None
            self._chains.clear()
        self._loop.close()
        self._loop = None


def _warn(message: str) -> None:
    # A gate switched off mid-run changes what every later verdict means: say so at once,
    # after the reports already written (stdout first keeps the two in order on a terminal).
    sys.stdout.flush()
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def check_bundle(rubric: CompiledRubric, bundle: Any, bundle_name: str | None = None,
                 runtime: Runtime | None = None, chain: str | None = None, live: bool = False,
                 request: list[dict[str, str]] | None = None, made: bool = False) -> CheckReport:
    """Check ``bundle`` (a decoded JSON value) against ``rubric``; BundleError if it is malformed.

    ``live``: a rung with no candidate in the bundle calls its model with ``request`` (chat
    messages), or else with the bundle's prompt as the user message (see
    admiss.serve.calls); otherwise it is skipped and escalates. ``made``: the bundle's
    evidence was made by the rubric's own MAP block, so it keeps the bundle rules by
    construction and is not validated again.
    """
    name = bundle_name or "<bundle>"
    if made and evidence_count_problem(bundle) is None:
        rows, scoped = rows_of(bundle["evidence"]), rubric.mapping.scoped
    else:  # B005 for a trace of more steps than the limit, as for a bundle
        rows, scoped = evidence_rows(bundle, name, rubric.property_names)
    results = [prop.check(offered(rows, prop.name) if scoped else rows) for prop in rubric.properties]
    evidence = bundle.get("evidence", ())
    if not rubric.ir.chains:
        chosen_chain(rubric, chain)  # E003 when a chain was asked for
        return CheckReport(rubric, bundle_name, results, None, evidence)
    runtime = runtime or Runtime(rubric)
    chain_name = runtime.chain_name(chain)
    return CheckReport(rubric, bundle_name, results, _run_chain(runtime, chain_name, bundle, name, live, request),
                       evidence)


def check_trace(rubric: CompiledRubric, trace: "Trace", name: str | None = None, runtime: Runtime | None = None,
                chain: str | None = None, live: bool = False) -> CheckReport:
    """Check an agent trace: its steps mapped to evidence by the rubric's MAP block (or the
    default taxonomy), its final answer and model the candidate a CHAIN gates. ``live``: a
    rung the trace's model did not run calls its own model with the trace's system and user
    messages."""
    bundle, not_offered = rubric.mapping.bundle(trace)
    if rubric.ir.chains and "output" in bundle and "model" in bundle:
        runtime = runtime or Runtime(rubric)
        bundle["candidates"] = _trace_candidates(rubric, runtime.chain_name(chain), bundle)
    report = check_bundle(rubric, bundle, name, runtime, chain, live, trace.request_messages() if live else None,
                          made=True)
    report.trace = {"format": trace.format, "not_offered": not_offered}
    if not trace.steps:
        report.trace["warnings"] = trace.warnings()
    return report


def _trace_candidates(rubric: CompiledRubric, chain_name: str, bundle: dict) -> list[dict]:
    """The trace's final answer as the candidate of each rung whose MODEL ran it: the same
    name, or the same after the provider prefix ("openai/gpt-5" ran "gpt-5"). With none,
    a chain of one rung still gates the bundle's top-level output."""
    model = bundle["model"]
    rungs = next(c.rungs for c in rubric.ir.chains if c.name == chain_name)
    return [{"rung": rung.name, "model": model, "output": bundle["output"]} for rung in rungs
            if rung.model is not None and model in (rung.model, rung.model.split("/", 1)[-1])]


def _run_chain(runtime: Runtime, chain_name: str, bundle: dict, name: str, live: bool = False,
               request: list[dict[str, str]] | None = None):
    from admiss.cascade import candidates_by_rung, resampling_calls

    compiled = runtime.chain(chain_name)
    rung_problems(bundle, compiled.rung_names, name)
    candidates, costs = candidates_by_rung(bundle, compiled)
    # The candidate's model is known only from the bundle, so its provider is checked here.
    runtime.require_providers(resampling_calls(compiled, candidates))
    if not live:
        return compiled.run(candidates, costs, runtime.event_loop())
    from admiss.serve.calls import LiveRungs

    runtime.require_rung_providers(chain_name)
    prompt = bundle.get("prompt")
    if request is None and prompt is not None:
        request = [{"role": "user", "content": prompt}]
    rungs = LiveRungs(runtime.gate_context(), chain_name, request or None, supplied=candidates,
                      supplied_cost=costs, evidence=tuple(bundle.get("evidence", ())), meta=bundle.get("meta", {}))
    return runtime.event_loop().run_until_complete(compiled.arun(rungs.produce))


def _rubric_source(origin: str | None):
    """The rubric's source text, to show the line a diagnostic points at (None for IR files)."""
    from admiss.source import Source

    if origin is None or not origin.endswith(".rubric"):
        return None
    try:
        return Source(origin, Path(origin).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
