"""Retries of model calls against a real HTTP server on 127.0.0.1: jitter, Retry-After in
both its forms, the ceiling, the time budget, and hostile Retry-After values. Each test runs
over both senders (httpx's, and the gateway's own pool)."""

from __future__ import annotations

import asyncio
import email.utils
import statistics
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
import stamina
from chat_server import ChatServer, Recorded, Reply, completion
from senders import SENDERS, offer

from admiss.config import ProviderConfig
from admiss.providers import ProviderError, Providers, retry_after_s

CALLS = 50


class Arrivals:
    """A route that answers every request with ``reply`` and notes when each call's attempts came."""

    def __init__(self, reply: Reply):
        self.reply = reply
        self.times: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def __call__(self, recorded: Recorded) -> Reply:
        marker = recorded.body["messages"][0]["content"]
        with self._lock:
            self.times.setdefault(marker, []).append(time.monotonic())
        return self.reply


def _providers(url: str, sender: str, **options) -> Providers:
    return offer(Providers({"local": ProviderConfig("local", url, **options)}, environ={}), sender)


def _many(providers: Providers, count: int) -> tuple[list[object], list[float]]:
    """``count`` concurrent calls, each with its own marker: their outcomes and durations."""

    async def one(index: int) -> tuple[object, float]:
        started = time.monotonic()
        try:
            result: object = await providers.complete("local/m", [{"role": "user", "content": f"call {index}"}])
        except ProviderError as exc:
            result = exc
        return result, time.monotonic() - started

    async def go():
        try:
            return await asyncio.gather(*(one(i) for i in range(count)))
        finally:
            await providers.aclose()

    done = asyncio.run(go())
    return [r for r, _ in done], [d for _, d in done]


@pytest.fixture(params=SENDERS)
def sender(request) -> str:
    return request.param


def test_fifty_calls_told_to_wait_come_back_spread_out_after_the_wait_and_stop_at_the_budget(sender):
    arrivals = Arrivals(Reply(429, {"error": {"message": "slow down"}}, headers=(("Retry-After", "1"),)))
    server = ChatServer(route=arrivals).start()
    budget = 2.9
    try:
        # The budget fits one wait of 1 s + jitter (up to 1 s) after a first attempt of up to
        # 0.9 s, never two waits: each call is tried at most twice, though max_retries would
        # allow five.
        providers = _providers(server.url, sender, max_retries=5, retry_budget_s=budget, timeout_s=2)
        results, durations = _many(providers, CALLS)
    finally:
        server.stop()
    assert len(arrivals.times) == CALLS
    attempts = [len(times) for times in arrivals.times.values()]
    assert max(attempts) == 2 and attempts.count(2) >= CALLS - 5  # a loaded machine may slow a first attempt
    gaps = [times[1] - times[0] for times in arrivals.times.values() if len(times) == 2]
    # The header is honoured: no call came back sooner than it asked ...
    assert min(gaps) >= 1.0
    # ... and the jitter spreads them (uniform over 1 s: a spread of about 0.29 s; without
    # it all 50 would come back within a few milliseconds of each other).
    assert statistics.pstdev(gaps) > 0.15 and max(gaps) - min(gaps) > 0.5
    # Stopped at the budget, saying so.
    assert all(isinstance(r, ProviderError) for r in results)
    assert all(r.reason.startswith("provider local: ") and f"retry_budget_s {budget:g}s" in r.reason
               or f"of retry_budget_s ({budget:g}s)" in r.reason for r in results), {r.reason for r in results}
    assert max(durations) <= budget + 0.5


def test_without_retry_after_the_backoff_is_jittered(sender):
    arrivals = Arrivals(Reply(503, {"error": {"message": "busy"}}))
    server = ChatServer(route=arrivals).start()
    try:
        _many(_providers(server.url, sender, max_retries=1), CALLS)
    finally:
        server.stop()
    gaps = [times[1] - times[0] for times in arrivals.times.values()]
    # 0.25 s, plus up to 1 s of jitter. A gap is timed at the server, so a stall of the
    # host stretches it (a README run beside CI's load saw one of 2.09 s): the longest
    # gap but one must keep the bound, which a wrong schedule breaks for many calls.
    assert min(gaps) >= 0.25 and sorted(gaps)[-2] <= 1.25 + 0.3
    assert statistics.pstdev(gaps) > 0.15


def test_an_http_date_retry_after_is_waited_for(sender):
    when = email.utils.format_datetime(datetime.now(timezone.utc) + timedelta(seconds=2), usegmt=True)
    arrivals = Arrivals(Reply(503, {"error": {"message": "later"}}, headers=(("Retry-After", when),)))
    server = ChatServer(route=arrivals).start()
    try:
        _many(_providers(server.url, sender, max_retries=1), 1)
    finally:
        server.stop()
    [times] = arrivals.times.values()
    # The date has whole seconds: it asks for between 1 and 2 s from now.
    assert times[1] - times[0] >= 1.0


def test_a_retry_after_past_the_ceiling_fails_at_once(sender):
    arrivals = Arrivals(Reply(429, {"error": {"message": "come back in an hour"}}, headers=(("Retry-After", "3600"),)))
    server = ChatServer(route=arrivals).start()
    try:
        results, durations = _many(_providers(server.url, sender, max_retries=3, max_retry_after_s=30), 1)
    finally:
        server.stop()
    assert [len(t) for t in arrivals.times.values()] == [1]
    assert results[0].reason == ("provider local: HTTP 429: come back in an hour "
                                 "(asked to retry after 3600s, past max_retry_after_s 30s)")
    assert durations[0] < 1.0


def test_a_success_after_a_retry_is_served(sender):
    server = ChatServer().start()
    server.script(Reply(429, {"error": {"message": "x"}}, headers=(("Retry-After", "0"),)), completion("fine"))
    try:
        results, _ = _many(_providers(server.url, sender, max_retries=1), 1)
    finally:
        server.stop()
    assert results[0].text == "fine"


HOSTILE = ["nan", "NaN", "inf", "-inf", "-1", "1e999", "1.5", "0x10", "", "   ", "soon", "²",
           "9" * 5000, "99999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 01 Jan 0001 00:00:00 GMT",
           "Tue, 99 Foo 2026 99:99:99 GMT", "Thu, 01 Jan 1970 00:00:00 +9999", "\x00", "1\r\nX-Evil: 1"]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_retry_after_is_a_failed_call_never_an_exception(sender, value):
    server = ChatServer().start()
    # The header as the server sends it; a value that cannot be sent is tried through the
    # raw-bytes fuzz target instead (tests/fuzz).
    server.default = Reply(429, {"error": {"message": "hostile"}}, headers=(("Retry-After", value.replace("\r\n", " ")),))
    try:
        # stamina's test mode: no waits (the header is still read), at most the configured retries.
        with stamina.set_testing(True, attempts=10, cap=True):
            results, durations = _many(_providers(server.url, sender, max_retries=1, max_retry_after_s=2), 1)
    finally:
        server.stop()
    # A failed call (the model's fault), whether the header was read or the HTTP library
    # refused the reply for it (a NUL byte).
    assert isinstance(results[0], ProviderError)
    assert results[0].reason.startswith("provider local: HTTP 429" if value != "\x00" else "provider local: ")
    assert durations[0] < 1.0


def test_retry_after_values_read():
    now = datetime(2026, 12, 1, 10, 0, 0, tzinfo=timezone.utc)
    assert retry_after_s("30") == 30.0 and retry_after_s(" 7 ") == 7.0 and retry_after_s("0") == 0.0
    assert retry_after_s("Tue, 01 Dec 2026 10:00:42 GMT", now) == 42.0
    assert retry_after_s("Tue, 01 Dec 2026 09:00:00 GMT", now) == 0.0  # in the past: now
    assert retry_after_s("Mon, 01 Jan 0001 00:00:00 GMT", now) == 0.0
    assert retry_after_s("Fri, 31 Dec 9999 23:59:59 GMT", now) > 1e11
    assert retry_after_s("9" * 5000) == float("inf") and retry_after_s("99999999999999999999") == float("inf")
    for unreadable in ("nan", "inf", "-1", "1.5", "1e3", "", "²", "١", "soon", "Tue, 99 Foo 2026 99:99:99 GMT", None):
        assert retry_after_s(unreadable, now) is None, unreadable
