"""Error budgets: a gate that keeps malfunctioning is switched off, and says so.

The rule: each gate keeps its last ``window`` outcomes, each an error of the gate's own
(``GateResult.fault == GATE_FAULT``: a crash, a timeout, a provider failure) or not (pass,
genuine fail, an honest abstain, or an error the candidate caused). Errors a candidate
caused never count here, so no run of crafted outputs can switch a check off. Once the gate
has run at least ``min_runs`` times (capped at ``window``), it is disabled as soon as
errors / runs in the window is greater than ``rate``. A disabled gate stays disabled for the
rest of the run (it no longer runs, so nothing could bring it back); what it counts as then
is ``[gates] on_disabled``: a fail (the default) or skipped.

Gateways that share a receipt store share their disabled gates through it
(:mod:`admiss.serve.fleet`): a gate one gateway's window disabled is disabled in every
gateway (:meth:`ErrorBudget.disable`), and ``admiss receipts enable-gates`` turns it back
on in all of them (:meth:`ErrorBudget.enable`, with an empty window).

Defaults come from ``[gates]`` in admiss.toml (rate 0.5, window 20, min_runs 5); a gate's own
``BUDGET rate WINDOW n`` overrides rate and window.
"""

from __future__ import annotations

from collections import deque
from typing import Hashable

import attrs

from admiss import ir
from admiss.config import GateDefaults


@attrs.define
class ErrorBudget:
    rate: float = 0.5
    window: int = 20
    min_runs: int = 5
    _outcomes: deque[bool] = attrs.field(init=False)
    disabled_reason: str | None = attrs.field(default=None, init=False)
    # The errors among _outcomes, kept as they come and go: every gate run records one
    # outcome, and one without an error in the window is then decided without a sum.
    _errors: int = attrs.field(default=0, init=False)

    def __attrs_post_init__(self) -> None:
        self._outcomes = deque(maxlen=self.window)

    @classmethod
    def for_gate(cls, gate: ir.Gate, defaults: GateDefaults) -> "ErrorBudget":
        """The gate's budget: its own BUDGET/WINDOW where given, else the configured defaults."""
        return cls(
            rate=gate.budget_rate if gate.budget_rate is not None else defaults.budget_rate,
            window=gate.budget_window if gate.budget_window is not None else defaults.budget_window,
            min_runs=defaults.budget_min_runs,
        )

    @property
    def disabled(self) -> bool:
        return self.disabled_reason is not None

    @property
    def runs(self) -> int:
        """The runs in the window."""
        return len(self._outcomes)

    @property
    def errors(self) -> int:
        """The gate's own errors among the runs in the window."""
        return self._errors

    @property
    def error_rate(self) -> float:
        return self.errors / self.runs if self.runs else 0.0

    def health(self) -> tuple[float, float]:
        """The error rate, and 1.0 when disabled else 0.0: the gateway's two gauges of the
        gate, read after every receipt, so without the properties' calls (three for the rate)."""
        errors = self._errors  # errors are runs in the window: no division by zero
        return errors / len(self._outcomes) if errors else 0.0, 0.0 if self.disabled_reason is None else 1.0

    def disable(self, reason: str) -> None:
        """Disable the gate for a reason found elsewhere (another gateway's window)."""
        self.disabled_reason = reason

    def enable(self) -> None:
        """Turn the gate back on with an empty window: its old errors are not held against it."""
        self.disabled_reason = None
        self._outcomes.clear()
        self._errors = 0

    def record(self, gate_fault: bool) -> bool:
        """Count one run, an error of the gate's own or not; True when this run disables the gate."""
        if self.disabled_reason is not None:
            return False
        outcomes = self._outcomes
        if len(outcomes) == outcomes.maxlen:
            self._errors -= outcomes[0]  # the oldest outcome leaves the window
        outcomes.append(gate_fault)
        self._errors += gate_fault
        if not self._errors or len(outcomes) < min(self.min_runs, self.window) or self.error_rate <= self.rate:
            return False
        errors, runs = self.errors, self.runs
        self.disabled_reason = (
            f"disabled by its error budget: {errors} errors in its last {runs} runs "
            f"({errors / runs:.0%} > {self.rate:.0%})"
        )
        return True


@attrs.define
class BudgetBook:
    """The budgets of one ``admiss check`` run, one per gate, keyed as the caller likes."""

    defaults: GateDefaults = GateDefaults()
    _budgets: dict[Hashable, ErrorBudget] = attrs.field(factory=dict, init=False)

    def budget(self, key: Hashable, gate: ir.Gate) -> ErrorBudget:
        if key not in self._budgets:
            self._budgets[key] = ErrorBudget.for_gate(gate, self.defaults)
        return self._budgets[key]
