"""The results of ``admiss test`` (admiss/testing.py) as text, JSON and JUnit suites.

Text shows each failure evidence first: what the report found (admitted and excluded items,
each exclusion with its clause at file:line:col, or the chain's receipt), then the clause
that decided it, then expected against got. What a bundle wrote is shown on one line each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from admiss.report.junit import ERRORED, FAILED, PASSED, Case, Suite
from admiss.terminal import one_line

if TYPE_CHECKING:
    from admiss.testing import CaseResult, Failure, FileResult


def _failure_lines(failure: "Failure") -> list[str]:
    lines = [f"  {failure.expectation}", "    evidence:"]
    lines += [f"      {one_line(line)}" for line in failure.evidence]
    if failure.clause is not None:
        lines.append(f"    clause:   {one_line(failure.clause)}")
    lines += [f"    expected: {one_line(failure.expected)}", f"    got:      {one_line(failure.got)}"]
    return lines


def case_text(case: "CaseResult") -> str:
    """A failed or errored case's block (a passed case has none)."""
    head = f"{'FAIL' if case.outcome == 'fail' else 'ERROR'} {one_line(case.where)}: {one_line(case.name)}"
    if case.error is not None:
        return "\n".join([head] + [f"  {line}" for line in case.error.splitlines()])
    return "\n".join([head] + [line for failure in case.failures for line in _failure_lines(failure)])


def _counts(cases: list["CaseResult"]) -> dict[str, int]:
    return {outcome: sum(1 for c in cases if c.outcome == outcome) for outcome in ("pass", "fail", "error")}


def results_text(files: list["FileResult"]) -> str:
    blocks = []
    for result in files:
        if result.error is not None:
            blocks.append(f"ERROR {one_line(result.file)}\n" + "\n".join(f"  {line}" for line in result.error.render().splitlines()))
        blocks += [case_text(c) for c in result.cases if c.outcome != "pass"]
    summary = []
    for result in files:
        counts = _counts(list(result.cases))
        state = "could not run" if result.error is not None else \
            f"{counts['pass']} passed, {counts['fail']} failed, {counts['error']} errors"
        summary.append(f"{one_line(result.file)}: {state}")
    every = [c for r in files for c in r.cases]
    counts = _counts(every)
    broken = sum(1 for r in files if r.error is not None)
    total = (f"{len(every)} case{'' if len(every) == 1 else 's'}: {counts['pass']} passed, {counts['fail']} failed, {counts['error']} errors "
             f"in {len(files)} test file{'' if len(files) == 1 else 's'}"
             + (f" ({broken} could not run)" if broken else ""))
    return "\n\n".join(blocks + ["\n".join(summary + [total])]) + "\n"


def _failure_dict(failure: "Failure") -> dict[str, Any]:
    return {"expectation": failure.expectation, "evidence": list(failure.evidence), "clause": failure.clause,
            "expected": failure.expected, "got": failure.got}


def results_dict(files: list["FileResult"]) -> dict[str, Any]:
    every = [c for r in files for c in r.cases]
    return {
        "files": [{
            "file": r.file, "rubric": r.rubric,
            "error": [d.to_dict() for d in r.error.diagnostics] if r.error is not None else None,
            "cases": [{"name": c.name, "line": c.line, "outcome": c.outcome, "time_s": round(c.time_s, 6),
                       "failures": [_failure_dict(f) for f in c.failures], "error": c.error} for c in r.cases],
        } for r in files],
        **_counts(every),
    }


def results_suites(files: list["FileResult"]) -> list[Suite]:
    """One JUnit suite per test file, one case per test case (a file that could not run:
    one errored case carrying why)."""
    suites = []
    for r in files:
        if r.error is not None:
            code = r.error.diagnostics[0].code if r.error.diagnostics else "error"
            suites.append(Suite(r.file, (Case("test file", r.file, ERRORED, r.error.diagnostics[0].message,
                                              r.error.render(), code),)))
            continue
        cases = tuple(Case(c.name, r.file, {"pass": PASSED, "fail": FAILED, "error": ERRORED}[c.outcome],
                           _message(c), case_text(c) if c.outcome != "pass" else "", _kind(c), c.time_s)
                      for c in r.cases)
        suites.append(Suite(r.file, cases, (("rubric", r.rubric or ""),)))
    return suites


def _message(case: "CaseResult") -> str:
    if case.outcome == "error":
        return (case.error or "").splitlines()[0] if case.error else "error"
    return "; ".join(f"{f.expectation}: expected {f.expected}, got {f.got}" for f in case.failures)


def _kind(case: "CaseResult") -> str:
    return "expectation" if case.outcome == "fail" else "error" if case.outcome == "error" else ""
