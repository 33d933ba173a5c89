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
from admiss.files import refuse_overwriting_inputs, write_atomically

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
    # --install-completion SHELL and --show-completion SHELL are _main's own: typer's take no
    # value and use the shell admiss runs under (`--show-completion zsh` printed bash's script).
    add_completion=False,
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
    # Written once for the whole run: JUnit XML for CI services, Markdown for $GITHUB_STEP_SUMMARY.
    junit = "junit"
    markdown = "markdown"


class ReportShape(str, enum.Enum):
    lean = "lean"
    full = "full"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"admiss {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    install_completion: Optional[str] = typer.Option(
        None, "--install-completion", metavar="SHELL", is_eager=True, expose_value=False,
        callback=lambda ctx, param, value: _install_completion(ctx, param, value),
        help="Install completion for SHELL: bash, zsh, fish or powershell."),
    show_completion: Optional[str] = typer.Option(
        None, "--show-completion", metavar="SHELL", is_eager=True, expose_value=False,
        callback=lambda ctx, param, value: _show_completion(ctx, param, value),
        help="Print the completion script for SHELL: bash, zsh, fish or powershell."),
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


def _values(choices: type[enum.Enum]):
    """Shell completion of an option's values (its callback, not its type, checks them)."""
    return lambda incomplete: [c.value for c in choices if c.value.startswith(incomplete)]


def _file_kinds(*suffixes: str):
    """Shell completion of paths: folders, and files of these kinds only."""
    def complete(incomplete: str) -> list[str]:
        folder, _, stem = incomplete.rpartition("/")
        base = Path(folder or ".")
        if not base.is_dir():
            return []
        # Hidden entries only when asked for by a leading dot, as shells do.
        found = [p for p in base.iterdir() if p.name.startswith(stem) and (stem[:1] == "." or p.name[:1] != ".")]
        shown = [(f"{folder}/" if folder else "") + p.name + ("/" if p.is_dir() else "")
                 for p in found if p.is_dir() or p.name.endswith(suffixes)]
        return sorted(shown)
    return complete


def _chain_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of --chain: the CHAINs of the rubric given before it on the line."""
    # An argument (serve's RUBRIC) is left unparsed in ctx.args while completing an option.
    rubric = ctx.params.get("rubric") or next((a for a in ctx.args if a.endswith((".rubric", ".json"))), None)
    if rubric is None:
        return []
    try:
        import admiss

        names = [chain.name for chain in admiss.load(rubric, offline=True).ir.chains]
    except Exception:  # noqa: BLE001 - a rubric that does not load completes nothing, never a traceback in the shell
        return []
    return [name for name in names if name.startswith(incomplete)]


def _count(value: str) -> str:
    """A whole number of at least 1, said plainly when it is not (typer's own words name types)."""
    if not (value.isascii() and value.isdigit() and int(value) >= 1):
        raise typer.BadParameter(f"{value!r} is not a whole number of at least 1")
    return value


@app.command()
def check(
    bundles: List[Path] = typer.Argument(
        ..., metavar="BUNDLE...", autocompletion=_file_kinds(".json", ".jsonl"), help="Bundle files: .json (one bundle) or .jsonl (one per line); "
        "- reads standard input (one JSON document, or JSON Lines)."
    ),
    rubric: Optional[Path] = typer.Option(
        None, "--rubric", "-r", metavar="FILE", autocompletion=_file_kinds(".rubric", ".json"),
        help="A .rubric source or compiled IR .json; overrides each bundle's \"rubric\" field.",
    ),
    fmt: Optional[str] = typer.Option(
        None, "--format", "-f", metavar="text|json|rich|junit|markdown", callback=_one_of(Format),
        autocompletion=_values(Format), help="Report format [default: rich on a terminal (one line per bundle "
        "after 20), text otherwise]; junit and markdown write one document for the whole run.",
    ),
    chain: Optional[str] = typer.Option(None, "--chain", metavar="NAME", autocompletion=_chain_names,
                                        help="The CHAIN to run when the rubric has several."),
    config: Optional[Path] = typer.Option(
        None, "--config", metavar="FILE", help="An admiss.toml (providers, prices, gate defaults) "
        "[default: beside the rubric, else in the working folder]."
    ),
    jobs: str = typer.Option(
        "1", "--jobs", "-j", metavar="N", callback=_count, help="Check in this many worker processes "
        "(text and json formats, regular files; a pipe is checked in one process); reports keep the input order."
    ),
    bundle_timeout: float = typer.Option(
        600.0, "--bundle-timeout", metavar="SECONDS", min=0.1, help="With --jobs: a worker that spends longer on one "
        "bundle (a gate hangs or stops it) is ended and the bundle reported E183; the rest is still checked."
    ),
    fail_fast: bool = typer.Option(
        False, "--fail-fast", help="Stop at the first bundle that cannot be loaded or checked (exit 2)."
    ),
    offline: bool = typer.Option(
        False, "--offline", help="Call no model: gates that would (judges, consistency gates drawing samples or "
        "asking their MEANING MODEL) abstain with reason \"offline\" and their ON ABSTAIN applies; reports say "
        "the run was offline. Without it, a model gate whose provider admiss.toml lacks is an error (exit 2)."
    ),
    report: ReportShape = typer.Option(
        ReportShape.lean, "--report", help="The JSON report's shape: lean (each excluded item as its detail, "
        "reason and index) or full (with the item's fields and the rubric clause)."
    ),
    ray_address: Optional[str] = typer.Option(
        None, "--ray", metavar="ADDRESS", help="Check on a Ray cluster (pip install 'admiss[ray]'): 'local' starts "
        "one here, else a cluster address such as 'auto' or 'ray://host:10001'. Needs --rubric and -o."
    ),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", metavar="DIR", help="With --ray: the folder for reports.jsonl, properties.parquet and summary.json."
    ),
    verbose: bool = typer.Option(False, "--verbose", help="With --ray: show Ray's own log lines and progress too."),
    trace: Optional[str] = typer.Option(
        None, "--trace", metavar="FORMAT", help="Read every input as an agent trace in this format [default: a value that is "
        "not a bundle is a trace, its format detected]."
    ),
    live: bool = typer.Option(
        False, "--live", help="Call a rung's model (with the bundle's prompt or a trace's system and user messages, through "
        "admiss.toml's provider) when "
        "the bundle has no candidate for it. This spends money; without it such a rung is skipped."
    ),
) -> None:
    """Check candidate bundles or agent traces against a rubric and print evidence-first reports.

    A trace's steps become evidence by the rubric's MAP block (https://github.com/admiss/admiss/blob/main/docs/traces.md).
    Exit 0 when every bundle passes, 1 when any fails, 2 on bad input (the rest still run).
    """
    from admiss.runner import CheckOptions, run_check

    if ray_address is not None or output is not None:
        raise typer.Exit(_check_on_ray(ray_address, bundles, rubric, output, chain, report.value, config, offline,
                                       verbose))
    options = CheckOptions(rubric, fmt or _default_format().value, chain, config, int(jobs), fail_fast, offline,
                           report.value, trace, live, bundle_timeout)
    raise typer.Exit(run_check(bundles, options))


def _check_on_ray(address: str | None, bundles: List[Path], rubric: Optional[Path], output: Optional[Path],
                  chain: Optional[str], report: str, config: Optional[Path], offline: bool, verbose: bool) -> int:
    if address is None or output is None or rubric is None:
        sys.stderr.write("admiss check: --ray ADDRESS, -o OUTDIR and --rubric FILE go together\n")
        return EXIT_BAD_INPUT
    try:
        from admiss.ray import run_on_ray
    except ModuleNotFoundError as missing:
        if missing.name not in ("ray", "pyarrow"):
            raise
        sys.stderr.write("admiss check: --ray needs Ray: pip install 'admiss[ray]'\n")
        return EXIT_BAD_INPUT
    return run_on_ray(address, bundles, rubric, output, chain, report, config, offline, verbose)


class TestFormat(str, enum.Enum):
    text = "text"
    json = "json"
    junit = "junit"


def _percent(value: Optional[str]) -> Optional[str]:
    """A percentage from 0 to 100, said plainly when it is not."""
    try:
        ok = value is None or 0 <= float(value) <= 100
    except ValueError:
        ok = False
    if not ok:
        raise typer.BadParameter(f"{value!r} is not a percentage from 0 to 100")
    return value


@app.command("test")
def test_(
    paths: List[Path] = typer.Argument(None, metavar="[PATH]...", help="Test files, or folders searched for "
                                       "*.rubric.test.toml files [default: the working folder]."),
    fmt: str = typer.Option("text", "--format", "-f", metavar="text|json|junit", callback=_one_of(TestFormat),
                            autocompletion=_values(TestFormat), help="Output format."),
    coverage: bool = typer.Option(False, "--coverage", help="Show which rubric clauses the cases exercised, per "
                                  "file and line (with the text or JSON results; on stderr with junit), and write "
                                  "an lcov file."),
    lcov: Optional[Path] = typer.Option(None, "--lcov", metavar="FILE", help="With --coverage: the lcov file to "
                                        "write [default: admiss-coverage.lcov]."),
    threshold: Optional[str] = typer.Option(None, "--threshold", metavar="N", callback=_percent,
                                            help="Fail (exit 1) when fewer than N percent of the clauses are covered."),
) -> None:
    """Run rubric test files: each case checks a bundle or trace offline and says what must hold.

    The format and clause coverage are in https://github.com/admiss/admiss/blob/main/docs/testing.md.
    Exit 0 when every case holds (and coverage meets --threshold), 1 when one does not, 2 when
    a test file, its rubric or a case's input is bad, or no test file was found.
    """
    from admiss.testing import TestOptions, run_tests

    options = TestOptions(fmt, coverage, lcov, float(threshold) if threshold is not None else None)
    code = run_tests(paths or [Path(".")], options, sys.stdout.buffer, sys.stderr)
    sys.stdout.flush()
    raise typer.Exit(code)


@app.command("import")
def import_(
    traces: List[Path] = typer.Argument(..., metavar="TRACE...", help="Trace files: .json (one trace, or a file of runs such as an Inspect log), .jsonl (one per line, or one session's "
                                  "events, as Claude Code writes; OTLP export lines: one run per trace), .eval (an Inspect log)."),
    rubric: Path = typer.Option(..., "--rubric", "-r", metavar="FILE", help="The .rubric source or IR .json whose MAP block applies."),
    trace: Optional[str] = typer.Option(None, "--trace", metavar="FORMAT", help="The traces' format [default: detected]."),
) -> None:
    """Print the bundle each trace makes: its evidence items, each with the MAP rule that made
    it, and the steps not offered as evidence and why.

    One trace prints indented JSON; several (a .jsonl or .eval file, a file of many runs) print
    one JSON line each.
    Exit 0, or 2 when the rubric or a trace cannot be read (the other traces still print).
    """
    from admiss.api import load
    from admiss.errors import AdmissError
    from admiss.trace_import import import_traces

    try:
        compiled = load(rubric)
    except AdmissError as error:
        _print_error(error)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    raise typer.Exit(import_traces(compiled, traces, trace))


@app.command("compile")
def compile_(
    file: Path = typer.Argument(..., metavar="FILE", autocompletion=_file_kinds(".rubric", ".json"), help="A .rubric source file (or compiled IR .json, rewritten)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="OUT",
                                          help="Write the IR here instead of stdout."),
) -> None:
    """Compile a rubric to its IR as deterministic JSON (same source, same bytes)."""
    from admiss.api import load
    from admiss.errors import AdmissError

    try:
        if output is not None:
            refuse_overwriting_inputs([output], [file])
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


def _found_rubrics(paths: List[Path]) -> list[Path]:
    """The files :func:`_rubric_files` finds, after a warning for each named folder that holds
    none (like ruff: a run that found nothing to look at says so; the caller does not pass it)."""
    files = list(_rubric_files(paths))
    for folder in (p for p in paths if p.is_dir() and not any(f.is_relative_to(p) for f in files)):
        sys.stderr.write(f"warning: no .rubric files found in {folder}\n")
    return files


@app.command()
def lint(
    paths: List[Path] = typer.Argument(..., metavar="PATH...", autocompletion=_file_kinds(".rubric"),
                                       help="Rubric files, or folders searched for *.rubric files; - reads standard input."),
    fmt: str = typer.Option("text", "--format", "-f", metavar="text|json|sarif|github", callback=_one_of(LintFormat),
                            autocompletion=_values(LintFormat),
                            help="Output format."),
    select: Optional[List[str]] = typer.Option(
        None, "--select", metavar="CODES", help="Codes or prefixes to run, comma-separated (replaces the "
        "configured ones) [default: ADM, every rule]."
    ),
    ignore: List[str] = typer.Option([], "--ignore", metavar="CODES", help="Codes or prefixes not to run, "
                                     "comma-separated (added to the configured ones)."),
) -> None:
    """Report weak or contradictory rubrics, and every compile error, with stable codes.

    Exit 0 with no findings, 1 with findings (warnings count), 2 on usage errors,
    unreadable files, or when no rubric file was found. Settings: [lint] in admiss.toml or [tool.admiss.lint] in pyproject.toml.
    """
    from admiss.errors import AdmissError
    from admiss.lint import find_config, lint_source
    from admiss.lint.output import FORMATS, FileResult, text as lint_text
    from admiss.source import Source

    try:
        config = find_config(Path.cwd()).with_options(select, ignore)
    except AdmissError as error:
        _print_error(error)
        raise typer.Exit(EXIT_BAD_INPUT)
    exit_code, results, unreadable = EXIT_PASS, [], 0
    files = _found_rubrics(paths)
    if not files:
        raise typer.Exit(EXIT_BAD_INPUT)
    for path in files:
        try:
            name, text = _source_text(path)
        except AdmissError as error:
            _print_error(error)
            exit_code, unreadable = EXIT_BAD_INPUT, unreadable + 1
            continue
        # Standard input has no folder, so its gate files cannot be checked.
        found = lint_source(text, name, config, folder=None if name == "<stdin>" else path.parent)
        results.append(FileResult(Source(name, text), tuple(found)))
    sys.stdout.write(FORMATS[fmt](results) if fmt != "text" else lint_text(results, unreadable))
    if any(result.diagnostics for result in results):
        exit_code = max(exit_code, EXIT_FAIL)
    raise typer.Exit(exit_code)


def _files(count: int) -> str:
    return f"{count} file{'' if count == 1 else 's'}"


def _fmt_summary(changed: int, unchanged: int, failed: int, dry_run: bool) -> str:
    """The counts; the files an error above stopped are counted too, as lint's summary does."""
    verb = "would be reformatted" if dry_run else "reformatted"
    not_done = f", {_files(failed)} could not be formatted" if failed else ""
    return f"{_files(changed)} {verb}, {_files(unchanged)} left unchanged{not_done}\n"


@app.command("fmt")
def fmt_(
    paths: List[Path] = typer.Argument(..., metavar="PATH...",
                                       help="Rubric files, or folders searched for *.rubric files; - reads standard input."),
    check: bool = typer.Option(False, "--check", help="Write nothing; print a diff and exit 1 if a file would change."),
    diff: bool = typer.Option(False, "--diff", help="Write nothing; print a diff of what would change."),
) -> None:
    """Rewrite rubric files in the canonical layout (https://github.com/admiss/admiss/blob/main/docs/fmt.md); comments are kept.

    Exit 0, or 1 with --check when a file would change, or 2 when a file cannot be read,
    does not parse, or cannot be written (that file is left untouched), or when no rubric
    file was found.
    """
    from admiss.errors import AdmissError
    from admiss.fmt import format_source, unified_diff

    files = _found_rubrics(paths)
    if not files:
        raise typer.Exit(EXIT_BAD_INPUT)
    exit_code, changed, unchanged, failed = EXIT_PASS, 0, 0, 0
    for path in files:
        try:
            name, text = _source_text(path)
            formatted = format_source(text, name)
            if name == "<stdin>" and not (check or diff):
                sys.stdout.write(formatted)  # a filter: the formatted text, changed or not
            elif formatted != text and not (check or diff):
                write_atomically(path, formatted)
        except AdmissError as error:
            _print_error(error)
            exit_code, failed = EXIT_BAD_INPUT, failed + 1
            continue
        except OSError as error:
            sys.stderr.write(f"{path}: E001 cannot write: {error.strerror}\n")
            exit_code, failed = EXIT_BAD_INPUT, failed + 1
            continue
        if formatted == text:
            unchanged += 1
            continue
        changed += 1
        if check or diff:
            sys.stdout.write(unified_diff(text, formatted, name))
        sys.stderr.write(f"{'would reformat' if check or diff else 'reformatted'} {name}\n")
    sys.stderr.write(_fmt_summary(changed, unchanged, failed, check or diff))
    if check and changed:
        exit_code = max(exit_code, EXIT_FAIL)
    raise typer.Exit(exit_code)


class SavingsFormat(str, enum.Enum):
    text = "text"
    json = "json"


@app.command()
def savings(
    inputs: List[str] = typer.Argument(..., metavar="INPUT...", help="Receipt stores (SQLite files or postgresql:// URLs), exported "
                                       "receipts (.jsonl), or the JSON reports of admiss check on bundles with candidates "
                                       "(.json/.jsonl)."),
    config: Optional[Path] = typer.Option(
        None, "--config", metavar="FILE", help="An admiss.toml whose [prices] estimate top-rung costs [default: in the working folder]."
    ),
    fmt: SavingsFormat = typer.Option(SavingsFormat.text, "--format", "-f", help="Output format."),
    html: Optional[Path] = typer.Option(None, "--html", metavar="FILE", help="Also write the figures with charts to this HTML file."),
) -> None:
    """Spend on models and gates, what the top rung alone would have cost, and the net saving.

    Broken down by chain, rung and gate (https://github.com/admiss/admiss/blob/main/docs/savings.md). Exit 0, or 2 when an input or the
    config is bad (then nothing is printed or written). A record with an absurd cost or token
    count is skipped with a warning (W175), and the figures are of the rest.
    """
    import json

    from admiss.config import find_config, load_config
    from admiss.errors import AdmissError
    from admiss.receipts import is_url
    from admiss.savings import Request, requests_of, savings as savings_figures, unpriced_warnings

    problems: list[AdmissError] = []

    def requests(prices) -> Iterator[Request]:
        for item in requests_of(inputs, prices):
            if isinstance(item, AdmissError):
                problems.append(item)
            else:
                yield item

    try:
        if html is not None:
            files = [Path(i) for i in inputs if not is_url(i)]
            refuse_overwriting_inputs([html], [*files, *filter(None, [find_config(config)])])
        data = savings_figures(requests(load_config(config)))
    except AdmissError as error:
        problems.append(error)
    for problem in problems:
        _print_error(problem)
    if problems:
        raise typer.Exit(EXIT_BAD_INPUT)
    for note in data["skipped_notes"]:  # the figures stand without these records: warn, do not refuse
        sys.stderr.write(note + "\n")
    for warning in unpriced_warnings(data):
        sys.stderr.write(warning + "\n")
    if data["skipped"] > len(data["skipped_notes"]):
        sys.stderr.write(f"W175 {data['skipped'] - len(data['skipped_notes'])} more records skipped\n")
    if html is not None:
        from admiss.report.html import savings_page

        try:
            write_atomically(html, savings_page(data))
        except OSError as error:
            sys.stderr.write(f"{html}: E001 cannot write: {error.strerror}\n")
            raise typer.Exit(EXIT_BAD_INPUT) from None
    if fmt is SavingsFormat.json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        from admiss.report.rich import print_savings

        print_savings(data)


@app.command()
def serve(
    rubric: Path = typer.Argument(..., metavar="RUBRIC", help="A .rubric source or compiled IR .json with the CHAIN(s) to serve."),
    chain: Optional[str] = typer.Option(None, "--chain", metavar="NAME", autocompletion=_chain_names,
                                        help="Serve only this CHAIN [default: every chain; "
                                        "a request's \"model\" names its chain]."),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE", help="An admiss.toml (providers, prices, rung settings, "
                                          "[serve]) [default: beside the rubric, else in the working folder]."),
    host: str = typer.Option("127.0.0.1", "--host", metavar="HOST", help="The address to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, metavar="PORT", help="The port to listen on."),
    store: Optional[str] = typer.Option(None, "--store", metavar="STORE", help="The receipt store: an SQLite file or a "
                                        "postgresql:// URL [default: [serve] store of the config, else admiss-receipts.db]."),
    workers: int = typer.Option(1, "--workers", min=1, metavar="N", help="Processes serving the one port, each counting its "
                                "own gates' errors and sharing disabled gates through the store; /metrics adds them up "
                                "[default: 1]."),
) -> None:
    """Serve the rubric's chains as an OpenAI- and Anthropic-compatible gateway that sends only verified
    output, with receipts, /metrics and bearer keys (https://github.com/admiss/admiss/blob/main/docs/serve.md).

    Stops on SIGTERM or Ctrl-C: in-flight requests finish (up to [serve] grace_s), the
    store is flushed, exit 0. Exit 2 when the rubric, config or store is bad; exit 3 when
    it cannot start serving (the port is taken, a worker could not start).
    """
    import os

    from admiss.errors import AdmissError

    # The gateway's metrics are its own: a prometheus multiprocess folder that the
    # environment sets for another program would mix that program's values into /metrics
    # (prometheus_client reads the variable when imported). --workers makes its own.
    for name in ("PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir"):
        os.environ.pop(name, None)
    try:
        from admiss.serve.app import serve as run_gateway, serve_workers
    except ImportError as error:
        sys.stderr.write(f"admiss serve needs the serve extra: pip install 'admiss[serve]' ({error})\n")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    from admiss.serve.router import routers_for

    from admiss.serve.app import api_keys

    try:
        routers = routers_for(rubric, config, chain, store)
        first = next(iter(routers.values()))
        keys = api_keys(first)
    except AdmissError as error:
        _print_error(error)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    for model in sorted({m for router in routers.values() for m in router.unpriced()}):
        where = first.config.path or "admiss.toml"
        sys.stderr.write(f'admiss serve: warning: W176 {model} has no [prices."{model}"] in {where}: its calls '
                         "are recorded at $0, so receipts and admiss savings will not count what they cost\n")
    grace_s = first.config.serve.grace_s
    if workers == 1:
        raise typer.Exit(run_gateway(routers, keys, host, port, grace_s))
    # Checked here, built again in each worker: what the workers serve is what was checked.
    spec = {"rubric": str(rubric.resolve()), "config": str(first.config.path.resolve()) if first.config.path else None,
            "chain": chain, "store": _store_location(first.config.serve.store if store is None else store)}
    first.store.close()
    raise typer.Exit(serve_workers(spec, workers, host, port, grace_s))


@app.command()
def lsp() -> None:
    """Run the rubric language server on standard input and output, for editors: diagnostics
    as you type, formatting, hover, go to definition, references, completion and quick fixes
    (https://github.com/admiss/admiss/blob/main/docs/editors.md). Needs the lsp extra.
    """
    try:
        from admiss.lsp.server import run
    except ImportError as error:
        sys.stderr.write(f"admiss lsp needs the lsp extra: pip install 'admiss[lsp]' ({error})\n")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    run()


receipts_app = typer.Typer(help="Read a receipt store written by admiss serve.", no_args_is_help=True,
                           cls=_PlainHelpGroup, context_settings={"help_option_names": ["-h", "--help"]})
app.add_typer(receipts_app, name="receipts")


def _store_location(store: str | Path) -> str:
    """A store as a worker process or a message gets it: a URL as given, a file's path made absolute."""
    from admiss.receipts import is_url

    return str(store) if is_url(str(store)) else str(Path(store).resolve())


_STORE_HELP = "The receipt store: an SQLite file, or a postgresql:// URL (password in PGPASSWORD or ~/.pgpass)."


def _opened_store(store: str, read_only: bool = False):
    """The existing store named on the command line; exit 2 with E152 when it is none."""
    from admiss.receipts import StoreError, open_store
    from admiss.redact import redact

    try:
        return open_store(store if "://" in store else Path(store), create=False, read_only=read_only)
    except StoreError as error:
        from admiss.config import DEFAULT_STORE

        shown = redact(store)
        sys.stderr.write(f"{shown}: E152 {str(error).removeprefix(f'{shown}: ')}\n"
                         f"  hint: name the store admiss serve writes: [serve] store in its admiss.toml "
                         f"(default {DEFAULT_STORE}, beside that file)\n")
        raise typer.Exit(EXIT_BAD_INPUT) from None


@receipts_app.command("export")
def receipts_export(
    store: str = typer.Argument(..., metavar="STORE", help=_STORE_HELP),
    since: Optional[str] = typer.Option(None, "--since", metavar="TIME", help="Only receipts created at or after this ISO-8601 time "
                                        "(a date, or a date and time; no zone means UTC)."),
) -> None:
    """Print receipts as JSON Lines, oldest first. Exit 2 when the store or --since is bad,
    or when a damaged row was skipped (each one is named on stderr; the rest are printed)."""
    import json

    from admiss.receipts import DamagedRow, StoreError, parse_since

    damaged: list[DamagedRow] = []

    try:
        start = parse_since(since) if since is not None else None
    except ValueError:
        sys.stderr.write(f"--since: E153 not an ISO-8601 time: {since!r} (e.g. 2026-11-30 or 2026-11-30T23:10:00Z)\n")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    receipts = _opened_store(store, read_only=True)
    where = receipts.where

    def skip(row: DamagedRow) -> None:
        damaged.append(row)
        sys.stderr.write(f"{where}: warning: E155 {str(row).removeprefix(f'{where}: ')}; skipped\n")

    try:
        for receipt in receipts.iter_since(start, skip):
            sys.stdout.write(json.dumps(receipt, ensure_ascii=False) + "\n")
    except StoreError as error:
        sys.stderr.write(f"{where}: E152 {str(error).removeprefix(f'{where}: ')}\n")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    finally:
        receipts.close()
    if damaged:
        raise typer.Exit(EXIT_BAD_INPUT)


@receipts_app.command("enable-gates")
def receipts_enable_gates(
    store: str = typer.Argument(..., metavar="STORE", help=_STORE_HELP),
    chain: Optional[str] = typer.Option(None, "--chain", metavar="NAME", help="Only the gates of this CHAIN [default: all]."),
) -> None:
    """Turn gates that an error budget disabled back on, in every gateway writing to STORE
    (each follows within a second, with an empty window). Exit 2 when the store is bad."""
    from admiss.receipts import StoreError

    receipts = _opened_store(store)
    try:
        count = receipts.enable_gates(chain)
    except StoreError as error:
        sys.stderr.write(f"{receipts.where}: E152 {str(error).removeprefix(f'{receipts.where}: ')}\n")
        raise typer.Exit(EXIT_BAD_INPUT) from None
    finally:
        receipts.close()
    sys.stdout.write(f"{count} gate{'s' if count != 1 else ''} enabled\n")


# ---------------------------------------------------------------- shell completion

_COMPLETE_VAR = "_ADMISS_COMPLETE"


_SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def _shell(value: str) -> str:
    if value not in _SHELLS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(_SHELLS)}")
    return value


def _show_completion(ctx, param, value: Optional[str]) -> None:
    if value is None or ctx.resilient_parsing:
        return
    from typer._completion_shared import get_completion_script

    typer.echo(get_completion_script(prog_name="admiss", complete_var=_COMPLETE_VAR, shell=_shell(value)))
    raise typer.Exit()


def _install_completion(ctx, param, value: Optional[str]) -> None:
    if value is None or ctx.resilient_parsing:
        return
    from typer._completion_shared import install

    shell, path = install(shell=_shell(value), prog_name="admiss", complete_var=_COMPLETE_VAR)
    typer.echo(f"{shell} completion installed in {path}; it takes effect in a new terminal")
    raise typer.Exit()


def main() -> None:
    # One name whichever way it is started (python -m admiss too): in usage lines, and in
    # the _ADMISS_COMPLETE variable that shell completion sets.
    from typer.completion import completion_init

    completion_init()  # typer's completion classes, which add_completion=True would register
    app(prog_name="admiss")
