"""The gateway's upstream sender: aiohttp's connection pool under the providers' calls; the
only module that imports aiohttp.

admiss's providers send through httpx by default. At the concurrency a gateway lives at,
httpx costs several times the CPU per call of aiohttp: its pool (httpcore on anyio) slows
down sharply with many requests in flight, and its request and response objects cost
even over another pool (docs/performance.md#the-gateway). So the gateway's provider
clients send through this :class:`~admiss.providers.Sender` instead; everything above it
(the deadline, retries, error reasons, response parsing) stays the providers' own.
"""

from __future__ import annotations

import asyncio
from typing import Mapping

import aiohttp

from admiss.config import ProviderConfig
from admiss.providers import CannotConnect, Reply, ReplyTooLong, SendFailed


class AiohttpSender:
    """Posts through one aiohttp session, made on first use in the running loop."""

    def __init__(self, config: ProviderConfig, max_connections: int = 100):
        self._max_connections = max_connections
        # The caller's deadline bounds the whole exchange; this one only tells a connection
        # that never came (safe to retry) from a reply that never came (not retried).
        self._timeout = aiohttp.ClientTimeout(total=None, connect=config.timeout_s)
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self._max_connections, enable_cleanup_closed=True)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
        return self._session

    async def post(self, url: str, body: bytes, headers: Mapping[str, str], max_bytes: int) -> Reply:
        try:
            async with self._client().post(url, data=body, headers=headers, allow_redirects=False) as reply:
                if (reply.content_length or 0) > max_bytes:
                    raise ReplyTooLong
                data = bytearray()
                # Decompressed chunks as they come, so a reply is cut off at max_bytes
                # however it was encoded.
                async for chunk in reply.content.iter_any():
                    data += chunk
                    if len(data) > max_bytes:
                        raise ReplyTooLong
                return Reply(reply.status, reply.headers, bytes(data))
        except aiohttp.ConnectionTimeoutError as exc:
            raise CannotConnect(str(exc) or "connection timed out") from None
        except aiohttp.ClientConnectorError as exc:
            raise CannotConnect(str(exc)) from None
        except (aiohttp.ServerTimeoutError, asyncio.TimeoutError):
            raise TimeoutError from None
        except aiohttp.ClientError as exc:
            raise SendFailed(str(exc) or type(exc).__name__) from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
