"""Compile time: parse + compile of generated rubrics with thousands of properties."""

from __future__ import annotations

import contextlib

from benchmarks import admiss_probe, datagen
from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, ratio_text, seconds_text, target_text
from benchmarks.timing import Timing, time_once_each

TARGET_1K_SECONDS = 1.0
# Per-property time at the largest size over the smallest; 1.0 is exactly linear.
LINEAR_TOLERANCE = 1.3


def compile_timing(size: int, repeats: int, collect: bool = True) -> Timing:
    """Seconds to compile a rubric of ``size`` properties, from a distinct source each repeat.

    A distinct title per repeat keeps a cache keyed by content from answering instead of
    the compiler; generating the text is not timed. ``collect=False`` turns the cyclic GC
    off, to show how much of the time (and of any non-linearity) is the collector's.
    """
    props = datagen.properties(size)
    sources = [datagen.rubric_source(props, "generated", f"generated rubric, {size} properties, repeat {k}, gc {collect}") for k in range(repeats)]
    compile_source = admiss_probe.api().compile_source
    from admiss.collector import collector_paused

    with contextlib.nullcontext() if collect else collector_paused():
        return time_once_each([lambda text=text: compile_source(text, name="generated") for text in sources])


def run(settings: Settings) -> None:
    print_section("compile: admiss.compile_source on generated rubrics")
    if admiss_probe.api() is None:
        print("admiss.compile_source: not available\n")
        print(target_text("1k properties in under 1 s", None, "admiss.compile_source is not available"))
        print(target_text("linear growth", None, "admiss.compile_source is not available"), end="\n\n")
        return
    timings = {size: compile_timing(size, settings.batch_repeats) for size in settings.compile_sizes}
    smallest, largest = min(timings), max(timings)
    per_property = {size: t.median / size for size, t in timings.items()}
    rows = [
        [f"{size} properties", seconds_text(t.best), seconds_text(t.median), seconds_text(per_property[size]), ratio_text(per_property[size] / per_property[smallest])]
        for size, t in timings.items()
    ]
    without_gc = {size: compile_timing(size, settings.batch_repeats, collect=False) for size in settings.compile_sizes}
    rows += [
        [f"{size} properties, GC off", seconds_text(t.best), seconds_text(t.median), seconds_text(t.median / size), ratio_text(t.median / size / (without_gc[smallest].median / smallest))]
        for size, t in without_gc.items()
    ]
    print_table(
        f"Seconds per compile; per-property ratio is against {smallest} properties, same GC setting (1.00× is linear)",
        ["rubric", "best", "median", "per property", "per-property ratio"],
        rows,
    )
    growth = per_property[largest] / per_property[smallest]
    one_k = timings.get(1_000)
    if one_k is None:
        print(target_text("1k properties in under 1 s", None, "1k was not among the sizes"))
    else:
        print(target_text("1k properties in under 1 s", one_k.median < TARGET_1K_SECONDS, f"{seconds_text(one_k.median)} by median"))
    print(target_text("linear growth", growth <= LINEAR_TOLERANCE, f"per-property time at {largest} is {ratio_text(growth)} that at {smallest}"), end="\n\n")
