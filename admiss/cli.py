"""The command line. The only module that imports typer.

Exit codes: 0 every check passed, 1 a check failed, 2 bad input or usage.
"""

from __future__ import annotations

import enum
import functools
import sys
from pathlib import Path
from typing import Iterator, List, Optional

import typer
from typer.core import TyperArgument, TyperGroup

from admiss import __version__
from admiss.files import write_atomically

EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2
# The path that means standard input.
STDIN = "-"


class _PlainHelpGroup(TyperGroup):
    """typer's group, with arguments shown in help by their metavar alone, as options are:
    typer appends the Python type (``BUNDLE... <list[Path]>``), which means nothing to a user.
    Done where commands are looked up, so every command gets it, whoever adds it."""

    def get_command(self, ctx, cmd_name: str):
        command = super().get_command(ctx, cmd_name)
        for param in getattr(command, "params", ()):
            if isinstance(param, TyperArgument) and param.metavar:
                param.display_type_rich = _no_type_name
                param._usage_display_name = functools.partial(str, param.metavar)
        return command


def _no_type_name(ctx) -> None:
    return None

app = typer.Typer(
    name="admiss",
    cls=_PlainHelpGroup,
    help="Evidence-first rubrics and gate chains for verifying the work of LLM agents.",
    # typer's own --install-completion and --show-completion (bash, zsh, fish, PowerShell).
    add_completion=True,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
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


def _one_of(choices: type[enum.Enum]):
    """A callback that takes a value only when it names one of ``choices``, in plain words."""
    names = [c.value for c in choices]

    def check(value: Optional[str]) -> Optional[str]:
        if value is not None and value not in names:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(names)}")
        return value

    return check


def _count(value: str) -> str:
    """A whole number of at least 1, said plainly when it is not (typer's own words name types)."""
    if not (value.isascii() and value.isdigit() and int(value) >= 1):
        raise typer.BadParameter(f"{value!r} is not a whole number of at least 1")
    return value


@app.command()
def check(
    bundles: List[Path] = typer.Argument(
        ..., metavar="BUNDLE...", help="Bundle files: .json (one bundle) or .jsonl (one per line); "
        "- reads JSON Lines from standard input."
    ),
    rubric: Optional[Path] = typer.Option(
        None, "--rubric", "-r", metavar="FILE",
        help="A .rubric source or compiled IR .json; overrides each bundle's \"rubric\" field.",
    ),
    fmt: Optional[str] = typer.Option(
        None, "--format", "-f", metavar="text|json|rich", callback=_one_of(Format),
        help="Report format [default: rich on a terminal (one line per bundle after 20), text otherwise].",
    ),
    chain: Optional[str] = typer.Option(None, "--chain", metavar="NAME",
                                        help="The CHAIN to run when the rubric has several."),
    config: Optional[Path] = typer.Option(
        None, "--config", metavar="FILE", help="An admiss.toml (providers, prices, gate defaults) "
        "[default: beside the rubric, else in the working folder]."
    ),
    jobs: str = typer.Option(
        "1", "--jobs", "-j", metavar="N", callback=_count, help="Check in this many worker processes "
        "(text and json formats); reports keep the input order."
    ),
    fail_fast: bool = typer.Option(
        False, "--fail-fast", help="Stop at the first bundle that cannot be loaded or checked (exit 2)."
    ),
) -> None:
    """Check candidate bundles against a rubric and print evidence-first reports.

    Exit 0 when every bundle passes, 1 when any fails, 2 on bad input (the rest still run).
    """
    from admiss.runner import CheckOptions, run_check

    options = CheckOptions(rubric, fmt or _default_format().value, chain, config, int(jobs), fail_fast)
    raise typer.Exit(run_check(bundles, options))


@app.command("compile")
def compile_(
    file: Path = typer.Argument(..., metavar="FILE", help="A .rubric source file (or compiled IR .json, rewritten)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="OUT",
                                          help="Write the IR here instead of stdout."),
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


class LintFormat(str, enum.Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


def _source_text(path: Path) -> tuple[str, str]:
    """(name, text) of a rubric named on the command line; ``-`` is standard input, <stdin>."""
    from admiss.api import read_text
    from admiss.files import reading

    if str(path) == STDIN:
        with reading("<stdin>"):
            return "<stdin>", sys.stdin.read()
    return str(path), read_text(path)


def _rubric_files(paths: List[Path]) -> Iterator[Path]:
    """Each path named, and each ``*.rubric`` file under a named folder, sorted."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.rubric") if p.is_file())
        else:
            yield path


@app.command()
def lint(
    paths: List[Path] = typer.Argument(..., metavar="PATH...",
                                       help="Rubric files, or folders searched for *.rubric files; - reads standard input."),
    fmt: str = typer.Option("text", "--format", "-f", metavar="text|json|sarif|github", callback=_one_of(LintFormat),
                            help="Output format."),
    select: Optional[List[str]] = typer.Option(
        None, "--select", metavar="CODES", help="Codes or prefixes to run, comma-separated (replaces the "
        "configured ones) [default: ADM, every rule]."
    ),
    ignore: List[str] = typer.Option([], "--ignore", metavar="CODES", help="Codes or prefixes not to run, "
                                     "comma-separated (added to the configured ones)."),
) -> None:
    """Report weak or contradictory rubrics, and every compile error, with stable codes.

    Exit 0 with no findings, 1 with findings (warnings count), 2 on usage errors or
    unreadable files. Settings: [lint] in admiss.toml or [tool.admiss.lint] in pyproject.toml.
    """
    from admiss.errors import AdmissError
    from admiss.lint import find_config, lint_source
    from admiss.lint.output import FORMATS, FileResult
    from admiss.source import Source

    try:
        config = find_config(Path.cwd()).with_options(select, ignore)
    except AdmissError as error:
        _print_error(error)
        raise typer.Exit(EXIT_BAD_INPUT)
    exit_code, results = EXIT_PASS, []
    for path in _rubric_files(paths):
        try:
            name, text = _source_text(path)
        except AdmissError as error:
            _print_error(error)
            exit_code = EXIT_BAD_INPUT
            continue
        # Standard input has no folder, so its gate files cannot be checked.
        found = lint_source(text, name, config, folder=None if name == "<stdin>" else path.parent)
        results.append(FileResult(Source(name, text), tuple(found)))
    sys.stdout.write(FORMATS[fmt](results))
    if any(result.diagnostics for result in results):
        exit_code = max(exit_code, EXIT_FAIL)
    raise typer.Exit(exit_code)


def _files(count: int) -> str:
    return f"{count} file{'' if count == 1 else 's'}"


def _fmt_summary(changed: int, unchanged: int, dry_run: bool) -> str:
    verb = "would be reformatted" if dry_run else "reformatted"
    return f"{_files(changed)} {verb}, {_files(unchanged)} left unchanged\n"


@app.command("fmt")
def fmt_(
    paths: List[Path] = typer.Argument(..., metavar="PATH...",
                                       help="Rubric files, or folders searched for *.rubric files; - reads standard input."),
    check: bool = typer.Option(False, "--check", help="Write nothing; print a diff and exit 1 if a file would change."),
    diff: bool = typer.Option(False, "--diff", help="Write nothing; print a diff of what would change."),
) -> None:
    """Rewrite rubric files in the canonical layout (docs/fmt.md); comments are kept.

    Exit 0, or 1 with --check when a file would change, or 2 when a file cannot be read,
    does not parse, or cannot be written (that file is left untouched).
    """
    from admiss.errors import AdmissError
    from admiss.fmt import format_source, unified_diff

    exit_code, changed, unchanged = EXIT_PASS, 0, 0
    for path in _rubric_files(paths):
        try:
            name, text = _source_text(path)
            formatted = format_source(text, name)
            if name == "<stdin>" and not (check or diff):
                sys.stdout.write(formatted)  # a filter: the formatted text, changed or not
            elif formatted != text and not (check or diff):
                write_atomically(path, formatted)
        except AdmissError as error:
            _print_error(error)
            exit_code = EXIT_BAD_INPUT
            continue
        except OSError as error:
            sys.stderr.write(f"{path}: E001 cannot write: {error.strerror}\n")
            exit_code = EXIT_BAD_INPUT
            continue
        if formatted == text:
            unchanged += 1
            continue
        changed += 1
        if check or diff:
            sys.stdout.write(unified_diff(text, formatted, name))
        sys.stderr.write(f"{'would reformat' if check or diff else 'reformatted'} {name}\n")
    sys.stderr.write(_fmt_summary(changed, unchanged, check or diff))
    if check and changed:
        exit_code = max(exit_code, EXIT_FAIL)
    raise typer.Exit(exit_code)


def main() -> None:
    # One name whichever way it is started (python -m admiss too): in usage lines, and in
    # the _ADMISS_COMPLETE variable that shell completion sets.
    app(prog_name="admiss")
