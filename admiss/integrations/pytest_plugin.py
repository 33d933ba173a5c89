"""The pytest plugin (entry point ``pytest11`` named ``admiss``): fixtures that load a rubric
and check bundles and traces, an assertion whose failure message is the evidence-first
report, and, when asked, rubric test files collected as pytest items.

pytest loads this module in every run where admiss is installed, the runs of projects that
never use it included: so it imports nothing of admiss at module level (``admiss.api``
loads when a fixture is first used), defines no autouse fixture, and collects nothing
unless ``--admiss-tests`` (or ``admiss_tests = true``) asks it to.

Fixtures (docs/integrations/pytest.md):

- ``admiss_load(path, config=None, offline=False)``: a Rubric, loaded once per session;
  a relative path is read from the test file's folder.
- ``admiss_rubric``: the Rubric named by the closest ``@pytest.mark.admiss(rubric=...)``
  (relative to the test file), else by the ``admiss_rubric`` ini option or
  ``--admiss-rubric`` (relative to the rootdir).
- ``admiss_check(subject, expect="pass", rubric=None, **check_options)``: checks a bundle,
  a trace, or the path of a JSON file holding either, asserts its verdict (``expect=None``
  asserts nothing) and returns the report.

Rubric test files are the format of ``admiss test`` (module ``admiss.testing``); this
plugin reads none of it itself. It asks that module for: ``TEST_FILES`` (the fnmatch
patterns of test file names), ``load_cases(path)`` (the cases of one file, each with
``name`` and ``line``; AdmissError for a malformed file) and ``run_case(case)`` (an outcome
with ``passed`` and ``message``). An admiss without ``admiss.testing`` collects nothing,
and ``--admiss-tests`` then stops with a usage error that says so.
"""

from __future__ import annotations

import fnmatch
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pytest

if TYPE_CHECKING:
    from admiss.api import Rubric
    from admiss.report import CheckReport

TESTING_MODULE = "admiss.testing"
_CLAUSE_WORDS = {"forbidden": "forbidden by", "inadmissible": "not admitted:", "shortcut-rejected": "rejected by"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("admiss", "admiss rubrics")
    group.addoption("--admiss-rubric", metavar="FILE", help="the rubric of the admiss_rubric fixture "
                    "(overrides the admiss_rubric ini option)")
    group.addoption("--admiss-tests", action="store_true", default=None,
                    help="collect admiss rubric test files (those `admiss test` runs) as pytest items")
    parser.addini("admiss_rubric", "the rubric of the admiss_rubric fixture, relative to the rootdir")
    parser.addini("admiss_config", "admiss.toml for rubrics with gate chains, relative to the rootdir")
    parser.addini("admiss_offline", "load rubrics offline: gates that call a model abstain", type="bool",
                  default=False)
    parser.addini("admiss_tests", "collect admiss rubric test files as pytest items", type="bool", default=False)
    parser.addini("admiss_test_files", "fnmatch patterns of rubric test file names (default: those "
                  "admiss.testing declares)", type="args", default=[])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "admiss(rubric, config=None, offline=False): the rubric the "
                            "admiss_rubric fixture loads, relative to the test file")
    if _collecting(config) and _testing_module() is None:
        raise pytest.UsageError(f"--admiss-tests: this admiss has no {TESTING_MODULE} module (admiss test), "
                                "so there is no rubric test file format to collect")


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def _admiss_rubrics() -> Iterator[dict]:
    """Rubrics loaded in this session, by (path, config, offline); closed at its end."""
    loaded: dict[tuple, Rubric] = {}
    yield loaded
    for rubric in loaded.values():
        rubric.close()


@pytest.fixture
def admiss_load(request: pytest.FixtureRequest, _admiss_rubrics: dict) -> Callable[..., "Rubric"]:
    """``load(path, config=None, offline=None)``: the Rubric at ``path`` (relative to the test
    file's folder), loaded once per session; ``config`` and ``offline`` default to the
    ``admiss_config`` and ``admiss_offline`` ini options."""
    here = request.path.parent
    ini = request.config

    def load(path: str | Path, config: str | Path | None = None, offline: bool | None = None) -> "Rubric":
        __tracebackhide__ = True
        config = config if config is not None else _ini_path(ini, "admiss_config")
        key = ((here / path).resolve(), (here / config).resolve() if config is not None else None,
               ini.getini("admiss_offline") if offline is None else offline)
        if key not in _admiss_rubrics:
            # admiss.api loads on first use, not when pytest loads the plugin (see the docstring).
            import admiss

            _admiss_rubrics[key] = _or_fail(admiss.load, *key)
        return _admiss_rubrics[key]

    return load


@pytest.fixture
def admiss_rubric(request: pytest.FixtureRequest, admiss_load: Callable[..., "Rubric"]) -> "Rubric":
    """The Rubric of the closest ``admiss`` mark, else of ``--admiss-rubric`` / the
    ``admiss_rubric`` ini option."""
    marker = request.node.get_closest_marker("admiss")
    if marker is not None:
        args = dict(zip(("rubric", "config", "offline"), marker.args)) | marker.kwargs
        if "rubric" not in args:
            pytest.fail("@pytest.mark.admiss needs the rubric: @pytest.mark.admiss(rubric=\"x.rubric\")",
                        pytrace=False)
        return admiss_load(args["rubric"], args.get("config"), args.get("offline"))
    option = request.config.getoption("admiss_rubric")
    path = Path(option).resolve() if option else _ini_path(request.config, "admiss_rubric")
    if path is None:
        pytest.fail("admiss_rubric: no rubric named: mark the test @pytest.mark.admiss(rubric=\"x.rubric\"), "
                    "set admiss_rubric in the ini file, or pass --admiss-rubric", pytrace=False)
    return admiss_load(path)


@pytest.fixture
def admiss_check(request: pytest.FixtureRequest) -> Callable[..., "CheckReport"]:
    """``check(subject, expect="pass", rubric=None, **options)``: the report of checking
    ``subject`` (a bundle, a trace, or the path of a JSON file holding one, relative to the
    test file) with ``rubric`` (default: the ``admiss_rubric`` fixture's), after asserting
    its verdict is ``expect`` (None: no assertion). ``options`` go to ``Rubric.check``."""
    here = request.path.parent

    def check(subject: Any, expect: str | None = "pass", rubric: "Rubric | None" = None,
              **options: Any) -> "CheckReport":
        __tracebackhide__ = True
        rubric = rubric if rubric is not None else request.getfixturevalue("admiss_rubric")
        if isinstance(subject, (str, Path)):
            options.setdefault("name", str(subject))
            subject = _or_fail(_read_json, here / subject)
        report = _or_fail(rubric.check, subject, **options)
        if expect is not None:
            assert_verdict(report, expect)
        return report

    return check


def assert_verdict(report: "CheckReport", expected: str = "pass") -> None:
    """AssertionError, with the evidence-first report as its message, unless the report's
    verdict is ``expected`` ("pass" or "fail")."""
    __tracebackhide__ = True
    if expected not in ("pass", "fail"):
        raise ValueError(f"expected must be 'pass' or 'fail', not {expected!r}")
    if report.verdict != expected:
        raise AssertionError(failure_message(report, expected))


def failure_message(report: "CheckReport", expected: str) -> str:
    """What a failed ``assert_verdict`` says: expected and got, the report as ``admiss
    check`` prints it (what was admitted, what was excluded), then each excluded item with
    the clause that excluded it and where the rubric says so."""
    subject = f"{report.bundle_name}, " if report.bundle_name else ""
    lines = [f"admiss: expected {expected}, got {report.verdict} ({subject}rubric {report.rubric.name})", "",
             report.to_text().rstrip("\n")]
    excluded = _exclusion_lines(report)
    if excluded:
        lines += ["", "excluded, by clause:", *excluded]
    return "\n".join(lines)


def _exclusion_lines(report: "CheckReport") -> list[str]:
    from admiss.terminal import one_line

    where = report.rubric.origin or "<rubric>"
    out = []
    for prop in report.to_dict(full=True)["properties"]:
        for item in prop["excluded"]:
            clause = item["clause"]
            said = f"{clause['keyword']} {clause['value']}" if clause.get("value") else clause["keyword"]
            out.append(f"  {prop['name']}: {item['detail']!r} "
                       f"{_CLAUSE_WORDS.get(item['reason'], item['reason'])} {one_line(said)} "
                       f"({where}:{clause['line']}:{clause['column']})")
    return out


def _read_json(path: Path) -> Any:
    from admiss.api import read_text
    from admiss.bundle import parse_bundle_text

    return parse_bundle_text(read_text(path), str(path))


def _or_fail(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)``; a bad rubric, bundle or trace fails the test with admiss's
    located message, not a traceback through admiss."""
    __tracebackhide__ = True
    from admiss.errors import AdmissError

    try:
        return call(*args, **kwargs)
    except AdmissError as error:
        message = error.render()
    pytest.fail(message, pytrace=False)  # outside the except: no "during handling" chain


def _ini_path(config: pytest.Config, name: str) -> Path | None:
    value = config.getini(name)
    return (config.rootpath / value).resolve() if value else None


# ---------------------------------------------------------------- rubric test files


def _collecting(config: pytest.Config) -> bool:
    option = config.getoption("admiss_tests")
    return bool(option if option is not None else config.getini("admiss_tests"))


def _testing_module() -> Any:
    """``admiss.testing`` (the format of ``admiss test``), or None in an admiss without it."""
    try:
        return importlib.import_module(TESTING_MODULE)
    except ModuleNotFoundError as error:
        if error.name != TESTING_MODULE:
            raise
        return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if not _collecting(parent.config):
        return None
    testing = _testing_module()
    patterns = parent.config.getini("admiss_test_files") or testing.TEST_FILES
    if any(fnmatch.fnmatch(file_path.name, pattern) for pattern in patterns):
        return RubricTestFile.from_parent(parent, path=file_path)
    return None


class RubricTestFile(pytest.File):
    """One rubric test file: an item per case."""

    def collect(self) -> Iterator[pytest.Item]:
        from admiss.errors import AdmissError

        try:
            cases = _testing_module().load_cases(self.path)
        except AdmissError as error:
            raise self.CollectError(error.render()) from None
        for case in cases:
            yield RubricTestCase.from_parent(self, name=case.name, case=case)


class RubricCaseFailed(Exception):
    """A rubric test case whose expectation did not hold; its message is the report."""


class RubricTestCase(pytest.Item):
    def __init__(self, *, case: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        outcome = _testing_module().run_case(self.case)
        if not outcome.passed:
            raise RubricCaseFailed(outcome.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, RubricCaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, max(int(getattr(self.case, "line", 1)) - 1, 0), f"rubric test: {self.name}"
