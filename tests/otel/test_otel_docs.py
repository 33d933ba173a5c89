"""docs/integrations/otel.md's worked example, run: its files written, its console commands
run by bash (with the collector's address replaced by a loopback receiver's), and the events
the page shows compared with what arrives."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from otlp_receiver import attributes_of, events

PAGE = Path(__file__).resolve().parent.parent.parent / "docs" / "integrations" / "otel.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)
COLLECTOR = "http://127.0.0.1:4318"


def blocks() -> list[tuple[list[str], str]]:
    return [(info.split(), body) for info, body in FENCE.findall(PAGE.read_text(encoding="utf-8"))]


def test_the_worked_example_sends_the_events_the_page_shows(tmp_path, receiver):
    found = blocks()
    for words, body in found:
        for word in words[1:]:
            if word.startswith("file="):
                (tmp_path / word[5:]).write_text(body, encoding="utf-8")
    lint = subprocess.run([sys.executable, "-m", "admiss", "lint", "ops.rubric"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert lint.returncode == 0, lint.stdout
    (console,) = [body for words, body in found if words[:1] == ["console"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    transcript = []
    for line in console.splitlines():
        if line.startswith("$ "):
            command = line[2:].replace(COLLECTOR, receiver.url)
            run = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
            transcript += [line, *run.stdout.splitlines(), *run.stderr.splitlines()]
    assert transcript == console.splitlines()
    (shown,) = [json.loads(body) for words, body in found if words == ["json", "events"]]
    assert receiver.wait_for(lambda r: len(events(r)) >= len(shown))
    received = [attributes_of(record) for record in events(receiver)]
    assert len(received) == len(shown)
    for expected, got in zip(shown, received):
        assert {key: got.get(key) for key in expected} == expected
    assert {resource["service.name"] for resource, _ in receiver.log_records()} == {"filings-checks"}
