"""Real TLS and a real forward proxy on 127.0.0.1, for the tests of how model calls leave.

:func:`make_pki` makes two certificate authorities with the openssl command (the one that
signs the servers and the client, and another one nobody uses: a wrong ``ca_file``), a
server certificate for 127.0.0.1 and a client certificate. :func:`tls_upstream` starts a
chat server (chat_server.py) behind TLS, optionally requiring a client certificate.

:class:`ConnectProxy` is a forward proxy that speaks the one method a client uses for an
https:// target through a proxy, ``CONNECT host:port``: it answers 200 and relays bytes both
ways, or refuses (403, or 407 when it wants credentials it did not get), and records every
tunnel it opened. It only connects to 127.0.0.1.
"""

from __future__ import annotations

import base64
import select
import socket
import socketserver
import ssl
import struct
import subprocess
import threading
from pathlib import Path

import attrs
from chat_server import ChatServer


@attrs.frozen
class Pki:
    ca: Path
    other_ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(folder: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True, timeout=60)


def _ca(folder: Path, name: str) -> None:
    _openssl(folder, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj", f"/CN=admiss test {name}",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")


def _signed(folder: Path, name: str, extensions: str) -> None:
    (folder / f"{name}.ext").write_text(extensions + "basicConstraints=CA:FALSE\n"
                                        "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n")
    _openssl(folder, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN=admiss test {name}")
    _openssl(folder, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")


def make_pki(folder: Path, hosts: tuple[str, ...] = ()) -> Pki:
    """A CA, another CA, a server certificate for 127.0.0.1 (and ``hosts``, DNS names the
    tests stand in for), and a client certificate."""
    _ca(folder, "ca")
    _ca(folder, "other")
    names = ",".join(["IP:127.0.0.1", *(f"DNS:{host}" for host in hosts)])
    _signed(folder, "server", f"subjectAltName={names}\nextendedKeyUsage=serverAuth\n")
    _signed(folder, "client", "extendedKeyUsage=clientAuth\n")
    return Pki(folder / "ca.pem", folder / "other.pem", folder / "server.pem", folder / "server.key",
               folder / "client.pem", folder / "client.key")


def tls_upstream(pki: Pki, require_client_cert: bool = False, **options) -> ChatServer:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.server_cert, pki.server_key)
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(pki.ca)
    return ChatServer(tls=context, **options).start()


class ConnectProxy:
    """A CONNECT proxy on 127.0.0.1; ``refuse`` answers 403 to everything, ``credentials``
    ("user:password") wants them in Proxy-Authorization (407 without). ``standing_in`` maps
    a "host:port" the client asks for to the 127.0.0.1 "host:port" that plays it; any other
    host but 127.0.0.1 is refused, so nothing leaves the machine."""

    def __init__(self, refuse: bool = False, credentials: str | None = None,
                 standing_in: dict[str, str] | None = None):
        self.tunnels: list[str] = []  # "host:port" of every tunnel opened
        self.refused = 0
        self._refuse = refuse
        self._standing_in = standing_in or {}
        self._auth = f"Basic {base64.b64encode(credentials.encode()).decode()}" if credentials else None
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def url(self, credentials: str | None = None) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{credentials + '@' if credentials else ''}{host}:{port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self):
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                head = b""
                while b"\r\n\r\n" not in head and len(head) < 65536:
                    data = self.request.recv(4096)
                    if not data:
                        return
                    head += data
                lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
                method, _, target = lines[0].partition(" ")
                target = target.rpartition(" ")[0]
                headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
                asked, target = target, proxy._standing_in.get(target, target)
                if proxy._refuse or method != "CONNECT" or not target.startswith("127.0.0.1:"):
                    proxy.refused += 1
                    self.request.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                    return
                if proxy._auth is not None and headers.get("proxy-authorization") != proxy._auth:
                    proxy.refused += 1
                    self.request.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                                         b"Proxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n")
                    return
                host, _, port = target.partition(":")
                upstream = socket.create_connection((host, int(port)), timeout=10)
                proxy.tunnels.append(asked)
                self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                _relay(self.request, upstream)

        return Handler


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    """Copy bytes both ways until either side closes."""
    with upstream:
        pair = {client: upstream, upstream: client}
        while True:
            readable, _, _ = select.select(list(pair), [], [], 30)
            if not readable:
                return
            for sock in readable:
                data = _received(sock)
                if not data:
                    return
                pair[sock].sendall(data)


def _received(sock: socket.socket) -> bytes:
    """The next bytes from ``sock``; b"" once it has closed or failed."""
    try:
        return sock.recv(65536)
    except OSError:
        return b""


class _TlsServer:
    """A TLS server on 127.0.0.1 with the PKI's server certificate, serving each connection
    in a thread of its own with ``_serve``."""

    def __init__(self, pki: Pki, alpn: list[str] | None = None):
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._tls.load_cert_chain(pki.server_cert, pki.server_key)
        if alpn:
            self._tls.set_alpn_protocols(alpn)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"https://127.0.0.1:{self._listener.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        raise NotImplementedError


class H2Upstream(_TlsServer):
    """A chat-completions server speaking HTTP/2 only (ALPN "h2", the h2 library's state
    machine), answering every POST with ``reply`` (JSON bytes); ``requests`` counts them."""

    def __init__(self, pki: Pki, reply: bytes):
        self.reply = reply
        self.requests = 0
        super().__init__(pki, alpn=["h2"])

    def _serve(self, raw: socket.socket) -> None:
        import h2.config
        import h2.connection
        import h2.events
        import h2.exceptions

        try:
            sock = self._tls.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        connection.initiate_connection()
        sock.sendall(connection.data_to_send())
        with sock:
            while True:
                data = _received(sock)
                if not data:
                    return
                try:
                    events = connection.receive_data(data)
                except h2.exceptions.ProtocolError:
                    return  # not HTTP/2 (a client that offered HTTP/1.1 only): hang up
                for event in events:
                    if isinstance(event, h2.events.DataReceived):
                        connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    if isinstance(event, h2.events.StreamEnded):
                        self.requests += 1
                        connection.send_headers(event.stream_id, [(":status", "200"),
                                                                  ("content-type", "application/json"),
                                                                  ("content-length", str(len(self.reply)))])
                        connection.send_data(event.stream_id, self.reply, end_stream=True)
                sock.sendall(connection.data_to_send())


class HangUpUpstream(_TlsServer):
    """A TLS server that completes the handshake, reads the request and hangs up without a
    reply: with ``reset`` by a TCP reset (the client reads a ReadError), else by a clean close
    (httpx says "Server disconnected"). Either is what a server that wanted a client
    certificate may look like once its TLS 1.3 alert is lost."""

    def __init__(self, pki: Pki, reset: bool):
        self._reset = reset
        super().__init__(pki)

    def _serve(self, raw: socket.socket) -> None:
        try:
            sock = self._tls.wrap_socket(raw, server_side=True)
            _received(sock)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        if self._reset:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
