"""The JSON report: the seed's field names, the aggregate, and where each exclusion came from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from admiss.compiler import PropertyResult
    from admiss.interpreter import CheckReport


def excluded_dict(result: "PropertyResult", item: dict, reason: str) -> dict[str, Any]:
    kind, label = item["kind"], item["source_label"]
    return {
        "detail": item["detail"],
        "reason": reason,
        "kind": kind,
        "source_label": label,
        "clause": result.prop.clause(reason, kind, label),
    }


def property_dict(result: "PropertyResult") -> dict[str, Any]:
    prop = result.prop
    return {
        "property": prop.display_name,
        "name": prop.name,
        "admissible": list(prop.admissible),
        "forbidden": list(prop.forbidden),
        "shortcut_rejections": list(prop.shortcut_rejections),
        "evidence": list(result.evidence),
        "excluded": [excluded_dict(result, item, reason) for item, reason in result.excluded],
        "rationale": result.rationale,
        "default_verdict": prop.default,
        "verdict": result.verdict,
    }


def report_dict(report: "CheckReport") -> dict[str, Any]:
    return {
        "bundle": report.bundle_name,
        "rubric": report.rubric.name,
        "verdict": report.verdict,
        "aggregate": report.aggregate,
        "missing_evidence_count": report.missing_evidence_count,
        "properties": [property_dict(r) for r in report.properties],
    }
