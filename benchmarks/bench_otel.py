"""Telemetry: what OpenTelemetry out (admiss/integrations/otel.py) costs, off against on.

Batch: ``admiss check --format json`` over a JSONL file with ``--config`` naming an
admiss.toml without a ``[telemetry]`` table (off) and one whose table points at a loopback
OTLP/HTTP receiver (on: one gen_ai.evaluation.result event per property per bundle),
interleaved run by run so that the machine's load falls on both alike (each round in another
order; each round's on / off is printed too, beside the target's ratio
of the medians: a host whose speed drifts over minutes moves the pair together), at 2,000 and 10,000
bundles, so that what telemetry adds splits into a part per run (the exporter process's
start-up, the wait at the end) and a part per bundle, and at 100,000 (the batch section's
full size, a CI-sized batch), whose on / off is the target's figure. At that size a third kind
of run, on with an exporter that reads its pipe and discards it (ADMISS_BENCH_DISCARD,
cpu_probe/sitecustomize.py), splits what telemetry adds into the checking process's own share
and what the exporter's work beside it adds (docs/performance.md, "Telemetry, fourteenth
pass"). Each
process's own CPU is read (cpu_probe/sitecustomize.py on the runs' PYTHONPATH): the
checking process's and its exporter's, and when the exporter started and ended; and the
receiver's over each run (it shares this machine's cores with the exporter). With
``--baseline-admiss`` another checkout's admiss runs in the same interleaving. The runs
cache bytecode (in a temporary folder) even where PYTHONDONTWRITEBYTECODE is set, as an
installed admiss has it; the first round is not timed.

Gateway: two ``admiss serve`` processes of one worker in front of the same fake upstream,
one without telemetry and one exporting its spans and events to the receiver, measured in
the same rounds (each round in another order) against direct calls; the figure is the
difference of their latencies beyond direct calls; and each gateway's CPU per request
(its serving process's, and the exporter process's, from /proc over the rounds). The
receiver (otlp_sink.py) counts the log records and spans that arrive without decoding
their attributes, between runs and between rounds, not while they are timed (a collector
runs on another host); each target is met
only when every event did arrive: every property's of every batch run, a request span for
every request the gateway with telemetry on answered.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import NamedTuple

from benchmarks import admiss_probe, bench_gateway, datagen
from benchmarks.bench_batch import ITEMS, PROPERTIES, admiss_check_command, complaints
from benchmarks.settings import Settings
from benchmarks.tables import bytes_text, print_section, print_table, target_text
from benchmarks.timing import ProcessRun, bytecode_cached, run_process

TARGET_BATCH = 1.05  # on / off, batch time
TARGET_GATEWAY_MS = 0.2  # on - off, added median
# The batch's sizes, beside the batch section's own (--only batch: 10,000 quick, 100,000 full).
SIZES = (2_000, 10_000, 100_000)
PROBE = Path(__file__).with_name("cpu_probe")


def _telemetry_table(port: int) -> str:
    return f'[telemetry]\nendpoint = "http://127.0.0.1:{port}"\n'


def _received(port: int) -> dict[str, int]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
        return json.loads(reply.read())


def run(settings: Settings) -> None:
    sink, port = bench_gateway._start_helper("otlp_sink.py")
    try:
        verdicts = [_batch(settings, port, sink.pid), *_gateway(settings, port)]
    finally:
        bench_gateway._stop(sink)
    # Both targets of issue 22 together, each against its baseline measured above in this run.
    print_section("telemetry: the targets")
    for line in verdicts:
        print(line)
    print()


class _Run(NamedTuple):
    """One ``admiss check`` run: seconds of wall clock, and of CPU in the checking process and
    in its telemetry exporter; when the exporter started and ended and when the check ended
    (seconds after the run was launched; the starts to a clock tick, 10 ms)."""

    wall: float
    check_cpu: float
    exporter_cpu: float
    exporter_started: float | None
    exporter_ended: float | None
    check_ended: float | None
    # The loopback receiver's CPU over the run: on a two-core machine it shares the core the
    # exporter runs on, which a collector on another host would not.
    receiver_cpu: float = 0.0
    # The time the hypervisor ran something else on this machine's CPUs over the run (steal,
    # /proc/stat), all CPUs summed: on a shared virtual machine it grows when both are busy.
    steal: float = 0.0


def _probed_env(folder: Path) -> dict[str, str]:
    """This environment for runs whose processes each say their CPU (cpu_probe/), with
    bytecode cached as an installed admiss has it: a PYTHONDONTWRITEBYTECODE environment
    would make every run compile admiss's modules (timing.bytecode_cached)."""
    env = bytecode_cached(os.environ, folder)
    path = os.pathsep.join(filter(None, [str(PROBE), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path, "ADMISS_BENCH_PROBE": str(folder / "probe.jsonl")}


def _probed_run(command: list[str], out: Path, env: dict[str, str]) -> tuple[ProcessRun, _Run]:
    said = Path(env["ADMISS_BENCH_PROBE"])
    said.unlink(missing_ok=True)
    launched = time.clock_gettime(time.CLOCK_BOOTTIME)
    # Run in the temporary folder: a baseline's exporter started by ``python -m`` (main's
    # before 2026-12-01) would run the admiss of the working folder, this checkout's.
    run = run_process(command, stdout=out, env=env, cwd=out.parent)
    lines = [json.loads(line) for line in said.read_text().splitlines()] if said.exists() else []
    checks = [line for line in lines if line["argv"][1:] == ["check"]]
    check = (checks or [None])[0]
    # The exporter: the check's child running otel.py's program (-c), or the module (-m, before).
    exporters = [line for line in lines if check and line["ppid"] == check["pid"]
                 and (line["argv"][0] == "-c" or line["argv"][0].endswith("otel.py"))]
    exporter = (exporters or [None])[0]
    return run, _Run(run.seconds, check["cpu"] if check else run.cpu_seconds,
                     sum(line["cpu"] for line in exporters),
                     exporter["started"] - launched if exporter else None,
                     exporter["ended"] - launched if exporter else None,
                     check["ended"] - launched if check else None)


def _median(runs: list[_Run], field: str) -> float | None:
    values = [getattr(run, field) for run in runs if getattr(run, field) is not None]
    return statistics.median(values) if values else None


def _ms(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1000:.0f} ms"


def _steal() -> float:
    """Seconds of steal time so far, all CPUs summed (0 where /proc/stat has none)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _process_cpu(pid: int) -> float:
    """CPU seconds so far of process ``pid`` (utime + stime, from /proc)."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


def _batch(settings: Settings, port: int, receiver_pid: int) -> str:
    print_section("telemetry: admiss check --format json over a JSONL file, telemetry off vs on (a loopback receiver)")
    # Two small sizes split what telemetry adds into a part per run and a part per bundle;
    # the batch section's size (and CI's, 100,000) says what a user's batch sees.
    sizes = tuple(sorted({*SIZES, settings.batch_bundles}))
    largest = sizes[-1]
    props = datagen.properties(PROPERTIES)
    if admiss_probe.cli_command() is None:
        verdict = target_text(f"batch time on <= {TARGET_BATCH:g}x off", None, "the admiss CLI is not available")
        print(verdict)
        return verdict
    trees = {"this": list(admiss_probe.cli_command())}
    if settings.baseline_admiss:
        trees["baseline"] = [settings.baseline_admiss]
    runs = settings.batch_repeats + 2
    samples: dict[tuple[str, int, str], list[_Run]] = {}
    with tempfile.TemporaryDirectory(prefix="admiss-bench-") as tmp:
        folder = Path(tmp)
        rubric, out = folder / "batch.rubric", folder / "out.jsonl"
        rubric.write_text(datagen.rubric_source(props, "batch"), encoding="utf-8")
        bundles = {size: folder / f"{size}.jsonl" for size in sizes}
        for size, path in bundles.items():
            datagen.write_jsonl(path, datagen.targeted_bundles(size, ITEMS, props))
        off, on = folder / "off.toml", folder / "on.toml"
        off.write_text("[gates]\n")
        on.write_text(_telemetry_table(port))
        env = _probed_env(folder)
        # Each mode's config and environment. Discarded: on, with an exporter that reads its pipe
        # and discards it (cpu_probe/): the checking process's own share, apart from what the
        # exporter's work beside it does.
        modes_of = {"off": (off, env), "on": (on, env), "discarded": (on, {**env, "ADMISS_BENCH_DISCARD": "1"})}
        before = _received(port)
        # A first round untimed: it writes the bytecode cache, as installing admiss does.
        for index in range(runs + 1):
            for size, path in bundles.items():
                for tree, command in trees.items():
                    # Off, on (and discarded) in turn, each round in another order: a pair's ratio
                    # (paired_ratios) cancels what the host's speed does over minutes.
                    # The discarded runs only at the largest size, the target's.
                    modes = [mode for mode in modes_of if mode != "discarded" or size == largest]
                    for mode in modes[index % len(modes):] + modes[:index % len(modes)]:
                        config, mode_env = modes_of[mode]
                        checked = command + ["check", "--rubric", str(rubric), "--format", "json",
                                             "--config", str(config), str(path)]
                        receiver_before, steal_before = _process_cpu(receiver_pid), _steal()
                        process, measured = _probed_run(checked, out, mode_env)
                        measured = measured._replace(receiver_cpu=_process_cpu(receiver_pid) - receiver_before,
                                                     steal=_steal() - steal_before)
                        _received(port)  # the receiver counts the run's records now, between runs
                        for problem in complaints([process], out, size):
                            print(f"!!! PROBLEM in the {tree} telemetry-{mode} batch of {size}: {problem}")
                        if index:
                            samples.setdefault((tree, size, mode), []).append(measured)
        after = _received(port)
    sent = after["bytes"] - before["bytes"]
    arrived = after["log_records"] - before["log_records"]
    expected = sum(sizes) * PROPERTIES * (runs + 1) * len(trees)
    print(f"{' and '.join(map(str, sizes))} bundles ({PROPERTIES} properties, {ITEMS} items each), {runs} timed runs "
          f"of each after one untimed, interleaved{' with ' + settings.baseline_admiss if len(trees) > 1 else ''}; the "
          f"receiver got {after['posts'] - before['posts']} exports, {bytes_text(sent)}, {arrived} events of the "
          f"{expected} the runs made")
    fields = ("wall", "check_cpu", "exporter_cpu", "receiver_cpu", "steal")
    rows = []
    for (tree, size, mode), taken in sorted(samples.items(), key=lambda item: (item[0][0], item[0][1], item[0][2])):
        rows.append([tree, str(size), mode, *(_ms(_median(taken, f)) for f in fields),
                     _ms(_median(taken, "exporter_started")), _ms(_median(taken, "exporter_ended")),
                     _ms(_median(taken, "check_ended"))])
    print_table("Medians per run (CPU from each process's own times; times after the run's launch)",
                ["tree", "bundles", "telemetry", "wall", "check process CPU", "exporter CPU", "receiver CPU",
                 "host's steal", "exporter started", "exporter ended", "check ended"], rows)
    split = []
    for tree in trees:
        for field in fields:
            added = [_median(samples[tree, size, "on"], field) - _median(samples[tree, size, "off"], field)
                     for size in sizes]
            # A line through the two smallest sizes: the per-run part is where it meets no bundles.
            per_bundle = (added[1] - added[0]) / (sizes[1] - sizes[0])
            split.append([tree, field.replace("_", " "), *(_ms(a) for a in added), f"{per_bundle * 1e6:.1f} µs",
                          _ms(added[0] - per_bundle * sizes[0])])
    print_table("What telemetry adds (on − off, medians), split into a part per bundle and a part per run "
                f"(from the {sizes[0]} and {sizes[1]} bundle runs)",
                ["tree", "measured", *(f"at {size}" for size in sizes), "per bundle", "per run (fixed)"], split)
    ratios = {size: _median(samples["this", size, "on"], "wall") / _median(samples["this", size, "off"], "wall")
              for size in sizes}
    for size in sizes:
        off = _median(samples["this", size, "off"], "wall")
        # What 5 % is for each run: the fixed part above must fit in it with the per-bundle part.
        print(f"{size} bundles: on / off {ratios[size]:.3f} ({(ratios[size] - 1) * 100:+.1f} %); 5 % of the "
              f"{_ms(off)} off is {_ms(off * (TARGET_BATCH - 1))}, {(off * (TARGET_BATCH - 1)) / size * 1e6:.1f} µs "
              "a bundle if nothing is fixed")
    for size in sizes:
        paired = paired_ratios(samples["this", size, "on"], samples["this", size, "off"])
        print(f"{size} bundles, each on run over the off run beside it: median {statistics.median(paired):.3f}, "
              f"{min(paired):.3f} to {max(paired):.3f} over the {len(paired)} rounds")
    # The same on runs against the discarded ones: what the checking process's own share adds,
    # and what the exporter's work beside it adds to that.
    for tree in trees:
        own = paired_ratios(samples[tree, largest, "discarded"], samples[tree, largest, "off"])
        beside = paired_ratios(samples[tree, largest, "on"], samples[tree, largest, "discarded"])
        print(f"{tree}, {largest} bundles, with the exporter discarding what it reads, over off (the checking "
              f"process's own share): median {statistics.median(own):.3f} ({min(own):.3f} to {max(own):.3f}); "
              f"on over that (the exporter's work beside it): median {statistics.median(beside):.3f} "
              f"({min(beside):.3f} to {max(beside):.3f})")
    ratio = ratios[largest]
    verdict = target_text(f"batch time on <= {TARGET_BATCH:g}x off", ratio <= TARGET_BATCH and arrived == expected,
                          f"on / off = {ratio:.3f} by median ({(ratio - 1) * 100:+.1f} %) at {largest} bundles (the "
                          f"batch section's and CI's size); " + ", ".join(f"{ratios[size]:.3f} at {size}"
                                                                           for size in sizes[:-1])
                          + ("" if arrived == expected else f"; ONLY {arrived} OF {expected} EVENTS ARRIVED"))
    print(verdict)
    print()
    return verdict


def paired_ratios(on: list[_Run], off: list[_Run]) -> list[float]:
    """Each round's ``on`` run's wall time over its ``off`` run's (both of one round, run in turn)."""
    return [a.wall / b.wall for a, b in zip(on, off)]


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from /proc."""
    out, pending = [], [pid]
    while pending:
        at = pending.pop()
        out.append(at)
        for task in Path(f"/proc/{at}/task").glob("*/children"):
            try:
                pending += [int(child) for child in task.read_text().split()]
            except OSError:
                continue
    return out


def _gateway_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds so far of a gateway's serving processes and of its telemetry exporter."""
    serving = exporter = 0.0
    for at in _tree(pid):
        try:
            stat = Path(f"/proc/{at}/stat").read_text().rsplit(")", 1)[1].split()
            command = Path(f"/proc/{at}/cmdline").read_bytes()
        except OSError:
            continue
        cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
        if b"admiss.integrations.otel" in command:
            exporter += cpu
        else:
            serving += cpu
    return serving, exporter


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
                cpu_before = {name: _gateway_cpu(process.pid) for name, (process, _) in started.items()}
                for index in range(rounds):
                    order = names[index % len(names):] + names[:index % len(names)]
                    measured = {name: bench_gateway.load(*paths[name], total, bench_gateway.CONCURRENCY, delay_s)
                                for name in order}
                    for name in ("off", "on"):
                        added[name].append(bench_gateway._added(measured[name][0], measured["direct"][0]))
                    rows.append([str(index + 1), *(bench_gateway._ms(added[n][-1][0]) for n in ("off", "on")),
                                 bench_gateway._ms(added["on"][-1][0] - added["off"][-1][0]),
                                 *(f"{measured[n][1]:.0f}" for n in ("off", "on"))])
                    _received(port)  # the receiver counts the round's records now, between rounds
                time.sleep(0.5)  # the exporter makes a request's spans as its line arrives
                cpu_after = {name: _gateway_cpu(process.pid) for name, (process, _) in started.items()}
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
    # CPU per request (each process's own, from /proc, over the timed rounds): what
    # telemetry costs the serving process's core, and the exporter's, at any load.
    per = {name: [(after - before) / (rounds * total) * 1e6 for before, after in zip(cpu_before[name], cpu_after[name])]
           for name in started}
    print(f"CPU per request over the rounds: serving process off {per['off'][0]:.0f} µs, on {per['on'][0]:.0f} µs "
          f"({per['on'][0] - per['off'][0]:+.0f} µs); the on gateway's exporter process {per['on'][1]:.0f} µs")
    verdict = target_text(f"telemetry on adds <= {TARGET_GATEWAY_MS} ms to the gateway's median",
                          more * 1000 <= TARGET_GATEWAY_MS and traced == answered,
                          f"{bench_gateway._ms(more)} ms (median of rounds; the rounds' on - off ran from "
                          f"{bench_gateway._ms(min(spread))} to {bench_gateway._ms(max(spread))} ms), upstream "
                          f"replying after {delay_s * 1000:.0f} ms"
                          + ("" if traced == answered else f"; ONLY {traced} OF {answered} REQUEST SPANS ARRIVED"))
    print(verdict)
    print()
    return verdict
