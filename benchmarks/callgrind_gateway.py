"""Instructions per agent request in one process, counted by callgrind: an on-demand tool.

    python benchmarks/callgrind_gateway.py [--count 150] [--warm-up 100] [CHECKOUT ...]

Each CHECKOUT (default: this one) is run in a process of its own under ``valgrind
--tool=callgrind --dump-before=os_sched_yield`` with ``PYTHONPATH=CHECKOUT``, so that it
imports that checkout's admiss and benchmarks: the process serves ``--warm-up`` requests of
each kind (bench_gateway_cpu's in-process path: the wire module reads the body, the router
runs it against fake_upstream.py, the receipt is committed, the answer written), then
``--count`` of each kind between two ``os.sched_yield()`` marks, each of which starts a new
dump. The instructions of a kind's stretch over ``--count`` are printed, per checkout.
Instruction counts do not move with the host's load, as CPU time does; the upstream's own
work is in its own process, which is not counted. The dumps are kept in ``--out`` for
callgrind_annotate (the stretch of kind k is part ``k + 2`` of the process's dumps).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

KINDS = ("agent", "agent_messages")
_TOTALS = re.compile(r"^(?:totals|summary): (\d+)$", re.MULTILINE)


def serve(warm_up: int, count: int) -> None:
    """The measured process: warm up on each kind, then each kind's ``count`` requests
    between two marks (a mark is a call of os.sched_yield, which callgrind dumps before)."""
    from benchmarks import bench_gateway, bench_gateway_cpu

    async def requests(routers: dict) -> None:
        for kind in KINDS:
            await bench_gateway_cpu._cpu_ms(routers, kind, warm_up)
        bodies = {kind: bench_gateway_cpu._bodies(kind, count) for kind in KINDS}
        for kind in KINDS:
            os.sched_yield()
            for raw in bodies[kind]:
                await bench_gateway_cpu._one(routers, kind, raw)
        os.sched_yield()
        for router in routers.values():
            await router.aclose()

    upstream, port = bench_gateway._start_upstream(0.0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            routers = bench_gateway_cpu._routers(Path(tmp), port)
            try:
                asyncio.run(requests(routers))
            finally:
                next(iter(routers.values())).store.close()
    finally:
        bench_gateway._stop(upstream)


def counted(checkout: Path, warm_up: int, count: int, out: Path) -> dict[str, float]:
    """Instructions per request of each kind in ``checkout``, from its callgrind dumps."""
    prefix = out / f"callgrind.{checkout.name}"
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONPYCACHEPREFIX": tempfile.mkdtemp()}
    subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=os_sched_yield", f"--callgrind-out-file={prefix}",
                    sys.executable, __file__, "--serve", str(warm_up), str(count)], env=env, check=True,
                   capture_output=True)
    # Parts: 1 up to the first mark (the start and the warm-up), then one per kind, then the end.
    parts = sorted(out.glob(f"{prefix.name}.*"), key=lambda p: int(p.suffix[1:]))
    return {kind: int(_TOTALS.search(parts[index + 1].read_text()).group(1)) / count
            for index, kind in enumerate(KINDS)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkouts", nargs="*", type=Path, help="checkouts to count (default: this one)")
    parser.add_argument("--count", type=int, default=150, help="requests of each kind counted (default 150)")
    parser.add_argument("--warm-up", type=int, default=100, help="requests of each kind before (default 100)")
    parser.add_argument("--out", type=Path, help="folder for the callgrind dumps (default: a new temporary one)")
    parser.add_argument("--serve", nargs=2, type=int, metavar=("WARM_UP", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(*args.serve)
        return
    out = args.out or Path(tempfile.mkdtemp(prefix="callgrind-gateway-"))
    out.mkdir(parents=True, exist_ok=True)
    checkouts = args.checkouts or [Path(__file__).resolve().parent.parent]
    print(f"instructions per request, {args.count} of each kind after {args.warm_up} to warm up (dumps in {out})")
    for checkout in checkouts:
        figures = counted(checkout.resolve(), args.warm_up, args.count, out)
        print(f"{checkout}: " + ", ".join(f"{kind} {figures[kind] / 1000:,.0f} K" for kind in KINDS))


if __name__ == "__main__":
    main()
