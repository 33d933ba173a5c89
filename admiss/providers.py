"""Model calls: an OpenAI-compatible chat-completions client (OpenAI, vLLM, Ollama,
llama.cpp, LiteLLM), and one for Anthropic's Messages API (``api = "anthropic"``, the
translation in admiss/anthropic_api.py), which every caller reaches the same way.

A model id ``"NAME/model"`` goes to ``[providers.NAME]`` with model ``model``. Every failure
(no such provider, unset key, connection, HTTP status, timeout, malformed reply) raises
:class:`ProviderError`, which the gates turn into an abstain with a fault: the gate's, except
when the request was refused for what it carried (``content_refused``: HTTP 400, 413 or 422,
e.g. a candidate too long for the model's context, or a completion without text, the model
declining), which is the candidate's.

Only idempotent failures are retried: connection errors (the request never arrived), 429,
502, 503 and 504 (the server says it did not do the work; and Anthropic's 529, overloaded). A 500 or a read timeout may have
been billed, so it is not repeated. Retries are stamina's: exponential backoff with jitter
(so calls refused together do not come back together), a server's ``Retry-After`` (seconds
or an HTTP-date) waited for, plus jitter, up to ``max_retry_after_s``, and no retry that
would pass the call's ``retry_budget_s``. Every header a server sends is untrusted: one
that cannot be read is ignored, never an exception.

Each request is bounded as a whole: ``timeout_s`` is a deadline from connecting to the
reply's last byte (a server dripping one byte a second is cut off, not waited on for each
byte), and a reply longer than ``max_reply_bytes`` (decompressed) is cut off and fails.

How a provider's calls leave the process is its :class:`Route`: the proxy (``proxy`` in
admiss.toml, else ``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY`` unless ``NO_PROXY``
names the host) and one trust store for every sender (``ca_file``, else the OS store, which
OpenSSL reads from ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set; certifi's bundle where the
machine has no store), with the provider's client certificate.

The bytes go through a :class:`Sender`: httpx's pool by default (:class:`HttpxSender`),
which does the proxying, HTTP/2, Basic auth from a URL's user-info and idle expiry. The
gateway plugs in a connection pool of its own (``admiss/serve/transport.py``) for providers
whose route needs none of those (:attr:`Route.plain`), and aiohttp
(``admiss/serve/aiosender.py``) for the others but HTTP/2 and proxies that are not http://
(:attr:`Route.httpx_only`): both cost far less CPU per call than httpx at the concurrency
the gateway lives at. Timeouts, retries and error reasons stay here, the same for every
sender.
"""

from __future__ import annotations

import asyncio
import json
import contextvars
import email.utils
import math
import os
import random
import re
import ssl
import time
import urllib.request
from datetime import datetime, timezone
from functools import partial
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping, Protocol, Sequence, TypeVar
from urllib.parse import urlsplit

import attrs
import httpx
import stamina

from admiss import anthropic_api, jsonio
from admiss.config import ANTHROPIC_API, Config, ProviderConfig, provider_name
from admiss.redact import clipped, holds_secret, key_values, redact, url_secrets

RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Statuses by which a server refuses a request for its content (too long, filtered, malformed
# text), not for the provider's configuration or health: the candidate's fault, not the gate's.
CONTENT_REFUSED_STATUSES = frozenset({400, 413, 422})
# How much of a server's own error text a reason quotes (after redaction).
DETAIL_CHARS = 200
# Backoff (stamina's): BACKOFF_S doubling to MAX_BACKOFF_S, plus up to JITTER_S drawn per retry.
BACKOFF_S = 0.25
MAX_BACKOFF_S = 4.0
JITTER_S = 1.0
_JSON_HEADERS = {"Content-Type": "application/json"}
# Retries are reported in the call's error, not logged, and counted by no metric of stamina's
# own (the gateway's /metrics are its own registry's).
stamina.instrumentation.set_on_retry_hooks([])


class ProviderError(Exception):
    """A model call failed; ``reason`` says how, in words fit for a report."""

    def __init__(self, reason: str, content_refused: bool = False):
        super().__init__(reason)
        self.reason = reason
        # True when the server refused the request for what it carried, not for being down.
        self.content_refused = content_refused


# No model reads or writes this many tokens in one call: a count past it is a server's
# mistake or a lie, and priced it would put an absurd cost ($2e12) on a receipt.
MAX_CALL_TOKENS = 10**8


@attrs.frozen
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    # The server reported a count past MAX_CALL_TOKENS: the counts are zero and never priced.
    out_of_bounds: bool = False


@attrs.frozen
class Reply:
    """An HTTP reply read whole, within the deadline and the size cap."""

    status_code: int
    # Case-insensitive, as the sender's HTTP library gives them (only retry-after is read).
    headers: Mapping[str, str]
    body: bytes

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return jsonio.loads_any(self.body)


class CannotConnect(Exception):
    """A sender could not get the request to the server, so sending it again is safe."""


class SendFailed(Exception):
    """A sender's exchange broke after the request may have arrived."""


class ReplyTooLong(Exception):
    """The reply passed ``max_bytes``; a sender stops reading it."""


class Sender(Protocol):
    """Posts a JSON body and reads the whole reply; one per provider client.

    Raises :class:`CannotConnect`, :class:`SendFailed`, :class:`ReplyTooLong` or
    ``TimeoutError``. The caller bounds the whole exchange with its own deadline.
    """

    async def post(self, url: str, body: bytes, headers: Mapping[str, str], max_bytes: int) -> Reply: ...

    async def aclose(self) -> None: ...


SenderMaker = Callable[[ProviderConfig, "Route"], Sender]


@attrs.define
class Route:
    """How one provider's calls leave this process: through which proxy, trusting which CAs."""

    proxy: str | None
    # Where the proxy choice comes from, in words ("HTTPS_PROXY", "NO_PROXY", ...).
    proxy_from: str
    # What TLS trusts, in words ("ca_file /etc/corp.pem", "the OS store", ...).
    trust: str
    # Nothing but a direct HTTP/1.1 connection is needed: the gateway's own pool may send.
    plain: bool
    # HTTP/2, or a proxy that is not an http:// one (SOCKS, TLS to the proxy): httpx alone sends.
    httpx_only: bool
    _make_context: Callable[[], ssl.SSLContext] = attrs.field(repr=False)
    _context: ssl.SSLContext | None = attrs.field(default=None, init=False, repr=False)

    def ssl(self) -> ssl.SSLContext:
        """The TLS context, made on first use: loading a CA store takes about 0.1 s, which a
        provider reached over plain HTTP never needs to pay. ProviderError when the
        certificate files cannot be loaded."""
        if self._context is None:
            self._context = self._make_context()
        return self._context

    def described(self) -> str:
        """The route in words, without a secret (a proxy's user-info is left out)."""
        proxy = f"proxy {shown_url(self.proxy)} ({self.proxy_from})" if self.proxy else f"no proxy ({self.proxy_from})"
        return f"{proxy}, TLS trusting {self.trust}"


def route_for(config: ProviderConfig, environ: Mapping[str, str]) -> Route:
    """The provider's :class:`Route`."""
    proxy, proxy_from = _proxy_for(config, environ)
    store, trust = _trust_store(config, environ)
    plain = (proxy is None and not config.http2 and config.client_cert is None and config.ca_file is None
             and _user_info(config.base_url) is None)
    httpx_only = config.http2 or (proxy is not None and not proxy.startswith("http://"))
    return Route(proxy, proxy_from, trust, plain, httpx_only, lambda: _tls_context(config, store))


def _tls_context(config: ProviderConfig, store: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    try:
        context = store()
    except (OSError, ssl.SSLError) as exc:
        raise ProviderError(f"provider {config.name}: the CA certificates cannot be loaded: {describe(exc)}") from None
    if config.client_cert is not None:
        try:
            # A password-protected key would make OpenSSL ask on the terminal: refuse it instead.
            context.load_cert_chain(config.client_cert, config.client_key, password=_no_password)
        except (OSError, ssl.SSLError) as exc:
            raise ProviderError(f"provider {config.name}: client_cert {config.client_cert} cannot be loaded: "
                                f"{describe(exc)} (an unencrypted PEM certificate and key)") from None
    return context


def _no_password() -> bytes:
    raise ssl.SSLError("the key is encrypted; admiss reads unencrypted keys only")


def _proxy_for(config: ProviderConfig, environ: Mapping[str, str]) -> tuple[str | None, str]:
    """The proxy for the provider's URL and where that choice comes from. admiss.toml's
    ``proxy`` wins; else the environment as curl and httpx read it (lower-case names first)."""
    if config.proxy is not None:
        return (config.proxy, "proxy in admiss.toml") if config.proxy else (None, 'proxy = "" in admiss.toml')
    parts = urlsplit(config.base_url)
    names = (f"{parts.scheme}_proxy", "all_proxy")
    found = next(((name, environ[variant]) for name in names for variant in (name, name.upper())
                  if environ.get(variant)), None)
    if found is None:
        return None, "no proxy variable set"
    no_proxy = environ.get("no_proxy") or environ.get("NO_PROXY")
    if no_proxy and urllib.request.proxy_bypass_environment(parts.netloc.rpartition("@")[2], {"no": no_proxy}):
        return None, "NO_PROXY"
    return found[1], found[0].upper()


def _trust_store(config: ProviderConfig, environ: Mapping[str, str]) -> tuple[Callable[[], ssl.SSLContext], str]:
    """One trust store for both senders, so one admiss.toml reaches the same servers through
    either: ``ca_file``; else ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``; else the OS store, and
    certifi's bundle only where the machine has none (a slim container). Returned as the
    way to make it, and in words."""
    if config.ca_file is not None:
        return partial(ssl.create_default_context, cafile=str(config.ca_file)), f"ca_file {config.ca_file}"
    file, folder = environ.get("SSL_CERT_FILE") or None, environ.get("SSL_CERT_DIR") or None
    if file or folder:
        described = " and ".join(f"{name} {value}" for name, value in (("SSL_CERT_FILE", file),
                                                                     ("SSL_CERT_DIR", folder)) if value)
        return partial(ssl.create_default_context, cafile=file, capath=folder), described
    paths = ssl.get_default_verify_paths()
    if (paths.cafile and os.path.isfile(paths.cafile)) or (paths.capath and os.path.isdir(paths.capath)
                                                           and os.listdir(paths.capath)):
        return ssl.create_default_context, "the OS store"
    import certifi  # httpx's own dependency

    return partial(ssl.create_default_context, cafile=certifi.where()), "certifi's bundle (the machine has no CA store)"


def shown_url(url: str | None) -> str:
    """``url`` without its user-info: what errors and logs may show of it."""
    if not url:
        return ""
    scheme, _, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    return f"{scheme}://{netloc.rpartition('@')[2]}{slash}{path}"


def tls_for(config: ProviderConfig, route: Route) -> ssl.SSLContext:
    """The TLS context a sender connects with: the route's, or over plain HTTP one that is
    never loaded (no TLS is spoken to the server) and trusts nothing, so it fails closed."""
    return route.ssl() if config.base_url.startswith("https://") else _NO_TLS


def closed_hint(config: ProviderConfig, url: str, told: str, hung_up: bool) -> str:
    """``told``, with the likeliest cause when a TLS server ``hung_up`` without a reply: it
    wanted a client certificate (TLS 1.3 refuses one only after the handshake, and the
    alert saying so is often lost: the connection is reset or closed first, whichever the
    server's side gets to first)."""
    if hung_up and url.startswith("https://") and config.client_cert is None:
        return (f"{told}: the server closed the connection without a reply (if it wants a client "
                "certificate, set client_cert)")
    return told


def _user_info(url: str) -> str | None:
    netloc = urlsplit(url).netloc
    return netloc.rpartition("@")[0] or None


async def read_within(chunks: AsyncIterator[bytes], max_bytes: int) -> bytes:
    """A reply's body from its (decompressed) ``chunks``; ReplyTooLong once past ``max_bytes``,
    without reading the rest."""
    data = bytearray()
    async for chunk in chunks:
        data += chunk
        if len(data) > max_bytes:
            raise ReplyTooLong
    return bytes(data)


class HttpxSender:
    """The default sender: one pooled ``httpx.AsyncClient`` on the provider's route, made on
    first use. httpx sends a URL's user-info as Basic auth (never in a header of its own)."""

    def __init__(self, config: ProviderConfig, route: Route):
        self._config = config
        self._route = route
        self._http: httpx.AsyncClient | None = None

    def _options(self) -> dict[str, Any]:
        config, route = self._config, self._route
        tls = tls_for(config, route)
        return dict(
            # HTTP/2 is offered in the TLS handshake only: over http:// it would never be spoken.
            timeout=httpx.Timeout(config.timeout_s), proxy=route.proxy, verify=tls,
            http2=config.http2 and config.base_url.startswith("https://"),
            # The route already read the environment; httpx must not read it again (or .netrc).
            trust_env=False,
            limits=httpx.Limits(max_connections=100, max_keepalive_connections=100,
                                keepalive_expiry=config.idle_timeout_s))

    async def post(self, url: str, body: bytes, headers: Mapping[str, str], max_bytes: int) -> Reply:
        if self._http is None:
            self._http = httpx.AsyncClient(**self._options())
        try:
            async with self._http.stream("POST", url, content=body, headers=headers) as response:
                data = await read_within(response.aiter_bytes(), max_bytes)
                return Reply(response.status_code, response.headers, data)
        except httpx.ProxyError as exc:
            raise CannotConnect(f"the proxy {shown_url(self._route.proxy)} refused: {describe(exc)}") from None
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise CannotConnect(tls_problem(exc, self._route) or describe(exc)) from None
        except httpx.TimeoutException:
            raise TimeoutError from None
        except (httpx.HTTPError, OSError) as exc:
            # OSError: an SSLError httpcore lets through unwrapped (a TLS alert on reading,
            # as when the server wanted a client certificate).
            raise SendFailed(tls_problem(exc, self._route) or self._closed_hint(exc, url)) from None

    def _closed_hint(self, exc: BaseException, url: str) -> str:
        """The error, with the client-certificate hint when a TLS server hung up unanswered:
        the connection reset (a ReadError) or closed (a RemoteProtocolError)."""
        hung_up = isinstance(exc, (httpx.ReadError, httpx.RemoteProtocolError))
        return closed_hint(self._config, url, describe(exc), hung_up)

    async def reachable(self, url: str, seconds: float) -> str | None:
        """None when a GET of ``url`` gets any HTTP reply through the route; else why not."""
        try:
            async with httpx.AsyncClient(**{**self._options(), "timeout": httpx.Timeout(seconds)}) as client:
                await client.get(url)
        except httpx.ProxyError as exc:
            return f"the proxy {shown_url(self._route.proxy)} refused: {describe(exc)}"
        except (httpx.HTTPError, OSError) as exc:
            return tls_problem(exc, self._route) or self._closed_hint(exc, url)
        return None

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None


_NO_TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, and trusts no CA: fails closed

# What an SSL error's text means, for someone fixing admiss.toml.
_TLS_HINTS = (
    ("CERTIFICATE_VERIFY_FAILED", "the server's certificate is not signed by a CA admiss trusts ({trust}): "
                                  "set ca_file to the CA that signed it"),
    ("CERTIFICATE_REQUIRED", "the server asks for a client certificate: set client_cert (and client_key)"),
    ("HANDSHAKE_FAILURE", "the TLS handshake failed (the server may want a client certificate: client_cert)"),
    ("UNKNOWN_CA", "the server does not trust the client certificate's CA (client_cert)"),
    ("BAD_CERTIFICATE", "the server refused the client certificate (client_cert)"),
)


def tls_problem(exc: BaseException, route: Route) -> str | None:
    """What a TLS failure means, in words with its fix, or None when ``exc`` is not one."""
    text = describe(exc)
    for mark, hint in _TLS_HINTS:
        if mark in text.upper():
            return f"TLS: {hint.format(trust=route.trust)} ({text})"
    return None


_T = TypeVar("_T")


async def _within(seconds: float, work: Awaitable[_T]) -> _T:
    """``work``'s result, or TimeoutError after ``seconds``. asyncio.timeout (3.11+) runs it
    in the calling task; wait_for would start a task of its own for every call."""
    timeout = getattr(asyncio, "timeout", None)
    if timeout is None:
        return await asyncio.wait_for(work, seconds)
    async with timeout(seconds):
        return await work


@attrs.frozen
class Completion:
    # None when the model answered with tool calls only.
    text: str | None
    # None when the server did not report token usage (the call cannot be priced).
    usage: Usage | None
    finish_reason: str | None = None
    # The tool calls the model proposed, each {"id", "type": "function", "function": {"name",
    # "arguments"}} with strings checked (the upstream is untrusted).
    tool_calls: tuple[dict[str, Any], ...] = ()
    # An Anthropic provider's own stop reason (one the API documents), beside its finish_reason.
    stop_reason: str | None = None

    @property
    def answer(self) -> str:
        return answer_text(self.text, self.tool_calls)


def answer_text(text: str | None, tool_calls: Sequence[Mapping[str, Any]]) -> str:
    """A whole answer as one text, to compare samples by: the text, then each tool call's
    name and arguments (ids differ from call to call and are left out)."""
    if not tool_calls:
        return text or ""
    calls = [[c["function"]["name"], c["function"]["arguments"]] for c in tool_calls]
    return (text or "") + "\n" + json.dumps(calls, ensure_ascii=False)


@attrs.frozen
class Call:
    """One model call that returned, as :func:`recording_calls` logs it."""

    model: str
    usage: Usage | None


# The calls made in the current context (a request of the gateway), when someone records them.
_calls: contextvars.ContextVar[list[Call] | None] = contextvars.ContextVar("admiss_calls", default=None)


def recording_calls() -> list[Call]:
    """Start logging every call that returns in this context (and the tasks it starts) to
    the returned list: gates reach the provider from inside the cascade, and a receipt
    needs each call's token usage."""
    calls: list[Call] = []
    _calls.set(calls)
    return calls


def split_model(model: str) -> tuple[str, str]:
    """``"NAME/model"`` → ``("NAME", "model")``; the model part may itself contain slashes."""
    name = provider_name(model)
    if name is None:
        raise ProviderError(f"model {model!r} names no provider: write it as \"provider/model\"")
    return name, model[len(name) + 1:]


def cost_usd(config: Config, model: str, usages: Sequence[Usage | None]) -> tuple[float, str | None]:
    """What the calls cost under ``[prices]``, and a note when some of it could not be priced."""
    price = config.price_for(model)
    if price is None:
        return 0.0, f'{model} is unpriced: add [prices."{model}"] to admiss.toml'
    known = [u for u in usages if u is not None and not u.out_of_bounds]
    total = sum(price.cost_usd(u.input_tokens, u.output_tokens) for u in known)
    missing = len(usages) - len(known)
    return total, (f"{missing} call(s) reported no token usage and are not priced" if missing else None)


class ChatClient:
    """One provider's chat-completions endpoint over one :class:`Sender` (httpx's by default)."""

    path = "/chat/completions"
    retry_statuses = RETRY_STATUSES

    def __init__(self, config: ProviderConfig, environ: Mapping[str, str] | None = None,
                 sender: Sender | None = None, route: Route | None = None):
        self.config = config
        self._environ = os.environ if environ is None else environ
        self.route = route if route is not None else route_for(config, self._environ)
        self._sender = sender if sender is not None else HttpxSender(config, self.route)
        self._url = f"{config.base_url}{self.path}"
        # With a key the key is the credential: the URL's user-info is not sent at all (httpx
        # would send it as Basic auth in the Authorization header, over a Bearer key).
        self._sent_url = shown_url(self._url) if config.api_key_env else self._url
        self._url_secrets = url_secrets([config.base_url])

    async def complete(self, model: str, messages: Sequence[Mapping[str, Any]],
                       params: Mapping[str, Any] | None = None, text: bytes | None = None) -> Completion:
        """The reply to ``messages`` from ``model`` (the name without the provider prefix);
        ``params`` adds request fields such as ``temperature``. ``text``: the exact JSON
        text of ``messages`` (jsonio.exact_text), when the caller has it made."""
        try:
            headers = self._headers()
            body = self._encoded(model, messages, params or {}, text)
            response = await self._post_with_retries(body, headers)
            return self._completion(response)
        except ProviderError as exc:
            # Every reason this client gives passes here: a server or a connection error may
            # quote the key it was sent or the URL's user-info.
            raise ProviderError(redact(exc.reason, self.secrets()), exc.content_refused) from None

    def refuse_echo(self, completion: Completion) -> None:
        """ProviderError when ``completion`` repeats the credentials this client sent:
        whatever a server says, admiss never hands them on (to a client, a judge's reason, a
        receipt). Refused as the server's fault, so a rung escalates and a gate abstains."""
        secrets = self.secrets()
        if not secrets:
            return  # a provider without a key or user-info (a local server) has nothing to echo
        # The answer holds the text and the tool calls' names and arguments: all of it may be served.
        ids = " ".join(call["id"] for call in completion.tool_calls)
        if holds_secret(f"{completion.answer}\n{ids}\n{completion.finish_reason or ''}", secrets):
            raise ProviderError(f"{self._where()}: the reply repeats the credentials it was sent "
                                "(its key or URL user-info); refused")

    def secrets(self) -> tuple[str, ...]:
        """What this client must never show: its key's value and its URL's user-info."""
        return key_values([self.config.api_key_env], self._environ) + self._url_secrets

    async def aclose(self) -> None:
        await self._sender.aclose()

    def _body(self, model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> dict[str, Any]:
        return {**params, "model": model, "messages": list(messages)}

    def _encoded(self, model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any],
                 text: bytes | None) -> bytes:
        """The request body's bytes. The chat-completions body sends the messages as they
        are, so their exact text, when given, is copied in: an agent's 40 messages were
        most of the body's writing (benchmarks/callgrind_gateway.py)."""
        body = self._body(model, messages, params)
        written = jsonio.with_part(body, "messages", text) if text is not None else None
        return written if written is not None else jsonio.dumps_line(body)

    def _completion(self, response: Reply) -> Completion:
        return _completion(response, self.config.name, self.secrets)

    def _headers(self) -> dict[str, str]:
        key = self._key()
        return _JSON_HEADERS if key is None else {**_JSON_HEADERS, "Authorization": f"Bearer {key}"}

    def _key(self) -> str | None:
        """The provider's key (None when it has no api_key_env); ProviderError when unset."""
        env_name = self.config.api_key_env
        if env_name is None:
            return None
        key = self._environ.get(env_name)
        if not key:
            raise ProviderError(
                f"environment variable {env_name} is not set (api_key_env of [providers.{self.config.name}])"
            )
        return key

    def _error_detail(self, response: Reply) -> str:
        return _error_detail(response, self.secrets())

    async def _post_with_retries(self, body: bytes, headers: Mapping[str, str]) -> Reply:
        """The reply, after stamina's retries of what may be retried; ProviderError else."""
        config = self.config
        deadline = time.monotonic() + config.retry_budget_s
        try:
            return self._successful(await self._attempt(body, headers, config.retry_budget_s), 0)
        except _Retryable as exc:
            failed: _Retryable | None = exc
        # stamina's retry loop costs about 0.1 ms a call to set up (measured on this 2-core
        # machine), a fifth of a gateway request's CPU: it is entered only once a first
        # attempt failed in a way that may be retried, and its first attempt replays that
        # failure. The schedule, too, is made only then.
        schedule = _Schedule(config, deadline)
        retries = 0
        try:
            async for attempt in stamina.retry_context(
                    on=schedule.wait_before_retry, attempts=config.max_retries + 1, timeout=config.retry_budget_s,
                    wait_initial=BACKOFF_S, wait_max=MAX_BACKOFF_S, wait_jitter=JITTER_S):
                with attempt:
                    if failed is not None:
                        replayed, failed = failed, None
                        raise replayed
                    retries += 1
                    return self._successful(await self._attempt(body, headers, schedule.remaining()), retries)
        except _Retryable as exc:
            if exc.response is None:
                raise ProviderError(f"{self._where()}: cannot connect to {self._url}: {exc.reason}"
                                    f"{_tried(retries)}{schedule.stopped}") from None
            raise ProviderError(f"{self._where()}: HTTP {exc.response.status_code}{_tried(retries)}"
                                f"{self._error_detail(exc.response)}{schedule.stopped}") from None
        raise AssertionError("stamina ended without a last attempt")  # pragma: no cover

    async def _attempt(self, body: bytes, headers: Mapping[str, str], remaining_s: float) -> Reply:
        """One exchange's reply, within ``remaining_s`` of the call's budget; _Retryable when
        it may be repeated."""
        config = self.config
        seconds = min(config.timeout_s, remaining_s)
        try:
            response = await _within(seconds, self._sender.post(self._sent_url, body, headers, config.max_reply_bytes))
        except CannotConnect as exc:
            raise _Retryable(None, str(exc)) from None
        except (TimeoutError, asyncio.TimeoutError):
            within = (f"{config.timeout_s:g}s (a deadline for the whole reply)" if seconds == config.timeout_s
                      else f"the {seconds:.3g}s left of retry_budget_s ({config.retry_budget_s:g}s)")
            raise ProviderError(f"{self._where()}: no reply within {within}") from None
        except ReplyTooLong:
            raise ProviderError(f"{self._where()}: reply longer than {config.max_reply_bytes} bytes; "
                                "cut off (max_reply_bytes)") from None
        except SendFailed as exc:
            raise ProviderError(f"{self._where()}: request failed: {exc}") from None
        except (ValueError, TypeError, LookupError, ArithmeticError, UnicodeError) as exc:
            # Whatever the server's bytes provoke in a library is the server's fault: a failed
            # call, escalated like any other, never an exception for the caller.
            raise ProviderError(f"{self._where()}: the reply could not be read ({type(exc).__name__})") from None
        if response.status_code in self.retry_statuses:
            raise _Retryable(response)
        return response

    def _successful(self, response: Reply, retries: int) -> Reply:
        if response.is_success:
            return response
        raise ProviderError(f"{self._where()}: HTTP {response.status_code}{_tried(retries)}"
                            f"{self._error_detail(response)}",
                            content_refused=response.status_code in CONTENT_REFUSED_STATUSES)

    def _where(self) -> str:
        return f"provider {self.config.name}"


class MessagesClient(ChatClient):
    """One provider's Anthropic Messages endpoint (``api = "anthropic"``): the same
    deadline, retries (529, overloaded, among them) and reasons as :class:`ChatClient`, the
    call translated by :mod:`admiss.anthropic_api`."""

    path = anthropic_api.PATH
    retry_statuses = RETRY_STATUSES | {anthropic_api.OVERLOADED}

    def _encoded(self, model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any],
                 text: bytes | None) -> bytes:
        # The Messages API's body holds the messages translated: their text is not its.
        return jsonio.dumps_line(self._body(model, messages, params))

    def _body(self, model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return anthropic_api.request_body(model, messages, params, self.config.max_tokens)
        except anthropic_api.CannotSend as exc:
            # What the call carried, as a server would refuse it with a 400.
            raise ProviderError(f"{self._where()}: cannot be sent to the Messages API: {exc}",
                                content_refused=True) from None

    def _completion(self, response: Reply) -> Completion:
        try:
            message = anthropic_api.message(response.text)
        except anthropic_api.NotAMessage as exc:
            raise ProviderError(f"{self._where()}: reply is not a Messages API message: {exc}") from None
        if message.text is None and not message.tool_calls:
            raise ProviderError(f"{self._where()}: reply has no text content (the model declined)",
                                content_refused=True)
        return Completion(message.text, _counted(message.input_counts, message.output_count), message.finish_reason,
                          message.tool_calls, message.stop_reason)

    def _headers(self) -> dict[str, str]:
        key = self._key()
        versioned = {**_JSON_HEADERS, "anthropic-version": anthropic_api.VERSION}
        return versioned if key is None else {**versioned, "x-api-key": key}

    def _error_detail(self, response: Reply) -> str:
        try:
            message = anthropic_api.error_message(response.json())
        except (ValueError, RecursionError):
            message = None
        if message is None:
            return _error_detail(response, self.secrets())
        return f": {clipped(message.strip(), DETAIL_CHARS, self.secrets())}"


class _Retryable(Exception):
    """An attempt that may be repeated: no connection (``response`` None), or a retry status."""

    def __init__(self, response: Reply | None, reason: str = ""):
        super().__init__(reason)
        self.response = response
        self.reason = reason


class _Schedule:
    """stamina's backoff hook for one call: which failures are retried, and when a server's
    Retry-After sets the wait. It refuses a retry past the call's budget or a Retry-After
    past the ceiling, and says why in :attr:`stopped`."""

    def __init__(self, config: ProviderConfig, deadline: float):
        self._config = config
        self._deadline = deadline
        self._retries = 0
        self.stopped = ""

    def remaining(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    def wait_before_retry(self, exc: Exception) -> bool | float:
        if not isinstance(exc, _Retryable) or self._retries >= self._config.max_retries:
            return False
        self._retries += 1
        asked = retry_after_s(exc.response.headers.get("retry-after") if exc.response is not None else None)
        config = self._config
        if asked is not None and asked > config.max_retry_after_s:
            self.stopped = f" (asked to retry after {asked:g}s, past max_retry_after_s {config.max_retry_after_s:g}s)"
            return False
        longest = asked + JITTER_S if asked is not None else min(MAX_BACKOFF_S, BACKOFF_S * 2 ** (self._retries - 1) + JITTER_S)
        if longest >= self.remaining():
            self.stopped = f" (retry_budget_s {config.retry_budget_s:g}s would be passed)"
            return False
        # The asked wait and a jitter on top: calls told the same time do not return together.
        return True if asked is None else asked + random.uniform(0, JITTER_S)


def _tried(retries: int) -> str:
    return f" after {retries} retries" if retries else ""


_MODELS_KEPT = 64


class Providers:
    """The clients of one run, one per configured provider; close them with :meth:`aclose`.

    Clients are made lazily inside the running event loop. Use one event loop per run, or
    call :meth:`aclose` before leaving a loop so the next loop gets fresh connections.
    """

    def __init__(self, providers: Mapping[str, ProviderConfig], environ: Mapping[str, str] | None = None):
        self._configs = dict(providers)
        self._environ = os.environ if environ is None else environ
        self._clients: dict[str, ChatClient] = {}
        self._routes: dict[str, Route] = {}
        # Model ids met so far, split into provider and model (only those that split: a bad
        # one raises every time), at most _MODELS_KEPT: a bundle's candidate may name any.
        self._named: dict[str, tuple[str, str]] = {}
        self._fast: SenderMaker | None = None
        self._routed: SenderMaker | None = None

    def use_sender(self, make: SenderMaker, routed: SenderMaker | None = None) -> None:
        """Clients made from now on for a provider whose route is :attr:`~Route.plain` send
        through ``make(provider config, route)`` (one sender per client) instead of httpx,
        and with ``routed``, so do the others but those only httpx can send
        (:attr:`~Route.httpx_only`); the gateway uses this for its own pool and aiohttp.
        A maker's ``described`` names it in :meth:`routes`."""
        self._fast, self._routed = make, routed

    def configured(self, model: str | None) -> bool:
        """Whether ``model`` names a provider that admiss.toml configures."""
        try:
            return split_model(model or "")[0] in self._configs
        except ProviderError:
            return False

    async def complete(self, model: str, messages: Sequence[Mapping[str, Any]],
                       params: Mapping[str, Any] | None = None, text: bytes | None = None) -> Completion:
        """Send ``messages`` to ``"NAME/model"`` through provider NAME (``text``: their exact
        JSON text, when the caller has it made: ChatClient.complete)."""
        named = self._named.get(model)
        if named is None:  # a rung's model id, split once rather than on each of its calls
            named = split_model(model)
            if len(self._named) < _MODELS_KEPT:
                self._named[model] = named
        name, model_name = named
        client = self._client(name)
        completion = await client.complete(model_name, messages, params, text)
        calls = _calls.get()
        if calls is not None:
            calls.append(Call(model, completion.usage))
        # After the call is logged: a refused reply was still billed, and its receipt says so.
        client.refuse_echo(completion)
        return completion

    def routes(self) -> dict[str, str]:
        """Each provider's route in words (its proxy and what its TLS trusts), no secret in them."""
        out = {}
        for name in sorted(self._configs):
            try:
                route = self._route(name)
            except ProviderError as exc:
                out[name] = exc.reason
                continue
            sender = getattr(self._maker(route), "described", "httpx")
            api = ", speaking Anthropic's Messages API" if self._configs[name].api == ANTHROPIC_API else ""
            out[name] = f"{route.described()}, sent by {sender}{api}"
        return out

    async def unreachable(self, names: Sequence[str], seconds: float = 5.0) -> list[str]:
        """Why each of the named providers that has a proxy cannot be reached through it (a
        GET of its base URL that gets no HTTP reply at all); an empty list when all can."""

        async def problem(name: str) -> str | None:
            config = self._configs[name]
            try:
                route = self._route(name)
            except ProviderError as exc:
                return exc.reason
            if route.proxy is None:
                return None
            why = await HttpxSender(config, route).reachable(config.base_url, min(seconds, config.timeout_s))
            return None if why is None else (f"provider {name}: cannot reach {shown_url(config.base_url)} through "
                                             f"proxy {shown_url(route.proxy)}: {why}")

        found = await asyncio.gather(*(problem(name) for name in names if name in self._configs))
        return [p for p in found if p is not None]

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        await asyncio.gather(*(client.aclose() for client in clients.values()))

    def _route(self, name: str) -> Route:
        if name not in self._routes:
            self._routes[name] = route_for(self._configs[name], self._environ)
        return self._routes[name]

    def _maker(self, route: Route) -> SenderMaker | None:
        """What makes the sender of ``route``'s calls; None for httpx's."""
        if route.plain and self._fast is not None:
            return self._fast
        return None if route.httpx_only else self._routed

    def _client(self, name: str) -> ChatClient:
        if name not in self._configs:
            raise ProviderError(f"no [providers.{name}] table in admiss.toml")
        if name not in self._clients:
            config, route = self._configs[name], self._route(name)
            make = self._maker(route)
            sender = make(config, route) if make is not None else None
            kind = MessagesClient if config.api == ANTHROPIC_API else ChatClient
            self._clients[name] = kind(config, self._environ, sender, route)
        return self._clients[name]


def _completion(response: Reply, provider: str, secrets: Callable[[], Sequence[str]]) -> Completion:
    """The completion of a chat-completions reply; ProviderError when it is none, quoting
    the reply without ``secrets()`` (asked for only then: a reply that reads is the usual case)."""
    try:
        data = response.json()
        message = data["choices"][0]["message"]
        text = message.get("content")
        tool_calls = _tool_calls(message.get("tool_calls"))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
        shown = clipped(response.text, DETAIL_CHARS, secrets())
        raise ProviderError(f"provider {provider}: reply is not a chat completion: {shown!r}") from None
    if tool_calls and (text is None or text == ""):
        text = None  # a reply of tool calls only
    elif not isinstance(text, str):
        # A well-formed completion without text is the model declining (a refusal, a content
        # filter): about what the request carried, not a fault of the provider.
        raise ProviderError(f"provider {provider}: reply has no text content (the model declined)",
                            content_refused=True)
    finish = data["choices"][0].get("finish_reason")
    return Completion(text, _usage(data.get("usage")), finish if isinstance(finish, str) else None, tool_calls)


def _tool_calls(calls: Any) -> tuple[dict[str, Any], ...]:
    """The reply's tool calls in OpenAI's shape, rebuilt from the fields read (TypeError or
    KeyError when one is not a string), so nothing else an upstream put in them goes on."""
    if calls is None:
        return ()
    out = []
    for call in calls:
        function = call["function"]
        values = (call["id"], function["name"], function["arguments"])
        if not all(isinstance(v, str) for v in values):
            raise TypeError("a tool call's id, name and arguments must be strings")
        out.append({"id": values[0], "type": "function", "function": {"name": values[1], "arguments": values[2]}})
    return tuple(out)


def _usage(data: Any) -> Usage | None:
    if not isinstance(data, dict):
        return None
    return _counted((data.get("prompt_tokens"),), data.get("completion_tokens"))


def _counted(inputs: Sequence[Any], output: Any) -> Usage | None:
    """The usage of a reply's input counts (summed) and output count, as the server sent
    them: None unless each is a count, out of bounds when one is past belief."""
    if not inputs:
        return None
    for n in (*inputs, output):  # a loop, not all() over a generator: this runs on every reply
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            return None
    if max(sum(inputs), output) > MAX_CALL_TOKENS:
        return Usage(out_of_bounds=True)
    return Usage(sum(inputs), output)


def _error_detail(response: Reply, secrets: Sequence[str]) -> str:
    """The server's own error message when it sent one (OpenAI's ``error.message`` shape)."""
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError, RecursionError):
        message = response.text
    message = str(message).strip()
    return f": {clipped(message, DETAIL_CHARS, secrets)}" if message else ""


def describe(exc: BaseException) -> str:
    """The first message along the exception's causes (httpx's often wrap an empty one)."""
    seen: BaseException | None = exc
    while seen is not None:
        if str(seen):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    return type(exc).__name__


# delay-seconds is 1*DIGIT (RFC 9110); more digits than this is longer than any ceiling.
_DELAY_SECONDS = re.compile(r"[0-9]{1,12}")


def retry_after_s(value: str | None, now: datetime | None = None) -> float | None:
    """The wait a ``Retry-After`` value asks for, in seconds, or None when it asks for none
    that can be read (absent, ``nan``, ``-1``, ``1.5``, garbage, a date that is no date).
    A date in the past asks for 0; a huge or far-future one for ``inf`` (past any ceiling)."""
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(text) if _DELAY_SECONDS.fullmatch(text) else math.inf
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    try:
        return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())
    except OverflowError:
        return math.inf
