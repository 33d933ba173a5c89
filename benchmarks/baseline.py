"""The bar admiss is measured against: the Admissibility Gate document's decision written plainly.

It does what the document's verify_property + aggregate_reports do, in the same plain style
(frozen dataclasses, classification against tuples for every item, the same report dicts),
starting from the same bundle dict admiss receives. Written for this benchmark, not copied.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.datagen import PropertyData

ADMITTED_RATIONALE = "At least one admissible source supports the property."
MISSING_RATIONALE = "No admissible evidence supports this property."


@dataclass(frozen=True)
class Item:
    kind: str
    detail: str
    source_label: str


@dataclass(frozen=True)
class Spec:
    name: str
    admissible: tuple[str, ...]
    forbidden: tuple[str, ...]
    shortcuts: tuple[str, ...]


@dataclass(frozen=True)
class Exclusion:
    detail: str
    reason: str


def specs_for(props: list[PropertyData]) -> list[Spec]:
    """The baseline's specs; a property is reported under its title, as admiss does."""
    return [Spec(p.title, p.admit, p.forbid, p.shortcuts) for p in props]


def exclusion_reason(item: Item, spec: Spec) -> str | None:
    """Why ``item`` cannot support ``spec``, or None when it is admitted (FORBID first)."""
    if item.kind in spec.forbidden:
        return "forbidden"
    if item.kind not in spec.admissible:
        return "inadmissible"
    if item.source_label in spec.shortcuts:
        return "shortcut-rejected"
    return None


def property_report(items: list[Item], spec: Spec) -> dict:
    admitted: list[str] = []
    excluded: list[Exclusion] = []
    for item in items:
        reason = exclusion_reason(item, spec)
        if reason is None:
            admitted.append(item.detail)
        else:
            excluded.append(Exclusion(item.detail, reason))
    return {
        "property": spec.name,
        "admissible": list(spec.admissible),
        "forbidden": list(spec.forbidden),
        "shortcut_rejections": list(spec.shortcuts),
        "evidence": admitted,
        "excluded": [{"detail": e.detail, "reason": e.reason} for e in excluded],
        "rationale": ADMITTED_RATIONALE if admitted else MISSING_RATIONALE,
        "default_verdict": "no",
        "verdict": "yes" if admitted else "no",
    }


def aggregate(reports: list[dict]) -> dict:
    missing = sum(1 for r in reports if r["verdict"] == "no")
    return {"aggregate": "pass" if missing == 0 else "fail", "missing_evidence_count": missing}


def check_bundle(bundle: dict, specs: list[Spec]) -> dict:
    """The full report for one bundle: every property's report, then the aggregate."""
    items = [Item(e["kind"], e["detail"], e["source_label"]) for e in bundle["evidence"]]
    reports = [property_report(items, spec) for spec in specs]
    return {"properties": reports, **aggregate(reports)}
