"""Clause coverage: which clauses of a rubric the cases of ``admiss test`` exercised.

A clause is one thing a rubric says that a bundle or trace can make true: each kind an
ADMIT names (an item of that kind admitted), each kind a FORBID names (an item excluded as
forbidden by it), each REJECT SHORTCUT entry (an item excluded by that label), each
property's DEFAULT (the verdict fell to it: nothing admitted), each MAP rule (it decided a
step), each GATE (it ran and gave a verdict) and each ON ABSTAIN of a gate kind that can
abstain on its own (subprocess, judge, consistency: the policy decided an abstain).

Coverage is read from the reports afterwards, never recorded while checking: the check
path is the one ``admiss check`` runs, with nothing added to it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import attrs

from admiss import ir
from admiss.compiler import FORBIDDEN, SHORTCUT

if TYPE_CHECKING:
    from admiss.compiler import PropertyResult
    from admiss.report import CheckReport

ADMIT, FORBID, REJECT, DEFAULT, MAP, GATE, ON_ABSTAIN = (
    "ADMIT", "FORBID", "REJECT SHORTCUT", "DEFAULT", "MAP", "GATE", "ON ABSTAIN")
CLAUSE_KINDS = (ADMIT, FORBID, REJECT, DEFAULT, MAP, GATE, ON_ABSTAIN)
# The gate kinds whose own abstain ON ABSTAIN decides. The others abstain only when the
# candidate's data stopped them (that always fails, whatever ON ABSTAIN says) or when the
# gate itself has a bug, so their ON ABSTAIN is no branch a case can take.
ABSTAINING_KINDS = ("subprocess", "judge", "consistency")


@attrs.frozen
class Clause:
    """One coverable clause: ``key`` identifies it, ``where`` names its block in words."""

    key: tuple
    kind: str
    text: str
    where: str
    line: int
    column: int


def _first(refs: Iterable[ir.Ref]) -> list[ir.Ref]:
    # A kind or label written twice is one clause (the compiler keeps the first, too).
    seen: dict[str, ir.Ref] = {}
    for ref in refs:
        seen.setdefault(ref.value, ref)
    return list(seen.values())


def _property_clauses(prop: ir.Property) -> list[Clause]:
    where = f"property {prop.name}"
    out = [Clause((ADMIT, prop.name, r.value), ADMIT, r.value, where, r.span.line, r.span.column)
           for r in _first(prop.admit)]
    out += [Clause((FORBID, prop.name, r.value), FORBID, r.value, where, r.span.line, r.span.column)
            for r in _first(prop.forbid)]
    out += [Clause((REJECT, prop.name, r.value), REJECT, json.dumps(r.value, ensure_ascii=False), where,
                   r.span.line, r.span.column) for r in _first(prop.shortcuts)]
    # An omitted DEFAULT (no) has no span of its own: it is the property's.
    span = prop.default.span if prop.default.span.line > 0 else prop.span
    out.append(Clause((DEFAULT, prop.name), DEFAULT, prop.default.value, where, span.line, span.column))
    return out


def _gate_clauses(chain: ir.Chain) -> list[Clause]:
    out = []
    for r, rung in enumerate(chain.rungs):
        where = f"chain {chain.name}" if rung.implicit else f"chain {chain.name} rung {rung.name}"
        for g, gate in enumerate(rung.gates):
            out.append(Clause((GATE, chain.name, r, g), GATE, gate.kind, where, gate.span.line, gate.span.column))
            if gate.kind in ABSTAINING_KINDS:
                span = gate.span_of("on_abstain")
                out.append(Clause((ON_ABSTAIN, chain.name, r, g), ON_ABSTAIN, f"{gate.on_abstain} ({gate.kind})",
                                  where, span.line, span.column))
    return out


def clauses_of(rubric: ir.Rubric) -> list[Clause]:
    """Every coverable clause of ``rubric``, in source order within each block."""
    from admiss.traces.mapping import rule_text  # start-up time: only coverage needs the mapping's words

    out = [c for prop in rubric.properties for c in _property_clauses(prop)]
    if rubric.mapping is not None:
        out += [Clause((MAP, i), MAP, rule_text(rule), "MAP", rule.span.line, rule.span.column)
                for i, rule in enumerate(rubric.mapping.rules, start=1)]
    out += [c for chain in rubric.chains for c in _gate_clauses(chain)]
    return out


class Coverage:
    """The clauses of one rubric file and how often the cases hit each."""

    def __init__(self, rubric: ir.Rubric, file: str):
        self.file = file
        self.clauses = clauses_of(rubric)
        self.hits: dict[tuple, int] = {c.key: 0 for c in self.clauses}
        self._chains = {c.name: c for c in rubric.chains}

    def _hit(self, key: tuple) -> None:
        if key in self.hits:
            self.hits[key] += 1

    def record_property(self, result: "PropertyResult") -> None:
        name = result.prop.name
        for item in result.admitted:
            self._hit((ADMIT, name, item["kind"]))
        for _, exclusion in result.excluded:
            if exclusion.reason == FORBIDDEN:
                self._hit((FORBID, name, exclusion.clause["value"]))
            elif exclusion.reason == SHORTCUT:
                self._hit((REJECT, name, exclusion.clause["value"]))
        if not result.admitted:
            self._hit((DEFAULT, name))

    def record_report(self, report: "CheckReport") -> None:
        """What one report shows was exercised: its properties, and its chain's gates (and
        the properties an admissibility gate checked)."""
        for result in report.properties:
            self.record_property(result)
        if report.chain is None:
            return
        chain = self._chains[report.chain.name]
        rung_index = {rung.name: r for r, rung in enumerate(chain.rungs)}
        for rung in report.chain.rungs:
            r = rung_index[rung.rung]
            # Gate records come in the order the gates are written on the rung.
            for g, record in enumerate(rung.gates):
                if record.verdict == "skipped":
                    continue
                self._hit((GATE, chain.name, r, g))
                if record.verdict == "abstain" and record.fault != "candidate":
                    self._hit((ON_ABSTAIN, chain.name, r, g))
                for result in (record.details or {}).get("properties", ()):
                    self.record_property(result)

    def record_mapping(self, evidence: list[dict], not_offered: list[dict]) -> None:
        """The MAP rules that decided a trace's steps: ``evidence`` explained (each item's
        ``why``) and the not-offered entries, as ``CompiledMapping.split(trace, explain=True)``
        gives them."""
        for why in [item["why"] for item in evidence] + not_offered:
            if "index" in why and "line" in why:
                self._hit((MAP, why["index"]))

    @property
    def covered(self) -> int:
        return sum(1 for hits in self.hits.values() if hits)

    @property
    def total(self) -> int:
        return len(self.clauses)

    @property
    def percent(self) -> float:
        return 100.0 if not self.clauses else 100.0 * self.covered / self.total

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "covered": self.covered, "total": self.total, "percent": round(self.percent, 2),
                "clauses": [{"kind": c.kind, "text": c.text, "where": c.where, "line": c.line, "column": c.column,
                             "hits": self.hits[c.key]} for c in self.clauses]}


def total_percent(coverages: Iterable[Coverage]) -> float:
    coverages = list(coverages)
    total = sum(c.total for c in coverages)
    return 100.0 if total == 0 else 100.0 * sum(c.covered for c in coverages) / total


def coverage_text(coverages: list[Coverage]) -> str:
    """Per file: clauses covered of all, then each clause no case exercised, at file:line:col."""
    lines = []
    for cov in coverages:
        lines.append(f"{cov.file}: {cov.covered}/{cov.total} clauses covered ({cov.percent:.1f}%)")
        for clause in cov.clauses:
            if not cov.hits[clause.key]:
                lines.append(f"  not covered: {cov.file}:{clause.line}:{clause.column}: {clause.kind} {clause.text} "
                             f"({clause.where})")
    covered, total = sum(c.covered for c in coverages), sum(c.total for c in coverages)
    lines.append(f"coverage: {covered}/{total} clauses ({total_percent(coverages):.1f}%)")
    return "\n".join(lines) + "\n"


def coverage_dict(coverages: list[Coverage]) -> dict[str, Any]:
    return {"files": [c.to_dict() for c in coverages], "covered": sum(c.covered for c in coverages),
            "total": sum(c.total for c in coverages), "percent": round(total_percent(coverages), 2)}


def _lcov_path(file: str) -> str:
    # Paths relative to the working folder, as editors and CI services resolve them from
    # the repository root; a file outside it keeps its absolute path.
    path = Path(file).resolve()
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except ValueError:
        return str(path)


def lcov(coverages: list[Coverage], test_name: str = "admiss") -> str:
    """The coverage as an lcov tracefile: a line per clause line (DA) and each clause a branch
    of its line (BRDA), so a line with one clause uncovered shows as partly covered."""
    out = []
    for cov in coverages:
        out += [f"TN:{test_name}", f"SF:{_lcov_path(cov.file)}"]
        lines: dict[int, list[int]] = {}
        for clause in cov.clauses:
            lines.setdefault(clause.line, []).append(cov.hits[clause.key])
        for line, hits in sorted(lines.items()):
            out += [f"BRDA:{line},0,{branch},{count}" for branch, count in enumerate(hits)]
        out += [f"BRF:{cov.total}", f"BRH:{cov.covered}"]
        out += [f"DA:{line},{sum(hits)}" for line, hits in sorted(lines.items())]
        out += [f"LF:{len(lines)}", f"LH:{sum(1 for hits in lines.values() if any(hits))}", "end_of_record"]
    return "\n".join(out) + "\n"
