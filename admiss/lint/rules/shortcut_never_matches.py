"""A REJECT SHORTCUT label that is empty or padded with spaces.

## What it does
Flags a shortcut label that is the empty string or starts or ends with whitespace.

## Why it matters
A shortcut is rejected when an evidence item's `source_label` equals the label exactly.
`" news article"` or `"news article "` rejects nothing an agent is likely to send, and
`""` only an unlabelled item, so the lookalike it was meant to stop is admitted while
the report's `shortcut_rejections:` line suggests otherwise. The typo is invisible in
most editors.

## Example
```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit", " news article"
}
```

## How to fix it
```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit", "news article"
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for prop in rubric.properties:
        for ref in prop.shortcuts:
            if not ref.value.strip():
                yield Finding(ref.span, f"empty shortcut label in property '{prop.name}'",
                              hint="write the source label to reject, or remove it")
            elif ref.value != ref.value.strip():
                yield Finding(ref.span, f"shortcut label {ref.value!r} has leading or trailing whitespace: "
                              "labels must match exactly", hint=f'write "{ref.value.strip()}"')
