"""`admiss savings --html`: the page is opened in a real headless Chromium, which lays it
out; a script the test adds to a copy of the page measures every bar as drawn, and the test
checks the bars against the figures (count, labels, lengths in proportion)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from savings_receipts import PRICES, receipts, write_jsonl, write_store

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# .ci/run installs Chromium and sets ADMISS_REQUIRE_CHROMIUM, so there the test never skips.
pytestmark = pytest.mark.skipif(CHROMIUM is None and not os.environ.get("ADMISS_REQUIRE_CHROMIUM"),
                                reason="Chromium is not installed (.ci/run installs it)")

# A second chain whose name a page must show as text, never as markup.
HOSTILE = 'batch <b>&"x"</b>'

MEASURE = """<script>
const measured = [...document.querySelectorAll("svg.chart")].map(svg => ({
  chart: svg.dataset.chart,
  texts: [...svg.querySelectorAll("text")].map(t => t.textContent),
  legend: [...svg.closest("figure").querySelectorAll(".legend span")].map(s => ({
    name: s.textContent, colour: getComputedStyle(s.querySelector(".swatch")).backgroundColor})),
  bars: [...svg.querySelectorAll("rect.bar")].map(r => {
    const box = r.getBoundingClientRect();
    return {label: r.dataset.label, series: r.dataset.series, value: Number(r.dataset.value),
            width: box.width, height: box.height, fill: getComputedStyle(r).fill};
  }),
}));
const pre = document.createElement("pre");
pre.id = "measured";
pre.textContent = JSON.stringify({
  charts: measured,
  bold: document.querySelectorAll("svg b, td b").length,
  chains: [...document.querySelectorAll("#chains tr")].slice(1).map(row => [...row.cells].map(c => c.textContent)),
});
document.body.append(pre);
</script>"""


def _browse(page: Path, folder: Path) -> dict:
    """What Chromium measured on a copy of ``page`` with the measuring script added."""
    probe = folder / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    ran = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={folder / 'profile'}",
         "--window-size=1000,1400", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=60)
    found = re.search(r'<pre id="measured">(.*?)</pre>', ran.stdout, re.S)
    assert found, ran.stderr[-2000:]
    return json.loads(html.unescape(found.group(1)))


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """The figures (--format json) and the measured page, for the four receipts of
    savings_receipts.py in chain "serve" plus the first two again in a second chain."""
    folder = tmp_path_factory.mktemp("savings-html")
    (folder / "admiss.toml").write_text(PRICES, encoding="utf-8")
    store = write_store(folder / "receipts.db", receipts())
    others = [{**r, "id": f"b{i}", "chain": {**r["chain"], "name": HOSTILE}} for i, r in enumerate(receipts()[:2])]
    exported = write_jsonl(folder / "other.jsonl", others)
    page = folder / "savings.html"
    command = ["admiss", "savings", "--config", str(folder / "admiss.toml"), str(store), str(exported)]
    ran = subprocess.run([*command, "--format", "json", "--html", str(page)], capture_output=True, text=True,
                         timeout=60, cwd=folder)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout), _browse(page, folder)


def _chart(measured: dict, name: str) -> dict:
    [chart] = [c for c in measured["charts"] if c["chart"] == name]
    return chart


def _proportional(bars: list[dict], values: list[float]) -> None:
    """Drawn lengths stand to each other as the values do (to half a pixel)."""
    widest = max(range(len(values)), key=values.__getitem__)
    unit = bars[widest]["width"] / values[widest]
    assert unit > 0
    for bar, value in zip(bars, values):
        assert bar["width"] == pytest.approx(value * unit, abs=0.5), bar
        assert bar["height"] > 10


def test_the_page_draws_four_charts(drawn):
    _, measured = drawn
    assert [c["chart"] for c in measured["charts"]] == ["cost", "rung-spend", "gate-spend", "served"]


def test_spend_by_rung_has_a_model_and_a_gate_bar_per_rung_in_proportion(drawn):
    data, measured = drawn
    chart = _chart(measured, "rung-spend")
    rungs = [(c["chain"], r) for c in data["chains"] for r in c["rungs"]]
    # Two rungs a chain: the second chain's top rung never ran, yet is drawn (at zero).
    assert len(chart["bars"]) == 2 * len(rungs) == 8
    labels = [f"{chain} / {r['rung']}" for chain, r in rungs]
    assert [b["label"] for b in chart["bars"][::2]] == labels
    assert [b["series"] for b in chart["bars"]] == ["model", "gate"] * len(rungs)
    assert labels[0] in chart["texts"] and f'{HOSTILE} / draft' in chart["texts"]
    # Stacked: each rung's bar is as long as its model and gate spend together.
    totals = [r["model_cost_usd"] + r["gate_cost_usd"] for _, r in rungs]
    stacked = [{"width": m["width"] + g["width"], "height": m["height"]}
               for m, g in zip(chart["bars"][::2], chart["bars"][1::2])]
    _proportional(stacked, totals)
    for (_, rung), model_bar in zip(rungs, chart["bars"][::2]):
        assert model_bar["value"] == pytest.approx(rung["model_cost_usd"])
        assert f"${rung['model_cost_usd'] + rung['gate_cost_usd']:,.6f}" in chart["texts"]


def test_spend_by_gate_has_one_bar_per_gate(drawn):
    data, measured = drawn
    chart = _chart(measured, "gate-spend")
    gates = [g for c in data["chains"] for r in c["rungs"] for g in r["gates"]]
    assert len(chart["bars"]) == len(gates) == 6  # 2 gates a rung reached: serve's 2 rungs, the other's 1
    assert [b["label"].rsplit(" / ", 1)[1] for b in chart["bars"]] == [g["gate"] for g in gates]
    judge = [b for b in chart["bars"] if b["label"] == "serve / strong / judge"]
    assert judge and judge[0]["width"] > 0
    _proportional(chart["bars"], [g["gate_cost_usd"] for g in gates])


def test_served_by_rung_shows_each_share_and_the_exhausted(drawn):
    data, measured = drawn
    chart = _chart(measured, "served")
    serve = data["chains"][[c["chain"] for c in data["chains"]].index("serve")]
    bars = [b for b in chart["bars"] if b["label"].startswith("serve / ")]
    assert [b["label"] for b in bars] == ["serve / draft", "serve / strong", "serve / exhausted"]
    assert [round(b["value"], 6) for b in bars] == [0.5, 0.25, 0.25]  # 2, 1 and 1 of the 4 receipts
    _proportional(bars, [0.5, 0.25, 0.25])
    assert "50.0% (2)" in chart["texts"] and "25.0% (1)" in chart["texts"]
    assert serve["rungs"][0]["served_share"] == 0.5
    fills = {b["series"]: b["fill"] for b in chart["bars"]}
    assert fills["served"] != fills["exhausted"]


def test_cost_chart_compares_spend_with_the_top_rung(drawn):
    data, measured = drawn
    chart = _chart(measured, "cost")
    top, model, gate, saving = chart["bars"]
    # Like with like: the spend of the requests whose top-rung cost is known (4 of the 6).
    priced_model = 0.0004 + 0.0130 + 0.0114 + 0.0004
    priced_gate = 0.002 + 0.001
    assert data["priced_requests"] == 4
    assert data["priced_model_cost_usd"] == pytest.approx(priced_model)
    assert data["priced_gate_cost_usd"] == pytest.approx(priced_gate)
    _proportional([top, model, gate, saving], [data["top_rung_cost_usd"], priced_model, priced_gate,
                                              max(data["net_saving_usd"], 0.0)])
    assert data["net_saving_usd"] == pytest.approx(data["top_rung_cost_usd"] - priced_model - priced_gate)
    assert f"${data['top_rung_cost_usd']:,.6f}" in chart["texts"]


def test_names_from_receipts_are_text_not_markup(drawn):
    _, measured = drawn
    assert measured["bold"] == 0
    assert [row[0] for row in measured["chains"]] == [HOSTILE, "serve"]


def test_the_chain_table_shows_each_chains_figures(drawn):
    data, measured = drawn
    for row, chain in zip(measured["chains"], data["chains"]):
        assert row[1] == str(chain["requests"])
        assert row[-1] == f"${chain['net_saving_usd']:,.6f}"
    assert measured["chains"][1][1:3] == ["4", "50.0%"]


def test_a_net_loss_is_drawn_as_a_bar_of_its_own_colour_with_its_swatch(tmp_path, drawn):
    # Gates dear enough that the cascade costs more than the top rung alone would have.
    (tmp_path / "admiss.toml").write_text(PRICES, encoding="utf-8")
    dear = [{**r, "chain": {**r["chain"], "rungs": [{**rung, "gates": [{**g, "gate_cost_usd": 0.05} for g in rung["gates"]]}
                                                    for rung in r["chain"]["rungs"]]}} for r in receipts()]
    exported = write_jsonl(tmp_path / "dear.jsonl", dear)
    page = tmp_path / "savings.html"
    ran = subprocess.run(["admiss", "savings", "--config", str(tmp_path / "admiss.toml"), str(exported), "--format",
                          "json", "--html", str(page)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    data, measured = json.loads(ran.stdout), _browse(page, tmp_path)
    assert data["net_saving_usd"] < 0
    cost = _chart(measured, "cost")
    top, model, gate, loss = cost["bars"]
    assert (loss["label"], loss["series"]) == ("net loss", "loss")
    _proportional([top, model, gate, loss], [data["top_rung_cost_usd"], data["priced_model_cost_usd"],
                                             data["priced_gate_cost_usd"], -data["net_saving_usd"]])
    legend = {item["name"]: item["colour"] for item in cost["legend"]}
    assert legend["net loss (negative saving)"] == loss["fill"] and "net saving" not in legend
    # Its colour is none of the others': a loss never reads as a saving (the fixture's page has one) or a spend.
    saving_fill = _chart(drawn[1], "cost")["bars"][3]["fill"]
    assert loss["fill"] not in {top["fill"], model["fill"], gate["fill"], saving_fill}

