"""A non_empty or json_valid gate left fail_open.

## What it does
Flags a `non_empty` or `json_valid` gate whose `ON ABSTAIN` is `fail_open`, whether
written out or left to the default.

## Why it matters
These two checks are free and deterministic: given an output they always decide. When
one abstains, the check itself broke, and `fail_open` then counts the abstain as a
pass, so a blank or non-JSON output is served exactly when the floor meant to stop it
is down. Serving a blank response is never right; the floors belong on `fail_closed`.

## Example
```rubric
CHAIN reply {
  GATE non_empty
  GATE json_valid ON ABSTAIN fail_open
}
```

## How to fix it
```rubric
CHAIN reply {
  GATE non_empty ON ABSTAIN fail_closed
  GATE json_valid ON ABSTAIN fail_closed
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, gates_in

_FLOORS = ("non_empty", "json_valid")


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for _, gate in gates_in(rubric):
        if gate.kind in _FLOORS and gate.on_abstain == "fail_open":
            written = "on_abstain" in dict(gate.option_spans)
            span = gate.value_span_of("on_abstain") if written else gate.span_of("kind")
            how = "is fail_open" if written else "is fail_open by default"
            yield Finding(span, f"{gate.kind} gate {how}: if it abstains, the output is served unchecked",
                          hint="add ON ABSTAIN fail_closed: an abstain from this free check means the check broke")
