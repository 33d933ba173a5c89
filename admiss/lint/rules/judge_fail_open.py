"""A judge gate left fail_open.

## What it does
Flags a `judge` gate whose `ON ABSTAIN` is `fail_open`, whether written out or left to
the default.

## Why it matters
A judge abstains whenever it cannot answer: its provider is down or missing, its reply is
refused or malformed, the run is `--offline`. `fail_open` counts each of those abstains as
a pass, so the candidate is served exactly when nobody read it, and an outage of the
judge's provider quietly turns the gate into an open door. That is rarely what a verifier
wants. Keep `fail_open` only for a judge whose verdict is advisory, and say why in a
suppression comment.

## Example
```rubric
CHAIN reply {
  GATE non_empty ON ABSTAIN fail_closed
  GATE judge MODEL "openai/gpt-5" RUBRIC "Which claim is not supported by the sources?"
}
```

## How to fix it
```rubric
CHAIN reply {
  RUNG answer MODEL "anthropic/claude-sonnet-5" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE judge MODEL "openai/gpt-5" RUBRIC "Which claim is not supported by the sources?"
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
        if gate.kind == "judge" and gate.on_abstain == "fail_open":
            written = "on_abstain" in dict(gate.option_spans)
            span = gate.value_span_of("on_abstain") if written else gate.span_of("kind")
            how = "is fail_open" if written else "is fail_open by default"
            yield Finding(span, f"judge gate {how}: whenever the judge cannot answer, the candidate is served unread",
                          hint="add ON ABSTAIN fail_closed, or suppress with a reason: "
                               "# admiss: ignore[ADM040] advisory judge, because ...")
