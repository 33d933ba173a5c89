"""The JSON report: the seed's field names, the aggregate, and where each exclusion came from."""

from __future__ import annotations

import copy
import functools
import json
from typing import TYPE_CHECKING, Any

from admiss.compiler import VERDICT_OF_RATIONALE

if TYPE_CHECKING:
    from admiss.cascade import ChainResult, GateRecord
    from admiss.compiler import CompiledProperty, Exclusion, PropertyResult
    from admiss.interpreter import CheckReport


def _nested(item: dict) -> bool:
    """Whether an item carries arrays or objects, which each report entry must copy so that
    no two reports (nor the bundle) share a mutable value."""
    # Only fields beyond kind, detail, source_label and property (all strings) can be nested.
    return len(item) > 3 + ("property" in item) and any(type(v) is dict or type(v) is list for v in item.values())


def _own_fields(item: dict) -> dict:
    return copy.deepcopy(item) if _nested(item) else item


# Marks, in a report's item layouts, an item whose fields must be copied for every entry.
_NESTED: dict = {}


def excluded_dicts(excluded: list[tuple[dict, "Exclusion"]], bases: dict[int, dict] | None = None,
                   shared: bool = False) -> list[dict]:
    """One new dict per exclusion: the seed's two fields first, then the item's own fields as
    the bundle gave them, then a copy of the clause, so editing one report never touches
    another. The exclusion's reason wins over an item field named ``reason``.

    With ``bases`` (for a report of several properties, where one item is usually excluded
    by many), each item's fields are laid out once per report, keyed by id, and copied per
    exclusion: about twice as fast as laying them out each time.

    With ``shared`` (for a report encoded at once and thrown away) entries share the items'
    nested values instead of copying them.
    """
    if shared:
        return [{"detail": None, "reason": None, **item, "reason": exclusion.reason, "clause": exclusion.clause}
                for item, exclusion in excluded]
    if bases is None:
        # The placeholders fix the key order; the item's detail and our reason fill them.
        return [{"detail": None, "reason": None, **_own_fields(item), "reason": exclusion.reason,
                 "clause": exclusion.clause.copy()} for item, exclusion in excluded]
    out = []
    append = out.append
    for item, exclusion in excluded:
        base = bases.get(id(item))
        if base is None:
            base = bases[id(item)] = _NESTED if _nested(item) else {"detail": None, "reason": None, **item}
        entry = base.copy() if base is not _NESTED else {"detail": None, "reason": None, **copy.deepcopy(item)}
        entry["reason"] = exclusion.reason
        entry["clause"] = exclusion.clause.copy()
        append(entry)
    return out


def property_dict(result: "PropertyResult", bases: dict[int, dict] | None = None,
                  steps: bool = False, shared: bool = False) -> dict[str, Any]:
    """A property's report; with ``steps`` (a checked trace), the step reference of each
    admitted item, in the order of ``evidence``. ``shared``: see :func:`excluded_dicts`."""
    prop = result.prop
    out = {
        "property": prop.display_name,
        "name": prop.name,
        "admissible": list(prop.admissible),
        "forbidden": list(prop.forbidden),
        "shortcut_rejections": list(prop.shortcut_rejections),
        "evidence": list(result.evidence),
        "excluded": excluded_dicts(result.excluded, bases, shared),
        "rationale": result.rationale,
        "default_verdict": prop.default,
        "verdict": result.verdict,
    }
    if steps:
        out["evidence_steps"] = [item.get("step") if shared else copy.deepcopy(item.get("step"))
                                 for item in result.admitted]
    return out


def gate_dict(record: "GateRecord") -> dict[str, Any]:
    out = {
        "gate": record.gate,
        "verdict": record.verdict,
        "effective": record.effective,
        "score": record.score,
        "reason": record.reason,
        "duration_ms": record.duration_ms,
        "gate_cost_usd": record.gate_cost_usd,
        "disabled": record.disabled,
    }
    # The admissibility gate's property reports appear in the chain's report.
    if record.details and "properties" in record.details:
        out["properties"] = [property_dict(r) for r in record.details["properties"]]
    return out


def chain_dict(chain: "ChainResult") -> dict[str, Any]:
    return {
        "name": chain.name,
        "served": chain.served,
        "rungs": [
            {
                "rung": rung.rung,
                "model": rung.model,
                "cost_usd": rung.cost_usd,
                "outcome": rung.outcome,
                "gates": [gate_dict(g) for g in rung.gates],
            }
            for rung in chain.rungs
        ],
        "model_cost_usd": chain.model_cost_usd,
        "gate_cost_usd": chain.gate_cost_usd,
    }


def report_dict(report: "CheckReport", shared: bool = False) -> dict[str, Any]:
    """The report as JSON-ready data, sharing no mutable value with the bundle or another
    report (unless ``shared``: see :func:`excluded_dicts`)."""
    bases: dict[int, dict] | None = {} if len(report.properties) > 1 else None
    out = {
        "bundle": report.bundle_name,
        "rubric": report.rubric.name,
        "verdict": report.verdict,
        "aggregate": report.aggregate,
        "missing_evidence_count": report.missing_evidence_count,
        "properties": [property_dict(r, bases, report.trace is not None, shared) for r in report.properties],
    }
    if report.chain is not None:
        out["chain"] = chain_dict(report.chain)
    if report.trace is not None:
        out["trace"] = report.trace if shared else copy.deepcopy(report.trace)
    return out


# ---------------------------------------------------------------- JSON text, built directly
# A batch writes one report per line. Building the dicts and then encoding them costs more
# than checking the bundle, yet most of a report is known once the rubric is compiled:
# property headers, verdict tails, each exclusion's reason and clause. report_json joins
# those precomputed pieces with the few encoded strings a bundle brings, and gives exactly
# the bytes of json.dumps(report_dict(report), ensure_ascii=False).

_encode_string = json.encoder.encode_basestring  # the encoder json.dumps(ensure_ascii=False) uses


# json.dumps(value, ensure_ascii=False), without building an encoder per call as dumps does
# for any non-default option.
_dumps = json.JSONEncoder(ensure_ascii=False).encode


class _PropertyJSON:
    """The bundle-independent pieces of one property's JSON, and of each of its exclusions."""

    __slots__ = ("head", "tails")

    def __init__(self, prop: "CompiledProperty"):
        self.head = (f'{{"property": {_encode_string(prop.display_name)}, "name": {_encode_string(prop.name)}, '
                     f'"admissible": {_dumps(list(prop.admissible))}, "forbidden": {_dumps(list(prop.forbidden))}, '
                     f'"shortcut_rejections": {_dumps(list(prop.shortcut_rejections))}, "evidence": [')
        self.tails = {
            rationale: f'], "rationale": {_encode_string(rationale)}, "default_verdict": '
                       f'{_encode_string(prop.default)}, "verdict": "{verdict}"}}'
            for rationale, verdict in VERDICT_OF_RATIONALE.items()
        }


def _exclusion_json(exclusion: "Exclusion") -> tuple[str, str]:
    """(', "reason": ...', ', "clause": {...}}'): an exclusion's entry around the item's fields."""
    parts = exclusion.renderings.get("json")
    if parts is None:
        parts = exclusion.renderings["json"] = (
            f', "reason": {_encode_string(exclusion.reason)}', f', "clause": {_dumps(exclusion.clause)}}}')
    return parts


def _property_json(prop: "CompiledProperty") -> _PropertyJSON:
    parts = prop.renderings.get("json")
    if parts is None:
        parts = prop.renderings["json"] = _PropertyJSON(prop)
    return parts


# Marks an item whose fields would not keep their places in the entry (it has its own
# "reason" or "clause" field): its entries are encoded from excluded_dicts instead.
_SLOW = ("", "")


@functools.lru_cache(maxsize=256)
def _field_prefix(key: str) -> str:
    return f", {_encode_string(key)}: "


def _item_parts(item: dict) -> tuple[str, str]:
    """An item's ('{"detail": ...', ', "kind": ..., ...') pieces, or _SLOW."""
    if "reason" in item or "clause" in item:
        return _SLOW
    rest = "".join([_field_prefix(key) + (_encode_string(value) if type(value) is str else _dumps(value))
                    for key, value in item.items() if key != "detail"])
    return '{"detail": ' + _encode_string(item["detail"]), rest


def _property_text(result: "PropertyResult", items: dict[int, tuple[str, str]], steps: bool = False) -> str:
    prop = result.prop
    parts = prop.renderings.get("json") or _property_json(prop)
    entries = []
    append = entries.append
    for item, exclusion in result.excluded:
        laid_out = items.get(id(item))
        if laid_out is None:
            laid_out = items[id(item)] = _item_parts(item)
        if laid_out is _SLOW:
            append(_dumps(excluded_dicts([(item, exclusion)])[0]))
            continue
        around = exclusion.renderings.get("json") or _exclusion_json(exclusion)
        append(f"{laid_out[0]}{around[0]}{laid_out[1]}{around[1]}")
    evidence = ", ".join([_encode_string(detail) for detail in result.evidence])
    text = f'{parts.head}{evidence}], "excluded": [{", ".join(entries)}{parts.tails[result.rationale]}'
    if steps:  # a checked trace's report: the admitted items' step references close the entry
        return f'{text[:-1]}, "evidence_steps": {_dumps([item.get("step") for item in result.admitted])}}}'
    return text


def report_json(report: "CheckReport") -> str:
    """``json.dumps(report.to_dict(), ensure_ascii=False)``, built from precomputed pieces."""
    items: dict[int, tuple[str, str]] = {}  # per item (by id, for this call): its encoded fields
    steps = report.trace is not None
    properties = ", ".join([_property_text(r, items, steps) for r in report.properties])
    chain = "" if report.chain is None else f', "chain": {_dumps(chain_dict(report.chain))}'
    trace = "" if report.trace is None else f', "trace": {_dumps(report.trace)}'
    return (f'{{"bundle": {_dumps(report.bundle_name)}, "rubric": {_encode_string(report.rubric.name)}, '
            f'"verdict": "{report.verdict}", "aggregate": "{report.aggregate}", '
            f'"missing_evidence_count": {report.missing_evidence_count}, "properties": [{properties}]{chain}{trace}}}')
