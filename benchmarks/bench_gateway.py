"""The gateway: what ``admiss serve`` adds to a chat call when its chain has only inline
gates (non_empty, json_valid), against direct calls to the same fake upstream, in one run.

Processes on the machine's two shared cores: the fake upstream (fake_upstream.py),
``admiss serve`` (which writes every receipt to SQLite before answering), a byte relay
(relay.py: one more hop that does nothing, the floor any gateway pays here), and this
client (raw HTTP/1.1 keep-alive connections on asyncio, so the client costs as little as it
can). Direct, gateway and relay rounds take turns, each round in another order; each
round's figures are printed, then the medians.

Three upstreams: one that answers at once (the gateway's whole cost shows, and the direct
baseline is a raw client against a raw server); one that takes exactly 100 ms, a fast
model's reply time (what an application sees in front of a real model); and one that takes
75 to 125 ms, drawn uniformly per call. With a fixed delay the 50 clients move in
lockstep: whatever bunches their requests once (a pause, a batch of replies sent in one
turn of the gateway's loop) keeps them bunched for the rest of the round, since every reply
takes exactly as long, and each bunch queues on the gateway's one core. A model's reply
time varies, which spreads them out again; the third round shows that case. All three are
reported; the targets are checked on each.

The 50 connections send their first requests spread over one reply time of the upstream
(connection i after i/50 of it), as a load test's ramp-up does (Locust's spawn rate, in
LiteLLM's published figures): a round is a steady load at concurrency 50. Sent all in the
same instant, the first 50 requests are 1.7 % of a round's 3,000 and would make its p99 the
time to answer one burst of 50, a different load; that burst is measured on its own and
printed after the rounds.

Latencies are each request's own, less the time the upstream held it (the upstream writes
that in its reply, which the gateway serves unchanged): what the path to the model costs
beyond the model. The added latency is the gateway's figure less the direct one, so a
varying upstream's random reply times cancel out. Taken as a difference of two rounds'
medians instead, they would carry the sampling noise of those medians: about 0.65 ms for
3,000 draws over ±25 ms, 1.1 ms for a quick run's 1,000.

Each upstream is measured with ``admiss serve`` in one process and with ``--workers 2``:
on a 2-core machine the second worker shares its core with the client and the upstream,
so the figures say what a second process buys when no core is free for it.

Then three gateways of one process each, in the same rounds, each sending the provider's
calls through another sender: the gateway's own pool (admiss/serve/transport.py); aiohttp
(admiss/serve/aiosender.py), as every provider that needs a proxy, a CA file or a client
certificate is (its provider gets a ``ca_file``, which routes it through aiohttp and
changes nothing else over http://); httpx, as a provider with HTTP/2 is (``http2 = true``,
which over http:// is never spoken). Their added latencies and each serving process's CPU
per request are printed side by side: what a provider behind a proxy or a private CA costs
against the pool, and whether the pool still pays.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import certifi
import httpx

from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, ratio_text, target_text

CONCURRENCY = 50
TARGET_MEDIAN_MS, TARGET_P99_MS, TARGET_THROUGHPUT = 2.0, 10.0, 0.5
KEY = "bench-key"
RUBRIC = """CHAIN bench {
  RUNG cheap MODEL "fake/cheap" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE json_valid ON ABSTAIN fail_closed
  }
  RUNG strong MODEL "fake/strong" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}
"""
MESSAGES = [{"role": "user", "content": "What is the answer? Reply in JSON."}]

# An agent's request: tools, and a conversation of 40 messages (a user turn, then 19 tool
# calls each with its result, one of them proving the refund), served by a chain whose
# admissibility gate reads that conversation as its evidence. Each connection is an agent of
# its own whose conversation moves on with every request it sends (agent_conversation), as an
# agent resends its conversation with its newest call and result each turn.
AGENT_RUBRIC = """
PROPERTY refund_issued "The refund was issued by the payments system" {
  ADMIT procedurally_sound_tool_call
  FORBID final_answer, reasoning_trace, summary, interpretation, flawed_tool_call
  REJECT SHORTCUT "order lookup"
}
MAP {
  WHEN TOOL "issue_refund" OUTCOME ok WHERE result.status == "refunded"
    AS procedurally_sound_tool_call LABEL "payments system" FOR refund_issued
  WHEN TOOL OUTCOME failed AS flawed_tool_call
  WHEN TOOL "lookup_*" AS interpretation LABEL "order lookup"
  WHEN TOOL AS interpretation
  WHEN FINAL AS final_answer
  WHEN TEXT AS interpretation
}
CHAIN agent {
  RUNG cheap MODEL "fake/cheap" {
    GATE non_empty ON ABSTAIN fail_closed
    GATE tool_calls TOOL "lookup_order", "issue_refund"
    GATE admissibility refund_issued
  }
}
"""
TOOLS = [{"type": "function", "function": {"name": name, "description": f"the {name} tool",
                                           "parameters": {"type": "object", "properties": {"order": {"type": "string"}}}}}
         for name in ("lookup_order", "issue_refund")]


def agent_conversation(agent: int = 0, turn: int = 0, calls: int = 19) -> list[dict]:
    """Agent ``agent``'s conversation at its turn ``turn``: its user's request, the refund it
    issued, then the ``calls - 1`` lookups it made since, the newest last. Each turn the
    oldest lookup leaves the window and a new one (a new call id and result) comes in, so 19
    of the 20 runs of a message and its result were sent by the agent the turn before."""
    messages: list[dict] = [{"role": "user", "content": f"Refund order A{agent}, after checking the other orders."}]

    def call(call_id: str, name: str, order: str, result: dict) -> None:
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps({"order": order})}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)})

    call(f"call_{agent}_refund", "issue_refund", f"A{agent}", {"status": "refunded"})
    for n in range(turn, turn + calls - 1):
        call(f"call_{agent}_{n}", "lookup_order", f"B{n}", {"order": f"B{n}", "status": "paid", "total": 20})
    return messages


def _anthropic_conversation(messages: list[dict]) -> list[dict]:
    """The same conversation in Anthropic's Messages format: each call a tool_use block, each
    result a tool_result block in the user turn that follows."""
    out: list[dict] = []
    for message in messages:
        if message["role"] == "assistant":
            out.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                 "input": json.loads(c["function"]["arguments"])} for c in message["tool_calls"]]})
        elif message["role"] == "tool":
            out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": message["tool_call_id"],
                                                     "content": message["content"]}]})
        else:
            out.append(message)
    return out


ANTHROPIC_TOOLS = [{"name": t["function"]["name"], "description": t["function"]["description"],
                    "input_schema": t["function"]["parameters"]} for t in TOOLS]
CHAT_PATH, MESSAGES_PATH = "/v1/chat/completions", "/v1/messages"


def kind_fields(kind: str, agent: int = 0, turn: int = 0) -> tuple[dict, dict]:
    """The gateway's body of ``kind``'s request (agent ``agent``'s at its turn ``turn``) and
    the body of the direct call (the chat-completions request the gateway's rung sends upstream)."""
    if kind == "plain":
        return {"messages": MESSAGES}, {"messages": MESSAGES}
    chat = {"messages": agent_conversation(agent, turn), "tools": TOOLS, "tool_choice": "auto"}
    if kind == "agent":
        return chat, chat
    return ({"messages": _anthropic_conversation(chat["messages"]), "max_tokens": 256, "tools": ANTHROPIC_TOOLS,
             "tool_choice": {"type": "auto"}}, {**chat, "max_tokens": 256})


# What each kind of request sends: the chain it names, the gateway's route, and its first
# bodies (kind_fields).
KINDS = {kind: (chain, path, *kind_fields(kind)) for kind, chain, path in (
    ("plain", "bench", CHAT_PATH), ("agent", "agent", CHAT_PATH), ("agent_messages", "agent", MESSAGES_PATH))}


class AgentRequests:
    """The requests of a round's connections, each an agent of its own whose conversation
    moves on by one call and its result with every request it sends, for the whole run
    (a turn never comes twice): what a memo of an agent's earlier turns may hit, and no more.
    ``repeated`` and ``runs`` count the runs (a message and the tool results after it) sent,
    and those the same agent had sent in its request before."""

    def __init__(self, kind: str, direct: bool, headers: dict[str, str]):
        chain, path, _, _ = KINDS[kind]
        self.kind, self.direct, self.headers = kind, direct, headers
        self.path, self.chain = (CHAT_PATH, "cheap") if direct else (path, chain)
        self.turns: dict[int, int] = {}
        self._last: dict[int, set] = {}
        self.repeated = self.runs = 0

    def __call__(self, agent: int) -> bytes:
        turn = self.turns.get(agent, 0)
        self.turns[agent] = turn + 1
        via, direct = kind_fields(self.kind, agent, turn)
        runs = {m["content"] if m["role"] == "user" else m["tool_calls"][0]["id"]
                for m in direct["messages"] if m["role"] != "tool"}
        self.repeated += len(runs & self._last.get(agent, set()))
        self.runs += len(runs)
        self._last[agent] = runs
        return _request(self.path, {"model": self.chain, **(direct if self.direct else via)}, self.headers)


def _request(path: str, body: dict, headers: dict[str, str]) -> bytes:
    data = json.dumps(body).encode()
    lines = [f"POST {path} HTTP/1.1", "host: 127.0.0.1", "content-type: application/json",
             f"content-length: {len(data)}", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


# The time the fake upstream held a request, as it writes it in the completion (escaped once
# more inside the gateway's JSON).
_HELD = re.compile(rb'upstream_ms\\?": ([0-9.]+)')


async def _connection(port: int, sent: list[bytes], latencies: list[float], start_after: float,
                      ends: list[float] | None = None) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    await asyncio.sleep(start_after)
    try:
        for data in sent:
            started = time.perf_counter()
            writer.write(data)
            head = await reader.readuntil(b"\r\n\r\n")
            status = head.split(b" ", 2)[1]
            length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            body = await reader.readexactly(length)
            took = time.perf_counter() - started
            if status != b"200":
                raise RuntimeError(f"HTTP {status.decode()}")
            latencies.append(took - float(_HELD.search(body).group(1)) / 1000)
            if ends is not None:
                ends.append(started + took)
    finally:
        writer.close()


def load(port: int, request: bytes | Callable[[int], bytes], total: int, concurrency: int, ramp_s: float = 0.0,
         ends: list[float] | None = None) -> tuple[list[float], float]:
    """Per-request latencies less the upstream's own time (s), and requests per second:
    ``total`` requests over ``concurrency`` connections, each sending its share one after
    another. With ``ramp_s``, connection i sends its first request ``i / concurrency *
    ramp_s`` after the first one does, rather than all in the same instant. ``ends``, when
    given, gets the time each answer was read (perf_counter). ``request`` is the bytes each
    connection sends, or gives connection i's next request as ``request(i)`` (AgentRequests)."""
    latencies: list[float] = []

    async def go() -> float:
        shares = [total // concurrency + (i < total % concurrency) for i in range(concurrency)]
        # An agent's requests are made before the clock starts: made in the loop, each one (a
        # Messages body with its chat twin, 0.45 ms; a chat body 0.28) held up the answers of the
        # other connections this client reads, and ran beside the gateway on the machine's cores;
        # made inside the clock, they were counted against the requests per second.
        sents = [[request(i) for _ in range(n)] if callable(request) else [request] * n for i, n in enumerate(shares)]
        started = time.perf_counter()
        await asyncio.gather(*(_connection(port, sent, latencies, ramp_s * i / concurrency, ends)
                               for i, sent in enumerate(sents)))
        return time.perf_counter() - started

    elapsed = asyncio.run(go())
    return latencies, total / elapsed


def httpx_rate(port: int, total: int, concurrency: int) -> float:
    """Requests per second of direct calls made with httpx, the client admiss's providers
    use by default (the gateway sends through a pool of its own instead): what the gateway would be
    held to with httpx's pool."""

    async def go() -> float:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(limits=limits) as client:
            url = f"http://127.0.0.1:{port}/v1/chat/completions"

            async def share(count: int) -> None:
                for _ in range(count):
                    (await client.post(url, json={"model": "cheap", "messages": MESSAGES})).raise_for_status()

            await share(50)
            started = time.perf_counter()
            await asyncio.gather(*(share(total // concurrency) for _ in range(concurrency)))
            return (total // concurrency * concurrency) / (time.perf_counter() - started)

    return asyncio.run(go())


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# (reply time, spread either side) of the fake upstream, in seconds.
UPSTREAMS = ((0.0, 0.0), (0.1, 0.0), (0.1, 0.025))
WORKERS = (1, 2)
POOL, AIOHTTP, HTTPX = "admiss's pool", "aiohttp", "httpx"
# What admiss.toml's provider table gets to send through a sender other than the pool, and
# what the start-up log then says: a ca_file (certifi's bundle; unused over http://, but a
# provider with one goes through aiohttp), http2 (never spoken over http://; httpx alone has it).
SENDER_CONFIG = {POOL: "", AIOHTTP: f"ca_file = {json.dumps(certifi.where())}\n", HTTPX: "http2 = true\n"}
SENDER_SAID = {POOL: "sent by admiss's own pool", AIOHTTP: "sent by aiohttp", HTTPX: "sent by httpx"}


def _start_upstream(delay_s: float, spread_s: float = 0.0) -> tuple[subprocess.Popen, int]:
    return _start_helper("fake_upstream.py", str(delay_s), str(spread_s))


def _start_relay(upstream_port: int) -> tuple[subprocess.Popen, int]:
    return _start_helper("relay.py", str(upstream_port))


def _start_helper(script: str, *args: str) -> tuple[subprocess.Popen, int]:
    """One of this folder's servers, started, and the port it printed."""
    process = subprocess.Popen([sys.executable, str(Path(__file__).parent / script), *args], stdout=subprocess.PIPE,
                               text=True)
    return process, int(process.stdout.readline())


def _start_gateway(folder: Path, upstream_port: int, workers: int, sender: str,
                   more_config: str = "", store: str = "receipts.db",
                   command: tuple[str, ...] | None = None) -> tuple[subprocess.Popen, int]:
    """``more_config``: more tables for its admiss.toml (bench_otel.py's [telemetry]);
    ``store``: its receipt store (a file in ``folder``, or a postgresql:// URL);
    ``command``: the admiss command to start (another checkout's), else this one's."""
    (folder / "bench.rubric").write_text(RUBRIC + AGENT_RUBRIC)
    (folder / "admiss.toml").write_text(f'[providers.fake]\nbase_url = "http://127.0.0.1:{upstream_port}/v1"\n'
                                        f'{SENDER_CONFIG[sender]}'
                                        f'[serve]\nstore = "{store}"\napi_keys = ["{KEY}"]\n{more_config}')
    port = _free_port()
    log = folder / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen([*(command or (sys.executable, "-m", "admiss")), "serve", str(folder / "bench.rubric"),
                                    "--port", str(port), "--workers", str(workers)], cwd=folder, stdout=out,
                                   stderr=subprocess.STDOUT)
    # The port answers once one worker is up: wait until every worker says it has started.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if log.read_text().count("Application startup complete.") == workers:
            said = SENDER_SAID[sender]
            if said not in log.read_text():  # the start-up log names each provider's sender
                raise RuntimeError(f"the gateway does not send through {sender}:\n{log.read_text()}")
            return process, port
        time.sleep(0.1)
    raise RuntimeError(f"admiss serve did not come up:\n{log.read_text()}")


def _stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def run(settings: Settings) -> None:
    """Plain requests against each upstream. With ``--baseline-admiss``, another checkout's
    gateway runs in the same rounds as this one's instead, for a before and after under one
    machine load."""
    for delay_s, spread_s in UPSTREAMS:
        if settings.baseline_admiss:
            _compare_baseline(settings, delay_s, spread_s, "plain")
        else:
            _run_against(settings, delay_s, spread_s)


def run_agents(settings: Settings) -> None:
    """The agent's request (tools, 40 messages read as evidence) against the model-paced
    upstreams, one worker, over chat completions and over Anthropic's Messages route: the
    targets hold for both. With ``--baseline-admiss``, another checkout's gateway runs in
    the same rounds as this one's instead, for a before and after under one machine load."""
    for kind in ("agent", "agent_messages"):
        for delay_s, spread_s in UPSTREAMS[1:]:
            if settings.baseline_admiss:
                _compare_baseline(settings, delay_s, spread_s, kind)
            else:
                _run_against(settings, delay_s, spread_s, kind=kind, workers=(1,))


BASELINE, THIS = "baseline", "this checkout"


def _compare_baseline(settings: Settings, delay_s: float, spread_s: float, kind: str) -> None:
    """Two gateways of one worker each, the baseline's ``admiss`` and this checkout's, in the
    same rounds with ``kind``'s requests."""
    after = f"{delay_s * 1000:.0f} ± {spread_s * 1000:.0f} ms, uniformly" if spread_s else f"{delay_s * 1000:.0f} ms"
    print_section(f"gateway, {kind} requests: {BASELINE} ({settings.baseline_admiss}) vs {THIS}, one worker each, "
                  f"in the same rounds, against the fake upstream replying after {after}, concurrency {CONCURRENCY}")
    upstream, upstream_port = _start_upstream(delay_s, spread_s)
    try:
        with tempfile.TemporaryDirectory() as base_tmp, tempfile.TemporaryDirectory() as this_tmp:
            started = {BASELINE: _start_gateway(Path(base_tmp), upstream_port, 1, POOL,
                                                command=(settings.baseline_admiss,)),
                       THIS: _start_gateway(Path(this_tmp), upstream_port, 1, POOL)}
            try:
                rows, medians, one, cpu = _side_by_side_cpu(settings, delay_s, upstream_port, started, kind)
            finally:
                for process, _ in started.values():
                    _stop(process)
    finally:
        _stop(upstream)
    print_table("added latency beyond direct calls, in ms",
                ["round", *(f"{name} {what}" for name in started for what in ("added p50", "added p99", "req/s"))], rows)
    (base_median, base_p99, base_rate), (this_median, this_p99, this_rate) = medians[BASELINE], medians[THIS]
    print(f"{THIS} against {BASELINE}: added median {_ms(this_median)} ms vs {_ms(base_median)} ms "
          f"({ratio_text(this_median / base_median)}), p99 {_ms(this_p99)} ms vs {_ms(base_p99)} ms "
          f"({ratio_text(this_p99 / base_p99)}), throughput {ratio_text(this_rate / base_rate)} the baseline's; "
          f"one at a time {_ms(one[THIS])} ms vs {_ms(one[BASELINE])} ms")
    print(f"the serving process's CPU per request (all of its requests in these rounds): {THIS} {_ms(cpu[THIS])} ms, "
          f"{BASELINE} {_ms(cpu[BASELINE])} ms ({ratio_text(cpu[THIS] / cpu[BASELINE])})")
    for name in started:
        print(target_text(f"{name}: added median <= {TARGET_MEDIAN_MS} ms", medians[name][0] * 1000 <= TARGET_MEDIAN_MS,
                          f"{_ms(medians[name][0])} ms"))
        print(target_text(f"{name}: added p99 <= {TARGET_P99_MS} ms", medians[name][1] * 1000 <= TARGET_P99_MS,
                          f"{_ms(medians[name][1])} ms"))


def _run_against(settings: Settings, delay_s: float, spread_s: float, kind: str = "plain",
                 workers: tuple[int, ...] = WORKERS) -> None:
    upstream, upstream_port = _start_upstream(delay_s, spread_s)
    relay, relay_port = _start_relay(upstream_port)
    try:
        for count in workers:
            _run_gateway(settings, delay_s, spread_s, upstream_port, relay_port, count, POOL, kind)
        if kind == "plain":
            _compare_senders(settings, delay_s, spread_s, upstream_port)
    finally:
        _stop(relay)
        _stop(upstream)


@dataclass
class Summary:
    """A section's figures, each the median of its rounds' (seconds, or a ratio)."""

    added_median: float
    added_p99: float
    throughput: float
    single: float  # added at concurrency 1
    through_httpx: float  # direct calls' rate through httpx, requests per second
    gateway_rate: float
    relay_median: float
    relay_p99: float
    relay_single: float
    relay_throughput: float
    burst_median: float  # added, CONCURRENCY requests sent at once
    burst_last: float


def _cpu_s(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` has used, in seconds (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _side_by_side(settings: Settings, delay_s: float, upstream_port: int,
                  started: dict[str, tuple[subprocess.Popen, int]], kind: str = "plain"
                  ) -> tuple[list[list[str]], dict, dict]:
    """Gateways of one worker each measured in the same rounds as direct calls (each round
    in another order), so that their difference is theirs and not the machine's load of the
    moment, all sent ``kind``'s requests: the table rows, each gateway's (added median,
    added p99, req/s), and its added latency one request at a time."""
    total = 1000 if settings.quick else 3000
    rounds = 3 if settings.quick else 5
    paths = {"direct": (upstream_port, _requests(kind, True)),
             **{name: (port, _requests(kind, False)) for name, (_, port) in started.items()}}
    for port, request in paths.values():
        load(port, request, 500, CONCURRENCY)  # warm-up
    names = list(paths)
    added: dict[str, list] = {name: [] for name in started}
    rates: dict[str, list] = {name: [] for name in started}
    bunched: dict[str, list] = {name: [] for name in names}
    rows = []
    for index in range(rounds):
        order = names[index % len(names):] + names[:index % len(names)]
        ends: dict[str, list[float]] = {name: [] for name in names}
        measured = {name: load(*paths[name], total, CONCURRENCY, delay_s, ends[name]) for name in order}
        for name in names:
            bunched[name].append(_bunched(ends[name]))
        row = [str(index + 1)]
        for name in started:
            added[name].append(_added(measured[name][0], measured["direct"][0]))
            rates[name].append(measured[name][1])
            row += [*(_ms(v) for v in added[name][-1]), f"{measured[name][1]:.0f}"]
        rows.append(row)
    one = {name: statistics.median(load(port, request, 300, 1)[0]) for name, (port, request) in paths.items()}
    medians = {name: (statistics.median(a for a, _ in added[name]), statistics.median(p for _, p in added[name]),
                      statistics.median(rates[name])) for name in started}
    for name, (median, p99, rate) in medians.items():
        print(f"{name}: added median {_ms(median)} ms, p99 {_ms(p99)} ms, {rate:.0f} req/s; one at a time "
              f"{_ms(one[name] - one['direct'])} ms")
    print(f"answers read within {BUNCH_GAP_S * 1000:g} ms of the one before (bunched), median of rounds: " +
          ", ".join(f"{name} {statistics.median(bunched[name]):.0%}" for name in names))
    if repeated_text(paths):
        print(repeated_text(paths))
    return rows, medians, {name: one[name] - one["direct"] for name in started}


# Answers read closer together than this came in one bunch (one turn of a loop, or one burst).
BUNCH_GAP_S = 0.0002


def _bunched(ends: list[float]) -> float:
    """The share of answers read within BUNCH_GAP_S of the answer before them (on any
    connection): how much of a round moved in bunches rather than spread out."""
    ordered = sorted(ends)
    return sum(b - a < BUNCH_GAP_S for a, b in zip(ordered, ordered[1:])) / max(1, len(ordered))


def _compare_senders(settings: Settings, delay_s: float, spread_s: float, upstream_port: int) -> None:
    """Three gateways of one worker each, sending through the pool, aiohttp and httpx."""
    after = f"{delay_s * 1000:.0f} ± {spread_s * 1000:.0f} ms, uniformly" if spread_s else f"{delay_s * 1000:.0f} ms"
    senders = (POOL, AIOHTTP, HTTPX)
    print_section(f"gateway's upstream sender: {' vs '.join(senders)}, one worker each, in the same rounds, against "
                  f"the fake upstream replying after {after}, concurrency {CONCURRENCY}")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        started = {}
        try:
            for sender in senders:
                (Path(tmp) / sender).mkdir()
                started[sender] = _start_gateway(Path(tmp) / sender, upstream_port, 1, sender)
            rows, medians, one, cpu = _side_by_side_cpu(settings, delay_s, upstream_port, started)
        finally:
            for process, _ in started.values():
                _stop(process)
    print_table("added latency beyond direct calls, in ms",
                ["round", *(f"{name} {what}" for name in senders for what in ("added p50", "added p99", "req/s"))], rows)
    print_table("each sender against the pool (medians of rounds; CPU: the serving process's, over all its requests)",
                ["sender", "added p50 ms", "added p99 ms", "req/s", "throughput vs pool", "one at a time ms",
                 "CPU ms/request", "CPU vs pool"],
                [[name, _ms(medians[name][0]), _ms(medians[name][1]), f"{medians[name][2]:.0f}",
                  ratio_text(medians[name][2] / medians[POOL][2]), _ms(one[name]), _ms(cpu[name]),
                  ratio_text(cpu[name] / cpu[POOL])] for name in senders])
    print("load average (1, 5, 15 min) before: " + ", ".join(f"{v:.2f}" for v in load_before) +
          "; after: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    for name in (AIOHTTP, HTTPX):
        print(target_text(f"through {name}: added median <= {TARGET_MEDIAN_MS} ms",
                          medians[name][0] * 1000 <= TARGET_MEDIAN_MS, f"{_ms(medians[name][0])} ms"))
        print(target_text(f"through {name}: added p99 <= {TARGET_P99_MS} ms",
                          medians[name][1] * 1000 <= TARGET_P99_MS, f"{_ms(medians[name][1])} ms"))


def _side_by_side_cpu(settings: Settings, delay_s: float, upstream_port: int,
                      started: dict[str, tuple[subprocess.Popen, int]], kind: str = "plain"
                      ) -> tuple[list[list[str]], dict, dict, dict]:
    """:func:`_side_by_side`'s figures, and each gateway's CPU per request over every
    request it served there (/proc/PID/stat), in seconds."""
    before = {name: _cpu_s(process.pid) for name, (process, _) in started.items()}
    rows, medians, one = _side_by_side(settings, delay_s, upstream_port, started, kind)
    sent = 500 + (3 if settings.quick else 5) * (1000 if settings.quick else 3000) + 300
    cpu = {name: (_cpu_s(process.pid) - before[name]) / sent for name, (process, _) in started.items()}
    return rows, medians, one, cpu


def run_postgres(settings: Settings) -> None:
    """One gateway writing receipts to SQLite and two to PostgreSQL (a real server on this
    machine, started here, fsync on), in the same rounds: one as admiss commits by default
    (``synchronous_commit=off`` in the writer's session, as SQLite's ``synchronous=NORMAL``
    commit returns before any fsync, the receipts held until flushed: docs/serve.md) and
    one with the URL's ``options=-c synchronous_commit=on`` (each commit waits for its WAL
    flush): what the fleet's store costs a request, and how much of it is the disk's. The
    target is checked on the default.
    """
    server = postgres_server()
    try:
        for delay_s, spread_s in (UPSTREAMS[0], UPSTREAMS[2]):
            upstream, upstream_port = _start_upstream(delay_s, spread_s)
            try:
                _compare_stores(settings, delay_s, spread_s, upstream_port, server.database())
            finally:
                _stop(upstream)
    finally:
        server.close()


def postgres_server():
    """A PostgreSQL server of the tests' kind (tests/receipts/pgkit.py: one helper for
    both), with the server's default durability: fsync on, synchronous_commit on."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "receipts"))
    import pgkit

    folder = pgkit.binaries()
    if folder is None:
        raise SystemExit("PostgreSQL's initdb and pg_ctl are needed (Debian: apt-get install postgresql)")
    return pgkit.PostgresServer(folder, fsync=True)


SQLITE_STORE, POSTGRES_STORE, POSTGRES_FLUSHED = "SQLite", "PostgreSQL", "PostgreSQL synchronous_commit=on"
FLUSH_EACH_COMMIT = "?options=-c%20synchronous_commit%3Don"
TARGET_STORE_GAP_MS = 0.5


def _compare_stores(settings: Settings, delay_s: float, spread_s: float, upstream_port: int, url: str) -> None:
    after = f"{delay_s * 1000:.0f} ± {spread_s * 1000:.0f} ms, uniformly" if spread_s else f"{delay_s * 1000:.0f} ms"
    print_section(f"gateway's receipt store: {SQLITE_STORE} vs {POSTGRES_STORE} (same machine, fsync on), one worker "
                  f"each, in the same rounds, against the fake upstream replying after {after}, concurrency {CONCURRENCY}")
    stores = {SQLITE_STORE: "receipts.db", POSTGRES_STORE: url, POSTGRES_FLUSHED: url + FLUSH_EACH_COMMIT}
    folders = {name: tempfile.TemporaryDirectory() for name in stores}
    started = {name: _start_gateway(Path(folders[name].name), upstream_port, 1, POOL, store=store)
               for name, store in stores.items()}
    cpu_before = {name: _cpu_s(process.pid) for name, (process, _) in started.items()}
    try:
        rows, medians, one = _side_by_side(settings, delay_s, upstream_port, started)
        cpu = {name: _cpu_s(process.pid) - cpu_before[name] for name, (process, _) in started.items()}
    finally:
        for process, _ in started.values():
            _stop(process)
    stored = {SQLITE_STORE: sum(1 for _ in _receipts(Path(folders[SQLITE_STORE].name) / "receipts.db")),
              POSTGRES_STORE: sum(1 for _ in _receipts(url))}  # both PostgreSQL gateways wrote here
    for folder in folders.values():
        folder.cleanup()
    print_table("added latency beyond direct calls, in ms",
                ["round", *(f"{name} {what}" for name in stores for what in ("added p50", "added p99", "req/s"))], rows)
    print(f"receipts stored: {stored[SQLITE_STORE]} in SQLite, {stored[POSTGRES_STORE]} in PostgreSQL")
    # Every gateway served the same requests (warm-up, rounds, one at a time): SQLite's count.
    print("gateway CPU per request (user + system, the whole run): " + ", ".join(
        f"{name} {cpu[name] / stored[SQLITE_STORE] * 1000:.3f} ms" for name in stores)
        + f"; PostgreSQL {ratio_text(cpu[POSTGRES_STORE] / cpu[SQLITE_STORE])} SQLite's")
    for name in (POSTGRES_STORE, POSTGRES_FLUSHED):
        gap = medians[name][0] - medians[SQLITE_STORE][0]
        print(f"{name} against SQLite: {_ms(gap)} ms more added median, "
              f"{_ms(medians[name][1] - medians[SQLITE_STORE][1])} ms more added p99, throughput "
              f"{ratio_text(medians[name][2] / medians[SQLITE_STORE][2])} SQLite's; one at a time "
              f"{_ms(one[name] - one[SQLITE_STORE])} ms more")
        if name == POSTGRES_STORE:
            print(target_text(f"{name}: added median within {TARGET_STORE_GAP_MS} ms of SQLite's",
                              gap * 1000 <= TARGET_STORE_GAP_MS, f"{_ms(gap)} ms"))


def _run_gateway(settings: Settings, delay_s: float, spread_s: float, upstream_port: int, relay_port: int,
                 workers: int, sender: str, kind: str = "plain") -> None:
    after = f"{delay_s * 1000:.0f} ± {spread_s * 1000:.0f} ms, uniformly" if spread_s else f"{delay_s * 1000:.0f} ms"
    what = {"plain": "inline gates", "agent": "an agent's requests (2 tools, 40 messages read as admissibility evidence)",
            "agent_messages": "an agent's requests over POST /v1/messages (Anthropic's format: 2 tools, 40 messages "
                              "read as admissibility evidence)"}[kind]
    print_section(f"gateway: admiss serve --workers {workers} (upstream calls sent by {sender}) with {what} vs "
                  f"direct calls to the same fake upstream (replying after {after}), concurrency {CONCURRENCY}")
    total = 1000 if settings.quick else 3000
    rounds = 3 if settings.quick else 5
    with tempfile.TemporaryDirectory() as tmp:
        gateway, gateway_port = _start_gateway(Path(tmp), upstream_port, workers, sender)
        try:
            rows, summary = _measure(upstream_port, gateway_port, relay_port, total, rounds, ramp_s=delay_s, kind=kind)
        finally:
            _stop(gateway)
        stored = sum(1 for _ in _receipts(Path(tmp) / "receipts.db"))
    print_table(f"{total} requests per round; latency beyond the upstream's own time, in ms",
                ["round", "direct p50", "direct p99", "direct req/s", "gateway p50", "gateway p99", "gateway req/s",
                 "added p50", "added p99", "throughput", "relay added p50", "relay added p99", "relay throughput"],
                rows)
    print(f"added latency at concurrency 1 (one request at a time): median {_ms(summary.single)} ms")
    print(f"a byte relay (one more hop doing nothing, relay.py) adds median {_ms(summary.relay_median)} ms, "
          f"p99 {_ms(summary.relay_p99)} ms and runs at {ratio_text(summary.relay_throughput)} direct at concurrency "
          f"{CONCURRENCY}, adds {_ms(summary.relay_single)} ms one at a time: the hop's own cost on this machine")
    print(f"{CONCURRENCY} requests sent in the same instant (not part of the rounds): the gateway adds median "
          f"{_ms(summary.burst_median)} ms, {_ms(summary.burst_last)} ms to the last one answered")
    print(f"direct calls through httpx (admiss's default provider client) at concurrency {CONCURRENCY}: "
          f"{summary.through_httpx:.0f} req/s; the gateway's median {summary.gateway_rate:.0f} req/s is "
          f"{ratio_text(summary.gateway_rate / summary.through_httpx)} of that")
    print(f"receipts stored: {stored}")
    print(target_text(f"added median <= {TARGET_MEDIAN_MS} ms at concurrency {CONCURRENCY}",
                      summary.added_median * 1000 <= TARGET_MEDIAN_MS,
                      f"{_ms(summary.added_median)} ms (median of rounds)"))
    print(target_text(f"added p99 <= {TARGET_P99_MS} ms at concurrency {CONCURRENCY}",
                      summary.added_p99 * 1000 <= TARGET_P99_MS, f"{_ms(summary.added_p99)} ms (median of rounds)"))
    print(target_text(f"throughput >= {TARGET_THROUGHPUT}x direct", summary.throughput >= TARGET_THROUGHPUT,
                      ratio_text(summary.throughput)))


def _requests(kind: str, direct: bool) -> bytes | AgentRequests:
    """What a path sends of ``kind``'s requests: the direct call's (the body the gateway's
    rung sends upstream) or the gateway's; an agent's move on with every request."""
    headers = {} if direct else {"authorization": f"Bearer {KEY}"}
    if kind != "plain":
        return AgentRequests(kind, direct, headers)
    chain, path, fields, direct_fields = KINDS[kind]
    return _request(CHAT_PATH, {"model": "cheap", **direct_fields}, headers) if direct else \
        _request(path, {"model": chain, **fields}, headers)


def repeated_text(paths: dict) -> str:
    """The share of runs each gateway was sent that its agent had sent the turn before (an
    upper bound of a memo's hit rate), or "" for plain requests."""
    sent = [(name, request) for name, (_, request) in paths.items() if isinstance(request, AgentRequests)
            and not request.direct]
    return "; ".join(f"{name}: {request.repeated / max(1, request.runs):.1%} of the runs sent were in the agent's "
                     f"request before" for name, request in sent)


def _added(path: list[float], direct: list[float]) -> tuple[float, float]:
    """(median, p99) of ``path``'s latencies less ``direct``'s."""
    return (statistics.median(path) - statistics.median(direct),
            _percentile(path, 0.99) - _percentile(direct, 0.99))


def _measure(upstream_port: int, gateway_port: int, relay_port: int, total: int, rounds: int, ramp_s: float,
             kind: str = "plain"):
    # The direct call sends the same body, so the upstream's reading of it cancels out.
    paths = {"direct": (upstream_port, _requests(kind, True)), "gateway": (gateway_port, _requests(kind, False)),
             "relay": (relay_port, _requests(kind, True))}
    for port, request in paths.values():
        load(port, request, 500, CONCURRENCY)  # warm-up: connections, lazy imports, SQLite pages
    rows, added, relayed, ratios, rates, relay_ratios = [], [], [], [], [], []
    names = list(paths)
    for index in range(rounds):
        # Each round in another order, so that no path always runs first or last.
        order = names[index % len(names):] + names[:index % len(names)]
        measured = {name: load(*paths[name], total, CONCURRENCY, ramp_s) for name in order}
        (d_lat, d_rate), (g_lat, g_rate), (r_lat, r_rate) = measured["direct"], measured["gateway"], measured["relay"]
        added.append(_added(g_lat, d_lat))
        relayed.append(_added(r_lat, d_lat))
        ratios.append(g_rate / d_rate)
        rates.append(g_rate)
        relay_ratios.append(r_rate / d_rate)
        rows.append([str(index + 1), _ms(statistics.median(d_lat)), _ms(_percentile(d_lat, 0.99)), f"{d_rate:.0f}",
                     _ms(statistics.median(g_lat)), _ms(_percentile(g_lat, 0.99)), f"{g_rate:.0f}",
                     *(_ms(v) for v in added[-1]), ratio_text(g_rate / d_rate), *(_ms(v) for v in relayed[-1]),
                     ratio_text(r_rate / d_rate)])
    one = {name: statistics.median(load(port, request, 300, 1)[0]) for name, (port, request) in paths.items()}
    burst = {name: _burst(port, request) for name, (port, request) in paths.items()}
    through_httpx = httpx_rate(upstream_port, total, CONCURRENCY)
    if repeated_text(paths):
        print(repeated_text(paths))
    return rows, Summary(
        added_median=statistics.median(a for a, _ in added), added_p99=statistics.median(a for _, a in added),
        throughput=statistics.median(ratios), single=one["gateway"] - one["direct"], through_httpx=through_httpx,
        gateway_rate=statistics.median(rates), relay_median=statistics.median(r for r, _ in relayed),
        relay_p99=statistics.median(r for _, r in relayed), relay_single=one["relay"] - one["direct"],
        relay_throughput=statistics.median(relay_ratios), burst_median=burst["gateway"][0] - burst["direct"][0],
        burst_last=burst["gateway"][1] - burst["direct"][1])


def _burst(port: int, request: bytes, repeats: int = 5) -> tuple[float, float]:
    """(median, slowest) latency of CONCURRENCY requests sent in the same instant, one per
    connection, each the median of ``repeats`` bursts."""
    bursts = [load(port, request, CONCURRENCY, CONCURRENCY)[0] for _ in range(repeats)]
    return statistics.median(statistics.median(b) for b in bursts), statistics.median(max(b) for b in bursts)


def _receipts(where: Path | str):
    from admiss.receipts import open_store

    return open_store(where, create=False).iter_since()
