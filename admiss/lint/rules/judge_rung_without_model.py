"""A judge on a rung with no MODEL: maker = checker cannot be checked.

## What it does
Flags a judge gate on a rung that does not say which model it checks: a RUNG without
`MODEL`, or a chain whose gates stand directly in it (its one rung has no model).

## Why it matters
A judge must not grade its own model's output. Without the rung's MODEL, nothing in the
rubric says which model wrote the candidate, so a judge of the same family cannot be
caught while the rubric is written (ADM008 needs the rung's MODEL), and the rubric does
not tell its reader either. At run time the judge abstains when the candidate's model
turns out to be its own, and under `ON ABSTAIN fail_open` that abstain is a pass.

## Example
```rubric
CHAIN review {
  GATE non_empty ON ABSTAIN fail_closed
  GATE judge MODEL "openai/gpt-5" RUBRIC "Which claim has no cited passage that states it? Score 0 if any."
}
```

## How to fix it
Put the gates in a RUNG that names its model:

```rubric
CHAIN review {
  RUNG draft MODEL "anthropic/claude-sonnet-5" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE judge MODEL "openai/gpt-5" RUBRIC "Which claim has no cited passage that states it? Score 0 if any."
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
    for rung, gate in gates_in(rubric):
        if gate.kind == "judge" and not rung.model:
            where = "its chain's gates stand in no RUNG" if rung.implicit else f"rung '{rung.name}' has no MODEL"
            yield Finding(gate.span_of("kind"), f"judge gate cannot be checked against its candidate's model: {where}",
                          hint='name the model the rung checks: RUNG name MODEL "provider/model" { ... }')
