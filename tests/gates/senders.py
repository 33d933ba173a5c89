"""The senders the provider tests run over, by name: ``httpx`` (the default: check --live,
judges, the meaning model), ``pooled`` (the gateway's own pool) and ``aiohttp`` (which the
gateway sends through for routes with a proxy, a CA or a client certificate; offered here
for plain routes too, so that every test of a plain route reaches it)."""

from __future__ import annotations

from admiss.providers import Providers
from admiss.serve.aiosender import AiohttpSender
from admiss.serve.transport import PooledSender

SENDERS = ("httpx", "pooled", "aiohttp")


def offer(providers: Providers, sender: str) -> Providers:
    """``providers``, sending plain routes' calls through ``sender``."""
    if sender != "httpx":
        providers.use_sender({"pooled": PooledSender, "aiohttp": AiohttpSender}[sender])
    return providers
