"""Semantic checks on the IR. Every problem is reported, not just the first."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Iterable, Iterator

from admiss import ir, limits
from admiss.errors import DOCS_URL, Diagnostic, did_you_mean
from admiss.source import Span

# A tool name as OpenAI's tools[].function.name allows it.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Options each gate kind takes beyond the ones every gate takes, and which are required.
_COMMON_OPTIONS = {"on_abstain", "budget_rate", "budget_window"}
_GATE_OPTIONS: dict[str, tuple[set[str], set[str]]] = {
    "non_empty": (set(), set()),
    "json_valid": (set(), set()),
    "schema": ({"file", "tools"}, {"file"}),
    "admissibility": ({"properties"}, set()),
    "subprocess": ({"cmd", "timeout_s"}, {"cmd"}),
    "judge": ({"model", "rubric", "threshold"}, {"model", "rubric"}),
    "consistency": ({"k", "threshold", "meaning_model"}, {"k"}),
    "tool_calls": ({"tools"}, set()),
}


def gate_options(kind: str) -> tuple[frozenset[str], frozenset[str]]:
    """The options (IR field names) a known gate kind takes, every gate's own included, and
    those it requires."""
    takes, required = _GATE_OPTIONS[kind]
    return frozenset(takes | _COMMON_OPTIONS), frozenset(required)


# The options that belong to particular gate kinds (ON ABSTAIN and BUDGET fit every kind).
_KIND_OPTIONS = ("file", "cmd", "timeout_s", "model", "threshold", "rubric", "k", "properties", "meaning_model", "tools")


class _Analysis:
    def __init__(self, rubric: ir.Rubric, file: str | None):
        self.rubric = rubric
        self.file = file
        self.diagnostics: list[Diagnostic] = []

    def error(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, message, span, hint=hint, file=self.file))

    def run(self) -> list[Diagnostic]:
        self.check_kinds_declared()
        self.check_unique("E102", "property", self.rubric.properties)
        self.check_unique("E103", "chain", self.rubric.chains)
        for prop in self.rubric.properties:
            self.check_property(prop)
        for chain in self.rubric.chains:
            self.check_chain(chain)
        if self.rubric.mapping is not None:
            for rule in self.rubric.mapping.rules:
                self.check_map_rule(rule)
        return self.diagnostics

    def check_kinds_declared(self) -> None:
        seen = set(ir.BUILTIN_KINDS)
        for ref in self.rubric.kinds:
            if ref.value in seen:
                builtin = ref.value in ir.BUILTIN_KINDS
                self.error("E112", f"KINDS redeclares {'built-in ' if builtin else ''}kind '{ref.value}'",
                           ref.span, hint="declare each extra kind once; the seven built-in kinds need no declaration")
            seen.add(ref.value)

    def check_unique(self, code: str, what: str, nodes: Iterable, where: str = "") -> None:
        first: dict[str, object] = {}
        for node in nodes:
            if node.name in first:
                line = first[node.name].span.line
                self.error(code, f"duplicate {what} '{node.name}'{where}", node.span,
                           hint=f"'{node.name}' is first defined on line {line}; rename one")
            else:
                first[node.name] = node

    def check_property(self, prop: ir.Property) -> None:
        known = self.rubric.known_kinds
        for ref in prop.admit + prop.forbid:
            if ref.value not in known:
                hint = did_you_mean(ref.value, known) or "declare it with KINDS, or use a built-in kind"
                self.error("E101", f"unknown evidence kind '{ref.value}' in property '{prop.name}'", ref.span, hint)
        if prop.default.value not in ir.VERDICTS:
            self.error("E106", f"DEFAULT must be yes or no, not '{prop.default.value}'", prop.default.span,
                       hint="write DEFAULT no: missing proof fails")

    def check_chain(self, chain: ir.Chain) -> None:
        self.check_unique("E104", "rung", chain.rungs, f" in chain '{chain.name}'")
        if not any(rung.gates for rung in chain.rungs):
            self.error("E117", f"CHAIN {chain.name} has no gates", chain.span,
                       hint="add GATE lines, directly or inside RUNG blocks")
        for rung in chain.rungs:
            for gate in rung.gates:
                self.check_gate(gate)

    def check_gate(self, gate: ir.Gate) -> None:
        if gate.kind not in _GATE_OPTIONS:
            hint = did_you_mean(gate.kind, _GATE_OPTIONS) or "gate kinds: " + ", ".join(ir.GATE_KINDS)
            self.error("E108", f"unknown gate kind '{gate.kind}'", gate.span_of("kind"), hint)
            return
        allowed, required = _GATE_OPTIONS[gate.kind]
        for option in _given_options(gate):
            if option not in allowed | _COMMON_OPTIONS:
                self.error("E109", f"{ir.OPTION_KEYWORDS[option]} does not apply to a {gate.kind} gate",
                           gate.span_of(option), hint=_takes(gate.kind, allowed))
        for option in sorted(required - set(_given_options(gate))):
            self.error("E110", f"{gate.kind} gate needs {ir.OPTION_KEYWORDS[option]}", gate.span,
                       hint=_takes(gate.kind, allowed))
        if gate.on_abstain not in ir.ABSTAIN_POLICIES:
            self.error("E111", f"unknown ON ABSTAIN policy '{gate.on_abstain}'", gate.value_span_of("on_abstain"),
                       hint=did_you_mean(gate.on_abstain, ir.ABSTAIN_POLICIES) or "use fail_open or fail_closed")
        self.check_numbers(gate)
        self.check_references(gate)
        self.check_tools(gate)

    def check_tools(self, gate: ir.Gate) -> None:
        tools = gate.tools or ()
        if gate.kind == "schema" and len(tools) > 1:
            self.error("E139", "a schema gate checks the arguments of one tool", gate.span_of("tools"),
                       hint="write one schema gate per tool, each with its own FILE")
        for name in tools:
            if not _TOOL_NAME.fullmatch(name):
                self.error("E141", f"{name!r} is not a tool name (1 to 64 letters, digits, _ or -)", gate.span_of("tools"),
                           hint="name the tool exactly as the request's tools[].function.name does")

    def check_numbers(self, gate: ir.Gate) -> None:
        for code, problem, option in _number_problems(gate):
            self.error(code, problem, gate.value_span_of(option), _BOUND_HINT if code == "E118" else None)

    def check_references(self, gate: ir.Gate) -> None:
        names = [p.name for p in self.rubric.properties]
        for ref in gate.properties:
            if ref.value not in names:
                hint = did_you_mean(ref.value, names) or "define it with PROPERTY"
                self.error("E105", f"undefined property '{ref.value}'", ref.span, hint)


    # ------------------------------------------------------------ MAP rules

    def check_map_rule(self, rule: ir.MapRule) -> None:
        known = self.rubric.known_kinds
        if rule.kind is not None and rule.kind.value not in known:
            hint = did_you_mean(rule.kind.value, known) or "declare it with KINDS, or use a built-in kind"
            self.error("E133", f"unknown evidence kind '{rule.kind.value}' in a MAP rule", rule.kind.span, hint)
        for ref in rule.outcomes:
            if ref.value not in ir.MAP_OUTCOMES:
                hint = did_you_mean(ref.value, ir.MAP_OUTCOMES) or "outcomes: " + ", ".join(ir.MAP_OUTCOMES)
                self.error("E134", f"unknown tool-call outcome '{ref.value}'", ref.span, hint)
        if rule.property is not None:
            names = [p.name for p in self.rubric.properties]
            if rule.property.value not in names:
                hint = did_you_mean(rule.property.value, names) or "define it with PROPERTY"
                self.error("E137", f"undefined property '{rule.property.value}'", rule.property.span, hint)
        if rule.tool is not None and not rule.tool.value:
            self.error("E138", "TOOL names no tool", rule.tool.span,
                       hint='write the tool\'s name, a pattern with * ("cancel_*"), or leave TOOL bare for every tool')
        self.check_map_paths(rule)

    def check_map_paths(self, rule: ir.MapRule) -> None:
        reads = [(c.path, c.span, "WHERE") for c in rule.where] + [
            (v.text, v.span, word) for v, word in ((rule.label, "LABEL"), (rule.detail, "DETAIL"))
            if v is not None and v.is_path]
        if rule.step != "tool_call":
            keyword = next(k for k, step in ir.MAP_STEPS.items() if step == rule.step)
            for what, span in [(word, span) for _, span, word in reads] + [("OUTCOME", r.span) for r in rule.outcomes]:
                self.error("E135", f"{what} reads a tool call, and a {keyword} step is not one", span,
                           hint="only WHEN TOOL rules take OUTCOME and paths into args or result")
            return
        for path, span, _ in reads:
            root = path.split(".", 1)[0]
            if root not in ir.MAP_PATH_ROOTS:
                hint = did_you_mean(root, ir.MAP_PATH_ROOTS) or (
                    f"a path starts with args or result (result.{path}, args.{path})")
                self.error("E136", f"path '{path}' starts at '{root}', which a tool call does not have", span, hint)


def _given_options(gate: ir.Gate) -> Iterator[str]:
    for option in _KIND_OPTIONS:
        # Only the property list defaults to empty; every other option defaults to None.
        if getattr(gate, option) not in (None, ()) or (option == "cmd" and gate.cmd is not None):
            yield option


def _takes(kind: str, allowed: set[str]) -> str:
    if not allowed:
        return f"a {kind} gate takes only ON ABSTAIN and BUDGET"
    return f"a {kind} gate takes " + ", ".join(sorted(ir.OPTION_KEYWORDS[o] for o in allowed))


_BOUND_HINT = f"the bounds are in {DOCS_URL}language.md#gate"


def _number_problems(gate: ir.Gate) -> Iterator[tuple[str, str, str]]:
    """(code, problem, option) for each number of the gate out of its range."""
    if gate.threshold is not None and not 0.0 <= gate.threshold <= 1.0:
        yield "E107", f"THRESHOLD must lie in [0, 1], not {_shown(gate.threshold)}", "threshold"
    yield from _count_problems("K", gate.k, limits.MAX_K, "k")
    if gate.timeout_s is not None and gate.timeout_s <= 0:
        yield "E116", "TIMEOUT must be longer than zero", "timeout_s"
    elif gate.timeout_s is not None and gate.timeout_s > limits.MAX_TIMEOUT_S:
        yield "E118", f"TIMEOUT must be at most {limits.MAX_TIMEOUT_S:g}s (one day)", "timeout_s"
    if gate.cmd == ():
        yield "E116", "CMD needs at least the program to run", "cmd"
    if gate.budget_rate is not None and not 0.0 <= gate.budget_rate <= 1.0:
        yield "E116", f"BUDGET rate must lie in [0, 1], not {_shown(gate.budget_rate)}", "budget_rate"
    yield from _count_problems("WINDOW", gate.budget_window, limits.MAX_WINDOW, "budget_window")


def _count_problems(keyword: str, value: float | None, bound: int, option: str) -> Iterator[tuple[str, str, str]]:
    if value is None:
        return
    if value > bound:  # first: a huge value may not even print as a float
        yield "E118", f"{keyword} must be at most {bound:,}", option
    elif not _is_count(value):
        yield "E116", f"{keyword} must be a whole number of at least 1, not {_shown(value)}", option


def _shown(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e300 else "a number that large"


def _is_count(value: float) -> bool:
    return float(value).is_integer() and value >= 1


def analyze(rubric: ir.Rubric, file: str | None = None) -> list[Diagnostic]:
    """Every semantic problem in ``rubric``, in source order."""
    found = _Analysis(rubric, file).run()
    return sorted(found, key=lambda d: (d.span.line, d.span.column))


def missing_gate_files(rubric: ir.Rubric, folder: Path, file: str | None = None) -> list[Diagnostic]:
    """E119 for each schema FILE and E120 for each subprocess program that is not where the
    gate will look when it runs: files relative to ``folder`` (the rubric's), a program with
    a slash relative to it too (the gate runs there), a bare program name on PATH.

    Only a rubric read from disk has a folder; analyze() alone cannot see files.
    """
    found: list[Diagnostic] = []
    for chain in rubric.chains:
        for rung in chain.rungs:
            for gate in rung.gates:
                problem = _missing_file(gate, folder)
                if problem is not None:
                    code, message, option, hint = problem
                    found.append(Diagnostic(code, message, gate.value_span_of(option), hint=hint, file=file))
    return sorted(found, key=lambda d: (d.span.line, d.span.column))


def _missing_file(gate: ir.Gate, folder: Path) -> tuple[str, str, str, str] | None:
    if gate.kind == "schema" and gate.file:
        path = folder / gate.file
        if not path.is_file():
            return "E119", f"schema FILE '{gate.file}' not found", "file", f"looked for {path}"
    if gate.kind == "subprocess" and gate.cmd:
        program = gate.cmd[0]
        if "/" not in program:
            if shutil.which(program) is None:
                return "E120", f"program '{program}' is not on PATH", "cmd", \
                    "a bare name is looked up on PATH; write ./name for a program beside the rubric"
        elif not _runnable(folder / program):
            return "E120", f"program '{program}' is not an executable file", "cmd", \
                f"looked for {folder / program}; a relative path is taken from the rubric's folder"
    return None


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)
