"""The OTEL_* variables users set for the SDK's OTLP/HTTP exporter mean to admiss what they
mean to the SDK: under the same environment, ``admiss check`` and the real SDK's
OTLPLogExporter (behind its BatchLogRecordProcessor, in a process of its own) send their
export requests to the same path with the same headers and encoding, and both decode."""

from __future__ import annotations

import subprocess
import sys

import pytest
from otlp_receiver import events
from test_otel_check import check, plain_env, write_case

SDK_EXPORT = """
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

provider = LoggerProvider()
provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
provider.get_logger("sdk").emit(event_name="gen_ai.evaluation.result", attributes={"gen_ai.evaluation.name": "sdk"})
provider.shutdown()
"""
# Port 9 (discard) has no listener on the test machine: a request sent there is lost.
NOWHERE = "http://127.0.0.1:9"
CASES = {
    "the signal's endpoint wins, taken as it is": {
        "OTEL_EXPORTER_OTLP_ENDPOINT": NOWHERE, "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "{url}/v1/logs"},
    "headers (URL-encoded) and gzip for every signal": {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "{url}/", "OTEL_EXPORTER_OTLP_HEADERS": "x-team=evals,Authorization=Bearer%20t0k3n",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"},
    "the signal's headers and compression win": {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "{url}", "OTEL_EXPORTER_OTLP_HEADERS": "x-team=evals",
        "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "x-only=logs", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
        "OTEL_EXPORTER_OTLP_LOGS_COMPRESSION": "deflate", "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT": "5"},
}


# The HTTP client's own headers: the length is the body's, and the others are what the
# client library asks of any server (admiss's exporter sends through the SDK's urllib3
# transport where nothing needs requests, otel._needs_requests); the rest says where and how
# the export was sent.
CLIENTS_OWN = {"content-length", "accept", "accept-encoding", "connection"}


def _posts(receiver) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    return {(path, tuple(sorted((k, v) for k, v in headers.items() if k not in CLIENTS_OWN)))
            for path, headers in receiver.posts}


@pytest.mark.parametrize("variables", CASES.values(), ids=CASES.keys())
def test_the_variables_send_as_the_sdks_exporter_sends(tmp_path, receiver, variables):
    env = plain_env(**{name: value.format(url=receiver.url) for name, value in variables.items()})
    rubric, bundle = write_case(tmp_path)
    ran = check(tmp_path, "--rubric", str(rubric), str(bundle), env=env)
    assert ran.returncode == 1, ran.stderr  # the bundle's json_valid gate fails
    assert {event.event_name for event in events(receiver)} == {"gen_ai.evaluation.result"}
    assert len(events(receiver)) == 3
    admiss_sent = _posts(receiver)
    receiver.clear()
    sdk = subprocess.run([sys.executable, "-c", SDK_EXPORT], env=env, capture_output=True, text=True, timeout=60)
    assert sdk.returncode == 0, sdk.stderr
    assert len(events(receiver)) == 1
    assert admiss_sent == _posts(receiver)
    assert {path for path, _ in admiss_sent} == {"/v1/logs"}
