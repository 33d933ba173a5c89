"""Ray: ``admiss check --ray local`` against one process (``admiss check --format json``),
both as subprocesses on the same files, interleaved, at several sizes (``--ray-sizes``);
Ray's start-up and stop timed alone, the throughput of one actor, and the break-even size.

Timings on the shared two-core machine are noisy: each comparison is run several times,
interleaved, and reported by median with the load average around it.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import admiss_probe, datagen
from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, rate_text, ratio_text, seconds_text, target_text
from benchmarks.timing import run_process

TARGET_RATIO, TARGET_SIZE = 1.3, 200_000
PROPERTIES, ITEMS = 3, 6
# Run by a subprocess: Ray's start-up (import, ray.init, two actors that have imported
# admiss and answered once) and its stop, each timed alone, as `--ray local` pays them.
_STARTUP_PROBE = """
import json, sys, time
start = time.perf_counter()
import ray
imported = time.perf_counter()
ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False, _node_ip_address="127.0.0.1")
started = time.perf_counter()
class Probe:
    def ready(self):
        import admiss.ray
        return 1
actors = [ray.remote(num_cpus=1)(Probe).remote() for _ in range(2)]
ray.get([actor.ready.remote() for actor in actors])
ready = time.perf_counter()
ray.shutdown()
print(json.dumps({"import": imported - start, "init": started - imported, "actors": ready - started,
                  "shutdown": time.perf_counter() - ready}))
"""


def _load() -> float:
    return os.getloadavg()[0]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _compare(folder: Path, count: int, repeats: int) -> dict:
    """Median seconds of each mode over ``repeats`` interleaved runs, whether the reports
    were identical every time, and the load averages seen."""
    rubric = folder / "batch.rubric"
    data = folder / f"bundles-{count}.jsonl"
    datagen.write_jsonl(data, datagen.targeted_bundles(count, ITEMS, datagen.properties(PROPERTIES)))
    cli = admiss_probe.cli_command()
    single_out, ray_out = folder / "single.jsonl", folder / "ray-out"
    seconds: dict[str, list[float]] = {"one process": [], "--ray local": []}
    cpu: list[float] = []  # the one process's CPU-seconds: robust to the machine's load, unlike its wall time
    loads, same = [_load()], True
    for _ in range(repeats):
        single = run_process([*cli, "check", "--rubric", str(rubric), "--format", "json", str(data)], stdout=single_out)
        seconds["one process"].append(single.seconds)
        cpu.append(single.cpu_seconds)
        ray = run_process([*cli, "check", "--ray", "local", "--rubric", str(rubric), "-o", str(ray_out), str(data)])
        seconds["--ray local"].append(ray.seconds)
        if ray.returncode == 2 or single.returncode == 2:
            raise RuntimeError(f"a run failed: {ray.stderr or single.stderr}")
        same = same and _digest(single_out) == _digest(ray_out / "reports.jsonl")
        loads.append(_load())
    data.unlink()
    return {"count": count, "median": {mode: statistics.median(s) for mode, s in seconds.items()},
            "samples": seconds, "same": same, "loads": loads, "cpu": statistics.median(cpu)}


def _startup(repeats: int) -> dict[str, float]:
    """Median seconds of each part of Ray's start and stop."""
    runs = [json.loads(subprocess.run([sys.executable, "-c", _STARTUP_PROBE], capture_output=True, text=True,
                                      timeout=600, check=True).stdout) for _ in range(repeats)]
    return {part: statistics.median(run[part] for run in runs) for part in runs[0]}


def _per_actor(folder: Path, count: int) -> tuple[float, float]:
    """Bundles per second of one actor and of two, on a Ray already started (the driver
    checks none), so Ray's own cost per bundle is known apart from its start-up: each run
    starts its own actors, so the rate is ``count`` over the time a run of twice ``count``
    bundles takes more than a run of ``count``."""
    import ray

    from admiss.ray import check_dataset

    files = []
    for size in (count, 2 * count):
        files.append(folder / f"per-actor-{size}.jsonl")
        datagen.write_jsonl(files[-1], datagen.targeted_bundles(size, ITEMS, datagen.properties(PROPERTIES)))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             _node_ip_address="127.0.0.1")  # loopback only
    try:
        rates = []
        for actors in (1, 2):
            seconds = []
            for data in files:
                start = time.perf_counter()
                check_dataset([str(data)], folder / "batch.rubric", folder / "per-actor", concurrency=actors,
                              check_while_starting=False)
                seconds.append(time.perf_counter() - start)
            rates.append(count / max(seconds[1] - seconds[0], 1e-9))
    finally:
        ray.shutdown()
    return rates[0], rates[1]


def _fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Seconds = fixed + per_bundle × bundles, through the smallest and largest size."""
    (n0, t0), (n1, t1) = points[0], points[-1]
    per_bundle = (t1 - t0) / (n1 - n0)
    return t0 - per_bundle * n0, per_bundle


def _break_even(results: list[dict]) -> tuple[float | None, tuple[float, float], tuple[float, float]]:
    single = _fit([(r["count"], r["median"]["one process"]) for r in results])
    on_ray = _fit([(r["count"], r["median"]["--ray local"]) for r in results])
    saved_per_bundle = single[1] - on_ray[1]
    size = (on_ray[0] - single[0]) / saved_per_bundle if saved_per_bundle > 0 else None
    return size, single, on_ray


def run(settings: Settings) -> None:
    print_section("ray: admiss check --ray local vs one process, as subprocesses on the same files")
    try:
        import ray  # noqa: F401
    except ModuleNotFoundError as missing:
        print(f"not available: {missing.name} is not installed (pip install 'admiss[ray]')")
        print(target_text(f"--ray local ≥ {TARGET_RATIO:g}× one process at {TARGET_SIZE:,}", None,
                          "ray is not installed"), end="\n\n")
        return
    # The break-even size is fitted through two sizes: one size given gets a quarter of it too.
    sizes = sorted(set(settings.ray_sizes) | ({settings.ray_sizes[0] // 4} if len(settings.ray_sizes) == 1 else set()))
    repeats = 2 if settings.quick else 3
    with tempfile.TemporaryDirectory(prefix="admiss-bench-ray-") as tmp:
        folder = Path(tmp)
        (folder / "batch.rubric").write_text(datagen.rubric_source(datagen.properties(PROPERTIES), "batch"))
        startup = _startup(repeats)
        one, two = _per_actor(folder, min(sizes[0], 50_000))
        results = [_compare(folder, count, repeats) for count in sizes]
    print_table(f"Ray's start and stop alone (median of {repeats}; two actors that imported admiss)",
                ["part", "seconds"], [[part, seconds_text(s)] for part, s in startup.items()]
                + [["all", seconds_text(sum(startup.values()))]])
    print_table("Throughput on a started Ray, the driver checking none",
                ["actors", "bundles/s", "per actor"], [["1", rate_text(one), rate_text(one)],
                                                         ["2", rate_text(two), rate_text(two / 2)]])
    rows = []
    for r in results:
        single, on_ray = r["median"]["one process"], r["median"]["--ray local"]
        rows.append([f"{r['count']:,}", seconds_text(single), seconds_text(r["cpu"]), seconds_text(on_ray),
                     ratio_text(single / on_ray),
                     rate_text(r["count"] / on_ray), "identical" if r["same"] else "DIFFER",
                     " ".join(f"{load:.1f}" for load in r["loads"])])
    print_table(f"{PROPERTIES} properties, {ITEMS} items a bundle; median of {repeats} interleaved runs each; "
                "ratio = one process / --ray local",
                ["bundles", "one process", "its CPU", "--ray local", "ratio", "bundles/s on Ray", "reports", "load average"],
                rows)
    size, single, on_ray = _break_even(results)
    if single is not None:
        print(f"fit: one process {single[0]:.2f} s + {single[1] * 1e6:.1f} µs a bundle; "
              f"--ray local {on_ray[0]:.2f} s + {on_ray[1] * 1e6:.1f} µs a bundle")
        print(f"break-even size: {f'{size:,.0f} bundles' if size is not None else 'none (Ray costs more per bundle)'}")
    at_target = [r for r in results if r["count"] == TARGET_SIZE]
    if at_target:
        ratio = at_target[0]["median"]["one process"] / at_target[0]["median"]["--ray local"]
        print(target_text(f"--ray local ≥ {TARGET_RATIO:g}× one process at {TARGET_SIZE:,}, identical reports",
                          ratio >= TARGET_RATIO and at_target[0]["same"],
                          f"{ratio_text(ratio)} by median; load average {at_target[0]['loads'][0]:.1f}"), end="\n\n")
    else:
        print(target_text(f"--ray local ≥ {TARGET_RATIO:g}× one process at {TARGET_SIZE:,}", None,
                          f"{TARGET_SIZE:,} not among the sizes run (--ray-sizes)"), end="\n\n")
