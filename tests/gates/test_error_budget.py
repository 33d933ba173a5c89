"""The error budget: rolling error rate per gate, disabled past the budget, and says so."""

from __future__ import annotations

from gatekit import gate

from admiss.budget import BudgetBook, ErrorBudget
from admiss.config import GateDefaults


def record_all(budget: ErrorBudget, outcomes: str) -> list[bool]:
    """Record 'E' as an error and '.' as a clean run; the list says which run disabled the gate."""
    return [budget.record(mark == "E") for mark in outcomes]


def test_not_disabled_before_the_minimum_number_of_runs():
    budget = ErrorBudget(rate=0.5, window=20, min_runs=5)
    assert record_all(budget, "EEEE") == [False] * 4
    assert not budget.disabled
    assert budget.record(True)
    assert budget.disabled


def test_disabled_only_when_the_rate_exceeds_the_budget():
    budget = ErrorBudget(rate=0.5, window=4, min_runs=4)
    record_all(budget, "EE..")
    assert budget.error_rate == 0.5 and not budget.disabled  # at the budget, not past it
    assert record_all(budget, "EE") == [False, False]  # the window is E..E, then ..EE: still 0.5
    assert budget.record(True)  # .EEE: 0.75
    assert budget.disabled_reason == "disabled by its error budget: 3 errors in its last 4 runs (75% > 50%)"


def test_old_runs_leave_the_window():
    budget = ErrorBudget(rate=0.5, window=4, min_runs=2)
    record_all(budget, "E.")
    record_all(budget, "....")
    assert budget.error_rate == 0.0
    assert record_all(budget, "E.E") == [False, False, False]
    assert budget.error_rate == 0.5


def test_once_disabled_it_stays_disabled_and_stops_counting():
    budget = ErrorBudget(rate=0.0, window=3, min_runs=1)
    assert record_all(budget, "E...") == [True, False, False, False]
    assert budget.disabled


def test_enabled_again_its_old_errors_are_not_held_against_it():
    budget = ErrorBudget(rate=0.5, window=4, min_runs=2)
    assert record_all(budget, "EE") == [False, True]
    budget.enable()
    assert (budget.runs, budget.errors, budget.error_rate) == (0, 0, 0.0)
    assert record_all(budget, "..E") == [False, False, False]  # one error in three runs
    assert (budget.errors, budget.disabled) == (1, False)


def test_a_minimum_above_the_window_is_capped_at_the_window():
    budget = ErrorBudget(rate=0.5, window=3, min_runs=10)
    assert record_all(budget, "EEE") == [False, False, True]


def test_the_gate_overrides_the_configured_defaults():
    defaults = GateDefaults(budget_rate=0.3, budget_window=7, budget_min_runs=2)
    own = ErrorBudget.for_gate(gate("subprocess", budget_rate=0.1, budget_window=3), defaults)
    configured = ErrorBudget.for_gate(gate("subprocess"), defaults)
    assert (own.rate, own.window, own.min_runs) == (0.1, 3, 2)
    assert (configured.rate, configured.window, configured.min_runs) == (0.3, 7, 2)


def test_the_book_keeps_one_budget_per_gate_across_bundles():
    book = BudgetBook(GateDefaults(budget_rate=0.5, budget_window=4, budget_min_runs=2))
    flaky, steady = gate("subprocess"), gate("judge", model="m/j")
    for _ in range(2):  # two bundles, the same gates
        book.budget(("serve", "strong", 0), flaky).record(True)
        book.budget(("serve", "strong", 1), steady).record(False)
    assert book.budget(("serve", "strong", 0), flaky).disabled
    assert not book.budget(("serve", "strong", 1), steady).disabled


def test_health_is_the_rate_and_the_disabled_flag_as_the_gauges_show_them():
    budget = ErrorBudget(rate=0.5, window=3, min_runs=2)
    seen = [budget.health()]
    for mark in "..E.EE":
        budget.record(mark == "E")
        seen.append(budget.health())
        assert budget.health() == (budget.error_rate, 1.0 if budget.disabled else 0.0)
    # the window fills, an error comes and goes with it, then the budget is spent
    assert seen == [(0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (1 / 3, 0.0), (1 / 3, 0.0), (2 / 3, 1.0), (2 / 3, 1.0)]
    budget.enable()
    assert budget.health() == (0.0, 0.0)
    budget.disable("disabled by another gateway")
    assert budget.health() == (0.0, 1.0)
