"""`admiss lsp` on a 5,000-line rubric: how long diagnostics take to arrive after an edit.

The server runs as editors run it (a subprocess on stdio); a small JSON-RPC framing client
here sends each edit as the document's next version and times until that version's
diagnostics arrive. The baseline, measured in the same run, is what a server that parsed
and linted the whole file on every edit would spend: ``lint_source`` of the same text, in
process (no I/O at all).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import datagen
from benchmarks.settings import Settings
from benchmarks.tables import print_section, print_table, ratio_text, seconds_text, target_text
from benchmarks.timing import Timing, time_once_each

TARGET_SECONDS = 0.3
LINES = 5_000


class _Client:
    """LSP over a pipe: Content-Length framing, JSON-RPC 2.0."""

    def __init__(self, command: list[str]):
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.next_id = 0

    def send(self, method: str, params: object, request: bool = False) -> int | None:
        message: dict = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()
        return message.get("id")

    def receive(self) -> dict:
        length = 0
        while (line := self.process.stdout.readline().strip()):
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return json.loads(self.process.stdout.read(length))

    def until(self, wanted) -> dict:
        while not wanted(message := self.receive()):
            pass
        return message

    def close(self) -> None:
        ident = self.send("shutdown", None, request=True)
        self.until(lambda m: m.get("id") == ident)
        self.send("exit", None)
        self.process.wait(30)


def big_rubric() -> str:
    """A rubric of at least LINES lines: generated properties (a fifth of them leave an untrusted
    kind unnamed, ADM005, as datagen makes them) and a chain whose gates check them all."""
    props = datagen.properties(LINES // 7 + 1)
    names = [p.name for p in props]
    lists = ",\n    ".join(", ".join(names[i:i + 10]) for i in range(0, len(names), 10))
    return datagen.rubric_source(props) + (f"\nCHAIN serve {{\n  GATE non_empty ON ABSTAIN fail_closed\n"
                                           f"  GATE admissibility\n    {lists}\n}}\n")


def _edits(text: str) -> dict[str, list[str]]:
    """Texts that follow one another as a person types, each kind of edit in the middle of the file."""
    middle = text.index("PROPERTY p400 ")
    line_end = text.index("\n", middle)
    typed = [text[:line_end] + " " * k + text[line_end:] for k in range(1, 8)]
    new_lines = [text[:line_end] + "\n" * k + text[line_end:] for k in range(1, 8)]
    broken = text[:line_end] + "\n  ADMIT summary,\n" + text[line_end:]  # a list left open: E100
    return {"a character typed": typed, "a line added": new_lines, "a syntax error typed": [broken, text] * 4}


def _diagnostics_timing(client: _Client, uri: str, texts: list[str], version: int) -> tuple[Timing, int]:
    samples = []
    for text in texts:
        version += 1
        start = time.perf_counter()
        client.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})
        client.until(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                     and m["params"].get("version") == version)
        samples.append(time.perf_counter() - start)
    return Timing(tuple(samples[1:] or samples)), version  # the first of a kind warms up


def _in_process_rows(text: str, full: Timing) -> list[list[str]]:
    """The server's own work per edit (``Document.update``: parse again, lower, lint), without
    the wire, for the same edits."""
    from admiss.lint.config import LintConfig
    from admiss.lsp.document import Document

    document = Document("big.rubric", None, LintConfig())
    document.update(text)
    rows = []
    for name, texts in _edits(text).items():
        timing = time_once_each([lambda t=t: document.update(t) for t in texts])
        rows.append([f"{name}, in process", seconds_text(timing.best), seconds_text(timing.median),
                     ratio_text(timing.median / full.median)])
    return rows


def run(settings: Settings) -> None:
    print_section("lsp: diagnostics after an edit of a 5,000-line rubric")
    admiss = shutil.which("admiss", path=str(Path(sys.executable).parent))
    try:
        from admiss.lint import lint_source
        import pygls  # noqa: F401  (admiss lsp needs it)
    except ImportError as error:
        print(f"admiss lsp: not available ({error})\n")
        print(target_text(f"diagnostics within {TARGET_SECONDS * 1000:.0f} ms", None, "not available"), end="\n\n")
        return
    text = big_rubric()
    full = time_once_each([lambda: lint_source(text, "big.rubric")] * settings.repeats)
    client = _Client([admiss, "lsp"])
    client.send("initialize", {"processId": None, "rootUri": None, "capabilities": {}}, request=True)
    client.until(lambda m: m.get("id") == 1)
    client.send("initialized", {})
    uri = "file:///bench/big.rubric"
    start = time.perf_counter()
    client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "rubric", "version": 1,
                                                          "text": text}})
    client.until(lambda m: m.get("method") == "textDocument/publishDiagnostics")
    opened = time.perf_counter() - start
    version, rows, worst = 1, [], 0.0
    for name, texts in _edits(text).items():
        timing, version = _diagnostics_timing(client, uri, texts, version)
        worst = max(worst, timing.median)
        rows.append([name, seconds_text(timing.best), seconds_text(timing.median), ratio_text(timing.median / full.median)])
    client.close()
    rows += _in_process_rows(text, full)
    findings = len(lint_source(text, "big.rubric"))
    print(f"{text.count(chr(10)):,} lines, {findings} findings; opening it (a full parse and lint): {seconds_text(opened)}")
    print_table(f"Seconds from didChange to its publishDiagnostics (in process: Document.update alone); ratio "
                f"against a full in-process lint ({seconds_text(full.median)} median)",
                ["edit", "best", "median", "ratio"], rows)
    print(target_text(f"diagnostics within {TARGET_SECONDS * 1000:.0f} ms of an edit", worst <= TARGET_SECONDS,
                      f"slowest median {seconds_text(worst)}"), end="\n\n")
