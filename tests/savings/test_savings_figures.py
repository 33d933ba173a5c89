"""`admiss savings` as a user runs it (a real subprocess): on a replay of the shipped chain
bundles through `admiss check --format json`, on a real SQLite receipt store, on exported
receipts; every figure recomputed here by hand, not by admiss.savings. And bad inputs:
located errors, exit 2, nothing printed or written."""

from __future__ import annotations

import json
import re
import sys
import sqlite3
from pathlib import Path

import pytest

from savings_receipts import PRICES, receipts, write_jsonl, write_store

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "gates"))
from chat_server import ChatServer  # noqa: E402
# The three bundles whose figures this test recomputes by hand (checker_crashes.json, beside
# them, is there for admiss test's coverage of ON ABSTAIN: its checker crashes).
BUNDLES = [ROOT / "rubrics" / "bundles" / "sec_filings_serve" / name
           for name in ("draft_served.json", "escalated_to_strong.json", "exhausted.json")]


def _usd(value: float) -> str:
    """Dollars as the text tables show them: six decimals, a minus sign before the dollar."""
    return f"-${-value:,.6f}" if value < 0 else f"${value:,.6f}"


def _row(text: str, name: str) -> str:
    """The line of the text tables that starts with ``name`` in its first cell."""
    return next(line for line in text.splitlines() if re.match(rf"[│┃]\s*{re.escape(name)}\s*[│┃]", line))


def _no_traceback(ran) -> None:
    assert "Traceback" not in ran.err and "Traceback" not in ran.out


# ---------------------------------------------------------------- a replay of the shipped bundles


@pytest.fixture
def replay(admiss_cli, tmp_path):
    """The JSON reports of the shipped chain bundles, with subprocess gates priced so that
    gate spend is not zero, and the judge answered by a real chat server on 127.0.0.1 (a
    passing grade) so the replay gates as the live cascade would."""
    judge = ChatServer().start()
    config = tmp_path / "admiss.toml"
    config.write_text(f'[providers.openai]\nbase_url = "{judge.url}"\n\n'
                      "[gates]\nsubprocess_usd_per_second = 0.02\n", encoding="utf-8")
    try:
        ran = admiss_cli("check", "--format", "json", "--config", config, "--rubric",
                         ROOT / "rubrics" / "sec_filings_serve.rubric", *BUNDLES)
    finally:
        judge.stop()
    assert ran.code == 1, ran.err  # exhausted.json fails
    reports = tmp_path / "reports.json"
    reports.write_text(ran.out, encoding="utf-8")
    return [json.loads(line) for line in ran.out.splitlines()], reports


def test_replay_of_the_shipped_bundles_figures_recomputed_by_hand(admiss_cli, replay):
    reports, path = replay
    assert len(reports) == len(BUNDLES) == 3
    # By hand: spend is what the reports' rungs and gates cost; the top rung alone would have
    # cost what each bundle's top-rung ("strong") candidate cost, read from the bundle files.
    model = sum(r["cost_usd"] for report in reports for r in report["chain"]["rungs"])
    gate = sum(g["gate_cost_usd"] for report in reports for r in report["chain"]["rungs"] for g in r["gates"])
    top = sum(c["cost_usd"] for b in BUNDLES for c in json.loads(b.read_text())["candidates"] if c["rung"] == "strong")
    assert gate > 0 and top == pytest.approx(0.036)
    ran_top = sum(any(r["rung"] == "strong" for r in report["chain"]["rungs"]) for report in reports)
    escalated = sum(any(r["outcome"] == "escalated" for r in report["chain"]["rungs"]) for report in reports)
    served = [report["chain"]["served"] for report in reports]

    ran = admiss_cli("savings", "--format", "json", path)
    assert ran.code == 0, ran.err
    data = json.loads(ran.out)
    assert data["requests"] == 3 and data["served"] == 2 and data["exhausted"] == 1
    assert data["model_cost_usd"] == pytest.approx(model) and model == pytest.approx(0.0252)
    assert data["gate_cost_usd"] == pytest.approx(gate)
    assert data["top_rung_cost_usd"] == pytest.approx(top)
    assert data["top_rung_cost"] == {"actual": ran_top, "estimated": 3 - ran_top, "unpriced": 0} == {
        "actual": 2, "estimated": 1, "unpriced": 0}
    assert data["gross_saving_usd"] == pytest.approx(top - model)
    assert data["net_saving_usd"] == pytest.approx(top - model - gate)
    assert data["escalation_rate"] == pytest.approx(escalated / 3) and escalated == 2
    [chain] = data["chains"]
    rungs = {r["rung"]: r for r in chain["rungs"]}
    assert [r["rung"] for r in chain["rungs"]] == ["draft", "strong"]
    for name in ("draft", "strong"):
        assert rungs[name]["served"] == served.count(name) == 1
        assert rungs[name]["served_share"] == pytest.approx(1 / 3)
        assert rungs[name]["model_cost_usd"] == pytest.approx(
            sum(r["cost_usd"] for report in reports for r in report["chain"]["rungs"] if r["rung"] == name))
    subprocess_gate = next(g for g in rungs["strong"]["gates"] if g["gate"] == "subprocess")
    # By hand: the strong rung's subprocess gate ran where no cheaper gate failed first.
    verdicts = [g["verdict"] for report in reports for r in report["chain"]["rungs"] if r["rung"] == "strong"
                for g in r["gates"] if g["gate"] == "subprocess" and g["verdict"] != "skipped"]
    assert verdicts  # the replay runs the subprocess gate at least once, or this proves nothing
    assert (subprocess_gate["runs"], subprocess_gate["pass"], subprocess_gate["fail"]) == (
        len(verdicts), verdicts.count("pass"), verdicts.count("fail"))
    assert subprocess_gate["gate_cost_usd"] == pytest.approx(gate)  # the only priced gate

    text = admiss_cli("savings", path)
    assert text.code == 0, text.err
    assert _usd(model) in _row(text.out, "model spend")
    assert _usd(gate) in _row(text.out, "gate spend")
    assert _usd(top) in _row(text.out, "top-rung cost")
    assert [_row(text.out, f"  {word}").split()[-2] for word in ("actual", "estimated", "unpriced")] == ["2", "1", "0"]
    assert _usd(top - model - gate) in _row(text.out, "net saving")
    assert "66.7%" in _row(text.out, "escalation rate")
    assert "33.3%" in _row(text.out, "serve")  # the chain's first rung row: draft's share


def test_reports_as_one_object_per_file_and_as_an_array_read_alike(admiss_cli, replay, tmp_path):
    reports, lines = replay
    array = tmp_path / "array.json"
    array.write_text(json.dumps(reports, indent=2), encoding="utf-8")
    singles = []
    for i, report in enumerate(reports):
        singles.append(tmp_path / f"one{i}.json")
        singles[-1].write_text(json.dumps(report, indent=2), encoding="utf-8")
    outs = [admiss_cli("savings", "--format", "json", *args) for args in ([lines], [array], singles)]
    assert [o.code for o in outs] == [0, 0, 0]
    assert outs[0].out == outs[1].out == outs[2].out


# ---------------------------------------------------------------- receipts


@pytest.fixture
def priced(tmp_path):
    config = tmp_path / "admiss.toml"
    config.write_text(PRICES, encoding="utf-8")
    return config


# By hand, from the four receipts in savings_receipts.py (model spend, gate spend, top-rung price):
#   r1: 0.0004, 0     ; draft served, top never ran: (1000 x $3 + 200 x $15) / 1e6 = 0.006 (estimated)
#   r2: 0.0003, 0     ; draft served, no token counts: unpriced
#   r3: 0.0130, 0.002 ; escalated, strong served: its real call, 0.0125 (actual)
#   r4: 0.0114, 0.001 ; exhausted: strong ran, 0.011 (actual)
HAND = {
    "requests": 4, "served": 3, "exhausted": 1, "escalated": 2, "escalation_rate": 0.5,
    "model_cost_usd": 0.0004 + 0.0003 + 0.0130 + 0.0114,
    "gate_cost_usd": 0.002 + 0.001,
    "top_rung_cost_usd": 0.006 + 0.0125 + 0.011,
    "top_rung_cost": {"actual": 2, "estimated": 1, "unpriced": 1},
    "priced_requests": 3,
    # Savings compare the priced requests only (r2 left out on both sides).
    "gross_saving_usd": (0.006 + 0.0125 + 0.011) - (0.0004 + 0.0130 + 0.0114),
    "net_saving_usd": (0.006 + 0.0125 + 0.011) - (0.0004 + 0.0130 + 0.0114) - (0.002 + 0.001),
}


def _assert_hand_figures(data: dict) -> None:
    for key, value in HAND.items():
        assert data[key] == (pytest.approx(value) if isinstance(value, float) else value), key
    assert data["unpriced_notes"] == {"the last rung call reported no token counts": 1}
    [chain] = data["chains"]
    draft, strong = chain["rungs"]
    assert (draft["rung"], draft["reached"], draft["served"], draft["served_share"]) == ("draft", 4, 2, 0.5)
    assert (strong["rung"], strong["reached"], strong["served"], strong["served_share"]) == ("strong", 2, 1, 0.25)
    assert draft["model_cost_usd"] == pytest.approx(0.0004 + 0.0003 + 0.0005 + 0.0004)
    json_valid = draft["gates"][1]
    assert (json_valid["gate"], json_valid["runs"], json_valid["pass"], json_valid["fail"], json_valid["skipped"]) == (
        "json_valid", 3, 2, 1, 1)
    judge = strong["gates"][1]
    assert (judge["gate"], judge["pass"], judge["abstain"]) == ("judge", 1, 1)
    assert judge["gate_cost_usd"] == pytest.approx(0.003) and strong["gate_cost_usd"] == pytest.approx(0.003)


def test_a_real_receipt_store(admiss_cli, tmp_path, priced):
    store = write_store(tmp_path / "receipts #1?.db", receipts())  # URI-special characters in the name
    ran = admiss_cli("savings", "--config", priced, "--format", "json", store)
    assert ran.code == 0, ran.err
    _assert_hand_figures(json.loads(ran.out))


def test_a_store_in_wal_mode_with_a_writer_open(admiss_cli, tmp_path, priced):
    store = write_store(tmp_path / "receipts.db", [])
    writer = sqlite3.connect(store)
    writer.execute("PRAGMA journal_mode=WAL")
    with writer:
        for body in receipts():
            writer.execute("INSERT INTO receipts VALUES (?, ?, 'serve', NULL, 'x', 0, 0, ?)",
                           (body["id"], body["created_at"], json.dumps(body)))
    try:
        ran = admiss_cli("savings", "--config", priced, "--format", "json", store)
    finally:
        writer.close()
    assert ran.code == 0, ran.err
    _assert_hand_figures(json.loads(ran.out))


def test_exported_receipts(admiss_cli, tmp_path, priced):
    exported = write_jsonl(tmp_path / "receipts.jsonl", receipts())
    ran = admiss_cli("savings", "--config", priced, "--format", "json", exported)
    assert ran.code == 0, ran.err
    _assert_hand_figures(json.loads(ran.out))
    text = admiss_cli("savings", "--config", priced, exported)
    assert _usd(HAND["net_saving_usd"]) in _row(text.out, "net saving")
    assert [_row(text.out, f"  {word}").split()[-2] for word in ("actual", "estimated", "unpriced")] == ["2", "1", "1"]
    assert "unpriced (1): the last rung call reported no token counts" in text.out


def test_without_a_price_for_the_top_model_the_estimate_is_unpriced_and_says_why(admiss_cli, tmp_path):
    exported = write_jsonl(tmp_path / "receipts.jsonl", receipts())
    data = json.loads(admiss_cli("savings", "--format", "json", exported).out)
    assert data["top_rung_cost"] == {"actual": 2, "estimated": 0, "unpriced": 2}
    assert data["unpriced_notes"] == {'no [prices."anthropic/claude-sonnet-5"] in admiss.toml': 2}
    assert data["top_rung_cost_usd"] == pytest.approx(0.0125 + 0.011)
    assert data["net_saving_usd"] == pytest.approx(0.0125 + 0.011 - 0.0130 - 0.0114 - 0.003)


def test_stores_exports_and_reports_add_up_by_chain(admiss_cli, tmp_path, priced, replay):
    _, reports = replay
    store = write_store(tmp_path / "receipts.db", receipts())
    data = json.loads(admiss_cli("savings", "--config", priced, "--format", "json", store, reports).out)
    assert data["requests"] == 7
    assert [c["chain"] for c in data["chains"]] == ["serve"]  # both name their chain "serve"
    assert data["model_cost_usd"] == pytest.approx(HAND["model_cost_usd"] + 0.0252)


# ---------------------------------------------------------------- bad inputs


def _bad_body(body: dict) -> dict:
    body["chain"]["rungs"][0]["cost_usd"] = "cheap"
    return body


@pytest.mark.parametrize("name, make, expected", [
    ("plain.txt", lambda p: p.write_text("hello\n"), r"plain\.txt:1:1: E170 invalid JSON"),
    ("bin.db", lambda p: p.write_bytes(b"\x00\xff\xfe not sqlite"), r"bin\.db:1:2: E001 cannot read: not UTF-8 text \(byte 0xff\)"),
    ("damaged.db", lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x07" * 600),
     r"damaged\.db: E171 (the receipt store is damaged|not a receipt store)"),
    ("other.db", lambda p: sqlite3.connect(p).execute("CREATE TABLE t (x)").connection.commit(),
     r"other\.db: E171 not a receipt store \(no receipts table of the admiss schema\)"),
    ("rows.db", lambda p: write_store(p, [receipts()[0], "{not json", _bad_body(receipts()[2])]),
     r"rows\.db: E170 receipt 'bad2': its body is not JSON .*\n.*rows\.db: E173 receipt 'r3': "
     r"chain\.rungs\[0\]\.cost_usd: must be a number from 0 to 1e\+09, not \"cheap\""),
    ("lines.jsonl", lambda p: p.write_text(json.dumps(receipts()[0]) + '\n{"chain": [\n'),
     r"lines\.jsonl:2:\d+: E170 invalid JSON"),
    ("report.json", lambda p: p.write_text('{"verdict": "pass", "properties": []}'),
     r"report\.json:1:1: E172 chain: missing: this check report has no chain"),
    ("other.json", lambda p: p.write_text('[1]'), r"other\.json: E172 \[0\]: must be a receipt or a check report"),
    ("served.jsonl", lambda p: p.write_text(json.dumps({**receipts()[0], "chain": {
        **receipts()[0]["chain"], "served": "strong"}}) + "\n"),
     r"served\.jsonl:1:1: E173 chain\.served: names 'strong', but no rung in chain\.rungs served"),
    ("verdict.jsonl", lambda p: p.write_text(json.dumps(receipts()[0]).replace('"verdict": "pass"', '"verdict": 7') + "\n"),
     r"verdict\.jsonl:1:1: E173 chain\.rungs\[0\]\.gates\[0\]\.verdict: must be one of pass, fail, abstain, skipped"),
    ("missing.json", None, r"missing\.json: E001 no such file"),
    ("kind.jsonl", lambda p: p.write_text(json.dumps(receipts()[0]).replace('"prompt_tokens": 1000', '"prompt_tokens": "1000"')),
     r"kind\.jsonl:1:1: E173 usage\[0\]\.prompt_tokens: must be a whole number from 0 to 1e\+12 or null"),
    ("digits.jsonl", lambda p: p.write_text('{"chain": ' + "9" * 5000 + "}\n"),
     r"digits\.jsonl:1:1: E170 invalid JSON: Exceeds the limit"),
    ("deep.json", lambda p: p.write_text("[" * 100000 + "]" * 100000), r"deep\.json: E170 invalid JSON: nested too deeply"),
    ("array.json", lambda p: p.write_text(json.dumps([receipts()[0], {"chain": 5}])),
     r"array\.json: E173 \[1\]\.chain: must be an object, not a number"),
])
def test_bad_inputs_give_located_errors_and_exit_2(admiss_cli, tmp_path, name, make, expected):
    path = tmp_path / name
    if make is not None:
        make(path)
    page = tmp_path / "page.html"
    ran = admiss_cli("savings", "--html", page, path)
    assert ran.code == 2, (ran.out, ran.err)
    _no_traceback(ran)
    assert re.search(expected, ran.err), ran.err
    assert ran.out == "" and not page.exists()


def _absurd(body: dict, place: str, value: str) -> str:
    """``body`` as JSON text with the number at ``place`` (its first occurrence) set to ``value``."""
    text = json.dumps(body)
    assert place in text
    return text.replace(place, place.split(":")[0] + ": " + value, 1)


# A receipt an older gateway priced absurdly, or whose upstream reported absurd usage, is a
# well-formed record with one unbelievable number: savings skips it, names it, reports the rest.
@pytest.mark.parametrize("place, value, path", [
    ('"cost_usd": 0.0004', "2e12", r"chain\.rungs\[0\]\.cost_usd: must be a number from 0 to 1e\+09, not 2000000000000\.0"),
    ('"cost_usd": 0.0004', "1e400", r"chain\.rungs\[0\]\.cost_usd: must be a number from 0 to 1e\+09, not Infinity"),
    ('"cost_usd": 0.0004', "-0.5", r"chain\.rungs\[0\]\.cost_usd: must be a number from 0 to 1e\+09, not -0\.5"),
    ('"gate_cost_usd": 0.0', "NaN", r"chain\.rungs\[0\]\.gates\[0\]\.gate_cost_usd: must be a number from 0 to 1e\+09, not NaN"),
    ('"prompt_tokens": 1000', "9" * 400, r"usage\[0\]\.prompt_tokens: must be a whole number from 0 to 1e\+12 or null"),
])
def test_an_absurd_receipt_is_skipped_and_named_and_the_rest_is_reported(admiss_cli, tmp_path, priced, place, value, path):
    absurd = json.loads(_absurd(receipts()[0], place, value))
    absurd["id"] = "r9-old-gateway"
    store = write_store(tmp_path / "receipts.db", [*receipts(), absurd])
    page = tmp_path / "page.html"
    ran = admiss_cli("savings", "--config", priced, "--format", "json", "--html", page, store)
    assert ran.code == 0, ran.err
    _no_traceback(ran)
    assert re.fullmatch(rf"\S*receipts\.db: W175 receipt 'r9-old-gateway': skipped: {path}.*\n", ran.err), ran.err
    data = json.loads(ran.out)
    _assert_hand_figures(data)  # the four other receipts, exactly as without the absurd one
    assert data["skipped"] == 1 and len(data["skipped_notes"]) == 1 and "r9-old-gateway" in data["skipped_notes"][0]
    assert "r9-old-gateway" in page.read_text(encoding="utf-8")
    text = admiss_cli("savings", "--config", priced, store)
    assert text.code == 0 and "skipped (1)" in text.out and "W175 receipt 'r9-old-gateway'" in text.err


def test_an_absurd_line_of_exported_receipts_is_named_by_its_line(admiss_cli, tmp_path, priced):
    lines = [json.dumps(r) for r in receipts()]
    lines.insert(1, _absurd(receipts()[0], '"cost_usd": 0.0004', "2e12"))
    exported = tmp_path / "receipts.jsonl"
    exported.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ran = admiss_cli("savings", "--config", priced, "--format", "json", exported)
    assert ran.code == 0 and f"{exported}:2:1: W175 skipped: chain.rungs[0].cost_usd" in ran.err, ran.err
    _assert_hand_figures(json.loads(ran.out))


def test_absurd_receipts_do_not_flood_the_output(admiss_cli, tmp_path, priced):
    absurd = json.loads(_absurd(receipts()[0], '"cost_usd": 0.0004', "2e12"))
    store = write_store(tmp_path / "receipts.db", [*receipts(), *({**absurd, "id": f"old{i}"} for i in range(50))])
    ran = admiss_cli("savings", "--config", priced, "--format", "json", store)
    data = json.loads(ran.out)
    assert ran.code == 0 and data["skipped"] == 50 and len(data["skipped_notes"]) == 20
    assert ran.err.count("W175 receipt") == 20 and "W175 30 more records skipped" in ran.err
    _assert_hand_figures(data)


def test_a_malformed_record_beside_an_absurd_one_still_refuses_the_input(admiss_cli, tmp_path, priced):
    absurd = json.loads(_absurd(receipts()[0], '"cost_usd": 0.0004', "2e12"))
    store = write_store(tmp_path / "receipts.db", [*receipts()[1:], {**absurd, "id": "old"}, _bad_body(receipts()[0])])
    ran = admiss_cli("savings", "--config", priced, store)
    assert ran.code == 2 and ran.out == "" and "E173 receipt 'r1'" in ran.err, ran.err


def test_a_bad_line_shows_the_line_and_a_caret(admiss_cli, tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(receipts()[0]) + '\n{"chain": }\n', encoding="utf-8")
    ran = admiss_cli("savings", path)
    assert ran.code == 2
    assert ran.err.splitlines()[:3] == [f"{path}:2:11: E170 invalid JSON: Expecting value",
                                        '  {"chain": }', "            ^"]


def test_every_bad_file_is_reported_not_only_the_first(admiss_cli, tmp_path):
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text("[\n", encoding="utf-8")
    two.write_text("{}\n", encoding="utf-8")
    ran = admiss_cli("savings", one, two)
    assert ran.code == 2 and "one.jsonl:1:2: E170" in ran.err and "two.jsonl:1:1: E172" in ran.err


def test_a_flood_of_bad_lines_stops_at_a_limit(admiss_cli, tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_text("{}\n" * 500, encoding="utf-8")
    ran = admiss_cli("savings", path)
    assert ran.code == 2 and ran.err.count("E172") == 20 and "E174 stopped reading after 20 errors" in ran.err


def test_a_bad_config_exits_2(admiss_cli, tmp_path):
    config = tmp_path / "admiss.toml"
    config.write_text('[prices."x/y"]\ninput_usd_per_mtok = "free"\n', encoding="utf-8")
    exported = write_jsonl(tmp_path / "receipts.jsonl", receipts())
    ran = admiss_cli("savings", "--config", config, exported)
    assert ran.code == 2 and "admiss.toml:2:1: E001" in ran.err
    _no_traceback(ran)


def test_no_receipts_gives_zeros_not_an_error(admiss_cli, tmp_path):
    store = write_store(tmp_path / "empty.db", [])
    data = json.loads(admiss_cli("savings", "--format", "json", store).out)
    assert data["requests"] == 0 and data["escalation_rate"] is None and data["chains"] == []


def test_an_html_file_that_cannot_be_written_exits_2_and_prints_nothing(admiss_cli, tmp_path):
    exported = write_jsonl(tmp_path / "receipts.jsonl", receipts())
    ran = admiss_cli("savings", "--html", tmp_path / "no" / "such" / "page.html", exported)
    assert ran.code == 2 and "page.html: E001 cannot write" in ran.err and ran.out == ""
    _no_traceback(ran)


def test_html_is_written_whole_beside_the_figures(admiss_cli, tmp_path):
    exported = write_jsonl(tmp_path / "receipts.jsonl", receipts())
    page = tmp_path / "page.html"
    ran = admiss_cli("savings", "--format", "json", "--html", page, exported)
    assert ran.code == 0 and json.loads(ran.out)["requests"] == 4
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert "<script" not in text and not re.search(r"https?://", text.replace('xmlns="http://www.w3.org/2000/svg"', ""))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".page")] == []  # no temporary file left


def test_a_net_loss_prints_as_negative_dollars(admiss_cli, tmp_path):
    # Priced gates that cost more than the cascade saves: the net saving is below zero.
    expensive = [dict(r, chain=dict(r["chain"], rungs=[dict(g, gates=[dict(x, gate_cost_usd=0.05) for x in g["gates"]])
                                                         for g in r["chain"]["rungs"]])) for r in receipts()]
    exported = write_jsonl(tmp_path / "receipts.jsonl", expensive)
    config = tmp_path / "admiss.toml"
    config.write_text(PRICES, encoding="utf-8")
    data = json.loads(admiss_cli("savings", "--config", config, "--format", "json", exported).out)
    # The priced requests r1, r3, r4 ran 2, 4 and 4 gates at $0.05.
    assert data["net_saving_usd"] == pytest.approx(HAND["gross_saving_usd"] - 10 * 0.05)
    text = admiss_cli("savings", "--config", config, exported).out
    assert f"-${10 * 0.05 - HAND['gross_saving_usd']:,.6f}" in _row(text, "net saving")



def test_a_bundle_without_a_top_rung_cost_leaves_its_request_unpriced(admiss_cli, tmp_path):
    bundle = json.loads(BUNDLES[0].read_text(encoding="utf-8"))  # draft_served.json
    assert BUNDLES[0].name == "draft_served.json"
    del bundle["candidates"][1]["cost_usd"]
    (tmp_path / "b.json").write_text(json.dumps(bundle), encoding="utf-8")
    # The draft serves, so the strong rung's judge is never reached: offline calls nothing.
    report = admiss_cli("check", "--offline", "--format", "json", "--rubric",
                        ROOT / "rubrics" / "sec_filings_serve.rubric", tmp_path / "b.json")
    assert json.loads(report.out)["chain"]["top_rung"] == {"rung": "strong", "model": "anthropic/claude-sonnet-5",
                                                           "cost_usd": None}
    (tmp_path / "r.json").write_text(report.out, encoding="utf-8")
    data = json.loads(admiss_cli("savings", "--format", "json", tmp_path / "r.json").out)
    assert data["top_rung_cost"] == {"actual": 0, "estimated": 0, "unpriced": 1}
    assert data["unpriced_notes"] == {"the bundle gave no cost_usd for its top-rung candidate": 1}
    assert data["model_cost_usd"] == pytest.approx(0.0004) and data["net_saving_usd"] == 0


# ---------------------------------------------------------------- what the figures cannot count


def _with_skip_reasons(bodies: list[dict]) -> list[dict]:
    """receipts() with the reasons the cascade gives its skipped gates (r4's json_valid never
    ran: non_empty failed first), and a fifth receipt whose rung call failed."""
    out = json.loads(json.dumps(bodies))
    out[3]["chain"]["rungs"][0]["gates"][1]["reason"] = "not run: an earlier gate failed"
    failed = json.loads(json.dumps(bodies[0]))
    failed["id"] = "r5"
    failed["chain"]["rungs"][0]["outcome"] = "escalated"
    failed["chain"]["served"] = None
    for gate in failed["chain"]["rungs"][0]["gates"]:
        gate.update(verdict="skipped", effective="skipped", reason="not run: the rung's model call failed: HTTP 500")
    return out + [failed]


def test_a_skipped_gate_shows_its_count_and_why_it_never_ran(admiss_cli, tmp_path, priced):
    exported = write_jsonl(tmp_path / "receipts.jsonl", _with_skip_reasons(receipts()))
    data = json.loads(admiss_cli("savings", "--config", priced, "--format", "json", exported).out)
    non_empty, json_valid = data["chains"][0]["rungs"][0]["gates"]
    assert (json_valid["runs"], json_valid["skipped"]) == (3, 2)
    assert json_valid["skipped_reasons"] == {"not run: an earlier gate failed": 1,
                                             "not run: the rung's model call failed: HTTP 500": 1}
    assert (non_empty["skipped"], non_empty["skipped_reasons"]) == (1, {
        "not run: the rung's model call failed: HTTP 500": 1})
    wide = admiss_cli("savings", "--config", priced, exported, env={"COLUMNS": "120"}).out
    header = next(line for line in wide.splitlines() if "abstain" in line)
    assert [cell.strip() for cell in header.split("┃")][3:8] == ["runs", "pass", "fail", "abstain", "skipped"]
    json_valid_row = next(line for line in wide.splitlines() if "json_valid" in line and "│" in line)
    assert [cell.strip() for cell in json_valid_row.split("│")][3:8] == ["3", "2", "1", "0", "2"]
    why = ("skipped 2x, serve / draft / json_valid: not run: an earlier gate failed (1); not run: the rung's "
           "model call failed: HTTP 500 (1)")
    assert why in " ".join(wide.split())
    # Too narrow for the table, each row is a block of lines, the skipped count among them.
    narrow = admiss_cli("savings", "--config", priced, exported, env={"COLUMNS": "60"}).out
    assert "gate: json_valid\nruns: 3\npass: 2\nfail: 1\nabstain: 0\nskipped: 2\n" in narrow
    assert why in " ".join(narrow.split())


def test_calls_of_a_model_without_a_price_are_warned_of_not_counted_silently(admiss_cli, tmp_path, priced):
    bodies = receipts()
    bodies[0]["usage"].append({"rung": "draft", "model": "local/llama", "purpose": "judge", "prompt_tokens": 800,
                               "completion_tokens": 40, "cost_usd": 0.0})
    exported = write_jsonl(tmp_path / "receipts.jsonl", bodies)
    ran = admiss_cli("savings", "--config", priced, "--format", "json", exported)
    assert ran.code == 0, ran.err
    assert json.loads(ran.out)["unpriced_models"] == {"local/llama": 1}
    assert 'W176 local/llama has no [prices."local/llama"] in admiss.toml: 1 of its calls are counted at $0' in ran.err
    # Only the call counted at $0: the draft model, also without a price here, had its cost recorded.
    assert "gpt-5-mini" not in ran.err
    text = admiss_cli("savings", "--config", priced, exported)
    assert "unpriced model: local/llama has no price in admiss.toml; 1 of its calls count $0 here" in " ".join(text.out.split())
    # A model priced at zero (a local one) is priced: no warning.
    free = tmp_path / "free.toml"
    free.write_text(priced.read_text() + '\n[prices."local/llama"]\ninput_usd_per_mtok = 0\noutput_usd_per_mtok = 0\n')
    ran = admiss_cli("savings", "--config", free, "--format", "json", exported)
    assert "W176" not in ran.err and json.loads(ran.out)["unpriced_models"] == {}
