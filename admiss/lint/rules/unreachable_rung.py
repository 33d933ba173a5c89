"""A rung that can never be reached, because an earlier rung has no gates.

## What it does
Flags every rung after the first rung that has no gates.

## Why it matters
A rung serves when all its gates pass, and a rung with no gates passes vacuously: it
serves its candidate every time and the chain stops there. The rungs after it, usually
the stronger models and the costlier checks, never run. ADM016 reports the empty rung
itself.

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
Give the early rung its gates (or remove it):

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
        empty = next((rung for rung in chain.rungs if not rung.gates), None)
        if empty is None:
            continue
        for rung in chain.rungs[chain.rungs.index(empty) + 1:]:
            yield Finding(keyword_span(rung.span, "RUNG"),
                          f"rung '{rung.name}' can never run: rung '{empty.name}' on line {empty.span.line} "
                          "has no gates, so it always serves",
                          hint=f"give rung '{empty.name}' its gates, or remove it")
