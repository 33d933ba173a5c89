"""A gateway fleet under load with its database restarted: two ``admiss serve`` replicas on
one PostgreSQL (a real server on this machine, fsync on), 2,000 chat requests at
concurrency 50 spread over both, and the database stopped (as abruptly as a crash) for
DOWN_S once the first third is answered, then started again.

A client of a fleet retries a refused request (a load balancer or the application does):
each request here is sent until it is answered 200, after 50 ms on a 503. What is counted:
the 200s, the 503s (each a request refused because its receipt could not be committed),
anything else (there should be nothing else), and whether every response served has its
receipt in the store afterwards. The replicas are never restarted. ``--quick`` sends 500.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.bench_gateway import (CONCURRENCY, KEY, MESSAGES, _receipts, _start_gateway, _start_upstream, _stop,
                                      postgres_server)
from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, target_text

REQUESTS = 2000
DOWN_S = 2.0
RETRY_AFTER_S = 0.05


def run(settings: Settings) -> None:
    total = 500 if settings.quick else REQUESTS
    print_section(f"a fleet: 2 replicas on one PostgreSQL, {total} requests at concurrency {CONCURRENCY}, the "
                  f"database stopped for {DOWN_S:g} s once a third are answered")
    server = postgres_server()
    url = server.database()
    upstream, upstream_port = _start_upstream(0.1, 0.025)
    folders = [tempfile.TemporaryDirectory() for _ in range(2)]
    replicas = [_start_gateway(Path(folder.name), upstream_port, 1, "admiss's pool", store=url) for folder in folders]
    try:
        counts, served, seconds, recovered_s = asyncio.run(_drive([port for _, port in replicas], total, server))
        pids_alive = all(process.poll() is None for process, _ in replicas)
    finally:
        for process, _ in replicas:
            _stop(process)
        _stop(upstream)
    stored = {receipt["id"] for receipt in _receipts(url)}
    server.close()
    for folder in folders:
        folder.cleanup()
    missing = len(served - stored)
    print_table("outcomes", ["requests", "served (200)", "refused (503, retried)", "other", "receipts stored",
                             "served without a stored receipt", "seconds"],
                [[str(total), str(len(served)), str(counts[503]), str(counts["other"]), str(len(stored)), str(missing),
                  f"{seconds:.1f}"]])
    print(f"first 200 after the database came back: {recovered_s:.2f} s after its start; both replicas still the "
          f"processes they started as: {pids_alive}")
    print(target_text("every request served, each with its receipt, replicas never restarted",
                      len(served) == total and missing == 0 and counts["other"] == 0 and pids_alive,
                      f"{len(served)} served, {missing} without a receipt"))


async def _drive(ports: list[int], total: int, server) -> tuple[dict, set[str], float, float]:
    counts = {503: 0, "other": 0}
    served: set[str] = set()
    queue = list(range(total))
    back_at: list[float] = []
    first_after: list[float] = []
    body = {"model": "bench", "messages": MESSAGES}
    limits = httpx.Limits(max_connections=CONCURRENCY)
    clients = [httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=60,
                                 headers={"authorization": f"Bearer {KEY}"}) for port in ports]

    async def one(index: int) -> None:
        attempt = 0
        while True:
            client = clients[(index + attempt) % len(clients)]
            attempt += 1
            try:
                reply = await client.post("/v1/chat/completions", json=body)
            except httpx.TransportError:
                counts["other"] += 1
                await asyncio.sleep(RETRY_AFTER_S)
                continue
            if reply.status_code == 200:
                served.add(reply.headers["x-admiss-receipt-id"])
                if back_at and not first_after:
                    first_after.append(time.monotonic() - back_at[0])
                return
            counts[503 if reply.status_code == 503 else "other"] += 1
            await asyncio.sleep(RETRY_AFTER_S)

    async def worker() -> None:
        while queue:
            await one(queue.pop())

    async def restart() -> None:
        while len(served) < total // 3:
            await asyncio.sleep(0.01)
        await asyncio.to_thread(server.stop, "immediate")
        await asyncio.sleep(DOWN_S)
        await asyncio.to_thread(server.start)
        back_at.append(time.monotonic())

    started = time.monotonic()
    await asyncio.gather(restart(), *(worker() for _ in range(CONCURRENCY)))
    seconds = time.monotonic() - started
    for client in clients:
        await client.aclose()
    return counts, served, seconds, first_after[0] if first_after else float("nan")
