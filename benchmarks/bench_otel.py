"""Telemetry: what OpenTelemetry out (admiss/integrations/otel.py) costs, off against on.

Batch: ``admiss check --format json`` over a JSONL file with ``--config`` naming an
admiss.toml without a ``[telemetry]`` table (off) and one whose table points at a loopback
OTLP/HTTP receiver (on: one gen_ai.evaluation.result event per property per bundle),
interleaved run by run so that the machine's load falls on both alike.

Gateway: two ``admiss serve`` processes of one worker in front of the same fake upstream,
one without telemetry and one exporting its spans and events to the receiver, measured in
the same rounds (each round in another order) against direct calls; the figure is the
difference of their latencies beyond direct calls. The receiver (otlp_sink.py) counts the
log records and spans that arrive without decoding their attributes; each target is met
only when every event did arrive: every property's of every batch run, a request span for
every request the gateway with telemetry on answered.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import urllib.request
from pathlib import Path

from benchmarks import admiss_probe, bench_gateway, datagen
from benchmarks.bench_batch import ITEMS, PROPERTIES, admiss_check_command, complaints
from benchmarks.settings import Settings
from benchmarks.tables import bytes_text, print_section, print_table, seconds_text, target_text
from benchmarks.timing import Timing, run_process

TARGET_BATCH = 1.05  # on / off, batch time
TARGET_GATEWAY_MS = 0.2  # on - off, added median


def _telemetry_table(port: int) -> str:
    return f'[telemetry]\nendpoint = "http://127.0.0.1:{port}"\n'


def _received(port: int) -> dict[str, int]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
        return json.loads(reply.read())


def run(settings: Settings) -> None:
    sink, port = bench_gateway._start_helper("otlp_sink.py")
    try:
        verdicts = [_batch(settings, port), *_gateway(settings, port)]
    finally:
        bench_gateway._stop(sink)
    # Both targets of issue 22 together, each against its baseline measured above in this run.
    print_section("telemetry: the targets")
    for line in verdicts:
        print(line)
    print()


def _batch(settings: Settings, port: int) -> str:
    print_section("telemetry: admiss check --format json over a JSONL file, telemetry off vs on (a loopback receiver)")
    count = settings.batch_bundles // 5
    props = datagen.properties(PROPERTIES)
    if admiss_probe.cli_command() is None:
        verdict = target_text(f"batch time on <= {TARGET_BATCH:g}x off", None, "the admiss CLI is not available")
        print(verdict)
        return verdict
    with tempfile.TemporaryDirectory(prefix="admiss-bench-") as tmp:
        folder = Path(tmp)
        rubric, big, out = folder / "batch.rubric", folder / "big.jsonl", folder / "out.jsonl"
        rubric.write_text(datagen.rubric_source(props, "batch"), encoding="utf-8")
        datagen.write_jsonl(big, datagen.targeted_bundles(count, ITEMS, props))
        configs = {"off": folder / "off.toml", "on": folder / "on.toml"}
        configs["off"].write_text("[gates]\n")
        configs["on"].write_text(_telemetry_table(port))
        samples: dict[str, list[float]] = {"off": [], "on": []}
        before = _received(port)
        runs = settings.batch_repeats + 2
        for _ in range(runs):
            for name, config in configs.items():
                run = run_process(admiss_check_command(rubric, big, "--config", str(config)), stdout=out)
                for problem in complaints([run], out, count):
                    print(f"!!! PROBLEM in the telemetry-{name} batch: {problem}")
                samples[name].append(run.seconds)
        after = _received(port)
    timings = {name: Timing(tuple(taken)) for name, taken in samples.items()}
    sent = after["bytes"] - before["bytes"]
    arrived, expected = after["log_records"] - before["log_records"], count * PROPERTIES * runs
    print(f"{count} bundles ({PROPERTIES} properties, {ITEMS} items each): {count * PROPERTIES} events a run; the "
          f"receiver got {after['posts'] - before['posts']} exports, {bytes_text(sent)}, {arrived} events of the "
          f"{expected} the {runs} runs made")
    print_table("Whole run as a subprocess, runs interleaved", ["telemetry", "best", "median"],
                [[name, seconds_text(t.best), seconds_text(t.median)] for name, t in timings.items()])
    ratio = timings["on"].median / timings["off"].median
    verdict = target_text(f"batch time on <= {TARGET_BATCH:g}x off", ratio <= TARGET_BATCH and arrived == expected,
                          f"on / off = {ratio:.3f} by median ({(ratio - 1) * 100:+.1f} %), {count} bundles"
                          + ("" if arrived == expected else f"; ONLY {arrived} OF {expected} EVENTS ARRIVED"))
    print(verdict)
    print()
    return verdict


def _gateway(settings: Settings, port: int) -> list[str]:
    return [_gateway_against(settings, port, delay_s) for delay_s in (0.0, 0.1)]


def _gateway_against(settings: Settings, port: int, delay_s: float) -> str:
    print_section(f"telemetry: admiss serve (one worker each) off vs on, in the same rounds, against the fake upstream "
                  f"replying after {delay_s * 1000:.0f} ms, concurrency {bench_gateway.CONCURRENCY}")
    total = 1000 if settings.quick else 3000
    rounds = 3 if settings.quick else 5
    upstream, upstream_port = bench_gateway._start_upstream(delay_s)
    request = bench_gateway._request
    direct = request("/v1/chat/completions", {"model": "cheap", "messages": bench_gateway.MESSAGES}, {})
    via = request("/v1/chat/completions", {"model": "bench", "messages": bench_gateway.MESSAGES},
                  {"authorization": f"Bearer {bench_gateway.KEY}"})
    before = _received(port)
    try:
        with tempfile.TemporaryDirectory() as off_tmp, tempfile.TemporaryDirectory() as on_tmp:
            started = {"off": bench_gateway._start_gateway(Path(off_tmp), upstream_port, 1, bench_gateway.POOL),
                       "on": bench_gateway._start_gateway(Path(on_tmp), upstream_port, 1, bench_gateway.POOL,
                                                          _telemetry_table(port))}
            try:
                paths = {"direct": (upstream_port, direct), **{name: (p, via) for name, (_, p) in started.items()}}
                for target, body in paths.values():
                    bench_gateway.load(target, body, 500, bench_gateway.CONCURRENCY)  # warm-up
                names, added, rows = list(paths), {"off": [], "on": []}, []
                for index in range(rounds):
                    order = names[index % len(names):] + names[:index % len(names)]
                    measured = {name: bench_gateway.load(*paths[name], total, bench_gateway.CONCURRENCY, delay_s)
                                for name in order}
                    for name in ("off", "on"):
                        added[name].append(bench_gateway._added(measured[name][0], measured["direct"][0]))
                    rows.append([str(index + 1), *(bench_gateway._ms(added[n][-1][0]) for n in ("off", "on")),
                                 bench_gateway._ms(added["on"][-1][0] - added["off"][-1][0]),
                                 *(f"{measured[n][1]:.0f}" for n in ("off", "on"))])
            finally:
                for process, _ in started.values():
                    bench_gateway._stop(process)
    finally:
        bench_gateway._stop(upstream)
    after = _received(port)
    print_table(f"{total} requests per round; latency added beyond direct calls, in ms",
                ["round", "off added p50", "on added p50", "on - off", "off req/s", "on req/s"], rows)
    medians = {name: statistics.median(a for a, _ in added[name]) for name in ("off", "on")}
    p99s = {name: statistics.median(p for _, p in added[name]) for name in ("off", "on")}
    more = medians["on"] - medians["off"]
    # How far apart the rounds are says what a difference of medians can tell at this load.
    spread = [on[0] - off[0] for on, off in zip(added["on"], added["off"])]
    sent = after["bytes"] - before["bytes"]
    # The "on" gateway answered the warm-up's requests and one round's in each round.
    answered, traced = 500 + rounds * total, after["server_spans"] - before["server_spans"]
    print(f"added median off {bench_gateway._ms(medians['off'])} ms, on {bench_gateway._ms(medians['on'])} ms; "
          f"added p99 off {bench_gateway._ms(p99s['off'])} ms, on {bench_gateway._ms(p99s['on'])} ms; the receiver got "
          f"{after['posts'] - before['posts']} exports, {bytes_text(sent)}: {traced} request spans for the {answered} "
          f"requests answered, {after['spans'] - before['spans']} spans, "
          f"{after['log_records'] - before['log_records']} events")
    verdict = target_text(f"telemetry on adds <= {TARGET_GATEWAY_MS} ms to the gateway's median",
                          more * 1000 <= TARGET_GATEWAY_MS and traced == answered,
                          f"{bench_gateway._ms(more)} ms (median of rounds; the rounds' on - off ran from "
                          f"{bench_gateway._ms(min(spread))} to {bench_gateway._ms(max(spread))} ms), upstream "
                          f"replying after {delay_s * 1000:.0f} ms"
                          + ("" if traced == answered else f"; ONLY {traced} OF {answered} REQUEST SPANS ARRIVED"))
    print(verdict)
    print()
    return verdict
