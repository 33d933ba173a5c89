"""admiss.Router in Python, admiss check --live, the receipt store and admiss receipts export,
and the config tables the live cascade reads. Real files, a real upstream on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import admiss
from admiss import jsonio
from admiss.errors import InputError
from admiss.receipts import StoreBusy, StoreError, open_store, parse_since
from admiss.receipts.sqlite import SQLiteWriter as StoreWriter, _Checkpointer
from gatewaykit import GOOD, prompt, upstream_calls

TWO_RUNGS = """
CHAIN answer {
  RUNG cheap MODEL "fake/cheap" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE json_valid ON ABSTAIN fail_closed
  }
  RUNG strong MODEL "fake/strong" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}
"""


@pytest.fixture
def folder(tmp_path: Path, upstream) -> Path:
    (tmp_path / "r.rubric").write_text(TWO_RUNGS)
    (tmp_path / "admiss.toml").write_text(f"""
[providers.fake]
base_url = "{upstream.url}"

[prices."fake/cheap"]
input_usd_per_mtok = 1.0
output_usd_per_mtok = 2.0

[rungs.answer.strong]
system = "Be brief."
""")
    return tmp_path


def test_the_sync_router_serves_stores_and_never_calls_above_the_serving_rung(folder, upstream):
    router = admiss.Router(folder / "r.rubric", config=folder / "admiss.toml", store=folder / "rc.db")
    try:
        marker, text = prompt({"cheap": GOOD, "strong": "strong answer"})
        served = router.complete_sync([{"role": "user", "content": text}])
        assert (served.output, served.rung, served.model, served.outcome) == (GOOD, "cheap", "fake/cheap", "served")
        assert upstream_calls(upstream, marker) == ["cheap"]
        marker, text = prompt({"cheap": "no", "strong": "strong answer"})
        escalated = router.complete_sync([{"role": "user", "content": text}], temperature=0)
        assert escalated.output == "strong answer" and escalated.rung == "strong"
        [strong_call] = [r.body for r in upstream.requests if marker in json.dumps(r.body) and r.body["model"] == "strong"]
        assert strong_call["messages"][0] == {"role": "system", "content": "Be brief."}
        assert strong_call["temperature"] == 0
    finally:
        router.close()
    store = open_store(folder / "rc.db", create=False)
    assert [r["id"] for r in store.iter_since()] == [served.receipt["id"], escalated.receipt["id"]]
    assert store.get(served.receipt["id"])["chain"]["model_cost_usd"] == pytest.approx(140e-6)


def test_a_router_needs_every_rung_model_configured(folder):
    (folder / "nomodel.rubric").write_text("CHAIN c { RUNG a { GATE non_empty } }")
    with pytest.raises(InputError) as caught:
        admiss.Router(folder / "nomodel.rubric", config=folder / "admiss.toml")
    assert caught.value.diagnostics[0].code == "E150"
    (folder / "other.rubric").write_text('CHAIN c { RUNG a MODEL "elsewhere/m" { GATE non_empty } }')
    with pytest.raises(InputError, match=r"no \[providers.elsewhere\] table") as caught:
        admiss.Router(folder / "other.rubric", config=folder / "admiss.toml")
    assert caught.value.diagnostics[0].code == "E150"


def test_a_gating_router_calls_no_rung_and_gates_the_rung_it_is_told(folder, upstream):
    (folder / "nomodel.rubric").write_text("CHAIN c { RUNG a { GATE non_empty } }")
    assert admiss.Router(folder / "nomodel.rubric", config=folder / "admiss.toml", calls_rungs=False).gating_rung().name == "a"
    router = admiss.Router(folder / "r.rubric", config=folder / "admiss.toml", calls_rungs=False)
    for name, said in [(None, "name the rung to gate with"), ("medium", "rung 'medium' is not in")]:
        with pytest.raises(InputError, match=said) as caught:
            router.gating_rung(name)
        assert caught.value.diagnostics[0].code == "E190" and caught.value.diagnostics[0].hint == "rungs: cheap, strong"
    before = len(upstream.requests)
    refused = asyncio.run(router.gate([{"role": "user", "content": "hi"}], "not json", rung="cheap"))
    empty = asyncio.run(router.gate([{"role": "user", "content": "hi"}], "", rung="strong", model="fake/other"))
    assert (refused.outcome, [r["rung"] for r in refused.receipt["chain"]["rungs"]]) == ("exhausted", ["cheap"])
    assert (empty.outcome, empty.model) == ("exhausted", "fake/other")  # non_empty fails "" on the rung asked
    assert len(upstream.requests) == before


def test_rung_settings_for_a_rung_the_chain_lacks_are_an_error(folder):
    with (folder / "admiss.toml").open("a") as config:
        config.write("\n[rungs.answer.stronk]\nmax_tokens = 5\n")
    with pytest.raises(InputError) as caught:
        admiss.Router(folder / "r.rubric", config=folder / "admiss.toml")
    assert caught.value.diagnostics[0].code == "E151"
    assert "stronk" in caught.value.diagnostics[0].message


@pytest.mark.parametrize("table, message", [
    ("[rungs.answer.cheap]\ntemprature = 1\n", "unknown key rungs.answer.cheap.temprature"),
    ("[rungs.answer.cheap]\ntemperature = 3\n", "temperature must be between 0 and 2"),
    ("[rungs.answer.cheap]\nmax_tokens = 0\n", "max_tokens must be at least 1"),
    ("[serve]\napi_key = []\n", "unknown key serve.api_key"),
    ("[serve]\napi_keys = [\"\"]\n", "serve.api_keys must hold non-empty strings"),
    ("[serve]\nmax_request_bytes = 0\n", "serve.max_request_bytes must be at least 1, not 0"),
])
def test_bad_rung_and_serve_tables_are_located_errors(folder, table, message):
    (folder / "bad.toml").write_text(table)
    result = subprocess.run([sys.executable, "-m", "admiss", "serve", str(folder / "r.rubric"), "--config",
                             str(folder / "bad.toml")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert f"bad.toml:2:1: E001 {message}" in result.stderr
    assert "Traceback" not in result.stderr


def _check(folder: Path, bundle: dict, *options: str) -> tuple[int, dict]:
    (folder / "b.json").write_text(json.dumps(bundle))
    result = subprocess.run([sys.executable, "-m", "admiss", "check", "--format", "json", "--rubric",
                             str(folder / "r.rubric"), str(folder / "b.json"), *options],
                            capture_output=True, text=True, timeout=60, cwd=folder)
    assert "Traceback" not in result.stderr
    return result.returncode, json.loads(result.stdout)


def test_check_calls_no_model_without_live(folder, upstream):
    marker, text = prompt({"cheap": GOOD})
    code, report = _check(folder, {"prompt": text, "evidence": []})
    assert code == 1 and report["chain"]["served"] is None
    assert upstream_calls(upstream, marker) == []


def test_check_live_calls_the_rungs_without_candidates(folder, upstream):
    marker, text = prompt({"cheap": GOOD})
    code, report = _check(folder, {"prompt": text, "evidence": []}, "--live")
    assert code == 0 and report["chain"]["served"] == "cheap"
    assert report["chain"]["model_cost_usd"] == pytest.approx(140e-6)
    assert upstream_calls(upstream, marker) == ["cheap"]
    # A supplied candidate is used as it is; only the rung without one is called.
    marker, text = prompt({"cheap": GOOD, "strong": "called"})
    code, report = _check(folder, {"prompt": text, "evidence": [],
                                   "candidates": [{"rung": "cheap", "output": "not json", "cost_usd": 0.5}]}, "--live")
    assert report["chain"]["served"] == "strong"
    assert upstream_calls(upstream, marker) == ["strong"]


def _receipt(rid: str, created_at: str, served: str | None = "cheap") -> dict:
    chain = {"name": "answer", "served": served, "rungs": [], "model_cost_usd": 0.25, "gate_cost_usd": 0.5}
    return {"id": rid, "request_id": "r", "created_at": created_at, "chain": chain, "usage": [], "latency_ms": {},
            "total_latency_ms": 1.0, "top_rung": {"rung": "strong", "model": "fake/strong"}}


def test_the_store_keeps_receipts_in_time_order_with_their_columns(tmp_path):
    store = open_store(tmp_path / "s.db")
    store.put(_receipt("rcpt_b", "2026-11-30T10:00:00.000Z"))
    store.put_many([_receipt("rcpt_a", "2026-11-29T10:00:00.000Z", None), _receipt("rcpt_c", "2026-12-01T00:00:00.000Z")])
    assert [r["id"] for r in store.iter_since()] == ["rcpt_a", "rcpt_b", "rcpt_c"]
    assert [r["id"] for r in store.iter_since("2026-11-30T10:00:00.000Z")] == ["rcpt_b", "rcpt_c"]
    assert store.counts() == {("answer", "exhausted"): 1, ("answer", "served"): 2}
    with pytest.raises(StoreError):
        store.put(_receipt("rcpt_a", "2026-11-29T10:00:00.000Z"))  # ids are unique
    store.close()

    row = sqlite3.connect(tmp_path / "s.db").execute(
        "SELECT chain, served_rung, outcome, model_cost_usd, gate_cost_usd FROM receipts WHERE id = 'rcpt_a'").fetchone()
    assert row == ("answer", None, "exhausted", 0.25, 0.5)
    assert sqlite3.connect(tmp_path / "s.db").execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_the_writer_commits_the_receipts_of_one_loop_turn_together_and_each_put_waits_for_its_commit(tmp_path):
    writer = StoreWriter(open_store(tmp_path / "s.db"))
    committed: list[int] = []

    async def put(index: int) -> None:
        await writer.put(_receipt(f"rcpt_{index}", "2026-11-30T10:00:00.000Z"))
        # Once put returns, another connection sees the receipt: it is committed.
        committed.append(open_store(tmp_path / "s.db", create=False).get(f"rcpt_{index}") is not None)

    async def go() -> None:
        await asyncio.gather(*(put(i) for i in range(300)))
        # A duplicate id fails its transaction, and only its put raises.
        results = await asyncio.gather(writer.put(_receipt("rcpt_0", "2026-11-30T10:00:00.000Z")),
                                       return_exceptions=True)
        assert isinstance(results[0], StoreError)

    asyncio.run(go())
    writer.close()
    assert committed == [True] * 300
    assert len(list(open_store(tmp_path / "s.db", create=False).iter_since())) == 300


def test_the_writer_checkpoints_the_wal_into_the_database_file_off_the_loop(tmp_path):
    writer = StoreWriter(open_store(tmp_path / "s.db"))
    count = _Checkpointer.CHECKPOINT_EVERY + 10

    async def go() -> None:
        await asyncio.gather(*(writer.put(_receipt(f"rcpt_{i}", "2026-11-30T10:00:00.000Z")) for i in range(count)))

    asyncio.run(go())
    # The database file alone (copied without its WAL) holds the receipts once a checkpoint ran.
    deadline = time.monotonic() + 20
    rows = 0
    while time.monotonic() < deadline and rows < count:
        shutil.copy(tmp_path / "s.db", tmp_path / "copy.db")
        try:
            rows = sqlite3.connect(tmp_path / "copy.db").execute("SELECT COUNT(*) FROM receipts").fetchone()[0]
        except sqlite3.DatabaseError:  # no table yet, or a copy taken mid-checkpoint
            rows = 0
        time.sleep(0.1)
    writer.close()
    assert rows == count


def test_a_commit_waits_for_another_programs_write_lock_without_blocking_the_loop(tmp_path):
    writer = StoreWriter(open_store(tmp_path / "s.db"))
    other = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another program holds the write lock

    async def go() -> None:
        put = asyncio.ensure_future(writer.put(_receipt("rcpt_waited", "2026-11-30T10:00:00.000Z")))
        # The loop goes on turning while the commit retries: these sleeps end, the put does not.
        for _ in range(20):
            await asyncio.sleep(0.01)
        assert not put.done()
        other.execute("ROLLBACK")
        await put

    asyncio.run(go())
    writer.close()
    assert open_store(tmp_path / "s.db", create=False).get("rcpt_waited") is not None


def test_a_commit_that_cannot_get_the_lock_in_time_fails_its_requests(tmp_path, monkeypatch):
    monkeypatch.setattr(StoreWriter, "BUSY_WAIT_S", 0.2)
    writer = StoreWriter(open_store(tmp_path / "s.db"))
    other = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")

    async def go() -> list:
        return await asyncio.gather(*(writer.put(_receipt(f"rcpt_{i}", "2026-11-30T10:00:00.000Z")) for i in range(3)),
                                    return_exceptions=True)

    results = asyncio.run(go())
    other.execute("ROLLBACK")
    writer.close()
    assert [type(r) for r in results] == [StoreBusy] * 3
    assert "database is locked" in str(results[0])


def test_closing_the_writer_from_another_thread_writes_what_is_queued(tmp_path):
    writer = StoreWriter(open_store(tmp_path / "s.db"))

    async def go() -> None:
        put = asyncio.ensure_future(writer.put(_receipt("rcpt_late", "2026-11-30T10:00:00.000Z")))
        await asyncio.sleep(0)  # queued, its commit not yet run
        closing = threading.Thread(target=writer.close)
        closing.start()
        closing.join()
        await put

    asyncio.run(go())
    assert open_store(tmp_path / "s.db", create=False).get("rcpt_late") is not None


def test_receipts_export_prints_json_lines_since_a_time(tmp_path):
    store = open_store(tmp_path / "s.db")
    store.put_many([_receipt("rcpt_1", "2026-11-29T23:59:59.999Z"), _receipt("rcpt_2", "2026-11-30T00:00:00.000Z")])
    store.close()

    def export(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "admiss", "receipts", "export", *args], capture_output=True,
                              text=True, timeout=60)

    assert [json.loads(line)["id"] for line in export(str(tmp_path / "s.db")).stdout.splitlines()] == ["rcpt_1", "rcpt_2"]
    since = export("--since", "2026-11-30", str(tmp_path / "s.db"))
    assert [json.loads(line)["id"] for line in since.stdout.splitlines()] == ["rcpt_2"]
    offset = export("--since", "2026-11-30T00:59:59.999+01:00", str(tmp_path / "s.db"))
    assert [json.loads(line)["id"] for line in offset.stdout.splitlines()] == ["rcpt_1", "rcpt_2"]
    bad = export("--since", "yesterday", str(tmp_path / "s.db"))
    assert bad.returncode == 2 and "E153" in bad.stderr and not bad.stdout
    (tmp_path / "junk.db").write_text("not sqlite")
    junk = export(str(tmp_path / "junk.db"))
    assert junk.returncode == 2 and "E152" in junk.stderr and "Traceback" not in junk.stderr
    missing = export(str(tmp_path / "none.db"))
    assert missing.returncode == 2 and "E152" in missing.stderr
    # Where the store a user looks for is: E152 named no way to find it.
    assert missing.stderr.splitlines()[1] == ("  hint: name the store admiss serve writes: [serve] store in its "
                                              "admiss.toml (default admiss-receipts.db, beside that file)")


def test_since_times_are_normalised_to_utc_milliseconds():
    assert parse_since("2026-11-30") == "2026-11-30T00:00:00.000Z"
    assert parse_since("2026-11-30T23:10:00.1234Z") == "2026-11-30T23:10:00.123Z"
    assert parse_since("2026-12-01T01:10:00+02:00") == "2026-11-30T23:10:00.000Z"
    with pytest.raises(ValueError):
        parse_since("30/11/2026")


def test_a_keys_variable_that_holds_no_key_stops_the_gateway_at_start(folder):
    with (folder / "admiss.toml").open("a") as config:
        config.write('\n[serve]\napi_keys_env = "NO_SUCH_KEYS_VARIABLE"\n')
    env = {k: v for k, v in os.environ.items() if k != "NO_SUCH_KEYS_VARIABLE"}
    result = subprocess.run([sys.executable, "-m", "admiss", "serve", str(folder / "r.rubric"), "--port", "0"],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 2
    assert "E154 [serve] api_keys_env names NO_SUCH_KEYS_VARIABLE, which holds no key" in result.stderr


def test_a_provider_that_refuses_connections_escalates_with_the_reason(folder, upstream):
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    (folder / "dead.rubric").write_text(TWO_RUNGS.replace('"fake/cheap"', '"dead/cheap"'))
    (folder / "dead.toml").write_text(f'[providers.dead]\nbase_url = "http://127.0.0.1:{dead}/v1"\nmax_retries = 0\n'
                                      f'[providers.fake]\nbase_url = "{upstream.url}"\n')
    router = admiss.Router(folder / "dead.rubric", config=folder / "dead.toml")
    try:
        marker, text = prompt({"strong": "served by strong"})
        served = router.complete_sync([{"role": "user", "content": text}])
    finally:
        router.close()
    assert served.output == "served by strong"
    [error] = served.receipt["model_errors"]
    assert error["rung"] == "cheap" and "cannot connect" in error["error"]
    assert upstream_calls(upstream, marker) == ["strong"]


@pytest.mark.parametrize("key", [None, 'sk-"quoted"-0123456789'])
def test_the_stored_body_is_the_served_receipt_as_json_text(folder, upstream, monkeypatch, key):
    """The row's body is the receipt as served, byte for byte: the redaction's JSON text when
    its look found nothing to mask (the router hands it to the store rather than encoding
    the receipt twice), the receipt's own encoding when the redaction walked it (a key JSON
    escapes is looked for by the walk)."""
    if key is not None:
        monkeypatch.setenv("ROUTER_TEST_KEY", key)
        toml = (folder / "admiss.toml").read_text().replace('base_url = ', 'api_key_env = "ROUTER_TEST_KEY"\nbase_url = ')
        (folder / "admiss.toml").write_text(toml)
    router = admiss.Router(folder / "r.rubric", config=folder / "admiss.toml", store=folder / "rc.db")
    try:
        receipts = []
        for script in ({"cheap": GOOD}, {"cheap": "not json", "strong": "strong answer"}):
            served = router.complete_sync([{"role": "user", "content": prompt(script)[1]}])
            receipts.append(jsonio.dumps_line(served.receipt).decode())
    finally:
        router.close()
    with sqlite3.connect(folder / "rc.db") as db:
        bodies = [body for (body,) in db.execute("SELECT body FROM receipts ORDER BY rowid")]
    assert bodies == receipts


def test_a_request_that_gives_up_while_its_receipt_is_committed_is_stored_and_counted(folder, upstream):
    # A client that leaves cancels its request, maybe while the receipt is being committed:
    # the receipt is written all the same, so the listeners (the gateway's metrics) count it.
    router = admiss.Router(folder / "r.rubric", config=folder / "admiss.toml", store=folder / "rc.db")
    told: list[str] = []
    router.listeners.append(lambda receipt: told.append(receipt["id"]))
    writer = router.store
    queue = writer.queue

    def queue_then_give_up(*args, **kwargs):
        done = queue(*args, **kwargs)
        asyncio.current_task().cancel()  # the request is cancelled while it waits for the commit
        return done

    async def go():
        writer.queue = queue_then_give_up
        task = asyncio.ensure_future(router.complete([{"role": "user", "content": prompt({"cheap": GOOD})[1]}]))
        with pytest.raises(asyncio.CancelledError):
            await task
        writer.queue = queue
        await asyncio.sleep(0.05)  # the commit's turn, had the cancel stopped it

    try:
        router._loop = asyncio.new_event_loop()
        router._loop.run_until_complete(go())
        stored = [r["id"] for r in router.store.store.iter_since()]
    finally:
        router.close()
    assert len(stored) == 1 and told == stored
