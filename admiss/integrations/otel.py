"""OpenTelemetry out: ``gen_ai.evaluation.result`` events from ``admiss check`` and
``admiss serve``, and the gateway's spans. The only module that imports opentelemetry.

Events follow the GenAI semantic conventions: log-based events (a log record whose
``event_name`` is ``gen_ai.evaluation.result``), one per property verdict and one per gate
decision, parented to the span they evaluate when there is one (the gateway's rung span; a
checked OTel trace's span whose step was the evidence). Attributes the convention lacks are
``admiss.*``. The gateway's spans: one per request (continuing an incoming ``traceparent``),
one per rung reached, a GenAI client span per model call; each gate decision is also an
event on its rung's span, so a trace view without the logs shows it.

Telemetry is on when the standard ``OTEL_*`` variables ask for it (an OTLP endpoint, or
``OTEL_TRACES_EXPORTER`` / ``OTEL_LOGS_EXPORTER``) or admiss.toml has a ``[telemetry]``
table; ``OTEL_SDK_DISABLED=true`` turns it off. Off, opentelemetry is never imported.
docs/integrations/otel.md has the details.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Iterable, Mapping

import attrs

from admiss import __version__
from admiss.config import TelemetrySettings

EVENT = "gen_ai.evaluation.result"
SIGNALS = ("traces", "logs")
EXPORTERS = ("otlp", "console", "none")
# The variables that name an OTLP endpoint: any of them turns a signal on by default.
_ENDPOINT_VARIABLES = {
    "traces": ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    "logs": ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"),
}
_SIGNAL_PATHS = {"traces": "/v1/traces", "logs": "/v1/logs"}
_EXCLUSION_KEYS = {"forbidden": "admiss.excluded.forbidden", "inadmissible": "admiss.excluded.inadmissible",
                   "shortcut-rejected": "admiss.excluded.shortcut_rejected"}
_HEX = frozenset("0123456789abcdefABCDEF")


@attrs.frozen
class Plan:
    """Which signals go out and how: each exporter is "otlp", "console" or None (off)."""

    traces: str | None
    logs: str | None
    # The [telemetry] endpoint, used only where no OTEL_* variable names one.
    endpoint: str | None = None
    service_name: str = "admiss"
    warnings: tuple[str, ...] = ()


def plan_for(settings: TelemetrySettings | None, environ: Mapping[str, str] = os.environ) -> Plan | None:
    """What to export under ``settings`` (the [telemetry] table, or None) and ``environ``;
    None when telemetry is off. Reads no module of opentelemetry."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    warnings: list[str] = []
    chosen = {signal: _exporter(signal, settings, environ, warnings) for signal in SIGNALS}
    if chosen["traces"] is None and chosen["logs"] is None:
        return None
    protocol = environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf").strip()
    if protocol != "http/protobuf":
        warnings.append(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: admiss sends OTLP over http/protobuf only")
    return Plan(chosen["traces"], chosen["logs"], settings.endpoint if settings else None,
                settings.service_name if settings else "admiss", tuple(warnings))


def _exporter(signal: str, settings: TelemetrySettings | None, environ: Mapping[str, str],
              warnings: list[str]) -> str | None:
    variable = f"OTEL_{signal.upper()}_EXPORTER"
    named = [v.strip() for v in environ.get(variable, "").split(",") if v.strip()]
    if named:
        known = [v for v in named if v in EXPORTERS]
        for value in named:
            if value not in EXPORTERS:
                warnings.append(f"{variable}={value} is not one admiss has ({', '.join(EXPORTERS)}): ignored")
        return None if not known or "none" in known else known[0]
    if any(environ.get(name) for name in _ENDPOINT_VARIABLES[signal]):
        return "otlp"
    if settings is not None and getattr(settings, signal):
        return "otlp"
    return None


def telemetry_for(settings: TelemetrySettings | None, environ: Mapping[str, str] = os.environ) -> "Telemetry | None":
    """A Telemetry when ``settings`` or ``environ`` turn it on, else None (at no cost)."""
    plan = plan_for(settings, environ)
    if plan is None:
        return None
    for warning in plan.warnings:
        sys.stderr.write(f"admiss: telemetry: {warning}\n")
    try:
        return Telemetry(plan, environ)
    except ModuleNotFoundError as missing:
        if not (missing.name or "").startswith("opentelemetry"):
            raise
        # OTEL_* variables are often set for a whole host: their presence must not stop a run.
        sys.stderr.write("admiss: telemetry is asked for, but OpenTelemetry is not installed: "
                         "pip install 'admiss[otel]'; going on without it\n")
        return None


class Telemetry:
    """The tracer and the event logger of one process, exporting in the background."""

    def __init__(self, plan: Plan, environ: Mapping[str, str] = os.environ):
        # Imported here, not at the top: telemetry off must not pay opentelemetry's start-up time.
        from opentelemetry.sdk.resources import Resource

        attributes = {} if environ.get("OTEL_SERVICE_NAME") else {"service.name": plan.service_name}
        resource = Resource.create({**attributes, "service.version": __version__})
        self.plan = plan
        # admiss check makes events faster than one exporter thread sends them, and the
        # SDK's queue drops what comes past its size: a batch waits for an export (in
        # report()) before the queue can fill. The gateway never waits; past the queue
        # it drops, as the SDK does.
        self._unflushed, self._flush_every = 0, _queue_size(environ) // 2
        self._tracer_provider = self.tracer = None
        self._logger_provider = self.logger = None
        if plan.traces:
            self._tracer_provider, self.tracer = _pipeline("traces", plan, resource, environ)
        if plan.logs:
            self._logger_provider, self.logger = _pipeline("logs", plan, resource, environ)

    # ------------------------------------------------------------ admiss check

    def report(self, report: Any) -> None:
        """The events of one check report: each property's verdict, each gate's decision."""
        if self.logger is None:
            return
        common = {"admiss.rubric": report.rubric.name, "admiss.bundle": report.bundle_name or ""}
        for result in report.properties:
            self._event(property_attributes(result, common), _evidence_context(result.admitted or
                                                                            [item for item, _ in result.excluded]))
        self._unflushed += len(report.properties)
        if report.chain is not None:
            context = _evidence_context(reversed(report.evidence))
            for attributes in gate_attributes(report.chain, _policies(report.rubric.ir, report.chain.name), common):
                self._event(attributes, context)
                self._unflushed += 1
        if self._unflushed >= self._flush_every:
            self._unflushed = 0
            self._logger_provider.force_flush()

    def _event(self, attributes: dict[str, Any], context: Any = None) -> None:
        self.logger.emit(event_name=EVENT, attributes=attributes, context=context, timestamp=time.time_ns())

    # ------------------------------------------------------------ admiss serve

    def served(self, served: Any, chain: Any, traceparent: str | None, tracestate: str | None,
               started_ns: int) -> None:
        """The spans and events of one gateway request, drawn from its receipt once it is
        stored. ``chain`` is the CompiledChain served (for the gates' ON ABSTAIN)."""
        from opentelemetry.trace import SpanKind, set_span_in_context
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        ended_ns = time.time_ns()
        receipt = served.receipt
        carrier = {"traceparent": traceparent or "", "tracestate": tracestate or ""}
        parent = TraceContextTextMapPropagator().extract(carrier) if traceparent else None
        common = {"admiss.receipt.id": receipt["id"]}
        policies = {r.name: [g.ir.on_abstain for g in r.gates] for r in chain.rungs}
        events = gate_attributes_by_rung(receipt["chain"], policies, common, served.rung, receipt["request_id"])
        tracer = self.tracer
        if tracer is None:  # events only: no span to parent them to
            for attributes in (a for rung in events.values() for a in rung):
                self._event(attributes)
            return
        request = tracer.start_span("POST /v1/chat/completions", context=parent, kind=SpanKind.SERVER,
                                    start_time=started_ns, attributes=request_attributes(served))
        inside = set_span_in_context(request)
        # Rungs ran one after another from the start of the cascade, which follows the
        # request's start by the time its body took to read (well under a millisecond for a
        # client on the same network): each rung's span is laid from there by its latency.
        at = started_ns
        for rung in receipt["chain"]["rungs"]:
            name = rung["rung"]
            if name not in receipt["latency_ms"]:
                continue  # never reached
            length = int(receipt["latency_ms"][name] * 1e6)
            span = tracer.start_span(f"admiss.rung {name}", context=inside, start_time=at,
                                     attributes=rung_attributes(rung))
            rung_context = set_span_in_context(span)
            for call in _calls_of(receipt["usage"], rung, at, length):
                call_span = tracer.start_span(call.name, context=rung_context, kind=SpanKind.CLIENT,
                                              start_time=call.start_ns, attributes=call.attributes)
                call_span.end(call.start_ns + call.length_ns)
            for attributes in events.get(name, ()):
                span.add_event(EVENT, attributes, timestamp=at + length)
                if self.logger is not None:
                    self._event(attributes, rung_context)
            span.end(at + length)
            at += length
        request.end(max(ended_ns, at))

    # ------------------------------------------------------------ both

    def flush(self) -> None:
        for provider in (self._tracer_provider, self._logger_provider):
            if provider is not None:
                provider.force_flush()

    def close(self) -> None:
        """Export what is queued and stop the exporters."""
        for provider in (self._tracer_provider, self._logger_provider):
            if provider is not None:
                provider.shutdown()


def _queue_size(environ: Mapping[str, str]) -> int:
    """The log record processor's queue size, as the SDK reads it (2048 by default)."""
    value = environ.get("OTEL_BLRP_MAX_QUEUE_SIZE", "")
    return int(value) if value.isdigit() and int(value) >= 2 else 2048


def _pipeline(signal: str, plan: Plan, resource: Any, environ: Mapping[str, str]) -> tuple[Any, Any]:
    """(provider, tracer or logger) of one signal, exporting through a batch processor."""
    if signal == "traces":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Otlp
        from opentelemetry.sdk.trace import TracerProvider as Provider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor as Batch, ConsoleSpanExporter as Console
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as Otlp
        from opentelemetry.sdk._logs import LoggerProvider as Provider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor as Batch, ConsoleLogRecordExporter as Console
    provider = Provider(resource=resource)
    if getattr(plan, signal) == "console":
        exporter = Console(out=sys.stderr)  # stdout holds the reports
    else:
        exporter = Otlp(endpoint=_endpoint(signal, plan, environ))
    if signal == "traces":
        provider.add_span_processor(Batch(exporter))
        return provider, provider.get_tracer("admiss", __version__)
    provider.add_log_record_processor(Batch(exporter))
    return provider, provider.get_logger("admiss", __version__)


def _endpoint(signal: str, plan: Plan, environ: Mapping[str, str]) -> str | None:
    """The [telemetry] endpoint with the signal's path, where no variable names one (the
    exporter reads the variables itself, with their own rules for paths)."""
    if plan.endpoint is None or any(environ.get(name) for name in _ENDPOINT_VARIABLES[signal]):
        return None
    return plan.endpoint + _SIGNAL_PATHS[signal]


# ---------------------------------------------------------------- attributes


def property_attributes(result: Any, common: Mapping[str, Any]) -> dict[str, Any]:
    """The event of one property's verdict."""
    counts = dict.fromkeys(_EXCLUSION_KEYS.values(), 0)
    for _, exclusion in result.excluded:
        counts[_EXCLUSION_KEYS[exclusion.reason]] += 1
    return {
        "gen_ai.evaluation.name": result.prop.name,
        "gen_ai.evaluation.score.value": 1.0 if result.verdict == "yes" else 0.0,
        "gen_ai.evaluation.score.label": result.verdict,
        "gen_ai.evaluation.explanation": result.rationale,
        "admiss.evaluation.kind": "property",
        "admiss.evidence.admitted": len(result.admitted),
        **counts,
        "admiss.default_verdict": result.prop.default,
        **common,
    }


def gate_attributes(chain: Any, policies: Mapping[str, list[str]], common: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events of a checked chain's gate decisions, rung by rung."""
    records = [{"rung": r.rung, "model": r.model, "gates": [attrs.asdict(g, recurse=False) for g in r.gates]}
               for r in chain.rungs]
    by_rung = gate_attributes_by_rung({"name": chain.name, "rungs": records}, policies, common)
    return [attributes for rung in by_rung.values() for attributes in rung]


def gate_attributes_by_rung(chain: Mapping[str, Any], policies: Mapping[str, list[str]], common: Mapping[str, Any],
                            served_rung: str | None = None, response_id: str | None = None
                            ) -> dict[str, list[dict[str, Any]]]:
    """Rung name → the events of its gates' decisions, from a chain as the JSON report and
    the receipt write it (``gate``, ``verdict``, ``effective``, ``score``, ``reason``, ...).
    The served rung's events name the response the client got (``response_id``)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for rung in chain["rungs"]:
        name = rung["rung"]
        written = policies.get(name, [])
        events = out.setdefault(name, [])
        for position, gate in enumerate(rung["gates"]):
            attributes = {
                "gen_ai.evaluation.name": gate["gate"],
                "gen_ai.evaluation.score.label": gate["verdict"],
                "admiss.evaluation.kind": "gate",
                "admiss.chain": chain["name"],
                "admiss.rung": name,
                "admiss.gate.position": position,
                "admiss.gate.effective": gate["effective"],
                "admiss.gate.on_abstain": written[position] if position < len(written) else "fail_open",
                "admiss.gate.disabled": bool(gate["disabled"]),
                "admiss.gate.cost_usd": float(gate["gate_cost_usd"]),
                "admiss.gate.duration_ms": float(gate["duration_ms"]),
                **common,
            }
            if gate["score"] is not None:
                attributes["gen_ai.evaluation.score.value"] = float(gate["score"])
            if gate["reason"]:
                attributes["gen_ai.evaluation.explanation"] = gate["reason"]
            if gate.get("fault"):
                attributes["error.type"] = f"{gate['fault']}_fault"
            if rung["model"]:
                attributes["gen_ai.request.model"] = rung["model"]
            if response_id is not None and name == served_rung:
                attributes["gen_ai.response.id"] = response_id
            events.append(attributes)
    return out


def _policies(rubric_ir: Any, chain_name: str) -> dict[str, list[str]]:
    chain = next((c for c in rubric_ir.chains if c.name == chain_name), None)
    return {} if chain is None else {r.name: [g.on_abstain for g in r.gates] for r in chain.rungs}


def request_attributes(served: Any) -> dict[str, Any]:
    receipt = served.receipt
    chain = receipt["chain"]
    usage = served.usage
    return {
        "http.request.method": "POST",
        "url.path": "/v1/chat/completions",
        "http.response.status_code": 200 if served.rung is not None else 422,
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": chain["name"],
        "gen_ai.response.id": receipt["request_id"],
        "gen_ai.usage.input_tokens": usage["prompt_tokens"],
        "gen_ai.usage.output_tokens": usage["completion_tokens"],
        "admiss.receipt.id": receipt["id"],
        "admiss.chain": chain["name"],
        "admiss.outcome": served.outcome,
        "admiss.served_rung": served.rung or "",
        "admiss.model_cost_usd": float(chain["model_cost_usd"]),
        "admiss.gate_cost_usd": float(chain["gate_cost_usd"]),
    }


def rung_attributes(rung: Mapping[str, Any]) -> dict[str, Any]:
    return {"admiss.rung": rung["rung"], "admiss.rung.model": rung["model"] or "", "admiss.rung.outcome": rung["outcome"],
            "admiss.rung.cost_usd": float(rung["cost_usd"])}


@attrs.frozen
class _CallSpan:
    name: str
    start_ns: int
    length_ns: int
    attributes: dict[str, Any]


def _calls_of(usage: list[Mapping[str, Any]], rung: Mapping[str, Any], start_ns: int, length_ns: int) -> list[_CallSpan]:
    """The GenAI client spans of a rung's model calls. The rung's own call comes first and
    its gates run after it: the call takes the rung's time less its gates', and a gate's
    own calls (a judge's, a consistency gate's samples) take that gate's time."""
    gates = rung["gates"]
    gate_ns = int(sum(g["duration_ms"] for g in gates) * 1e6)
    call_ns = max(0, length_ns - gate_ns)
    out = []
    for entry in (u for u in usage if u["rung"] == rung["rung"]):
        if entry["purpose"] == "rung":
            at, length = start_ns, call_ns
        else:
            gate = next((g for g in gates if g["gate"] == entry["purpose"]), None)
            at, length = start_ns + call_ns, int(gate["duration_ms"] * 1e6) if gate else 0
        out.append(_CallSpan(f"chat {entry['model']}", at, length, _call_attributes(entry)))
    return out


def _call_attributes(entry: Mapping[str, Any]) -> dict[str, Any]:
    provider, _, model = entry["model"].partition("/")
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": model,
                  "admiss.call.purpose": entry["purpose"], "admiss.cost_usd": float(entry["cost_usd"])}
    if entry["prompt_tokens"] is not None:
        attributes["gen_ai.usage.input_tokens"] = entry["prompt_tokens"]
    if entry["completion_tokens"] is not None:
        attributes["gen_ai.usage.output_tokens"] = entry["completion_tokens"]
    return attributes


# ---------------------------------------------------------------- the span evaluated


def _evidence_context(items: Iterable[Mapping[str, Any]]) -> Any:
    """The context of the first item that came from an OTel trace's span (its step names
    the span and trace ids), so the event is parented to the span it evaluates; else None."""
    for item in items:
        # type() is dict, not isinstance(..., Mapping): an abstract class's check cost 19 µs
        # an event here, most of it spent on bundles whose items have no step at all.
        step = item.get("step") if type(item) is dict else None
        if type(step) is not dict:
            continue
        span_id, trace_id = _hex_id(step.get("span_id"), 16), _hex_id(step.get("trace_id"), 32)
        if span_id and trace_id:
            from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

            span = NonRecordingSpan(SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags.SAMPLED))
            return set_span_in_context(span)
    return None


def _hex_id(value: Any, digits: int) -> int:
    """An OTLP JSON id (hex, as the OTLP JSON encoding writes it) as a number; 0 when it is
    not one (a trace is untrusted input: a malformed id names no span)."""
    if type(value) is not str or len(value) != digits or not _HEX.issuperset(value):
        return 0
    return int(value, 16)
