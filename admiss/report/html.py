"""The savings page: the figures of ``admiss savings`` with charts, as one self-contained HTML file.

The charts are SVG drawn here (no script, no stylesheet or font from elsewhere), so the page
opens the same offline, in a mail attachment, or in a CI artifact viewer.
"""

from __future__ import annotations

from html import escape
from typing import Iterable

# Chart geometry, in SVG user units (= CSS pixels at 100%).
_LABEL_WIDTH, _BAR_MAX, _VALUE_WIDTH, _ROW, _BAR = 220, 360, 130, 26, 18
_MODEL_COLOUR, _GATE_COLOUR, _SERVED_COLOUR, _EXHAUSTED_COLOUR, _TOP_COLOUR, _SAVING_COLOUR = (
    "#3b6fb6", "#d08a2e", "#3f9a5a", "#c0473d", "#7a7a7a", "#2f8f83")
# A net saving below zero (the cascade cost more than the top rung alone): drawn as a bar of
# its size in a colour of its own, so the chart shows the loss rather than no bar at all.
_LOSS_COLOUR = "#a8326e"

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; color: #222; margin: 2em auto; max-width: 980px; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: .25em .8em; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.note { text-align: left; color: #666; }
svg text { font: 13px system-ui, sans-serif; fill: #222; }
svg text.value { fill: #444; }
.legend span { display: inline-block; margin-right: 1.5em; }
.swatch { display: inline-block; width: .9em; height: .9em; vertical-align: -.1em; margin-right: .3em; }
"""


def _usd(value: float) -> str:
    return f"-${-value:,.6f}" if value < 0 else f"${value:,.6f}"


def _percent(share: float | None) -> str:
    return "—" if share is None else f"{share:.1%}"


def _bar_chart(chart: str, title: str, rows: list[tuple[str, list[tuple[str, float, str]], str]],
               scale: float, legend: str = "") -> str:
    """One horizontal bar per row; a row is (label, segments, value text), a segment is
    (series, value, colour), stacked left to right. ``scale`` is the value of a full bar."""
    height = _ROW * len(rows) + 8
    width = _LABEL_WIDTH + _BAR_MAX + _VALUE_WIDTH
    parts = [f'<svg class="chart" data-chart="{chart}" role="img" aria-label="{escape(title)}" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">']
    for i, (label, segments, shown) in enumerate(rows):
        y = 4 + i * _ROW
        parts.append(f'<text x="{_LABEL_WIDTH - 8}" y="{y + _BAR - 4}" text-anchor="end">{escape(label)}</text>')
        x = float(_LABEL_WIDTH)
        for series, value, colour in segments:
            length = _BAR_MAX * value / scale if scale > 0 else 0.0
            parts.append(f'<rect class="bar" data-label="{escape(label)}" data-series="{series}" '
                         f'data-value="{value!r}" x="{x:.3f}" y="{y}" width="{length:.3f}" height="{_BAR}" '
                         f'fill="{colour}"><title>{escape(label)} {series}: {escape(shown)}</title></rect>')
            x += length
        parts.append(f'<text class="value" x="{x + 6:.3f}" y="{y + _BAR - 4}">{escape(shown)}</text>')
    parts.append("</svg>")
    return f'<figure><figcaption><h2>{escape(title)}</h2></figcaption>{"".join(parts)}{legend}</figure>'


def _legend(items: Iterable[tuple[str, str]]) -> str:
    spans = "".join(f'<span><i class="swatch" style="background:{colour}"></i>{escape(name)}</span>'
                    for name, colour in items)
    return f'<p class="legend">{spans}</p>'


def _rung_label(data: dict, chain: dict, name: str) -> str:
    return name if len(data["chains"]) == 1 else f"{chain['chain']} / {name}"


def _cost_chart(data: dict) -> str:
    net = data["net_saving_usd"]
    saving = ("loss", -net, _LOSS_COLOUR) if net < 0 else ("saving", net, _SAVING_COLOUR)
    rows = [("top rung alone", [("top", data["top_rung_cost_usd"], _TOP_COLOUR)], _usd(data["top_rung_cost_usd"])),
            ("spent", [("model", data["priced_model_cost_usd"], _MODEL_COLOUR),
                       ("gate", data["priced_gate_cost_usd"], _GATE_COLOUR)],
             _usd(data["priced_model_cost_usd"] + data["priced_gate_cost_usd"])),
            ("net loss" if net < 0 else "net saving", [saving], _usd(net))]
    scale = max(data["top_rung_cost_usd"], data["priced_model_cost_usd"] + data["priced_gate_cost_usd"])
    title = f"Cost against the top rung alone ({data['priced_requests']} priced requests)"
    return _bar_chart("cost", title, rows, scale, _legend(
        [("top rung alone", _TOP_COLOUR), ("model spend", _MODEL_COLOUR), ("gate spend", _GATE_COLOUR),
         ("net loss (negative saving)", _LOSS_COLOUR) if net < 0 else ("net saving", _SAVING_COLOUR)]))


def _rung_spend_chart(data: dict) -> str:
    rows = [(_rung_label(data, chain, rung["rung"]),
             [("model", rung["model_cost_usd"], _MODEL_COLOUR), ("gate", rung["gate_cost_usd"], _GATE_COLOUR)],
             _usd(rung["model_cost_usd"] + rung["gate_cost_usd"]))
            for chain in data["chains"] for rung in chain["rungs"]]
    scale = max((r[1][0][1] + r[1][1][1] for r in rows), default=0.0)
    return _bar_chart("rung-spend", "Spend by rung", rows, scale, _legend(
        [("model spend", _MODEL_COLOUR), ("gate spend", _GATE_COLOUR)]))


def _gate_spend_chart(data: dict) -> str:
    rows = [(f"{_rung_label(data, chain, rung['rung'])} / {gate['gate']}",
             [("gate", gate["gate_cost_usd"], _GATE_COLOUR)], _usd(gate["gate_cost_usd"]))
            for chain in data["chains"] for rung in chain["rungs"] for gate in rung["gates"]]
    scale = max((r[1][0][1] for r in rows), default=0.0)
    return _bar_chart("gate-spend", "Spend by gate", rows, scale)


def _served_chart(data: dict) -> str:
    rows = []
    for chain in data["chains"]:
        for rung in chain["rungs"]:
            share = rung["served_share"] or 0.0
            rows.append((_rung_label(data, chain, rung["rung"]), [("served", share, _SERVED_COLOUR)],
                         f"{_percent(share)} ({rung['served']})"))
        exhausted = (chain["exhausted"] / chain["requests"]) if chain["requests"] else 0.0
        rows.append((_rung_label(data, chain, "exhausted"), [("exhausted", exhausted, _EXHAUSTED_COLOUR)],
                     f"{_percent(exhausted)} ({chain['exhausted']})"))
    return _bar_chart("served", "Served by rung (share of requests)", rows, 1.0)


def _summary_table(data: dict) -> str:
    counts = data["top_rung_cost"]
    rows = [
        ("requests", str(data["requests"]), f"{data['served']} served, {data['exhausted']} exhausted"),
        ("escalation rate", _percent(data["escalation_rate"]), f"{data['escalated']} of {data['requests']} escalated"),
        ("model spend", _usd(data["model_cost_usd"]), ""),
        ("gate spend", _usd(data["gate_cost_usd"]), ""),
        ("top-rung cost", _usd(data["top_rung_cost_usd"]),
         f"{counts['actual']} actual, {counts['estimated']} estimated, {counts['unpriced']} unpriced"),
        ("gross saving", _usd(data["gross_saving_usd"]), "before gate spend"),
        ("net saving", _usd(data["net_saving_usd"]), f"{_percent(data['net_saving_share'])} of the top-rung cost"),
    ]
    body = "".join(f'<tr><th scope="row">{escape(name)}</th><td class="figure">{escape(value)}</td>'
                   f'<td class="note">{escape(note)}</td></tr>' for name, value, note in rows)
    notes = "".join(f"<li>{count} unpriced: {escape(note)}</li>" for note, count in data["unpriced_notes"].items())
    notes += "".join(f"<li>skipped, not in these figures: {escape(note)}</li>" for note in data["skipped_notes"])
    notes += "".join(f"<li>unpriced model: {escape(model)} has no price in admiss.toml; {calls} of its calls count "
                     "$0 here</li>" for model, calls in data["unpriced_models"].items())
    return f'<table id="summary">{body}</table>' + (f"<ul>{notes}</ul>" if notes else "")


def _chain_table(data: dict) -> str:
    head = "".join(f"<th>{name}</th>" for name in (
        "chain", "requests", "escalated", "model spend", "gate spend", "top-rung cost", "net saving"))
    body = "".join(
        f'<tr><td>{escape(c["chain"])}</td><td>{c["requests"]}</td><td>{_percent(c["escalation_rate"])}</td>'
        f'<td>{_usd(c["model_cost_usd"])}</td><td>{_usd(c["gate_cost_usd"])}</td>'
        f'<td>{_usd(c["top_rung_cost_usd"])}</td><td>{_usd(c["net_saving_usd"])}</td></tr>'
        for c in data["chains"])
    return f'<h2>By chain</h2><table id="chains"><tr>{head}</tr>{body}</table>'


def savings_page(data: dict) -> str:
    """The HTML page of the figures ``admiss.savings.savings`` returns."""
    charts = "".join(chart(data) for chart in (_cost_chart, _rung_spend_chart, _gate_spend_chart, _served_chart))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>admiss savings</title><style>{_STYLE}</style></head><body>"
        f"<h1>admiss savings</h1>{_summary_table(data)}{_chain_table(data)}{charts}"
        # Named, not linked: the page makes no request to any host, and a pip-installed admiss ships no docs/.
        "<p>How each figure is computed: the page savings.md of the admiss documentation.</p>"
        "</body></html>\n"
    )
