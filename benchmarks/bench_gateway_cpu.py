"""The gateway's CPU per request, in one process: a request body read by its wire module
(admiss/serve/wire/), run through the router (the rung's call to the fake upstream,
fake_upstream.py answering at once, the gates, the conversation read as evidence, the
receipt built, committed to SQLite and counted into the metrics) and its answer written,
one request at a time. Against a baseline checkout, the receipt's part of each request's
CPU is printed too.

CPU time (``time.process_time``) rather than wall time: on a shared, loaded machine a
request's wall time is mostly waiting for a core, its CPU time is what it costs. The
baseline is the plain request (one message, inline gates) measured in the same run; each
kind is reported as CPU ms per request and as a ratio to it. Then cProfile's view of the
agent's request over each route: the functions that cost the most CPU, the gateway's own
apart from the libraries'.

The agents' requests are those of CONCURRENCY agents in turn, each conversation moving on
by one call and its result with every request (bench_gateway.agent_conversation), so a memo
of earlier turns finds what an agent's would; the memos' hit rates are printed.

Last, the same requests one at a time after an idle pause (10 ms, and 100 ms: a model's
reply time, which is how the gateway waits between requests at concurrency 1), against back
to back: what a request costs when the process wakes to it with cold caches. The figure is
this process's own CPU time, so no other process's wake-up is in it.
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import json
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import bench_gateway
from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, ratio_text

KINDS = ("plain", "agent", "agent_messages")
PAUSES_S = (0.0, 0.01, 0.1)


def _wire(path: str):
    from admiss.serve.wire import anthropic_messages, openai_chat

    return anthropic_messages if path == bench_gateway.MESSAGES_PATH else openai_chat


def _routers(folder: Path, port: int):
    from admiss.serve.metrics import GatewayMetrics
    from admiss.serve.router import routers_for

    (folder / "bench.rubric").write_text(bench_gateway.RUBRIC + bench_gateway.AGENT_RUBRIC)
    (folder / "admiss.toml").write_text(f'[providers.fake]\nbase_url = "http://127.0.0.1:{port}/v1"\n'
                                        '[serve]\nstore = "receipts.db"\n')
    routers = routers_for(folder / "bench.rubric", folder / "admiss.toml")
    # Counted into the metrics as admiss serve counts every stored receipt.
    GatewayMetrics(routers)
    return routers


class _ReceiptClock:
    """The CPU spent in Router._receipt: the receipt built, redacted, encoded, committed and
    counted (one request at a time, so its commit's loop turn falls inside it)."""

    def __init__(self) -> None:
        from admiss.serve.router import Router

        self.spent = 0.0
        receipt = Router._receipt

        async def timed(router, *args):
            started = time.process_time()
            try:
                return await receipt(router, *args)
            finally:
                self.spent += time.process_time() - started

        Router._receipt = timed


# Each kind's requests made so far: the next one is agent (count % CONCURRENCY)'s next turn.
_SENT = {kind: 0 for kind in KINDS}


def _bodies(kind: str, count: int) -> list[bytes]:
    """``kind``'s next ``count`` request bodies, as they arrive (made before they are timed)."""
    from admiss import jsonio

    chain = bench_gateway.KINDS[kind][0]
    sent = _SENT[kind]
    _SENT[kind] = sent + count
    agents = bench_gateway.CONCURRENCY
    return [jsonio.dumps_line({"model": chain, **bench_gateway.kind_fields(kind, n % agents, n // agents)[0]})
            for n in range(sent, sent + count)]


async def _one(routers: dict, kind: str, raw: bytes) -> None:
    from admiss import jsonio

    chain, path, _, _ = bench_gateway.KINDS[kind]
    wire = _wire(path)
    # From bytes, as a request arrives: the body is parsed each time.
    parsed = _parsed(raw)
    incoming = wire.read(*parsed)
    _check_repeats(raw, parsed[0], incoming)
    served = await routers[chain].run(incoming.request)
    assert served.rung is not None, served.receipt
    jsonio.dumps_line(wire.response(served, 0))


def _parsed(raw: bytes) -> tuple:
    """The body as the gateway reads it, and whether orjson did (a checkout before the memo
    has no jsonio.loads_marked, and its wire modules take the body alone)."""
    from admiss import jsonio

    marked = getattr(jsonio, "loads_marked", None)
    return marked(raw) if marked is not None else (jsonio.loads_any(raw),)


def _check_repeats(raw: bytes, body: dict, incoming) -> None:
    """The body checked for a repeated key as the gateway checks it: the gateway's app
    refuses a body that gives a key twice (serve/app.py), so that check is part of every
    request's cost. A checkout before wire.repeated_key checks the body on its own."""
    from admiss import jsonio
    from admiss.serve import wire

    check = getattr(wire, "repeated_key", None)
    assert (check(raw, body, incoming) if check is not None else jsonio.first_repeated_key(raw, body)) is None


async def _cpu_ms(routers: dict, kind: str, count: int) -> float:
    bodies = _bodies(kind, count)
    started = time.process_time()
    for raw in bodies:
        await _one(routers, kind, raw)
    return (time.process_time() - started) * 1000 / count


async def _profile(routers: dict, kind: str, count: int) -> str:
    bodies = _bodies(kind, count)
    profile = cProfile.Profile()
    profile.enable()
    for raw in bodies:
        await _one(routers, kind, raw)
    profile.disable()
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("tottime").print_stats(18)
    return out.getvalue()


def run(settings: Settings) -> None:
    count = 300 if settings.quick else 1000
    rounds = 3 if settings.quick else 5
    if settings.baseline_admiss:
        _compare_baseline(settings.baseline_admiss, count, rounds + 1)
        return
    upstream, port = bench_gateway._start_upstream(0.0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            routers = _routers(Path(tmp), port)
            try:
                asyncio.run(_measure(routers, count, rounds))
            finally:
                next(iter(routers.values())).store.close()
    finally:
        bench_gateway._stop(upstream)


async def _measure(routers: dict, count: int, rounds: int) -> None:
    print_section(f"gateway CPU per request, in one process (router, gates, receipt, wire), {count} requests a "
                  f"round, {rounds} rounds, each kind in turn")
    for kind in KINDS:
        await _cpu_ms(routers, kind, 100)  # warm-up: connections, lazy imports, SQLite pages
    figures: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for index in range(rounds):
        order = KINDS[index % len(KINDS):] + KINDS[:index % len(KINDS)]
        for kind in order:
            figures[kind].append(await _cpu_ms(routers, kind, count))
    medians = {kind: sorted(values)[len(values) // 2] for kind, values in figures.items()}
    rows = [[kind, *(f"{v:.3f}" for v in figures[kind]), f"{medians[kind]:.3f}",
             ratio_text(medians[kind] / medians["plain"])] for kind in KINDS]
    print_table("CPU ms per request (the upstream's own work is in another process)",
                ["kind", *(f"round {i + 1}" for i in range(rounds)), "median", "vs plain"], rows)
    print(_hit_rates(routers["agent"]))
    for kind in ("agent", "agent_messages"):
        print(f"\ncProfile, {kind}, {count} requests, by own time:")
        print(await _profile(routers, kind, count))
    await _after_pauses(routers, 30 if count < 1000 else 100)
    for router in routers.values():
        await router.aclose()


BASELINE, THIS = "baseline", "this checkout"
# What each measuring process runs: worker() of the copy of this folder in its working folder.
_WORKER = "import sys; from benchmarks import bench_gateway_cpu as b; b.worker(int(sys.argv[1]), int(sys.argv[2]))"


def _compare_baseline(baseline_admiss: str, count: int, rounds: int) -> None:
    """The same figures for another checkout: each round, a process of the baseline's Python
    (the one beside its ``admiss`` command) and one of this checkout's measure ``count``
    requests of each kind in turn, in an order that alternates, each from a copy of this
    folder (so that each imports its own checkout's admiss), against one upstream."""
    python = {BASELINE: str(Path(baseline_admiss).parent / "python"), THIS: sys.executable}
    print_section(f"gateway CPU per request, in one process: {BASELINE} ({baseline_admiss}) vs {THIS}, a process "
                  f"each per round, {count} requests of each kind a round, {rounds} rounds, taking turns")
    upstream, port = bench_gateway._start_upstream(0.0)
    figures: dict[str, list[dict]] = {BASELINE: [], THIS: []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(Path(__file__).parent, Path(tmp) / "benchmarks",
                            ignore=shutil.ignore_patterns("__pycache__"))
            for index in range(rounds):
                for name in (BASELINE, THIS) if index % 2 == 0 else (THIS, BASELINE):
                    done = subprocess.run([python[name], "-c", _WORKER, str(port), str(count)], cwd=tmp, check=True,
                                          capture_output=True, text=True)
                    figures[name].append(json.loads(done.stdout.splitlines()[-1]))
    finally:
        bench_gateway._stop(upstream)
    medians = {name: {kind: statistics.median(f[kind] for f in runs) for kind in KINDS}
               for name, runs in figures.items()}
    rows = [[f"{index + 1}", *(f"{figures[name][index][kind]:.3f}" for name in figures for kind in KINDS)]
            for index in range(rounds)]
    rows.append(["median", *(f"{medians[name][kind]:.3f}" for name in figures for kind in KINDS)])
    print_table("CPU ms per request, by round", ["round", *(f"{name} {kind}" for name in figures for kind in KINDS)],
                rows)
    for kind in KINDS:
        print(f"{kind}: {THIS} {medians[THIS][kind]:.3f} ms vs {BASELINE} {medians[BASELINE][kind]:.3f} ms "
              f"({ratio_text(medians[THIS][kind] / medians[BASELINE][kind])})")
    for kind in KINDS:
        spent = {name: statistics.median(f[f"{kind} receipt"] for f in runs) for name, runs in figures.items()}
        print(f"{kind}, of which the receipt (Router._receipt: built, redacted, encoded, committed, counted): "
              f"{THIS} {spent[THIS]:.3f} ms vs {BASELINE} {spent[BASELINE]:.3f} ms "
              f"({ratio_text(spent[THIS] / spent[BASELINE])})")
    for name, runs in figures.items():
        rates = [f["runs_hit"] for f in runs if f["runs_hit"] is not None]
        if rates:
            print(f"{name}: conversation runs found in the memo, median of rounds {statistics.median(rates):.1%}")


def worker(port: int, count: int) -> None:
    """One round of _compare_baseline: after a warm-up, ``count`` requests of each kind in
    turn, printed as one JSON line (CPU ms per request by kind, and the memo's hit rate)."""

    async def measure(routers: dict) -> dict:
        for kind in KINDS:
            await _cpu_ms(routers, kind, 100)
        out: dict = {}
        for kind in KINDS:
            clock.spent = 0.0
            out[kind] = await _cpu_ms(routers, kind, count)
            out[f"{kind} receipt"] = clock.spent * 1000 / count
        readings = getattr(routers["agent"], "readings", None)  # a checkout without the memo has none
        out["runs_hit"] = readings.memo.hit_rate if readings is not None else None
        for router in routers.values():
            await router.aclose()
        return out

    clock = _ReceiptClock()
    with tempfile.TemporaryDirectory() as tmp:
        routers = _routers(Path(tmp), port)
        try:
            print(json.dumps(asyncio.run(measure(routers))))
        finally:
            next(iter(routers.values())).store.close()


def _hit_rates(router) -> str:
    """The gateway's memos' hit rates since the process started (admiss/serve/memo.py)."""
    from admiss.serve import calls
    from admiss.serve.wire import anthropic_messages

    runs = router.readings.memo
    # A checkout whose Messages route keeps no memo of its own has no _CHECKED there.
    messages = getattr(anthropic_messages, "_CHECKED", None)
    checked = f", Messages {messages.hit_rate:.1%}" if messages is not None else ""
    return (f"memo hit rates over these requests and their warm-up: checked messages, chat completions "
            f"{calls._CHECKED.hit_rate:.1%}{checked}; conversation runs {runs.hit_rate:.1%} (both routes' agent "
            f"requests; {len(runs)} runs held, {runs.held_bytes / 1024:.0f} KiB of keys)")


async def _after_pauses(routers: dict, count: int) -> None:
    """CPU per request, one request at a time, back to back and after each idle pause."""
    rows = []
    for kind in KINDS:
        cpu = {}
        for pause in PAUSES_S:
            spent = 0.0
            for raw in _bodies(kind, count):
                await asyncio.sleep(pause)
                started = time.process_time()
                await _one(routers, kind, raw)
                spent += time.process_time() - started
            cpu[pause] = spent * 1000 / count
        rows.append([kind, *(f"{cpu[p]:.3f}" for p in PAUSES_S), ratio_text(cpu[PAUSES_S[-1]] / cpu[0.0])])
    print_table(f"CPU ms per request, one at a time after an idle pause ({count} requests each)",
                ["kind", *(f"pause {p * 1000:.0f} ms" for p in PAUSES_S), "100 ms vs none"], rows)
