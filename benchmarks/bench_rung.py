"""Rung concurrency: three slow subprocess gates (each sleeps 0.5 s) on one rung vs the sum
of the same gates run one at a time, measured in the same run."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, ratio_text, seconds_text, target_text
from benchmarks.timing import time_once_each

SLEEP_SECONDS = 0.5
GATES = 3
# "Well under the sum": the rung should take little more than its slowest gate.
TARGET_RATIO = 0.6

SLEEPER = """import json, sys, time
sys.stdin.read()
time.sleep(float(sys.argv[1]))
print(json.dumps({"verdict": "pass"}))
"""


def rubric_text(script: Path, gates: int) -> str:
    cmd = json.dumps([sys.executable, str(script), str(SLEEP_SECONDS)])
    lines = "\n".join(f"  GATE subprocess CMD {cmd} TIMEOUT 30s" for _ in range(gates))
    return f"CHAIN c {{\n{lines}\n}}\n"


def rung_checker(folder: Path, gates: int):
    import admiss

    script = folder / "sleeper.py"
    script.write_text(SLEEPER)
    path = folder / f"rung{gates}.rubric"
    path.write_text(rubric_text(script, gates))
    rubric = admiss.load(path)

    def check() -> None:
        assert rubric.check({"output": "x"}).verdict == "pass"

    return check


def run(settings: Settings) -> None:
    print_section(f"rung: {GATES} subprocess gates sleeping {SLEEP_SECONDS} s on one rung vs one at a time")
    repeats = 3 if settings.quick else 5
    with tempfile.TemporaryDirectory() as tmp:
        three = rung_checker(Path(tmp), GATES)
        one = rung_checker(Path(tmp), 1)
        one()  # warm-up: lazy imports and the event loop
        rung = time_once_each([three] * repeats)
        single = time_once_each([one] * repeats)
    serial = GATES * single.median
    ratio = rung.median / serial
    print_table(
        "median seconds per check",
        ["what", "median", "best"],
        [
            [f"rung of {GATES} gates (concurrent)", seconds_text(rung.median), seconds_text(rung.best)],
            ["one gate alone", seconds_text(single.median), seconds_text(single.best)],
            [f"sum of {GATES} gates run alone", seconds_text(serial), seconds_text(GATES * single.best)],
        ],
    )
    print(f"rung / sum of its gates: {ratio_text(ratio)}")
    print(target_text(f"rung of {GATES} slow gates well under their sum (<= {TARGET_RATIO}x)",
                      ratio <= TARGET_RATIO, ratio_text(ratio)))
