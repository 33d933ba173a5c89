"""A judge or consistency THRESHOLD below 0.5.

## What it does
Flags a `judge` or `consistency` gate whose `THRESHOLD` is below 0.5.

## Why it matters
The gate passes when the score reaches the threshold. Below one half, a judge passes
answers it scored as more wrong than right, and a consistency gate passes answers that
most samples disagree with; at 0 the gate passes everything while its cost still lands
on the receipt. A low bar turns the check back into accept-if-plausible. (Without
THRESHOLD the judge uses 0.7 and consistency 0.8.)

## Example
```rubric
CHAIN review {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE judge MODEL "anthropic/claude-sonnet-5" THRESHOLD 0.3
      RUBRIC "Which claim has no cited passage that states it? Score 0 if any."
  }
}
```

## How to fix it
```rubric
CHAIN review {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE judge MODEL "anthropic/claude-sonnet-5" THRESHOLD 0.8
      RUBRIC "Which claim has no cited passage that states it? Score 0 if any."
      ON ABSTAIN fail_closed
  }
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, gates_in


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for _, gate in gates_in(rubric):
        if gate.kind in ("judge", "consistency") and gate.threshold is not None and gate.threshold < 0.5:
            yield Finding(gate.value_span_of("threshold"),
                          f"{gate.kind} THRESHOLD {gate.threshold:g} passes scores below one half",
                          hint="require at least a majority: THRESHOLD 0.5 or more")
