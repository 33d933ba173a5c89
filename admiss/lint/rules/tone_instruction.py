"""A tone instruction in a judge RUBRIC.

## What it does
Flags a judge gate whose `RUBRIC` asks for an attitude: "be objective", "be skeptical",
"be critical", "be thorough", "review carefully", "check it closely", "use your
judgment", "does this look right", and the like. Only the first such phrase in a
question is reported.

## Why it matters
A tone instruction describes a wish, not a procedure. "Be skeptical" does not say what
counts as proof, so the judge still decides that at run time, and a model asked to
sound skeptical will still approve plausible work. Confirmatory review is where
sycophancy lives; the question has to name the check.

## Example
```rubric
CHAIN review {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE judge MODEL "anthropic/claude-sonnet-5" RUBRIC "Be objective and review the answer carefully."
      ON ABSTAIN fail_closed
  }
}
```

## How to fix it
Ask for the check itself: what evidence decides, and what would make the answer wrong.

```rubric
CHAIN review {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE judge MODEL "anthropic/claude-sonnet-5"
      RUBRIC "Quote the passage that states each claim. Which claim has no such passage? Score 0 if any."
      ON ABSTAIN fail_closed
  }
}
```
"""

from __future__ import annotations

import re
from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, judge_questions

_ATTITUDES = r"objective|skeptical|sceptical|critical|rigorous|strict|thorough|careful|fair|honest|harsh|unbiased|impartial"
_TONE = re.compile(
    "|".join([
        rf"\bbe (?:very |extra |more |really )?(?:{_ATTITUDES})\b",
        r"\b(?:review|check|read|evaluate|examine|grade|inspect)\b(?: \w+){0,3}? "
        r"(?:carefully|thoroughly|critically|closely|rigorously|skeptically)\b",
        r"\b(?:carefully|thoroughly|critically) (?:review|check|read|evaluate|examine|consider|assess)\b",
        r"\bdoes (?:this|it|the \w+) (?:look|seem|sound) (?:right|correct|good|ok|okay|reasonable|plausible)\b",
        r"\buse your (?:best )?judge?ment\b",
        r"\bthink critically\b",
    ]),
    re.IGNORECASE,
)


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    for gate, question in judge_questions(rubric):
        match = _TONE.search(question)
        if match:
            yield Finding(gate.value_span_of("rubric"),
                          f"judge RUBRIC gives a tone instruction ({match.group(0)!r}) instead of a check",
                          hint="name the check: what evidence decides, and what would make the answer wrong")
