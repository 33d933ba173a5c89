"""Plain-text tables and figure formatting, so a run's output reads the same in a log as on a terminal."""

from __future__ import annotations

from typing import Sequence


def seconds_text(seconds: float) -> str:
    """A duration with a unit that keeps three significant figures readable."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def rate_text(per_second: float) -> str:
    """A throughput such as 1.23M/s."""
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if per_second >= scale:
            return f"{per_second / scale:.3g}{suffix}/s"
    return f"{per_second:.3g}/s"


def ratio_text(ratio: float) -> str:
    return f"{ratio:.2f}×"


def bytes_text(count: float) -> str:
    return f"{count / 2**20:.1f} MiB"


def table_text(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A titled table with columns padded to their widest cell (first column left-aligned)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        first = row[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(row[1:], widths[1:]))
        return "  ".join([first, *rest]).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([title, line(cells[0]), rule, *(line(r) for r in cells[1:])])


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    print(table_text(title, headers, rows), end="\n\n")


def target_text(label: str, met: bool | None, detail: str) -> str:
    """One line saying whether a target is met; None when it could not be measured."""
    status = {True: "MET", False: "MISSED", None: "NOT MEASURED"}[met]
    return f"target {label}: {status} ({detail})"


def print_section(name: str) -> None:
    print(f"== {name} " + "=" * max(0, 72 - len(name)), end="\n\n")
