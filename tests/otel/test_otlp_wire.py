"""admiss/integrations/otlp_wire.py writes what the OpenTelemetry SDK's own OTLP encoder
writes: the same records made through the real SDK are encoded both ways and decoded with
the real opentelemetry-proto classes, and the messages compared whole."""

from __future__ import annotations

import itertools
import json
import marshal
import random
from pathlib import Path

import pytest
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
OWN = {"gen_ai.response.id": "chatcmpl-1", "admiss.receipt.id": "rcpt_1"}
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
    # A request's own attributes follow each event's: the same dict for both, encoded once on the wire.
    spans.event(rung, ATTRIBUTES[1], 3_500, OWN)
    spans.event(rung, ATTRIBUTES[2], 3_600, OWN)
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


def _gate(name: str, verdict: str, **more) -> dict:
    return {"gate": name, "verdict": verdict, "effective": verdict, "score": None, "reason": "", "disabled": False,
            "gate_cost_usd": 0.0, "duration_ms": 0.25, **more}


def _served_request(request_id: str) -> dict:
    """A gateway request as Telemetry.served hands it over: a chain that escalated from one
    rung to the next, which served, with a judge's call among its usage."""
    rungs = [{"rung": "cheap", "model": "fake/cheap", "outcome": "escalated", "cost_usd": 0.001,
              "gates": [_gate("non_empty", "pass"), _gate("json_valid", "fail", reason="not JSON", fault="candidate")]},
             {"rung": "strong", "model": "fake/strong", "outcome": "served", "cost_usd": 0.01,
              "gates": [_gate("non_empty", "pass"), _gate("judge", "pass", score=0.9, duration_ms=3.5)]}]
    usage = [{"rung": "cheap", "purpose": "rung", "model": "fake/cheap", "prompt_tokens": 12, "completion_tokens": 5,
              "cost_usd": 0.001},
             {"rung": "strong", "purpose": "rung", "model": "fake/strong", "prompt_tokens": 12,
              "completion_tokens": 7, "cost_usd": 0.009},
             {"rung": "strong", "purpose": "judge", "model": "fake/judge", "prompt_tokens": None,
              "completion_tokens": None, "cost_usd": 0.001}]
    receipt = {"id": f"rcpt_{request_id}", "request_id": f"chatcmpl-{request_id}", "usage": usage,
               "latency_ms": {"cheap": 1.5, "strong": 6.0},
               "chain": {"name": "answer", "rungs": rungs, "model_cost_usd": 0.01, "gate_cost_usd": 0.001}}
    return {"receipt": receipt, "rung": "strong", "outcome": "served", "usage": {"prompt_tokens": 24,
            "completion_tokens": 12, "total_tokens": 36}, "policies": {"cheap": ["fail_closed", "fail_open"],
            "strong": ["fail_closed", "fail_closed"]}, "traceparent": None, "tracestate": None,
            "started_ns": 1_000_000, "ended_ns": 9_000_000}


class _Records:
    def __init__(self):
        self.records: dict[bytes, list[bytes]] = {b"L": [], b"T": []}

    def put(self, kind: bytes, count: int, records: bytes) -> None:
        self.records[kind].append(records)


def test_a_gateway_requests_records_decode_as_the_sdks_do():
    # Two requests in turn: each one's ids, given apart from the gates' attributes, land after
    # them on every event (the served rung's with the response's id), as the SDK writes them.
    exporter, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer = TracerProvider(resource=RESOURCE)
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    logger = LoggerProvider(resource=RESOURCE)
    logger.add_log_record_processor(SimpleLogRecordProcessor(logs))
    collected = _Records()
    random.seed(7)
    for number in ("1", "2"):
        otel.request_records(_served_request(number), otel._SdkSpans(tracer.get_tracer("admiss", __version__)),
                             otel._SdkEvents(logger))
    random.seed(7)
    spans, events = otel._WireSpans(collected), otel._WireEvents(collected)
    for number in ("1", "2"):
        otel.request_records(_served_request(number), spans, events)
    head = (otlp_wire.resource_message(RESOURCE.attributes), otlp_wire.scope_message("admiss", __version__))
    expected = ExportTraceServiceRequest.FromString(encode_spans(exporter.get_finished_spans()).SerializeToString())
    assert ExportTraceServiceRequest.FromString(otlp_wire.export_request(*head, b"".join(collected.records[b"T"]))) \
        == expected
    made = ExportLogsServiceRequest.FromString(encode_logs(logs.get_finished_logs()).SerializeToString())
    wire = ExportLogsServiceRequest.FromString(otlp_wire.export_request(*head, b"".join(collected.records[b"L"])))
    for request in (made, wire):  # each way stamps its own time
        for record in request.resource_logs[0].scope_logs[0].log_records:
            record.time_unix_nano = record.observed_time_unix_nano = 0
    assert wire == made
    records = wire.resource_logs[0].scope_logs[0].log_records
    assert len(records) == 8
    served = [{kv.key: kv.value.string_value for kv in r.attributes} for r in records if any(
        kv.key == "admiss.rung" and kv.value.string_value == "strong" for kv in r.attributes)]
    assert [(a["gen_ai.response.id"], a["admiss.receipt.id"]) for a in served] == [
        ("chatcmpl-1", "rcpt_1"), ("chatcmpl-1", "rcpt_1"), ("chatcmpl-2", "rcpt_2"), ("chatcmpl-2", "rcpt_2")]
    assert [kv.key for kv in records[0].attributes][-1] == "admiss.receipt.id"
    assert "gen_ai.response.id" not in {kv.key for kv in records[0].attributes}  # the escalated rung's
    span_events = [event for span in expected.resource_spans[0].scope_spans[0].spans for event in span.events]
    assert len(span_events) == 8 and all(event.attributes[-1].key == "admiss.receipt.id" for event in span_events)


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
        self.puts: list[tuple[bytes, int, list]] = []

    def put(self, kind: bytes, count: int, facts: list) -> None:
        self.puts.append((kind, count, facts))


class _Batch:
    """The exporter process's batch of log records, keeping what it is given."""

    def __init__(self):
        self.records: list[bytes] = []
        self.count = 0

    def add(self, count: int, records: bytes) -> None:
        self.records.append(records)
        self.count += count


def _through_the_exporter(reports, clock=None) -> tuple[bytes, int]:
    """The records the exporter process makes of ``reports``' facts (admiss check's way over
    OTLP), and the count of events the checking process said they were; ``clock`` in place
    of the facts' own."""
    kept = _Kept()
    facts = otel._ReportFacts(kept)
    if clock is not None:
        facts.clock = clock
    for report in reports:
        facts.add(report)
    facts.sent()
    batch = _Batch()
    made = otel._Reports({b"L": batch})
    for kind, count, held in kept.puts:
        assert kind == b"C"
        made.add(count, marshal.dumps(held, 2))  # as _Channel._frames frames them
    assert batch.count == sum(count for _, count, _ in kept.puts)
    return b"".join(batch.records), batch.count


COUNTED = "counted"


def _kinds(reports) -> list:
    """How _ReportFacts hands over each of ``reports``: COUNTED (a report of the common
    shape, its facts led by its rubric's number) or otel._FULL."""
    kept = _Kept()
    facts = otel._ReportFacts(kept)
    for report in reports:
        facts.add(report)
    facts.sent()
    return [COUNTED if held[0] >= 0 else held[0] for _, _, group in kept.puts for held in group
            if held[0] != otel._RUBRIC]


def _reports():
    """Reports of a varied batch, as admiss check makes them: exclusions of every reason, a
    DEFAULT yes, a chain whose gates pass, fail and abstain, an OTel trace whose events name
    its spans, and a second rubric; checked twice, before telemetry saw their rubrics and
    after (when their properties count as they check: CompiledProperty.count_exclusions)."""
    ops = admiss.compile_source(REPORT_RUBRIC, name="ops")
    chained = admiss.compile_source(REPORT_RUBRIC + CHAIN, name="chained")
    traced = admiss.compile_source("PROPERTY tools { ADMIT procedurally_sound_tool_call }\n", name="tools")

    def checked():
        reports = [ops.check(bundle, f"bundle-{n}") for n, bundle in enumerate(REPORT_BUNDLES)]
        reports += [chained.check({**bundle, "candidates": [candidate]}, f"chained-{n}")
                    for n, (bundle, candidate) in enumerate(zip(REPORT_BUNDLES, CANDIDATES))]
        reports.append(traced.check(json.loads(PYDANTIC_AI_TRACE.read_text()), "trace"))
        return reports

    plain = checked()
    facts = otel._ReportFacts(_Kept())
    for report in plain:
        facts.add(report)
    return plain + checked()


def _both_ways(reports) -> tuple[ExportLogsServiceRequest, ExportLogsServiceRequest, int]:
    """The events the exporter process makes from the facts the checking process hands it
    for ``reports``, and those the SDK makes in process from them (the console's way), as
    export requests with their times left out (each way stamps its own); and the count of
    events the checking process said they were."""
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=RESOURCE)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    sdk = otel.Telemetry.__new__(otel.Telemetry)
    sdk._events, sdk._facts = otel._SdkEvents(provider), None
    for report in reports:
        sdk.report(report)
    made, count = _through_the_exporter(reports)
    expected = ExportLogsServiceRequest.FromString(encode_logs(exporter.get_finished_logs()).SerializeToString())
    got = ExportLogsServiceRequest.FromString(otlp_wire.export_request(
        otlp_wire.resource_message(RESOURCE.attributes), otlp_wire.scope_message("admiss", __version__), made))
    for request in (got, expected):
        for record in request.resource_logs[0].scope_logs[0].log_records:
            record.time_unix_nano = record.observed_time_unix_nano = 0
    return got, expected, count


def test_a_checked_reports_events_decode_as_the_sdks_do():
    reports = _reports()
    got, expected = _both_ways(reports + reports)[:2]  # the second time from the kept encodings
    assert {otel._FULL, COUNTED} <= set(_kinds(reports))
    records = [got.resource_logs[0].scope_logs[0].log_records, expected.resource_logs[0].scope_logs[0].log_records]
    assert got == expected
    count = _through_the_exporter(reports + reports)[1]
    assert count == len(records[0]) == 2 * sum(len(r.properties) + _gates(r) for r in reports)
    # The batch is as varied as it says.
    said = [{kv.key: kv.value for kv in record.attributes} for record in records[0]]
    labels = {a["gen_ai.evaluation.score.label"].string_value for a in said}
    assert {"yes", "no", "pass", "fail", "abstain"} <= labels
    for reason in ("forbidden", "inadmissible", "shortcut_rejected"):
        assert any(a["admiss.excluded." + reason].int_value for a in said if "admiss.excluded." + reason in a)
    assert any(a["admiss.default_verdict"].string_value == "yes" for a in said if "admiss.default_verdict" in a)
    assert any(record.span_id for record in records[0]) and not all(record.span_id for record in records[0])


def test_a_bundles_step_keys_name_no_span_and_only_a_traces_steps_do():
    # A span is named only for a checked trace's steps (report.trace): a bundle whose items
    # carry "step" keys shaped like a trace's, span and trace ids included, goes as counts,
    # and no event of it names a span, either way its events are made.
    rubric = admiss.compile_source(REPORT_RUBRIC, name="ops")
    step = {"span_id": "00f067aa0ba902b7", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}
    bundles = [{"evidence": [{**item, "step": step} for item in bundle["evidence"]]} for bundle in REPORT_BUNDLES]
    first = rubric.check(bundles[0], "first")
    otel._ReportFacts(_Kept()).add(first)
    reports = [first] + [rubric.check(bundle, f"b{n}") for n, bundle in enumerate(bundles)]
    assert set(_kinds(reports[1:])) == {COUNTED}
    got, expected, _ = _both_ways(reports)
    assert got == expected
    assert not any(record.span_id for record in got.resource_logs[0].scope_logs[0].log_records)
    traced = admiss.compile_source("PROPERTY tools { ADMIT procedurally_sound_tool_call }\n", name="tools")
    trace = traced.check(json.loads(PYDANTIC_AI_TRACE.read_text()), "trace")
    assert _kinds([trace, trace]) == [otel._FULL, otel._FULL]
    got = _both_ways([trace])[0]
    assert all(record.span_id for record in got.resource_logs[0].scope_logs[0].log_records)


def test_reports_of_one_shape_keep_their_own_bundles_names_and_times():
    # A report of the common shape is its shape's kept events with its time and bundle's
    # name put in by a %-format (otel._Reports._template): names that are format text
    # themselves, of one length and of others (a record's length past one byte among them),
    # each arrive as they were.
    rubric = admiss.compile_source(REPORT_RUBRIC, name="ops")
    names = ["%b", "%s", "%%", "b%", "a%b%c", "", "é", "n" * 40, "%" * 40, "x" * 200, "%b" * 100, "ab", "cd"]
    first = rubric.check(REPORT_BUNDLES[0], "first")
    otel._ReportFacts(_Kept()).add(first)  # the rubric's first report is told in full
    reports = [first] + [rubric.check(bundle, name) for name in names for bundle in REPORT_BUNDLES]
    assert set(_kinds(reports[1:])) == {COUNTED}
    got, expected, count = _both_ways(reports)
    assert got == expected
    records = got.resource_logs[0].scope_logs[0].log_records
    said = [{kv.key: kv.value.string_value for kv in record.attributes} for record in records]
    assert [a["admiss.bundle"] for a in said] == [r.bundle_name for r in reports for _ in r.properties]
    assert {a["admiss.rubric"] for a in said} == {"ops"}
    # Each event has its own report's time, not the time of its shape's first report.
    made = _through_the_exporter(reports, itertools.count(10**9).__next__)[0]
    stamped = ExportLogsServiceRequest.FromString(otlp_wire.export_request(b"", b"", made))
    times = iter((r.time_unix_nano, r.observed_time_unix_nano) for r in stamped.resource_logs[0].scope_logs[0].log_records)
    by_report = [{next(times) for _ in r.properties} for r in reports]
    assert all(len(report) == 1 for report in by_report)
    stamps = [time for report in by_report for time, observed in report if time == observed]
    assert stamps == sorted(set(stamps)) and len(stamps) == len(reports)


def test_the_exporters_kept_events_cleared_at_their_bounds_make_the_same_records(monkeypatch):
    # The exporter keeps shapes' templates, events and heads up to their bounds, then starts
    # again: with every bound at one, each report clears what the one before it kept, and
    # the records are still those the SDK makes.
    for bound in ("_KEPT_SHAPES", "_KEPT_FORMS", "_KEPT_PROPERTIES"):
        monkeypatch.setattr(otel, bound, 1)
    rubric = admiss.compile_source(REPORT_RUBRIC, name="ops")
    first = rubric.check(REPORT_BUNDLES[0], "first")
    otel._ReportFacts(_Kept()).add(first)
    reports = [first] + [rubric.check(bundle, name) for name in ("a", "bb", "c", "dd") for bundle in REPORT_BUNDLES]
    got, expected, _ = _both_ways(reports + reports)
    assert got == expected


def test_a_lone_surrogate_is_written_as_its_escape_and_the_export_stays_whole():
    # Where the SDK's encoder drops an attribute whose text is not UTF-8, and the records
    # written with it would make a collector refuse the whole export, the wire writes the
    # character's escape, as the text report does: the request decodes, the others intact.
    rubric = admiss.compile_source(REPORT_RUBRIC, name="ops")
    first = rubric.check(REPORT_BUNDLES[0], "first")
    otel._ReportFacts(_Kept()).add(first)
    reports = [first] + [rubric.check(bundle, name) for name in ("a\ud800b", "\udcff", "ok") for bundle in REPORT_BUNDLES]
    made, _ = _through_the_exporter(reports)
    got = ExportLogsServiceRequest.FromString(otlp_wire.export_request(b"", b"", made))
    said = [{kv.key: kv.value.string_value for kv in record.attributes}
            for record in got.resource_logs[0].scope_logs[0].log_records]
    assert [a["admiss.bundle"] for a in said] == [
        *["first"] * 2, *(n for n in ("a\\ud800b", "\\udcff", "ok") for _ in range(8))]
    record = otlp_wire.log_record(1, otlp_wire.field(12, b"e"), otlp_wire.LOG_ATTRIBUTES.encode(
        {"gen_ai.evaluation.explanation": "why \ud83d", "admiss.labels": ("x\udc80",)}))
    (decoded,) = ExportLogsServiceRequest.FromString(otlp_wire.export_request(
        b"", b"", otlp_wire.in_scope(record))).resource_logs[0].scope_logs[0].log_records
    assert decoded.attributes[0].value.string_value == "why \\ud83d"
    assert decoded.attributes[1].value.array_value.values[0].string_value == "x\\udc80"


def test_an_export_request_in_one_join_is_its_fields_nested():
    # export_request writes the nested fields' lengths ahead and joins once; the same bytes
    # as nesting them field by field, for records joined or as a list of parts, across the
    # lengths where a varint grows a byte.
    rng = random.Random(7)
    for size in (0, 1, 126, 127, 128, 16383, 16384, 300_000):
        records = rng.randbytes(size)
        for resource in (b"", b"r" * 130):
            nested = otlp_wire.field(1, otlp_wire.field(1, resource) + otlp_wire.field(2, otlp_wire.field(1, b"scope")
                                                                                       + records))
            assert otlp_wire.export_request(resource, b"scope", records) == nested
            assert otlp_wire.export_request(resource, b"scope", [records[:size // 3], b"", records[size // 3:]]) == nested


def _gates(report) -> int:
    return sum(len(rung.gates) for rung in report.chain.rungs) if report.chain is not None else 0


def _counts_received(made: bytes) -> list[tuple[int, int, int, int]]:
    """Each event's (admitted, forbidden, shortcut-rejected, inadmissible) counts."""
    got = ExportLogsServiceRequest.FromString(otlp_wire.export_request(b"", b"", made))
    counts = []
    for record in got.resource_logs[0].scope_logs[0].log_records:
        said = {kv.key: kv.value.int_value for kv in record.attributes}
        counts.append(tuple(said["admiss." + r] for r in (
            "evidence.admitted", "excluded.forbidden", "excluded.shortcut_rejected", "excluded.inadmissible")))
    return counts


def test_a_reports_counts_at_their_packings_limit_and_past_it():
    # A property's four counts share one number, otel._COUNT_BITS a count: a bundle of as
    # many items as a count holds goes as counts, and they stay apart; one item more and it
    # is told in full. The counts arrive the same either way.
    rubric = admiss.compile_source(REPORT_RUBRIC, name="ops")
    limit = otel._COUNT_MASK
    forbidden = {"kind": "summary", "detail": "s", "source_label": "recap"}
    shortcut = {"kind": "verified_external_source", "detail": "n", "source_label": "news article"}
    admitted = {"kind": "verified_external_source", "detail": "v", "source_label": "filing"}
    other = {"kind": "other", "detail": "o", "source_label": "o"}
    sizes = [(3, limit - 26, 20, 3), (3, limit - 25, 20, 3)]  # limit items, then one more
    bundles = [{"evidence": [admitted] * a + [forbidden] * f + [shortcut] * s + [other] * o} for a, f, s, o in sizes]
    first = rubric.check(bundles[0], "first")  # checked before telemetry saw the rubric
    otel._ReportFacts(_Kept()).add(first)
    reports = [rubric.check(bundle, "big") for bundle in bundles]
    assert _kinds([first, *reports]) == [otel._FULL, COUNTED, otel._FULL]
    made, _ = _through_the_exporter([first, *reports])
    # named_operator: as the items say; stated_output: every item is inadmissible to it.
    assert _counts_received(made) == [
        count for a, f, s, o in [sizes[0], *sizes] for count in ((a, f, s, o), (0, 0, 0, a + f + s + o))]


def test_a_rubric_counts_once_telemetry_has_seen_it():
    # Telemetry's first report of a rubric makes its properties count as they check
    # (CountingProperty): the same results as before, and their counts packed.
    rubric = admiss.compile_source(REPORT_RUBRIC, name="ops")
    before = [rubric.check(bundle, f"bundle-{n}") for n, bundle in enumerate(REPORT_BUNDLES)]
    otel._ReportFacts(_Kept()).add(before[0])
    after = [rubric.check(bundle, f"bundle-{n}") for n, bundle in enumerate(REPORT_BUNDLES)]
    assert [type(p).__name__ for p in rubric.compiled.properties] == ["CountingProperty"] * 2
    for plain, counted in zip(before, after):
        assert counted.to_json(True) == plain.to_json(True)
        for old, new in zip(plain.properties, counted.properties):
            fields = otel.property_fields(old)
            assert new.counts == fields[3] + sum(c << otel._COUNT_BITS * n for n, c in enumerate(fields[4:7], 1))
    assert any(new.counts >> otel._COUNT_BITS for report in after for new in report.properties)


@pytest.mark.parametrize("apart_ns, reports, puts", [
    # A quick batch: the first report goes at once, then puts of a full count; 3 are held.
    (1_000, 2 * otel._REPORTS_A_PUT + 4, [1, otel._REPORTS_A_PUT, otel._REPORTS_A_PUT]),
    (1_000_000, 154, [1, 50, 50, 50]),  # a report every ms: a put every 50 ms of reports; 3 held
    (60_000_000, 7, [1] * 7),  # a slow batch: each report as it comes
])
def test_facts_go_when_a_puts_count_is_full_or_50_ms_after_the_last_put(apart_ns, reports, puts):
    # Each put wakes the exporter process: a quick batch's facts go in large puts, a slow
    # batch's as each report is made, and none is held longer than the next report.
    rubric = admiss.compile_source(REPORT_RUBRIC, name="ops")
    report = rubric.check(REPORT_BUNDLES[0], "b")
    kept = _Kept()
    facts = otel._ReportFacts(kept)
    facts.clock = itertools.count(10**18, apart_ns).__next__
    for _ in range(reports):
        facts.add(report)
    assert [sum(held[0] != otel._RUBRIC for held in group) for _, _, group in kept.puts] == puts
    assert all(len(group) <= otel._REPORTS_A_PUT for _, _, group in kept.puts)
    facts.sent()
    assert sum(count for _, count, _ in kept.puts) == reports * len(report.properties)


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
    {"evidence": [{"kind": "final_answer", "detail": "Done.", "source_label": "answer"},
                  {"kind": "verified_external_source", "detail": "A story.", "source_label": "news article"}]},
]
CHAIN = """CHAIN answer {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE json_valid
    GATE consistency K 3 ON ABSTAIN fail_closed
  }
}
"""
CANDIDATES = [{"rung": "draft", "model": "openai/gpt-5-mini", "output": output, "cost_usd": 0.0004}
              for output in ('{"operator": "Acme"}', "not json", "", "{}")]
PYDANTIC_AI_TRACE = Path(__file__).parent.parent / "traces" / "fixtures" / "otel_pydantic_ai.json"  # by pydantic-ai
