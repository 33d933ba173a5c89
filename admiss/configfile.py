"""Finding ``admiss.toml`` without reading it. ``admiss check`` looks for a ``[telemetry]``
table on every run, and the reader (admiss/config.py, with tomllib) costs some 18 ms of
start-up time (``python -X importtime``) that a run with no such table need not spend."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

CONFIG_NAME = "admiss.toml"


def find_config(explicit: Path | None = None, rubric: Path | None = None, cwd: Path | None = None) -> Path | None:
    """The config file to use: an explicit ``--config`` path (which must exist), else
    ``admiss.toml`` beside the rubric, else in the working folder; None when there is none."""
    if explicit is not None:
        if not explicit.is_file():
            # Imported here: admiss check starts its telemetry before it imports attrs (launch.py).
            from admiss.errors import Diagnostic, InputError

            raise InputError([Diagnostic("E001", f"config file not found: {explicit}", file=str(explicit))])
        return explicit
    folders = ([rubric.parent] if rubric is not None else []) + [cwd or Path.cwd()]
    for folder in folders:
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def may_have_table(path: Path, table: str) -> bool:
    """Whether the file's text may hold ``[table]`` (or ``[table.sub]``, or a quoted key):
    False only when the name appears on no line that opens a table. An unreadable file
    may: reading it then says what is wrong, located."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True
    return re.search(rf"^\s*\[.*{re.escape(table)}", text, re.MULTILINE) is not None


def may_ask_for_telemetry(named: bool, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether OpenTelemetry out may be asked for: the config file may have a
    ``[telemetry]`` table (``named``, may_have_table's answer), or an ``OTEL_*`` variable
    is set."""
    return named or any(name.startswith("OTEL_") for name in environ)
