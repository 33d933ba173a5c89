"""The gateway's upstream transport: httpx's interface over aiohttp's connection pool; the
only module that imports aiohttp.

admiss's providers speak httpx. httpx's own pool (httpcore on anyio) slows down sharply
with many requests in flight: on the 2-core benchmark machine, 50 concurrent calls to a
fake upstream ran at about 120-420 requests/s through httpx and about 1,700 through
aiohttp (docs/performance.md#the-gateway). The gateway lives at that concurrency, so its
provider clients send through this transport; everything above it (timeouts, retries,
error reasons, response parsing) stays the providers' own.
"""

from __future__ import annotations

import asyncio

import aiohttp
import httpx

# Hop-by-hop and length headers are aiohttp's to write for the body it sends.
_DROPPED = frozenset({"content-length", "transfer-encoding", "connection", "host"})


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Sends httpx requests through one aiohttp session, made on first use in the running loop."""

    def __init__(self, max_connections: int = 100):
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=self._max_connections, enable_cleanup_closed=True)
            # httpx decodes content-encoding itself, from the headers handed back.
            self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False)
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        limits = request.extensions.get("timeout", {})
        timeout = aiohttp.ClientTimeout(total=None, connect=limits.get("connect"), sock_read=limits.get("read"))
        headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() not in _DROPPED]
        body = await request.aread()
        try:
            async with self._client().request(request.method, str(request.url), headers=headers, data=body,
                                              timeout=timeout, allow_redirects=False) as reply:
                content = await reply.read()
                raw_headers = [(k, v) for k, v in reply.raw_headers]
                status = reply.status
        except aiohttp.ServerTimeoutError as exc:  # covers the connect and read timeouts
            kind = httpx.ConnectTimeout if isinstance(exc, aiohttp.ConnectionTimeoutError) else httpx.ReadTimeout
            raise kind(str(exc) or "timed out", request=request) from None
        except asyncio.TimeoutError:
            raise httpx.ReadTimeout("timed out", request=request) from None
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc), request=request) from None
        except aiohttp.ClientError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from None
        return httpx.Response(status, headers=raw_headers, content=content, request=request)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
