"""``admiss check`` as a real process exporting gen_ai.evaluation.result events through the
real OpenTelemetry SDK and OTLP/HTTP exporter to a loopback receiver (otlp_receiver.py)."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from otlp_receiver import Receiver, attributes_of, events

sys.path.insert(0, str(Path(__file__).parent.parent / "gates"))

from tls_kit import ConnectProxy  # noqa: E402

TRACES = Path(__file__).parent.parent / "traces"
PYDANTIC_AI_TRACE = TRACES / "fixtures" / "otel_pydantic_ai.json"  # written by pydantic-ai (producers/)

RUBRIC = """RUBRIC ops "Operator claims"
PROPERTY named_operator "Named operator evidence comes from a filing" {
  ADMIT verified_external_source
  FORBID summary
  REJECT SHORTCUT "news article"
}
CHAIN answer {
  RUNG draft MODEL "openai/gpt-5-mini" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE json_valid
  }
}
"""
BUNDLE = {
    "prompt": "Who operates the Permian assets?",
    "evidence": [
        {"kind": "verified_external_source", "detail": "10-K names the operator.", "source_label": "10-K filing"},
        {"kind": "summary", "detail": "A summary says so.", "source_label": "recap"},
        {"kind": "verified_external_source", "detail": "A news story.", "source_label": "news article"},
        {"kind": "reasoning_trace", "detail": "I think so.", "source_label": "thoughts"},
    ],
    "candidates": [{"rung": "draft", "model": "openai/gpt-5-mini", "output": "not json", "cost_usd": 0.0004}],
}


def plain_env(**more: str) -> dict[str, str]:
    """This environment without any OTEL_* variable, plus ``more``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, **more}


def check(folder: Path, *args: str, env: dict[str, str], importtime: bool = False) -> subprocess.CompletedProcess:
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "admiss", "check", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def write_case(folder: Path, config: str | None = None) -> tuple[Path, Path]:
    (folder / "ops.rubric").write_text(RUBRIC)
    (folder / "bundle.json").write_text(json.dumps(BUNDLE))
    if config is not None:
        (folder / "admiss.toml").write_text(config)
    return folder / "ops.rubric", folder / "bundle.json"


def by_name(receiver) -> dict[str, dict]:
    return {attributes_of(r)["gen_ai.evaluation.name"]: attributes_of(r) for r in events(receiver)}


def assert_bundle_events(receiver) -> None:
    assert receiver.wait_for(lambda r: len(events(r)) >= 3)
    got = by_name(receiver)
    assert set(got) == {"named_operator", "non_empty", "json_valid"}
    prop = got["named_operator"]
    assert prop["gen_ai.evaluation.score.label"] == "yes"
    assert prop["gen_ai.evaluation.score.value"] == 1.0
    assert prop["gen_ai.evaluation.explanation"]
    assert (prop["admiss.evidence.admitted"], prop["admiss.excluded.forbidden"], prop["admiss.excluded.inadmissible"],
            prop["admiss.excluded.shortcut_rejected"]) == (1, 1, 1, 1)
    assert (prop["admiss.rubric"], prop["admiss.evaluation.kind"]) == ("ops", "property")
    passed, failed = got["non_empty"], got["json_valid"]
    assert (passed["gen_ai.evaluation.score.label"], passed["admiss.gate.on_abstain"]) == ("pass", "fail_closed")
    assert (failed["gen_ai.evaluation.score.label"], failed["admiss.gate.on_abstain"]) == ("fail", "fail_open")
    assert failed["gen_ai.evaluation.explanation"]  # the gate's reason
    assert (failed["admiss.chain"], failed["admiss.rung"], failed["admiss.gate.position"]) == ("answer", "draft", 1)
    assert isinstance(failed["admiss.gate.cost_usd"], float)


def test_otel_variables_send_one_event_per_property_and_gate(tmp_path, receiver):
    rubric, bundle = write_case(tmp_path)
    result = check(tmp_path, "--rubric", str(rubric), str(bundle),
                   env=plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_SERVICE_NAME="checks"))
    assert result.returncode == 1, result.stderr  # the json_valid gate fails the chain
    assert_bundle_events(receiver)
    resources = {resource["service.name"] for resource, _ in receiver.log_records()}
    assert resources == {"checks"}
    assert all(record.event_name == "gen_ai.evaluation.result" for _, record in receiver.log_records())


def test_telemetry_table_in_admiss_toml_turns_it_on(tmp_path, receiver):
    rubric, bundle = write_case(tmp_path, f'[telemetry]\nendpoint = "{receiver.url}"\nservice_name = "from-toml"\n')
    result = check(tmp_path, "--rubric", str(rubric), str(bundle), env=plain_env())
    assert result.returncode == 1, result.stderr
    assert_bundle_events(receiver)
    assert {resource["service.name"] for resource, _ in receiver.log_records()} == {"from-toml"}


def test_otel_variables_win_over_the_table(tmp_path, receiver):
    rubric, bundle = write_case(tmp_path, f'[telemetry]\nendpoint = "{receiver.url}"\n')
    result = check(tmp_path, "--rubric", str(rubric), str(bundle), env=plain_env(OTEL_LOGS_EXPORTER="none"))
    assert result.returncode == 1, result.stderr
    assert not receiver.wait_for(lambda r: r.log_records(), timeout_s=2)


def test_sdk_disabled_sends_nothing(tmp_path, receiver):
    rubric, bundle = write_case(tmp_path)
    result = check(tmp_path, "--rubric", str(rubric), str(bundle),
                   env=plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_SDK_DISABLED="true"))
    assert result.returncode == 1, result.stderr
    assert not receiver.wait_for(lambda r: r.log_records(), timeout_s=2)


def test_off_imports_no_opentelemetry(tmp_path):
    _, bundle = write_case(tmp_path, '[serve]\nstore = "r.db"\n')
    rubric = tmp_path / "plain.rubric"
    rubric.write_text(RUBRIC.split("CHAIN")[0])
    result = check(tmp_path, "--rubric", str(rubric), str(bundle), env=plain_env(), importtime=True)
    assert result.returncode == 0, result.stderr
    imported = [line for line in result.stderr.splitlines() if line.startswith("import time:")]
    assert imported and not [line for line in imported if "opentelemetry" in line or "integrations.otel" in line]
    # Nor the config reader, for a config with no [telemetry] table and a rubric with no chain.
    assert not [line for line in imported if line.rstrip().endswith("admiss.config")]


def test_a_bad_telemetry_table_is_a_located_error(tmp_path):
    rubric, bundle = write_case(tmp_path, '[telemetry]\nendpoint = "127.0.0.1:4318"\n')
    result = check(tmp_path, "--rubric", str(rubric), str(bundle), env=plain_env())
    assert result.returncode == 2
    assert "admiss.toml:2:1" in result.stderr and "telemetry.endpoint must start with http://" in result.stderr
    assert "Traceback" not in result.stderr
    (tmp_path / "admiss.toml").write_text("[telemetry]\nendpiont = \"http://127.0.0.1:4318\"\n")
    result = check(tmp_path, "--rubric", str(rubric), str(bundle), env=plain_env())
    assert result.returncode == 2 and "did you mean 'endpoint'?" in result.stderr


def test_jobs_workers_send_every_bundles_events_before_the_run_ends(tmp_path):
    # Each worker's exporter sends what it holds before the worker ends, and the run ends
    # after its workers: with a collector that answers late, every event has arrived when
    # the admiss process has exited (a container that stops with it would lose the rest).
    # Its output goes to files: a pipe would be held open by any exporter still running,
    # and reading it to its end would wait for them.
    rubric, _ = write_case(tmp_path)
    lines = tmp_path / "many.jsonl"
    lines.write_text("".join(json.dumps(BUNDLE) + "\n" for _ in range(400)))  # pieces for both workers
    receiver = Receiver(delay_s=1.0).start()
    try:
        with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "admiss", "check", "--rubric", str(rubric), "--jobs", "2", "--format", "json",
                 str(lines)], cwd=tmp_path, stdout=out, stderr=err, env=plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url))
            code = process.wait(timeout=120)
        names = [attributes_of(r)["admiss.bundle"] for r in events(receiver)]
    finally:
        receiver.stop()
    assert code == 1, (tmp_path / "err").read_text()
    assert sorted(set(names)) == sorted(f"{lines}:{n}" for n in range(1, 401))
    assert len(names) == 1200


def test_events_of_a_checked_otel_trace_name_the_span_they_evaluate(tmp_path, receiver):
    (tmp_path / "any.rubric").write_text("PROPERTY tools { ADMIT procedurally_sound_tool_call }\n")
    result = check(tmp_path, "--rubric", str(tmp_path / "any.rubric"), "--format", "json", str(PYDANTIC_AI_TRACE),
                   env=plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url))
    assert result.returncode == 0, result.stderr
    trace = json.loads(PYDANTIC_AI_TRACE.read_text())
    spans = {s["spanId"]: s for rs in trace["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}
    assert receiver.wait_for(lambda r: events(r))
    (record,) = events(receiver)
    span_id, trace_id = record.span_id.hex(), record.trace_id.hex()
    assert span_id in spans and spans[span_id]["traceId"] == trace_id
    # The span of the admitted tool call: its lookup_booking call.
    assert "lookup_booking" in json.dumps(spans[span_id])


def test_a_batch_larger_than_the_exporters_queue_loses_no_event(tmp_path, receiver):
    (tmp_path / "one.rubric").write_text(RUBRIC.split("CHAIN")[0])
    lines = tmp_path / "many.jsonl"
    count = 1000  # events, one property each: far past the queue of 64 set here
    lines.write_text("".join(json.dumps({"evidence": BUNDLE["evidence"]}) + "\n" for _ in range(count)))
    small_queue = {"OTEL_BLRP_MAX_QUEUE_SIZE": "64", "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE": "64"}
    result = check(tmp_path, "--rubric", str(tmp_path / "one.rubric"), "--format", "json", str(lines),
                   env=plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, **small_queue))
    assert result.returncode == 0, result.stderr
    assert receiver.wait_for(lambda r: len(events(r)) >= count, timeout_s=10)
    assert len({attributes_of(r)["admiss.bundle"] for r in events(receiver)}) == count


def test_without_the_extra_installed_the_check_runs_and_says_so(tmp_path):
    rubric, bundle = write_case(tmp_path)
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    # A module of that name that is no package: importing opentelemetry.sdk fails as when it is not installed.
    (shadow / "opentelemetry.py").write_text("")
    env = plain_env(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", PYTHONPATH=str(shadow))
    result = check(tmp_path, "--rubric", str(rubric), "--format", "json", str(bundle), env=env)
    assert result.returncode == 1, result.stderr  # the chain's json_valid gate fails, as without telemetry
    assert json.loads(result.stdout)["verdict"] == "fail"
    assert "pip install 'admiss[otel]'" in result.stderr and "Traceback" not in result.stderr


def test_an_exporter_started_before_the_setup_is_known_sends_the_runs_events(receiver):
    # admiss check starts its exporter process first thing (launch.py), before it has read
    # its config: the run's telemetry takes that process and hands it its setup.
    from admiss import compile_source
    from admiss.integrations import otel

    env = plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
    otel.start_exporter(False, env)
    started = otel._STARTED[-1][0]
    telemetry = otel.telemetry_for(None, env, spans=False)
    assert telemetry._channel.process is started and not otel._STARTED
    telemetry.report(compile_source(RUBRIC).check(BUNDLE))
    telemetry.close()
    assert started.returncode == 0
    assert_bundle_events(receiver)


def _niceness(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])  # field 19, nice


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads niceness from /proc")
@pytest.mark.parametrize("spans, variables", [(False, {}), (True, {}), (True, {"OTEL_TRACES_EXPORTER": "console"})])
def test_only_check_s_exporter_runs_below_its_process_once_set_up(receiver, spans, variables):
    # admiss check's exporter (spans=False) yields the core to the check once its setup
    # says it serves a check; the gateway's (spans=True: its requests made there, or with
    # console spans its log records encoded in the gateway) keeps the gateway's priority.
    from admiss.integrations import otel, otlp_wire

    env = plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, **variables)
    own = _niceness(os.getpid())
    expected = min(own + otel._CHECK_EXPORTER_NICENESS, 19) if not spans else own
    telemetry = otel.telemetry_for(None, env, spans=spans)
    process = telemetry._channel.process
    if spans:  # a record that arrives shows the exporter past its setup
        telemetry._channel.put(b"L", 1, otlp_wire.in_scope(otlp_wire.log_record(1, otel._EVENT_NAME, b"")))
        assert receiver.wait_for(lambda r: len(events(r)) >= 1)
    deadline = time.monotonic() + 30
    while _niceness(process.pid) != expected and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _niceness(process.pid) == expected
    telemetry.close()
    assert process.returncode == 0


@pytest.mark.skipif(not Path("/proc/sys/fs/pipe-max-size").exists(), reason="Linux's pipe sizes")
def test_check_s_pipe_to_its_exporter_holds_some_ten_puts(receiver):
    # admiss check puts 50 ms of a quick batch's facts at a time (some 90 KB): the default
    # pipe of 64 KiB would make it wait for the exporter at every put.
    import fcntl

    from admiss.integrations import otel

    telemetry = otel.telemetry_for(None, plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url), spans=False)
    size = fcntl.fcntl(telemetry._channel.process.stdin.fileno(), fcntl.F_GETPIPE_SZ)
    telemetry.close()
    limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    assert size == otel._PIPE_SIZE if limit >= otel._PIPE_SIZE else size < otel._PIPE_SIZE


def test_an_exporter_started_for_nothing_ends_quietly_at_the_end_of_its_input():
    # A [telemetry] table that turns nothing on: the exporter started on seeing the table
    # gets no setup, and ends without a word when the run's end closes its input.
    from admiss.integrations import otel

    otel.start_exporter(True, plain_env())
    process = otel._STARTED.pop()[0]
    process.stdin.close()
    assert process.wait(30) == 0
    assert process.stdout.read() == b""


def test_a_table_that_turns_nothing_on_checks_as_without_telemetry(tmp_path):
    rubric, bundle = write_case(tmp_path, "[telemetry]\ntraces = false\nlogs = false\n")
    result = check(tmp_path, "--rubric", str(rubric), "--format", "json", str(bundle), env=plain_env())
    assert result.returncode == 1 and json.loads(result.stdout)["verdict"] == "fail"
    assert result.stderr == ""


def test_an_admiss_folder_in_the_working_folder_is_not_run_as_the_exporter(tmp_path, receiver):
    # A checkout of another admiss, or a hostile repository being checked: `python -m`
    # would run its admiss/integrations/otel.py as the exporter, which here sends nothing.
    shadow = tmp_path / "admiss" / "integrations"
    shadow.mkdir(parents=True)
    for module in (tmp_path / "admiss" / "__init__.py", shadow / "__init__.py"):
        module.write_text("")
    (shadow / "otel.py").write_text("raise SystemExit(3)\n")
    rubric, bundle = write_case(tmp_path)
    script = Path(sys.executable).parent / "admiss"  # the console script: its own path, not the folder's
    result = subprocess.run([str(script), "check", "--rubric", str(rubric), str(bundle)], cwd=tmp_path,
                            env=plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1, result.stderr
    assert "telemetry" not in result.stderr
    assert_bundle_events(receiver)


def test_sdk_disabled_starts_no_exporter_even_with_a_table():
    from admiss.integrations import otel

    otel.start_exporter(True, plain_env(OTEL_SDK_DISABLED="true"))
    assert not otel._STARTED


VARIED_RUBRIC = RUBRIC.replace("CHAIN answer", """PROPERTY stated_output "Output is stated" {
  ADMIT final_answer
  DEFAULT yes
}
PROPERTY tools "A tool was called soundly" {
  ADMIT procedurally_sound_tool_call
  DEFAULT yes
}
CHAIN answer""").replace("    GATE json_valid\n", "    GATE json_valid\n    GATE consistency K 3 ON ABSTAIN fail_closed\n")


def _console_events(stderr: str) -> list[dict]:
    """The log records the SDK's console exporter printed (JSON objects, each from a line
    "{" on), among the run's error messages."""
    decoder, out, end = json.JSONDecoder(), [], 0
    for line in re.finditer(r"^\{$", stderr, re.MULTILINE):
        if line.start() < end:
            continue  # inside the record before
        record, end = decoder.raw_decode(stderr, line.start())
        out.append({"attributes": record["attributes"], "trace_id": int(record["trace_id"], 16),
                    "span_id": int(record["span_id"], 16), "event_name": record["event_name"]})
    return out


def _both_ways(folder: Path, receiver, *args: str) -> tuple[list[dict], list[dict]]:
    """The events of ``admiss check *args`` as they arrive over OTLP (made by the exporter
    process from the checking process's facts), and as the SDK makes them in the checking
    process itself (the console exporter's way)."""
    console = check(folder, *args, env=plain_env(OTEL_LOGS_EXPORTER="console"))
    receiver.clear()
    sent = check(folder, *args, env=plain_env(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url))
    assert sent.returncode == console.returncode, sent.stderr
    expected = _console_events(console.stderr)
    assert receiver.wait_for(lambda r: len(events(r)) >= len(expected))
    got = [{"attributes": attributes_of(r), "trace_id": int.from_bytes(r.trace_id, "big"),
            "span_id": int.from_bytes(r.span_id, "big"), "event_name": r.event_name} for r in events(receiver)]
    for event in got + expected:  # each run times its own gates
        assert event["attributes"].pop("admiss.gate.duration_ms", 0.0) >= 0.0
    return got, expected


def test_a_varied_batchs_events_are_those_the_sdk_makes_in_process(tmp_path, receiver):
    # The same, record for record, over a batch with exclusions of every reason, a DEFAULT
    # yes, gates that pass, fail and abstain, a line that is no bundle (an error: no
    # events), bundles of two rubrics (one without a chain: the common shape), and an
    # OTel trace whose events name its spans.
    (tmp_path / "varied.rubric").write_text(VARIED_RUBRIC)
    (tmp_path / "plain.rubric").write_text(VARIED_RUBRIC.split("CHAIN")[0])
    evidence = BUNDLE["evidence"]
    lines = [{**BUNDLE, "evidence": evidence[n:]} for n in range(len(evidence))] + [BUNDLE, BUNDLE]
    lines[4] = {**BUNDLE, "candidates": [{**BUNDLE["candidates"][0], "output": '{"operator": "Acme"}'}]}
    lines[5] = {**BUNDLE, "candidates": [{**BUNDLE["candidates"][0], "output": ""}]}
    lines.append({"evidence": [{"kind": "final_answer", "detail": "Done.", "source_label": "answer"}]})
    lines = [{**line, "rubric": "varied.rubric"} for line in lines] + [{**line, "rubric": "plain.rubric"}
                                                                       for line in lines]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(line) + "\n" for line in lines[:3]) + "{not json\n"
                     + "".join(json.dumps(line) + "\n" for line in lines[3:]))
    got, expected = _both_ways(tmp_path, receiver, "--offline", "--format", "json", str(batch))
    assert got == expected
    labels = {e["attributes"]["gen_ai.evaluation.score.label"] for e in got}
    assert {"yes", "no", "pass", "fail", "abstain"} <= labels
    assert {e["attributes"]["admiss.bundle"] for e in got} == {f"{batch}:{n}" for n in range(1, 16) if n != 4}
    assert {e["attributes"]["admiss.rubric"] for e in got} == {"ops"}
    got, expected = _both_ways(tmp_path, receiver, "--rubric", str(tmp_path / "plain.rubric"), "--format", "json",
                               str(batch), str(PYDANTIC_AI_TRACE))
    assert got == expected
    assert any(e["span_id"] for e in got) and not all(e["span_id"] for e in got)


def test_jobs_workers_counts_are_those_the_sdk_makes_in_process(tmp_path, receiver):
    # Each --jobs worker's telemetry sees the rubric afresh: its first report goes in full,
    # and the rest as the counts its properties make as they check (a rubric without a
    # chain: the common shape). Record for record as the SDK makes them in process.
    (tmp_path / "plain.rubric").write_text(VARIED_RUBRIC.split("CHAIN")[0])
    evidence = BUNDLE["evidence"]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps({"evidence": evidence[n % 4:] + evidence[:n % 3]}) + "\n" for n in range(40)))
    got, expected = _both_ways(tmp_path, receiver, "--rubric", str(tmp_path / "plain.rubric"), "--jobs", "2",
                               "--format", "json", str(batch))
    assert sorted(got, key=_event_key) == sorted(expected, key=_event_key)  # the workers' events interleave
    assert len(got) == 40 * VARIED_RUBRIC.split("CHAIN")[0].count("PROPERTY")
    # The batch is as varied as it says: several sets of counts.
    assert len({tuple(e["attributes"][f"admiss.excluded.{r}"] for r in ("forbidden", "inadmissible", "shortcut_rejected"))
                for e in got}) > 3


def _event_key(event: dict) -> tuple[str, str]:
    return event["attributes"]["admiss.bundle"], event["attributes"]["gen_ai.evaluation.name"]


def _without_proxies(**more: str) -> dict[str, str]:
    proxies = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}
    return {k: v for k, v in plain_env(**more).items() if k.lower() not in proxies or k in more}


@pytest.mark.parametrize("bypassed", [False, True], ids=["through-the-proxy", "no-proxy-for-the-endpoint"])
def test_the_exporter_goes_through_the_proxy_the_environment_names(tmp_path, receiver, bypassed):
    # The exporter sends straight to the endpoint only when nothing in the environment
    # says otherwise: an HTTP_PROXY is used (this proxy answers 403 to all but CONNECT, so
    # the events fail there and say so), unless NO_PROXY names the endpoint's host.
    proxy = ConnectProxy()
    try:
        rubric, bundle = write_case(tmp_path)
        more = {"NO_PROXY": "127.0.0.1"} if bypassed else {}
        result = check(tmp_path, "--rubric", str(rubric), str(bundle),
                       env=_without_proxies(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, HTTP_PROXY=proxy.url(), **more))
    finally:
        proxy.stop()
    assert result.returncode == 1, result.stderr
    if bypassed:
        assert_bundle_events(receiver)
        assert proxy.refused == 0
    else:
        assert proxy.refused >= 1
        assert events(receiver) == []
        assert "admiss: telemetry: 3 events and spans of 3 could not be exported" in result.stderr, result.stderr


def test_a_login_in_the_endpoints_url_goes_as_basic_auth(tmp_path, receiver):
    # As the SDK's exporter sends it (requests reads the URL's user-info), never dropped.
    rubric, bundle = write_case(tmp_path)
    endpoint = receiver.url.replace("http://", "http://evals:s3cret@")
    result = check(tmp_path, "--rubric", str(rubric), str(bundle), env=_without_proxies(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint))
    assert result.returncode == 1, result.stderr
    assert_bundle_events(receiver)
    expected = "Basic " + base64.b64encode(b"evals:s3cret").decode()
    assert {headers.get("authorization") for _, headers in receiver.posts} == {expected}
    assert "s3cret" not in result.stderr
