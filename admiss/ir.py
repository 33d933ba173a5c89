"""The intermediate representation: frozen attrs nodes, JSON out and back.

Every node keeps a span, and every span is left out of equality (as Cedar does), so the
same rubric written in a different layout compiles to an equal IR.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from admiss.source import NO_SPAN, Span

# Version 2 added a gate's meaning_model and the rubric's mapping (a MAP block).
IR_VERSION = 2
IR_VERSIONS = (IR_VERSION,)

# The seed's seven evidence kinds, in the seed's order.
BUILTIN_KINDS = (
    "procedurally_sound_tool_call",
    "verified_external_source",
    "final_answer",
    "reasoning_trace",
    "summary",
    "interpretation",
    "flawed_tool_call",
)
# Kinds the seed says never count as trusted evidence.
UNTRUSTED_KINDS = BUILTIN_KINDS[2:]

GATE_KINDS = ("non_empty", "json_valid", "schema", "admissibility", "subprocess", "judge", "consistency", "tool_calls")
ABSTAIN_POLICIES = ("fail_open", "fail_closed")
VERDICTS = ("yes", "no")

# MAP rules: the step each selector keyword picks (the step types of admiss.traces.steps),
# the names OUTCOME takes with the tool-call outcomes each stands for, and the roots a
# WHERE, LABEL or DETAIL path may start from.
MAP_STEPS = {"FINAL": "final_answer", "TEXT": "assistant_text", "REASONING": "reasoning", "TOOL": "tool_call"}
MAP_OUTCOME_SETS = {"ok": frozenset({"ok"}), "failed": frozenset({"error", "no_result", "bad_args"}),
                    "error": frozenset({"error"}), "no_result": frozenset({"no_result"}),
                    "bad_args": frozenset({"bad_args"})}
MAP_OUTCOMES = tuple(MAP_OUTCOME_SETS)
MAP_PATH_ROOTS = ("args", "result")

# How each Gate option field is written in the source, for messages.
OPTION_KEYWORDS = {
    "properties": "a property list",
    "on_abstain": "ON ABSTAIN",
    "file": "FILE",
    "cmd": "CMD",
    "timeout_s": "TIMEOUT",
    "model": "MODEL",
    "threshold": "THRESHOLD",
    "rubric": "RUBRIC",
    "k": "K",
    "budget_rate": "BUDGET",
    "meaning_model": "MEANING MODEL",
    "tools": "TOOL",
}

_span_field = attrs.field(default=NO_SPAN, eq=False, repr=False)


@attrs.frozen
class Ref:
    """A name or string written in the source, with where it was written."""

    value: str
    span: Span = _span_field


@attrs.frozen
class Property:
    name: str
    title: str | None = None
    admit: tuple[Ref, ...] = ()
    forbid: tuple[Ref, ...] = ()
    shortcuts: tuple[Ref, ...] = ()
    default: Ref = Ref("no")
    span: Span = _span_field
    # Where the first ADMIT keyword stands; an item excluded as inadmissible points here.
    admit_span: Span = _span_field

    @property
    def display_name(self) -> str:
        """What the report calls the property: its title, else its name."""
        return self.title if self.title is not None else self.name


@attrs.frozen
class Gate:
    """One GATE line. Options a kind does not take stay None (analysis rejects them)."""

    kind: str
    on_abstain: str = "fail_open"
    file: str | None = None
    cmd: tuple[str, ...] | None = None
    timeout_s: float | None = None
    model: str | None = None
    threshold: float | None = None
    rubric: str | None = None
    k: int | None = None
    properties: tuple[Ref, ...] = ()
    budget_rate: float | None = None
    budget_window: int | None = None
    # consistency only: the model that decides whether two answers mean the same.
    meaning_model: str | None = None
    # schema: the tool whose calls' arguments it checks; tool_calls: the tools a rung may call.
    tools: tuple[str, ...] | None = None
    span: Span = _span_field
    # Where each option was written (keyword through value), by option name, and where its
    # value was written, so a diagnostic about a value points at the value.
    option_spans: tuple[tuple[str, Span], ...] = attrs.field(default=(), eq=False, repr=False)
    value_spans: tuple[tuple[str, Span], ...] = attrs.field(default=(), eq=False, repr=False)

    def span_of(self, option: str) -> Span:
        return dict(self.option_spans).get(option, self.span)

    def value_span_of(self, option: str) -> Span:
        return dict(self.value_spans).get(option, self.span_of(option))


@attrs.frozen
class Rung:
    name: str
    model: str | None = None
    gates: tuple[Gate, ...] = ()
    # True for the one rung of a CHAIN whose gates stand directly in it.
    implicit: bool = False
    span: Span = _span_field


@attrs.frozen
class Chain:
    name: str
    rungs: tuple[Rung, ...] = ()
    span: Span = _span_field


@attrs.frozen
class Value:
    """A LABEL or DETAIL: a string literal, or a dotted path read from the step (``is_path``)."""

    text: str
    is_path: bool = False
    span: Span = _span_field


@attrs.frozen
class Condition:
    """``WHERE path == value``; ``value`` is the JSON value written (a string, number, true,
    false or null). With ``matches``, ``WHERE path MATCHES "pattern"``: ``value`` is the
    pattern, which the text at the path must match (``*`` matches any run of characters)."""

    path: str
    value: Any
    span: Span = _span_field
    matches: bool = False


@attrs.frozen
class MapRule:
    """One WHEN rule: which steps it matches and what it makes of them (``kind`` None: SKIP)."""

    step: str
    tool: Ref | None = None
    outcomes: tuple[Ref, ...] = ()
    where: tuple[Condition, ...] = ()
    kind: Ref | None = None
    label: Value | None = None
    detail: Value | None = None
    property: Ref | None = None
    span: Span = _span_field


@attrs.frozen
class Mapping:
    rules: tuple[MapRule, ...] = ()
    span: Span = _span_field


@attrs.frozen
class Rubric:
    name: str
    title: str | None = None
    kinds: tuple[Ref, ...] = ()
    properties: tuple[Property, ...] = ()
    chains: tuple[Chain, ...] = ()
    # The MAP block: how trace steps become evidence (None: the default taxonomy).
    mapping: Mapping | None = None
    # The file the rubric came from (its base name), kept for messages, not for equality.
    source: str | None = attrs.field(default=None, eq=False)
    span: Span = _span_field

    @property
    def known_kinds(self) -> tuple[str, ...]:
        return BUILTIN_KINDS + tuple(k.value for k in self.kinds)


# ---------------------------------------------------------------- JSON out


def _span_out(span: Span) -> list[int]:
    return span.to_list()


def _refs_out(refs: tuple[Ref, ...]) -> list[dict]:
    return [_ref_out(r) for r in refs]


def _ref_out(ref: Ref) -> dict:
    return {"value": ref.value, "span": _span_out(ref.span)}


def _property_out(p: Property) -> dict:
    return {
        "name": p.name,
        "title": p.title,
        "admit": _refs_out(p.admit),
        "forbid": _refs_out(p.forbid),
        "shortcuts": _refs_out(p.shortcuts),
        "default": _ref_out(p.default),
        "span": _span_out(p.span),
        "admit_span": _span_out(p.admit_span),
    }


_GATE_OPTIONS = ("file", "cmd", "timeout_s", "model", "threshold", "rubric", "k", "budget_rate", "budget_window",
                 "meaning_model", "tools")


def _gate_out(g: Gate) -> dict:
    out: dict[str, Any] = {"kind": g.kind, "on_abstain": g.on_abstain}
    for name in _GATE_OPTIONS:
        value = getattr(g, name)
        if value is not None:
            out[name] = list(value) if isinstance(value, tuple) else value
    if g.properties:
        out["properties"] = _refs_out(g.properties)
    out["span"] = _span_out(g.span)
    if g.option_spans:
        out["option_spans"] = {name: _span_out(s) for name, s in g.option_spans}
    if g.value_spans:
        out["value_spans"] = {name: _span_out(s) for name, s in g.value_spans}
    return out


def _rung_out(r: Rung) -> dict:
    return {
        "name": r.name,
        "model": r.model,
        "implicit": r.implicit,
        "gates": [_gate_out(g) for g in r.gates],
        "span": _span_out(r.span),
    }


def _chain_out(c: Chain) -> dict:
    return {"name": c.name, "rungs": [_rung_out(r) for r in c.rungs], "span": _span_out(c.span)}


def _value_out(value: Value | None) -> dict | None:
    if value is None:
        return None
    return {"text": value.text, "is_path": value.is_path, "span": _span_out(value.span)}


def _optional_ref_out(ref: Ref | None) -> dict | None:
    return None if ref is None else _ref_out(ref)


def _rule_out(r: MapRule) -> dict:
    return {
        "step": r.step,
        "tool": _optional_ref_out(r.tool),
        "outcomes": _refs_out(r.outcomes),
        "where": [_condition_out(c) for c in r.where],
        "kind": _optional_ref_out(r.kind),
        "label": _value_out(r.label),
        "detail": _value_out(r.detail),
        "property": _optional_ref_out(r.property),
        "span": _span_out(r.span),
    }


def _mapping_out(m: Mapping) -> dict:
    return {"rules": [_rule_out(r) for r in m.rules], "span": _span_out(m.span)}


def to_dict(rubric: Rubric) -> dict:
    """The IR as plain JSON-ready data, keys in a fixed order."""
    out = _rubric_out(rubric)
    # Only a rubric with a MAP block has the key.
    if rubric.mapping is not None:
        out["mapping"] = _mapping_out(rubric.mapping)
        out["span"] = out.pop("span")
    return out


def _rubric_out(rubric: Rubric) -> dict:
    return {
        "ir_version": IR_VERSION,
        "source": rubric.source,
        "name": rubric.name,
        "title": rubric.title,
        "kinds": _refs_out(rubric.kinds),
        "properties": [_property_out(p) for p in rubric.properties],
        "chains": [_chain_out(c) for c in rubric.chains],
        "span": _span_out(rubric.span),
    }


def to_json(rubric: Rubric) -> str:
    """Deterministic JSON text: the same IR always gives the same bytes."""
    return json.dumps(to_dict(rubric), indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- JSON in
# Input is assumed to have passed the IR JSON Schema check (admiss.api.ir_from_json does it).


def _span_in(values: list[int] | None) -> Span:
    return Span.from_list(values) if values else NO_SPAN


def _ref_in(data: dict) -> Ref:
    return Ref(data["value"], _span_in(data.get("span")))


def _refs_in(items: list[dict]) -> tuple[Ref, ...]:
    return tuple(_ref_in(i) for i in items)


def _property_in(d: dict) -> Property:
    return Property(
        name=d["name"],
        title=d.get("title"),
        admit=_refs_in(d.get("admit", [])),
        forbid=_refs_in(d.get("forbid", [])),
        shortcuts=_refs_in(d.get("shortcuts", [])),
        default=_ref_in(d.get("default", {"value": "no"})),
        span=_span_in(d.get("span")),
        admit_span=_span_in(d.get("admit_span")),
    )


def _gate_in(d: dict) -> Gate:
    options = {name: d[name] for name in _GATE_OPTIONS if d.get(name) is not None}
    for name in ("cmd", "tools"):
        if name in options:
            options[name] = tuple(options[name])
    return Gate(
        kind=d["kind"],
        on_abstain=d.get("on_abstain", "fail_open"),
        properties=_refs_in(d.get("properties", [])),
        span=_span_in(d.get("span")),
        option_spans=tuple((k, _span_in(v)) for k, v in d.get("option_spans", {}).items()),
        value_spans=tuple((k, _span_in(v)) for k, v in d.get("value_spans", {}).items()),
        **options,
    )


def _rung_in(d: dict) -> Rung:
    return Rung(
        name=d["name"],
        model=d.get("model"),
        gates=tuple(_gate_in(g) for g in d.get("gates", [])),
        implicit=d.get("implicit", False),
        span=_span_in(d.get("span")),
    )


def _chain_in(d: dict) -> Chain:
    return Chain(name=d["name"], rungs=tuple(_rung_in(r) for r in d.get("rungs", [])), span=_span_in(d.get("span")))


def _value_in(d: dict | None) -> Value | None:
    return None if d is None else Value(d["text"], d.get("is_path", False), _span_in(d.get("span")))


def _optional_ref_in(d: dict | None) -> Ref | None:
    return None if d is None else _ref_in(d)


def _condition_out(c: Condition) -> dict:
    # A pattern is written under "matches", not "value": an IR reader that knows only
    # equality then refuses the condition instead of reading the pattern as a value.
    return {"path": c.path, "matches" if c.matches else "value": c.value, "span": _span_out(c.span)}


def _condition_in(d: dict) -> Condition:
    if "matches" in d:
        return Condition(d["path"], d["matches"], _span_in(d.get("span")), matches=True)
    return Condition(d["path"], d["value"], _span_in(d.get("span")))


def _rule_in(d: dict) -> MapRule:
    return MapRule(
        step=d["step"],
        tool=_optional_ref_in(d.get("tool")),
        outcomes=_refs_in(d.get("outcomes", [])),
        where=tuple(_condition_in(c) for c in d.get("where", [])),
        kind=_optional_ref_in(d.get("kind")),
        label=_value_in(d.get("label")),
        detail=_value_in(d.get("detail")),
        property=_optional_ref_in(d.get("property")),
        span=_span_in(d.get("span")),
    )


def _mapping_in(d: dict | None) -> Mapping | None:
    if d is None:
        return None
    return Mapping(tuple(_rule_in(r) for r in d.get("rules", [])), _span_in(d.get("span")))


def from_dict(data: dict) -> Rubric:
    """Rebuild the IR from :func:`to_dict` output."""
    return Rubric(
        name=data["name"],
        title=data.get("title"),
        kinds=_refs_in(data.get("kinds", [])),
        properties=tuple(_property_in(p) for p in data.get("properties", [])),
        chains=tuple(_chain_in(c) for c in data.get("chains", [])),
        mapping=_mapping_in(data.get("mapping")),
        source=data.get("source"),
        span=_span_in(data.get("span")),
    )
