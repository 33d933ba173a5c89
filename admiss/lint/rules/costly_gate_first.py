"""A costly gate placed before a cheaper one on a rung.

## What it does
Ranks gate kinds by what they cost to run, cheapest first: `non_empty` and
`json_valid` (inline, free); `schema` and `admissibility` (free, but they read more);
`subprocess` (your own program, wall time); `judge` (one model call); `consistency`
(K extra model calls). Flags a gate written before a gate of a cheaper rank on the
same rung.

## Why it matters
The cheapest proof that settles the decision is the one worth running, and a rung stops
at its first fail. admiss's runner takes the free gates in the order written before it
starts any costly one, so the order among the free gates decides which failure a
candidate is rejected for (an empty output should fail `non_empty`, not `schema`). The
IR is also meant to be run by other implementations, and a runner that follows the
written order pays for a judge call or K samples on an output a free check would have
rejected. Written cheapest first, the rubric reads the way it runs.

## Example
```rubric
PROPERTY answered {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "draft reply"
}

CHAIN reply {
  GATE consistency K 5 THRESHOLD 0.8
  GATE non_empty ON ABSTAIN fail_closed
  GATE admissibility answered
}
```

## How to fix it
```rubric
PROPERTY answered {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "draft reply"
}

CHAIN reply {
  GATE non_empty ON ABSTAIN fail_closed
  GATE admissibility answered
  GATE consistency K 5 THRESHOLD 0.8
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding

_COST_RANK = {"non_empty": 0, "json_valid": 0, "schema": 1, "admissibility": 1, "subprocess": 2, "judge": 3,
              "consistency": 4}


def _first_cheaper(gate: ir.Gate, later: tuple[ir.Gate, ...]) -> ir.Gate | None:
    rank = _COST_RANK[gate.kind]
    return next((g for g in later if _COST_RANK.get(g.kind, rank) < rank), None)


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for chain in rubric.chains:
        for rung in chain.rungs:
            for index, gate in enumerate(rung.gates):
                # An unknown kind (E108) has no cost to compare.
                cheaper = _first_cheaper(gate, rung.gates[index + 1:]) if gate.kind in _COST_RANK else None
                if cheaper is not None:
                    yield Finding(gate.span_of("kind"),
                                  f"{gate.kind} gate runs before the cheaper {cheaper.kind} gate "
                                  f"on line {cheaper.span.line}",
                                  hint="order gates cheapest first: non_empty, json_valid, schema, admissibility, "
                                       "subprocess, judge, consistency")
