"""Two real ``admiss serve`` replicas on one real PostgreSQL, driven with the openai client:
one store for both, savings over the fleet, a replica killed mid-request, the database
restarted under load, and error budgets shared between them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import openai
import pytest

import pgkit
from chat_server import ChatServer, scripted_by_prompt
from gatewaykit import CONFIG, GOOD, KEY, MAX_REQUEST_BYTES, RUBRIC, Gateway, prompt

from admiss.receipts import open_store

FLAKY = """
CHAIN flaky {
  RUNG cheap MODEL "fake/cheap" {
    GATE subprocess CMD [__PYTHON__, __GATE__, __PIDS__] TIMEOUT 5s ON ABSTAIN fail_closed BUDGET 0.5 WINDOW 4
  }
  RUNG strong MODEL "fake/strong" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}
"""


@pytest.fixture(scope="module")
def upstream():
    server = ChatServer(route=scripted_by_prompt, keep_alive=True).start()
    yield server
    server.stop()


def _replica(folder, upstream, url: str) -> Gateway:
    config = CONFIG.format(url=upstream.url, grace_s=5, max_request_bytes=MAX_REQUEST_BYTES)
    config = config.replace('store = "receipts.db"', f'store = "{url}"')
    return Gateway(folder, upstream, rubric=RUBRIC + FLAKY, config=config)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, upstream, postgres):
    url = postgres.database()
    replicas = [_replica(tmp_path_factory.mktemp(f"replica{n}"), upstream, url) for n in (1, 2)]
    yield url, replicas
    for replica in replicas:
        assert replica.stop() == 0, replica.log.read_text()
        assert pgkit.PASSWORD not in replica.log.read_text()


def _stored(url: str) -> list[dict]:
    store = open_store(url, create=False)
    try:
        return list(store.iter_since())
    finally:
        store.close()


def _ask(replica: Gateway, text: str, model: str = "json") -> str:
    reply = replica.client().chat.completions.create(model=model, messages=[{"role": "user", "content": text}])
    return reply.model_extra["admiss"]["receipt_id"]


def test_both_replicas_write_one_store_that_every_reader_reads(fleet, tmp_path):
    url, (one, two) = fleet
    ids = [_ask(replica, prompt({"cheap": GOOD})[1]) for replica in (one, two, one, two)]
    stored = {r["id"] for r in _stored(url)}
    assert set(ids) <= stored
    # Each replica serves the receipts the other wrote.
    for replica, receipt_id in ((two, ids[0]), (one, ids[1])):
        got = httpx.get(f"{replica.url}/v1/receipts/{receipt_id}", headers={"authorization": f"Bearer {KEY}"})
        assert got.status_code == 200 and got.json()["id"] == receipt_id
    ran = subprocess.run([sys.executable, "-m", "admiss", "savings", url, "--format", "json"], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["requests"] == len(stored)
    assert pgkit.PASSWORD not in ran.stdout + ran.stderr


def test_a_gate_one_replica_disables_is_disabled_in_both_and_enabled_in_both(fleet, upstream):
    url, (one, two) = fleet
    gauge = 'admiss_gate_disabled{chain="flaky",gate="subprocess",position="0",rung="cheap"}'
    for _ in range(4):  # four gate errors in a window of four: past the 0.5 budget
        _ask(one, prompt({"cheap": "CRASH", "strong": GOOD})[1], "flaky")
    assert one.metrics()[gauge] == 1
    pgkit.wait_until(lambda: two.metrics()[gauge] == 1, timeout_s=10)
    # Replica two has run the gate not once, yet skips it now: the receipt says disabled.
    served = two.client().chat.completions.create(
        model="flaky", messages=[{"role": "user", "content": prompt({"cheap": GOOD, "strong": GOOD})[1]}])
    receipt_id = served.model_extra["admiss"]["receipt_id"]
    gates = next(r for r in _stored(url) if r["id"] == receipt_id)["chain"]["rungs"][0]["gates"]
    assert gates[0]["disabled"] is True
    ran = subprocess.run([sys.executable, "-m", "admiss", "receipts", "enable-gates", url, "--chain", "flaky"],
                         capture_output=True, text=True, timeout=120)
    assert (ran.returncode, ran.stdout) == (0, "1 gate enabled\n"), ran.stderr
    for replica in (one, two):
        pgkit.wait_until(lambda: replica.metrics()[gauge] == 0, timeout_s=10)
    assert _ask(two, prompt({"cheap": GOOD})[1], "flaky")


async def _load(replicas, seconds: float, concurrency: int, outcomes: list):
    """Requests round-robin over the replicas for ``seconds``: (replica, status, receipt id or None)."""
    deadline = time.monotonic() + seconds
    clients = [r.async_client(timeout=30) for r in replicas]

    async def worker(index: int):
        while time.monotonic() < deadline:
            client = clients[(index + len(outcomes)) % len(clients)]
            try:
                reply = await client.chat.completions.create(
                    model="json", messages=[{"role": "user", "content": prompt({"cheap": GOOD})[1]}])
                outcomes.append((clients.index(client), 200, reply.model_extra["admiss"]["receipt_id"]))
            except openai.APIStatusError as exc:
                outcomes.append((clients.index(client), exc.status_code, None))
                await asyncio.sleep(0.02)
            except openai.APIConnectionError:  # the replica is gone
                outcomes.append((clients.index(client), 0, None))
                await asyncio.sleep(0.02)

    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    for client in clients:
        await client.close()


def test_the_database_restarted_under_load(fleet, postgres):
    url, replicas = fleet
    pids = [r.process.pid for r in replicas]
    outcomes: list = []

    async def scenario():
        load = asyncio.ensure_future(_load(replicas, 9.0, 10, outcomes))
        await asyncio.sleep(1.5)
        await asyncio.to_thread(postgres.stop, "immediate")
        down_from = len(outcomes)
        await asyncio.sleep(2.0)
        down_to = len(outcomes)
        await asyncio.to_thread(postgres.start)
        await load
        return down_from, down_to

    down_from, down_to = asyncio.run(scenario())
    statuses = [status for _, status, _ in outcomes]
    assert set(statuses) <= {200, 503}
    # While it was down, requests were refused 503; some time after it came back, both
    # replicas served again without a restart.
    assert 503 in statuses[down_from:down_to]
    assert {replica for replica, status, _ in outcomes[-20:] if status == 200} == {0, 1}
    assert [r.process.pid for r in replicas] == pids and all(r.process.poll() is None for r in replicas)
    # Nothing was served without its receipt in the store.
    served = {receipt_id for _, status, receipt_id in outcomes if status == 200}
    assert served <= {r["id"] for r in _stored(url)}
    assert len(served) > 50


def test_a_replica_killed_mid_request_leaves_no_response_without_a_receipt(tmp_path, upstream, postgres):
    url = postgres.database()
    (tmp_path / "victim").mkdir()
    (tmp_path / "other").mkdir()
    victim, other = _replica(tmp_path / "victim", upstream, url), _replica(tmp_path / "other", upstream, url)
    marker, text = prompt({"cheap": "HANG:killed"})
    outcomes: list = []
    hanging: list = []

    def hang():
        # A request whose gate hangs (TIMEOUT 60s): certainly in flight when the kill comes.
        try:
            victim.client().chat.completions.create(model="slowgate", messages=[{"role": "user", "content": text}])
            hanging.append("answered")
        except openai.APIConnectionError:
            hanging.append("no response")

    async def scenario():
        thread = threading.Thread(target=hang)
        thread.start()
        load = asyncio.ensure_future(_load([victim], 4.0, 10, outcomes))
        await asyncio.to_thread(pgkit.wait_until, lambda: (victim.pids / "killed.pid").exists()
                                and sum(status == 200 for _, status, _ in outcomes) >= 20)
        os.kill(victim.process.pid, signal.SIGKILL)
        await load
        await asyncio.to_thread(thread.join)

    asyncio.run(scenario())
    with contextlib.suppress(ProcessLookupError):  # the gate, orphaned unless it went with the replica
        os.kill(int((victim.pids / "killed.pid").read_text()), signal.SIGKILL)
    stored = _stored(url)
    assert hanging == ["no response"] and not any(marker in json.dumps(r) for r in stored)
    # Every response that came back before the kill has its receipt; after it, none came.
    served = {receipt_id for _, status, receipt_id in outcomes if status == 200}
    assert len(served) >= 20 and served <= {r["id"] for r in stored}
    assert 0 in {status for _, status, _ in outcomes}
    # The fleet goes on: the other replica still writes to the store.
    assert _ask(other, prompt({"cheap": GOOD})[1]) in {r["id"] for r in _stored(url)}
    assert other.stop() == 0
