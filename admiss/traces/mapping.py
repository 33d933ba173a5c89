"""Trace steps to evidence items, by the rubric's MAP rules or the default taxonomy.

Every step is decided: it becomes one evidence item (carrying its step reference), or it is
listed as not offered with the reason. Rules are compiled once per rubric into closures,
bucketed by step type, so deciding a step tries only the rules for its type and never
reads the IR.

Without a MAP block the seed's taxonomy applies; it is itself a MAP block
(:data:`DEFAULT_MAPPING`), so defaults and rules are decided by the same code.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from admiss import ir
from admiss.jsonio import dumps_line
from admiss.redact import clipped
from admiss.traces.steps import (
    ASSISTANT_TEXT, FINAL_ANSWER, OK, REASONING, SYSTEM, TOOL_CALL, USER, Step, Trace,
)

# The default taxonomy, written as the MAP block it is (docs/traces.md shows it).
DEFAULT_MAPPING = ir.Mapping((
    ir.MapRule("tool_call", outcomes=(ir.Ref("ok"),), kind=ir.Ref("procedurally_sound_tool_call")),
    ir.MapRule("tool_call", outcomes=(ir.Ref("failed"),), kind=ir.Ref("flawed_tool_call")),
    ir.MapRule("final_answer", kind=ir.Ref("final_answer")),
    ir.MapRule("reasoning", kind=ir.Ref("reasoning_trace")),
    ir.MapRule("assistant_text", kind=ir.Ref("interpretation")),
))

# The source label a rule without LABEL gives a step that is not a tool call (a tool call's
# is the tool's name).
_DEFAULT_LABELS = {FINAL_ANSWER: "final answer", ASSISTANT_TEXT: "assistant message", REASONING: "reasoning"}
# Why a user or system message is never evidence: the task, not the work.
_NEVER_OFFERED = {USER: "a user message offers no evidence", SYSTEM: "a system message offers no evidence"}
# A default detail quotes at most this many characters of a step's text or arguments.
DETAIL_CHARS = 200
_KEYWORD_OF_STEP = {step: keyword for keyword, step in ir.MAP_STEPS.items()}
_MISSING = object()


class Decision:
    """What the mapping made of one step: an evidence item, or None and why not."""

    __slots__ = ("step", "item", "why")

    def __init__(self, step: Step, item: dict | None, why: dict):
        self.step = step
        self.item = item
        self.why = why

    def not_offered(self) -> dict:
        """The report's entry for a step that is not evidence."""
        entry = {"step": self.step.ref.to_dict(), "type": self.step.type}
        if self.step.tool_name is not None:
            entry["tool"] = self.step.tool_name
        return {**entry, **self.why}


# ---------------------------------------------------------------- compiling rules

Test = Callable[[Step], bool]
Make = Callable[[Step], "dict | None"]


def rule_text(rule: ir.MapRule) -> str:
    """The rule as the source would write it (one line), for explanations."""
    parts = ["WHEN", _KEYWORD_OF_STEP[rule.step]]
    if rule.tool is not None:
        parts.append(json.dumps(rule.tool.value, ensure_ascii=False))
    if rule.outcomes:
        parts.append("OUTCOME " + ", ".join(r.value for r in rule.outcomes))
    parts += [f"WHERE {c.path} {'MATCHES' if c.matches else '=='} {json.dumps(c.value, ensure_ascii=False)}"
              for c in rule.where]
    if rule.kind is None:
        return " ".join(parts + ["SKIP"])
    parts.append(f"AS {rule.kind.value}")
    for keyword, value in (("LABEL", rule.label), ("DETAIL", rule.detail)):
        if value is not None:
            parts.append(f"{keyword} {value.text if value.is_path else json.dumps(value.text, ensure_ascii=False)}")
    if rule.property is not None:
        parts.append(f"FOR {rule.property.value}")
    return " ".join(parts)


def name_pattern(pattern: str) -> re.Pattern:
    """The regular expression of a TOOL pattern: ``*`` matches any run of characters."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def _tool_test(pattern: str | None) -> Test | None:
    if pattern is None or pattern == "*":
        return None
    if "*" not in pattern:
        return lambda step: step.tool_name == pattern
    regex = name_pattern(pattern)
    return lambda step: step.tool_name is not None and regex.fullmatch(step.tool_name) is not None


def _getter(path: str) -> Callable[[Step], Any]:
    """The value at a dotted path into a step's args or result, or _MISSING."""
    root, *keys = path.split(".")
    attribute = "args" if root == "args" else "result"

    def get(step: Step) -> Any:
        value = getattr(step, attribute)
        if attribute == "args" and not step.args_parsed:
            return _MISSING  # arguments kept as text have no fields
        for key in keys:
            if isinstance(value, dict):
                value = value.get(key, _MISSING)
            elif isinstance(value, list) and key.isascii() and key.isdigit() and int(key) < len(value):
                value = value[int(key)]
            else:
                return _MISSING
            if value is _MISSING:
                return _MISSING
        return value
    return get


def _same(found: Any, wanted: Any) -> bool:
    """JSON equality: true is not 1, and 1 equals 1.0."""
    if isinstance(found, bool) or isinstance(wanted, bool) or found is None or wanted is None:
        return found is wanted
    if isinstance(found, (int, float)) and isinstance(wanted, (int, float)):
        return found == wanted
    return type(found) is type(wanted) and found == wanted


def text_matches(pattern: str, text: str) -> bool:
    """Whether ``text`` is ``pattern`` with each ``*`` standing for any run of characters.

    Each fixed piece is found left to right with ``str.find``, so a long result is matched
    in linear time (a regular expression of ``.*`` pieces backtracks: quadratic or worse
    in the text's length when it fails to match)."""
    first, *middle = pattern.split("*")
    if not middle:
        return text == pattern
    last = middle.pop()
    if not text.startswith(first) or not text.endswith(last):
        return False
    position, end = len(first), len(text) - len(last)
    for piece in middle:
        found = text.find(piece, position, end)
        if found < 0:
            return False
        position = found + len(piece)
    return position <= end


def _condition_test(condition: ir.Condition) -> Test:
    get, wanted = _getter(condition.path), condition.value
    if condition.matches:
        def matching(step: Step) -> bool:
            found = get(step)
            return type(found) is str and text_matches(wanted, found)
        return matching
    return lambda step: _same(get(step), wanted)


def _always(step: Step) -> bool:
    return True


def _rule_test(rule: ir.MapRule) -> Test:
    """What a rule asks of a step beyond its type and tool name (those pick the rules to try)."""
    tests = []
    if rule.outcomes:
        outcomes = frozenset().union(*(ir.MAP_OUTCOME_SETS[r.value] for r in rule.outcomes))
        tests.append(lambda step: step.outcome in outcomes)
    tests += [_condition_test(c) for c in rule.where]
    if len(tests) <= 1:
        return tests[0] if tests else _always

    def every(step: Step) -> bool:
        for test in tests:
            if not test(step):
                return False
        return True
    return every


def _shorten(text: str) -> str:
    return clipped(text, DETAIL_CHARS - 1, more="…")


def _arguments(step: Step) -> str:
    # As the source wrote them where it wrote text (what the agent sent, and no cost), else
    # written as compact JSON.
    if step.args_text is not None:
        return step.args_text
    if not step.args_parsed:
        return str(step.args)
    return "" if step.args is None else dumps_line(step.args).decode("utf-8")


def default_detail(step: Step) -> str:
    """What a rule without DETAIL says of a step: a tool call and how it ended, or the text."""
    if step.type != TOOL_CALL:
        return _shorten(step.text or "")
    call = f"{step.tool_name}({_shorten(_arguments(step))})"
    if step.outcome == OK:
        return call
    return f"{call} failed: {step.error or step.outcome}"


def _default_label(step: Step) -> str:
    return (step.tool_name or "") if step.type == TOOL_CALL else _DEFAULT_LABELS.get(step.type, step.type)


def _text_maker(value: ir.Value | None, default: Callable[[Step], str]) -> Callable[[Step], Any]:
    """A step's label or detail: the literal, the value at the path (or _MISSING), or the default."""
    if value is None:
        return default
    if not value.is_path:
        text = value.text
        return lambda step: text
    get = _getter(value.text)

    def from_path(step: Step) -> Any:
        found = get(step)
        if isinstance(found, str):
            return found
        if isinstance(found, (int, float)) and not isinstance(found, bool):
            return json.dumps(found)
        return _MISSING  # absent, or not a string or number: the rule does not match
    return from_path


def _rule_maker(rule: ir.MapRule) -> Make:
    """The evidence item a rule makes of a step, or None when a path it reads is missing."""
    kind = rule.kind.value
    label_of, detail_of = _text_maker(rule.label, _default_label), _text_maker(rule.detail, default_detail)
    offered_to = rule.property.value if rule.property is not None else None

    def make(step: Step) -> dict | None:
        label = label_of(step)
        detail = detail_of(step)
        if label is _MISSING or detail is _MISSING:
            return None
        item = {"kind": kind, "detail": detail, "source_label": label}
        if offered_to is not None:
            item["property"] = offered_to
        item["step"] = step.ref.to_dict()
        return item
    return make


def _why(rule: ir.MapRule, index: int, default: bool) -> dict:
    if default:
        return {"rule": rule_text(rule), "default": True}
    return {"rule": rule_text(rule), "line": rule.span.line, "column": rule.span.column, "index": index}


# Tool names whose rules are remembered per mapping; a run with more distinct names than
# this (hostile input) still works, only without the memo.
_REMEMBERED_TOOLS = 4096
_Compiled = tuple  # (test, make or None for SKIP, why)


class CompiledMapping:
    """A MAP block (or the defaults) ready to decide steps."""

    def __init__(self, mapping: ir.Mapping | None):
        self.default = mapping is None
        rules = (DEFAULT_MAPPING if mapping is None else mapping).rules
        self.by_type: dict[str, list[_Compiled]] = {}
        # Tool-call rules with their name test; the rules a tool name can meet are worked
        # out once per name (tool_rules), so deciding a call never tests names again.
        self.tool_named: list[tuple[Test | None, _Compiled]] = []
        for index, rule in enumerate(rules, start=1):
            make = _rule_maker(rule) if rule.kind is not None else None
            compiled = (_rule_test(rule), make, _why(rule, index, self.default))
            if rule.step == TOOL_CALL:
                self.tool_named.append((_tool_test(rule.tool.value if rule.tool else None), compiled))
            else:
                self.by_type.setdefault(rule.step, []).append(compiled)
        self.by_tool: dict[str | None, list[_Compiled]] = {}
        # Whether any rule offers its items to one property (FOR), so checking must scope them.
        self.scoped = any(rule.property is not None for rule in rules)
        self.unmatched = {"reason": "no rule of the default taxonomy matches" if self.default
                          else "no MAP rule matches"}

    def tool_rules(self, step: Step) -> list[_Compiled]:
        """The tool-call rules whose name pattern ``step``'s tool name matches, in order."""
        found = self.by_tool.get(step.tool_name)
        if found is None:
            found = [compiled for named, compiled in self.tool_named if named is None or named(step)]
            if len(self.by_tool) < _REMEMBERED_TOOLS:
                self.by_tool[step.tool_name] = found
        return found

    def decide(self, step: Step) -> Decision:
        return Decision(step, *self._item_and_why(step))

    def _item_and_why(self, step: Step) -> tuple[dict | None, dict]:
        # A tuple, not a Decision: a trace's every step passes here, and split needs no more.
        kind = step.type
        if kind == TOOL_CALL:
            rules = self.by_tool.get(step.tool_name)
            if rules is None:
                rules = self.tool_rules(step)
        else:
            never = _NEVER_OFFERED.get(kind)
            if never is not None:
                return None, {"reason": never}
            rules = self.by_type.get(kind, ())
        for test, make, why in rules:
            if not test(step):
                continue
            if make is None:
                return None, {"reason": "SKIP", **why}
            item = make(step)
            if item is not None:
                return item, why
        return None, self.unmatched

    def split(self, trace: Trace, explain: bool = False) -> tuple[list[dict], list[dict]]:
        """The trace's evidence items (with ``explain``, each with ``why``: the rule that made
        it) and the not-offered entries: steps no rule made evidence, then skipped elements."""
        evidence, not_offered = [], []
        decide = self._item_and_why
        for step in trace.steps:
            item, why = decide(step)
            if item is None:
                not_offered.append(Decision(step, None, why).not_offered())
            elif explain:
                evidence.append({**item, "why": dict(why)})
            else:
                evidence.append(item)
        return evidence, not_offered + skipped(trace)

    def bundle(self, trace: Trace) -> tuple[dict, list[dict]]:
        """The bundle the trace makes (evidence, and output and model for CHAINs) and the
        steps not offered."""
        evidence, not_offered = self.split(trace)
        return bundle_of(trace, evidence), not_offered


def skipped(trace: Trace) -> list[dict]:
    """The not-offered entries of the source elements the reader made no step of."""
    return [{"step": element.ref.to_dict(), "type": "skipped", "reason": element.reason} for element in trace.skipped]


def bundle_of(trace: Trace, evidence: list[dict]) -> dict:
    """A bundle around ``evidence``: the run's prompt, final answer as output, and model."""
    bundle: dict[str, Any] = {}
    for key, value in (("prompt", trace.prompt), ("output", trace.final_answer), ("model", trace.model)):
        if value is not None:
            bundle[key] = value
    bundle["evidence"] = evidence
    return bundle


def explained_bundle(mapping: CompiledMapping, trace: Trace) -> dict:
    """What ``admiss import`` prints: the bundle, each evidence item with the rule that made
    it, and the steps not offered with the reason."""
    evidence, not_offered = mapping.split(trace, explain=True)
    bundle = bundle_of(trace, evidence)
    bundle["trace"] = {"format": trace.format, "steps": len(trace.steps), "not_offered": not_offered}
    if not trace.steps:
        bundle["trace"]["warnings"] = trace.warnings()
    return bundle
