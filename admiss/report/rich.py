"""The terminal view: verdicts coloured, evidence and exclusions in tables.

The only module that imports rich, and only when a report is drawn.

Drawing a report's panels and tables costs about 40 times writing its text report, so a
batch shows full reports for its first SUMMARY_AFTER bundles and then one line per bundle
(its name, verdict and missing-evidence count), written as precomputed styled strings
with a single console; the full reports are a --format text or json run away.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console, Group
from rich.measure import Measurement
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from admiss.report.text import OFFLINE_LINE, report_text, rung_lines
from admiss.terminal import one_line, printable

if TYPE_CHECKING:
    from admiss.cascade import ChainResult, GateRecord
    from admiss.report import CheckReport
    from admiss.compiler import PropertyResult
    from admiss.report.model import ReportData

_VERDICT_STYLE = {"yes": "bold green", "no": "bold red", "pass": "bold green", "fail": "bold red",
                  "abstain": "bold yellow", "skipped": "dim", "served": "bold green", "escalated": "yellow",
                  "exhausted": "bold red"}


def _verdict(word: str) -> Text:
    return Text(word, style=_VERDICT_STYLE.get(word, "bold"))


def _rules_table(result: "PropertyResult") -> Table:
    prop = result.prop
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim")
    table.add_column()
    # A shortcut label such as "[draft] memo" is text, not markup.
    table.add_row("admissible", Text(", ".join(prop.admissible) or "—"))
    table.add_row("forbidden", Text(", ".join(prop.forbidden) or "—"))
    table.add_row("shortcuts rejected", Text(one_line(", ".join(prop.shortcut_rejections)) or "—"))
    table.add_row("default verdict", prop.default)
    return table


def _evidence_table(result: "PropertyResult") -> Table:
    table = Table(show_edge=False, expand=True)
    table.add_column("evidence", overflow="fold")
    # An outcome is one word: squeezed, rich cut "shortcut-rejected" to "shortcut-reject…".
    table.add_column("outcome", no_wrap=True)
    table.add_column("clause", style="dim", overflow="fold")
    # A bundle's strings go in as Text, never as console markup: "[/]" in a detail would be
    # a markup error, "[bold]" a style the bundle chose.
    for detail in result.evidence:
        table.add_row(Text(one_line(detail)), Text("admitted", style="green"), "")
    for item, exclusion in result.excluded:
        clause = exclusion.clause
        where = f"line {clause['line']}: {clause['keyword']} {clause['value'] or ''}".rstrip()
        table.add_row(Text(one_line(item["detail"])), Text(exclusion.reason, style="red"), Text(one_line(where)))
    if not result.evidence and not result.excluded:
        table.add_row(Text("no evidence offered", style="dim"), "", "")
    return table


def property_panel(result: "PropertyResult", width: int | None = None) -> Panel:
    """The property's panel, titled with its name and verdict; when that title is wider than
    the panel's border (``width``), it is the body's first line instead, where it wraps: a
    border title is cut, and the cut may be the verdict."""
    title = Text.assemble(result.prop.display_name, "  ", _verdict(result.verdict))
    parts = [_rules_table(result), _evidence_table(result), Text(result.rationale, style="italic")]
    if width is not None and title.cell_len + 6 > width:
        return Panel(Group(title, *parts), title_align="left")
    return Panel(Group(*parts), title=title, title_align="left")


def _ms(gate: "GateRecord") -> str:
    """A gate's time: most local gates take well under a millisecond, which whole
    milliseconds would show as 0; a gate that never ran has none."""
    if gate.verdict == "skipped":
        return "—"
    return f"{gate.duration_ms:.3f}" if gate.duration_ms < 10 else f"{gate.duration_ms:.0f}"


def chain_table(chain: "ChainResult") -> Table:
    """Names and figures kept whole (folded, ``openai/gpt-5-mini`` read ``openai/g``,
    ``pt-5``); the reason column wraps and takes what room is left."""
    table = Table(title=f"chain {chain.name}", title_justify="left", expand=True)
    for column in _CHAIN_COLUMNS:
        table.add_column(column, overflow="fold", no_wrap=column != "reason")
    for rung in chain.rungs:
        table.add_row(Text.assemble(rung.rung, "\n", _verdict(rung.outcome)), Text(one_line(rung.model or "")), "", "",
                      "", f"{rung.cost_usd:.6f}", "", "", end_section=not rung.gates)
        for i, gate in enumerate(rung.gates):
            shown = _verdict(gate.verdict)
            if gate.effective != gate.verdict:
                shown = Text.assemble(shown, "\n→ ", _verdict(gate.effective))
            score = "" if gate.score is None else f"{gate.score:.2f}"
            table.add_row("", "", gate.gate, shown, score, f"{gate.gate_cost_usd:.6f}", _ms(gate),
                          Text(one_line(gate.reason or "")), end_section=i == len(rung.gates) - 1)
    for column in table.columns[:-1]:
        column.min_width = _longest_line(column)
    return table


_CHAIN_COLUMNS = ("rung", "model", "gate", "verdict", "score", "cost $", "ms", "reason")
# The narrowest reason column worth drawing; below it the chain is drawn as text lines.
_REASON_MIN = 16


def _longest_line(column) -> int:
    return max((cell_len(line) for cell in (column.header, *column.cells) for line in str(cell).splitlines()), default=1)


def _chain_fits(table: Table, width: int) -> bool:
    """Whether ``table`` fits ``width`` with no name or figure broken: each column but the
    reason at its longest line, the reason at _REASON_MIN, and the borders (3 a column, and 1)."""
    return sum(c.min_width or 0 for c in table.columns[:-1]) + _REASON_MIN + 3 * len(table.columns) + 1 <= width


def report_console(**options) -> Console:
    """A console that reads no markup, emoji codes or highlighting into what it prints: the
    strings it shows come from rubrics, bundles and receipts."""
    return Console(markup=False, emoji=False, highlight=False, **options)


# Below this many columns panels and tables cannot show a report: it is drawn as the text report.
PLAIN_BELOW = 50


def print_report(report: "ReportData", console: Console | None = None) -> None:
    console = console or report_console()
    if console.width < PLAIN_BELOW:
        name = f"==> {one_line(report.bundle_name)} <==\n" if report.bundle_name else ""
        console.file.write(name + report_text(report) + "\n")
        return
    if report.bundle_name:
        name = Text(one_line(report.bundle_name))
        if name.cell_len + 4 <= console.width:
            console.rule(name)
        else:  # a rule cuts a title that does not fit it ("mixed_evidence.js…"): the name wraps below it
            console.rule()
            console.print(name, overflow="fold")
    if report.chain is not None and report.chain.offline:
        console.print(Panel(Text(OFFLINE_LINE, style="bold yellow"), title="OFFLINE", title_align="left",
                            border_style="yellow"))
    for result in report.properties:
        console.print(property_panel(result, console.width))
    console.print(Text.assemble("aggregate: ", _verdict(report.aggregate),
                                f"   missing evidence: {report.missing_evidence_count}"))
    if report.chain is not None:
        chain = report.chain
        table = chain_table(chain)
        # Too narrow for the table: the text report's lines, which wrap whole words.
        shown = "\n".join([f"chain {chain.name}", *rung_lines(chain)])
        console.print(table if _chain_fits(table, console.width) else Text(printable(shown)))
        console.print(Text.assemble(
            "served: ", chain.served or Text("none (exhausted)", style="bold red"),
            f"   model spend ${chain.model_cost_usd:.6f}   gate spend ${chain.gate_cost_usd:.6f}   verdict: ",
            _verdict(report.verdict)))
    if report.verdict_note is not None:
        console.print(Text(report.verdict_note, style="bold"))


# Full reports a batch draws before it switches to one line per bundle.
SUMMARY_AFTER = 20


class ReportWriter:
    """Draws the reports of one run on one console: in full for the first SUMMARY_AFTER,
    then as one precomputed styled line each."""

    def __init__(self, console: Console | None = None):
        self.console = console or report_console()
        self.drawn = 0
        self._styled: dict[str, str] = {}

    def write(self, report: "CheckReport") -> None:
        if self.drawn < SUMMARY_AFTER:
            print_report(report, self.console)
        else:
            if self.drawn == SUMMARY_AFTER:
                self.console.print(Text(f"(after {SUMMARY_AFTER} reports, one line per bundle; "
                                        "--format text shows every report in full)", style="dim"))
            self.console.file.write(self.summary_line(report))
        self.drawn += 1

    def summary_line(self, report: "CheckReport") -> str:
        return (f"{self.styled(report.verdict)} {one_line(report.bundle_name or '<bundle>')}"
                f"  missing evidence: {report.missing_evidence_count}\n")

    def styled(self, verdict: str) -> str:
        """``verdict`` in its colour as the console writes it (plain when it has no colour)."""
        if verdict not in self._styled:
            with self.console.capture() as captured:
                self.console.print(_verdict(f"{verdict:<4}"), end="")
            self._styled[verdict] = captured.get()
        return self._styled[verdict]

    def flush(self) -> None:
        self.console.file.flush()


class BatchProgress:
    """A progress line on stderr for a long batch: bundles checked so far, by outcome."""

    def __init__(self):
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
            console=Console(stderr=True), transient=False,
        )
        # The number of bundles is not known before the files are read, so the bar pulses.
        self._task = self._progress.add_task(self._description({"pass": 0, "fail": 0, "error": 0}), total=None)
        self._progress.start()

    @staticmethod
    def _description(counts: dict[str, int]) -> str:
        done = sum(counts.values())
        return (f"{done} checked: [green]{counts['pass']} pass[/] · [red]{counts['fail']} fail[/] · "
                f"[yellow]{counts['error']} error[/]")

    def show(self, counts: dict[str, int]) -> None:
        self._progress.update(self._task, description=self._description(counts))

    def stop(self) -> None:
        self._progress.stop()


# ---------------------------------------------------------------- admiss savings


def _usd(value: float) -> str:
    return f"-${-value:,.6f}" if value < 0 else f"${value:,.6f}"


def _percent(share: float | None) -> str:
    return "—" if share is None else f"{share:.1%}"


# The summary's rows: (label, how a figures dict shows it).
_SUMMARY_ROWS = (
    ("requests", lambda f: str(f["requests"])),
    ("served", lambda f: str(f["served"])),
    ("exhausted", lambda f: str(f["exhausted"])),
    ("escalation rate", lambda f: _percent(f["escalation_rate"])),
    ("model spend", lambda f: _usd(f["model_cost_usd"])),
    ("gate spend", lambda f: _usd(f["gate_cost_usd"])),
    ("top-rung cost", lambda f: _usd(f["top_rung_cost_usd"])),
    ("  actual", lambda f: str(f["top_rung_cost"]["actual"])),
    ("  estimated", lambda f: str(f["top_rung_cost"]["estimated"])),
    ("  unpriced", lambda f: str(f["top_rung_cost"]["unpriced"])),
    ("gross saving", lambda f: _usd(f["gross_saving_usd"])),
    ("net saving", lambda f: _usd(f["net_saving_usd"])),
    ("net saving share", lambda f: _percent(f["net_saving_share"])),
)


def _savings_summary(data: dict) -> Table:
    """The figures, one column for all requests and, with several chains, one per chain."""
    chains = data["chains"]
    columns = [(chains[0]["chain"], data)] if len(chains) == 1 else [("all", data)] + [(c["chain"], c) for c in chains]
    table = Table()
    table.add_column("")
    for name, _ in columns:
        table.add_column(one_line(name), justify="right", overflow="fold")
    for label, shown in _SUMMARY_ROWS:
        style = "bold" if label in ("net saving", "top-rung cost") else None
        table.add_row(label, *(shown(figures) for _, figures in columns), style=style,
                      end_section=label in ("escalation rate", "gate spend", "  unpriced"))
    return table


def _savings_by_rung(data: dict) -> Table:
    table = Table()
    for column in ("chain", "rung", "reached", "served", "share", "model", "gate"):
        table.add_column(column, justify="left" if column in ("chain", "rung") else "right", overflow="fold")
    for chain in data["chains"]:
        for i, rung in enumerate(chain["rungs"]):
            table.add_row(one_line(chain["chain"]) if i == 0 else "", one_line(rung["rung"]), str(rung["reached"]),
                          str(rung["served"]),
                          _percent(rung["served_share"]), _usd(rung["model_cost_usd"]), _usd(rung["gate_cost_usd"]),
                          end_section=i == len(chain["rungs"]) - 1)
    return table


def _savings_by_gate(data: dict) -> Table:
    # One chain: its name heads the summary, and the gate table keeps to 80 columns without it.
    named = len(data["chains"]) > 1
    table = Table()
    for column in ("chain",) * named + ("rung", "gate", "runs", "pass", "fail", "abstain", "skipped", "gate $"):
        table.add_column(column, justify="left" if column in ("chain", "rung", "gate") else "right", overflow="fold")
    for chain in data["chains"]:
        rows = [(rung["rung"], gate) for rung in chain["rungs"] for gate in rung["gates"]]
        for i, (rung, gate) in enumerate(rows):
            first_of_rung = i == 0 or rows[i - 1][0] != rung
            # Names read from receipts or reports, which another program may have written.
            cells = [one_line(chain["chain"]) if i == 0 else ""] * named + [
                one_line(rung) if first_of_rung else "", one_line(gate["gate"]), str(gate["runs"]), str(gate["pass"]),
                str(gate["fail"]), str(gate["abstain"]), str(gate["skipped"]), _usd(gate["gate_cost_usd"])]
            table.add_row(*cells, end_section=i == len(rows) - 1)
    return table


def _skipped_lines(data: dict) -> list[str]:
    """Why each gate that was skipped did not run, the commonest reason first, with counts."""
    lines = []
    for chain in data["chains"]:
        for rung in chain["rungs"]:
            for gate in rung["gates"]:
                if gate["skipped"]:
                    reasons = "; ".join(f"{one_line(reason)} ({count})" for reason, count in gate["skipped_reasons"].items())
                    lines.append(f"skipped {gate['skipped']}x, {one_line(chain['chain'])} / {one_line(rung['rung'])} / "
                                 f"{one_line(gate['gate'])}: {reasons}")
    return lines


def _records(table: Table) -> Text:
    """A table too wide for the terminal as one block of ``column: value`` lines per row:
    folded into a few columns, its cells break mid-word and mid-number."""
    columns = [(str(c.header) or "", [str(cell) for cell in c.cells]) for c in table.columns]
    rows = []
    for i in range(table.row_count):
        cells = [(header, cells[i]) for header, cells in columns if cells[i]]
        rows.append("\n".join(f"{header}: {cell}" if header else cell for header, cell in cells))
    return Text("\n\n".join(rows))


def _natural_width(console: Console, table: Table) -> int:
    """The width ``table`` takes unfolded (the console's own measure stops at its width)."""
    return Measurement.get(console, console.options.update_width(10_000), table).maximum


def print_savings(data: dict, console: Console | None = None) -> None:
    """The figures of ``admiss.savings.savings`` as three tables, then why any request is unpriced."""
    console = console or report_console()
    # Headings apart from the tables: a table's title is padded with spaces to its width.
    for heading, table in (("savings", _savings_summary), ("by rung", _savings_by_rung), ("by gate", _savings_by_gate)):
        console.print(Text(heading, style="bold"))
        drawn = table(data)
        console.print(drawn if _natural_width(console, drawn) <= console.width else _records(drawn))
    for line in _skipped_lines(data):
        console.print(Text(line, style="dim"))
    for note, count in data["unpriced_notes"].items():
        console.print(Text(f"unpriced ({count}): {one_line(note)}", style="yellow"))
    for model, calls in data["unpriced_models"].items():
        console.print(Text(f"unpriced model: {one_line(model)} has no price in admiss.toml; {calls} of its calls "
                           "count $0 here", style="yellow"))
    if data["skipped"]:
        console.print(Text(f"skipped ({data['skipped']}): records with an absurd cost or token count, "
                           "not in these figures (named on stderr)", style="yellow"))
