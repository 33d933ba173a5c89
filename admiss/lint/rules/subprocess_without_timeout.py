"""A subprocess gate without TIMEOUT.

## What it does
Flags a `subprocess` gate that has no `TIMEOUT`.

## Why it matters
A test suite that hangs, a deadlocked linter or a network call inside your check holds
the rung until the runner's default timeout, on every candidate. A timeout is an
abstain, and with the default `ON ABSTAIN fail_open` the hung check then counts as a
pass: the output is served because the proof never finished. How long a check may take
is part of the check; say it where the check is declared, so the bound is visible and
chosen for that program.

## Example
```rubric
CHAIN code {
  GATE non_empty ON ABSTAIN fail_closed
  GATE subprocess CMD ["python", "run_tests.py"]
}
```

## How to fix it
```rubric
CHAIN code {
  GATE non_empty ON ABSTAIN fail_closed
  GATE subprocess CMD ["python", "run_tests.py"] TIMEOUT 30s ON ABSTAIN fail_closed
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, gates_in


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for _, gate in gates_in(rubric):
        if gate.kind == "subprocess" and gate.timeout_s is None:
            yield Finding(gate.span_of("kind"), "subprocess gate has no TIMEOUT",
                          hint="add TIMEOUT with the longest the check may take, such as TIMEOUT 30s")
