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
Over OTLP, records are encoded here (otlp_wire.py) and sent by an exporter process that
runs this module (exporter_main) with the SDK's configuration and HTTP client: admiss
check hands over each report's facts (_ReportFacts; the process is started first thing,
launch.py) and the gateway each request as JSON, and their events and spans are made in
the exporter process, off the checking or serving core. The console exporters go through
the SDK in process.
docs/integrations/otel.md has the details.
"""

from __future__ import annotations

import atexit
import collections
import json
import marshal
import operator
import os
import struct
import sys
import time
from typing import TYPE_CHECKING, Any, Iterable, Mapping, NamedTuple, Sequence

from admiss import __version__
from admiss.integrations import otlp_wire

if TYPE_CHECKING:  # the exporter process starts without the config reader
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
_HEX = frozenset("0123456789abcdefABCDEF")


class Plan(NamedTuple):
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
    if _disabled(environ):
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


def _disabled(environ: Mapping[str, str]) -> bool:
    return environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


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


def telemetry_for(settings: TelemetrySettings | None, environ: Mapping[str, str] = os.environ,
                  spans: bool = True) -> "Telemetry | None":
    """A Telemetry when ``settings`` or ``environ`` turn it on, else None (at no cost);
    ``spans`` False for a process that makes no spans (admiss check)."""
    plan = plan_for(settings, environ)
    if plan is None:
        return None
    for warning in plan.warnings:
        sys.stderr.write(f"admiss: telemetry: {warning}\n")
    try:
        return Telemetry(plan, environ, spans)
    except ModuleNotFoundError as missing:
        if not (missing.name or "").startswith("opentelemetry"):
            raise
        # OTEL_* variables are often set for a whole host: their presence must not stop a run.
        sys.stderr.write("admiss: telemetry is asked for, but OpenTelemetry is not installed: "
                         "pip install 'admiss[otel]'; going on without it\n")
        return None


class Telemetry:
    """The events and spans of one process. Sent over OTLP, they are encoded here
    (otlp_wire.py) and handed to an exporter process (exporter_main)
    that holds the SDK's configuration (resource, endpoint, headers, compression, retries)
    and does the HTTP, off this process's core; printed to the console, they go through
    the SDK as usual. ``spans`` False (admiss check, which makes none) builds no tracer."""

    def __init__(self, plan: Plan, environ: Mapping[str, str] = os.environ, spans: bool = True):
        self.plan = plan
        wire = [signal for signal in SIGNALS if getattr(plan, signal) == "otlp" and (spans or signal == "logs")]
        # The gateway's spans and events are made in the exporter process (served) when
        # every signal that is on goes over OTLP.
        self._ships = spans and bool(wire) and all(getattr(plan, signal) in ("otlp", None) for signal in SIGNALS)
        self._policies: dict[Any, dict[str, list[str]]] = {}
        # admiss check must lose no event: when the exporter falls behind, it waits. The
        # gateway never waits on telemetry: past the queue it drops, counts and says so.
        self._channel = _Channel(plan, environ, wire, block=not spans, requests=self._ships) if wire else None
        self._providers: list[Any] = []
        self.tracer = self._events = self._facts = None
        if self._ships:
            return
        if plan.traces and spans:
            self.tracer = self._tracer(plan, environ)
        if plan.logs == "otlp":
            self._events = _WireEvents(self._channel)
            self._facts = _ReportFacts(self._channel)
            # Each report straight to its facts (report below): a call fewer a bundle.
            self.report = self._facts.add  # type: ignore[method-assign]
        elif plan.logs:
            self._events = _SdkEvents(self._sdk_provider("logs", plan, environ))

    def _tracer(self, plan: Plan, environ: Mapping[str, str]) -> "_SdkSpans | _WireSpans":
        if plan.traces == "otlp":
            return _WireSpans(self._channel)
        return _SdkSpans(self._sdk_provider("traces", plan, environ).get_tracer("admiss", __version__))

    def _sdk_provider(self, signal: str, plan: Plan, environ: Mapping[str, str]) -> Any:
        from opentelemetry.sdk.resources import Resource

        if signal == "traces":
            from opentelemetry.sdk.trace import TracerProvider

            from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

            provider = TracerProvider(resource=Resource.create(resource_attributes(plan, environ)))
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        else:
            from opentelemetry.sdk._logs import LoggerProvider
            from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, ConsoleLogRecordExporter

            provider = LoggerProvider(resource=Resource.create(resource_attributes(plan, environ)))
            # stdout holds the reports
            provider.add_log_record_processor(BatchLogRecordProcessor(ConsoleLogRecordExporter(out=sys.stderr)))
        self._providers.append(provider)
        return provider

    # ------------------------------------------------------------ admiss check

    def report(self, report: Any) -> None:
        """The events of one check report: each property's verdict, each gate's decision.
        Over OTLP the report's facts go to the exporter process, which makes the events (in
        place of this method, __init__ puts _ReportFacts.add); to the console, they are made
        here, through the SDK."""
        if self._events is None:
            return
        emit_report(self._events, self._events.prepare(report_common(report)),
                    map(property_fields, report.properties), *report_parents(report))

    # ------------------------------------------------------------ admiss serve

    def served(self, served: Any, chain: Any, traceparent: str | None, tracestate: str | None,
               started_ns: int) -> None:
        """The spans and events of one gateway request, drawn from its receipt once it is
        stored. ``chain`` is the CompiledChain served (for the gates' ON ABSTAIN). Over
        OTLP they are made in the exporter process from the request as JSON (its receipt
        is JSON already): making them here cost some 150 µs of CPU a request on the
        serving process's core, where a plain request costs 650 µs."""
        policies = self._policies.get(chain)
        if policies is None:
            policies = self._policies[chain] = {r.name: [g.ir.on_abstain for g in r.gates] for r in chain.rungs}
        request = {"receipt": served.receipt, "rung": served.rung, "outcome": served.outcome, "usage": served.usage,
                   "policies": policies, "traceparent": traceparent, "tracestate": tracestate,
                   "started_ns": started_ns, "ended_ns": time.time_ns()}
        if self._ships:
            from admiss.jsonio import dumps_line  # only the gateway's requests go as JSON

            self._channel.put(b"R", 1, dumps_line(request) + b"\n")
        else:
            request_records(request, self.tracer, self._events)

    # ------------------------------------------------------------ both

    def flush(self) -> None:
        if self._facts is not None:
            self._facts.sent()
        for provider in self._providers:
            provider.force_flush()
        if self._channel is not None:
            self._channel.flush()

    def close(self) -> None:
        """Export what is queued and stop the exporters."""
        if self._facts is not None:
            self._facts.sent()
        for provider in self._providers:
            provider.shutdown()
        if self._channel is not None:
            self._channel.close()


def request_records(request: Mapping[str, Any], spans: Any, events: Any) -> None:
    """Make the spans (through ``spans``, a _WireSpans or _SdkSpans, or None) and events
    (``events``, or None) of one gateway request, from what Telemetry.served says of it."""
    receipt = request["receipt"]
    # What names this request alone goes apart from the gates' attributes, which come
    # again request after request and are encoded once (otlp_wire.Attributes): in them, a
    # new id made every event's attributes be encoded afresh (117 µs of the exporter's CPU
    # an agent's request, 92 µs apart). The served rung's events name the response
    # the client got, before the receipt, as they would in one dict.
    common = {"admiss.receipt.id": receipt["id"]}
    served = {"gen_ai.response.id": receipt["request_id"], **common}
    made_ns = time.time_ns()
    # Whether the rung is the served one → its events' own attributes, and as ``events`` prepared them.
    told = {is_served: (unique, events.prepare(unique, made_ns) if events is not None else None)
            for is_served, unique in ((False, common), (True, served))}
    by_rung = gate_attributes_by_rung(receipt["chain"], request["policies"])
    if spans is None:  # events only: no span to parent them to
        if events is not None:
            for name, rung in by_rung.items():
                for attributes in rung:
                    events.emit(attributes, told[name == request["rung"]][1])
            events.sent()
        return
    started_ns = request["started_ns"]
    root = spans.root(request["traceparent"], request["tracestate"], "POST /v1/chat/completions", _SERVER, started_ns,
                      request_attributes(request))
    # Rungs ran one after another from the start of the cascade, which follows the
    # request's start by the time its body took to read (well under a millisecond for a
    # client on the same network): each rung's span is laid from there by its latency.
    at = started_ns
    for rung in receipt["chain"]["rungs"]:
        name = rung["rung"]
        if name not in receipt["latency_ms"]:
            continue  # never reached
        length = int(receipt["latency_ms"][name] * 1e6)
        span = spans.child(root, f"admiss.rung {name}", _INTERNAL, at, rung_attributes(rung))
        for call in _calls_of(receipt["usage"], rung, at, length):
            spans.end(spans.child(span, call.name, _CLIENT, call.start_ns, call.attributes),
                      call.start_ns + call.length_ns)
        ids = spans.ids(span)
        unique, prepared = told[name == request["rung"]]
        for attributes in by_rung.get(name, ()):
            spans.event(span, attributes, at + length, unique)
            if events is not None:
                events.emit(attributes, prepared, ids)
        spans.end(span, at + length)
        at += length
    spans.end(root, max(request["ended_ns"], at))
    spans.sent()
    if events is not None:
        events.sent()


def resource_attributes(plan: Plan, environ: Mapping[str, str]) -> dict[str, Any]:
    """What admiss adds to the resource the SDK builds from OTEL_SERVICE_NAME and
    OTEL_RESOURCE_ATTRIBUTES."""
    attributes = {} if environ.get("OTEL_SERVICE_NAME") else {"service.name": plan.service_name}
    return {**attributes, "service.version": __version__}


class _SdkEvents:
    """Events through the SDK's logger (the console exporter)."""

    def __init__(self, provider: Any):
        self.logger = provider.get_logger("admiss", __version__)

    def prepare(self, common: dict[str, Any], time_ns: int | None = None) -> dict[str, Any]:
        return common

    def emit_property(self, fields: tuple, common: dict[str, Any], parent: tuple[int, int, int] | None) -> None:
        self.emit(property_attributes(fields), common, parent)

    def sent(self) -> None:
        """Nothing is held here: the SDK's processor queues each record as it comes."""

    def emit(self, attributes: dict[str, Any], common: dict[str, Any],
             parent: tuple[int, int, int] | None = None) -> None:
        attributes = {**attributes, **common}
        context = None
        if parent is not None:
            from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

            trace_id, span_id, flags = parent
            span_context = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))
            context = set_span_in_context(NonRecordingSpan(span_context))
        self.logger.emit(event_name=EVENT, attributes=attributes, context=context, timestamp=time.time_ns())


_EVENT_NAME = otlp_wire.field(12, EVENT.encode())

_KEPT_PROPERTIES = 4096
# Reports' shapes kept by the exporter process (_Reports): a shape's entry is its events'
# template.
_KEPT_SHAPES = 16384
# ... and at most this many bytes of their templates (_Reports._template): 16,384 shapes of
# 3 properties hold some 25 MB, of 10 properties some 80.
_KEPT_SHAPES_SIZE = 32 << 20
# Events kept as format text by their property's key and their bundle's name's length
# (_Reports._forms), from which a new shape's template is joined: some 500 bytes each.
_KEPT_FORMS = 16384


class _WireEvents:
    """Events encoded here, as the SDK's OTLP encoder would write them, for the exporter
    process: held until the report or request is done (``sent``), then queued at once.
    The events of one report or request are made together and carry one time."""

    def __init__(self, channel: "_Channel"):
        self.put = channel.put
        self.held: list[bytes] = []  # the parts of records in_scope
        self.count = 0
        # property_fields → their attributes encoded, and their event_head: building the
        # attributes and encoding them cost some 10 µs an event, more than the 2 µs that
        # is 5 % of checking one.
        self.properties: dict[tuple, tuple[bytes, tuple[bytes, int]]] = {}
        self.rubric: tuple[str, bytes] = ("", b"")
        self.time_ns, self.stamp = 0, b""

    def prepare(self, common: dict[str, Any], time_ns: int | None = None) -> bytes:
        """``common`` encoded for each event of a report or request, made at ``time_ns``
        (by default now)."""
        self.time_ns = time.time_ns() if time_ns is None else time_ns
        self.stamp = otlp_wire.FIXED64(self.time_ns)
        # A rubric's name comes again and again (kept); a bundle's or receipt's, never.
        encode = otlp_wire.LOG_ATTRIBUTES.encode_string
        return b"".join([self._rubric(value) if key == "admiss.rubric" else encode(key, value)
                         for key, value in common.items()])

    def _rubric(self, name: str) -> bytes:
        if self.rubric[0] != name:
            self.rubric = (name, otlp_wire.LOG_ATTRIBUTES.encode_one("admiss.rubric", name))
        return self.rubric[1]

    def kept(self, key: tuple) -> tuple[bytes, tuple[bytes, int]]:
        """A property's event from its property_fields: its attributes encoded, and their event_head."""
        kept = self.properties.get(key)
        if kept is None:
            if len(self.properties) >= _KEPT_PROPERTIES:
                self.properties.clear()
            encoded = otlp_wire.LOG_ATTRIBUTES.encode_once(property_attributes(key))
            kept = self.properties[key] = (encoded, otlp_wire.event_head(_EVENT_NAME, encoded))
        return kept

    def emit_property(self, key: tuple, common: bytes, parent: tuple[int, int, int] | None) -> None:
        """The event of a property's verdict, from its property_fields."""
        kept = self.kept(key)
        if parent is None:
            self.held += otlp_wire.event_in_scope(self.stamp, kept[1], common, _EVENT_NAME)
            self.count += 1
        else:
            self._add(otlp_wire.log_record(self.time_ns, _EVENT_NAME, kept[0] + common, *parent))

    def emit(self, attributes: dict[str, Any], common: bytes, parent: tuple[int, int, int] | None = None) -> None:
        encoded = otlp_wire.LOG_ATTRIBUTES.encode(attributes) + common
        self._add(otlp_wire.log_record(self.time_ns, _EVENT_NAME, encoded, *(parent or ())))

    def _add(self, record: bytes) -> None:
        self.held.append(otlp_wire.in_scope(record))
        self.count += 1

    def sent(self) -> None:
        if self.held:
            self.put(b"L", self.count, b"".join(self.held))
            self.held, self.count = [], 0


def report_common(report: Any) -> dict[str, Any]:
    """The attributes every event of a check report has."""
    return {"admiss.rubric": report.rubric.name, "admiss.bundle": report.bundle_name or ""}


def report_parents(report: Any) -> tuple[list[tuple[int, int, int] | None], tuple[int, int, int] | None,
                                         list[dict[str, Any]]]:
    """Of a check report: per property the span its event names (a checked OTel trace's
    span whose step was the evidence, else None), the span its gates' events name, and
    the gates' events."""
    # Only a checked trace's evidence items are its steps (a bundle's "step" keys name no span).
    traced = report.trace is not None and _evidence_span(report.evidence) is not None
    parents = [_evidence_span(r.admitted or [item for item, _ in r.excluded]) if traced else None
               for r in report.properties]
    if report.chain is None:
        return parents, None, []
    gates = gate_attributes(report.chain, _policies(report.rubric.ir, report.chain.name))
    return parents, _evidence_span(reversed(report.evidence)) if traced else None, gates


def emit_report(events: Any, common: Any, fields: Iterable[tuple], parents: Iterable[Any], gate_parent: Any,
                gates: Iterable[dict[str, Any]]) -> None:
    """A check report's events through ``events`` (a _WireEvents or _SdkEvents), from its
    properties' property_fields and report_parents' answer; ``common`` prepared by it."""
    for key, parent in zip(fields, parents):
        events.emit_property(key, common, parent)
    for attributes in gates:
        events.emit(attributes, common, gate_parent)
    events.sent()


# A property's counts go packed in one number (_ReportFacts), this many bits a count: its
# admitted count in the lowest bits, then forbidden, inadmissible and shortcut-rejected
# (CountingProperty.check counts them as it classifies). Four counts of 7 bits stay under
# 2**30, one digit of CPython's ints; no count passes the number of items, so bundles of
# more than _COUNT_MASK items are told in full.
_COUNT_BITS = 7
_COUNT_MASK = (1 << _COUNT_BITS) - 1
# One property's head kept by one int (_Reports._heads): its place among the rubrics'
# properties, above its packed counts' bits.
_PACKED_BITS = 4 * _COUNT_BITS
_REASON_WEIGHTS = {"forbidden": 1 << _COUNT_BITS, "inadmissible": 1 << 2 * _COUNT_BITS,
                   "shortcut-rejected": 1 << 3 * _COUNT_BITS}
# The facts _ReportFacts hands over begin with a number: a report of the common shape's is
# its rubric's (0 and up: its properties' counts follow); a report told in full's, and a
# rubric's, are these.
_FULL, _RUBRIC = -1, -2
_COUNTS = operator.attrgetter("counts")
# The facts go to the exporter process when this many reports are held, or with a report
# that comes this long after the last put: each put wakes the exporter, and a wake for every
# 64 reports (every 6 ms of a quick batch) cost it a fifth more CPU than one every 50 ms
# (docs/performance.md, "Telemetry, thirteenth pass"). A slow batch's reports go one by one.
_REPORTS_A_PUT, _PUT_AFTER_NS = 1024, 50_000_000


class _ReportFacts:
    """admiss check's reports, handed to the exporter process as the few facts their events
    are made of; the exporter process makes the events (_Reports), the same records
    Telemetry.report would make here. Per report of the common shape (no chain, no trace
    checked, at most _COUNT_MASK items): its rubric by number (the rubric's name, and per
    property its name, DEFAULT, verdicts and rationales, go once, _RUBRIC), its bundle's
    name, its time, and per property one number, its counts, which the checker made as it
    classified the items (a rubric's properties count from its first report on:
    CompiledProperty.count_exclusions). Other reports, and each rubric's first, go with
    their events' fields and spans (_FULL). Making the events here cost the checking
    process some 20 µs of CPU a bundle of 3 properties in a run of 10,000 (of 55-80 µs a
    bundle checking it): 5 % of the run allows about 3 µs."""

    def __init__(self, channel: "_Channel"):
        self.put = channel.put
        # a compiled rubric → (its number, its properties)
        self.rubrics: dict[Any, tuple[int, int]] = {}
        self.held: list[tuple] = []
        self.count = 0  # the events of the facts held
        self.clock = time.time_ns
        self.put_ns = 0  # the time of the report the last put ended with

    def add(self, report: Any) -> None:
        props = report.properties
        known = self.rubrics.get(report.rubric)
        if known is None:
            known = self._rubric(report.rubric)
        now = self.clock()
        held = self.held
        # A report of no trace (report.trace) has no evidence step whose span its events name.
        if report.chain is None and report.trace is None and len(props) == known[1] \
                and len(report.evidence) <= _COUNT_MASK:
            try:
                # One flat tuple, the counts in it: 0.2k instructions a report fewer than with
                # the counts in a list of their own (docs/performance.md, "fifteenth pass").
                held.append((known[0], report.bundle_name or "", now, *map(_COUNTS, props)))
                self.count += known[1]
            except AttributeError:  # checked before its rubric's properties counted: its first report
                self._told_in_full(report, known[0], now)
        else:
            self._told_in_full(report, known[0], now)
        if len(held) >= _REPORTS_A_PUT or now - self.put_ns >= _PUT_AFTER_NS:
            self.put_ns = now
            self.sent()

    def _told_in_full(self, report: Any, number: int, now: int) -> None:
        parents, gate_parent, gates = report_parents(report)
        self.held.append((_FULL, number, report.bundle_name or "", now,
                          [property_fields(r) for r in report.properties], parents, gate_parent, gates))
        self.count += len(report.properties) + len(gates)

    def _rubric(self, rubric: Any) -> tuple[int, int]:
        known = self.rubrics[rubric] = (len(self.rubrics), len(rubric.properties))
        self.held.append((_RUBRIC, known[0], rubric.name, [_property_row(p) for p in rubric.properties]))
        for prop in rubric.properties:
            prop.count_exclusions(_REASON_WEIGHTS)
        return known

    def sent(self) -> None:
        if self.held:
            self.put(b"C", self.count, self.held)
            self.held, self.count = [], 0


def _escaped(text: bytes) -> bytes:
    """``text`` as the constant text of a bytes %-format."""
    return text.replace(b"%", b"%%")


_ESCAPED_EVENT_NAME = _escaped(_EVENT_NAME)


def _property_row(prop: Any) -> tuple:
    """What a property's events say whatever the bundle: its name, its DEFAULT, and its
    verdict and rationale with some evidence admitted and with none, as the compiler's
    PropertyResult gives them."""
    from admiss.compiler import PropertyResult  # the exporter process never compiles

    some, none = PropertyResult(prop, [{"detail": ""}], []), PropertyResult(prop, [], [])
    return prop.name, prop.default, some.verdict, some.rationale, none.verdict, none.rationale


# The OTLP span kinds the gateway's spans have.
_INTERNAL, _SERVER, _CLIENT = 1, 2, 3


class _SdkSpans:
    """The gateway's spans through the SDK's tracer (the console exporter)."""

    def __init__(self, tracer: Any):
        from opentelemetry.trace import SpanKind

        self.tracer = tracer
        self.kinds = {_INTERNAL: SpanKind.INTERNAL, _SERVER: SpanKind.SERVER, _CLIENT: SpanKind.CLIENT}

    def root(self, traceparent: str | None, tracestate: str | None, name: str, kind: int, start_ns: int,
             attributes: dict[str, Any]) -> Any:
        return self.tracer.start_span(name, context=_incoming(traceparent, tracestate), kind=self.kinds[kind],
                                      start_time=start_ns, attributes=attributes)

    def child(self, parent: Any, name: str, kind: int, start_ns: int, attributes: dict[str, Any]) -> Any:
        from opentelemetry.trace import set_span_in_context

        return self.tracer.start_span(name, context=set_span_in_context(parent), kind=self.kinds[kind],
                                      start_time=start_ns, attributes=attributes)

    def ids(self, span: Any) -> tuple[int, int, int]:
        context = span.get_span_context()
        return context.trace_id, context.span_id, int(context.trace_flags)

    def event(self, span: Any, attributes: dict[str, Any], time_ns: int, unique: Mapping[str, Any]) -> None:
        """An event on ``span``: ``attributes`` then ``unique``, the request's own (its ids)."""
        span.add_event(EVENT, {**attributes, **unique}, timestamp=time_ns)

    def end(self, span: Any, end_ns: int) -> None:
        span.end(end_ns)

    def sent(self) -> None:
        """Nothing is held here: the SDK's processor queues each span as it ends."""


def _incoming(traceparent: str | None, tracestate: str | None) -> Any:
    """The context an incoming W3C ``traceparent`` names (None without one)."""
    if not traceparent:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract({"traceparent": traceparent, "tracestate": tracestate or ""})


class _OpenSpan(NamedTuple):
    """A span begun (its events are added until it ends)."""

    trace_id: int
    span_id: int
    parent_span_id: int
    parent_is_remote: bool
    flags: int  # its W3C trace flags, as the SDK's tracer sets them: sampled (1), random trace id (2)
    trace_state: str
    name: str
    kind: int
    start_ns: int
    attributes: dict[str, Any]
    events: list[bytes]

    @property
    def sampled(self) -> bool:
        return bool(self.flags & 1)


class _WireSpans:
    """The gateway's spans encoded here (otlp_wire.span) for the exporter process, without
    the SDK's Span objects: with their attribute checks and processor, the SDK's spans of
    one request cost some 250 µs of CPU (of 400 µs of telemetry a request, measured on the
    benchmark machine); these cost a tenth of it. The SDK still decides: its sampler (from
    OTEL_TRACES_SAMPLER, asked once per request at the root span: the sampler's children
    follow their parent's decision for every sampler the SDK names, parent-based or by
    trace id), its id generator, its W3C propagator for the incoming ``traceparent``."""

    def __init__(self, channel: "_Channel"):
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.trace import SpanKind, get_current_span

        provider = TracerProvider()  # the sampler and id generator, as OTEL_* set them
        self.sampler, self.id_generator, self.put = provider.sampler, provider.id_generator, channel.put
        self.server, self.current_span = SpanKind.SERVER, get_current_span
        self.held: list[bytes] = []
        self.unique: tuple[Any, bytes] = (None, b"")  # the last events' own attributes, and their encoding

    def root(self, traceparent: str | None, tracestate: str | None, name: str, kind: int, start_ns: int,
             attributes: dict[str, Any]) -> _OpenSpan:
        context = _incoming(traceparent, tracestate)
        parent = self.current_span(context).get_span_context() if context is not None else None
        if parent is not None and parent.is_valid:
            trace_id, parent_id, remote = parent.trace_id, parent.span_id, parent.is_remote
            random_id = parent.trace_flags.random_trace_id
        else:
            trace_id, parent_id, remote = self.id_generator.generate_trace_id(), 0, False
            random_id = self.id_generator.is_trace_id_random()
        decision = self.sampler.should_sample(context, trace_id, name, self.server, attributes)
        state = ",".join(f"{key}={value}" for key, value in decision.trace_state.items()) \
            if decision.trace_state is not None else ""
        # As the SDK's tracer sets them, which its log records parented to the span carry.
        flags = (1 if decision.decision.is_sampled() else 0) | (2 if random_id else 0)
        return _OpenSpan(trace_id, self.id_generator.generate_span_id(), parent_id, remote, flags, state, name, kind,
                         start_ns, dict(decision.attributes or attributes), [])

    def child(self, parent: _OpenSpan, name: str, kind: int, start_ns: int, attributes: dict[str, Any]) -> _OpenSpan:
        return _OpenSpan(parent.trace_id, self.id_generator.generate_span_id(), parent.span_id, False, parent.flags,
                         parent.trace_state, name, kind, start_ns, attributes, [])

    def ids(self, span: _OpenSpan) -> tuple[int, int, int]:
        return span.trace_id, span.span_id, span.flags

    def event(self, span: _OpenSpan, attributes: dict[str, Any], time_ns: int, unique: Mapping[str, Any]) -> None:
        """As _SdkSpans.event; ``unique`` is encoded once for all the events given it in turn."""
        if span.sampled:
            if self.unique[0] is not unique:
                self.unique = (unique, otlp_wire.EVENT_ATTRIBUTES.encode_once(unique))
            span.events.append(otlp_wire.span_event(EVENT, time_ns, attributes, self.unique[1]))

    def end(self, span: _OpenSpan, end_ns: int) -> None:
        if span.sampled:
            self.held.append(otlp_wire.in_scope(otlp_wire.span(
                span.trace_id, span.span_id, span.parent_span_id, span.parent_is_remote, span.name, span.kind,
                span.start_ns, end_ns, span.attributes, span.events, span.trace_state)))

    def sent(self) -> None:
        if self.held:
            self.put(b"T", len(self.held), b"".join(self.held))
            self.held = []


class _Channel:
    """Encoded records on their way to the exporter process, through its stdin, framed as
    kind (b"L" log records, b"T" spans; b"C" admiss check's report facts, b"R" the gateway's
    requests, which the exporter process makes records of), record count, length, the
    records in_scope (the facts in marshal's format, the requests as JSON lines). A frame
    is one export request's records (at most the signal's ``MAX_EXPORT_BATCH_SIZE``, but a
    report's or request's records are never split), so the exporter process joins frames
    and does not read records one by one.

    admiss check (``block``) writes each group of facts into the pipe itself, from the
    thread that checks: when the exporter falls behind, the full pipe makes the check wait,
    as it must (it loses no event). A writer thread there cost the check more than its
    facts: waiting for the GIL behind a check that lets go of it at every read and write,
    it was woken in vain some 1,500-7,000 times a second (its voluntary context switches,
    /proc), each wake the kernel's work and CPU time of the checking process that no count
    of instructions shows (docs/performance.md, "Telemetry, ninth pass").

    The gateway never waits on telemetry: its records go in a bounded queue that a writer
    thread empties into the pipe (a pipe write lets go of the GIL); past
    ``OTEL_BLRP_MAX_QUEUE_SIZE`` (2048) requests queued, ``put`` drops, counts the records
    and says so on stderr."""

    def __init__(self, plan: Plan, environ: Mapping[str, str], signals: list[str], block: bool,
                 requests: bool = False):
        """``requests``: the gateway's requests are sent (b"R" frames, JSON lines) for the
        exporter process to make their spans and events."""
        import threading

        # Said here, not by the exporter process: the extra missing is the run's own message.
        missing = _missing_module()
        if missing is not None:
            raise ModuleNotFoundError(f"No module named {missing!r}", name=missing)
        endpoints = {signal: _endpoint(signal, plan, environ) or "" for signal in signals}
        self.process = _exporter_process(environ)
        if block:
            _widen(self.process.stdin)
        # Its setup is its first line of input (it may have been started before it was known).
        # "check": the exporter serves admiss check (block), and yields it the core (_yield_the_core).
        self.process.stdin.write(json.dumps({"endpoints": endpoints, "resource": resource_attributes(plan, environ),
                                             "requests": requests, "check": block}).encode() + b"\n")
        self.process.stdin.flush()
        self.limit = _queue_size(environ)
        self.sizes = {_KINDS[signal]: _batch_size(signal, environ) for signal in SIGNALS}
        self.sizes[b"R"] = _WRITE_EVERY
        self.what = "requests' spans and events" if requests else "events and spans"
        self.filled: dict[bytes, int] = {}  # per kind, records in the exporter's batch (see _frames)
        self.dropped, self.closed, self.writing = 0, False, False
        self.handed = 0  # records (or requests) written to the exporter process
        self.pipe = self.process.stdin  # None once the exporter process is found gone
        self.queue: collections.deque[tuple[bytes, int, bytes]] = collections.deque()  # (kind, records, joined)
        self.ready = threading.Condition()
        self.writer = None if block else threading.Thread(target=self._write, name="admiss-telemetry", daemon=True)
        if self.writer is not None:
            self.writer.start()
        # A process that ends without closing its telemetry still sends what it queued.
        atexit.register(self.close)

    def put(self, kind: bytes, count: int, records: Any) -> None:
        """Hand over one report's or request's ``count`` records of one kind, each in_scope
        (or a group of reports' facts, a list, for b"C"): written now (``block``), else queued."""
        if self.writer is None:
            self._hand([(kind, count, records)])
            return
        queue = self.queue
        # A deque's append and len need no lock: the lock is taken only to wake the
        # writer or to drop (a lock per record cost more than encoding it).
        if len(queue) >= self.limit:
            with self.ready:
                self._drop(count)
            return
        queue.append((kind, count, records))
        if len(queue) == _WRITE_EVERY:
            with self.ready:
                self.ready.notify_all()

    def flush(self) -> None:
        """Wait until what is queued is in the exporter process, which sends it even if
        this process is ended next (a --jobs worker). Without a writer, it is there."""
        if self.writer is None:
            return
        with self.ready:
            self.ready.notify_all()
            while (self.queue or self.writing) and self.writer.is_alive():
                self.ready.wait(_WRITE_AFTER_S)

    def _drop(self, count: int) -> None:
        if not self.dropped:
            why = f"the exporter process is gone: the {self.what} that follow" if self.pipe is None else \
                f"the exporter falls behind: {self.what} past the queue of {self.limit} (OTEL_BLRP_MAX_QUEUE_SIZE)"
            sys.stderr.write(f"admiss: telemetry: {why} are dropped and counted\n")
        self.dropped += count

    def _write(self) -> None:
        queue = self.queue
        while True:
            with self.ready:
                if len(queue) < _WRITE_EVERY and not self.closed:
                    self.ready.wait(_WRITE_AFTER_S)
                frames = [queue.popleft() for _ in range(len(queue))]
                closed, self.writing = self.closed, bool(frames)
                self.ready.notify_all()
            if frames:
                self._hand(frames)
                with self.ready:
                    self.writing = False
                    self.ready.notify_all()
            if closed and not frames:
                return

    def _hand(self, entries: list[tuple[bytes, int, Any]]) -> None:
        """Write ``entries`` (kind, records, what put was given) into the exporter's pipe,
        or count their records dropped once the exporter process is gone."""
        count = sum(entry[1] for entry in entries)
        if self.pipe is not None:
            try:
                self.pipe.write(b"".join(self._frames(entries)))
                self.pipe.flush()
                self.handed += count
                return
            except OSError:  # BrokenPipeError among them: what follows is dropped
                self.pipe = None
        with self.ready:
            self._drop(count)

    def _frames(self, queued: list[tuple[bytes, int, bytes]]) -> list[bytes]:
        """The queued records as frames, kind by kind, cut where the exporter's batch of
        that kind will be full (``self.filled``, what it holds by the rule of _Batches.add),
        so that its exports hold a whole batch: cut only at each write's end, they held
        half as many records on the average, and each export costs the HTTP client some
        2 ms of CPU."""
        out = []
        for _, count, facts in (entry for entry in queued if entry[0] == b"C"):  # _ReportFacts'
            # Version 2: the later versions look up every object written in a table of
            # references, which facts never share (0.7k instructions a report, callgrind).
            encoded = marshal.dumps(facts, 2)
            out += (b"C", _HEAD(count, len(encoded)), encoded)
        for kind, size in self.sizes.items():
            group: list[bytes] = []
            held, filled = 0, self.filled.get(kind, 0)
            for _, count, joined in (entry for entry in queued if entry[0] == kind):
                if filled and filled + count > size:  # the exporter sends what it holds first
                    if group:
                        out += (kind, _HEAD(held, sum(map(len, group))), *group)
                        group, held = [], 0
                    filled = 0
                group.append(joined)
                held += count
                filled += count
            if group:
                out += (kind, _HEAD(held, sum(map(len, group))), *group)
            self.filled[kind] = 0 if filled >= size else filled
        return out

    def close(self) -> None:
        if self.closed:
            return
        with self.ready:
            self.closed = True
            self.ready.notify_all()
        if self.writer is not None:
            self.writer.join()
        try:
            self.process.stdin.close()
        except OSError:
            pass
        # The exporter sends what it holds on end of input (each export bounded by
        # OTEL_EXPORTER_OTLP_TIMEOUT and its retries), says what it sent, then exits.
        said = self.process.stdout.read()
        code = self.process.wait()
        if self.dropped:
            sys.stderr.write(f"admiss: telemetry: {self.dropped} {self.what} were dropped in all\n")
        for line in _exporter_said(said, code, self.handed, self.what):
            sys.stderr.write(f"admiss: telemetry: {line}\n")


# The exporter process start_exporter started: (the process, the environment it has, the
# process that started it), for the first _Channel of that process to take.
_STARTED: list[tuple[Any, dict[str, str], int]] = []


def start_exporter(table: bool, environ: Mapping[str, str] = os.environ) -> None:
    """Start the exporter process now, when admiss check has only seen that telemetry may
    be on (``table``: admiss.toml may have a [telemetry] table; else the OTEL_* variables
    say), before it imports the rest of itself, reads its config and compiles the rubric:
    the exporter's start-up (0.1-0.2 s of CPU importing the SDK and requests) runs meanwhile,
    on the other core, where it began 0.15-0.2 s into a run and the run waited for it at
    its end. Its setup comes later from the run's _Channel, on its stdin; when none comes
    (the table turned nothing on), this process's end ends it."""
    if _disabled(environ) or (not table and plan_for(None, environ) is None) or _missing_module() is not None:
        return
    _STARTED.append((_spawned(environ), dict(environ), os.getpid()))


def _exporter_process(environ: Mapping[str, str]) -> Any:
    """The exporter process start_exporter started, if it has ``environ``; else a new one."""
    if _STARTED:
        process, started_with, starter = _STARTED.pop()
        # A --jobs worker forked from the run has its own exporter: the run's is the run's.
        if starter == os.getpid() and started_with == dict(environ):
            return process
        _STARTED.append((process, started_with, starter))
    return _spawned(environ)


def _spawned(environ: Mapping[str, str]) -> Any:
    import subprocess

    # Its stdout: one line at its end, what it sent and what failed (export_main).
    return subprocess.Popen([sys.executable, "-c", _EXPORTER_CODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=dict(environ))


# The exporter process's program. Not ``python -m admiss.integrations.otel``: -m (and -c)
# put the working folder first on the module path, and an admiss/ folder there (a checkout
# of another version, or a hostile repository being checked) would be run in place of this
# module; the working folder is taken off first (3.11's -P would do it, 3.10 has none).
_EXPORTER_CODE = ("import sys\n"
                  "if sys.path[:1] == ['']:\n"
                  "    del sys.path[0]\n"
                  "from admiss.integrations.otel import exporter_main\n"
                  "exporter_main()\n")


def _missing_module() -> str | None:
    """The module of the otel extra that is not installed, if one is not."""
    import importlib.util

    for needed in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"):
        try:
            if importlib.util.find_spec(needed) is None:
                return needed
        except ModuleNotFoundError:  # a parent is missing, or is no package
            return needed
    return None


def _exporter_said(said: bytes, code: int, handed: int, what: str) -> list[str]:
    """What to tell of the exporter process's end: nothing when it sent all it was handed."""
    try:
        summary = json.loads(said.splitlines()[-1])
        sent, failed = int(summary["sent"]), int(summary["failed"])
    except (IndexError, ValueError, KeyError, TypeError):
        return [f"the exporter process ended before it was done ({_ended(code)}): of the {handed} {what} handed to "
                "it, those it had not sent yet are lost"]
    return [f"{failed} events and spans of {sent + failed} could not be exported (the exporter's reasons are "
            "above)"] if failed else []


def _ended(code: int) -> str:
    return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


_HEAD = struct.Struct("<II").pack  # a frame's record count and length, after its kind
# The writer sends what is queued when this many records are, or this long after the first.
_WRITE_EVERY, _WRITE_AFTER_S = 256, 0.05


# admiss check's pipe to the exporter: room for some ten puts of a quick batch's facts
# (_PUT_AFTER_NS), the most Linux lets a process ask by default (/proc/sys/fs/pipe-max-size).
_PIPE_SIZE = 1 << 20


def _widen(pipe: Any) -> None:
    """Make ``pipe`` hold _PIPE_SIZE: at the default 64 KiB, a put of 50 ms of a quick
    batch's facts (some 90 KB) would wait for the exporter to read at every put."""
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
    except (ImportError, AttributeError, OSError):
        pass  # no such call here (not Linux), or a lower limit: the check waits a little more often


def _queue_size(environ: Mapping[str, str]) -> int:
    """The queue's size in records, as the SDK's processor reads it (2048 by default)."""
    value = environ.get("OTEL_BLRP_MAX_QUEUE_SIZE", "")
    return int(value) if value.isdigit() and int(value) >= 2 else 2048


def _batch_size(signal: str, environ: Mapping[str, str]) -> int:
    prefix, _, size = _BATCHING[signal]
    return _positive(environ, prefix + "MAX_EXPORT_BATCH_SIZE", size)


def _endpoint(signal: str, plan: Plan, environ: Mapping[str, str]) -> str | None:
    """The [telemetry] endpoint with the signal's path, where no variable names one (the
    exporter reads the variables itself, with their own rules for paths)."""
    if plan.endpoint is None or any(environ.get(name) for name in _ENDPOINT_VARIABLES[signal]):
        return None
    return plan.endpoint + _SIGNAL_PATHS[signal]


# ---------------------------------------------------------------- attributes


def property_fields(result: Any) -> tuple:
    """What a property's event says, as a tuple: (name, verdict, rationale, admitted,
    forbidden, inadmissible, shortcut-rejected, default verdict). Many results of a batch
    say the same, so the tuple keys their encoded event (_WireEvents.emit_property).
    (A key of the results' Exclusion objects would be quicker, but their order differs
    from bundle to bundle: 5,776 keys for the 6,000 results of the benchmark's batch.)"""
    reasons = [exclusion.reason for _, exclusion in result.excluded]
    forbidden, inadmissible = reasons.count("forbidden"), reasons.count("inadmissible")
    prop = result.prop
    return (prop.name, result.verdict, result.rationale, len(result.admitted), forbidden, inadmissible,
            len(reasons) - forbidden - inadmissible, prop.default)


def property_attributes(fields: tuple) -> dict[str, Any]:
    """The event of one property's verdict (less what all of its report's events have),
    from its property_fields."""
    name, verdict, rationale, admitted, forbidden, inadmissible, shortcut, default = fields
    return {
        "gen_ai.evaluation.name": name,
        "gen_ai.evaluation.score.value": 1.0 if verdict == "yes" else 0.0,
        "gen_ai.evaluation.score.label": verdict,
        "gen_ai.evaluation.explanation": rationale,
        "admiss.evaluation.kind": "property",
        "admiss.evidence.admitted": admitted,
        "admiss.excluded.forbidden": forbidden,
        "admiss.excluded.inadmissible": inadmissible,
        "admiss.excluded.shortcut_rejected": shortcut,
        "admiss.default_verdict": default,
    }


def gate_attributes(chain: Any, policies: Mapping[str, list[str]]) -> list[dict[str, Any]]:
    """The events of a checked chain's gate decisions, rung by rung."""
    import attrs  # the checked chain's records are attrs classes

    records = [{"rung": r.rung, "model": r.model, "gates": [attrs.asdict(g, recurse=False) for g in r.gates]}
               for r in chain.rungs]
    by_rung = gate_attributes_by_rung({"name": chain.name, "rungs": records}, policies)
    return [attributes for rung in by_rung.values() for attributes in rung]


def gate_attributes_by_rung(chain: Mapping[str, Any], policies: Mapping[str, list[str]]
                            ) -> dict[str, list[dict[str, Any]]]:
    """Rung name → the events of its gates' decisions, from a chain as the JSON report and
    the receipt write it (``gate``, ``verdict``, ``effective``, ``score``, ``reason``, ...),
    less what all of a report's or request's events have (request_records adds the ids)."""
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
            }
            if gate["score"] is not None:
                attributes["gen_ai.evaluation.score.value"] = float(gate["score"])
            if gate["reason"]:
                attributes["gen_ai.evaluation.explanation"] = gate["reason"]
            if gate.get("fault"):
                attributes["error.type"] = f"{gate['fault']}_fault"
            if rung["model"]:
                attributes["gen_ai.request.model"] = rung["model"]
            events.append(attributes)
    return out


def _policies(rubric_ir: Any, chain_name: str) -> dict[str, list[str]]:
    chain = next((c for c in rubric_ir.chains if c.name == chain_name), None)
    return {} if chain is None else {r.name: [g.on_abstain for g in r.gates] for r in chain.rungs}


def request_attributes(request: Mapping[str, Any]) -> dict[str, Any]:
    receipt = request["receipt"]
    chain = receipt["chain"]
    usage = request["usage"]
    return {
        "http.request.method": "POST",
        "url.path": "/v1/chat/completions",
        "http.response.status_code": 200 if request["rung"] is not None else 422,
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": chain["name"],
        "gen_ai.response.id": receipt["request_id"],
        "gen_ai.usage.input_tokens": usage["prompt_tokens"],
        "gen_ai.usage.output_tokens": usage["completion_tokens"],
        "admiss.receipt.id": receipt["id"],
        "admiss.chain": chain["name"],
        "admiss.outcome": request["outcome"],
        "admiss.served_rung": request["rung"] or "",
        "admiss.model_cost_usd": float(chain["model_cost_usd"]),
        "admiss.gate_cost_usd": float(chain["gate_cost_usd"]),
    }


def rung_attributes(rung: Mapping[str, Any]) -> dict[str, Any]:
    return {"admiss.rung": rung["rung"], "admiss.rung.model": rung["model"] or "", "admiss.rung.outcome": rung["outcome"],
            "admiss.rung.cost_usd": float(rung["cost_usd"])}


class _CallSpan(NamedTuple):
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


def _evidence_span(items: Iterable[Mapping[str, Any]]) -> tuple[int, int, int] | None:
    """(trace id, span id, sampled flag) of the first item that came from an OTel trace's
    span (its step names the span and trace ids), so the event is parented to the span it
    evaluates; else None."""
    for item in items:
        # type() is dict, not isinstance(..., Mapping): an abstract class's check cost 19 µs
        # an event here, most of it spent on bundles whose items have no step at all.
        step = item.get("step") if type(item) is dict else None
        if type(step) is not dict:
            continue
        span_id, trace_id = _hex_id(step.get("span_id"), 16), _hex_id(step.get("trace_id"), 32)
        if span_id and trace_id:
            return trace_id, span_id, 1
    return None


def _hex_id(value: Any, digits: int) -> int:
    """An OTLP JSON id (hex, as the OTLP JSON encoding writes it) as a number; 0 when it is
    not one (a trace is untrusted input: a malformed id names no span)."""
    if type(value) is not str or len(value) != digits or not _HEX.issuperset(value):
        return 0
    return int(value, 16)


# ---------------------------------------------------------------- the exporter process

# Per signal: the SDK's exporter, the batch processor's variables and their defaults (ms, records).
_BATCHING = {"logs": ("OTEL_BLRP_", 1000, 512), "traces": ("OTEL_BSP_", 5000, 512)}
_KINDS = {"logs": b"L", "traces": b"T"}


class _Maker:
    """In the exporter process, what makes records from what the checking or serving
    process handed over; they go to their signal's batches (_Batches)."""

    due = None  # nothing is held here
    outcomes = (0, 0)  # the records made here are counted in their batches

    def __init__(self, batches: dict[bytes, "_Batches"]):
        self.batches = batches
        self.events = _WireEvents(self) if b"L" in batches else None

    def put(self, kind: bytes, count: int, records: bytes) -> None:
        self.batches[kind].add(count, records)

    def send(self) -> None:
        """Nothing is held here."""

    def close(self) -> None:
        """Nothing to close: the batches close themselves."""


class _Reports(_Maker):
    """admiss check's reports (b"C" frames, _ReportFacts' facts in marshal's format, from
    this interpreter's own checking process) made into their events."""

    def __init__(self, batches: dict[bytes, "_Batches"]):
        super().__init__(batches)
        # number → (name, _property_row of each property, the name encoded)
        self.rubrics: dict[int, tuple[str, list[tuple], bytes]] = {}
        self.bundle = otlp_wire.LOG_ATTRIBUTES.encode_string
        # (number, the bundle's name's length, each property's counts) → its events' template (_template)
        self.shapes: dict[tuple, tuple[bytes, int]] = {}
        self.shapes_size = 0  # the bytes of their templates
        # a property's key → its event's head and the report's rubric, as format text, and
        # the record's length less the bundle attribute's
        self.events_kept: dict[int, tuple[bytes, int]] = {}
        # a bundle's name's length → its attribute's bytes before the name, as format text,
        # and the attribute's length
        self.name_prefixes: dict[int, tuple[bytes, int]] = {}
        # (a property's key, a bundle's name's length) → its event as format text (_forms)
        self.forms: dict[tuple[int, int], bytes] = {}
        # number → its first property's place among all the rubrics' properties (_heads' keys)
        self.first_property: dict[int, int] = {}

    def add(self, count: int, frame: bytes) -> None:
        # Reports of a batch mostly say the same of their properties: a report of the common
        # shape is one %-format of its shape's template (_template), of which only the time
        # and the bundle's name are new. The same records as emit_report's, in 0.45x the
        # instructions of joining a tuple of parts an event (docs/performance.md, "Telemetry,
        # twelfth pass"); made in this loop itself, which spares a method call a report.
        shapes, logs, stamp_of = self.shapes, self.batches[b"L"].add, otlp_wire.FIXED64
        for facts in marshal.loads(frame):
            number = facts[0]
            if number >= 0:
                bundle, time_ns, counts = facts[1], facts[2], facts[3:]
                name = bundle.encode("utf-8", otlp_wire.TEXT_ERRORS)
                template = shapes.get((number, len(name), *counts))
                if template is None:
                    template = self._template(number, bundle, name, counts)
                form, events = template
                stamp = stamp_of(time_ns)
                logs(events, form % ((stamp, name, stamp) * events))
            elif number == _FULL:
                self._told_in_full(*facts[1:])
            else:
                self.first_property[facts[1]] = sum(len(rubric[1]) for rubric in self.rubrics.values())
                self.rubrics[facts[1]] = (facts[2], facts[3],
                                          otlp_wire.LOG_ATTRIBUTES.encode_one("admiss.rubric", facts[2]))

    def _prepared(self, number: int, bundle: str, time_ns: int) -> bytes:
        return self.events.prepare({"admiss.rubric": self.rubrics[number][0], "admiss.bundle": bundle}, time_ns)

    def _template(self, number: int, bundle: str, name: bytes, counts: Sequence[int]) -> tuple[bytes, int]:
        """The events of a report of the common shape whose bundle's name is as long as
        ``name``, as a %-format of (time, the bundle's name, time) an event, and their count;
        kept for the reports of that shape. A batch's bundles come in many shapes (the
        benchmark's 100,000 in 16,215 with their names' lengths), their properties' counts
        in few (582): each event's head and rubric are kept by its property's key (see
        _heads), the bundle attribute's bytes before the name by the name's length, and
        each event made of the two by both (_forms)."""
        if len(self.shapes) >= _KEPT_SHAPES or self.shapes_size >= _KEPT_SHAPES_SIZE:
            self.shapes.clear()
            self.shapes_size = 0
        first, size = self.first_property[number], len(name)
        keys = [(first + index) << _PACKED_BITS | packed for index, packed in enumerate(counts)]
        forms = self.forms
        events = [forms.get((key, size)) for key in keys]
        if None in events:
            events = self._forms(number, bundle, counts, keys, size)
        template = self.shapes[(number, size, *counts)] = (b"".join(events), len(counts))
        self.shapes_size += len(template[0])
        return template

    def _forms(self, number: int, bundle: str, counts: Sequence[int], keys: list[int], size: int) -> list[bytes]:
        """Each event of a report of the common shape, its properties' keys ``keys``, whose
        bundle's name is ``size`` bytes long, as a %-format of (time, the bundle's name,
        time); kept by (key, size) for the next shapes made of them."""
        kept = self.events_kept
        heads = [kept.get(key) for key in keys]
        if None in heads:
            if len(kept) >= _KEPT_PROPERTIES:
                kept.clear()
            rubric = self.rubrics[number][2]
            heads = [(_escaped(head + rubric), rest + len(rubric)) for head, rest in self._heads(number, counts)]
            kept.update(zip(keys, heads))
        prefix = self.name_prefixes.get(size)
        if prefix is None:
            # The attribute's encoding ends with the name; what comes before it depends only on its length.
            attribute = self.bundle("admiss.bundle", bundle)
            prefix = self.name_prefixes[size] = (_escaped(attribute[:len(attribute) - size]), len(attribute))
        # event_in_scope's parts, the times and the name left out.
        made = [b"".join((_escaped(b"\x12" + otlp_wire.varint(rest + prefix[1]) + b"\x09"), b"%b", head, prefix[0],
                          b"%b\x59%b", _ESCAPED_EVENT_NAME)) for head, rest in heads]
        if len(self.forms) >= _KEPT_FORMS:
            self.forms.clear()
        self.forms.update(zip([(key, size) for key in keys], made))
        return made

    def _heads(self, number: int, counts: Sequence[int]) -> list[tuple]:
        """The events' heads of a report of the common shape, made from its properties' fields."""
        return [self.events.kept(key)[1] for key in self._fields(number, counts)]

    def _fields(self, number: int, counts: Sequence[int]) -> list[tuple]:
        """The property_fields of a report of the common shape, from its properties' counts."""
        fields = []
        for (name, default, some_verdict, some_rationale, no_verdict, no_rationale), packed in zip(
                self.rubrics[number][1], counts):
            admitted = packed & _COUNT_MASK
            verdict, rationale = (some_verdict, some_rationale) if admitted else (no_verdict, no_rationale)
            fields.append((name, verdict, rationale, admitted, packed >> _COUNT_BITS & _COUNT_MASK,
                           packed >> 2 * _COUNT_BITS & _COUNT_MASK, packed >> 3 * _COUNT_BITS & _COUNT_MASK, default))
        return fields

    def _told_in_full(self, number: int, bundle: str, time_ns: int, fields: list[tuple], parents: list[Any],
                      gate_parent: Any, gates: list[dict[str, Any]]) -> None:
        emit_report(self.events, self._prepared(number, bundle, time_ns), fields, parents, gate_parent, gates)


class _Requests(_Maker):
    """The gateway's requests (JSON lines, see Telemetry.served) made into spans and events."""

    def __init__(self, batches: dict[bytes, "_Batches"]):
        from admiss.jsonio import loads_any  # admiss check's exporter reads no JSON: orjson's 12 ms not spent

        super().__init__(batches)
        self.loads = loads_any
        self.spans = _WireSpans(self) if b"T" in batches else None

    def add(self, count: int, frame: bytes) -> None:
        for line in frame.split(b"\n"):
            if not line:
                continue
            try:
                request_records(self.loads(line), self.spans, self.events)
            except Exception as error:  # noqa: BLE001 - one request's telemetry must not end the others'
                sys.stderr.write(f"admiss: telemetry: a request's spans and events could not be made: "
                                 f"{type(error).__name__}: {error}\n")


class _Batches:
    """One signal's records in the exporter process, sent in an export request when
    ``MAX_EXPORT_BATCH_SIZE`` are held or ``SCHEDULE_DELAY`` after the first, as the SDK's
    batch processors send."""

    def __init__(self, signal: str, endpoint: str | None, resource: bytes, environ: Mapping[str, str]):
        self.client = _sdk_client(signal, endpoint)
        self.send_bytes = self.client.export
        prefix, delay_ms, _ = _BATCHING[signal]
        self.delay_s = _positive(environ, prefix + "SCHEDULE_DELAY", delay_ms) / 1000
        self.size = _batch_size(signal, environ)
        self.head = (resource, otlp_wire.scope_message("admiss", __version__))
        self.frames: list[bytes] = []
        self.held = 0
        self.due: float | None = None
        self.outcomes = [0, 0]  # records whose export failed, and sent

    def add(self, count: int, frame: bytes) -> None:
        """One frame's records (the writer made it at most a batch)."""
        if self.held and self.held + count > self.size:
            self.send()
        if not self.frames:
            self.due = time.monotonic() + self.delay_s
        self.frames.append(frame)
        self.held += count
        if self.held >= self.size:
            self.send()

    def send(self) -> None:
        if self.frames:
            result = self.send_bytes(otlp_wire.export_request(*self.head, self.frames))
            self.outcomes[bool(result.success)] += self.held
        self.frames, self.held, self.due = [], 0, None

    def close(self) -> None:
        self.client.shutdown()


def _sdk_client(signal: str, endpoint: str | None) -> Any:
    """The OTLP/HTTP client of the SDK's exporter of ``signal``, made as the exporter's
    constructor makes it (OTLPLogExporter, OTLPSpanExporter) from the same OTEL_*
    variables: its endpoint, headers, timeout, compression, certificates and client
    certificates, credential provider, retries, all the SDK's own code. The exporters
    themselves are not imported: with their encoder, protobuf classes and the SDK's logs
    and metrics they cost 0.1 s more of this process's start-up (of 0.25 s), which
    admiss check waits for at its end. These names are not public: tests/otel pin them.

    Its transport is the SDK's requests one, as the exporters' is, unless the endpoint
    needs nothing requests reads from the environment (_needs_requests): then the SDK's
    urllib3 transport, with the same certificates. requests reads the environment again
    at every export (proxies, .netrc): an export of 512 events cost 0.8 ms of CPU through
    it, 0.3 through urllib3, and this process's CPU for a check of 100,000 bundles fell by
    a quarter (docs/performance.md, "Telemetry, tenth pass")."""
    import logging

    import requests
    from opentelemetry.exporter.http.transport import _load_http_transport_factory
    from opentelemetry.exporter.otlp.common.http import _OTLPHTTPClient
    from opentelemetry.exporter.otlp.proto.http import _common

    name = signal.upper()
    variable = f"OTEL_EXPORTER_OTLP_{name}_"
    provided = _common._load_session_from_envvar(f"OTEL_PYTHON_EXPORTER_OTLP_HTTP_{name}_CREDENTIAL_PROVIDER")
    session = provided or requests.Session()
    transport = _common._build_transport(
        None, None, None, variable + "CERTIFICATE", variable + "CLIENT_KEY", variable + "CLIENT_CERTIFICATE",
        session=session)
    endpoint = endpoint or _common._resolve_endpoint(variable + "ENDPOINT", f"v1/{signal}")
    if provided is None and not _needs_requests(endpoint):
        transport.close()
        transport = _load_http_transport_factory("urllib3")(verify=session.verify, cert=session.cert)
    compression = _common._resolve_compression(variable + "COMPRESSION")
    module = "_log_exporter" if signal == "logs" else "trace_exporter"
    return _OTLPHTTPClient(
        transport=transport, endpoint=endpoint,
        kind="logs" if signal == "logs" else "spans", timeout=_common._resolve_timeout(variable + "TIMEOUT"),
        compression=compression, headers=_common._resolve_headers(None, variable + "HEADERS"),
        logger=logging.getLogger(f"opentelemetry.exporter.otlp.proto.http.{module}"))


def _needs_requests(url: str) -> bool:
    """Whether an export to ``url`` needs what requests does beside sending it: a proxy from
    the environment (HTTP_PROXY, ALL_PROXY, NO_PROXY), a login from .netrc or from the URL's
    user-info (sent as Basic auth; urllib3 would drop it), or, for https, its trust store
    (REQUESTS_CA_BUNDLE, certifi), which urllib3 does not read. Read once: this process's
    environment does not change."""
    import urllib.parse

    from requests import utils

    parts = urllib.parse.urlsplit(url)
    return (parts.scheme != "http" or parts.username is not None
            or utils.select_proxy(url, utils.get_environ_proxies(url)) is not None
            or utils.get_netrc_auth(url) is not None)


def _positive(environ: Mapping[str, str], name: str, default: int) -> int:
    value = environ.get(name, "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else default


def export_main(environ: Mapping[str, str] = os.environ) -> None:
    """The exporter process: its setup (a JSON line, see _Channel), then framed records,
    from stdin (see _Channel) to their endpoints, until end of input, when it sends what it
    holds. End of input before a setup (telemetry turned out to be off, see
    start_exporter) ends it at once, quietly."""
    # Read from the start, while the SDK is imported: a pipe left unread fills in a few
    # ms, and admiss check would wait on it.
    stdin = _Input(sys.stdin.buffer.fileno())
    # What any setup needs is imported before the setup is read: this process is started
    # as soon as the CLI sees that telemetry may be on (start_exporter), and these
    # imports (0.1-0.2 s of CPU, requests' 50-95 ms of it) run while the CLI imports its own
    # modules and compiles the rubric.
    import requests  # noqa: F401 - the SDK's HTTP transport imports it on first use
    from opentelemetry.exporter.otlp.common.http import _OTLPHTTPClient  # noqa: F401
    from opentelemetry.exporter.otlp.proto.http import _common  # noqa: F401
    from opentelemetry.sdk.resources import Resource

    stdin.ready.set()
    pending = bytearray()
    while b"\n" not in pending:
        chunk = stdin.read(None)
        if not chunk:
            return  # no setup came: nothing to send, nothing to say
        pending += chunk
    line, _, rest = bytes(pending).partition(b"\n")
    pending = bytearray(rest)
    setup = json.loads(line)
    if setup.get("check"):
        _yield_the_core()
    resource = otlp_wire.resource_message(Resource.create(setup["resource"]).attributes)
    batches = {_KINDS[signal]: _Batches(signal, endpoint or None, resource, environ)
               for signal, endpoint in setup["endpoints"].items()}
    if setup.get("requests"):  # the gateway's: its requests' spans and events are made here
        batches[b"R"] = _Requests(batches)
    elif b"L" in batches:  # admiss check's: its reports' events are made here
        batches[b"C"] = _Reports(batches)
    while True:  # what came with the setup line is read first
        _take_frames(pending, batches)
        now = time.monotonic()
        for held in batches.values():
            if held.due is not None and held.due <= now:
                held.send()
        due = [b.due for b in batches.values() if b.due is not None]
        chunk = stdin.read(max(0.0, min(due) - time.monotonic()) if due else None)
        if chunk is None:
            continue  # only time has passed
        if not chunk:
            break
        pending += chunk
    for held in batches.values():
        held.send()
    for held in batches.values():
        held.close()
    failed, sent = (sum(held.outcomes[i] for held in batches.values()) for i in (0, 1))
    try:
        sys.stdout.write(json.dumps({"sent": sent, "failed": failed}) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        pass  # the process it serves is gone (killed): nobody is left to be told


# How much lower admiss check's exporter process runs than the check (os.nice's increment).
_CHECK_EXPORTER_NICENESS = 10


def _yield_the_core() -> None:
    """Let admiss check's own process run first wherever the two compete for a core: what
    the exporter does can wait (the facts queue in the pipe), and the check waits for it
    only at its end, when it has the machine to itself again. On two cores loaded by the
    check, this exporter and a local OTLP receiver, the exporter took some of the check's
    core. Not for the gateway's exporter, which must keep up with requests as they come.
    Started at the run's own priority, so its start-up (the SDK's imports) overlaps the
    check's; lowered here, once its setup says it serves admiss check."""
    try:
        os.nice(_CHECK_EXPORTER_NICENESS)
    except OSError:  # a platform or sandbox without it: the exporter runs as before
        pass


def _take_frames(pending: bytearray, batches: Mapping[bytes, Any]) -> None:
    """Hand each whole frame at the start of ``pending`` to its kind's batches, and take it off."""
    used = 0
    while len(pending) - used >= 9:
        count, length = _FRAME_HEAD(pending, used + 1)
        end = used + 9 + length
        if end > len(pending):
            break
        batches[bytes(pending[used:used + 1])].add(count, bytes(pending[used + 9:end]))
        used = end
    del pending[:used]


class _Input:
    """The exporter process's stdin. A thread reads it while the process starts (the SDK's
    imports) and until the process is ``ready`` to read it itself: handing each chunk over
    through a queue from a thread that lives on cost the exporter of a 100,000-bundle check
    a tenth of its CPU (docs/performance.md, "Telemetry, thirteenth pass"). Where a pipe
    cannot be waited on with select (Windows), the thread reads it to the end."""

    def __init__(self, fd: int):
        import queue
        import select
        import threading

        self.fd, self.chunks, self.ready = fd, queue.SimpleQueue(), threading.Event()
        self.empty, self.select = queue.Empty, select.select
        self.threaded = True  # what the thread read is still to be taken
        self.direct = os.name == "posix"  # this process may read the pipe itself once ready
        # One buffer for every read: os.read's own of this size was mapped and unmapped each read.
        self.buffer = memoryview(bytearray(_READ_SIZE))
        threading.Thread(target=self._read_ahead, daemon=True).start()

    def _read_ahead(self) -> None:
        while True:
            chunk = os.read(self.fd, _READ_SIZE)
            self.chunks.put(chunk)
            if not chunk or (self.direct and self.ready.is_set()):
                self.chunks.put(None)  # this read was the thread's last
                return

    def read(self, timeout: float | None) -> Any:
        """The next chunk (empty at the end of input; a view valid until the next read), or
        None when ``timeout`` seconds pass first."""
        while self.threaded:
            try:
                chunk = self.chunks.get(timeout=timeout)
            except self.empty:
                return None
            if chunk is not None:
                return chunk
            self.threaded = False
        if timeout is not None and not self.select([self.fd], [], [], timeout)[0]:
            return None
        return self.buffer[:os.readv(self.fd, [self.buffer])]


# What one read of the pipe takes at most: some three of admiss check's puts (_PIPE_SIZE).
_READ_SIZE = 1 << 18


_FRAME_HEAD = struct.Struct("<II").unpack_from


def exporter_main() -> None:
    """The exporter process's whole life (see _EXPORTER_CODE)."""
    export_main()
    # All is sent: admiss check waits for this process's end, and the interpreter's
    # teardown of the SDK's and requests' modules cost some 40 ms of CPU more.
    sys.stderr.flush()
    os._exit(0)
