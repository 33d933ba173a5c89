"""How model calls leave the process: proxies from the environment and admiss.toml, a CA
bundle, client certificates, a URL's user-info. Real TLS upstreams (certificates made here
with openssl) and a real CONNECT proxy, all on 127.0.0.1; the client code under test is the
providers' (as judges, meaning models and ``check --live`` use it), then the real CLI."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from chat_server import ChatServer, completion
from tls_kit import ConnectProxy, H2Upstream, HangUpUpstream, make_pki, tls_upstream

from admiss.config import ProviderConfig
from admiss.providers import Completion, ProviderError, Providers
from admiss.serve.aiosender import AiohttpSender
from admiss.serve.transport import PooledSender

HELLO = [{"role": "user", "content": "hello"}]
PROXY_SECRET = "proxy-pass-5ec7e7"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def upstream(pki):
    server = tls_upstream(pki)
    server.default = completion("through TLS")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def mtls_upstream(pki):
    server = tls_upstream(pki, require_client_cert=True)
    server.default = completion("with a client certificate")
    yield server
    server.stop()


@pytest.fixture
def proxy():
    server = ConnectProxy()
    yield server
    server.stop()


@pytest.fixture
def refusing_proxy():
    server = ConnectProxy(refuse=True)
    yield server
    server.stop()


@pytest.fixture(params=[False, True], ids=["httpx", "gateway-senders"])
def fast(request) -> bool:
    """Each test taking it runs once over httpx (check --live, judges) and once over the
    gateway's senders: its own pool for routes that need nothing else, aiohttp for the rest."""
    return request.param


def call(config: ProviderConfig, environ: dict[str, str], fast: bool = False) -> Completion:
    """One call through ``config`` with ``environ`` as the whole environment; with ``fast``
    the gateway's senders are offered (the pool sends only for routes that need nothing else,
    aiohttp for the others but HTTP/2 and a proxy that is not http://)."""
    providers = Providers({config.name: config}, environ=environ)
    if fast:
        providers.use_sender(PooledSender, routed=AiohttpSender)

    async def go() -> Completion:
        try:
            return await providers.complete(f"{config.name}/m", HELLO)
        finally:
            await providers.aclose()

    return asyncio.run(go())


def port_of(server: ChatServer) -> str:
    return server.url.split("//")[1].split("/")[0]


def test_https_proxy_from_the_environment_carries_the_call(pki, upstream, proxy, fast):
    config = ProviderConfig("p", upstream.url, ca_file=pki.ca, max_retries=0)
    assert call(config, {"HTTPS_PROXY": proxy.url()}, fast).text == "through TLS"
    assert proxy.tunnels == [port_of(upstream)]


@pytest.mark.parametrize("variable", ["https_proxy", "ALL_PROXY", "all_proxy"])
def test_other_proxy_variables_are_honoured(pki, upstream, proxy, variable, fast):
    config = ProviderConfig("p", upstream.url, ca_file=pki.ca, max_retries=0)
    call(config, {variable: proxy.url()}, fast)
    assert proxy.tunnels == [port_of(upstream)]


@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "*", "localhost, 127.0.0.1", "HOSTPORT"])
def test_no_proxy_sends_straight_to_the_host(pki, upstream, proxy, no_proxy, fast):
    no_proxy = no_proxy.replace("HOSTPORT", port_of(upstream))
    config = ProviderConfig("p", upstream.url, ca_file=pki.ca, max_retries=0)
    assert call(config, {"HTTPS_PROXY": proxy.url(), "NO_PROXY": no_proxy}, fast).text == "through TLS"
    assert proxy.tunnels == []


def test_an_http_proxy_variable_is_not_used_for_https(pki, upstream, proxy, fast):
    config = ProviderConfig("p", upstream.url, ca_file=pki.ca, max_retries=0)
    call(config, {"HTTP_PROXY": proxy.url()}, fast)
    assert proxy.tunnels == []


def test_the_providers_own_proxy_wins_and_an_empty_one_means_none(pki, upstream, proxy, refusing_proxy, fast):
    config = ProviderConfig("p", upstream.url, ca_file=pki.ca, max_retries=0, proxy=proxy.url())
    call(config, {"HTTPS_PROXY": refusing_proxy.url()}, fast)
    assert proxy.tunnels == [port_of(upstream)] and refusing_proxy.refused == 0
    direct = ProviderConfig("p", upstream.url, ca_file=pki.ca, max_retries=0, proxy="")
    call(direct, {"HTTPS_PROXY": refusing_proxy.url()}, fast)
    assert refusing_proxy.refused == 0 and len(proxy.tunnels) == 1


def test_proxy_credentials_are_sent_and_never_shown(pki, upstream, fast):
    guarded = ConnectProxy(credentials=f"me:{PROXY_SECRET}")
    try:
        config = ProviderConfig("p", upstream.url, ca_file=pki.ca, max_retries=0)
        environ = {"HTTPS_PROXY": guarded.url(f"me:{PROXY_SECRET}")}
        call(config, environ, fast)
        assert guarded.tunnels == [port_of(upstream)]
        described = Providers({"p": config}, environ=environ).routes()["p"]
        assert guarded.url() in described and PROXY_SECRET not in described and "me:" not in described
        with pytest.raises(ProviderError) as refused:
            call(config, {"HTTPS_PROXY": guarded.url()}, fast)  # no credentials: 407
        assert "407" in refused.value.reason and PROXY_SECRET not in refused.value.reason
    finally:
        guarded.stop()


def test_a_refusing_proxy_is_a_clear_error(pki, upstream, refusing_proxy, fast):
    config = ProviderConfig("p", upstream.url, ca_file=pki.ca, max_retries=1)
    reached = len(upstream.requests)
    with pytest.raises(ProviderError) as error:
        call(config, {"HTTPS_PROXY": refusing_proxy.url()}, fast)
    assert error.value.reason == (f"provider p: cannot connect to {upstream.url}/chat/completions: the proxy "
                                  f"{refusing_proxy.url()} refused: 403 Forbidden after 1 retries")
    assert refusing_proxy.refused == 2 and len(upstream.requests) == reached


def test_a_proxy_that_is_not_listening_is_a_clear_error(pki, upstream, fast):
    closed = socket.create_server(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()
    config = ProviderConfig("p", upstream.url, ca_file=pki.ca, max_retries=1)
    with pytest.raises(ProviderError) as error:
        call(config, {"HTTPS_PROXY": dead}, fast)
    reason = error.value.reason
    # Not connected is safe to send again: retried, then told.
    assert reason.startswith(f"provider p: cannot connect to {upstream.url}/chat/completions: ")
    assert reason.endswith("after 1 retries") and "Traceback" not in reason
    if fast:  # aiohttp names the proxy it could not reach
        assert f"cannot connect to the proxy {dead}: " in reason


def test_the_wrong_ca_is_a_clear_error(pki, upstream, fast):
    config = ProviderConfig("p", upstream.url, ca_file=pki.other_ca, max_retries=0)
    with pytest.raises(ProviderError) as error:
        call(config, {}, fast)
    reason = error.value.reason
    assert reason.startswith(f"provider p: cannot connect to {upstream.url}/chat/completions: TLS: the server's "
                             f"certificate is not signed by a CA admiss trusts (ca_file {pki.other_ca}): set ca_file")


def test_no_ca_file_trusts_the_os_store_in_both_senders(upstream, fast):
    # The test CA is in no store: both senders refuse the server alike (one trust store).
    config = ProviderConfig("p", upstream.url, max_retries=0)
    with pytest.raises(ProviderError, match="TLS: the server's certificate is not signed by a CA admiss trusts"):
        call(config, {}, fast)


def test_ssl_cert_file_is_the_trust_store_when_set(pki, upstream, proxy):
    config = ProviderConfig("p", upstream.url, max_retries=0)
    assert call(config, {"SSL_CERT_FILE": str(pki.ca)}).text == "through TLS"
    assert call(config, {"SSL_CERT_FILE": str(pki.ca)}, fast=True).text == "through TLS"
    # With a proxy the route is not plain: the gateway's aiohttp sender trusts the same store.
    assert call(config, {"SSL_CERT_FILE": str(pki.ca), "HTTPS_PROXY": proxy.url()}, fast=True).text == "through TLS"
    assert proxy.tunnels == [port_of(upstream)]


def test_a_client_certificate_is_presented(pki, mtls_upstream, proxy, fast):
    config = ProviderConfig("p", mtls_upstream.url, ca_file=pki.ca, client_cert=pki.client_cert,
                            client_key=pki.client_key, max_retries=0)
    assert call(config, {}, fast).text == "with a client certificate"
    assert call(config, {"HTTPS_PROXY": proxy.url()}, fast).text == "with a client certificate"
    assert proxy.tunnels == [port_of(mtls_upstream)]


def test_a_missing_client_certificate_is_a_clear_error(pki, mtls_upstream, fast):
    config = ProviderConfig("p", mtls_upstream.url, ca_file=pki.ca, max_retries=0)
    with pytest.raises(ProviderError) as error:
        call(config, {}, fast)
    assert "client certificate" in error.value.reason and "client_cert" in error.value.reason
    assert error.value.reason.startswith("provider p: ")


@pytest.mark.parametrize("reset", [True, False], ids=["reset", "closed"])
def test_a_tls_server_hanging_up_unanswered_suggests_a_client_certificate(pki, reset, fast):
    # Under load the alert of a server that wanted a certificate is lost to a reset or a close.
    server = HangUpUpstream(pki, reset=reset)
    try:
        with pytest.raises(ProviderError) as error:
            call(ProviderConfig("p", server.url, ca_file=pki.ca, max_retries=0), {}, fast)
    finally:
        server.stop()
    assert "without a reply (if it wants a client certificate, set client_cert)" in error.value.reason


def test_an_unloadable_client_certificate_is_a_clear_error(pki, mtls_upstream, fast):
    config = ProviderConfig("p", mtls_upstream.url, ca_file=pki.ca, client_cert=pki.ca, max_retries=0)
    with pytest.raises(ProviderError, match=f"provider p: client_cert {pki.ca} cannot be loaded"):
        call(config, {}, fast)


def test_user_info_in_the_url_is_basic_auth_never_a_header(fast):
    server = ChatServer().start()
    try:
        host = server.url.split("//")[1]
        config = ProviderConfig("p", f"http://alice:s%40cret@{host}", max_retries=0)
        call(config, {}, fast)
        [request] = server.requests
        assert request.headers["authorization"] == "Basic " + base64.b64encode(b"alice:s@cret").decode()
        assert request.headers["host"] == host.split("/")[0]
        assert "cret" not in json.dumps({k: v for k, v in request.headers.items() if k != "authorization"})
    finally:
        server.stop()


def test_http2_is_spoken_where_the_server_offers_it(pki, proxy):
    server = H2Upstream(pki, json.dumps(completion("over HTTP/2").body).encode())
    try:
        http2 = ProviderConfig("p", server.url, ca_file=pki.ca, http2=True, max_retries=0)
        assert call(http2, {}, fast=True).text == "over HTTP/2"
        assert call(http2, {"HTTPS_PROXY": proxy.url()}).text == "over HTTP/2"
        assert server.requests == 2 and proxy.tunnels == [server.url.split("//")[1].split("/")[0]]
        # Without http2 the client offers HTTP/1.1 only, which this server refuses.
        with pytest.raises(ProviderError, match="provider p: "):
            call(ProviderConfig("p", server.url, ca_file=pki.ca, max_retries=0), {})
        assert server.requests == 2
    finally:
        server.stop()


def test_with_a_key_too_the_key_is_sent_and_the_user_info_is_not(fast):
    server = ChatServer().start()
    try:
        host = server.url.split("//")[1]
        config = ProviderConfig("p", f"http://alice:secret@{host}", api_key_env="P_KEY", max_retries=0)
        call(config, {"P_KEY": "sk-key"}, fast)
        [request] = server.requests
        assert request.headers["authorization"] == "Bearer sk-key"
        assert "secret" not in json.dumps(request.headers) and "alice" not in json.dumps(request.headers)
    finally:
        server.stop()


def test_the_route_in_words_says_proxy_trust_and_sender(pki, upstream, proxy):
    providers = Providers({"tls": ProviderConfig("tls", upstream.url, ca_file=pki.ca),
                           "plain": ProviderConfig("plain", "http://127.0.0.1:9/v1"),
                           "h2": ProviderConfig("h2", upstream.url, ca_file=pki.ca, http2=True),
                           "socks": ProviderConfig("socks", upstream.url, proxy="socks5://127.0.0.1:9")},
                          environ={"HTTPS_PROXY": proxy.url()})
    assert providers.routes()["tls"].endswith("sent by httpx")  # no senders offered: httpx for all
    providers.use_sender(PooledSender, routed=AiohttpSender)
    routes = providers.routes()
    assert routes["tls"] == f"proxy {proxy.url()} (HTTPS_PROXY), TLS trusting ca_file {pki.ca}, sent by aiohttp"
    assert routes["plain"].startswith("no proxy (no proxy variable set), TLS trusting ")
    assert routes["plain"].endswith("sent by admiss's own pool")
    # What aiohttp cannot do stays with httpx: HTTP/2, a SOCKS proxy.
    assert routes["h2"].endswith("sent by httpx") and routes["socks"].endswith("sent by httpx")


# ---------------------------------------------------------------- admiss check --live

RUBRIC = """CHAIN answer {
  RUNG only MODEL "up/m" {
    GATE non_empty ON ABSTAIN fail_closed
  }
}
"""


def _live(folder: Path, provider: str, environ: dict[str, str]) -> tuple[int, dict, str]:
    (folder / "r.rubric").write_text(RUBRIC)
    (folder / "admiss.toml").write_text(f"[providers.up]\n{provider}\nmax_retries = 0\n")
    (folder / "b.json").write_text(json.dumps({"prompt": "hello", "evidence": []}))
    env = {"PATH": "/usr/bin:/bin", **environ}
    ran = subprocess.run([sys.executable, "-m", "admiss", "check", "--live", "--format", "json", "--rubric",
                          "r.rubric", "b.json"], cwd=folder, env=env, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in ran.stderr
    return ran.returncode, json.loads(ran.stdout) if ran.stdout.strip() else {}, ran.stderr


def test_check_live_reaches_tls_upstreams_through_the_proxy(tmp_path, pki, upstream, mtls_upstream, proxy):
    code, report, _ = _live(tmp_path, f'base_url = "{upstream.url}"\nca_file = "{pki.ca}"',
                            {"HTTPS_PROXY": proxy.url()})
    assert code == 0 and report["chain"]["served"] == "only"
    code, report, _ = _live(tmp_path, f'base_url = "{mtls_upstream.url}"\nca_file = "{pki.ca}"\n'
                                      f'client_cert = "{pki.client_cert}"\nclient_key = "{pki.client_key}"',
                            {"HTTPS_PROXY": proxy.url()})
    assert code == 0 and report["chain"]["served"] == "only"
    assert proxy.tunnels == [port_of(upstream), port_of(mtls_upstream)]


@pytest.mark.parametrize("case", ["refused", "wrong-ca", "no-cert"])
def test_check_live_failures_say_what_and_where(tmp_path, pki, upstream, mtls_upstream, refusing_proxy, case):
    provider, environ, says = {
        "refused": (f'base_url = "{upstream.url}"\nca_file = "{pki.ca}"', {"HTTPS_PROXY": refusing_proxy.url()},
                    f"the proxy {refusing_proxy.url()} refused: 403 Forbidden"),
        "wrong-ca": (f'base_url = "{upstream.url}"\nca_file = "{pki.other_ca}"', {},
                     "not signed by a CA admiss trusts"),
        "no-cert": (f'base_url = "{mtls_upstream.url}"\nca_file = "{pki.ca}"', {}, "client certificate"),
    }[case]
    code, report, stderr = _live(tmp_path, provider, environ)
    assert code == 1 and report["chain"]["served"] is None
    reasons = json.dumps(report)
    assert "provider up: " in reasons and says in reasons


def test_a_missing_ca_file_is_a_located_config_error(tmp_path, upstream):
    code, _, stderr = _live(tmp_path, f'base_url = "{upstream.url}"\nca_file = "nowhere.pem"', {})
    assert code == 2
    assert "admiss.toml:3:1: E001 providers.up.ca_file names nowhere.pem, which is not a file" in stderr
