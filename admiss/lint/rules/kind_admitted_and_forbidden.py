"""A kind both ADMITted and FORBIDden in one property.

## What it does
Flags an ADMIT of a kind that the same property also FORBIDs.

## Why it matters
FORBID overrides ADMIT, so the ADMIT never takes effect: evidence of that kind is
always excluded as `forbidden`. Either the author meant the kind to count and the
property can never pass on it, or meant it never to count and the ADMIT misleads every
reader of the rubric. Both are mistakes worth a look.

## Example
```rubric
KINDS ledger_entry

PROPERTY amount_matches {
  ADMIT ledger_entry, verified_external_source
  FORBID ledger_entry, final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "invoice PDF"
}
```

## How to fix it
Keep the kind in one list: ADMIT if it proves the property, FORBID if it never does.

```rubric
KINDS ledger_entry

PROPERTY amount_matches {
  ADMIT ledger_entry, verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "invoice PDF"
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for prop in rubric.properties:
        forbidden = {ref.value for ref in prop.forbid}
        for ref in prop.admit:
            if ref.value in forbidden:
                yield Finding(ref.span,
                              f"'{ref.value}' is both ADMITted and FORBIDden in property '{prop.name}'; "
                              "FORBID wins, so this ADMIT has no effect",
                              hint="keep it in one list: ADMIT if it proves the property, FORBID if it never does")
