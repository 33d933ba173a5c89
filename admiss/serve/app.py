"""The gateway's HTTP routes; the only module that imports the web framework (Starlette)
and the ASGI server (uvicorn). docs/serve.md says why these two.

Every route but /healthz, /readyz and /metrics needs a bearer key when keys are configured.
A chat request runs the chain named by its ``model``; the receipt is committed before the
first byte of the response, and no byte of an output its gates did not pass is ever sent.
A client that hangs up cancels its request: model calls in flight are cancelled and
subprocess gates killed.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import shutil
import signal
import tempfile
import time
from typing import Any, Awaitable, Mapping

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from admiss import jsonio
from admiss.collector import freeze_for_serving
from admiss.config import DEFAULT_HEADER_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS, Config, ServeSettings
from admiss.errors import Diagnostic, InputError
from admiss.receipts import StoreError, StoreWriter
from admiss.redact import redacted_tree
from admiss.serve.calls import RequestError
from admiss.serve.fleet import SharedBudgets
from admiss.serve.metrics import GatewayMetrics
from admiss.serve.router import Router, Served
from admiss.serve.wire import Incoming, anthropic_messages, openai_chat, repeated_key

RECEIPT_HEADER = "x-admiss-receipt-id"
# The routes of a model request, each with its wire format (admiss/serve/wire/).
WIRES = {openai_chat.PATH: openai_chat, anthropic_messages.PATH: anthropic_messages}


class _JSON(JSONResponse):
    """A JSON response written by orjson (Starlette's own uses the standard library)."""

    def render(self, content: Any) -> bytes:
        return jsonio.dumps_line(content)


def api_keys(router: Router) -> frozenset[str]:
    """The bearer keys clients may send: ``[serve] api_keys`` and the ones in ``api_keys_env``.

    Naming a variable that holds no key is an error (E154), not an open gateway.
    """
    settings = router.config.serve
    keys = set(settings.api_keys)
    if settings.api_keys_env:
        keys |= {k.strip() for k in os.environ.get(settings.api_keys_env, "").split(",") if k.strip()}
        if not keys:
            message = (f"[serve] api_keys_env names {settings.api_keys_env}, which holds no key: "
                       "the gateway would be open to anyone")
            raise InputError([Diagnostic("E154", message, file=str(router.config.path),
                                         hint=f"export {settings.api_keys_env}=KEY1,KEY2, or remove api_keys_env")])
    return frozenset(keys)


def _error(status: int, message: str, kind: str, code: str | None = None, param: str | None = None,
           receipt_id: str | None = None, wire: Any = openai_chat) -> JSONResponse:
    """An error in ``wire``'s shape (OpenAI's by default), with the receipt id when the request has a receipt."""
    headers = {RECEIPT_HEADER: receipt_id} if receipt_id is not None else {}
    return _JSON(wire.error(status, message, kind, code, param, receipt_id), status_code=status, headers=headers)


class _ClientGone(Exception):
    """The client hung up before its answer was ready."""


class _TooLarge(Exception):
    """The request's body is past ``[serve] max_request_bytes``."""


class _TooSlow(Exception):
    """The request's body did not arrive within ``[serve] body_timeout_s``."""


def _header(scope: Scope, name: bytes) -> str | None:
    """A request header's value (``name`` in lower case, as ASGI gives names)."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


async def _body(scope: Scope, receive: Receive, limit: int, timeout_s: float) -> bytes:
    """The request's body, read whole; _TooLarge past ``limit`` bytes (before reading any
    when its content-length says so), _TooSlow when it takes longer than ``timeout_s``,
    _ClientGone if the client hangs up first."""
    declared = _header(scope, b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    # A timer that cancels this task, as asyncio.timeout does (which Python 3.10 lacks), not
    # asyncio.wait_for: that runs the read in a task of its own, on every request's path.
    task, expired = asyncio.current_task(), []
    timer = asyncio.get_running_loop().call_later(timeout_s, lambda: (expired.append(True), task.cancel()))
    try:
        return await _read_body(receive, limit)
    except asyncio.CancelledError:
        if not expired:
            raise
        if hasattr(task, "uncancel"):  # 3.11+: the cancel was ours, not the caller's
            task.uncancel()
        raise _TooSlow from None
    finally:
        timer.cancel()


async def _read_body(receive: Receive, limit: int) -> bytes:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _unless_client_leaves(receive: Receive, work: Awaitable) -> Any:
    """``work``'s result, awaited in this task; if the client hangs up first, this task is
    cancelled (``work``'s model calls and gate processes with it) and _ClientGone raised.

    The work runs in the request's own task rather than a task of its own: one task fewer
    to make, schedule and finish on every request's path."""
    task, settled = asyncio.current_task(), []
    watcher = asyncio.ensure_future(_disconnected(receive))
    # A callback rather than asyncio.wait on both: no waiter set up and torn down per request.
    # It runs a loop turn after the watcher ends: by then the work may be over (``settled``),
    # and a cancel would hit whatever this task does next.
    watcher.add_done_callback(lambda done: settled or done.cancelled() or (settled.append(True), task.cancel()))
    try:
        return await work
    except asyncio.CancelledError:
        if not settled:
            raise  # not the watcher's cancel: the server's
        if hasattr(task, "uncancel"):  # 3.11+: the cancel was ours, not the caller's
            task.uncancel()
        raise _ClientGone from None
    finally:
        settled.append(True)
        watcher.cancel()


class Gateway:
    """The routes over one router per chain, the keys, the metrics."""

    def __init__(self, routers: dict[str, Router], keys: frozenset[str]):
        self.routers = routers
        self.keys = keys
        settings = next(iter(routers.values())).config.serve
        self.max_request_bytes = settings.max_request_bytes
        self.grace_s = settings.grace_s
        self.body_timeout_s = settings.body_timeout_s
        self.metrics = GatewayMetrics(routers)
        self.secrets = tuple({s for router in routers.values() for s in router.ctx.secrets})
        self.telemetry = _telemetry(next(iter(routers.values())).config)

    def authorized(self, key: str | None) -> bool:
        """Whether ``key`` (what the request's key header carried) is one of the keys."""
        if not self.keys:
            return True
        # compare_digest against every key, so timing says nothing about which one nearly matched.
        matches = [hmac.compare_digest((key or "").encode(), k.encode()) for k in self.keys]
        return key is not None and any(matches)

    def unauthorized(self, wire: Any = openai_chat) -> JSONResponse:
        self.metrics.rejected.labels("unauthorized").inc()
        return _error(401, f"missing or invalid API key: send {wire.KEY_HEADERS}", "invalid_request_error",
                      "invalid_api_key", wire=wire)

    async def chat(self, scope: Scope, receive: Receive, send: Send) -> None:
        """POST /v1/chat/completions or /v1/messages, as an ASGI app of its own: the route
        every model request takes skips Starlette's middleware, routing and request object."""
        wire = WIRES[scope["path"]]
        try:
            response = await self._chat(scope, receive, wire)
        except _ClientGone:
            self.metrics.rejected.labels("client_disconnected").inc()
            return  # nobody reads an answer
        except asyncio.CancelledError:
            # Only the server cancels a request it is running: on SIGTERM, once grace_s ran
            # out. Its model calls and gate programs are stopped by now; the client gets a
            # plain error instead of uvicorn's 500 and a traceback in the log.
            self.metrics.rejected.labels("gateway_stopping").inc()
            response = _error(503, f"the gateway is stopping and this request ran past its grace period "
                              f"([serve] grace_s = {self.grace_s:g}s): nothing is served", "admiss_error",
                              "gateway_stopping", wire=wire)
        try:
            await response(scope, receive, send)
        except asyncio.CancelledError:
            return  # stopped while the answer went out: the connection closes with it

    async def _chat(self, scope: Scope, receive: Receive, wire: Any) -> Response:
        started_ns = time.time_ns()
        if not self.authorized(wire.api_key(lambda name: _header(scope, name))):
            return self.unauthorized(wire)
        try:
            raw = await _body(scope, receive, self.max_request_bytes, self.body_timeout_s)
            body, exact = jsonio.loads_marked(raw)
        except _TooSlow:
            self.metrics.rejected.labels("too_slow").inc()
            return _error(408, f"the request body did not arrive within {self.body_timeout_s:g}s "
                          "([serve] body_timeout_s)", "invalid_request_error", "request_timeout", wire=wire)
        except _TooLarge:
            self.metrics.rejected.labels("too_large").inc()
            return _error(413, f"the request body is larger than {self.max_request_bytes} bytes "
                          "([serve] max_request_bytes)", "invalid_request_error", "request_too_large", wire=wire)
        except (ValueError, RecursionError):
            return self._bad_request(wire, "the request body is not JSON")
        # A key given twice would be read as its last value, which what checked or logged
        # the request upstream of admiss may not have read: refused, never guessed, before
        # any other answer. Checked once the wire module read the body (which makes the
        # messages' exact text), or at the first refusal before that.
        model = body.get("model") if isinstance(body, dict) else None
        router = self.routers.get(model) if isinstance(model, str) else None
        if router is None:
            refused = self._repeated_key(wire, raw, body)
            if refused is not None:
                return refused
            if not isinstance(body, dict):
                return self._bad_request(wire, "the request body must be a JSON object")
            self.metrics.rejected.labels("unknown_model").inc()
            return _error(404, f"no chain named {body.get('model')!r}: GET /v1/models lists them",
                          "invalid_request_error", "model_not_found", "model", wire=wire)
        self.metrics.in_flight.inc()
        try:
            try:
                incoming = wire.read(body, exact)
            except RequestError:
                refused = self._repeated_key(wire, raw, body)
                if refused is not None:
                    return refused
                raise
            refused = self._repeated_key(wire, raw, body, incoming)
            if refused is not None:
                return refused
            served = await _unless_client_leaves(receive, router.run(incoming.request))
        except RequestError as exc:
            return self._bad_request(wire, str(exc), exc.param)
        except StoreError as exc:
            # No stored receipt, no answer: the output is not sent.
            self.metrics.rejected.labels("store_failed").inc()
            return _error(503, f"the receipt could not be stored, so nothing is served: {exc}", "admiss_error",
                          "receipt_store_failed", wire=wire)
        finally:
            self.metrics.in_flight.dec()
        response = self._answer(served, wire, incoming)
        if self.telemetry is not None:
            # Once the answer is sent: the client does not wait for the request's spans and events.
            response.background = BackgroundTask(self._telemetry_of, served, router.chain, scope, started_ns)
        return response

    async def _telemetry_of(self, served: Served, chain: Any, scope: Scope, started_ns: int) -> None:
        self.telemetry.served(served, chain, _header(scope, b"traceparent"), _header(scope, b"tracestate"), started_ns)

    def _answer(self, served: Served, wire: Any, incoming: Incoming) -> Response:
        receipt_id = served.receipt["id"]
        if served.rung is None:
            return _error(422, f"chain {served.receipt['chain']['name']!r} is exhausted: no rung's output passed "
                          f"its gates, so nothing is served (receipt {receipt_id})", "admiss_error",
                          "chain_exhausted", receipt_id=receipt_id, wire=wire)
        created = int(time.time())
        headers = {RECEIPT_HEADER: receipt_id}
        if incoming.stream:
            return StreamingResponse(wire.events(served, created, incoming), media_type="text/event-stream",
                                     headers={**headers, "cache-control": "no-cache"})
        return _JSON(wire.response(served, created), headers=headers)

    def _repeated_key(self, wire: Any, raw: bytes, body: Any, incoming: Incoming | None = None) -> JSONResponse | None:
        """The refusal of a body that gives a key twice in one object, or None when it gives none."""
        try:
            repeated = repeated_key(raw, body, incoming)
        except RecursionError:
            return self._bad_request(wire, "the request body is not JSON")
        if repeated is None:
            return None
        return self._bad_request(wire, f"the request body gives a key twice in one object, at {repeated[0]}: "
                                 "refused rather than read as either value", repeated[0])

    def _bad_request(self, wire: Any, message: str, param: str | None = None) -> JSONResponse:
        self.metrics.rejected.labels("bad_request").inc()
        return _error(400, message, "invalid_request_error", param=param, wire=wire)

    async def models(self, request: Request) -> Response:
        if not self.authorized(openai_chat.api_key(lambda name: request.headers.get(name.decode()))):
            return self.unauthorized()
        data = [{"id": name, "object": "model", "created": 0, "owned_by": "admiss",
                 "rungs": [{"rung": r.name, "model": r.model} for r in router.chain.rungs]}
                for name, router in self.routers.items()]
        return _JSON({"object": "list", "data": data})

    async def receipt(self, request: Request) -> Response:
        if not self.authorized(openai_chat.api_key(lambda name: request.headers.get(name.decode()))):
            return self.unauthorized()
        try:
            receipt = await self.store.aread(lambda s, rid: s.get(rid), request.path_params["receipt_id"])
        except StoreError as exc:  # the file was removed or damaged under the gateway
            return _error(503, f"the receipt store cannot be read: {exc}", "admiss_error", "receipt_store_unavailable")
        if receipt is None:
            return _error(404, "no such receipt", "invalid_request_error", "receipt_not_found")
        # Stored redacted; masked again for a store another gateway (other keys) wrote too.
        return _JSON(redacted_tree(receipt, self.secrets))

    async def metrics_page(self, request: Request) -> Response:
        data, content_type = self.metrics.exposition()
        return Response(data, media_type=content_type)

    async def healthz(self, request: Request) -> Response:
        return _JSON({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        problems = [p for router in self.routers.values() for p in router.unready()]
        for found in await asyncio.gather(*(router.unreachable() for router in self.routers.values())):
            problems.extend(found)
        store = self.store
        try:
            writable = await store.aread(lambda s: s.writable())
        except StoreError:  # gone, or no longer a store
            writable = False
        if not writable:
            problems.append(f"receipt store {store.store.where} is not writable")
        problems = sorted(set(problems))
        return _JSON({"status": "not ready" if problems else "ready", "problems": problems},
                     status_code=503 if problems else 200)

    def app(self) -> ASGIApp:
        """A Starlette app of the routes (which also runs the lifespan), with a way round it
        for model requests (either wire format): they go straight to :meth:`chat`."""
        routes = [
            *(Route(path, _Raw(self.chat), methods=["POST"]) for path in WIRES),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/receipts/{receipt_id}", self.receipt, methods=["GET"]),
            Route("/metrics", self.metrics_page, methods=["GET"]),
            Route("/healthz", self.healthz, methods=["GET"]),
            Route("/readyz", self.readyz, methods=["GET"]),
        ]
        rest = Starlette(routes=routes, lifespan=self._lifespan)
        chat = self.chat

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["path"] in WIRES and scope["method"] == "POST":
                await chat(scope, receive, send)
            else:
                await rest(scope, receive, send)

        return app

    def _lifespan(self, app: Starlette):
        return _Lifespan(self)

    @property
    def store(self) -> StoreWriter:
        return next(iter(self.routers.values())).store


class _Raw:
    """An ASGI app as a Starlette route's endpoint (Starlette would wrap a function or a
    method as a request handler)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


class _Lifespan:
    """On start, set what was built so far aside from the garbage collector; on shutdown
    (after in-flight requests finished), close every router, then write what the store has
    queued and close it."""

    def __init__(self, gateway: Gateway):
        self.gateway = gateway
        self.budgets = SharedBudgets(gateway.store, gateway.routers.values(), gateway.metrics.refresh_gates)

    async def __aenter__(self) -> None:
        await self.budgets.start()
        # Everything made before serving (the compiled chains, the libraries' modules and
        # tables) lives as long as the process: out of the collector's sight, a full
        # collection walks only what requests made. Measured under load: full collections
        # paused the loop up to 43 ms before, 2 ms after (docs/performance.md#the-gateway).
        # The young generation's threshold is raised too (admiss/collector.py says why).
        freeze_for_serving()
        # Which proxy and CAs each provider's calls go through (never a secret), once per worker.
        log = logging.getLogger("uvicorn.error")
        for name, route in next(iter(self.gateway.routers.values())).routes().items():
            log.info("provider %s: %s", name, route)

    async def __aexit__(self, *exc: Any) -> None:
        await self.budgets.stop()
        for router in self.gateway.routers.values():
            await router.aclose()
        await asyncio.get_running_loop().run_in_executor(None, self.gateway.store.close)
        self.gateway.metrics.close()
        if self.gateway.telemetry is not None:
            self.gateway.telemetry.close()


class _BoundedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with the two bounds uvicorn lacks: a deadline for a
    request's headers (from the connection's start, or from a later request's first byte,
    to the end of its headers) and a cap on open connections, past which a new one is closed
    at once. uvicorn makes one per connection, from the class: :func:`_bound_connections`
    sets the limits in each process before it serves."""

    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    _headers_due: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            transport.close()
            return
        self._await_headers()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._await_headers()

    def on_headers_complete(self) -> None:
        self._stop_waiting()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def _await_headers(self) -> None:
        self._stop_waiting()
        self._headers_due = self.loop.call_later(self.header_timeout_s, self.transport.close)

    def _stop_waiting(self) -> None:
        if self._headers_due is not None:
            self._headers_due.cancel()
            self._headers_due = None


def _telemetry(config: Config):
    """OpenTelemetry out (admiss/integrations/otel.py), or None when neither an OTEL_*
    variable nor [telemetry] asks for it."""
    if config.telemetry is None and not any(name.startswith("OTEL_") for name in os.environ):
        return None  # start-up time: the integration is not imported
    from admiss.integrations.otel import telemetry_for

    return telemetry_for(config.telemetry)


def _bound_connections(settings: ServeSettings) -> None:
    _BoundedHttp.header_timeout_s = settings.header_timeout_s
    _BoundedHttp.max_connections = settings.max_connections


def _server_config(app: Any, host: str, port: int, grace_s: float, log_level: str, **more: Any):
    import uvicorn

    # proxy_headers=False: uvicorn would wrap the app in a middleware that reads
    # X-Forwarded-For and -Proto into every request's scope; nothing here reads the client's
    # address or scheme, and the wrapper was a layer on every model request's path.
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False, http=_BoundedHttp,
                          timeout_graceful_shutdown=grace_s, lifespan="on", server_header=False, proxy_headers=False,
                          **more)


def serve(routers: dict[str, Router], keys: frozenset[str], host: str, port: int, grace_s: float,
          log_level: str = "info") -> int:
    """Serve until SIGTERM or Ctrl-C, then finish in-flight requests (up to ``grace_s``),
    flush the store and return 0."""
    import uvicorn

    _bound_connections(next(iter(routers.values())).config.serve)
    config = _server_config(Gateway(routers, keys).app(), host, port, grace_s, log_level)
    # uvicorn raises the stopping signal again once it has shut down; a handler of our own
    # takes it, so a graceful stop exits 0 rather than dying by the signal.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    uvicorn.Server(config).run()
    return 0


# What a worker of ``admiss serve --workers N`` serves: {"rubric", "config", "chain", "store"},
# paths the parent checked (and made absolute), as JSON in the environment it starts with.
WORKER_ENV = "ADMISS_SERVE_WORKER"


def worker_app() -> ASGIApp:
    """The app of one worker process, built from :data:`WORKER_ENV` (uvicorn calls it in
    each worker, as the factory of the import string ``admiss.serve.app:worker_app``)."""
    from admiss.serve.router import routers_for

    spec = json.loads(os.environ[WORKER_ENV])
    routers = routers_for(spec["rubric"], spec["config"], spec["chain"], spec["store"])
    _bound_connections(next(iter(routers.values())).config.serve)
    return Gateway(routers, api_keys(next(iter(routers.values())))).app()


def serve_workers(spec: Mapping[str, str | None], workers: int, host: str, port: int, grace_s: float,
                  log_level: str = "info") -> int:
    """Serve with ``workers`` processes accepting on one listening socket, under uvicorn's
    supervisor: it passes SIGTERM and Ctrl-C on to every worker (each then finishes its
    in-flight requests and flushes its receipts, as :func:`serve` does), waits for them all,
    and starts a new worker when one dies. 0 after a stop; 3 (uvicorn's start-up failure,
    as for a port already taken) when a worker could not start.

    Each worker has its own event loop, providers' connections, error budgets (sharing the
    gates they disable through the store: admiss/serve/fleet.py) and store connection (SQLite's lock orders their commits); /metrics adds the workers' values up
    through a metrics folder made for this run and removed after it.
    """
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    metrics_folder = tempfile.mkdtemp(prefix="admiss-metrics-")
    os.environ[WORKER_ENV] = json.dumps(dict(spec))
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_folder
    try:
        config = _server_config("admiss.serve.app:worker_app", host, port, grace_s, log_level, factory=True,
                                workers=workers)
        supervisor = Multiprocess(config, sockets=[config.bind_socket()])
        supervisor.run()
    finally:
        shutil.rmtree(metrics_folder, ignore_errors=True)
    return STARTUP_FAILURE if any(worker.exitcode == STARTUP_FAILURE for worker in supervisor.processes) else 0
