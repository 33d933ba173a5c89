"""Running a real ``admiss serve`` process, in front of a fake upstream (a
real HTTP server on 127.0.0.1 that logs every call), driven with the official openai client.

Each test's prompt carries a unique marker and its own script of upstream replies
(``chat_server.scripted_by_prompt``), so tests and concurrent requests never share state
and the upstream log shows exactly which models a request reached.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import httpx
import openai

sys.path.insert(0, str(Path(__file__).parent.parent / "gates"))

from chat_server import ChatServer  # noqa: E402

from admiss.receipts import open_store  # noqa: E402

KEY = "client-key-1"
GOOD = '{"answer": 42}'  # an output that passes non_empty and json_valid
PROVIDER_KEY = "sk-upstream-secret-0123456789"
GATE = Path(__file__).parent / "scripts" / "gate.py"

RUBRIC = """
CHAIN json {
  RUNG cheap MODEL "fake/cheap" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE json_valid ON ABSTAIN fail_closed
  }
  RUNG strong MODEL "fake/strong" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE json_valid ON ABSTAIN fail_closed
  }
}

CHAIN judged {
  RUNG cheap MODEL "fake/cheap" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE judge MODEL "fake/judge" THRESHOLD 0.7 RUBRIC "Is the answer correct and complete?" ON ABSTAIN fail_closed
  }
  RUNG strong MODEL "fake/strong" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}

CHAIN consistent {
  RUNG cheap MODEL "fake/cheap" {
    GATE consistency K 3 THRESHOLD 1.0 ON ABSTAIN fail_closed
  }
  RUNG strong MODEL "fake/strong" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}

CHAIN tested {
  RUNG cheap MODEL "fake/cheap" {
    GATE subprocess CMD [__PYTHON__, __GATE__, __PIDS__] TIMEOUT 2s ON ABSTAIN fail_closed
  }
  RUNG strong MODEL "fake/strong" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}

CHAIN slowgate {
  RUNG cheap MODEL "fake/cheap" {
    GATE subprocess CMD [__PYTHON__, __GATE__, __PIDS__] TIMEOUT 60s ON ABSTAIN fail_closed
  }
}
"""

MAX_REQUEST_BYTES = 1024 * 1024
CONFIG = """
[providers.fake]
base_url = "{url}"
api_key_env = "FAKE_PROVIDER_KEY"
timeout_s = 2
max_retries = 1

[prices."fake/cheap"]
input_usd_per_mtok = 1.0
output_usd_per_mtok = 2.0

[prices."fake/strong"]
input_usd_per_mtok = 10.0
output_usd_per_mtok = 20.0

[prices."fake/judge"]
input_usd_per_mtok = 5.0
output_usd_per_mtok = 5.0

[gates]
budget_rate = 1.0  # never disable a gate: fault tests make errors on purpose

[rungs.json.cheap]
system = "Reply with one JSON object."
temperature = 0.25
max_tokens = 64

[serve]
store = "receipts.db"
api_keys_env = "GATEWAY_KEYS"
grace_s = {grace_s}
max_request_bytes = {max_request_bytes}
"""


def wait_until_healthy(url: str, process: subprocess.Popen, seconds: float, what: str,
                       log: Callable[[], str] = lambda: "") -> None:
    """Return once a GET of ``url`` answers 200; RuntimeError (with ``log()``) when ``process``
    exits first or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited {process.returncode}:\n{log()}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not come up:\n{log()}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Gateway:
    """A running ``admiss serve`` process and what tests need to reach and inspect it.

    ``base_url`` is the provider URL admiss.toml gives (default: the upstream's);
    ``serve_settings`` are more lines of its ``[serve]`` table."""

    def __init__(self, folder: Path, upstream: ChatServer | None, extra_env: dict[str, str] | None = None,
                 grace_s: float = 10, workers: int = 1, base_url: str | None = None, serve_settings: str = "",
                 rubric: str = RUBRIC, config: str | None = None):
        """``rubric`` and ``config`` (admiss.toml's whole text) replace the defaults above."""
        self.folder = folder
        self.upstream = upstream
        self.pids = folder / "pids"
        self.pids.mkdir(exist_ok=True)
        quoted = lambda value: json.dumps(str(value))  # noqa: E731
        rubric = (rubric.replace("__PYTHON__", quoted(sys.executable)).replace("__GATE__", quoted(GATE))
                  .replace("__PIDS__", quoted(self.pids)))
        (folder / "gw.rubric").write_text(rubric)
        if config is None:
            config = CONFIG.format(url=base_url or upstream.url, grace_s=grace_s, max_request_bytes=MAX_REQUEST_BYTES)
            config += serve_settings  # more [serve] keys: that table comes last
        (folder / "admiss.toml").write_text(config)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.store_path = folder / "receipts.db"
        self.log = folder / "server.log"
        env = {**os.environ, "GATEWAY_KEYS": f"{KEY}, other-key", "FAKE_PROVIDER_KEY": PROVIDER_KEY,
               **(extra_env or {})}
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "admiss", "serve", str(folder / "gw.rubric"), "--port", str(self.port),
                 "--workers", str(workers)],
                cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
        self._wait_until_up()

    def _wait_until_up(self) -> None:
        wait_until_healthy(f"{self.url}/healthz", self.process, 30, "admiss serve", self.log.read_text)

    def client(self, key: str | None = KEY, **options: Any) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=key, max_retries=0, **options)

    def async_client(self, **options: Any) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=f"{self.url}/v1", api_key=KEY, max_retries=0, **options)

    def store(self):
        return open_store(self.store_path, create=False)

    def metrics(self) -> dict[str, float]:
        """The /metrics samples as {'name{labels}': value}."""
        text = httpx.get(f"{self.url}/metrics").text
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
        return out

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(30)


def prompt(script: dict[str, Any], text: str = "What is the answer?") -> tuple[str, str]:
    """A unique marker and a user message carrying it and the upstream script."""
    marker = uuid.uuid4().hex
    return marker, f"[{marker}] {text} " + json.dumps({"script": script})


def upstream_calls(upstream: ChatServer, marker: str) -> list[str]:
    """The upstream models a request (known by its marker) reached, in order."""
    return [r.body["model"] for r in list(upstream.requests) if marker in json.dumps(r.body)]


async def drive(gateway: Gateway, requests: int, concurrency: int) -> list[tuple[str, str, str]]:
    """(marker, outcome, receipt id) of every request: one in six exhausts its chain."""
    gate = asyncio.Semaphore(concurrency)
    limits = openai.DefaultAsyncHttpxClient(limits=httpx.Limits(max_connections=concurrency))

    async def one(client, index: int):
        strong = GOOD if index % 3 else "not json"
        marker, text = prompt({"cheap": GOOD if index % 2 else "not json", "strong": strong}, f"load {index}")
        async with gate:
            try:
                reply = await client.chat.completions.create(model="json",
                                                             messages=[{"role": "user", "content": text}])
                return marker, "served", reply.model_extra["admiss"]["receipt_id"]
            except openai.UnprocessableEntityError as exc:
                return marker, "exhausted", exc.body["receipt_id"]

    async with gateway.async_client(timeout=60, http_client=limits) as client:
        return await asyncio.gather(*(one(client, i) for i in range(requests)))


def expected_outcome(index: int) -> str:
    """What request ``index`` of :func:`drive` gets."""
    return "served" if index % 2 or index % 3 else "exhausted"


def assert_answered_and_counted(gateway: Gateway, results: list[tuple[str, str, str]]) -> None:
    """Every request of :func:`drive` got its outcome and one receipt of its own, stored, and
    /metrics counts exactly what the store holds."""
    assert [outcome for _, outcome, _ in results] == [expected_outcome(i) for i in range(len(results))]
    ids = [receipt_id for _, _, receipt_id in results]
    assert len(set(ids)) == len(results)
    store = gateway.store()
    stored = {r["id"]: r for r in store.iter_since()}
    assert set(ids) <= set(stored)
    assert all((stored[rid]["chain"]["served"] is None) == (outcome == "exhausted") for _, outcome, rid in results)
    metrics = gateway.metrics()
    for (chain, outcome), count in store.counts().items():
        assert metrics[f'admiss_requests_total{{chain="{chain}",outcome="{outcome}"}}'] == count
    served = {key: value for key, value in metrics.items() if key.startswith("admiss_serves_total")}
    assert sum(served.values()) == sum(c for (_, o), c in store.counts().items() if o == "served")
    assert metrics["admiss_in_flight_requests"] == 0
