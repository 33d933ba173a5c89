"""The gateway's Prometheus metrics; the only module that imports prometheus_client.

Counters are updated from each receipt once it is stored, so they count exactly what the
receipt store holds. The gate-health gauges (error rate, disabled) are set from the chain's
error budgets after each receipt, so they show the budgets as the last answered request
left them.

Under ``admiss serve --workers N`` the parent sets ``PROMETHEUS_MULTIPROC_DIR`` before it
starts the workers: each worker's values go to files there (prometheus_client's multiprocess
mode) and /metrics, whichever worker answers it, adds them up. Counters and histograms sum
over every worker that ever ran; a gauge says in its ``multiprocess_mode`` how workers'
values combine.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prometheus_client import (CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram,
                               disable_created_metrics, generate_latest, multiprocess)

# The *_created series double the page and no dashboard here reads them.
disable_created_metrics()

# Gate and rung latencies span inline checks (microseconds) to model calls (seconds).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


def _forget_dead_workers(folder: Path) -> None:
    """Take the live gauges of workers that died without stopping (killed outright) off the
    page: the supervisor that replaces them tells nobody. A worker's live gauges are the
    files ``gauge_live*_PID.db``, the names prometheus_client's mark_process_dead removes."""
    for path in folder.glob("gauge_live*_*.db"):
        pid = int(path.stem.rpartition("_")[2])
        if not _alive(pid):
            multiprocess.mark_process_dead(pid, str(folder))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


def multiprocess_mode() -> bool:
    """Whether this process is one of several workers writing their values to shared files."""
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


class GatewayMetrics:
    """The gateway's metrics over ``routers`` (chain name to Router), counted from the
    receipts each router stores."""

    def __init__(self, routers: dict[str, Any]):
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("admiss_requests", "Requests answered with a receipt, by chain and outcome",
                                ["chain", "outcome"], registry=r)
        self.rejected = Counter("admiss_rejected_requests", "Requests refused before any model call, by reason",
                                ["reason"], registry=r)
        self.serves = Counter("admiss_serves", "Outputs served, by chain and rung", ["chain", "rung"], registry=r)
        self.verdicts = Counter("admiss_gate_verdicts", "Gate verdicts, by chain, rung, gate and verdict",
                                ["chain", "rung", "gate", "verdict"], registry=r)
        self.gate_latency = Histogram("admiss_gate_latency_seconds", "Time a gate took", ["chain", "gate"],
                                      buckets=LATENCY_BUCKETS, registry=r)
        self.rung_latency = Histogram("admiss_rung_latency_seconds", "Time a rung took: its model call and its gates",
                                      ["chain", "rung"], buckets=LATENCY_BUCKETS, registry=r)
        self.model_cost = Counter("admiss_model_cost_usd", "Model spend in US dollars", ["chain", "rung"], registry=r)
        self.gate_cost = Counter("admiss_gate_cost_usd", "Gate spend in US dollars", ["chain", "gate"], registry=r)
        # Live workers' values add up (a worker's requests end with it); the gate gauges show
        # the worst live worker, since each worker keeps its own error budgets.
        self.in_flight = Gauge("admiss_in_flight_requests", "Chat requests being worked on", registry=r,
                               multiprocess_mode="livesum")
        gate_labels = ["chain", "rung", "gate", "position"]
        self.error_rate = Gauge("admiss_gate_error_rate", "Share of a gate's runs in its error-budget window that "
                                "were errors (crash, timeout, malformed reply, provider failure)", gate_labels,
                                registry=r, multiprocess_mode="livemax")
        self.disabled = Gauge("admiss_gate_disabled", "1 when the gate's error budget disabled it", gate_labels,
                              registry=r, multiprocess_mode="livemax")
        self.disabled_count = Gauge("admiss_gates_disabled", "How many gates their error budgets disabled", ["chain"],
                                    registry=r, multiprocess_mode="livemax")
        # What a receipt counts, made once and kept, keyed by (what, *labels): looking a
        # child up costs more than counting. ``what`` is a metric (its child) or one of
        # _SERIES' names (the two or three series one answer or gate run moves). Label
        # values come from the rubric's names and fixed words, so this stays small.
        self._series: dict[tuple, Any] = {}
        # Per chain, each gate's two gauges with its budget, looked up once: they are set
        # after every receipt.
        self._gate_gauges = {name: [(self.error_rate.labels(name, rung, gate, str(position)),
                                     self.disabled.labels(name, rung, gate, str(position)), budget)
                                    for rung, gate, position, budget in router.gate_budgets()]
                             for name, router in routers.items()}
        # The gate gauges' values as last set, per chain (see _gate_health).
        self._gate_values: dict[str, tuple[tuple[float, float], ...]] = {}
        for name, router in routers.items():
            router.listeners.append(self.observe)
            self._gate_health(name)

    def observe(self, receipt: dict[str, Any]) -> None:
        """Count one stored receipt."""
        # Each series is looked up once per what it counts, one dict look-up for the two or
        # three a rung or gate run moves: looking children up one by one was a third of
        # counting an agent's receipt (13 look-ups; benchmarks/bench_gateway_cpu.py).
        kept = self._series.get
        chain = receipt["chain"]
        name, served = chain["name"], chain["served"]
        for counter in kept(("answer", name, served)) or self._made("answer", name, served):
            counter.inc()
        # A cost counter's child is made (so its series shows at 0) but a zero not added:
        # most gates and many rungs cost nothing, and each addition takes the counter's lock.
        for rung in chain["rungs"]:
            rung_name = rung["rung"]
            model_cost = kept((self.model_cost, name, rung_name)) or self._made(self.model_cost, name, rung_name)
            if rung["cost_usd"]:
                model_cost.inc(rung["cost_usd"])
            for gate in rung["gates"]:
                key = ("gate run", name, rung_name, gate["gate"], gate["verdict"])
                verdicts, latency, gate_cost = kept(key) or self._made(*key)
                verdicts.inc()
                if latency is not None:
                    latency.observe(gate["duration_ms"] / 1000)
                if gate["gate_cost_usd"]:
                    gate_cost.inc(gate["gate_cost_usd"])
        rung_latency = self.rung_latency
        for rung_name, ms in receipt["latency_ms"].items():
            (kept((rung_latency, name, rung_name)) or self._made(rung_latency, name, rung_name)).observe(ms / 1000)
        self._gate_health(name)

    def _made(self, what: Any, *labels: str) -> Any:
        """What ``(what, *labels)`` names (see ``_series``), made and kept."""
        found = self._series[(what, *labels)] = _SERIES[what](self, *labels) if type(what) is str \
            else what.labels(*labels)
        return found

    def _answer_series(self, chain: str, served: str | None) -> tuple:
        """The counters an answer of ``chain`` moves: its outcome's, and its rung's serves."""
        outcome = self._made(self.requests, chain, "served" if served is not None else "exhausted")
        return (outcome,) if served is None else (outcome, self._made(self.serves, chain, served))

    def _gate_series(self, chain: str, rung: str, gate: str, verdict: str) -> tuple:
        """A gate run's verdict counter, latency histogram (None for a skipped gate, which
        took no time) and cost counter."""
        latency = self._made(self.gate_latency, chain, gate) if verdict != "skipped" else None
        return (self._made(self.verdicts, chain, rung, gate, verdict), latency, self._made(self.gate_cost, chain, gate))

    def refresh_gates(self) -> None:
        """Set every chain's gate gauges again (after another gateway's budgets changed them)."""
        for chain in self._gate_gauges:
            self._gate_health(chain)

    def _gate_health(self, chain: str) -> None:
        """Set the gate gauges of ``chain`` from its router's error budgets, where they changed.

        Every receipt calls this and the budgets rarely move, so the values last set are
        kept and only a changed one is set (each set takes its gauge's lock: setting them
        all after every receipt was a third of counting one, docs/performance.md#the-gateway)."""
        values = tuple([budget.health() for _, _, budget in self._gate_gauges[chain]])
        if self._gate_values.get(chain) == values:
            return
        self._gate_values[chain] = values
        for (rate_gauge, disabled_gauge, _), (rate, disabled) in zip(self._gate_gauges[chain], values):
            rate_gauge.set(rate)
            disabled_gauge.set(disabled)
        key = (self.disabled_count, chain)
        (self._series.get(key) or self._made(*key)).set(sum(disabled for _, disabled in values))

    def exposition(self) -> tuple[bytes, str]:
        """The metrics in Prometheus' text format, and its content type: every worker's,
        added up, in multiprocess mode."""
        if not multiprocess_mode():
            return generate_latest(self.registry), CONTENT_TYPE_LATEST
        _forget_dead_workers(Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]))
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST

    def close(self) -> None:
        """In multiprocess mode, take this worker's live gauges off the page as it stops."""
        if multiprocess_mode():
            multiprocess.mark_process_dead(os.getpid())


# The composite series a receipt moves, by the name its key starts with (GatewayMetrics._made).
_SERIES = {"answer": GatewayMetrics._answer_series, "gate run": GatewayMetrics._gate_series}
