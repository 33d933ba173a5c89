"""A consistency gate with K below 3.

## What it does
Flags a `consistency` gate whose `K` is 1 or 2.

## Why it matters
The consistency gate scores agreement across K samples. One sample always agrees with
itself, and two samples can only agree or tie, so neither shows a majority: the score
says almost nothing about how stably the model reaches its answer, while the gate still
costs K model calls. Three samples is the least that can outvote a stray answer.

## Example
```rubric
CHAIN reply {
  GATE non_empty ON ABSTAIN fail_closed
  GATE consistency K 2 THRESHOLD 0.8
}
```

## How to fix it
```rubric
CHAIN reply {
  GATE non_empty ON ABSTAIN fail_closed
  GATE consistency K 5 THRESHOLD 0.8
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, gates_in


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for _, gate in gates_in(rubric):
        if gate.kind == "consistency" and gate.k is not None and gate.k < 3:
            yield Finding(gate.value_span_of("k"), f"consistency gate with K {gate.k:g} cannot show a majority",
                          hint="use K 3 or more")
