"""admissibility: the named properties (all when none are named) must be yes on the candidate's evidence."""

from __future__ import annotations

from admiss import ir
from admiss.compiler import offered, rows_of
from admiss.gates.base import FAIL, PASS, Candidate, GateCheck, GateContext, GateResult


def build(gate: ir.Gate, ctx: GateContext) -> GateCheck:
    names = [ref.value for ref in gate.properties] or list(ctx.properties)
    properties = [ctx.properties[name] for name in names]

    def run(candidate: Candidate) -> GateResult:
        rows = rows_of(candidate.evidence)
        results = [p.check(offered(rows, p.name)) for p in properties]
        missing = [r.prop.name for r in results if r.verdict == "no"]
        verdict = FAIL if missing else PASS
        reason = f"no admissible evidence for: {', '.join(missing)}" if missing else \
            f"admissible evidence supports {len(results)} propert{'y' if len(results) == 1 else 'ies'}"
        # The evidence goes with the results, so a report can give each excluded item's index.
        return GateResult(verdict, reason=reason, details={"properties": results, "evidence": candidate.evidence})

    return GateCheck(kind="admissibility", cheap=True, run=run)
