"""The ``admiss`` command's entry point, with a fast path for ``admiss check``.

typer 0.29 imports pydantic to convert a command's arguments, which costs more than admiss
spends loading a cached rubric and checking a bundle. So the common ``admiss check``
command lines (options this parser knows, with values it can take as they are, and bundle
paths) are parsed here without loading typer. Anything else (--help, an unknown or
repeated option, a value typer would reject or convert, another command) goes to the typer
app in cli.py, which prints the same help and the same errors as ever.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Iterator

# Long and short spellings of check's options that take a value, by CheckOptions field.
_VALUE_OPTIONS = {"--rubric": "rubric", "-r": "rubric", "--format": "fmt", "-f": "fmt", "--chain": "chain",
                  "--config": "config", "--jobs": "jobs", "-j": "jobs", "--report": "report", "--trace": "trace"}
_FLAG_OPTIONS = {"--fail-fast": "fail_fast", "--offline": "offline", "--live": "live"}
_FORMATS = ("text", "json", "rich")
_REPORTS = ("lean", "full")


def quick_check_arguments(argv: list[str]):
    """(bundle paths, CheckOptions) for a plain ``check`` command line, else None (typer's turn)."""
    given = _quick_check_given(argv)
    return None if given is None else (given[0], _options(given[1]))


def _quick_check_given(argv: list[str]) -> tuple[list[Path], dict[str, object]] | None:
    """(bundle paths, the options given by CheckOptions field) for a plain ``check``
    command line, else None."""
    if not argv or argv[0] != "check":
        return None
    given: dict[str, object] = {}
    paths: list[str] = []
    args = iter(argv[1:])
    for arg in args:
        if arg == "--":
            paths.extend(args)
            break
        if arg == "-" or not arg.startswith("-"):
            paths.append(arg)
            continue
        name, _, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        field = _VALUE_OPTIONS.get(name) or _FLAG_OPTIONS.get(name)
        if field is None or field in given:
            return None
        if name in _FLAG_OPTIONS:
            if attached:
                return None
            given[field] = True
            continue
        value = attached if "=" in arg else next(args, None)
        if not _plain_value(field, value):
            return None
        given[field] = value
    if not paths or "" in paths:
        return None
    return [Path(p) for p in paths], given


def _start_telemetry(given: dict[str, object]) -> None:
    """Start OpenTelemetry's exporter process first thing when the run may ask for it
    (admiss/integrations/otel.py's start_exporter): its start-up then runs while this
    process imports the checker and compiles the rubric."""
    from admiss.configfile import find_config, may_ask_for_telemetry, may_have_table

    rubric, config = given.get("rubric"), given.get("config")
    if config and not Path(str(config)).is_file():
        return  # the run says what is wrong
    path = find_config(Path(str(config)) if config else None, Path(str(rubric)) if rubric else None)
    named = path is not None and may_have_table(path, "telemetry")
    if may_ask_for_telemetry(named):
        from admiss.integrations.otel import start_exporter

        start_exporter(named)


def _plain_value(field: str, value: str | None) -> bool:
    """Whether typer would take ``value`` for ``field`` unchanged (else let typer judge it)."""
    if not value or value.startswith("-"):
        return False
    if field == "fmt":
        return value in _FORMATS
    if field == "report":
        return value in _REPORTS
    if field == "jobs":
        return value.isascii() and value.isdigit() and int(value) >= 1
    return True


def _options(given: dict[str, object]):
    from admiss.runner import CheckOptions

    fmt = given.get("fmt") or ("rich" if sys.stdout.isatty() else "text")
    return CheckOptions(
        rubric=Path(given["rubric"]) if "rubric" in given else None,
        fmt=fmt,
        chain=given.get("chain"),
        config=Path(given["config"]) if "config" in given else None,
        jobs=int(given.get("jobs", 1)),
        fail_fast=bool(given.get("fail_fast", False)),
        offline=bool(given.get("offline", False)),
        report=given.get("report", "lean"),
        trace=given.get("trace"),
        live=bool(given.get("live", False)),
    )


EXIT_TERMINATED = 128 + signal.SIGTERM


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(EXIT_TERMINATED)


@contextlib.contextmanager
def terminate_cleanly() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C (exit 143) instead of ending the process on the spot, so
    the run's cleanup cancels its gates and kills their process groups (which live in
    sessions of their own, out of reach of a signal sent to admiss's group)."""
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main() -> None:
    # Shell completion runs the command with _ADMISS_COMPLETE set: typer answers it.
    completing = any(name.startswith("_ADMISS_COMPLETE") for name in os.environ)
    given = None if completing else _quick_check_given(sys.argv[1:])
    if given is not None:
        if int(given[1].get("jobs", 1)) > 1:
            from admiss.workerstart import start_worker_server

            # Before admiss's check modules are imported: the workers' fork server imports them meanwhile.
            start_worker_server()
        _start_telemetry(given[1])
    parsed = None if given is None else (given[0], _options(given[1]))
    if parsed is None:
        from admiss.cli import main as typer_main

        with terminate_cleanly():
            typer_main()
        return
    from admiss.runner import run_check

    try:
        with terminate_cleanly():
            code = run_check(*parsed)
    except BrokenPipeError:
        # As click does: the reader has gone; stop writing, quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except KeyboardInterrupt:
        sys.stderr.write("\nAborted!\n")  # click's words on Ctrl-C
        code = 1
    sys.exit(code)
