"""``admiss serve --workers 2``: two processes serving one port under uvicorn's supervisor.
Every request gets one stored receipt whichever worker took it, /metrics (answered by either)
adds both workers up, workers killed mid-request are replaced without losing what they
counted or leaving their request in flight on the page, and
SIGTERM stops them all with exit 0 and leaves no process and no metrics folder behind."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from pathlib import Path

import httpx
import openai
import pytest

from gatewaykit import GOOD, Gateway, assert_answered_and_counted, drive, prompt

from processes import alive, children, cmdline
from test_faults import _wait_for


def _workers(pid: int) -> set[int]:
    """The serving processes under the supervisor (not multiprocessing's resource tracker)."""
    return {child for child in children(pid) if b"spawn_main" in cmdline(child)}


def _metrics_folder(worker: int) -> Path:
    environ = Path(f"/proc/{worker}/environ").read_bytes().split(b"\0")
    [value] = [item.split(b"=", 1)[1] for item in environ if item.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
    return Path(os.fsdecode(value))


@pytest.fixture(scope="module")
def workers_gateway(tmp_path_factory, upstream):
    gateway = Gateway(tmp_path_factory.mktemp("workers"), upstream, workers=2)
    try:
        # The port answers as soon as one worker is up; wait for the second.
        assert _wait_for(lambda: len(_workers(gateway.process.pid)) == 2), gateway.log.read_text()
        yield gateway
    finally:
        if gateway.process.poll() is None:
            assert gateway.stop() == 0, gateway.log.read_text()


def test_two_workers_answer_every_request_and_metrics_add_them_up(workers_gateway):
    workers = _workers(workers_gateway.process.pid)
    assert len(workers) == 2
    results = asyncio.run(drive(workers_gateway, 300, 50))
    assert_answered_and_counted(workers_gateway, results)
    # Both take requests. The drive's 50 keep-alive connections open in one burst, which one
    # worker may accept all of; a connection opened while both wait goes to either. A
    # worker's counters get their file when it first counts a receipt.
    folder = _metrics_folder(min(workers))
    wanted = {f"counter_{pid}.db" for pid in workers}
    for _ in range(200):
        if {path.name for path in folder.glob("counter_*.db")} >= wanted:
            break
        _, text = prompt({"cheap": GOOD})
        with workers_gateway.client(http_client=httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))) as client:
            client.chat.completions.create(model="json", messages=[{"role": "user", "content": text}])
    assert {path.name for path in folder.glob("counter_*.db")} >= wanted


def test_workers_killed_mid_request_are_replaced_and_the_page_stays_true(workers_gateway):
    before = _workers(workers_gateway.process.pid)
    _, text = prompt({"cheap": {"delay": 5.0, "text": GOOD}})
    outcome: list = []
    asking = threading.Thread(target=_ask, args=(workers_gateway, text, outcome))
    asking.start()
    assert _wait_for(lambda: workers_gateway.metrics()["admiss_in_flight_requests"] == 1)
    for pid in before:  # whichever took the request
        os.kill(pid, signal.SIGKILL)
    asking.join(30)
    assert [type(error) for error in outcome] == [openai.APIConnectionError]
    assert _wait_for(lambda: len(_workers(workers_gateway.process.pid) - before) == 2, 20), workers_gateway.log.read_text()
    results = asyncio.run(drive(workers_gateway, 60, 20))
    # The dead workers' counters still count, and the request that died with them is no
    # longer in flight.
    assert_answered_and_counted(workers_gateway, results)


def _ask(gateway: Gateway, text: str, outcome: list) -> None:
    """Ask, putting what went wrong (nothing, if it was answered) in ``outcome``."""
    try:
        gateway.client(timeout=30).chat.completions.create(model="json", messages=[{"role": "user", "content": text}])
        outcome.append(None)
    except openai.OpenAIError as error:
        outcome.append(error)


def test_sigterm_stops_every_worker_exits_0_and_removes_the_metrics_folder(workers_gateway):
    processes = children(workers_gateway.process.pid)
    folder = _metrics_folder(min(_workers(workers_gateway.process.pid)))
    assert folder.is_dir()
    _, text = prompt({"cheap": {"delay": 0.5, "text": GOOD}})

    async def ask_then_stop():
        async with workers_gateway.async_client(timeout=30) as client:
            asking = asyncio.ensure_future(client.chat.completions.create(
                model="json", messages=[{"role": "user", "content": text}]))
            await asyncio.sleep(0.25)
            workers_gateway.process.send_signal(signal.SIGTERM)
            return await asking

    reply = asyncio.run(ask_then_stop())  # in flight at the signal: it is finished, with its receipt
    assert workers_gateway.process.wait(30) == 0, workers_gateway.log.read_text()
    assert workers_gateway.store().get(reply.model_extra["admiss"]["receipt_id"]) is not None
    # multiprocessing's resource tracker leaves when it sees its parent's end of the pipe close.
    assert _wait_for(lambda: not any(alive(pid) for pid in processes), 5)
    assert not folder.exists()
