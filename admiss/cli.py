"""The command line. The only module that imports typer.

Exit codes: 0 every check passed, 1 a check failed, 2 bad input or usage.
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import List, Optional

import typer

from admiss import __version__
from admiss.files import write_atomically

EXIT_BAD_INPUT = 2

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
    jobs: int = typer.Option(
        1, "--jobs", "-j", min=1, help="Check in this many worker processes (text and json formats); "
        "reports keep the input order."
    ),
    fail_fast: bool = typer.Option(
        False, "--fail-fast", help="Stop at the first bundle that cannot be loaded or checked (exit 2)."
    ),
) -> None:
    """Check candidate bundles against a rubric and print evidence-first reports.

    Exit 0 when every bundle passes, 1 when any fails, 2 on bad input (the rest still run).
    """
    from admiss.runner import CheckOptions, run_check

    options = CheckOptions(rubric, (fmt or _default_format()).value, chain, config, jobs, fail_fast)
    raise typer.Exit(run_check(bundles, options))


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
