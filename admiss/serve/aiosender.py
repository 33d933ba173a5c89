"""The gateway's sender for providers whose calls need more than a direct connection: a
proxy (``proxy`` in admiss.toml or the environment, as :class:`~admiss.providers.Route`
chose it), a ``ca_file``, a client certificate, a URL's user-info. It sends through aiohttp,
the one module that imports it.

Why not httpx, which sends them everywhere else: at the concurrency the gateway lives at,
httpcore 1.0's pool walks its connections for every connection's state on each request
queued and released (a list of every connection made for each idle one: quadratic in the
connections kept), and a pool of 50 kept connections cost 10-13 ms of CPU a call; keeping
fewer than the calls in flight closes and reopens connections (a TLS handshake each, and a
CONNECT through a proxy). aiohttp's pool does neither: 0.36 ms a call against 2.3-13 ms
(docs/performance.md, "The gateway's sender for proxies and private CAs").

What stays with httpx: HTTP/2 (aiohttp speaks HTTP/1.1 only) and a proxy that is not an
http:// one (SOCKS, or TLS to the proxy), which :attr:`Route.httpx_only` marks.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Mapping

import aiohttp

from admiss.config import ProviderConfig
from admiss.providers import (CannotConnect, Reply, ReplyTooLong, Route, SendFailed, closed_hint, describe,
                              read_within, shown_url, tls_for, tls_problem)


class AiohttpSender:
    """Posts through one ``aiohttp.ClientSession`` on the provider's route, made on first use
    (inside the running loop); connections are kept up to ``idle_timeout_s``."""

    described = "aiohttp"

    def __init__(self, config: ProviderConfig, route: Route, max_connections: int = 100):
        self._config = config
        self._route = route
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _new_session(self) -> aiohttp.ClientSession:
        config = self._config
        connector = aiohttp.TCPConnector(limit=self._max_connections, ssl=tls_for(config, self._route),
                                         keepalive_timeout=config.idle_timeout_s)
        return aiohttp.ClientSession(
            connector=connector,
            # The route already read the environment (proxy variables, .netrc): not again here.
            trust_env=False,
            # A provider's cookies are not handed from one client's call to another's.
            cookie_jar=aiohttp.DummyCookieJar(),
            # The caller's deadline bounds the whole call; this bounds connecting alone, so that
            # a connection that cannot be made is told apart (and retried) from a slow reply.
            timeout=aiohttp.ClientTimeout(total=None, connect=config.timeout_s))

    async def post(self, url: str, body: bytes, headers: Mapping[str, str], max_bytes: int) -> Reply:
        if self._session is None:
            self._session = self._new_session()
        try:
            async with self._session.post(url, data=body, headers=headers, proxy=self._route.proxy,
                                          allow_redirects=False) as response:
                if response.content_length is not None and response.content_length > max_bytes:
                    raise ReplyTooLong
                # Decompressed as it comes, in bounded pieces: a small compressed reply that
                # inflates past max_bytes is stopped there.
                data = await read_within(response.content.iter_any(), max_bytes)
                return Reply(response.status, response.headers, data)
        except aiohttp.ClientHttpProxyError as exc:
            # Its text holds the proxy's URL, credentials and all: only the status is told.
            raise CannotConnect(f"the proxy {shown_url(self._route.proxy)} refused: "
                                f"{exc.status} {exc.message}") from None
        except aiohttp.ClientProxyConnectionError as exc:
            raise CannotConnect(f"cannot connect to the proxy {shown_url(self._route.proxy)}: "
                                f"{describe(exc.os_error)}") from None
        except aiohttp.ClientConnectorCertificateError as exc:
            problem = exc.certificate_error
            raise CannotConnect(tls_problem(problem, self._route) or describe(problem)) from None
        except aiohttp.ClientConnectorError as exc:
            # An SSL error among them (ClientConnectorSSLError): os_error is the SSLError.
            raise CannotConnect(tls_problem(exc.os_error, self._route) or describe(exc.os_error)) from None
        except aiohttp.ConnectionTimeoutError:
            raise CannotConnect("connection timed out") from None
        except asyncio.TimeoutError:
            raise TimeoutError from None
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            # A TLS alert read after the handshake (TLS 1.3's "certificate required") comes
            # as a ClientOSError caused by the SSLError that names it.
            cause = exc.__cause__ if isinstance(exc.__cause__, ssl.SSLError) else exc
            told = tls_problem(cause, self._route)
            raise SendFailed(told or closed_hint(self._config, url, describe(exc), hung_up=True)) from None
        except aiohttp.ClientResponseError as exc:
            # A reply aiohttp could not read (a header too long, a malformed status line).
            raise SendFailed(f"malformed reply: {exc.message}") from None
        except aiohttp.ClientError as exc:
            raise SendFailed(describe(exc)) from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
