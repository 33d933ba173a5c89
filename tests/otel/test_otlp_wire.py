"""admiss/integrations/otlp_wire.py writes what the OpenTelemetry SDK's own OTLP encoder
writes: the same records made through the real SDK are encoded both ways and decoded with
the real opentelemetry-proto classes, and the messages compared whole."""

from __future__ import annotations

import random

from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

import admiss
from admiss import __version__
from admiss.integrations import otel, otlp_wire

ATTRIBUTES = [
    {"gen_ai.evaluation.name": "named_operator", "gen_ai.evaluation.score.value": 1.0,
     "gen_ai.evaluation.score.label": "yes", "gen_ai.evaluation.explanation": "Ünïcode rationale ✓",
     "admiss.evidence.admitted": 3, "admiss.gate.position": 0, "admiss.gate.disabled": False, "admiss.neg": -7,
     "admiss.big": 2 ** 40, "admiss.empty": ""},
    {"gen_ai.evaluation.name": "json_valid", "admiss.gate.disabled": True, "admiss.gate.cost_usd": 0.0,
     "admiss.labels": ("a", "b"), "admiss.gate.position": 1},
    # Again: the second time comes from the kept bytes.
    {"gen_ai.evaluation.name": "named_operator", "gen_ai.evaluation.score.value": 1.0,
     "gen_ai.evaluation.score.label": "yes", "admiss.evidence.admitted": 3},
]
RESOURCE = Resource.create({"service.name": "wire-test", "service.version": __version__})
TRACE_ID, SPAN_ID = 0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331


def _without_observed_time(request: ExportLogsServiceRequest) -> ExportLogsServiceRequest:
    # The SDK stamps observed time at its emit, a moment after the event's time; admiss
    # writes the event's time for both.
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                record.observed_time_unix_nano = record.time_unix_nano
    return request


def test_log_records_decode_as_the_sdks_do():
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=RESOURCE)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger("admiss", __version__)
    parents = [None, (TRACE_ID, SPAN_ID, 1), None]
    for attributes, parent in zip(ATTRIBUTES, parents):
        context = None
        if parent:
            span = NonRecordingSpan(SpanContext(parent[0], parent[1], is_remote=True, trace_flags=TraceFlags(1)))
            context = set_span_in_context(span)
        logger.emit(event_name=otel.EVENT, attributes=attributes, context=context, timestamp=1_700_000_000_123_456_789)
    made = exporter.get_finished_logs()
    expected = _without_observed_time(ExportLogsServiceRequest.FromString(encode_logs(made).SerializeToString()))
    records = []
    for made_record, attributes, parent in zip(made, ATTRIBUTES, parents):
        # The last two attributes as admiss passes what all of a report's events have: encoded once.
        own, common = dict(list(attributes.items())[:-2]), dict(list(attributes.items())[-2:])
        encoded = otlp_wire.LOG_ATTRIBUTES.encode(own) + otlp_wire.LOG_ATTRIBUTES.encode_once(common)
        records.append(otlp_wire.log_record(made_record.log_record.timestamp, otlp_wire.field(12, otel.EVENT.encode()),
                                            encoded, *(parent or (0, 0, 0))))
    wire = otlp_wire.export_request(otlp_wire.resource_message(RESOURCE.attributes),
                                    otlp_wire.scope_message("admiss", __version__),
                                    b"".join(map(otlp_wire.in_scope, records)))
    assert ExportLogsServiceRequest.FromString(wire) == expected
    assert expected.resource_logs[0].scope_logs[0].log_records[1].span_id == SPAN_ID.to_bytes(8, "big")


class _Collected:
    """Where the wire spans go when a request's are done (in admiss: the exporter's queue)."""

    def __init__(self):
        self.records: list[bytes] = []
        self.count = 0

    def put(self, kind: bytes, count: int, records: bytes) -> None:
        assert kind == b"T"
        self.records.append(records)
        self.count += count


def _a_request(spans, traceparent: str | None) -> None:
    """The spans of a gateway request as Telemetry.served makes them: a server span, a
    rung's with two events, a client call under it; then a request without a parent."""
    request = spans.root(traceparent, "vendor=one,other=two", "POST /v1/chat/completions", otel._SERVER, 1_000,
                         ATTRIBUTES[0])
    rung = spans.child(request, "admiss.rung cheap", otel._INTERNAL, 2_000, ATTRIBUTES[1])
    spans.end(spans.child(rung, "chat cheap", otel._CLIENT, 2_500, ATTRIBUTES[2]), 3_000)
    spans.event(rung, ATTRIBUTES[1], 3_500)
    spans.event(rung, ATTRIBUTES[2], 3_600)
    spans.end(rung, 4_000)
    spans.end(request, 5_000)
    spans.sent()


def test_spans_decode_as_the_sdks_do():
    for traceparent in (f"00-{TRACE_ID:032x}-{SPAN_ID:016x}-01", None):
        exporter, collected = InMemorySpanExporter(), _Collected()
        provider = TracerProvider(resource=RESOURCE)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        # The same seed for both: the SDK's id generator draws from random, in the same order for both.
        random.seed(22)
        _a_request(otel._SdkSpans(provider.get_tracer("admiss", __version__)), traceparent)
        random.seed(22)
        _a_request(otel._WireSpans(collected), traceparent)
        expected = ExportTraceServiceRequest.FromString(encode_spans(exporter.get_finished_spans()).SerializeToString())
        wire = otlp_wire.export_request(otlp_wire.resource_message(RESOURCE.attributes),
                                        otlp_wire.scope_message("admiss", __version__), b"".join(collected.records))
        assert ExportTraceServiceRequest.FromString(wire) == expected
        spans = expected.resource_spans[0].scope_spans[0].spans
        assert len(spans) == 3 and len(spans[1].events) == 2
        assert spans[2].parent_span_id == (SPAN_ID.to_bytes(8, "big") if traceparent else b"")
        assert spans[2].trace_state == ("vendor=one,other=two" if traceparent else "")


def test_a_trace_sampled_out_sends_no_span(monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    collected = _Collected()
    _a_request(otel._WireSpans(collected), None)
    assert collected.records == []


def test_a_value_out_of_otlps_range_is_left_out_as_the_sdk_leaves_it():
    attributes = {"admiss.ok": 1, "admiss.huge": 2 ** 70, "admiss.none": None}
    record = otlp_wire.log_record(1, otlp_wire.field(12, b"e"), otlp_wire.LOG_ATTRIBUTES.encode(attributes))
    decoded = ExportLogsServiceRequest.FromString(otlp_wire.export_request(b"", b"", otlp_wire.in_scope(record)))
    (got,) = decoded.resource_logs[0].scope_logs[0].log_records
    assert [kv.key for kv in got.attributes] == ["admiss.ok"]


def test_the_quick_encodings_write_the_same_bytes_as_the_plain_ones():
    for value in ("b-17", "Ünïcode ✓", "x" * 200, "lone \ud800 surrogate", 3, ""):
        assert otlp_wire.LOG_ATTRIBUTES.encode_string("admiss.bundle", value) == \
            otlp_wire.LOG_ATTRIBUTES.encode_one("admiss.bundle", value)
    event_name = otlp_wire.field(12, otel.EVENT.encode())
    for own, common in ((ATTRIBUTES[0], {"admiss.bundle": "b"}), (ATTRIBUTES[1], {"admiss.bundle": "y" * 300})):
        attributes = otlp_wire.LOG_ATTRIBUTES.encode(own)
        shared = otlp_wire.LOG_ATTRIBUTES.encode_once(common)
        head = otlp_wire.event_head(event_name, attributes)
        quick = b"".join(otlp_wire.event_in_scope(otlp_wire.FIXED64(1_700_000_000_5), head, shared, event_name))
        assert quick == otlp_wire.in_scope(otlp_wire.log_record(1_700_000_000_5, event_name, attributes + shared))


class _Kept:
    """The exporter's queue, keeping what a check's reports put in it."""

    def __init__(self):
        self.records: list[bytes] = []

    def put(self, kind: bytes, count: int, records: bytes) -> None:
        assert kind == b"L"
        self.records.append(records)


def test_a_checked_reports_events_decode_as_the_sdks_do():
    # Reports of several bundles, as admiss check makes them, through both ways of sending events.
    rubric = admiss.compile_source(REPORT_RUBRIC, name="ops")
    reports = [rubric.check(bundle, f"bundle-{n}") for n, bundle in enumerate(REPORT_BUNDLES)]
    exporter, kept = InMemoryLogRecordExporter(), _Kept()
    provider = LoggerProvider(resource=RESOURCE)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    sdk = otel.Telemetry.__new__(otel.Telemetry)
    sdk._events = otel._SdkEvents(provider)
    wire = otel.Telemetry.__new__(otel.Telemetry)
    wire._events = otel._WireEvents(kept)
    for report in reports + reports:  # the second time from the kept encodings
        sdk.report(report)
        wire.report(report)
    expected = ExportLogsServiceRequest.FromString(encode_logs(exporter.get_finished_logs()).SerializeToString())
    got = ExportLogsServiceRequest.FromString(otlp_wire.export_request(
        otlp_wire.resource_message(RESOURCE.attributes), otlp_wire.scope_message("admiss", __version__),
        b"".join(kept.records)))
    records = [got.resource_logs[0].scope_logs[0].log_records, expected.resource_logs[0].scope_logs[0].log_records]
    for record in (r for kind in records for r in kind):  # times: each way stamps its own
        record.time_unix_nano = record.observed_time_unix_nano = 0
    assert got == expected
    assert len(records[0]) == 2 * sum(len(r.properties) for r in reports) > 0


REPORT_RUBRIC = """RUBRIC ops "Operator claims"
PROPERTY named_operator "Named operator evidence comes from a filing" {
  ADMIT verified_external_source
  FORBID summary
  REJECT SHORTCUT "news article"
}
PROPERTY stated_output "Output is stated" {
  ADMIT final_answer
  DEFAULT yes
}
"""
REPORT_BUNDLES = [
    {"evidence": [{"kind": "verified_external_source", "detail": "10-K.", "source_label": "10-K filing"},
                  {"kind": "summary", "detail": "A summary.", "source_label": "recap"}]},
    {"evidence": [{"kind": "summary", "detail": "Só a summary ✓.", "source_label": "recap"},
                  {"kind": "verified_external_source", "detail": "A story.", "source_label": "news article"},
                  {"kind": "reasoning_trace", "detail": "I think so.", "source_label": "thoughts"}]},
    {"evidence": []},
]
