"""A receipt's commit by itself, one at a time: what the gateway's loop and the database's
server spend on it, and how long the request waits, SQLite's writer against PostgreSQL's.

One process, one event loop (uvloop, as ``admiss serve`` runs), no HTTP: a receipt the
gateway wrote (a served request's) is put through each writer in turn, in rounds of
ROUND receipts, each round in another order. Per commit:

- the loop thread's CPU (``time.thread_time``: the gateway's own cost, which on a loaded
  machine is what bounds its throughput),
- the PostgreSQL server backend's CPU (``/proc/PID/schedstat`` of the writer connection's
  backend: the same cores serve it here),
- the wall time of ``await writer.put(receipt)``: how long a request waits for its commit,
  median and mean (the mean carries the waits for a core, which on a loaded machine are
  most of it; see the load printed).

Beside the writers, the writer's batch statement run through psycopg's cursor (``await
conn.execute``), as the writer did before it drove libpq itself: the reference for what
the writer's own path saves. The SQLite writer is the baseline of the ratios.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Awaitable, Callable

from benchmarks import bench_gateway
from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, ratio_text

ROUND = 300
SQLITE, POSTGRES, CURSOR = "SQLite writer", "PostgreSQL writer", "PostgreSQL, psycopg's cursor"
# A served request's receipt, as the gateway of bench_gateway.py writes it (1 kB of JSON).
RECEIPT = {
    "request_id": "chatcmpl-877ca501765f2b363e51ec3f", "created_at": "2026-12-01T17:56:37.708Z",
    "chain": {"name": "bench", "served": "cheap", "rungs": [
        {"rung": "cheap", "model": "fake/cheap", "cost_usd": 0.0, "outcome": "served", "gates": [
            {"gate": gate, "verdict": "pass", "effective": "pass", "score": None, "reason": "", "duration_ms": 0.05,
             "gate_cost_usd": 0.0, "disabled": False, "fault": None} for gate in ("non_empty", "json_valid")]}],
        "model_cost_usd": 0.0, "gate_cost_usd": 0.0, "top_rung": {"rung": "strong", "model": "fake/strong",
                                                                  "cost_usd": None}},
    "usage": [{"rung": "cheap", "model": "fake/cheap", "purpose": "rung", "prompt_tokens": 12,
               "completion_tokens": 5, "cost_usd": 0.0}],
    "latency_ms": {"cheap": 1.472}, "total_latency_ms": 1.572, "top_rung": {"rung": "strong", "model": "fake/strong"},
    "model_errors": [], "flags": [],
}


def _backend_cpu_ns(pid: int | None) -> int:
    """The CPU time process ``pid`` has used, in ns (0 when there is none to read)."""
    if pid is None:
        return 0
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def run(settings: Settings) -> None:
    rounds = 4 if settings.quick else 8
    server = bench_gateway.postgres_server()
    try:
        url = server.database()
        with tempfile.TemporaryDirectory() as tmp:
            import uvloop

            uvloop.run(_measure(url, Path(tmp) / "receipts.db", rounds))
    finally:
        server.close()


async def _measure(url: str, sqlite_path: Path, rounds: int) -> None:
    import psycopg

    from admiss.receipts import open_writer, postgres
    from admiss.receipts.store import receipt_row

    print_section(f"a receipt's commit, one at a time: {rounds} rounds of {ROUND} per way, each round in another "
                  "order (fsync on; the server on the same cores)")
    numbers = iter(range(10**9))

    def receipt() -> dict:
        return {"id": f"rcpt_{next(numbers):024x}", **RECEIPT}

    sqlite_writer, pg_writer = open_writer(sqlite_path), open_writer(url)
    await pg_writer.put(receipt())  # connects, so that its backend is known
    cursor_conn = await psycopg.AsyncConnection.connect(url, autocommit=True,
                                                        options="-c synchronous_commit=off")

    async def through_cursor(one: dict) -> None:
        params = [text.decode() for text in postgres._batch([receipt_row(one)])]
        await (await cursor_conn.execute(postgres._INSERT, params)).fetchone()

    ways: dict[str, tuple[Callable[[dict], Awaitable[None]], int | None]] = {
        SQLITE: (sqlite_writer.put, None),
        POSTGRES: (pg_writer.put, pg_writer._conn.info.backend_pid),
        CURSOR: (through_cursor, cursor_conn.info.backend_pid),
    }
    for put, _ in ways.values():  # warm-up: pages, prepared statements
        for _ in range(50):
            await put(receipt())
    figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in ways}
    names = list(ways)
    loads = [os.getloadavg()[0]]
    for index in range(rounds):
        for name in names[index % len(names):] + names[:index % len(names)]:
            figures[name].append(await _round(*ways[name], receipt))
        loads.append(os.getloadavg()[0])
    await cursor_conn.close()
    await asyncio.get_running_loop().run_in_executor(None, pg_writer.close)
    sqlite_writer.close()
    medians = {name: tuple(statistics.median(f[i] for f in rows) for i in range(4)) for name, rows in figures.items()}
    base = medians[SQLITE]
    print_table("per commit, in us (medians of rounds)",
                ["way", "loop CPU", "server CPU", "wall p50", "wall mean", "loop CPU vs SQLite", "wall p50 vs SQLite"],
                [[name, f"{cpu:.0f}", f"{server:.0f}" if name != SQLITE else "-", f"{wall:.0f}", f"{mean:.0f}",
                  ratio_text(cpu / base[0]), ratio_text(wall / base[2])]
                 for name, (cpu, server, wall, mean) in medians.items()])
    print(f"PostgreSQL writer against SQLite's: {medians[POSTGRES][0] - base[0]:.0f} us more loop CPU, "
          f"{medians[POSTGRES][2] - base[2]:.0f} us longer wait per commit; load average over the rounds "
          f"{min(loads):.1f}-{max(loads):.1f}")


async def _round(put: Callable[[dict], Awaitable[None]], backend: int | None,
                 receipt: Callable[[], dict]) -> tuple[float, float, float, float]:
    """(loop CPU, backend CPU, median wall, mean wall) per put over ROUND puts, in us."""
    receipts = [receipt() for _ in range(ROUND)]
    waits = []
    server_before, cpu_before = _backend_cpu_ns(backend), time.thread_time_ns()
    for one in receipts:
        started = time.perf_counter()
        await put(one)
        waits.append(time.perf_counter() - started)
    cpu = (time.thread_time_ns() - cpu_before) / ROUND / 1000
    return (cpu, (_backend_cpu_ns(backend) - server_before) / ROUND / 1000, statistics.median(waits) * 1e6,
            statistics.fmean(waits) * 1e6)
