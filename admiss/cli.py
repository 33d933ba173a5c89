"""The command line. The only module that imports typer.

Exit codes: 0 every check passed, 1 a check failed, 2 bad input or usage.
"""

from __future__ import annotations

import enum
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator, List, Optional

import typer

from admiss import __version__

EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2

app = typer.Typer(
    name="admiss",
    help="Evidence-first rubrics and gate chains for verifying the work of LLM agents.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Plain help text: option help says "[default: ...]", which rich markup would eat.
    rich_markup_mode=None,
)


class Format(str, enum.Enum):
    text = "text"
    json = "json"
    rich = "rich"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"admiss {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Evidence-first rubrics and gate chains for verifying the work of LLM agents."""


def _print_error(error) -> None:
    sys.stderr.write(error.render() + "\n")


class _Run:
    """State of one ``admiss check`` run: loaded rubrics, the worst exit code so far."""

    def __init__(self, rubric_path: Optional[Path], fmt: Format, chain: Optional[str], config: Optional[Path]):
        self.fmt = fmt
        self.chain = chain
        self.config = config
        self.exit_code = EXIT_PASS
        self.rubrics: dict[Path, object] = {}
        self.fixed_rubric = self.rubric_at(rubric_path) if rubric_path else None
        self.printed = 0
        self.many = False

    def rubric_at(self, path: Path):
        from admiss.api import load

        key = path.resolve()
        if key not in self.rubrics:
            self.rubrics[key] = load(path, self.config)
        return self.rubrics[key]

    def close(self) -> None:
        for rubric in self.rubrics.values():
            rubric.close()

    def rubric_for(self, bundle, bundle_path: Path, name: str):
        from admiss.errors import input_error

        from admiss.bundle import validate_bundle

        if self.fixed_rubric is not None:
            return self.fixed_rubric
        # Check the bundle's shape first, so a bad "rubric" field is named as such.
        validate_bundle(bundle, name)
        if isinstance(bundle.get("rubric"), str):
            return self.rubric_at(bundle_path.parent / bundle["rubric"])
        raise input_error(name, "no rubric to check against",
                          hint='pass --rubric FILE, or give the bundle a "rubric" field (a path relative to it)',
                          code="E002")

    def note(self, code: int) -> None:
        self.exit_code = max(self.exit_code, code)


def _bundles(path: Path) -> Iterator[tuple[str, str, int]]:
    """(display name, JSON text, line offset) for each bundle in a .json or .jsonl file."""
    from admiss.api import read_text

    text = read_text(path)
    if path.suffix != ".jsonl":
        yield str(path), text, 0
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield f"{path}:{number}", line, number - 1


def _emit(run: _Run, report) -> None:
    # One bundle prints one report as it is; several print JSON Lines, or text reports
    # under a "==> name <==" line each, separated by a blank line.
    if run.fmt is Format.json:
        import json

        typer.echo(json.dumps(report.to_dict(), indent=None if run.many else 2, ensure_ascii=False))
    elif run.fmt is Format.rich:
        from admiss.report.rich import print_report

        print_report(report)
    else:
        header = f"==> {report.bundle_name} <==\n" if run.many else ""
        typer.echo(("\n" if run.printed else "") + header + report.to_text())
    run.printed += 1


def _emit_error(run: _Run, error, name: str) -> None:
    _print_error(error)
    if run.fmt is Format.json and run.many:
        import json

        # Keep one output line per input line, so results stay aligned with the batch.
        errors = [d.to_dict() for d in error.diagnostics]
        typer.echo(json.dumps({"bundle": name, "error": errors}, ensure_ascii=False))


def _check_file(run: _Run, path: Path) -> None:
    from admiss.bundle import parse_bundle_text
    from admiss.errors import AdmissError

    jsonl = path.suffix == ".jsonl"
    for name, text, offset in _bundles(path):
        try:
            bundle = parse_bundle_text(text, name if not jsonl else str(path), offset)
            report = run.rubric_for(bundle, path, name).check(bundle, name, run.chain)
        except AdmissError as error:
            _emit_error(run, error, name)
            run.note(EXIT_BAD_INPUT)
            continue
        _emit(run, report)
        run.note(EXIT_PASS if report.verdict == "pass" else EXIT_FAIL)


def _default_format() -> Format:
    return Format.rich if sys.stdout.isatty() else Format.text


@app.command()
def check(
    bundles: List[Path] = typer.Argument(..., help="Bundle files: .json (one bundle) or .jsonl (one per line)."),
    rubric: Optional[Path] = typer.Option(
        None, "--rubric", "-r", help="A .rubric source or compiled IR .json; overrides each bundle's \"rubric\" field."
    ),
    fmt: Optional[Format] = typer.Option(
        None, "--format", "-f", help="Report format [default: rich on a terminal, text otherwise]."
    ),
    chain: Optional[str] = typer.Option(None, "--chain", help="The CHAIN to run when the rubric has several."),
    config: Optional[Path] = typer.Option(
        None, "--config", help="An admiss.toml (providers, prices, gate defaults) [default: beside the rubric, "
        "else in the working folder]."
    ),
) -> None:
    """Check candidate bundles against a rubric and print evidence-first reports.

    Exit 0 when every bundle passes, 1 when any fails, 2 on bad input (the rest still run).
    """
    from admiss.errors import AdmissError

    try:
        run = _Run(rubric, fmt or _default_format(), chain, config)
    except AdmissError as error:
        _print_error(error)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    run.many = len(bundles) > 1 or any(p.suffix == ".jsonl" for p in bundles)
    try:
        for path in bundles:
            try:
                _check_file(run, path)
            except AdmissError as error:
                _print_error(error)
                run.note(EXIT_BAD_INPUT)
    finally:
        run.close()
    raise typer.Exit(run.exit_code)


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see the old file or the whole new one, never half."""
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


@app.command("compile")
def compile_(
    file: Path = typer.Argument(..., help="A .rubric source file (or compiled IR .json, rewritten)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the IR here instead of stdout."),
) -> None:
    """Compile a rubric to its IR as deterministic JSON (same source, same bytes)."""
    from admiss.api import load
    from admiss.errors import AdmissError

    try:
        text = load(file).to_ir_json()
        if output is None:
            sys.stdout.write(text)
        else:
            write_atomically(output, text)
    except AdmissError as error:
        _print_error(error)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except OSError as error:
        sys.stderr.write(f"{output}: E001 cannot write: {error.strerror}\n")
        raise typer.Exit(EXIT_BAD_INPUT) from None


def main() -> None:
    app()
