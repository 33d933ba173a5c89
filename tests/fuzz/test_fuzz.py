"""Fuzz targets: hostile bytes in, a report or an AdmissError out, never anything else.

Each target is a row of TARGETS: a name, the corpus folder its seeds come from, and a
function that takes raw bytes and must either return or raise an AdmissError. Inputs are
seeds from tests/fuzz/corpus/<folder>, mutated byte by byte, or bytes from scratch. A new
input kind (traces, say) is a corpus folder and one more row.

The upstream-reply seeds are written by corpus/upstream_replies/make_seeds.py.

Each target runs a bounded number of examples with no per-example deadline, so the whole
module stays well under 30 s on a shared machine; run longer locally with
ADMISS_FUZZ_EXAMPLES=5000.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import admiss
from admiss.bundle import parse_bundle_text
from admiss.errors import AdmissError
from admiss.jsonio import dumps_line
from admiss.providers import MAX_CALL_TOKENS, ProviderError, Reply, _completion, _error_detail
from admiss.redact import holds_secret, url_secrets
from admiss.receipts import DamagedRow, open_store

CORPUS = Path(__file__).parent / "corpus"
EXAMPLES = int(os.environ.get("ADMISS_FUZZ_EXAMPLES", "120"))
# The rubric bundles are checked against: every construct that runs without a network.
RUBRIC_FILE = CORPUS / "rubrics" / "chain.rubric"
# One chain per gate that reads a candidate's output (json_valid, schema, consistency).
GATES_RUBRIC = Path(__file__).parent / "gates" / "gates.rubric"


def seeds(folder: str) -> list[bytes]:
    # A .py file beside the seeds is the script that wrote them.
    return [p.read_bytes() for p in sorted((CORPUS / folder).iterdir()) if p.is_file() and p.suffix != ".py"]


_BYTES = [b"\x00", b"\xff", b"\xed\xa0\x80", b'"', b"\\", b"\\ud800", b"{", b"}", b"[", b"]", b",", b":", b"9" * 40,
          b"-", b"1e999", b"\n", b"NaN", b"#", b"K", b"WINDOW 9", b"PROPERTY", b"ADMIT", b"\xc3\xa9",
          b"7" * 4400, b"1" * 400, b'"a": 1, "a": ', b"\\u0061", b"\xc2\xb2", b"1E+999", b"-0", b"[" * 700]
# What hides inside a trace's strings: JSON text with repeated keys, error words behind
# invisible characters, digits int() refuses, numbers too long to read.
_EMBEDDED = [b'"{\\"error\\":\\"x\\",\\"error\\":null}"', b'"[{\\"isError\\":true,\\"isError\\":false}]"',
             b'"\xef\xbb\xbfError: x"', b'"\xe2\x80\x8b{\\"error\\":1}"', b'"\xc2\xb2"', b'"-\xc2\xb2"', b'"' + b"9" * 5000 + b'"',
             b"9" * 5000, b'{"isError":true}', b'"An error occurred while running the tool."', b'"functionResponse"',
             b'"function_response"', b'{"key":"gen_ai.tool.name","value":{"stringValue":"x"}}', b'"intValue"',
             b'"startTimeUnixNano"', b'"evidence"', b'"tool_use"']


@st.composite
def mutated(draw, corpus: list[bytes], extra: tuple[bytes, ...] = ()) -> bytes:
    """A corpus seed with a few bytes inserted, deleted or overwritten, or raw bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300))
    data = bytearray(draw(st.sampled_from(corpus)))
    interesting = st.sampled_from(_BYTES + list(extra))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.integers(0, 2))
        if action == 0:
            data[at:at] = draw(interesting | st.binary(min_size=1, max_size=4))
        elif action == 1:
            del data[at:at + draw(st.integers(1, 8))]
        else:
            data[at:at + 1] = draw(st.binary(min_size=1, max_size=1))
    return bytes(data)


# ---------------------------------------------------------------- targets

_rubric = None


def _loaded_rubric():
    global _rubric
    if _rubric is None:
        _rubric = admiss.load(RUBRIC_FILE)
    return _rubric


def bundle_through_api(data: bytes) -> None:
    report = _loaded_rubric().check(parse_bundle_text(data, "<fuzz>"))
    assert report.verdict in ("pass", "fail")
    report.to_text().encode("utf-8")
    # Both JSON shapes must be writable, whatever strings the bundle brought.
    dumps_line(report.to_dict())
    dumps_line(report.to_dict(full=True))


def _check_in_process(data: bytes, fixed_rubric: bool) -> None:
    """``admiss check --format text bundle.json`` in this process (with ``--rubric R``, or by
    the bundle's own rubric field with R beside it), with a stdout that encodes strictly
    like a real one."""
    from admiss.runner import CheckOptions, run_check

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bundle.json"
        path.write_bytes(data)
        (Path(folder) / RUBRIC_FILE.name).write_bytes(RUBRIC_FILE.read_bytes())
        stdout, stderr = sys.stdout, sys.stderr
        sys.stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        sys.stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
        try:
            code = run_check([path], CheckOptions(RUBRIC_FILE if fixed_rubric else None, "text"))
        finally:
            sys.stdout, sys.stderr = stdout, stderr
    assert code in (0, 1, 2)


def bundle_through_cli(data: bytes) -> None:
    _check_in_process(data, fixed_rubric=True)


def bundle_naming_its_rubric(data: bytes) -> None:
    _check_in_process(data, fixed_rubric=False)


def rubric_source(data: bytes) -> None:
    from admiss.fmt import format_source
    from admiss.lint import lint_source

    text = data.decode("utf-8", "replace")
    for step in (lambda: admiss.compile_source(text, "fuzz.rubric"), lambda: lint_source(text, "fuzz.rubric"),
                 lambda: format_source(text, "fuzz.rubric")):
        try:
            step()
        except AdmissError as error:
            error.render().encode("utf-8", "backslashreplace")


FUZZ_KEY = "sk-fuzz-provider-key-0123456789"  # the key the upstream-reply seeds echo
FUZZ_URL_SECRETS = url_secrets(["http://svc-user:fuzz-url-password@127.0.0.1/v1"])


def upstream_reply(data: bytes) -> None:
    """A provider's reply body, as a completion (status 200) and as an error (status 500):
    a Completion or a ProviderError, never a secret in a reason (redacted before the cut),
    and never an unbounded token count."""
    secrets = (FUZZ_KEY, *FUZZ_URL_SECRETS)
    try:
        completion = _completion(Reply(200, {}, data), "fuzz", lambda: secrets)
    except ProviderError as error:
        assert not holds_secret(error.reason, secrets)
    else:
        usage = completion.usage
        assert usage is None or max(usage.input_tokens, usage.output_tokens) <= MAX_CALL_TOKENS
    detail = _error_detail(Reply(500, {}, data), secrets)
    assert not holds_secret(detail, secrets)


_store = None


def store_row(data: bytes) -> None:
    """A receipt row another program wrote (as text, or as a blob): a receipt or DamagedRow."""
    global _store
    if _store is None:
        _store = open_store(Path(tempfile.mkdtemp(prefix="admiss-fuzz-")) / "r.db")
    body: bytes | str = data if data[:1] == b"\x00" else data.decode("utf-8", "replace")
    _store._db.execute("INSERT OR REPLACE INTO receipts VALUES ('rcpt_fuzz', '', 'c', NULL, 'exhausted', 0, 0, ?)",
                       (body,))
    try:
        assert isinstance(_store.get("rcpt_fuzz"), dict)
    except DamagedRow as damaged:
        assert damaged.receipt_id == "rcpt_fuzz"


_gates_rubric = None


def candidate_output_through_every_gate(data: bytes) -> None:
    """A candidate output (and its samples) through json_valid, schema and consistency: a
    verdict or an abstain, never an error counted against the gate (fault "gate")."""
    global _gates_rubric
    if _gates_rubric is None:
        _gates_rubric = admiss.load(GATES_RUBRIC, offline=True)
    text = data.decode("utf-8", "replace")
    for chain in ("json", "schema", "consistency"):
        report = _gates_rubric.check({"output": text, "samples": [text, text[::-1]]}, chain=chain)
        [gate] = report.to_dict()["chain"]["rungs"][0]["gates"]
        assert gate["fault"] != "gate", gate
    assert not any(h.errors or h.disabled for h in _gates_rubric.gate_health())


def model_reply_or_program_stdout(data: bytes) -> None:
    """The same bytes as a judge's reply, a meaning model's reply and a gate program's stdout:
    each read to a result or refused with the gate's own error type, nothing else raised."""
    from admiss.untrusted import UntrustedInput
    from admiss.gates import subprocess as subprocess_gate
    from admiss.gates.judge import parse_grade
    from admiss.gates.meaning import parse_entailment

    text = data.decode("utf-8", "replace")
    for parse in (parse_grade, parse_entailment):
        try:
            parse(text)
        except UntrustedInput:
            pass
    try:
        subprocess_gate._verdict_from(0, data, "", "token", ())
    except subprocess_gate._Abstain:
        pass


class _RawUpstream:
    """A server on 127.0.0.1 that reads each request and answers with the bytes it was
    given, as they are, then closes: a model provider whose reply (status line, headers,
    body) is the fuzz input."""

    def __init__(self) -> None:
        import socket
        import threading

        self.reply = b""
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d/v1" % self._listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            connection, _ = self._listener.accept()
            with connection:
                connection.settimeout(5)
                try:
                    head = b""
                    while b"\r\n\r\n" not in head:
                        head += connection.recv(65536) or b"\r\n\r\n"
                    connection.sendall(self.reply)
                except OSError:
                    pass


_raw_upstream: _RawUpstream | None = None


def upstream_http_reply(data: bytes) -> None:
    """A model call through each sender (httpx's, the gateway's pool) to a server answering
    ``data``: a completion or a ProviderError, never another exception (issue 18, item 7)."""
    import asyncio

    import stamina

    from admiss.config import ProviderConfig
    from admiss.providers import ProviderError, Providers
    from admiss.serve.transport import PooledSender

    global _raw_upstream
    if _raw_upstream is None:
        _raw_upstream = _RawUpstream()
    _raw_upstream.reply = data
    config = ProviderConfig("fuzz", _raw_upstream.url, timeout_s=2, max_retries=1, max_retry_after_s=1)

    async def call(pooled: bool) -> None:
        providers = Providers({"fuzz": config}, environ={})
        if pooled:
            providers.use_sender(PooledSender)
        try:
            await providers.complete("fuzz/m", [{"role": "user", "content": "hi"}])
        except ProviderError as error:
            assert error.reason.startswith("provider fuzz: ")
        finally:
            await providers.aclose()

    # No waits between retries (the Retry-After is still read), at most the one configured.
    with stamina.set_testing(True, attempts=10, cap=True):
        for pooled in (False, True):
            asyncio.run(call(pooled))


def trace_through_api(data: bytes) -> None:
    """Every run of a trace file checked and imported: a report, a bundle or an AdmissError each."""
    value = parse_bundle_text(data, "<fuzz>")
    rubric = _loaded_rubric()
    for _, run in rubric.check_runs(value, "<fuzz>") + rubric.import_runs(value, "<fuzz>"):
        dumps_line(run.to_dict() if hasattr(run, "to_dict") else run if isinstance(run, dict) else run.render())


class Target(NamedTuple):
    name: str
    corpus: str
    run: Callable[[bytes], None]
    extra: tuple[bytes, ...] = ()


TARGETS = [
    Target("bundle-api", "bundles", bundle_through_api),
    Target("bundle-cli", "bundles", bundle_through_cli),
    Target("bundle-cli-own-rubric", "bundles", bundle_naming_its_rubric),
    Target("rubric", "rubrics", rubric_source),
    Target("upstream-reply", "upstream_replies", upstream_reply),
    Target("store-row", "bundles", store_row),
    Target("candidate-output", "outputs", candidate_output_through_every_gate),
    Target("model-reply", "replies", model_reply_or_program_stdout),
    Target("upstream-headers", "upstream_headers", upstream_http_reply),
    # The traces the readers' tests read, from the producers that wrote them.
    Target("trace-api", "../../traces/fixtures", trace_through_api, tuple(_EMBEDDED)),
]


@pytest.fixture(autouse=True)
def _no_config_beside_the_run(tmp_path, monkeypatch):
    # Gates read admiss.toml from the working folder: fuzz where there is none.
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_the_corpus_seeds_give_a_report_or_an_admiss_error(target):
    for data in seeds(target.corpus):
        _run_expecting_admiss_errors_only(target, data)


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_mutated_inputs_give_a_report_or_an_admiss_error(target):
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(mutated(seeds(target.corpus), target.extra))
    def run(data: bytes) -> None:
        _run_expecting_admiss_errors_only(target, data)

    run()


def _run_expecting_admiss_errors_only(target: Target, data: bytes) -> None:
    try:
        target.run(data)
    except AdmissError as error:
        assert error.diagnostics and all(d.code for d in error.diagnostics)
