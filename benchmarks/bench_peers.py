"""The same admissibility decision in admiss and in engines a user might pick instead."""

from __future__ import annotations

import random
from typing import Callable

from benchmarks import admiss_probe, baseline, datagen, peers
from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, rate_text, ratio_text, seconds_text
from benchmarks.timing import Timing, time_call

PROPERTIES = 10
ITEMS = 100


def reference_outcomes(props: list[datagen.PropertyData], bundle: dict) -> tuple[str, list[list[str]]]:
    """The answers peers must match: admiss's when it is available, else the baseline's."""
    if admiss_probe.api() is not None:
        report = admiss_probe.compiled(props).check(bundle).to_dict()
        return "admiss", admiss_probe.outcomes_in_order(report, bundle["evidence"])
    report = baseline.check_bundle(bundle, baseline.specs_for(props))
    return "the baseline (admiss not available)", admiss_probe.outcomes_in_order(report, bundle["evidence"])


def rate_row(engine: str, package: str, timing: Timing, reference: Timing | None, agrees: str) -> list[str]:
    per_second = 1.0 / timing.median
    versus = ratio_text(reference.median / timing.median) if reference else "n/a"
    return [engine, package, seconds_text(timing.median), rate_text(per_second * PROPERTIES), rate_text(per_second * PROPERTIES * ITEMS), versus, agrees]


def peer_timing(peer: peers.Peer, props: list[datagen.PropertyData], bundle: dict, want: list[list[str]], settings: Settings) -> tuple[Timing | None, str]:
    """The peer's seconds per bundle and whether it agrees, or None and why it could not run."""
    try:
        classify = peer.build(props)
    except ImportError as exc:
        return None, f"missing ({exc.name or peer.package} not installed)"
    items = bundle["evidence"]
    got = classify(items)
    agrees = "yes" if got == want else "NO"
    if got != want:
        wrong = sum(g != w for gp, wp in zip(got, want) for g, w in zip(gp, wp))
        print(f"!!! MISMATCH: {peer.name} disagrees with the reference on {wrong} item decisions")
    decide: Callable[[], object] = lambda: peers.verdicts(classify(items))
    return time_call(decide, settings.repeats, settings.min_repeat_seconds), agrees


def run(settings: Settings) -> None:
    print_section("peers: the admissibility decision in other rule engines")
    props = datagen.properties(PROPERTIES)
    bundle = datagen.bundle(ITEMS, random.Random(7))
    reference_name, want = reference_outcomes(props, bundle)
    print(f"workload: {PROPERTIES} properties × {ITEMS} items per bundle; answers checked against {reference_name}\n")

    rows = []
    admiss_timing = None
    if admiss_probe.api() is not None:
        rubric = admiss_probe.compiled(props)
        admiss_timing = time_call(lambda: rubric.check(bundle).to_dict(), settings.repeats, settings.min_repeat_seconds)
        rows.append(rate_row("admiss (full report)", "admiss", admiss_timing, admiss_timing, "reference"))
    else:
        rows.append(["admiss", "admiss", "not available", "", "", "", ""])
    specs = baseline.specs_for(props)
    plain = time_call(lambda: baseline.check_bundle(bundle, specs), settings.repeats, settings.min_repeat_seconds)
    plain_agrees = admiss_probe.outcomes_in_order(baseline.check_bundle(bundle, specs), bundle["evidence"]) == want
    rows.append(rate_row("plain Python (full report)", "-", plain, admiss_timing, "yes" if plain_agrees else "NO"))
    for peer in peers.PEERS:
        timing, agrees = peer_timing(peer, props, bundle, want, settings)
        rows.append(rate_row(peer.name, peer.package, timing, admiss_timing, agrees) if timing else [peer.name, peer.package, agrees, "", "", "", ""])
    print_table(
        "Per bundle; a decision is one property's verdict over a bundle; vs admiss = admiss time / engine time (above 1 means faster than admiss)",
        ["engine", "package", "median/bundle", "decisions/s", "items/s", "vs admiss", "agrees"],
        rows,
    )
    print("admiss and the plain baseline build the full report; the peers only classify items and take the verdict.\n")
