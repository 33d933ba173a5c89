"""A suppression comment that suppresses nothing.

## What it does
Flags a `# admiss: ignore[...]` comment that names a code which is not reported on the
line it covers, a code that is not a lint rule, or no code at all. A code that the
run does not select (`--select`, `--ignore`, configuration) is not reported as unused.

## Why it matters
A suppression is a decision that a finding is acceptable on one line. When the rubric
changes and the finding goes away, a stale suppression stays behind and silently
swallows the next, different problem of the same code on that line. Compile errors
cannot be suppressed at all, and a misspelt code suppresses nothing while looking as if
it did.

## Example
```rubric
# admiss: ignore[ADM004]
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit"
}
```

## How to fix it
Remove the suppression, or the codes in it that no longer apply:

```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "8-K press-release exhibit"
}
```
"""

from __future__ import annotations

from typing import Callable, Collection, Iterator

from admiss.lint.rules import Finding
from admiss.lint.suppression import Suppression


def check(suppressions: list[Suppression], used: Collection[tuple[int, str]], known: Collection[str],
          enabled: Callable[[str], bool]) -> Iterator[Finding]:
    """``used`` holds the (line, code) pairs that silenced a finding."""
    for suppression in suppressions:
        span = suppression.comment.span
        if not suppression.codes:
            yield Finding(span, "suppression names no code", hint="write # admiss: ignore[ADMnnn]")
        for code in suppression.codes:
            if code not in known:
                yield Finding(span, f"suppression names {code}, which is not a lint rule code",
                              hint="compile errors cannot be suppressed; lint codes are ADM001 and up")
            elif enabled(code) and (suppression.line, code) not in used:
                yield Finding(span, f"unused suppression: {code} is not reported on line {suppression.line}",
                              hint=f"remove {code} from the suppression")
