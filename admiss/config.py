"""``admiss.toml``: model providers, prices and gate defaults.

Search order (first hit wins): an explicit ``--config`` path, ``admiss.toml`` beside the
rubric, ``admiss.toml`` in the working folder. No file means the defaults below.

```toml
[providers.openai]                # a model "openai/gpt-5" goes to this provider
base_url = "https://api.openai.com/v1"
api = "openai"                    # optional: "openai" (chat completions, the default) or "anthropic" (Messages)
api_key_env = "OPENAI_API_KEY"    # optional: no key, no Authorization header
timeout_s = 60                    # optional: each request, connect to last byte of the reply
max_retries = 2                   # optional, retries of idempotent failures only
max_reply_bytes = 8388608         # optional: a longer reply is cut off and fails the call
retry_budget_s = 120              # optional: the most a call may take, retries and waits included
max_retry_after_s = 30            # optional: the longest Retry-After a retry waits for
proxy = "http://proxy:3128"       # optional: wins over HTTPS_PROXY etc.; "" for none (docs/gates.md)
ca_file = "corp-ca.pem"           # optional: trust only these CAs (default: the OS store)
client_cert = "client.pem"        # optional: a client certificate (PEM), and its key:
client_key = "client.key"         # optional when client_cert holds the key too
http2 = false                     # optional: HTTP/2 where the server offers it
idle_timeout_s = 30               # optional: a kept connection idle this long is closed

[providers.anthropic]             # Anthropic's Messages API: POST {base_url}/v1/messages
base_url = "https://api.anthropic.com"
api = "anthropic"
api_key_env = "ANTHROPIC_API_KEY" # sent as x-api-key
max_tokens = 4096                 # optional, api = "anthropic" only: max_tokens of a call that sets none

[prices."openai/gpt-5"]
input_usd_per_mtok = 1.25
output_usd_per_mtok = 10.0

[gates]
subprocess_usd_per_second = 0.0   # wall time of subprocess gates, priced
budget_rate = 0.5                 # error budget: disable past this error rate ...
budget_window = 20                # ... over the last N runs of the gate ...
budget_min_runs = 5               # ... once it has run at least this often
on_disabled = "fail"              # a gate disabled by its budget counts as a fail, or "skip"
pass_env = ["PYTHONPATH"]         # more variables for subprocess gates (never a provider key)

[rungs.serve.draft]               # how the live cascade calls rung "draft" of CHAIN serve
temperature = 0.2                 # optional, 0 to 2
max_tokens = 512                  # optional
system = "Answer in JSON."        # optional: a system message put before the request's

[serve]                           # admiss serve (docs/serve.md)
store = "admiss-receipts.db"      # the receipt store, relative to this file, or "postgresql://..." (a fleet)
api_keys_env = "ADMISS_API_KEYS"  # optional: comma-separated bearer keys clients must send
api_keys = []                     # optional: keys written here (prefer the environment)
grace_s = 10                      # on SIGTERM, how long in-flight requests may finish
max_request_bytes = 10485760      # a larger chat request body gets 413, unread
header_timeout_s = 10             # a request's headers must arrive within this, or the connection closes
body_timeout_s = 30               # a chat request's body must arrive within this, or 408
max_connections = 512             # open connections per process; past it a new one is closed at once
tool_evidence = "client"          # or "served": a conversation's tool call is evidence only if this gateway served it

[telemetry]                       # OpenTelemetry out (docs/integrations/otel.md); OTEL_* variables win
endpoint = "http://127.0.0.1:4318"  # an OTLP/HTTP collector; the signals' paths (/v1/traces, /v1/logs) are added
service_name = "admiss"           # optional: the resource's service.name
traces = true                     # optional: the gateway's spans
logs = true                       # optional: the gen_ai.evaluation.result events
```

Unknown tables and keys are errors (a misspelt ``api_key_env`` must not silently send
requests without a key).
"""

from __future__ import annotations

import difflib
import math
import re
import sys
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import urlsplit

import attrs

from admiss.configfile import CONFIG_NAME, find_config  # noqa: F401 (re-exported: admiss.config.find_config)
from admiss.errors import Diagnostic, InputError
from admiss.files import reading
from admiss.redact import redact
from admiss.source import NO_SPAN, Source, Span

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_PROVIDER_TIMEOUT_S = 60.0
DEFAULT_PROVIDER_MAX_RETRIES = 2
DEFAULT_PROVIDER_MAX_REPLY_BYTES = 8 * 1024 * 1024
DEFAULT_PROVIDER_RETRY_BUDGET_S = 120.0
DEFAULT_PROVIDER_MAX_RETRY_AFTER_S = 30.0
DEFAULT_PROVIDER_IDLE_TIMEOUT_S = 30.0
# The APIs a provider may speak: OpenAI's chat completions (and every server compatible with
# it), Anthropic's Messages (admiss/anthropic_api.py).
OPENAI_API, ANTHROPIC_API = "openai", "anthropic"
PROVIDER_APIS = (OPENAI_API, ANTHROPIC_API)
# The Messages API requires max_tokens: what a call that sets none asks for.
DEFAULT_ANTHROPIC_MAX_TOKENS = 4096
PROXY_SCHEMES = ("http://", "https://", "socks5://", "socks5h://")
ON_DISABLED = ("fail", "skip")


@attrs.frozen
class ProviderConfig:
    """One ``[providers.NAME]`` table: an OpenAI-compatible chat-completions endpoint, or
    Anthropic's Messages API (``api = "anthropic"``)."""

    name: str
    base_url: str
    api_key_env: str | None = None
    # A deadline for the whole request, from connecting to the reply's last byte.
    timeout_s: float = DEFAULT_PROVIDER_TIMEOUT_S
    max_retries: int = DEFAULT_PROVIDER_MAX_RETRIES
    max_reply_bytes: int = DEFAULT_PROVIDER_MAX_REPLY_BYTES
    # The most time one call may take, every attempt and wait between them included.
    retry_budget_s: float = DEFAULT_PROVIDER_RETRY_BUDGET_S
    # A Retry-After longer than this is not waited for: the call fails at once.
    max_retry_after_s: float = DEFAULT_PROVIDER_MAX_RETRY_AFTER_S
    # None: the proxy the environment names (HTTPS_PROXY, ..., NO_PROXY); "": none at all.
    proxy: str | None = None
    # Trust only the CAs in this PEM file (default: the OS store, see admiss/providers.py).
    ca_file: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    http2: bool = False
    # A kept connection unused this long is closed rather than reused (a NAT may have dropped it).
    idle_timeout_s: float = DEFAULT_PROVIDER_IDLE_TIMEOUT_S
    # Which API the endpoint speaks: OPENAI_API or ANTHROPIC_API.
    api: str = OPENAI_API
    # api = "anthropic" only: the max_tokens of a call that sets none (the API requires one).
    max_tokens: int = DEFAULT_ANTHROPIC_MAX_TOKENS


@attrs.frozen
class Price:
    """One ``[prices."provider/model"]`` table, in US dollars per million tokens."""

    input_usd_per_mtok: float
    output_usd_per_mtok: float

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_usd_per_mtok + output_tokens * self.output_usd_per_mtok) / 1e6


@attrs.frozen
class GateDefaults:
    """The ``[gates]`` table. A gate's own ``BUDGET rate WINDOW n`` overrides the budget."""

    subprocess_usd_per_second: float = 0.0
    budget_rate: float = 0.5
    budget_window: int = 20
    budget_min_runs: int = 5
    # What a gate disabled by its error budget counts as: "fail" or "skip".
    on_disabled: str = "fail"
    # Environment variables subprocess gates get besides the base list (gates/subprocess.py).
    pass_env: tuple[str, ...] = ()


@attrs.frozen
class RungSettings:
    """One ``[rungs.CHAIN.RUNG]`` table: how the live cascade calls that rung's model."""

    temperature: float | None = None
    max_tokens: int | None = None
    system: str | None = None

    def params(self) -> dict[str, Any]:
        """The chat-completions request fields these settings set."""
        fields = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        return {key: value for key, value in fields.items() if value is not None}


DEFAULT_STORE = "admiss-receipts.db"
DEFAULT_GRACE_S = 10.0
# A chat request's body: text messages only, so 10 MiB is a long conversation.
DEFAULT_MAX_REQUEST_BYTES = 10 * 1024 * 1024
# Slow clients: how long a request's headers and its body may take to arrive, and how many
# connections one process holds open (past it a new one is closed at once). A client on a
# slow link sends 10 MiB in 30 s at 3 Mbit/s; 512 stays well inside a default limit of
# 1024 open files, which the gateway's upstream connections and the store share.
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 30.0
DEFAULT_MAX_CONNECTIONS = 512


@attrs.frozen
class ServeSettings:
    """The ``[serve]`` table of ``admiss serve``."""

    # An SQLite file (relative paths are resolved against the config file's folder when
    # read from a file), or a postgresql:// URL kept as written (admiss/receipts/).
    store: Path | str = Path(DEFAULT_STORE)
    api_keys: tuple[str, ...] = ()
    api_keys_env: str | None = None
    grace_s: float = DEFAULT_GRACE_S
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    # Which tool calls of a request's conversation count as evidence: every one the client
    # sends ("client"), or only those this gateway served ("served"; docs/serve.md).
    tool_evidence: str = "client"


@attrs.frozen
class TelemetrySettings:
    """The ``[telemetry]`` table: OpenTelemetry out (admiss/integrations/otel.py). The
    standard ``OTEL_*`` environment variables win over it."""

    endpoint: str | None = None
    service_name: str = "admiss"
    traces: bool = True
    logs: bool = True


@attrs.frozen
class Config:
    providers: dict[str, ProviderConfig] = attrs.field(factory=dict)
    # Keyed by the case-folded model id, so "OpenAI/GPT-5" finds "openai/gpt-5".
    prices: dict[str, Price] = attrs.field(factory=dict)
    gates: GateDefaults = GateDefaults()
    # Chain name -> rung name -> settings.
    rungs: dict[str, dict[str, RungSettings]] = attrs.field(factory=dict)
    serve: ServeSettings = ServeSettings()
    # None when the file has no [telemetry] table.
    telemetry: TelemetrySettings | None = None
    # The file this came from (None for the defaults), for messages only.
    path: Path | None = attrs.field(default=None, eq=False)

    def price_for(self, model: str) -> Price | None:
        return self.prices.get(model.casefold())

    def rung_settings(self, chain: str, rung: str) -> RungSettings:
        return self.rungs.get(chain, {}).get(rung, RungSettings())


def provider_name(model: str) -> str | None:
    """The provider part of a model id ``"NAME/model"``, or None when it names no provider."""
    name, slash, rest = model.partition("/")
    return name if slash and name and rest else None


@attrs.frozen
class ModelCall:
    """A model that some part of a rubric will call, and where the rubric asks for it."""

    model: str
    # Who calls it, for the message: "judge gate", "rung strong", ...
    caller: str
    span: Span = NO_SPAN


def missing_providers(config: Config, calls: Iterable[ModelCall], file: str | None = None,
                      offline_possible: bool = True) -> list[Diagnostic]:
    """E140 for each call whose model has no ``[providers.NAME]`` table in ``config``.

    Checked before any bundle, so a missing table is a configuration error and never a
    gate that silently abstains (and, left fail_open, passes) on every bundle.
    """
    found = []
    for call in calls:
        name = provider_name(call.model)
        if name is not None and name in config.providers:
            continue
        missing = (f"no [providers.{name}] table in {_config_name(config)}" if name is not None
                   else "the model names no provider (write it as \"provider/model\")")
        found.append(Diagnostic("E140", f"{call.caller} calls {call.model}, but {missing}", call.span,
                                hint=_ways_out(name, config, offline_possible), file=file))
    return found


def _config_name(config: Config) -> str:
    return str(config.path) if config.path is not None else "admiss.toml (none found beside the rubric or in the working folder)"


def _ways_out(name: str | None, config: Config, offline_possible: bool = True) -> str:
    where = str(config.path) if config.path is not None else CONFIG_NAME
    add = f"add [providers.{name}] with its base_url to {where}" if name else "name the provider in the model id"
    if not offline_possible:  # a gateway serves live: it has no offline mode to suggest
        return add
    return f"{add}, or run offline (admiss check --offline; admiss.load(..., offline=True)): gates that need a model then abstain"


def load_config(explicit: Path | None = None, rubric: Path | None = None, cwd: Path | None = None) -> Config:
    """The configuration found by :func:`find_config`, or the defaults when there is none."""
    path = find_config(explicit, rubric, cwd)
    return Config() if path is None else read_config(path)


def read_config(path: Path) -> Config:
    """Parse and check one ``admiss.toml``; every mistake is an InputError at file:line:col."""
    with reading(path):  # located, as a rubric's or bundle's E001 is (not the codec's own words)
        text = path.read_text(encoding="utf-8")
    # Errors quote source lines: the one they show has the client keys' values masked.
    source = Source(str(path), _keys_masked(text))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_syntax_error(exc, source) from None
    return _Reader(source).config(data, path)


_API_KEYS = re.compile(r"""(?:\bapi_keys\b|"api_keys"|'api_keys')\s*=""")
_TOML_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"?|\'[^\'\n]*\'?')


def _keys_masked(text: str) -> str:
    """``text`` with every string of an ``api_keys`` value (an array, over lines, or broken)
    starred out character for character, so a quoted line keeps its columns."""
    out = list(text)
    for match in _API_KEYS.finditer(text):
        at, depth = match.end(), 0
        while at < len(text) and not (depth == 0 and text[at] == "\n"):
            char = text[at]
            if char in "\"'":
                end = _TOML_STRING.match(text, at).end()
                closed = end - at > 1 and text[end - 1] == char
                out[at + 1:end - closed] = "*" * (end - closed - at - 1)
                at = end
                if depth == 0:
                    break
                continue
            depth += {"[": 1, "]": -1}.get(char, 0)
            if depth <= 0 and char == "]":
                break
            at += 1
    return "".join(out)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def toml_syntax_error(exc: Exception, source: Source) -> InputError:
    # tomllib only puts the position in the message text (attributes came in 3.14).
    message = str(exc)
    match = _TOML_POSITION.search(message)
    span = Span.point(int(match[1]), int(match[2])) if match else NO_SPAN
    message = _TOML_POSITION.sub("", message)
    return InputError([Diagnostic("E001", f"TOML syntax error: {message}", span=span, file=source.name)], source)


_PROVIDER_KEYS = tuple(f.name for f in attrs.fields(ProviderConfig) if f.name != "name")
_PRICE_KEYS = ("input_usd_per_mtok", "output_usd_per_mtok")
_GATE_KEYS = tuple(f.name for f in attrs.fields(GateDefaults))
_RUNG_KEYS = tuple(f.name for f in attrs.fields(RungSettings))
TOOL_EVIDENCE = ("client", "served")
STORE_SCHEMES = ("postgresql", "postgres")
_SERVE_KEYS = tuple(f.name for f in attrs.fields(ServeSettings))
_TELEMETRY_KEYS = tuple(f.name for f in attrs.fields(TelemetrySettings))
_TABLES = ("providers", "prices", "gates", "rungs", "serve", "telemetry")
_REQUIRED = object()


@attrs.define
class _Reader:
    """Checks the parsed TOML table by table, locating each mistake in the source text."""

    source: Source

    def config(self, data: dict, path: Path) -> Config:
        self._known_keys(data, _TABLES, ())
        providers = {name: self._provider(name, table, path.parent)
                     for name, table in self._tables(data, "providers").items()}
        prices = {model.casefold(): self._price(model, table) for model, table in self._tables(data, "prices").items()}
        chains = self._tables(data, "rungs")
        rungs = {chain: {rung: self._rung(chain, rung, table) for rung, table in self._tables(chains, ("rungs", chain)).items()}
                 for chain in chains}
        return Config(providers=providers, prices=prices, gates=self._gates(data, providers), rungs=rungs,
                      serve=self._serve(data, path), telemetry=self._telemetry(data), path=path)

    def _tables(self, data: dict, name: str | tuple[str, ...]) -> dict[str, dict]:
        where = (name,) if isinstance(name, str) else name
        tables = self._typed(data, where[:-1], where[-1], dict, "a table", default={})
        for key, table in tables.items():
            self._typed(tables, where, key, dict, "a table")
        return tables

    def _rung(self, chain: str, rung: str, table: dict) -> RungSettings:
        where = ("rungs", chain, rung)
        self._known_keys(table, _RUNG_KEYS, where)
        temperature = self._typed(table, where, "temperature", (int, float), "a number", default=None)
        if temperature is not None and not 0 <= temperature <= 2:
            self._fail(where, "temperature", f"temperature must be between 0 and 2, not {temperature}")
        max_tokens = self._typed(table, where, "max_tokens", int, "an integer", default=None)
        if max_tokens is not None and max_tokens < 1:
            self._fail(where, "max_tokens", f"max_tokens must be at least 1, not {max_tokens}")
        return RungSettings(
            temperature=None if temperature is None else float(temperature),
            max_tokens=max_tokens,
            system=self._typed(table, where, "system", str, "a string", default=None),
        )

    def _serve(self, data: dict, path: Path) -> ServeSettings:
        where = ("serve",)
        table = self._typed(data, (), "serve", dict, "a table", default={})
        self._known_keys(table, _SERVE_KEYS, where)
        keys = self._typed(table, where, "api_keys", list, "an array of strings", default=[])
        if not all(isinstance(key, str) and key.strip() for key in keys):
            self._fail(where, "api_keys", "serve.api_keys must hold non-empty strings")
        return ServeSettings(
            store=self._store(table, where, path.parent),
            api_keys=tuple(keys),
            api_keys_env=self._typed(table, where, "api_keys_env", str, "a string", default=None),
            grace_s=self._number(table, where, "grace_s", DEFAULT_GRACE_S),
            max_request_bytes=self._count(table, where, "max_request_bytes", DEFAULT_MAX_REQUEST_BYTES, minimum=1),
            header_timeout_s=self._number(table, where, "header_timeout_s", DEFAULT_HEADER_TIMEOUT_S, positive=True),
            body_timeout_s=self._number(table, where, "body_timeout_s", DEFAULT_BODY_TIMEOUT_S, positive=True),
            max_connections=self._count(table, where, "max_connections", DEFAULT_MAX_CONNECTIONS, minimum=1),
            tool_evidence=self._choice(table, where, "tool_evidence", TOOL_EVIDENCE, "client"),
        )

    def _telemetry(self, data: dict) -> TelemetrySettings | None:
        if "telemetry" not in data:
            return None
        where = ("telemetry",)
        table = self._typed(data, (), "telemetry", dict, "a table")
        self._known_keys(table, _TELEMETRY_KEYS, where)
        endpoint = self._typed(table, where, "endpoint", str, "a string", default=None)
        if endpoint is not None and not endpoint.startswith(("http://", "https://")):
            self._fail(where, "endpoint", f"telemetry.endpoint must start with http:// or https://, not {endpoint!r}",
                       hint="the OTLP/HTTP collector's base URL, as in OTEL_EXPORTER_OTLP_ENDPOINT")
        service_name = self._typed(table, where, "service_name", str, "a string", default="admiss")
        if not service_name.strip():
            self._fail(where, "service_name", "telemetry.service_name must not be empty")
        return TelemetrySettings(
            endpoint=endpoint.rstrip("/") if endpoint else None,
            service_name=service_name,
            traces=self._typed(table, where, "traces", bool, "true or false", default=True),
            logs=self._typed(table, where, "logs", bool, "true or false", default=True),
        )

    def _store(self, table: dict, where: tuple[str, ...], folder: Path) -> Path | str:
        """``[serve] store``: a postgresql:// URL as written, else a path from ``folder``."""
        value = self._typed(table, where, "store", str, "a string", default=DEFAULT_STORE)
        scheme, found, rest = value.partition("://")
        if not found:
            return folder / value
        shown = redact(value)  # the message quotes the URL: never its password
        if scheme not in STORE_SCHEMES:
            self._fail(where, "store", f"serve.store must be a file path or a postgresql:// URL, not {shown!r}",
                       hint="e.g. store = \"postgresql://admiss@db.internal:5432/admiss\"")
        parts = urlsplit(value)
        try:
            parts.port  # noqa: B018 - urlsplit checks the port only when asked for it
        except ValueError:
            self._fail(where, "store", f"serve.store {shown!r} has a port that is not a number from 0 to 65535")
        if not parts.hostname and "host=" not in parts.query:
            self._fail(where, "store", f"serve.store {shown!r} names no database server",
                       hint="postgresql://USER@HOST:PORT/DATABASE; give the password in PGPASSWORD or ~/.pgpass")
        return value

    def _provider(self, name: str, table: dict, folder: Path) -> ProviderConfig:
        where = ("providers", name)
        self._known_keys(table, _PROVIDER_KEYS, where)
        base_url = self._typed(table, where, "base_url", str, "a string")
        if not base_url.startswith(("http://", "https://")):
            self._fail(where, "base_url", f"base_url must start with http:// or https://, not {base_url!r}")
        api_key_env = self._typed(table, where, "api_key_env", str, "a string", default=None)
        client_cert = self._file(table, where, "client_cert", folder)
        client_key = self._file(table, where, "client_key", folder)
        if client_key is not None and client_cert is None:
            self._fail(where, "client_key", "client_key needs client_cert (the certificate it belongs to)")
        api = self._api(table, where, base_url)
        return ProviderConfig(
            name=name,
            base_url=base_url.rstrip("/"),
            api=api,
            max_tokens=self._count(table, where, "max_tokens", DEFAULT_ANTHROPIC_MAX_TOKENS, minimum=1),
            api_key_env=api_key_env,
            timeout_s=self._number(table, where, "timeout_s", DEFAULT_PROVIDER_TIMEOUT_S, positive=True),
            max_retries=self._count(table, where, "max_retries", DEFAULT_PROVIDER_MAX_RETRIES, minimum=0),
            max_reply_bytes=self._count(table, where, "max_reply_bytes", DEFAULT_PROVIDER_MAX_REPLY_BYTES, minimum=1),
            retry_budget_s=self._number(table, where, "retry_budget_s", DEFAULT_PROVIDER_RETRY_BUDGET_S, positive=True),
            max_retry_after_s=self._number(table, where, "max_retry_after_s", DEFAULT_PROVIDER_MAX_RETRY_AFTER_S),
            proxy=self._proxy(table, where),
            ca_file=self._file(table, where, "ca_file", folder),
            client_cert=client_cert,
            client_key=client_key,
            http2=self._typed(table, where, "http2", bool, "true or false", default=False),
            idle_timeout_s=self._number(table, where, "idle_timeout_s", DEFAULT_PROVIDER_IDLE_TIMEOUT_S, positive=True),
        )

    def _api(self, table: dict, where: tuple[str, ...], base_url: str) -> str:
        api = self._choice(table, where, "api", PROVIDER_APIS, OPENAI_API,
                           hint='"openai" for OpenAI\'s chat completions and servers compatible with it (vLLM, '
                                'Ollama, llama.cpp, LiteLLM), "anthropic" for Anthropic\'s Messages API')
        if api == OPENAI_API and "max_tokens" in table:
            self._fail(where, "max_tokens", "max_tokens applies to api = \"anthropic\" only",
                       hint="an OpenAI-compatible call sends max_tokens only when it sets one ([rungs.CHAIN.RUNG])")
        if api == ANTHROPIC_API and base_url.rstrip("/").endswith("/v1"):
            self._fail(where, "base_url", f"base_url {base_url!r} ends in /v1, and admiss adds /v1/messages to it",
                       hint='give the server\'s root, as Anthropic\'s clients take it: "https://api.anthropic.com"')
        return api

    def _proxy(self, table: dict, where: tuple[str, ...]) -> str | None:
        proxy = self._typed(table, where, "proxy", str, "a string", default=None)
        if proxy and not proxy.startswith(PROXY_SCHEMES):
            self._fail(where, "proxy", f"proxy must start with {', '.join(PROXY_SCHEMES)} (or be \"\" for none)",
                       hint="the proxy's URL, as in HTTPS_PROXY")
        return proxy

    def _file(self, table: dict, where: tuple[str, ...], key: str, folder: Path) -> Path | None:
        """A file the key names, relative to the config's folder; an error when it cannot be read."""
        name = self._typed(table, where, key, str, "a file name", default=None)
        if name is None:
            return None
        path = folder / name
        if not path.is_file():
            self._fail(where, key, f"{_dotted(where, key)} names {name}, which is not a file",
                       hint=f"looked for {path}")
        return path

    def _price(self, model: str, table: dict) -> Price:
        where = ("prices", model)
        self._known_keys(table, _PRICE_KEYS, where)
        return Price(*(self._number(table, where, key) for key in _PRICE_KEYS))

    def _gates(self, data: dict, providers: dict[str, ProviderConfig]) -> GateDefaults:
        where = ("gates",)
        table = self._typed(data, (), "gates", dict, "a table", default={})
        self._known_keys(table, _GATE_KEYS, where)
        defaults = GateDefaults()
        rate = self._number(table, where, "budget_rate", defaults.budget_rate)
        if rate > 1:
            self._fail(where, "budget_rate", f"budget_rate is a share of runs between 0 and 1, not {rate}")
        return GateDefaults(
            subprocess_usd_per_second=self._number(table, where, "subprocess_usd_per_second", defaults.subprocess_usd_per_second),
            budget_rate=rate,
            budget_window=self._count(table, where, "budget_window", defaults.budget_window, minimum=1),
            budget_min_runs=self._count(table, where, "budget_min_runs", defaults.budget_min_runs, minimum=1),
            on_disabled=self._choice(table, where, "on_disabled", ON_DISABLED, defaults.on_disabled),
            pass_env=self._pass_env(table, where, providers),
        )

    def _pass_env(self, table: dict, where: tuple[str, ...], providers: dict[str, ProviderConfig]) -> tuple[str, ...]:
        names = self._typed(table, where, "pass_env", list, "a list of variable names", default=[])
        keys = {p.api_key_env: p.name for p in providers.values() if p.api_key_env}
        for name in names:
            if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
                self._fail(where, "pass_env", f"gates.pass_env holds {name!r}, not an environment variable name")
            if name in keys:
                self._fail(where, "pass_env", f"gates.pass_env names {name}, the api_key_env of [providers.{keys[name]}]",
                           hint="gate programs never receive a provider key: the candidate's own code may run there",
                           code="E161")
        return tuple(names)

    # ------------------------------------------------------------ typed values

    def _typed(self, table: dict, where: tuple[str, ...], key: str, kind: Any, described: str, default: Any = _REQUIRED) -> Any:
        if key not in table:
            if default is not _REQUIRED:
                return default
            self._fail(where, None, f"{_table_name(where)} needs {key} ({described})")
        value = table[key]
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            self._fail(where, key, f"{_dotted(where, key)} must be {described}, not {_toml_type(value)}")
        return value

    def _number(self, table: dict, where: tuple[str, ...], key: str, default: Any = _REQUIRED, positive: bool = False) -> float:
        value = float(self._typed(table, where, key, (int, float), "a number", default))
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            bound = "greater than 0" if positive else "a finite number >= 0"
            self._fail(where, key, f"{_dotted(where, key)} must be {bound}, not {value}")
        return value

    def _count(self, table: dict, where: tuple[str, ...], key: str, default: int, minimum: int) -> int:
        value = self._typed(table, where, key, int, "an integer", default=default)
        if value < minimum:
            self._fail(where, key, f"{_dotted(where, key)} must be at least {minimum}, not {value}")
        return value

    def _choice(self, table: dict, where: tuple[str, ...], key: str, choices: tuple[str, ...], default: str,
                hint: str | None = None) -> str:
        value = self._typed(table, where, key, str, "a string", default=default)
        if value not in choices:
            listed = " or ".join(f'"{c}"' for c in choices)
            self._fail(where, key, f"{_dotted(where, key)} must be {listed}, not {value!r}", hint)
        return value

    def _known_keys(self, table: dict, known: tuple[str, ...], where: tuple[str, ...]) -> None:
        for key in table:
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
                self._fail(where, key, f"unknown key {_dotted(where, key)}", hint)

    def _fail(self, where: tuple[str, ...], key: str | None, message: str, hint: str | None = None,
              code: str = "E001") -> None:
        span = _locate(self.source.text, where, key)
        raise InputError([Diagnostic(code, message, span=span, hint=hint, file=self.source.name)], self.source)


def _dotted(where: tuple[str, ...], key: str) -> str:
    return ".".join(_quoted_key(part) for part in (*where, key))


def _table_name(where: tuple[str, ...]) -> str:
    return f"[{'.'.join(_quoted_key(part) for part in where)}]"


def _quoted_key(part: str) -> str:
    return part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else f'"{part}"'


def _toml_type(value: Any) -> str:
    names: dict[type, str] = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", dict: "a table", list: "an array"}
    return names.get(type(value), type(value).__name__)


# ---------------------------------------------------------------- locating keys
# tomllib gives no positions for values, so find them in the text: the header line of the
# table, then the key's line inside it. Good enough for the flat tables admiss.toml uses;
# anything else falls back to the table header, or to the file alone.

_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_KEY = r'^\s*(?:{bare}|"{quoted}"|\'{quoted}\')\s*='


def _locate(text: str, where: tuple[str, ...], key: str | None) -> Span:
    lines = text.splitlines()
    header = _header_line(lines, where)
    if key is None:
        return _line_span(lines, header) if header is not None else NO_SPAN
    start = header + 1 if header is not None else 0
    pattern = re.compile(_KEY.format(bare=re.escape(key), quoted=re.escape(key)))
    for index in range(start, len(lines)):
        if header is not None and _HEADER.match(lines[index]):
            break  # the next table starts
        if pattern.match(lines[index]):
            column = len(lines[index]) - len(lines[index].lstrip()) + 1
            return Span.point(index + 1, column, len(key))
    # The key may be a table of its own: [where.key] or [where.key.more].
    found = _header_line(lines, (*where, key), prefix=True)
    if found is None:
        found = header
    return _line_span(lines, found) if found is not None else NO_SPAN


def _header_line(lines: list[str], where: tuple[str, ...], prefix: bool = False) -> int | None:
    if not where:
        return None
    for index, line in enumerate(lines):
        match = _HEADER.match(line)
        parts = _header_parts(match[1]) if match else []
        if parts[: len(where)] == list(where) and (prefix or len(parts) == len(where)):
            return index
    return None


def _header_parts(header: str) -> list[str]:
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([^.\s]+)', header)
    return [next(p for p in groups if p) if any(groups) else "" for groups in parts]


def _line_span(lines: list[str], index: int) -> Span:
    text = lines[index]
    column = len(text) - len(text.lstrip()) + 1
    return Span.point(index + 1, column, max(1, len(text.strip())))

