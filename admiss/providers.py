"""An OpenAI-compatible chat-completions client (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM).

A model id ``"NAME/model"`` goes to ``[providers.NAME]`` with model ``model``. Every failure
(no such provider, unset key, connection, HTTP status, timeout, malformed reply) raises
:class:`ProviderError`, which the gates turn into an abstain with a fault: the gate's, except
when the request was refused for what it carried (``content_refused``: HTTP 400, 413 or 422,
e.g. a candidate too long for the model's context, or a completion without text, the model
declining), which is the candidate's.

Only idempotent failures are retried: connection errors (the request never arrived), 429,
502, 503 and 504 (the server says it did not do the work). A 500 or a read timeout may have
been billed, so it is not repeated.

Each request is bounded as a whole: ``timeout_s`` is a deadline from connecting to the
reply's last byte (a server dripping one byte a second is cut off, not waited on for each
byte), and a reply longer than ``max_reply_bytes`` (decompressed) is cut off and fails.

The bytes go through a :class:`Sender`: httpx's pool by default (:class:`HttpxSender`); the
gateway plugs in a connection pool of its own (``admiss/serve/transport.py``), which costs
far less CPU per call at the concurrency it lives at. Timeouts, retries and error reasons stay here, the same
for every sender.
"""

from __future__ import annotations

import asyncio
import json
import contextvars
import os
from typing import Any, Awaitable, Callable, Mapping, Protocol, Sequence, TypeVar

import attrs
import httpx

from admiss import jsonio
from admiss.config import Config, ProviderConfig, provider_name
from admiss.redact import clipped, holds_secret, key_values, redact, url_secrets

RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Statuses by which a server refuses a request for its content (too long, filtered, malformed
# text), not for the provider's configuration or health: the candidate's fault, not the gate's.
CONTENT_REFUSED_STATUSES = frozenset({400, 413, 422})
# How much of a server's own error text a reason quotes (after redaction).
DETAIL_CHARS = 200
# Backoff doubles from BACKOFF_S per retry, and a server's Retry-After is honoured up to MAX_DELAY_S.
BACKOFF_S = 0.25
MAX_DELAY_S = 4.0
_JSON_HEADERS = {"Content-Type": "application/json"}


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


class HttpxSender:
    """The default sender: one pooled ``httpx.AsyncClient``, made on first use."""

    def __init__(self, timeout_s: float):
        self._timeout = httpx.Timeout(timeout_s)
        self._http: httpx.AsyncClient | None = None

    async def post(self, url: str, body: bytes, headers: Mapping[str, str], max_bytes: int) -> Reply:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self._timeout)
        try:
            async with self._http.stream("POST", url, content=body, headers=headers) as response:
                data = bytearray()
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if len(data) > max_bytes:
                        raise ReplyTooLong
                return Reply(response.status_code, response.headers, bytes(data))
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise CannotConnect(_describe(exc)) from None
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.HTTPError as exc:
            raise SendFailed(_describe(exc)) from None

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None


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
    """One provider's endpoint over one :class:`Sender` (httpx's by default)."""

    def __init__(self, config: ProviderConfig, environ: Mapping[str, str] | None = None,
                 sender: Sender | None = None):
        self.config = config
        self._environ = os.environ if environ is None else environ
        self._sender = sender if sender is not None else HttpxSender(config.timeout_s)
        self._url = f"{config.base_url}/chat/completions"
        self._url_secrets = url_secrets([config.base_url])

    async def complete(self, model: str, messages: Sequence[Mapping[str, Any]],
                       params: Mapping[str, Any] | None = None) -> Completion:
        """The reply to ``messages`` from ``model`` (the name without the provider prefix);
        ``params`` adds request fields such as ``temperature``."""
        try:
            headers = self._headers()
            body = jsonio.dumps_line({**(params or {}), "model": model, "messages": list(messages)})
            response = await self._post_with_retries(body, headers)
            return _completion(response, self.config.name, self.secrets())
        except ProviderError as exc:
            # Every reason this client gives passes here: a server or a connection error may
            # quote the key it was sent or the URL's user-info.
            raise ProviderError(redact(exc.reason, self.secrets()), exc.content_refused) from None

    def refuse_echo(self, completion: Completion) -> None:
        """ProviderError when ``completion`` repeats the credentials this client sent:
        whatever a server says, admiss never hands them on (to a client, a judge's reason, a
        receipt). Refused as the server's fault, so a rung escalates and a gate abstains."""
        # The answer holds the text and the tool calls' names and arguments: all of it may be served.
        ids = " ".join(call["id"] for call in completion.tool_calls)
        if holds_secret(f"{completion.answer}\n{ids}\n{completion.finish_reason or ''}", self.secrets()):
            raise ProviderError(f"{self._where()}: the reply repeats the credentials it was sent "
                                "(its key or URL user-info); refused")

    def secrets(self) -> tuple[str, ...]:
        """What this client must never show: its key's value and its URL's user-info."""
        return key_values([self.config.api_key_env], self._environ) + self._url_secrets

    async def aclose(self) -> None:
        await self._sender.aclose()

    def _headers(self) -> dict[str, str]:
        env_name = self.config.api_key_env
        if env_name is None:
            return _JSON_HEADERS
        key = self._environ.get(env_name)
        if not key:
            raise ProviderError(
                f"environment variable {env_name} is not set (api_key_env of [providers.{self.config.name}])"
            )
        return {**_JSON_HEADERS, "Authorization": f"Bearer {key}"}

    async def _post_with_retries(self, body: bytes, headers: Mapping[str, str]) -> Reply:
        url, config = self._url, self.config
        attempt = 0
        while True:
            final = attempt >= config.max_retries
            try:
                response = await _within(config.timeout_s, self._sender.post(url, body, headers, config.max_reply_bytes))
            except CannotConnect as exc:
                if final:
                    raise ProviderError(f"{self._where()}: cannot connect to {url}: {exc}") from None
                delay = _backoff(attempt)
            except (TimeoutError, asyncio.TimeoutError):
                raise ProviderError(f"{self._where()}: no reply within {config.timeout_s:g}s "
                                    "(a deadline for the whole reply)") from None
            except ReplyTooLong:
                raise ProviderError(f"{self._where()}: reply longer than {config.max_reply_bytes} bytes; "
                                    "cut off (max_reply_bytes)") from None
            except SendFailed as exc:
                raise ProviderError(f"{self._where()}: request failed: {exc}") from None
            else:
                if final or response.status_code not in RETRY_STATUSES:
                    return self._successful(response, attempt)
                delay = _retry_delay(attempt, response)
            attempt += 1
            await asyncio.sleep(delay)

    def _successful(self, response: Reply, retries: int) -> Reply:
        if response.is_success:
            return response
        tried = f" after {retries} retries" if retries else ""
        detail = _error_detail(response, self.secrets())
        raise ProviderError(f"{self._where()}: HTTP {response.status_code}{tried}{detail}",
                            content_refused=response.status_code in CONTENT_REFUSED_STATUSES)

    def _where(self) -> str:
        return f"provider {self.config.name}"


class Providers:
    """The clients of one run, one per configured provider; close them with :meth:`aclose`.

    Clients are made lazily inside the running event loop. Use one event loop per run, or
    call :meth:`aclose` before leaving a loop so the next loop gets fresh connections.
    """

    def __init__(self, providers: Mapping[str, ProviderConfig], environ: Mapping[str, str] | None = None):
        self._configs = dict(providers)
        self._environ = environ
        self._clients: dict[str, ChatClient] = {}
        self._sender: Callable[[ProviderConfig], Sender] | None = None

    def use_sender(self, make: Callable[[ProviderConfig], Sender]) -> None:
        """Clients made from now on send through ``make(provider config)`` (one sender per
        client) instead of httpx; the gateway uses this for its own pool."""
        self._sender = make

    def configured(self, model: str | None) -> bool:
        """Whether ``model`` names a provider that admiss.toml configures."""
        try:
            return split_model(model or "")[0] in self._configs
        except ProviderError:
            return False

    async def complete(self, model: str, messages: Sequence[Mapping[str, Any]],
                       params: Mapping[str, Any] | None = None) -> Completion:
        """Send ``messages`` to ``"NAME/model"`` through provider NAME."""
        name, model_name = split_model(model)
        client = self._client(name)
        completion = await client.complete(model_name, messages, params)
        calls = _calls.get()
        if calls is not None:
            calls.append(Call(model, completion.usage))
        # After the call is logged: a refused reply was still billed, and its receipt says so.
        client.refuse_echo(completion)
        return completion

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        await asyncio.gather(*(client.aclose() for client in clients.values()))

    def _client(self, name: str) -> ChatClient:
        if name not in self._configs:
            raise ProviderError(f"no [providers.{name}] table in admiss.toml")
        if name not in self._clients:
            config = self._configs[name]
            self._clients[name] = ChatClient(config, self._environ, self._sender(config) if self._sender else None)
        return self._clients[name]


def _completion(response: Reply, provider: str, secrets: Sequence[str]) -> Completion:
    try:
        data = response.json()
        message = data["choices"][0]["message"]
        text = message.get("content")
        tool_calls = _tool_calls(message.get("tool_calls"))
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
        shown = clipped(response.text, DETAIL_CHARS, secrets)
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
    prompt, completion = data.get("prompt_tokens"), data.get("completion_tokens")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (prompt, completion)):
        return None
    if max(prompt, completion) > MAX_CALL_TOKENS:
        return Usage(out_of_bounds=True)
    return Usage(prompt, completion)


def _error_detail(response: Reply, secrets: Sequence[str]) -> str:
    """The server's own error message when it sent one (OpenAI's ``error.message`` shape)."""
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError, RecursionError):
        message = response.text
    message = str(message).strip()
    return f": {clipped(message, DETAIL_CHARS, secrets)}" if message else ""


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def _backoff(attempt: int) -> float:
    return min(BACKOFF_S * 2**attempt, MAX_DELAY_S)


def _retry_delay(attempt: int, response: Reply) -> float:
    try:
        asked = float(response.headers.get("retry-after", ""))
    except ValueError:
        asked = 0.0
    return min(max(asked, _backoff(attempt)), MAX_DELAY_S)
