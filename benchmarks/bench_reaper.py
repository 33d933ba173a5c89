"""The reaper's cost: one subprocess gate run of a trivial program under admiss.gates.reaper
(Linux: the whole process tree contained) vs the same program started bare (the process
group alone), measured interleaved in the same run."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, ratio_text, seconds_text
from benchmarks.timing import time_interleaved

PROGRAM = 'import sys; sys.stdin.read(); print(\'{"verdict": "pass"}\')\n'


def gate_run(folder: Path, reaped: bool):
    import attrs

    from admiss import ir
    from admiss.config import Config
    from admiss.gates import subprocess as subprocess_gate
    from admiss.gates.base import Candidate, GateContext

    script = folder / "program.py"
    script.write_text(PROGRAM)
    check = subprocess_gate.build(ir.Gate(kind="subprocess", cmd=(sys.executable, str(script))),
                                  GateContext(folder, Config()))
    runner = attrs.evolve(check.arun.__self__, reaped=reaped)

    def run() -> None:
        assert asyncio.run(runner.run(Candidate(output="x"))).verdict == "pass"

    return run


def run(settings: Settings) -> None:
    print_section("reaper: a trivial gate program under the subreaper vs started bare")
    if not sys.platform.startswith("linux"):
        print("skipped: the reaper runs on Linux only")
        return
    repeats = 5 if settings.quick else 15
    with tempfile.TemporaryDirectory() as tmp:
        bare, reaped = gate_run(Path(tmp), False), gate_run(Path(tmp), True)
        bare(), reaped()  # warm-up: imports and the page cache
        bare_t, reaped_t = time_interleaved([bare, reaped], repeats, 0.0)
    print_table("seconds per gate run", ["start", "median", "best"], [
        ["bare (process group only)", seconds_text(bare_t.median), seconds_text(bare_t.best)],
        ["under the reaper (whole tree)", seconds_text(reaped_t.median), seconds_text(reaped_t.best)],
    ])
    print(f"reaper / bare: {ratio_text(reaped_t.median / bare_t.median)} "
          f"(+{(reaped_t.median - bare_t.median) * 1000:.0f} ms per run)")
