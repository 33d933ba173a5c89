"""The gateway's Prometheus metrics; the only module that imports prometheus_client.

Counters are updated from each receipt once it is stored, so they count exactly what the
receipt store holds. Gate error rates and disabled gates are read from the routers' error
budgets when /metrics is scraped.
"""

from __future__ import annotations

from typing import Any, Iterable

from prometheus_client import (CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram,
                               disable_created_metrics, generate_latest)
from prometheus_client.core import GaugeMetricFamily

# The *_created series double the page and no dashboard here reads them.
disable_created_metrics()

# Gate and rung latencies span inline checks (microseconds) to model calls (seconds).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class _GateHealthCollector:
    """admiss_gate_error_rate and admiss_gates_disabled, read from the budgets at scrape time."""

    def __init__(self, routers: dict[str, Any]):
        self.routers = routers

    def describe(self) -> list:
        return []

    def collect(self) -> Iterable[GaugeMetricFamily]:
        labels = ["chain", "rung", "gate", "position"]
        rate = GaugeMetricFamily("admiss_gate_error_rate", "Share of a gate's runs in its error-budget window that "
                                 "were errors (crash, timeout, malformed reply, provider failure)", labels=labels)
        disabled = GaugeMetricFamily("admiss_gate_disabled", "1 when the gate's error budget disabled it", labels=labels)
        total = GaugeMetricFamily("admiss_gates_disabled", "How many gates their error budgets disabled", labels=["chain"])
        for chain, router in self.routers.items():
            health = router.gate_health()
            for gate in health:
                values = [chain, gate.rung, gate.gate, str(gate.position)]
                rate.add_metric(values, gate.error_rate)
                disabled.add_metric(values, 1.0 if gate.disabled else 0.0)
            total.add_metric([chain], float(sum(g.disabled for g in health)))
        return [rate, disabled, total]


class GatewayMetrics:
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
        self.in_flight = Gauge("admiss_in_flight_requests", "Chat requests being worked on", registry=r)
        r.register(_GateHealthCollector(routers))
        # Label values come from the rubric's names and fixed words, so this stays small.
        self._children: dict[tuple, Any] = {}

    def observe(self, receipt: dict[str, Any]) -> None:
        """Count one stored receipt."""
        chain = receipt["chain"]
        name = chain["name"]
        child = self._child
        child(self.requests, name, "served" if chain["served"] is not None else "exhausted").inc()
        if chain["served"] is not None:
            child(self.serves, name, chain["served"]).inc()
        for rung in chain["rungs"]:
            child(self.model_cost, name, rung["rung"]).inc(rung["cost_usd"])
            for gate in rung["gates"]:
                child(self.verdicts, name, rung["rung"], gate["gate"], gate["verdict"]).inc()
                if gate["verdict"] != "skipped":
                    child(self.gate_latency, name, gate["gate"]).observe(gate["duration_ms"] / 1000)
                child(self.gate_cost, name, gate["gate"]).inc(gate["gate_cost_usd"])
        for rung, ms in receipt["latency_ms"].items():
            child(self.rung_latency, name, rung).observe(ms / 1000)

    def _child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, kept: looking a child up costs more than counting."""
        key = (metric, labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def exposition(self) -> tuple[bytes, str]:
        """The metrics in Prometheus' text format, and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
