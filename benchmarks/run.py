"""Run the admiss benchmarks: ``python benchmarks/run.py [--quick] [--only NAME ...]``."""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import time
from pathlib import Path

# Run as a script, the repository root is not on the path; the sections import each
# other as the ``benchmarks`` package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import (  # noqa: E402
    bench_batch, bench_compile, bench_fleet, bench_gateway, bench_gateway_cpu, bench_inprocess, bench_lsp, bench_otel,
    bench_parse,
    bench_peers, bench_ray, bench_rich,
    bench_reaper, bench_receipt_commit, bench_rung, bench_startup, bench_trace_read, bench_traces,
)
from benchmarks.settings import settings_for  # noqa: E402

SECTIONS = {
    "inprocess": bench_inprocess.run,
    "peers": bench_peers.run,
    "batch": bench_batch.run,
    "startup": bench_startup.run,
    "compile": bench_compile.run,
    "rung": bench_rung.run,
    "reaper": bench_reaper.run,
    "ray": bench_ray.run,
    "trace_read": bench_trace_read.run,
    "traces": bench_traces.run,
    "gateway": bench_gateway.run,
    "gateway_agents": bench_gateway.run_agents,
    "gateway_postgres": bench_gateway.run_postgres,
    "receipt_commit": bench_receipt_commit.run,
    "fleet": bench_fleet.run,
    "gateway_cpu": bench_gateway_cpu.run,
    "rich": bench_rich.run,
    "parse": bench_parse.run,
    "otel": bench_otel.run,
    "lsp": bench_lsp.run,
}


def parsed_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and 10k instead of 100k batch bundles")
    parser.add_argument("--only", action="append", choices=sorted(SECTIONS), metavar="NAME", help=f"run only this section (repeatable): {', '.join(SECTIONS)}")
    parser.add_argument("--baseline-admiss", metavar="PATH", help="the admiss command of another checkout (main's, "
                        "say): the batch section times its --jobs 1 and 2 beside this checkout's, interleaved; "
                        "gateway_agents serves with it beside this checkout's gateway, in the same rounds; gateway_cpu measures "
                        "it in turns with this checkout")
    parser.add_argument("--ray-sizes", metavar="N,N,...", type=lambda text: tuple(int(n) for n in text.split(",")),
                        help="bundle counts the ray section compares at (default 100000,1000000,5000000; "
                        "quick 10000,100000)")
    return parser.parse_args(argv)


def machine_line() -> str:
    return f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; {sys.executable}"


def load_text() -> str:
    # Other work on the machine moves every absolute figure; the load says how much.
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


def main(argv: list[str] | None = None) -> None:
    args = parsed_arguments(argv)
    settings = dataclasses.replace(settings_for(args.quick), baseline_admiss=args.baseline_admiss)
    if args.ray_sizes:
        settings = dataclasses.replace(settings, ray_sizes=args.ray_sizes)
    print(f"admiss benchmarks ({'quick' if args.quick else 'full'} run) — {machine_line()}; {load_text()}\n")
    for name in args.only or SECTIONS:
        start = time.perf_counter()
        SECTIONS[name](settings)
        print(f"({name} took {time.perf_counter() - start:.1f} s; {load_text()})\n", flush=True)


if __name__ == "__main__":
    main()
