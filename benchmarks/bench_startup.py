"""Start-up: `admiss check` on one small bundle vs importing admiss's own dependencies."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from benchmarks import admiss_probe, datagen
from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, ratio_text, seconds_text, target_text
from benchmarks.timing import Timing, run_process

TARGET_RATIO = 1.3
IMPORTS_ONLY = (sys.executable, "-c", "import typer, lark, attrs")
BARE_INTERPRETER = (sys.executable, "-c", "pass")


def small_bundle() -> dict:
    """The seed's example: one 8-K exhibit offered to named_operator."""
    return {
        "evidence": [
            {"kind": "verified_external_source", "detail": "8-K exhibit says the operator is named.", "source_label": "8-K press-release exhibit"}
        ]
    }


@contextmanager
def private_ir_cache(folder: Path) -> Iterator[None]:
    """admiss's compiled-IR cache in ``folder`` for the block, so "first run" means uncached."""
    before = os.environ.get("ADMISS_CACHE_DIR")
    os.environ["ADMISS_CACHE_DIR"] = str(folder)
    try:
        yield
    finally:
        if before is None:
            del os.environ["ADMISS_CACHE_DIR"]
        else:
            os.environ["ADMISS_CACHE_DIR"] = before


def interleaved_timings(commands: dict[str, tuple[str, ...]], repeats: int) -> dict[str, Timing]:
    """Seconds per run of each command, taking turns so that noise hits them alike."""
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, command in commands.items():
            samples[name].append(run_process(command).seconds)
    return {name: Timing(tuple(s)) for name, s in samples.items()}


def run(settings: Settings) -> None:
    print_section("startup: admiss check on one small bundle vs python -c 'import typer, lark, attrs'")
    commands = {"python -c 'pass'": BARE_INTERPRETER, "python -c 'import typer, lark, attrs'": IMPORTS_ONLY}
    with tempfile.TemporaryDirectory(prefix="admiss-bench-") as tmp, private_ir_cache(Path(tmp) / "cache"):
        folder = Path(tmp)
        rubric, bundle = folder / "startup.rubric", folder / "bundle.json"
        # A title unique to this run, so the first run below finds no cached compilation.
        rubric.write_text(datagen.rubric_source(datagen.properties(1), "startup", f"start-up run {os.getpid()}"), encoding="utf-8")
        bundle.write_text(json.dumps(small_bundle()), encoding="utf-8")
        cli = admiss_probe.cli_command()
        first_run = None
        if cli is not None:
            check = (*cli, "check", "--rubric", str(rubric), "--format", "json", str(bundle))
            first_run = run_process(check)
            if first_run.returncode not in (0, 1):
                print(f"!!! PROBLEM: admiss check exited {first_run.returncode}: {first_run.stderr.strip()[-500:]}")
            commands["admiss check (warm)"] = check
        timings = interleaved_timings(commands, settings.subprocess_repeats)
    bar = timings["python -c 'import typer, lark, attrs'"]
    rows = [[name, seconds_text(t.best), seconds_text(t.median), ratio_text(t.median / bar.median)] for name, t in timings.items()]
    if first_run is None:
        rows.append(["admiss check", "not available", "", ""])
        line = target_text(f"start-up ≤ {TARGET_RATIO:g}× the imports", None, "the admiss CLI is not available")
    else:
        rows.append(["admiss check (first run, nothing cached)", seconds_text(first_run.seconds), "", ratio_text(first_run.seconds / bar.median)])
        ratio = timings["admiss check (warm)"].median / bar.median
        line = target_text(f"start-up ≤ {TARGET_RATIO:g}× the imports", ratio <= TARGET_RATIO, f"{ratio_text(ratio)} by median, warm")
    print_table("Seconds per process run; ratio = run / the imports-only run (lower is better)", ["command", "best", "median", "ratio (median)"], rows)
    print(line, end="\n\n")
