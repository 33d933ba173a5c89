"""A RUNG with no gates: it serves its candidate unchecked.

## What it does
Flags a RUNG block that holds no GATE, in a chain that has gates elsewhere (a chain
with no gates at all is compile error E117).

## Why it matters
A rung serves when all of its gates pass, and an empty rung passes vacuously: whatever
its model wrote, blank or wrong, is served without a single check, and the chain stops
there. It is usually a rung whose gates were meant to be copied from another. ADM013
reports the rungs it cuts off.

## Example
```rubric
CHAIN serve {
  RUNG draft MODEL "openai/gpt-5-mini" {
  }
  RUNG strong MODEL "anthropic/claude-sonnet-5" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}
```

## How to fix it
Give the rung the checks its candidate must pass:

```rubric
CHAIN serve {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE non_empty ON ABSTAIN fail_closed
  }
  RUNG strong MODEL "anthropic/claude-sonnet-5" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, keyword_span


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for chain in rubric.chains:
        if not any(rung.gates for rung in chain.rungs):
            continue
        for rung in chain.rungs:
            if not rung.gates:
                yield Finding(keyword_span(rung.span, "RUNG"),
                              f"rung '{rung.name}' has no gates: it serves its candidate unchecked",
                              hint="add GATE lines to the rung, or remove it")
