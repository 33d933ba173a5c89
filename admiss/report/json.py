"""The JSON report: the seed's field names and the aggregate, lean by default.

The lean report (``to_dict()``, ``--format json``) gives each excluded item as the seed
does, ``{detail, reason}``, plus what the rubric and the bundle cannot tell a reader: the
item's ``index`` in the evidence list checked (and its ``step``, when the item came from a
trace step and carries one). Everything else about an exclusion is derived: the item is
``evidence[index]`` of the bundle, and the clause follows from the reason and the item's
kind or label. The full report (``to_dict(full=True)``, ``--report full``) spells those
out: each excluded item's own fields and the clause, ``{keyword, value, line, column}``.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Callable, Sequence

from admiss.jsonio import dumps_indented, dumps_line

if TYPE_CHECKING:
    from admiss.cascade import ChainResult, GateRecord
    from admiss.compiler import Exclusion, PropertyResult
    from admiss.report.model import ReportData

# Where an excluded item stands in the evidence list checked, by the item's id.
Positions = dict


def positions_of(evidence: Sequence[dict]) -> Positions:
    return {id(item): index for index, item in enumerate(evidence)}


# How a report takes a value from the bundle: a deep copy, so that no two reports (nor the
# bundle) share a mutable value; or the value itself, when the report is written out at once
# and never handed to anyone (``report_json``), which saves most of a trace report's time.
Own = Callable[[Any], Any]


def shared(value: Any) -> Any:
    """The ``own`` of a report whose values are its own to give away: the value itself."""
    return value


def lean_excluded(excluded: list[tuple[dict, "Exclusion"]], positions: Positions,
                  own: Own = copy.deepcopy) -> list[dict]:
    """One new dict per exclusion: the seed's detail and reason, and the item's index."""
    index = positions.get
    out = [{"detail": item["detail"], "reason": exclusion.reason, "index": index(id(item)), "step": item["step"]}
           if "step" in item else {"detail": item["detail"], "reason": exclusion.reason, "index": index(id(item))}
           for item, exclusion in excluded]
    # A receipt's entries (the bulk of an agent's receipt) take the steps as they are; a
    # report handed to a caller copies them after, rather than a call per entry for all.
    if own is not shared:
        for entry in out:
            if "step" in entry:
                entry["step"] = own(entry["step"])
    return out


def _nested(item: dict) -> bool:
    """Whether an item carries arrays or objects, which each report entry must copy so that
    no two reports (nor the bundle) share a mutable value."""
    # Only fields beyond kind, detail, source_label and property (all strings) can be nested.
    return len(item) > 3 + ("property" in item) and any(type(v) is dict or type(v) is list for v in item.values())


# Marks, in a report's item layouts, an item whose fields must be copied for every entry.
_NESTED: dict = {}


def full_excluded(excluded: list[tuple[dict, "Exclusion"]], bases: dict[int, dict]) -> list[dict]:
    """One new dict per exclusion: the seed's two fields first, then the item's own fields as
    the bundle gave them, then a copy of the clause, so editing one report never touches
    another. The exclusion's reason wins over an item field named ``reason``.

    ``bases`` holds each item's fields laid out once per report (keyed by id), copied per
    exclusion: an item is usually excluded by many properties.
    """
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


def property_dict(result: "PropertyResult", positions: Positions, full: bool = False,
                  bases: dict[int, dict] | None = None, steps: bool = False, own: Own = copy.deepcopy) -> dict[str, Any]:
    """A property's report; with ``steps`` (a checked trace), the step reference of each
    admitted item, in the order of ``evidence``."""
    prop = result.prop
    out = {
        "property": prop.display_name,
        "name": prop.name,
        "admissible": list(prop.admissible),
        "forbidden": list(prop.forbidden),
        "shortcut_rejections": list(prop.shortcut_rejections),
        "evidence": list(result.evidence),
        "excluded": full_excluded(result.excluded, {} if bases is None else bases) if full
        else lean_excluded(result.excluded, positions, own),
        "rationale": result.rationale,
        "default_verdict": prop.default,
        "verdict": result.verdict,
    }
    if steps:
        out["evidence_steps"] = [own(item.get("step")) for item in result.admitted]
    return out


def _properties(results: list["PropertyResult"], evidence: Sequence[dict], full: bool,
                steps: bool = False, own: Own = copy.deepcopy) -> list[dict[str, Any]]:
    # Positions (lean) or laid-out item fields (full) are made once for all properties.
    positions = positions_of(evidence) if not full and any(r.excluded for r in results) else {}
    bases: dict[int, dict] = {}
    return [property_dict(r, positions, full, bases, steps, own) for r in results]


def gate_dict(record: "GateRecord", full: bool = False, own: Own = copy.deepcopy) -> dict[str, Any]:
    out = {
        "gate": record.gate,
        "verdict": record.verdict,
        "effective": record.effective,
        "score": record.score,
        "reason": record.reason,
        "duration_ms": record.duration_ms,
        "gate_cost_usd": record.gate_cost_usd,
        "disabled": record.disabled,
        "fault": record.fault,
    }
    # The admissibility gate's property reports appear in the chain's report; their
    # indexes point into the candidate's evidence.
    if record.details and "properties" in record.details:
        evidence = record.details.get("evidence", ())
        # Evidence made from a trace or a request's conversation: each admitted item's step too.
        steps = any("step" in item for item in evidence)
        out["properties"] = _properties(record.details["properties"], evidence, full, steps, own=own)
    # A consistency gate deciding by meaning shows its clusters, entropy and every call.
    if record.details and "meaning" in record.details:
        out["meaning"] = record.details["meaning"]
    return out


def chain_dict(chain: "ChainResult", full: bool = False, own: Own = copy.deepcopy) -> dict[str, Any]:
    # An offline run says so at the top of the receipt, and nothing is added otherwise.
    out = {
        **({"offline": True} if chain.offline else {}),
        "name": chain.name,
        "served": chain.served,
        "rungs": [
            {
                "rung": rung.rung,
                "model": rung.model,
                "cost_usd": rung.cost_usd,
                "outcome": rung.outcome,
                "gates": [gate_dict(g, full, own) for g in rung.gates],
            }
            for rung in chain.rungs
        ],
        "model_cost_usd": chain.model_cost_usd,
        "gate_cost_usd": chain.gate_cost_usd,
    }
    if chain.top_rung is not None:
        top = chain.top_rung
        out["top_rung"] = {"rung": top.rung, "model": top.model, "cost_usd": top.cost_usd}
    return out


def _offline(report: "ReportData") -> bool:
    return report.chain is not None and report.chain.offline


def report_dict(report: "ReportData", full: bool = False, own: Own = copy.deepcopy) -> dict[str, Any]:
    """The JSON report as a dict; ``own`` is how it takes values from the bundle."""
    out = {
        "bundle": report.bundle_name,
        "rubric": report.rubric.name,
        **({"offline": True} if _offline(report) else {}),
        "verdict": report.verdict,
        "aggregate": report.aggregate,
        "missing_evidence_count": report.missing_evidence_count,
        "properties": _properties(report.properties, report.evidence, full, report.trace is not None, own),
    }
    if report.verdict_note is not None:
        out["verdict_note"] = report.verdict_note
    if report.chain is not None:
        out["chain"] = chain_dict(report.chain, full, own)
    if report.trace is not None:
        out["trace"] = own(report.trace)
    return out


def report_json(report: "ReportData", full: bool = False, indent: bool = False) -> bytes:
    """The JSON report as UTF-8 bytes (one line, or indented by two spaces), built without
    copying the bundle's values: the dict lives only until it is written."""
    data = report_dict(report, full, shared)
    return dumps_indented(data) if indent else dumps_line(data)
