"""Parse tree to IR: the one place that knows the grammar's rule names.

Lowering checks what only the tree shows (an option given twice, a CHAIN mixing rungs with
bare gates, a second RUBRIC header, numbers of the wrong shape) and collects every problem
instead of stopping at the first; meaning (kinds, references, ranges) is analyze.py's job.
"""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Callable, TypeVar

from admiss import ir
from admiss.errors import Diagnostic
from admiss.limits import MAX_WHOLE_NUMBER_DIGITS
from admiss.parser import Token, Tree
from admiss.source import Span

_Node = TypeVar("_Node")


def _span(node: Tree | Token) -> Span:
    meta = node if isinstance(node, Token) else node.meta
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


# What lowering made of each PROPERTY and CHAIN item, by the item's tree (see ``lower``).
Memo = dict


class _Lowering:
    def __init__(self, file: str, memo: Memo | None = None):
        self.file = file
        self.diagnostics: list[Diagnostic] = []
        self.memo = memo
        self.seen: set[int] = set()

    def error(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code, message, span, hint=hint, file=self.file))

    # ------------------------------------------------------------ leaves

    def string(self, token: Token) -> str:
        value = json.loads(token)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            self.error("E100", "syntax error: string holds an unpaired surrogate escape", _span(token),
                       hint="write a \\uXXXX escape pair or the character itself")
        return value

    def ref(self, token: Token) -> ir.Ref:
        return ir.Ref(str(token), _span(token))

    def string_ref(self, token: Token) -> ir.Ref:
        return ir.Ref(self.string(token), _span(token))

    def names(self, tree: Tree) -> tuple[ir.Ref, ...]:
        return tuple(self.ref(t) for t in tree.children)

    def strings(self, tree: Tree) -> tuple[ir.Ref, ...]:
        return tuple(self.string_ref(t) for t in tree.children)

    # ------------------------------------------------------------ rubric

    def rubric(self, tree: Tree, default_name: str) -> ir.Rubric:
        headers = [c for c in tree.children if c.data == "header"]
        for extra in headers[1:]:
            self.error("E113", "more than one RUBRIC header", _span(extra),
                       hint="a file is one rubric; keep a single RUBRIC line")
        name, title = default_name, None
        if headers:
            name = str(headers[0].children[0])
            title = self.string(headers[0].children[1]) if len(headers[0].children) > 1 else None
        return ir.Rubric(
            name=name,
            title=title,
            kinds=tuple(r for c in tree.children if c.data == "kinds" for r in self.names(c.children[0])),
            properties=tuple(self.item(c, self.property) for c in tree.children if c.data == "property"),
            chains=tuple(self.item(c, self.chain) for c in tree.children if c.data == "chain"),
            mapping=self.single_mapping([c for c in tree.children if c.data == "mapping"]),
            source=self.file and PurePath(self.file).name,
            span=_span(tree) if tree.children else Span(1, 1, 1, 1),
        )

    def item(self, tree: Tree, lowered: Callable[[Tree], _Node]) -> _Node:
        """``lowered(tree)``, or what it gave for this very tree before when it still starts on
        the same line (an item parsed again is a new tree; a kept one moves by whole lines)."""
        if self.memo is None:
            return lowered(tree)
        self.seen.add(id(tree))
        kept = self.memo.get(id(tree))
        if kept is not None and kept[0] is tree and kept[1] == tree.meta.line:
            self.diagnostics.extend(kept[3])
            return kept[2]
        start = len(self.diagnostics)
        node = lowered(tree)
        self.memo[id(tree)] = (tree, tree.meta.line, node, tuple(self.diagnostics[start:]))
        return node

    def property(self, tree: Tree) -> ir.Property:
        keyword, name, *rest = tree.children
        title = self.string(rest.pop(0)) if rest and isinstance(rest[0], Token) else None
        by_rule: dict[str, list[Tree]] = {"admit": [], "forbid": [], "reject": [], "default": []}
        for stmt in rest:
            by_rule[stmt.data].append(stmt)
        defaults = [self.ref(s.children[0]) for s in by_rule["default"]]
        return ir.Property(
            name=str(name),
            title=title,
            admit=tuple(r for s in by_rule["admit"] for r in self.names(s.children[1])),
            forbid=tuple(r for s in by_rule["forbid"] for r in self.names(s.children[0])),
            shortcuts=tuple(r for s in by_rule["reject"] for r in self.strings(s.children[0])),
            default=self.single_default(defaults),
            span=_span(tree),
            # An inadmissible item is excluded by what the ADMIT clauses leave out, so its
            # report points at the first ADMIT (or at PROPERTY when there is none).
            admit_span=_span(by_rule["admit"][0].children[0]) if by_rule["admit"] else _span(keyword),
        )

    def single_default(self, defaults: list[ir.Ref]) -> ir.Ref:
        for extra in defaults[1:]:
            self.error("E115", "DEFAULT given more than once", extra.span, hint="keep one DEFAULT line")
        return defaults[0] if defaults else ir.Ref("no")

    # ------------------------------------------------------------ MAP

    def single_mapping(self, blocks: list[Tree]) -> ir.Mapping | None:
        for extra in blocks[1:]:
            self.error("E130", "more than one MAP block", _span(extra),
                       hint=f"a rubric has one MAP block (the first is on line {_span(blocks[0]).line}); "
                            "move these rules into it, in the order they should be tried")
        if not blocks:
            return None
        return ir.Mapping(tuple(self.map_rule(r) for r in blocks[0].children[1:]), _span(blocks[0]))

    def map_rule(self, tree: Tree) -> ir.MapRule:
        selector, *rest = tree.children
        fields: dict[str, object] = {"step": _MAP_SELECTORS[selector.data], "span": _span(tree)}
        if selector.children:
            fields["tool"] = self.string_ref(selector.children[0])
        outcomes, where = [], []
        for part in rest:
            if part.data == "map_outcome":
                outcomes.extend(self.names(part.children[0]))
            elif part.data == "map_where":
                where.append(ir.Condition(str(part.children[0]), self.where_value(part.children[1]), _span(part)))
            elif part.data == "map_match":
                where.append(ir.Condition(str(part.children[0]), self.string(part.children[1]), _span(part),
                                          matches=True))
            elif part.data == "map_as":
                fields.update(self.map_action(part))
        return ir.MapRule(outcomes=tuple(outcomes), where=tuple(where), **fields)

    def where_value(self, token: Token) -> object:
        if token.type == "STRING":
            return self.string(token)
        if token.type == "NUMBER":
            return json.loads(token)
        if str(token) not in _JSON_WORDS:
            self.error("E131", f"WHERE compares with '{token}', which is not a value", _span(token),
                       hint='write a string ("cancelled"), a number, true, false or null')
        return _JSON_WORDS.get(str(token))

    def map_action(self, tree: Tree) -> dict[str, object]:
        """The fields AS kind and its LABEL, DETAIL and FOR options set."""
        kind, *options = tree.children
        fields: dict[str, object] = {"kind": self.ref(kind)}
        for option in options:
            field = _MAP_OPTIONS[option.data]
            if field in fields:
                self.error("E132", f"{field.upper() if field != 'property' else 'FOR'} given twice in one WHEN rule",
                           _span(option), hint="keep one")
                continue
            value = option.children[0]
            if field == "property":
                fields[field] = self.ref(value)
            elif value.type == "PATH":
                fields[field] = ir.Value(str(value), True, _span(value))
            else:
                fields[field] = ir.Value(self.string(value), False, _span(value))
        return fields

    # ------------------------------------------------------------ chains

    def chain(self, tree: Tree) -> ir.Chain:
        name, *members = tree.children
        rungs = [m for m in members if m.data == "rung"]
        gates = [m for m in members if m.data == "gate"]
        if rungs and gates:
            self.error("E114", f"CHAIN {name} mixes RUNG blocks with GATE lines", _span(gates[0]),
                       hint="put these gates inside a RUNG, or drop the RUNGs to make the chain one rung")
        if gates and not rungs:
            lowered = (ir.Rung(str(name), None, tuple(self.gate(g) for g in gates), implicit=True, span=_span(tree)),)
        else:
            lowered = tuple(self.rung(r) for r in rungs)
        return ir.Chain(str(name), lowered, _span(tree))

    def rung(self, tree: Tree) -> ir.Rung:
        name, *rest = tree.children
        model = None
        if rest and rest[0].data == "rung_model":
            model = self.string(rest.pop(0).children[0])
        return ir.Rung(str(name), model, tuple(self.gate(g) for g in rest), span=_span(tree))

    def gate(self, tree: Tree) -> ir.Gate:
        kind, *options = tree.children
        values: dict[str, object] = {}
        spans: dict[str, Span] = {"kind": _span(kind)}
        value_spans: dict[str, Span] = {}
        for option in options:
            pairs = self.option(option)
            if pairs[0][0] in values:
                self.error("E115", f"{ir.OPTION_KEYWORDS[pairs[0][0]]} given twice on one GATE", _span(option),
                           hint="keep one")
                continue
            for key, value in pairs:
                values[key], spans[key] = value, _span(option)
            # A single-token value (a number, a name, a string) sits at the option's end,
            # one token per IR field the option sets.
            tokens = [t for t in option.children if isinstance(t, Token)]
            if len(tokens) == len(pairs):
                value_spans.update((key, _span(t)) for (key, _), t in zip(pairs, tokens))
        return ir.Gate(kind=str(kind), span=_span(tree), option_spans=tuple(spans.items()),
                       value_spans=tuple(value_spans.items()), **values)

    def option(self, tree: Tree) -> list[tuple[str, object]]:
        """The IR fields one option sets (BUDGET sets two)."""
        rule, args = tree.data, tree.children
        if rule == "gate_properties":
            return [("properties", self.names(args[0]))]
        if rule == "on_abstain":
            return [("on_abstain", str(args[0]))]
        if rule == "cmd":
            return [("cmd", tuple(r.value for r in self.strings(args[0])) if args else ())]
        if rule == "gate_tools":
            return [("tools", tuple(r.value for r in self.strings(args[0])))]
        if rule == "timeout":
            return [("timeout_s", self.seconds(args[0]))]
        if rule == "k":
            return [("k", _number(args[0]))]
        if rule == "budget":
            return [("budget_rate", float(args[0])), ("budget_window", _number(args[1]))]
        if rule in _STRING_OPTIONS:
            return [(_STRING_OPTIONS[rule], self.string(args[0]))]
        return [("threshold", float(args[0]))]

    def seconds(self, token: Token) -> float:
        text = str(token)
        for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
            if text.endswith(suffix):
                return float(text[: -len(suffix)]) * scale
        raise AssertionError(f"the grammar admits no duration {text!r}")


def _number(token: Token) -> int | float:
    # Counts stay as written here; analysis says when one is not a whole number or is out
    # of bounds. A long run of digits becomes a float, which no length can make fail.
    if "." in token or len(token) > MAX_WHOLE_NUMBER_DIGITS:
        return float(token)
    return int(token)


_STRING_OPTIONS = {"file": "file", "model": "model", "judge_rubric": "rubric", "meaning": "meaning_model"}
# The grammar names each selector rule step_ and its keyword: step_final is FINAL.
_MAP_SELECTORS = {f"step_{keyword.lower()}": step for keyword, step in ir.MAP_STEPS.items()}
_MAP_OPTIONS = {"map_label": "label", "map_detail": "detail", "map_for": "property"}
_JSON_WORDS = {"true": True, "false": False, "null": None}


def lower(tree: Tree, file: str, default_name: str, memo: Memo | None = None) -> tuple[ir.Rubric, list[Diagnostic]]:
    """The IR for a parse tree, and the structural problems found on the way.

    ``memo`` (a dict kept by the caller between parses of one text, as the language server
    does) lets the PROPERTY and CHAIN items that are the same trees as last time be reused
    instead of lowered again; it is left holding the items of this tree only.
    """
    lowering = _Lowering(file, memo)
    rubric = lowering.rubric(tree, default_name)
    if memo is not None:
        for gone in set(memo) - lowering.seen:
            del memo[gone]
    return rubric, lowering.diagnostics
