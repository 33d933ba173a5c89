"""Runs every conformance case (see README.md) through the Python API and through the CLI."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

import admiss
from admiss.bundle import parse_bundle_text
from admiss.errors import AdmissError
from reference import MISSING, project  # tests/ is on sys.path (tests/conftest.py)

CASES_DIR = Path(__file__).parent / "cases"
CASES = sorted(p for p in CASES_DIR.iterdir() if p.is_dir())
EXEC_RETRIES = 2


# ---------------------------------------------------------------- case files


def config(case: Path) -> dict:
    """File names a case uses; ``case.json`` overrides the defaults."""
    settings = {"rubric": "rubric.rubric", "bundle": "bundle.json"}
    path = case / "case.json"
    if path.exists():
        settings.update(json.loads(path.read_text(encoding="utf-8")))
    return settings


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def read_text(path: Path) -> str:
    # newline="" keeps the bytes as written: the expected text is compared exactly.
    with path.open(encoding="utf-8", newline="") as f:
        return f.read()


def is_error_case(case: Path) -> bool:
    return (case / "expected_error.json").exists()


# ---------------------------------------------------------------- comparison


def in_source_order(diagnostics: list[dict]) -> list[dict]:
    # Engines may analyse in several passes; the cases list problems by position.
    return sorted(diagnostics, key=lambda d: (d.get("line") or 0, d.get("column") or 0))


def diagnostic_view(diagnostic, expected: dict) -> dict:
    """The fields a case pins, read from an engine diagnostic; ``path`` is found in its text."""
    view = {"code": diagnostic.code, "line": diagnostic.span.line, "column": diagnostic.span.column}
    if "path" in expected:
        text = f"{diagnostic.message} {diagnostic.hint or ''}"
        view["path"] = expected["path"] if expected["path"] in text else text
    return {key: view.get(key, MISSING) for key in expected}


def paired_views(actual: list, expected: list[dict]) -> list[dict]:
    ordered = sorted(actual, key=lambda d: (d.span.line, d.span.column))
    if len(ordered) != len(expected):
        return [{"code": d.code, "line": d.span.line, "column": d.span.column, "message": d.message}
                for d in ordered]
    return [diagnostic_view(d, e) for d, e in zip(ordered, expected)]


# ---------------------------------------------------------------- through the API


def api_outcome(case: Path):
    """The report, or the AdmissError the engine raised, for one case."""
    settings = config(case)
    rubric = admiss.load(str(case / settings["rubric"]))
    # The engine's own bundle decoder, so invalid JSON is a located B001 here too.
    bundle = parse_bundle_text(read_text(case / settings["bundle"]), settings["bundle"])
    return rubric.check(bundle, trace_format=settings.get("trace"))


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_api(case: Path):
    if is_error_case(case):
        expected = read_json(case / "expected_error.json")
        with pytest.raises(AdmissError) as caught:
            api_outcome(case)
        wanted = in_source_order(expected["diagnostics"])
        assert paired_views(list(caught.value.diagnostics), wanted) == wanted
        assert caught.value.exit_code == expected["exit_code"]
        return
    expected = read_json(case / "expected.json")
    report = api_outcome(case)
    assert project(report.to_dict(), expected) == expected
    full = read_json(case / "expected_full.json")
    assert project(report.to_dict(full=True), full) == full
    assert report.verdict == expected["verdict"]
    assert report.to_text() == read_text(case / "expected.txt")


# ---------------------------------------------------------------- through the CLI


def admiss_command() -> list[str]:
    script = shutil.which("admiss", path=str(Path(sys.executable).parent)) or shutil.which("admiss")
    if script is None:
        pytest.skip("the admiss console script is not installed")
    return [script]


def run_cli(command: list[str], case: Path, output_format: str, *more: str) -> subprocess.CompletedProcess:
    settings = config(case)
    args = ["check", "--rubric", settings["rubric"], "--format", output_format, *more, settings["bundle"]]
    if "trace" in settings:
        args += ["--trace", settings["trace"]]
    for attempt in range(EXEC_RETRIES + 1):
        try:
            return subprocess.run(
                command + args, cwd=case, capture_output=True, text=True, encoding="utf-8", timeout=60
            )
        except OSError as error:
            # CI once saw execve fail with EFAULT on the console script, in the vfork child of
            # one of these threads: the kernel could not read the arguments from the parent's
            # memory, a fault of the host before admiss ran at all. Any other error, or EFAULT
            # on every try, still fails the test.
            if error.errno != errno.EFAULT or attempt == EXEC_RETRIES:
                raise
    raise AssertionError("not reached: the last try returns or raises")


def _cli_args(item: pytest.Item) -> tuple | None:
    """The (case, format, *more) run_cli takes for a CLI test of this module, else None."""
    params = getattr(item, "callspec", None)
    if item.module is not sys.modules[__name__] or params is None:
        return None
    if item.originalname == "test_cli_text":
        return (params.params["case"], "text")
    if item.originalname == "test_cli_json":
        return (params.params["case"], "json", "--report", params.params["shape"])
    return None


@pytest.fixture(scope="module")
def cli_runs(request) -> dict[tuple, Future]:
    """Every CLI run this session's selected tests of this module check, started at once in
    as many threads as the machine has CPUs: each one a real ``admiss check`` process that
    reads only its case folder, so they share nothing; the runs are some 280 processes
    whose start-up is most of the module's time, and one at a time leaves a CPU idle."""
    command = admiss_command()
    wanted = dict.fromkeys(args for item in request.session.items if (args := _cli_args(item)))
    pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 2)
    yield {args: pool.submit(run_cli, command, *args) for args in wanted}
    pool.shutdown(wait=True, cancel_futures=True)


def location_pattern(file: str, diagnostic: dict) -> str:
    """``file:line:col: CODE``, the position the case pins; a case that pins none (a trace
    error, which the API raises from a parsed value with no text) takes the CLI's
    ``file:line:col: CODE`` or ``file: CODE`` alike: the CLI locates it in the file's text."""
    where = re.escape(file)
    where += f":{diagnostic['line']}:{diagnostic['column']}" if "line" in diagnostic else r"(:\d+:\d+)?"
    return rf"(^|[\s/\\]){where}: {diagnostic['code']}\b"


def diagnostic_file(case: Path, diagnostic: dict) -> str:
    settings = config(case)
    return settings["bundle"] if diagnostic["code"].startswith("B") else settings["rubric"]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_cli_text(case: Path, cli_runs):
    result = cli_runs[(case, "text")].result()
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    if is_error_case(case):
        expected = read_json(case / "expected_error.json")
        assert result.returncode == expected["exit_code"], output
        for diagnostic in expected["diagnostics"]:
            pattern = location_pattern(diagnostic_file(case, diagnostic), diagnostic)
            assert re.search(pattern, output, re.MULTILINE), f"{pattern!r} not in:\n{output}"
            if "path" in diagnostic:
                assert diagnostic["path"] in output
        return
    expected = read_json(case / "expected.json")
    assert result.returncode == (0 if expected["verdict"] == "pass" else 1), output
    # The CLI prints the report followed by one newline.
    assert result.stdout == read_text(case / "expected.txt") + "\n"


@pytest.mark.parametrize("shape", ["lean", "full"])
@pytest.mark.parametrize("case", [c for c in CASES if not is_error_case(c)], ids=lambda p: p.name)
def test_cli_json(case: Path, shape: str, cli_runs):
    result = cli_runs[(case, "json", "--report", shape)].result()
    expected = read_json(case / ("expected.json" if shape == "lean" else "expected_full.json"))
    assert result.returncode == (0 if expected["verdict"] == "pass" else 1), result.stderr
    assert project(json.loads(result.stdout), expected) == expected
