"""/metrics and /readyz: what the gateway counts, and what it reads from the error budgets."""

from __future__ import annotations

import json
import sys

import httpx
import pytest

import admiss
from admiss.serve.metrics import GatewayMetrics
from gatewaykit import GATE, GOOD, RUBRIC, Gateway, prompt

GRADE = json.dumps({"failure_hypotheses": ["h"], "evidence": ["e"], "rationale": "r", "score": 0.1})


def _delta(before: dict, after: dict, key: str) -> float:
    return after.get(key, 0.0) - before.get(key, 0.0)


def test_metrics_count_verdicts_serves_costs_and_latencies(gateway):
    before = gateway.metrics()
    for script in ({"cheap": "Paris", "judge": GRADE, "strong": "Lyon"}, {"cheap": "CRASH", "strong": "Lyon"}):
        _, text = prompt(script)
        gateway.client().chat.completions.create(model="judged" if "judge" in script else "tested",
                                                 messages=[{"role": "user", "content": text}])
    after = gateway.metrics()
    assert _delta(before, after, 'admiss_gate_verdicts_total{chain="judged",gate="judge",rung="cheap",verdict="fail"}') == 1
    assert _delta(before, after, 'admiss_serves_total{chain="judged",rung="strong"}') == 1
    assert _delta(before, after, 'admiss_gate_verdicts_total{chain="tested",gate="subprocess",rung="cheap",verdict="abstain"}') == 1
    assert _delta(before, after, 'admiss_requests_total{chain="tested",outcome="served"}') == 1
    # The judge's 120 tokens at $5 per million are gate spend; both rungs' calls are model spend.
    assert _delta(before, after, 'admiss_gate_cost_usd_total{chain="judged",gate="judge"}') == pytest.approx(600e-6)
    assert _delta(before, after, 'admiss_model_cost_usd_total{chain="judged",rung="strong"}') == pytest.approx(1400e-6)
    # A gate that costs nothing still has its cost series, at 0 (the counter's child is made
    # though a zero is never added to it).
    assert after['admiss_gate_cost_usd_total{chain="tested",gate="subprocess"}'] == 0
    assert _delta(before, after, 'admiss_gate_latency_seconds_count{chain="judged",gate="judge"}') == 1
    assert _delta(before, after, 'admiss_rung_latency_seconds_count{chain="tested",rung="strong"}') == 1
    assert after['admiss_gate_error_rate{chain="tested",gate="subprocess",position="0",rung="cheap"}'] > 0
    assert after['admiss_gates_disabled{chain="tested"}'] == 0
    assert after["admiss_in_flight_requests"] == 0


def test_a_gate_its_budget_disabled_shows_on_the_gauges(tmp_path, upstream):
    (tmp_path / "r.rubric").write_text(f"""
CHAIN c {{
  RUNG cheap MODEL "fake/cheap" {{
    GATE subprocess CMD [{json.dumps(sys.executable)}, {json.dumps(str(GATE))}, {json.dumps(str(tmp_path))}]
  }}
}}
""")
    (tmp_path / "admiss.toml").write_text(f'[providers.fake]\nbase_url = "{upstream.url}"\n[gates]\nbudget_min_runs = 3\n')
    router = admiss.Router(tmp_path / "r.rubric")
    metrics = GatewayMetrics({"c": router})
    try:
        for _ in range(3):
            _, text = prompt({"cheap": "CRASH"})
            router.complete_sync([{"role": "user", "content": text}])
        page = metrics.exposition()[0].decode()
        [health] = router.gate_health()
    finally:
        router.close()
    assert (health.gate, health.disabled, health.error_rate) == ("subprocess", True, 1.0)
    assert 'admiss_gates_disabled{chain="c"} 1.0' in page
    assert 'admiss_gate_disabled{chain="c",gate="subprocess",position="0",rung="cheap"} 1.0' in page
    assert 'admiss_gate_error_rate{chain="c",gate="subprocess",position="0",rung="cheap"} 1.0' in page


def test_readyz_names_an_unset_provider_key(tmp_path, upstream):
    gateway = Gateway(tmp_path, upstream, extra_env={"FAKE_PROVIDER_KEY": ""})
    try:
        ready = httpx.get(f"{gateway.url}/readyz")
        assert ready.status_code == 503
        assert ready.json()["problems"] == ["provider fake: environment variable FAKE_PROVIDER_KEY is not set"]
        assert httpx.get(f"{gateway.url}/healthz").status_code == 200
    finally:
        assert gateway.stop() == 0


def test_a_multiprocess_folder_set_for_another_program_is_not_used(tmp_path, upstream):
    foreign = tmp_path / "foreign-metrics"
    foreign.mkdir()
    (foreign / "counter_1.db").write_bytes(b"")  # another program's file: never read, never touched
    gateway = Gateway(tmp_path, upstream, extra_env={"PROMETHEUS_MULTIPROC_DIR": str(foreign)})
    try:
        _, text = prompt({"cheap": GOOD})
        gateway.client().chat.completions.create(model="json", messages=[{"role": "user", "content": text}])
        assert gateway.metrics()['admiss_requests_total{chain="json",outcome="served"}'] == 1
    finally:
        assert gateway.stop() == 0, gateway.log.read_text()
    assert [path.name for path in foreign.iterdir()] == ["counter_1.db"]


def _samples(page: str) -> dict[str, float]:
    return {line.rpartition(" ")[0]: float(line.rpartition(" ")[2]) for line in page.splitlines()
            if line and not line.startswith("#")}


def test_each_receipt_moves_the_series_of_what_it_says_and_only_those(tmp_path, upstream):
    # Receipts of several shapes, each shape more than once (observe keeps what it looked up):
    # a skipped gate has no latency series, and a gate's verdicts are counted apart.
    (tmp_path / "r.rubric").write_text(RUBRIC.split("CHAIN judged")[0])
    (tmp_path / "admiss.toml").write_text(f'[providers.fake]\nbase_url = "{upstream.url}"\n')
    router = admiss.Router(tmp_path / "r.rubric", chain="json")
    metrics = GatewayMetrics({"json": router})
    scripts = [{"cheap": "not json", "strong": GOOD}, {"cheap": GOOD}, {"cheap": "", "strong": "not json"}] * 2
    try:
        receipts = [router.complete_sync([{"role": "user", "content": prompt(s)[1]}]).receipt for s in scripts]
        page = _samples(metrics.exposition()[0].decode())
    finally:
        router.close()
    verdicts: dict[str, int] = {}
    latencies: dict[str, int] = {}
    for receipt in receipts:
        for rung in receipt["chain"]["rungs"]:
            for gate in rung["gates"]:
                key = f'chain="json",gate="{gate["gate"]}",rung="{rung["rung"]}",verdict="{gate["verdict"]}"'
                verdicts[key] = verdicts.get(key, 0) + 1
                if gate["verdict"] != "skipped":
                    latencies[gate["gate"]] = latencies.get(gate["gate"], 0) + 1
    assert any('verdict="skipped"' in key for key in verdicts) and len(verdicts) >= 4
    assert {key[len("admiss_gate_verdicts_total{"):-1]: value for key, value in page.items()
            if key.startswith("admiss_gate_verdicts_total{")} == verdicts
    assert {key.split('gate="')[1].split('"')[0]: value for key, value in page.items()
            if key.startswith("admiss_gate_latency_seconds_count{")} == latencies
    assert page['admiss_requests_total{chain="json",outcome="served"}'] == 4
    assert page['admiss_requests_total{chain="json",outcome="exhausted"}'] == 2
    assert page['admiss_serves_total{chain="json",rung="strong"}'] == 2
    assert page['admiss_serves_total{chain="json",rung="cheap"}'] == 2
    assert page['admiss_rung_latency_seconds_count{chain="json",rung="strong"}'] == 4
