"""A judge whose MODEL is its rung's MODEL: maker = checker.

## What it does
Flags a judge gate whose `MODEL` names the same model as the `MODEL` of the rung it
stands on. Models are compared the way the judge gate compares them at run time: by
the name after the last `/`, ignoring case, so `openai/gpt-5` and `azure/GPT-5` are the
same model.

## Why it matters
A model never grades its own output: it shares its own blind spots and is partial to
its own phrasing. The judge gate enforces this at run time by abstaining before any
call, so this judge never judges anything; with the default `ON ABSTAIN fail_open` the
abstain even counts as a pass, and the rung serves unjudged output. Catch it when the
rubric is written.

## Example
```rubric
CHAIN serve {
  RUNG strong MODEL "anthropic/claude-sonnet-5" {
    GATE judge MODEL "anthropic/claude-sonnet-5"
      RUBRIC "Which claim has no cited passage that states it? Score 0 if any."
  }
}
```

## How to fix it
Grade with a model from another family:

```rubric
CHAIN serve {
  RUNG strong MODEL "anthropic/claude-sonnet-5" {
    GATE judge MODEL "openai/gpt-5"
      RUBRIC "Which claim has no cited passage that states it? Score 0 if any."
      ON ABSTAIN fail_closed
  }
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.gates.judge import same_model
from admiss.lint.rules import Finding, gates_in


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for rung, gate in gates_in(rubric):
        if gate.kind == "judge" and gate.model and rung.model and same_model(gate.model, rung.model):
            yield Finding(gate.value_span_of("model"),
                          f"judge MODEL \"{gate.model}\" is the model of rung '{rung.name}': "
                          "it would grade its own output",
                          hint="judge with a model from another family; as written the judge always abstains")
