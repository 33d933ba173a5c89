"""In-process checking: admiss's lean report vs the seed's decision written plainly, and how
the cost per item grows with the bundle."""

from __future__ import annotations

import random
from collections import Counter

from benchmarks import admiss_probe, baseline, datagen
from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, ratio_text, seconds_text, target_text
from benchmarks.timing import Timing, time_call

TARGET_SPEEDUP = 3.0
# Per-item time at LINEAR_ITEMS[1] items may be at most this much the time at LINEAR_ITEMS[0].
TARGET_LINEAR = 1.3
LINEAR_ITEMS = (10, 1000)
# (label, properties, items per bundle)
CASES = (("1 property × 10 items", 1, 10), ("10 properties × 100 items", 10, 100))
# Fields of the seed's report that admiss must reproduce exactly.
PROPERTY_FIELDS = ("property", "admissible", "forbidden", "shortcut_rejections", "evidence", "rationale", "default_verdict", "verdict")


def report_mismatches(got: dict, want: dict) -> list[str]:
    """Where an admiss report dict differs from the baseline's, on the seed's fields."""
    problems = [f"{key}: {got.get(key)!r} != {want[key]!r}" for key in ("aggregate", "missing_evidence_count") if got.get(key) != want[key]]
    if len(got.get("properties", [])) != len(want["properties"]):
        return problems + ["number of properties differs"]
    for index, (g, w) in enumerate(zip(got["properties"], want["properties"])):
        problems += [f"properties[{index}].{f}: {g.get(f)!r} != {w[f]!r}" for f in PROPERTY_FIELDS if g.get(f) != w[f]]
        excluded = [{"detail": e["detail"], "reason": e["reason"]} for e in g.get("excluded", [])]
        if excluded != w["excluded"]:
            problems.append(f"properties[{index}].excluded differs")
    return problems


def outcome_counts(report: dict, items: list[dict]) -> Counter:
    return Counter(o for per_prop in admiss_probe.outcomes_in_order(report, items) for o in per_prop)


def timing_row(label: str, engine: str, timing: Timing, bar: Timing) -> list[str]:
    return [
        label,
        engine,
        seconds_text(timing.best),
        seconds_text(timing.median),
        ratio_text(bar.median / timing.median),
        ratio_text(bar.best / timing.best),
    ]


def run(settings: Settings) -> None:
    print_section("inprocess: rubric.check(bundle).to_dict() (lean report) vs the seed's code written plainly")
    rows, verdict_lines = [], []
    for label, n_props, n_items in CASES:
        props = datagen.properties(n_props)
        bundle = datagen.bundle(n_items, random.Random(n_props * 1000 + n_items))
        specs = baseline.specs_for(props)
        want = baseline.check_bundle(bundle, specs)
        print(f"{label}: outcomes {dict(outcome_counts(want, bundle['evidence']))}, aggregate {want['aggregate']}")
        bar = time_call(lambda: baseline.check_bundle(bundle, specs), settings.repeats, settings.min_repeat_seconds)
        rows.append(timing_row(label, "baseline (plain Python)", bar, bar))
        if admiss_probe.api() is None:
            rows.append([label, "admiss", "not available", "", "", ""])
            verdict_lines.append(target_text(f"{label}: admiss ≥ {TARGET_SPEEDUP:g}× baseline", None, "admiss.compile_source is not available"))
            continue
        rubric = admiss_probe.compiled(props)
        problems = report_mismatches(rubric.check(bundle).to_dict(), want)
        if problems:
            print(f"!!! MISMATCH: admiss and the baseline disagree on {label}:")
            print("\n".join(f"!!!   {p}" for p in problems[:20]))
        check_only = time_call(lambda: rubric.check(bundle), settings.repeats, settings.min_repeat_seconds)
        full = time_call(lambda: rubric.check(bundle).to_dict(), settings.repeats, settings.min_repeat_seconds)
        detailed = time_call(lambda: rubric.check(bundle).to_dict(full=True), settings.repeats,
                             settings.min_repeat_seconds)
        rows.append(timing_row(label, "admiss check()", check_only, bar))
        rows.append(timing_row(label, "admiss check().to_dict()", full, bar))
        rows.append(timing_row(label, "admiss check().to_dict(full=True)", detailed, bar))
        speedup = bar.median / full.median
        verdict_lines.append(
            target_text(
                f"{label}: admiss ≥ {TARGET_SPEEDUP:g}× baseline",
                speedup >= TARGET_SPEEDUP,
                f"{ratio_text(speedup)} by median, check().to_dict(); {'answers agree' if not problems else 'ANSWERS DIFFER'}",
            )
        )
    print()
    print_table(
        "Seconds per bundle; ratio = baseline time / engine time (higher is faster)",
        ["case", "engine", "best", "median", "ratio (median)", "ratio (best)"],
        rows,
    )
    verdict_lines.append(linear_line(settings))
    print("\n".join(verdict_lines), end="\n\n")


def linear_line(settings: Settings) -> str:
    """Per-item time of check().to_dict() on one property at few and at many items."""
    rubric = admiss_probe.compiled(datagen.properties(1))
    per_item = {}
    for items in LINEAR_ITEMS:
        bundle = datagen.bundle(items, random.Random(items))
        timing = time_call(lambda: rubric.check(bundle).to_dict(), settings.repeats, settings.min_repeat_seconds)
        per_item[items] = timing.median / items
    growth = per_item[LINEAR_ITEMS[1]] / per_item[LINEAR_ITEMS[0]]
    few, many = LINEAR_ITEMS
    detail = (f"{seconds_text(per_item[few])} per item at {few} items, {seconds_text(per_item[many])} at {many}: "
              f"{ratio_text(growth)}")
    return target_text(f"cost linear: per-item time at {many} items ≤ {TARGET_LINEAR:g}× that at {few}",
                       growth <= TARGET_LINEAR, detail)
