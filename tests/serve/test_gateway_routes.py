"""``admiss serve`` behind an egress proxy, in front of TLS upstreams with a private CA and
one that wants a client certificate: a real gateway process, a real CONNECT proxy and real
TLS servers (certificates made with openssl), driven by the official openai client."""

from __future__ import annotations

import re

import httpx
import openai
import pytest
from chat_server import completion
from gatewaykit import CONFIG, KEY, MAX_REQUEST_BYTES, Gateway
from tls_kit import ConnectProxy, make_pki, tls_upstream

PROXY_SECRET = "egress-pass-9f8e7d"
CHAINS = ("good", "mtls", "nocert", "wrongca", "refused")
RUBRIC = "\n".join(f'CHAIN {name} {{\n  RUNG only MODEL "{name}/m" {{\n    GATE non_empty ON ABSTAIN fail_closed\n  }}\n}}'
                   for name in CHAINS)


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    upstream, mtls = tls_upstream(pki), tls_upstream(pki, require_client_cert=True)
    upstream.default, mtls.default = completion("through the proxy"), completion("with a certificate")
    proxy, refusing = ConnectProxy(credentials=f"gw:{PROXY_SECRET}"), ConnectProxy(refuse=True)
    config = f"""
[providers.good]
base_url = "{upstream.url}"
ca_file = "{pki.ca}"
max_retries = 0

[providers.mtls]
base_url = "{mtls.url}"
ca_file = "{pki.ca}"
client_cert = "{pki.client_cert}"
client_key = "{pki.client_key}"
max_retries = 0

[providers.nocert]
base_url = "{mtls.url}"
ca_file = "{pki.ca}"
max_retries = 0

[providers.wrongca]
base_url = "{upstream.url}"
ca_file = "{pki.other_ca}"
max_retries = 0

[providers.refused]
base_url = "{upstream.url}"
ca_file = "{pki.ca}"
proxy = "{refusing.url()}"
max_retries = 0

[serve]
store = "receipts.db"
api_keys_env = "GATEWAY_KEYS"
"""
    environ = {name: "" for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy", "HTTP_PROXY")}
    environ.update(HTTPS_PROXY=proxy.url(f"gw:{PROXY_SECRET}"), https_proxy=proxy.url(f"gw:{PROXY_SECRET}"))
    gateway = Gateway(tmp_path_factory.mktemp("gw"), None, extra_env=environ, rubric=RUBRIC, config=config)
    yield gateway, pki, upstream, mtls, proxy, refusing
    assert gateway.stop() == 0
    for server in (upstream, mtls, proxy, refusing):
        server.stop()


def _ask(gateway: Gateway, chain: str):
    return gateway.client().chat.completions.create(model=chain, messages=[{"role": "user", "content": "hello"}])


def test_the_gateway_reaches_tls_upstreams_through_the_proxy(setting):
    gateway, _, upstream, mtls, proxy, _ = setting
    assert _ask(gateway, "good").choices[0].message.content == "through the proxy"
    assert _ask(gateway, "mtls").choices[0].message.content == "with a certificate"
    for server in (upstream, mtls):
        assert server.url.split("//")[1].split("/")[0] in proxy.tunnels


@pytest.mark.parametrize(("chain", "says"), [
    ("refused", "the proxy {refusing} refused: 403 Forbidden"),
    ("wrongca", "TLS: the server's certificate is not signed by a CA admiss trusts (ca_file {other_ca})"),
    ("nocert", "client certificate"),
])
def test_unreachable_upstreams_are_exhausted_with_the_reason_on_the_receipt(setting, chain, says):
    gateway, pki, _, _, _, refusing = setting
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        _ask(gateway, chain)
    receipt = httpx.get(f"{gateway.url}/v1/receipts/{refused.value.body['receipt_id']}",
                        headers={"authorization": f"Bearer {KEY}"}).json()
    [error] = receipt["model_errors"]
    assert error["rung"] == "only" and error["error"].startswith(f"provider {chain}: ")
    assert says.format(refusing=refusing.url(), other_ca=pki.other_ca) in error["error"]
    assert PROXY_SECRET not in str(receipt)


def test_the_start_up_log_names_each_providers_proxy_and_ca_without_secrets(setting):
    gateway, pki, _, _, proxy, refusing = setting
    log = gateway.log.read_text()
    assert f"provider good: proxy {proxy.url()} (HTTPS_PROXY), TLS trusting ca_file {pki.ca}, sent by aiohttp" in log
    assert f"provider refused: proxy {refusing.url()} (proxy in admiss.toml)" in log
    assert f"provider wrongca: proxy {proxy.url()} (HTTPS_PROXY), TLS trusting ca_file {pki.other_ca}" in log
    assert PROXY_SECRET not in log and "Traceback" not in log


def test_readyz_reports_a_provider_its_proxy_will_not_reach(setting):
    gateway, pki, upstream, mtls, proxy, refusing = setting
    answer = httpx.get(f"{gateway.url}/readyz", timeout=30)
    assert answer.status_code == 503
    problems = answer.json()["problems"]
    # good and mtls get an answer through the proxy; the other three get none, each for its reason.
    assert [p.split(":", 1)[0] for p in problems] == ["provider nocert", "provider refused", "provider wrongca"]
    assert problems[1] == (f"provider refused: cannot reach {upstream.url} through proxy {refusing.url()}: "
                           f"the proxy {refusing.url()} refused: 403 Forbidden")
    assert problems[0].startswith(f"provider nocert: cannot reach {mtls.url} through proxy {proxy.url()}: ")
    assert "client certificate" in problems[0]
    assert f"ca_file {pki.other_ca}" in problems[2]
    assert PROXY_SECRET not in answer.text


def test_serve_warns_at_start_of_each_model_without_a_price(tmp_path, upstream):
    # The default config prices fake/cheap, fake/strong and fake/judge; this one leaves out
    # the strong rung's and the judge's, which the gateway would record at $0.
    priced_cheap = CONFIG.format(url=upstream.url, grace_s=5, max_request_bytes=MAX_REQUEST_BYTES)
    for model in ("fake/strong", "fake/judge"):
        priced_cheap = re.sub(rf'\[prices\."{model}"\]\ninput_usd_per_mtok = [0-9.]+\noutput_usd_per_mtok = [0-9.]+\n',
                              "", priced_cheap)
    gw = Gateway(tmp_path, upstream, config=priced_cheap)
    try:
        log = gw.log.read_text()
    finally:
        assert gw.stop() == 0
    warned = re.findall(r'W176 (\S+) has no \[prices\."\1"\] in \S+admiss.toml', log)
    assert warned == ["fake/judge", "fake/strong"], log
