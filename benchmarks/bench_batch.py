"""Batch checking: `admiss check --format json big.jsonl` vs the JSON I/O floor, --jobs, memory."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

from benchmarks import admiss_probe, datagen
from benchmarks.settings import Settings
from benchmarks.tables import bytes_text, print_section, print_table, rate_text, ratio_text, seconds_text, target_text
from benchmarks.timing import ProcessRun, Timing, installed_bytecode, run_process, time_process

PROPERTIES = 3
ITEMS = 6
FLOOR_SCRIPT = Path(__file__).with_name("json_floor.py")
TARGET_FLOOR_FRACTION = 0.5
# `admiss check --jobs 2` against plain one-process `admiss check` on two free cores (issue 25).
TARGET_JOBS_OVER_PLAIN = 1.5
# check_many(jobs=None) and check_many(jobs=2) are timed in this many back-to-back pairs.
IN_PROCESS_PAIRS = 3
# Peak RSS at 10× the input may grow by this much and still count as flat.
FLAT_MEMORY_TOLERANCE = 1.25


def line_count(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def admiss_check_command(rubric: Path, bundles: Path, *extra: str) -> list[str]:
    return [*admiss_probe.cli_command(), "check", "--rubric", str(rubric), "--format", "json", *extra, str(bundles)]


def complaints(runs: list[ProcessRun], output: Path, expected_lines: int) -> list[str]:
    """What went wrong in a batch run: a usage/input exit code, or reports missing from the output."""
    problems = [f"exit code {r.returncode}: {r.stderr.strip()[-500:]}" for r in runs if r.returncode not in (0, 1)]
    lines = line_count(output)
    if lines != expected_lines:
        problems.append(f"{lines} report lines for {expected_lines} bundles")
    return problems


def throughput_row(name: str, timing: Timing, bundles: int, floor: Timing, peak_rss: int | None) -> list[str]:
    return [
        name,
        seconds_text(timing.best),
        seconds_text(timing.median),
        rate_text(bundles / timing.median),
        ratio_text(floor.median / timing.median),
        bytes_text(peak_rss) if peak_rss else "",
    ]


def in_process_rows(rubric_props: list[datagen.PropertyData], bundles_path: Path, count: int) -> tuple[list[list[str]], list[str]]:
    """admiss.check_many (one process, and jobs=2) vs a loop of rubric.check over the same
    bundles already in memory (rows), and check_many(jobs=2) over one process (a line)."""
    if not admiss_probe.has_api("check_many"):
        return [["admiss.check_many (in process)", "not available", "", "", "", ""]], []
    with bundles_path.open(encoding="utf-8") as f:
        bundles = [json.loads(line) for line in islice(f, count)]
    rubric = admiss_probe.compiled(rubric_props)
    start = time.perf_counter()
    loop_reports = [rubric.check(b).to_dict() for b in bundles]
    loop_seconds = time.perf_counter() - start
    rows = [[f"loop of rubric.check().to_dict(), {count} bundles in memory", seconds_text(loop_seconds), "", rate_text(count / loop_seconds), "", ""]]
    pairs = []
    # Back-to-back pairs, as for --jobs: a pair's ratio shares the machine's load.
    for _ in range(IN_PROCESS_PAIRS):
        pair = {}
        for jobs in (None, 2):
            start = time.perf_counter()
            many_reports = [r.to_dict() for r in admiss_probe.api().check_many(rubric, bundles, jobs=jobs, chunk_size=256)]
            pair[jobs] = (time.perf_counter() - start, many_reports == loop_reports)
        pairs.append(pair)
    for jobs in (None, 2):
        seconds = statistics.median(pair[jobs][0] for pair in pairs)
        same = "same reports" if all(pair[jobs][1] for pair in pairs) else "REPORTS DIFFER"
        label = "admiss.check_many" + (f"(jobs={jobs})" if jobs else "")
        rows.append([f"{label}, same bundles ({same}), median of {len(pairs)}", seconds_text(seconds), "", rate_text(count / seconds), "", ""])
    ratios = [pair[None][0] / pair[2][0] for pair in pairs]
    line = (f"admiss.check_many(jobs=2) over one process (jobs=None), {count} bundles in memory, reports to_dict()'d: "
            f"{ratio_text(statistics.median(ratios))} by the median of {len(pairs)} back-to-back pairs "
            f"(pairs {', '.join(ratio_text(r) for r in ratios)})")
    return rows, [line]


def run(settings: Settings) -> None:
    print_section("batch: admiss check --format json over a JSONL file vs the JSON I/O floor")
    floor_library = "orjson" if importlib.util.find_spec("orjson") else "json (stdlib; install orjson for the real floor)"
    count, small_count = settings.batch_bundles, settings.batch_bundles // 10
    props = datagen.properties(PROPERTIES)
    with tempfile.TemporaryDirectory(prefix="admiss-bench-") as tmp, installed_bytecode(Path(tmp)):
        folder = Path(tmp)
        rubric = folder / "batch.rubric"
        rubric.write_text(datagen.rubric_source(props, "batch"), encoding="utf-8")
        big, small, out = folder / "big.jsonl", folder / "small.jsonl", folder / "out.jsonl"
        datagen.write_jsonl(big, datagen.targeted_bundles(count, ITEMS, props))
        datagen.write_jsonl(small, datagen.targeted_bundles(small_count, ITEMS, props))
        print(f"{count} bundles ({PROPERTIES} properties, {ITEMS} items each, {bytes_text(big.stat().st_size)}); floor library: {floor_library}")
        print("every run's bytecode cached (in the run's folder), as an installed admiss has it; cached by untimed runs first\n")
        warm_up(rubric, small, folder)

        floor, _ = time_process([sys.executable, str(FLOOR_SCRIPT), str(big)], settings.batch_repeats, stdout=out)
        rows = [throughput_row("JSON I/O floor (parse + serialise)", floor, count, floor, None)]
        lines = []
        if admiss_probe.cli_command() is None:
            rows.append(["admiss check", "not available", "", "", "", ""])
            lines.append(target_text(f"throughput ≥ {TARGET_FLOOR_FRACTION:g} of the floor", None, "the admiss CLI is not available"))
        else:
            timing, runs = time_process(admiss_check_command(rubric, big), settings.batch_repeats, stdout=out)
            problems = complaints(runs, out, count)
            peak_big = max(r.max_rss for r in runs)
            rows.append(throughput_row("admiss check --format json", timing, count, floor, peak_big))
            fraction = floor.median / timing.median
            lines.append(target_text(f"throughput ≥ {TARGET_FLOOR_FRACTION:g} of the floor", fraction >= TARGET_FLOOR_FRACTION, f"{fraction:.2f} of the floor by median"))
            lines += jobs_lines(rows, rubric, big, out, count, floor, settings, (timing, runs))
            if settings.baseline_admiss:
                lines += baseline_lines(rows, rubric, big, out, count, floor, settings)
            lines.append(memory_line(rubric, small, small_count, count, peak_big, folder))
            for problem in problems:
                print(f"!!! PROBLEM in the batch run: {problem}")
        in_rows, in_lines = in_process_rows(props, big, min(count, 10_000))
        rows += in_rows
        lines += in_lines
    print_table(
        "Whole run as a subprocess, output to a file; ratio = floor time / run time (the floor's throughput is 1.00×)",
        ["run", "best", "median", "bundles/s", "ratio to floor", "peak RSS"],
        rows,
    )
    print("\n".join(lines), end="\n\n")


def jobs_lines(rows: list[list[str]], rubric: Path, big: Path, out: Path, count: int, floor: Timing, settings: Settings,
               plain: tuple[Timing, list[ProcessRun]]) -> list[str]:
    """Time --jobs 1 and --jobs 2 (adding their rows) and say how --jobs scales, against
    --jobs 1 and against ``plain`` (the timing and runs of plain one-process `admiss check`)."""
    if not admiss_probe.cli_supports("--jobs"):
        rows.append(["admiss check --jobs N", "not available", "", "", "", ""])
        return [target_text("--jobs scales near-linearly", None, "--jobs is not available")]
    timings, outputs, cpu = {}, {}, {}
    for jobs in (1, 2):
        timing, runs = time_process(admiss_check_command(rubric, big, "--jobs", str(jobs)), settings.batch_repeats, stdout=out)
        cpu[jobs] = Timing(tuple(r.cpu_seconds for r in runs)).median
        for problem in complaints(runs, out, count):
            print(f"!!! PROBLEM in the --jobs {jobs} run: {problem}")
        timings[jobs] = timing
        # Hashed in pieces: reading the output whole would grow this process by its size,
        # and on Linux a child started later reports this process's peak as its own.
        with out.open("rb") as written:
            outputs[jobs] = hashlib.file_digest(written, "sha256").hexdigest()
        rows.append(throughput_row(f"admiss check --jobs {jobs}", timing, count, floor, max(r.max_rss for r in runs)))
    scaling = timings[1].median / timings[2].median
    same = outputs[1] == outputs[2]
    if not same:
        print("!!! PROBLEM: --jobs 2 output differs from --jobs 1")
    plain_cpu = Timing(tuple(r.cpu_seconds for r in plain[1])).median
    pairs = paired_runs(admiss_check_command(rubric, big), admiss_check_command(rubric, big, "--jobs", "2"),
                        settings.batch_repeats + 2, out, count)
    over_plain = statistics.median(a.seconds / b.seconds for a, b in pairs)
    plain_median = statistics.median(a.seconds for a, _ in pairs)
    jobs_median = statistics.median(b.seconds for _, b in pairs)
    return [target_text("--jobs 2 near-linear (≥ 1.7× --jobs 1), byte-identical", scaling >= 1.7 and same,
                        f"--jobs 2 is {ratio_text(scaling)} --jobs 1 by median; "
                        f"output {'byte-identical' if same else 'DIFFERS'}"),
            target_text(f"--jobs 2 ≥ {TARGET_JOBS_OVER_PLAIN:g}× plain one-process admiss check", over_plain >= TARGET_JOBS_OVER_PLAIN,
                        f"--jobs 2 is {ratio_text(over_plain)} plain admiss check, the median of {len(pairs)} "
                        f"back-to-back pairs' ratios (pairs {', '.join(ratio_text(a.seconds / b.seconds) for a, b in pairs)}; "
                        f"medians {seconds_text(plain_median)} → {seconds_text(jobs_median)}); CPU, all processes: "
                        f"plain {seconds_text(plain_cpu)}, --jobs 2 {seconds_text(cpu[2])} ({ratio_text(cpu[2] / plain_cpu)})")]


def paired_runs(first: list[str], second: list[str], repeats: int, out: Path, count: int) -> list[tuple[ProcessRun, ProcessRun]]:
    """``repeats`` pairs of runs of ``first`` then ``second``, back to back: a pair's ratio
    shares the machine's load of its seconds, where two medians of runs taken minutes apart
    (the rows above, three runs each) moved by a third between runs on a quiet machine."""
    pairs = []
    for _ in range(repeats):
        pair = []
        for command in (first, second):
            pair.append(run_process(command, stdout=out))
            for problem in complaints(pair[-1:], out, count):
                print(f"!!! PROBLEM in a paired run: {problem}")
        pairs.append((pair[0], pair[1]))
    return pairs


def baseline_lines(rows: list[list[str]], rubric: Path, big: Path, out: Path, count: int, floor: Timing,
                   settings: Settings) -> list[str]:
    """--jobs 1 and 2 of this checkout and of the baseline's `admiss`, interleaved repeat by
    repeat (so load that comes and goes falls on both alike); the speed-ups and their ratio."""
    commands = {(who, jobs): [*command, "check", "--rubric", str(rubric), "--format", "json", "--jobs", str(jobs), str(big)]
                for who, command in (("this", admiss_probe.cli_command()), ("baseline", (settings.baseline_admiss,)))
                for jobs in (1, 2)}
    samples: dict[tuple[str, int], list[float]] = {key: [] for key in commands}
    cpu: dict[tuple[str, int], list[float]] = {key: [] for key in commands}
    digests = {}
    for _ in range(settings.batch_repeats):
        for key, command in commands.items():
            run = run_process(command, stdout=out)
            for problem in complaints([run], out, count):
                print(f"!!! PROBLEM in the {key[0]} --jobs {key[1]} run: {problem}")
            samples[key].append(run.seconds)
            cpu[key].append(run.cpu_seconds)
            with out.open("rb") as written:
                digests[key] = hashlib.file_digest(written, "sha256").hexdigest()
    timings = {key: Timing(tuple(taken)) for key, taken in samples.items()}
    for (who, jobs), timing in timings.items():
        rows.append(throughput_row(f"{who} admiss check --jobs {jobs} (interleaved)", timing, count, floor, None))
    speedup = {who: timings[(who, 1)].median / timings[(who, 2)].median for who in ("this", "baseline")}
    # CPU time does not wait for a busy core: two jobs' CPU over one's bounds the speed-up
    # two free cores could give (2 / that ratio), whatever the load during the run.
    cpu_cost = {who: Timing(tuple(cpu[(who, 2)])).median / Timing(tuple(cpu[(who, 1)])).median
                for who in ("this", "baseline")}
    same = len(set(digests.values())) == 1
    return [f"--jobs 2 speed-up over --jobs 1: this checkout {ratio_text(speedup['this'])}, baseline "
            f"{ratio_text(speedup['baseline'])}; this / baseline {speedup['this'] / speedup['baseline']:.2f}; "
            f"--jobs 2 wall this / baseline {timings[('this', 2)].median / timings[('baseline', 2)].median:.2f}; "
            f"outputs {'byte-identical' if same else 'DIFFER'}",
            f"CPU of --jobs 2 over --jobs 1 (all processes): this checkout {ratio_text(cpu_cost['this'])}, "
            f"baseline {ratio_text(cpu_cost['baseline'])} (two free cores could give at most "
            f"{ratio_text(2 / cpu_cost['this'])} and {ratio_text(2 / cpu_cost['baseline'])})",
            target_text("--jobs 2 at least the baseline's speed-up over --jobs 1 (within 5%)",
                        speedup["this"] >= 0.95 * speedup["baseline"] and same,
                        f"{ratio_text(speedup['this'])} vs {ratio_text(speedup['baseline'])}")]


def warm_up(rubric: Path, small: Path, folder: Path) -> None:
    """One untimed run of each kind over the small file: it writes the bytecode caches of
    the modules that plain `admiss check`, its --jobs parent and its workers import."""
    if admiss_probe.cli_command() is None:
        return
    for extra in ((), ("--jobs", "2")) if admiss_probe.cli_supports("--jobs") else ((),):
        run_process(admiss_check_command(rubric, small, *extra), stdout=folder / "warm-up.jsonl")


def memory_line(rubric: Path, small: Path, small_count: int, count: int, peak_big: int, folder: Path) -> str:
    """Peak RSS of a run over a tenth of the bundles, against the full run's."""
    run_small = run_process(admiss_check_command(rubric, small), stdout=folder / "small-out.jsonl")
    growth = peak_big / run_small.max_rss
    detail = f"peak RSS {bytes_text(run_small.max_rss)} for {small_count} bundles, {bytes_text(peak_big)} for {count}: {ratio_text(growth)}"
    return target_text("memory flat in the input size", growth <= FLAT_MEMORY_TOLERANCE, detail)
