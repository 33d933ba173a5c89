"""OTLP protobuf, written by hand for the records admiss sends: log records (the
``gen_ai.evaluation.result`` events) and spans, and the export requests around them.

Why not the OpenTelemetry SDK's encoder (opentelemetry-exporter-otlp-proto-common): it
builds a protobuf message object per record, per attribute and per value, and then
serialises them; with the SDK's LogRecord and processor in front, an event cost about
180 µs of CPU on the shared 2-core benchmark machine (``python benchmarks/run.py --quick
--only otel``: ``admiss check`` of 2,000 bundles took 2.9× as long with telemetry on),
where checking a bundle takes about 100 µs. Importing the SDK, its encoder and its
protobuf classes costs some 0.3 s more, more than the whole 5 % allowed a batch. admiss's
attributes come from a small set of keys whose values mostly repeat (a verdict, a count,
a rubric's name), so each attribute's encoded bytes are kept and reused: an event costs a
few µs. The output is the same OTLP content (tests/otel/test_otlp_wire.py decodes both
with the real opentelemetry-proto classes and compares them). Imports nothing outside the
standard library, so ``admiss check`` does not pay opentelemetry's start-up.

Field numbers are those of opentelemetry/proto/{common,resource,logs,trace}/v1/*.proto.
"""

from __future__ import annotations

import struct
from typing import Any, Iterable, Mapping, Sequence

FIXED64 = struct.Struct("<Q").pack  # a time (ns) as a fixed64 field's payload
_DOUBLE = struct.Struct("<d").pack
_FIXED32 = struct.Struct("<I").pack
# Past this many kept attributes the cache starts again: values that never repeat (a
# bundle's name, a receipt id) must not grow it without end.
_CACHE_LIMIT = 8192
# Attributes whose every value names one request or bundle: never kept (they would only
# push out the ones that come again).
UNIQUE = frozenset({"admiss.receipt.id", "gen_ai.response.id", "admiss.bundle"})
# A protobuf string must be valid UTF-8, and a collector refuses an export request holding
# one that is not whole (protobuf-go checks), with the other records in it: a lone
# surrogate (a bundle's name from a file name that is not UTF-8, a "\ud800" escape in a
# bundle) is written as its escape, as the text report writes it.
TEXT_ERRORS = "backslashreplace"


_ONE_BYTE = [bytes((number,)) for number in range(0x80)]


def varint(number: int) -> bytes:
    """A protobuf varint; a negative number as its 64-bit two's complement (int64)."""
    if 0 <= number < 0x80:
        return _ONE_BYTE[number]
    if 0 < number < 0x4000:  # most records' lengths: a loop costs three times as much
        return bytes((number & 0x7F | 0x80, number >> 7))
    if number < 0:
        number += 1 << 64
    out = bytearray()
    while number >= 0x80:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (a string, bytes or an embedded message)."""
    size = len(payload)
    return _TAGS[number] + (_ONE_BYTE[size] if size < 0x80 else varint(size)) + payload


_TAGS = [varint(number << 3 | 2) for number in range(16)]


def any_value(value: Any) -> bytes:
    """An AnyValue, typed as the SDK's encoder types it (bool before int; None is empty)."""
    if value is None:
        return b""
    kind = type(value)
    if kind is bool:
        return b"\x10\x01" if value else b"\x10\x00"
    if kind is str:
        return field(1, value.encode("utf-8", TEXT_ERRORS))
    if kind is int:
        if not -(1 << 63) <= value < 1 << 63:
            raise ValueError(f"{value} is out of int64's range")
        return b"\x18" + varint(value)
    if kind is float:
        return b"\x21" + _DOUBLE(value)
    if kind is bytes:
        return field(7, value)
    if isinstance(value, Mapping):
        return field(6, b"".join(field(1, key_value(str(k), v)) for k, v in value.items()))
    if isinstance(value, Sequence):
        return field(5, b"".join(field(1, any_value(v)) for v in value))
    # The SDK's own encoder drops (and logs) an attribute of any other type; admiss makes none.
    raise TypeError(f"an attribute value of type {kind.__name__} has no OTLP encoding")


def key_value(key: str, value: Any) -> bytes:
    return field(1, key.encode("utf-8")) + field(2, any_value(value))


class Attributes:
    """Encodes attribute maps as repeated KeyValue fields of one field number, keeping each
    (key, value, type)'s bytes for the next record (the type too: 1, 1.0 and True are equal
    keys of a dict, and encode differently)."""

    def __init__(self, number: int):
        self.number = number
        self.kept: dict[tuple[str, Any, type], bytes] = {}
        self.keys: dict[str, bytes] = {}  # a key's own field, for encode_string

    def encode(self, attributes: Mapping[str, Any]) -> bytes:
        kept = self.kept
        try:
            return b"".join([kept[key, value, type(value)] for key, value in attributes.items()])
        except (KeyError, TypeError):  # a value not seen yet, or not hashable
            return self._encode_keeping(attributes)

    def _encode_keeping(self, attributes: Mapping[str, Any]) -> bytes:
        kept = self.kept
        if len(kept) >= _CACHE_LIMIT:
            kept.clear()
        parts = []
        for key, value in attributes.items():
            kind = type(value)
            if kind is list or kind is dict or kind is tuple:
                parts.append(self.encode_one(key, value))
                continue
            encoded = kept.get((key, value, kind))
            if encoded is None:
                encoded = self.encode_one(key, value)
                if key not in UNIQUE:
                    kept[key, value, kind] = encoded
            parts.append(encoded)
        return b"".join(parts)

    def encode_once(self, attributes: Mapping[str, Any]) -> bytes:
        """For values that will not come again (a bundle's name, a receipt's id): not kept."""
        return b"".join([self.encode_one(key, value) for key, value in attributes.items()])

    def encode_string(self, key: str, value: Any) -> bytes:
        """encode_one of a value that will not come again, quicker for a string (a bundle's
        name, every report): its key's bytes are kept."""
        if type(value) is not str:
            return self.encode_one(key, value)
        prefix = self.keys.get(key)
        if prefix is None:
            prefix = self.keys[key] = field(1, key.encode("utf-8"))
        data = value.encode("utf-8", TEXT_ERRORS)
        size = len(data)
        whole = len(prefix) + 4 + size
        if whole < 0x80:  # every length one byte: one join, not three fields
            return b"".join((_TAGS[self.number], _ONE_BYTE[whole], prefix, b"\x12", _ONE_BYTE[size + 2], b"\x0a",
                             _ONE_BYTE[size], data))
        return field(self.number, prefix + field(2, field(1, data)))

    def encode_one(self, key: str, value: Any) -> bytes:
        if value is None:
            return b""  # the SDK drops an attribute without a value
        try:
            return field(self.number, key_value(key, value))
        except (TypeError, ValueError):
            return b""  # as the SDK's encoder does, the record goes without it


LOG_ATTRIBUTES = Attributes(6)
SPAN_ATTRIBUTES = Attributes(9)
EVENT_ATTRIBUTES = Attributes(3)
# The SDK's encoder always sets a log record's body, to an empty AnyValue when it has none.
_EMPTY_BODY = field(5, b"")


def log_record(time_ns: int, event_name: bytes, attributes: bytes, trace_id: int = 0, span_id: int = 0,
               flags: int = 0) -> bytes:
    """A LogRecord message as the SDK's encoder writes an event (no severity, an empty
    body, the observed time the same as the time); ``event_name`` field-encoded already
    (``field(12, name)``), ``attributes`` too (by LOG_ATTRIBUTES)."""
    stamp = FIXED64(time_ns)
    if not (trace_id or span_id or flags):
        return b"".join((b"\x09", stamp, _EMPTY_BODY, attributes, b"\x59", stamp, event_name))
    parts = [b"\x09", stamp, _EMPTY_BODY, attributes]
    if flags:
        parts += (b"\x45", _FIXED32(flags))
    if trace_id:
        parts += (b"\x4a\x10", trace_id.to_bytes(16, "big"))
    if span_id:
        parts += (b"\x52\x08", span_id.to_bytes(8, "big"))
    parts += (b"\x59", stamp, event_name)
    return b"".join(parts)


def event_head(event_name: bytes, attributes: bytes) -> tuple[bytes, int]:
    """An event's own attributes (LOG_ATTRIBUTES-encoded), ready for event_in_scope: the
    bytes between its time and what all of a report's events share, and the record's
    length less those shared bytes."""
    head = _EMPTY_BODY + attributes
    return head, 9 + len(head) + 9 + len(event_name)


def event_in_scope(stamp: bytes, head: tuple[bytes, int], common: bytes, event_name: bytes) -> tuple[bytes, ...]:
    """The parts of ``in_scope(log_record(time, event_name, attributes + common))`` for an
    event without a parent span, ``stamp`` its time as fixed64 and ``head`` event_head's
    of its attributes: a batch's events are mostly made this way, and here making one
    costs a tuple, not two joins."""
    size = head[1] + len(common)
    return (b"\x12", _ONE_BYTE[size] if size < 0x80 else varint(size), b"\x09", stamp, head[0], common, b"\x59",
            stamp, event_name)


def span_event(name: str, time_ns: int, attributes: Mapping[str, Any], more: bytes = b"") -> bytes:
    """A Span.Event message; ``more``: attributes after ``attributes``, EVENT_ATTRIBUTES-encoded."""
    return b"\x09" + FIXED64(time_ns) + field(2, name.encode("utf-8")) + EVENT_ATTRIBUTES.encode(attributes) + more


def span(trace_id: int, span_id: int, parent_span_id: int, parent_is_remote: bool, name: str, kind: int,
         start_ns: int, end_ns: int, attributes: Mapping[str, Any], events: Iterable[bytes] = (),
         trace_state: str = "", status_code: int = 0, status_message: str = "") -> bytes:
    """A Span message as the SDK's encoder writes an ended span without links (``kind``
    and ``status_code`` are the OTLP enums: kind 1 internal, 2 server, 3 client; status 0
    unset, 1 ok, 2 error; ``events`` encoded by span_event)."""
    parts = [b"\x0a\x10", trace_id.to_bytes(16, "big"), b"\x12\x08", span_id.to_bytes(8, "big")]
    if trace_state:
        parts.append(field(3, trace_state.encode("utf-8")))
    if parent_span_id:
        parts += (b"\x22\x08", parent_span_id.to_bytes(8, "big"))
    parts += (field(5, name.encode("utf-8")), b"\x30", varint(kind), b"\x39", FIXED64(start_ns), b"\x41",
              FIXED64(end_ns), SPAN_ATTRIBUTES.encode(attributes))
    parts += (field(11, event) for event in events)
    # The SDK's encoder always sets a Status (empty when unset). Flags: the parent's
    # is-remote bit is known (0x100), and set when it is (0x200).
    status = (field(2, status_message.encode("utf-8")) if status_message else b"") + (
        b"\x18" + varint(status_code) if status_code else b"")
    parts += (field(15, status), b"\x85\x01", _FIXED32(0x300 if parent_is_remote else 0x100))
    return b"".join(parts)


def in_scope(record: bytes) -> bytes:
    """A log record or span as its ScopeLogs' or ScopeSpans' field 2 (both number it 2):
    what export_request holds, so that records are wrapped once, where they are made."""
    return field(2, record)


def export_request(resource: bytes, scope: bytes, records: bytes | Sequence[bytes]) -> bytes:
    """An ExportLogsServiceRequest or ExportTraceServiceRequest (the two have the same
    shape: resource_X 1 { resource 1, scope_X 2 { scope 1, records 2 } }) of one resource
    and scope; ``resource`` and ``scope`` encoded by resource_message and scope_message,
    ``records`` each wrapped by in_scope, joined or as a list of parts. Written in one
    join: nesting the fields copied an export of 512 events (some 270 KB) five times."""
    parts = [records] if isinstance(records, bytes) else list(records)
    resource_field, scope_field = field(1, resource), field(1, scope)
    inner = len(scope_field) + sum(map(len, parts))
    inner_head = b"\x12" + varint(inner)
    return b"".join([b"\x0a", varint(len(resource_field) + len(inner_head) + inner), resource_field, inner_head,
                     scope_field, *parts])


def resource_message(attributes: Mapping[str, Any]) -> bytes:
    return b"".join(field(1, key_value(key, value)) for key, value in attributes.items())


def scope_message(name: str, version: str) -> bytes:
    return field(1, name.encode("utf-8")) + field(2, version.encode("utf-8"))
