"""An admissibility gate whose property no step of a served conversation can ever prove.

## What it does
Flags a `GATE admissibility` in a chain `admiss serve` can serve (every rung names a
MODEL) when a property it checks admits no kind that a chat conversation's steps can be
mapped onto: no rule of the MAP block (or, without one,
of the default taxonomy) for tool calls, assistant text or the final answer makes a kind
the property admits and does not forbid.

## Why it matters
`admiss serve` reads a request's messages as the evidence of its admissibility gates. A
property that nothing in a conversation can support is `no` on every request, so the rung
never serves and the chain ends `422 chain_exhausted` however good the answer is. Offline,
`admiss check` still passes bundles whose evidence was written by hand, so the problem
shows only once the chain is live.

## Example
```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "news article"
}
CHAIN serve {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE admissibility named_operator
  }
}
```

## How to fix it
Map the tool call that proves it onto the admitted kind:

```rubric
PROPERTY named_operator {
  ADMIT verified_external_source
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "news article"
}
MAP {
  WHEN TOOL "fetch_filing" OUTCOME ok WHERE result.form == "10-K"
    AS verified_external_source LABEL "10-K filing"
  WHEN TOOL OUTCOME failed AS flawed_tool_call
  WHEN TOOL AS interpretation
  WHEN FINAL AS final_answer
  WHEN TEXT AS interpretation
}
CHAIN serve {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE admissibility named_operator
  }
}
```
"""

from __future__ import annotations

from typing import Iterator

from admiss import ir
from admiss.lint.rules import Finding, offered_to
from admiss.traces.mapping import DEFAULT_MAPPING

# The steps the OpenAI chat reader makes of a request's messages (it has no reasoning steps),
# with the candidate's output as the final answer.
_CONVERSATION_STEPS = frozenset(("tool_call", "assistant_text", "final_answer"))


def _provable(rubric: ir.Rubric) -> dict[str, set[str]]:
    """For each property, the kinds a conversation step can be mapped onto for it."""
    rules = (rubric.mapping or DEFAULT_MAPPING).rules
    kinds: dict[str, set[str]] = {p.name: set() for p in rubric.properties}
    for rule in rules:
        if rule.kind is None or rule.step not in _CONVERSATION_STEPS:
            continue
        for prop in offered_to(rubric, rule):
            kinds[prop.name].add(rule.kind.value)
    return kinds


def _served_gates(rubric: ir.Rubric) -> Iterator[ir.Gate]:
    """The admissibility gates of chains whose every rung has a MODEL (what serve can run)."""
    for chain in rubric.chains:
        if all(rung.model for rung in chain.rungs):
            yield from (g for rung in chain.rungs for g in rung.gates if g.kind == "admissibility")


def check(rubric: ir.Rubric) -> Iterator[Finding]:
    gates = list(_served_gates(rubric))
    if not gates:
        return
    provable = _provable(rubric)
    by_name = {p.name: p for p in rubric.properties}
    source = "the MAP block" if rubric.mapping is not None else "the default taxonomy"
    for gate in gates:
        unprovable = []
        for name in [ref.value for ref in gate.properties] or list(by_name):
            prop = by_name.get(name)
            admitted = {r.value for r in prop.admit} - {r.value for r in prop.forbid} if prop else set()
            if admitted and not admitted & provable[name]:
                unprovable.append((name, sorted(admitted)))
        if unprovable:
            name, admitted = unprovable[0]
            more = f" (and {len(unprovable) - 1} more propert{'y' if len(unprovable) == 2 else 'ies'})" \
                if len(unprovable) > 1 else ""
            yield Finding(gate.span, f"property '{name}' admits {', '.join(admitted)}, which {source} maps no step "
                                     f"of a conversation onto{more}: served, this gate never passes",
                          hint=f"add a MAP rule WHEN TOOL \"...\" OUTCOME ok AS {admitted[0]} for the tool call that "
                               "proves it")
