"""Ray: admiss.ray.check_dataset with two actors against one, on the same local data."""

from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path

from benchmarks import datagen
from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, rate_text, ratio_text, seconds_text, target_text

TARGET_SCALING = 1.6
PROPERTIES, ITEMS = 3, 6


def run(settings: Settings) -> None:
    print_section("ray: admiss.ray.check_dataset, 2 actors vs 1, on a local Ray instance (num_cpus=2)")
    try:
        import ray

        from admiss.ray import check_dataset
    except ModuleNotFoundError as missing:
        print(f"not available: {missing.name} is not installed (pip install 'admiss[ray]')")
        print(target_text(f"Ray 2 workers ≥ {TARGET_SCALING:g}× one", None, "ray is not installed"), end="\n\n")
        return
    count = settings.batch_bundles // 5
    props = datagen.properties(PROPERTIES)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             _node_ip_address="127.0.0.1")  # loopback only
    try:
        with tempfile.TemporaryDirectory(prefix="admiss-bench-ray-") as tmp:
            folder = Path(tmp)
            rubric = folder / "batch.rubric"
            rubric.write_text(datagen.rubric_source(props, "batch"), encoding="utf-8")
            data = folder / "bundles.jsonl"
            datagen.write_jsonl(data, datagen.targeted_bundles(count, ITEMS, props))
            check_dataset([str(data)], rubric, folder / "warm-up", concurrency=1)  # workers and imports warm
            timings, digests = {}, {}
            for actors in (1, 2, 1, 2)[: 2 if settings.quick else 4]:
                out = folder / f"out-{actors}"
                start = time.perf_counter()
                check_dataset([str(data)], rubric, out, concurrency=actors)
                timings.setdefault(actors, []).append(time.perf_counter() - start)
                digests[actors] = hashlib.sha256((out / "reports.jsonl").read_bytes()).hexdigest()
    finally:
        ray.shutdown()
    best = {actors: min(seconds) for actors, seconds in timings.items()}
    rows = [[f"{actors} actor{'s' if actors > 1 else ''}", seconds_text(best[actors]), rate_text(count / best[actors]),
             ratio_text(best[1] / best[actors])] for actors in sorted(best)]
    print_table(f"{count} bundles ({PROPERTIES} properties, {ITEMS} items); best of the runs; ratio = 1 actor / n",
                ["run", "seconds", "bundles/s", "ratio"], rows)
    same = digests[1] == digests[2]
    scaling = best[1] / best[2]
    print(target_text(f"Ray 2 workers ≥ {TARGET_SCALING:g}× one, identical reports", scaling >= TARGET_SCALING and same,
                      f"{ratio_text(scaling)}; reports {'identical' if same else 'DIFFER'}"), end="\n\n")
