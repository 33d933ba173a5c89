"""A consistency gate that asks a MEANING MODEL, left fail_open.

## What it does
Flags a `consistency` gate with `MEANING MODEL` whose `ON ABSTAIN` is `fail_open`,
whether written out or left to the default.

## Why it matters
With `MEANING MODEL` the gate cannot decide without its meaning model whenever the
answers differ in wording: an outage of that model's provider, a refused or malformed
reply, or an `--offline` run makes it abstain. `fail_open` counts each of those abstains
as a pass, so the gate passes exactly the candidates it could not check, for as long as
the meaning model is down. Keep `fail_open` only when the gate is advisory, and say why in
a suppression comment.

## Example
```rubric
CHAIN reply {
  GATE non_empty ON ABSTAIN fail_closed
  GATE consistency K 5 THRESHOLD 0.8 MEANING MODEL "openai/gpt-5-mini"
}
```

## How to fix it
```rubric
CHAIN reply {
  GATE non_empty ON ABSTAIN fail_closed
  GATE consistency K 5 THRESHOLD 0.8 MEANING MODEL "openai/gpt-5-mini" ON ABSTAIN fail_closed
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, gates_in


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for _, gate in gates_in(rubric):
        if gate.kind == "consistency" and gate.meaning_model is not None and gate.on_abstain == "fail_open":
            written = "on_abstain" in dict(gate.option_spans)
            span = gate.value_span_of("on_abstain") if written else gate.span_of("meaning_model")
            how = "is fail_open" if written else "is fail_open by default"
            yield Finding(span, f"consistency gate with MEANING MODEL {how}: whenever the meaning model cannot "
                                "answer, the candidate passes unchecked",
                          hint="add ON ABSTAIN fail_closed, or suppress with a reason: "
                               "# admiss: ignore[ADM041] advisory, because ...")
