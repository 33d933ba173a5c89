"""Terminal reports: the rich format against the text format, per bundle, in one run.

Each figure draws the same reports into memory (a terminal-like rich console writing to a
StringIO, so no terminal speed is measured): the text format, a report drawn in full with
rich (what a batch's first SUMMARY_AFTER bundles get), and the one line each later bundle
of a batch gets from the rich ReportWriter.
"""

from __future__ import annotations

import io
import random

import admiss
from admiss.report.rich import SUMMARY_AFTER, ReportWriter, print_report
from benchmarks import datagen
from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, ratio_text, seconds_text
from benchmarks.timing import time_call

BUNDLES = 200
ITEMS = 8


def _console():
    from rich.console import Console

    return Console(file=io.StringIO(), force_terminal=True, width=100, color_system="truecolor")


def run(settings: Settings) -> None:
    print_section(f"rich: the terminal format vs text, {BUNDLES} reports of {ITEMS} items each")
    props = datagen.properties(3)
    rubric = admiss.compile_source(datagen.rubric_source(props), "bench.rubric")
    rng = random.Random(7)
    reports = [rubric.check(datagen.bundle(ITEMS, rng), f"bundle-{i}.json") for i in range(BUNDLES)]

    def text() -> None:
        out = io.StringIO()
        for report in reports:
            out.write(report.to_text() + "\n")

    def rich_full() -> None:
        console = _console()
        for report in reports[:SUMMARY_AFTER]:
            print_report(report, console)

    def rich_summary() -> None:
        writer = ReportWriter(_console())
        writer.drawn = SUMMARY_AFTER + 1  # past the full reports: the line each later bundle gets
        for report in reports:
            writer.write(report)

    per_bundle = {
        "text": time_call(text, settings.repeats, settings.min_repeat_seconds).best / BUNDLES,
        "rich, a report in full (the first 20 of a batch)":
            time_call(rich_full, settings.repeats, settings.min_repeat_seconds).best / SUMMARY_AFTER,
        "rich, one line per bundle (the rest of a batch)":
            time_call(rich_summary, settings.repeats, settings.min_repeat_seconds).best / BUNDLES,
    }
    base = per_bundle["text"]
    print_table("per bundle (best of repeats)", ["format", "per bundle", "vs text"],
                [[name, seconds_text(t), ratio_text(t / base)] for name, t in per_bundle.items()])
