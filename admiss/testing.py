"""``admiss test``: test files beside rubrics, each case a bundle or trace and what must hold.

A test file is TOML named ``<rubric file>.test.toml`` (``sec_filings.rubric.test.toml``
tests ``sec_filings.rubric``); docs/testing.md describes it. Cases run offline: no provider
is called, a model gate abstains with reason "offline" and its ON ABSTAIN applies, as in
``admiss check --offline``, unless the case records the model's reply (``replies``).
Each case gets a fresh run state, so no case's error budgets or clients leak into another.

The public entry point for other tools (the pytest plugin collects these files):
:func:`find_test_files` and :func:`run_file`, which returns a :class:`FileResult`.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import attrs

from admiss.api import load, read_text, read_trace
from admiss.bundle import parse_bundle_text
from admiss.config import tomllib, toml_syntax_error
from admiss.coverage import Coverage
from admiss.errors import DOCS_URL, AdmissError, Diagnostic, InputError, did_you_mean
from admiss.interpreter import Runtime, check_bundle, check_trace
from admiss.source import NO_SPAN, Source, Span

if TYPE_CHECKING:
    from admiss.compiler import Exclusion, PropertyResult
    from admiss.report import CheckReport

TEST_SUFFIX = ".test.toml"
# The glob that finds test files under a folder: the file name of a rubric, then .test.toml.
TEST_GLOB = "*.rubric" + TEST_SUFFIX
WRITE_ONE_HINT = f"{DOCS_URL}testing.md shows how to write one"
PASSED, FAILED, ERRORED = "pass", "fail", "error"

_TOP_KEYS = ("rubric", "case")
_CASE_KEYS = ("name", "bundle", "trace", "format", "chain", "replies", "expect")
_EXPECT_KEYS = ("verdict", "aggregate", "missing_evidence_count", "properties", "admitted", "excluded",
                "not_offered", "chain", "gates")
_LIST_KEYS = {
    "admitted": ("property", "kind", "label", "detail"),
    "excluded": ("property", "reason", "clause", "value", "detail", "index"),
    "not_offered": ("type", "tool", "reason", "step"),
    "gates": ("rung", "gate", "verdict", "effective", "reason"),
}
_REQUIRED = {"admitted": ("property",), "excluded": ("property",), "gates": ("rung", "gate")}
_CHAIN_KEYS = ("served", "exhausted")
_CHOICES = {"verdict": ("pass", "fail"), "aggregate": ("pass", "fail"),
            "reason": ("forbidden", "inadmissible", "shortcut-rejected"),
            "clause": ("ADMIT", "FORBID", "REJECT SHORTCUT")}
_CASE_HEADER = re.compile(r"^\s*\[\[\s*case\s*\]\]\s*(#.*)?$")


# ---------------------------------------------------------------- results


@attrs.frozen
class Failure:
    """One expectation that did not hold: what was shown first (the evidence), then the
    expected and the found value, and the rubric clause that decided it, at file:line:col."""

    expectation: str
    expected: str
    got: str
    evidence: tuple[str, ...] = ()
    clause: str | None = None


@attrs.frozen
class CaseResult:
    file: str
    name: str
    line: int
    outcome: str  # PASSED, FAILED or ERRORED
    failures: tuple[Failure, ...] = ()
    error: str | None = None
    time_s: float = 0.0

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@attrs.frozen
class FileResult:
    """A test file's cases, or the error that kept it from running (then ``cases`` is empty)."""

    file: str
    rubric: str | None
    cases: tuple[CaseResult, ...] = ()
    error: AdmissError | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and all(c.outcome == PASSED for c in self.cases)


# ---------------------------------------------------------------- reading test files


@attrs.frozen
class Case:
    name: str
    line: int
    # What the case checks: ("bundle", dict) or ("trace", a Trace), and how to call it.
    input_kind: str
    value: Any
    label: str
    chain: str | None
    replies: dict[str, str]
    expect: dict[str, Any]


@attrs.frozen
class TestFile:
    path: Path
    rubric_path: Path
    cases: tuple[Case, ...]


class _Reader:
    """Checks a decoded test file's shape; every mistake is E192 at the case that made it."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.source = Source(str(path), text)
        self.case_lines = [i + 1 for i, line in enumerate(text.splitlines()) if _CASE_HEADER.match(line)]

    def error(self, message: str, line: int = 0, hint: str | None = None) -> InputError:
        width = len(self.source.line_text(line).rstrip()) if line else 1
        span = Span.point(line, 1, max(width, 1)) if line else NO_SPAN
        return InputError([Diagnostic("E192", message, span=span, file=str(self.path), hint=hint)], self.source)

    def keys(self, table: dict, allowed: Sequence[str], where: str, line: int) -> None:
        for key in table:
            if key not in allowed:
                raise self.error(f"{where}: unknown key {key!r}", line,
                                 did_you_mean(key, allowed) or f"keys here: {', '.join(allowed)}")

    def of_type(self, value: Any, kind: type | tuple, where: str, line: int, words: str) -> Any:
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise self.error(f"{where}: must be {words}", line)
        return value

    def choice(self, value: Any, where: str, line: int, choices: Sequence[str]) -> None:
        if value not in choices:
            raise self.error(f"{where}: {value!r} is not one of {', '.join(choices)}", line,
                             did_you_mean(str(value), choices))

    def test_file(self, data: dict) -> tuple[Path, list[tuple[dict, int]]]:
        self.keys(data, _TOP_KEYS, "the test file", 0)
        default = self.path.name[: -len(TEST_SUFFIX)] if self.path.name.endswith(TEST_SUFFIX) else None
        rubric = data.get("rubric", default)
        if rubric is None:
            raise self.error("no rubric to test", 0, f'add rubric = "FILE", or name the file FILE{TEST_SUFFIX}')
        self.of_type(rubric, str, "rubric", 0, "a path (relative to the test file)")
        cases = self.of_type(data.get("case", []), list, "case", 0, "an array of tables ([[case]])")
        if not cases:
            raise self.error("the test file has no [[case]]", 0, WRITE_ONE_HINT)
        lines = self.case_lines + [0] * (len(cases) - len(self.case_lines))
        path = self.path.parent / rubric
        if not path.exists() and not path.is_symlink():
            # Said here, not where the rubric is read: there the name would seem to come from nowhere.
            came = ("the test file's rubric key, relative to its folder" if "rubric" in data else
                    f"the test file's name: with no rubric key, NAME{TEST_SUFFIX} tests NAME")
            raise InputError([Diagnostic("E001", f"rubric: no such file {str(path)!r} (the name comes from {came})",
                                         file=str(self.path), hint='fix or add rubric = "FILE"')])
        return path, list(zip(cases, lines))

    def expect(self, expect: Any, line: int, properties: set[str]) -> dict:
        expect = self.of_type(expect, dict, "expect", line, "a table")
        self.keys(expect, _EXPECT_KEYS, "expect", line)
        if not expect:
            raise self.error("expect: says nothing must hold", line, f"keys here: {', '.join(_EXPECT_KEYS)}")
        for key in ("verdict", "aggregate"):
            if key in expect:
                self.choice(expect[key], f"expect.{key}", line, _CHOICES[key])
        if "missing_evidence_count" in expect:
            self.of_type(expect["missing_evidence_count"], int, "expect.missing_evidence_count", line, "an integer")
        for name, verdict in self.of_type(expect.get("properties", {}), dict, "expect.properties", line,
                                          "a table of property = \"yes\" or \"no\"").items():
            self._property(name, f"expect.properties.{name}", line, properties)
            self.choice(verdict, f"expect.properties.{name}", line, ("yes", "no"))
        for key, allowed in _LIST_KEYS.items():
            entries = self.of_type(expect.get(key, []), list, f"expect.{key}", line, "an array of tables")
            for i, entry in enumerate(entries):
                where = f"expect.{key}[{i}]"
                self.of_type(entry, dict, where, line, "a table")
                self.keys(entry, allowed, where, line)
                for needed in _REQUIRED.get(key, ()):
                    if needed not in entry:
                        raise self.error(f"{where}: needs {needed!r}", line)
                if "property" in entry:
                    self._property(entry["property"], f"{where}.property", line, properties)
                for field in ("reason", "clause"):
                    if field in entry and key == "excluded":
                        self.choice(entry[field], f"{where}.{field}", line, _CHOICES[field])
        chain = self.of_type(expect.get("chain", {}), dict, "expect.chain", line, "a table")
        self.keys(chain, _CHAIN_KEYS, "expect.chain", line)
        return expect

    def _property(self, name: Any, where: str, line: int, properties: set[str]) -> None:
        if name not in properties:
            raise self.error(f"{where}: the rubric has no property {name!r}", line,
                             did_you_mean(str(name), properties) or f"properties: {', '.join(sorted(properties))}")


def _input(reader: _Reader, case: dict, line: int) -> tuple[str, Any, str]:
    """("bundle", the bundle) or ("trace", the Trace) of a case, and what to call it."""
    given = [key for key in ("bundle", "trace") if key in case]
    if len(given) != 1:
        raise reader.error("a case names one bundle or one trace", line,
                           'bundle = "FILE.json" or [case.bundle] ...; trace = "FILE.json" or [case.trace] ...')
    key = given[0]
    value, trace_format = case[key], case.get("format")
    if trace_format is not None:
        reader.of_type(trace_format, str, "format", line, "a trace format name")
    if isinstance(value, str):
        path = reader.path.parent / value
        label = str(path)
        if key == "trace":
            return key, read_trace(path, trace_format, label), label
        return key, parse_bundle_text(read_text(path), label), label
    reader.of_type(value, dict, key, line, f"a path or a table ([case.{key}])")
    label = f"{reader.path}:{line} ({key})"
    if key == "trace":
        return key, read_trace(value, trace_format, label), label
    return key, value, label


def _rubric_properties(rubric_path: Path) -> tuple[Any, set[str]]:
    compiled = load(rubric_path, offline=True).compiled
    return compiled, {p.name for p in compiled.properties}


def load_test_file(path: str | Path) -> tuple[TestFile, Any]:
    """The test file at ``path``, checked against its rubric, and the compiled rubric;
    AdmissError (E192 and the rubric's own errors) when either is wrong."""
    path = Path(path)
    text = read_text(path)
    reader = _Reader(path, text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_syntax_error(exc, reader.source) from None
    rubric_path, raw_cases = reader.test_file(data)
    compiled, properties = _rubric_properties(rubric_path)
    cases = []
    for i, (raw, line) in enumerate(raw_cases):
        raw = reader.of_type(raw, dict, f"case[{i}]", line, "a table")
        reader.keys(raw, _CASE_KEYS, f"case {i + 1}", line)
        name = reader.of_type(raw.get("name", f"case {i + 1}"), str, "name", line, "a string")
        kind, value, label = _input(reader, raw, line)
        chain = raw.get("chain")
        if chain is not None:
            reader.of_type(chain, str, "chain", line, "a CHAIN name")
        replies = reader.of_type(raw.get("replies", {}), dict, "replies", line, 'a table of "provider/model" = reply')
        for model, reply in replies.items():
            reader.of_type(reply, str, f"replies.{model}", line, "the model's reply text")
        expect = reader.expect(raw.get("expect"), line, properties) if "expect" in raw else None
        if expect is None:
            raise reader.error(f"case {name!r} has no expect table", line, "[case.expect] says what must hold")
        cases.append(Case(name, line, kind, value, label, chain, dict(replies), expect))
    return TestFile(path, rubric_path, tuple(cases)), compiled


def find_test_files(paths: Iterable[str | Path]) -> list[Path]:
    """Each named file, and each ``*.rubric.test.toml`` under a named folder, sorted."""
    out: list[Path] = []
    for path in map(Path, paths):
        out += sorted(p for p in path.rglob(TEST_GLOB) if p.is_file()) if path.is_dir() else [path]
    return out


# ---------------------------------------------------------------- recorded replies


class _Replies:
    """Model replies a case recorded, in place of the providers: each call to a model gets
    its recorded reply; a model with none is a failed call (the gate abstains and says why)."""

    def __init__(self, replies: dict[str, str]):
        self.replies = replies

    def configured(self, model: str | None) -> bool:
        return model in self.replies

    async def complete(self, model: str, messages: Any, params: Any = None, text: bytes | None = None):
        from admiss.providers import Completion, ProviderError

        if model not in self.replies:
            raise ProviderError(f"no reply recorded for {model} in this case (admiss test calls no provider)")
        return Completion(self.replies[model], None)

    async def aclose(self) -> None:
        return None


class _ReplayRuntime(Runtime):
    """A run whose model gates get the case's recorded replies instead of calling providers."""

    def __init__(self, rubric, replies: dict[str, str]):
        super().__init__(rubric, offline=False)
        self.replies = replies

    def gate_context(self):
        if self._context is None:
            self._context = attrs.evolve(super().gate_context(), providers=_Replies(self.replies))
        return self._context

    def require_providers(self, calls: list) -> None:
        """Nothing is called, so no provider is needed: a model without a reply abstains."""


# ---------------------------------------------------------------- checking expectations


def _where(rubric_file: str, line: int, column: int) -> str:
    return f"{rubric_file}:{line}:{column}"


def _exclusion_words(item: dict, exclusion: "Exclusion", rubric_file: str) -> str:
    clause = exclusion.clause
    value = "" if clause["value"] is None else f" {clause['value']}" if clause["keyword"] == "FORBID" else \
        f" {json.dumps(clause['value'], ensure_ascii=False)}"
    return (f"excluded {item['detail']!r} ({exclusion.reason}) by {clause['keyword']}{value} at "
            f"{_where(rubric_file, clause['line'], clause['column'])}")


def _property_evidence(result: "PropertyResult", rubric_file: str) -> tuple[str, ...]:
    admitted = [f"admitted {item['detail']!r} ({item['kind']}, label {item['source_label']!r})"
                for item in result.admitted]
    excluded = [_exclusion_words(item, exclusion, rubric_file) for item, exclusion in result.excluded]
    return tuple(admitted + excluded) or ("no evidence was offered to this property",)


class _Checker:
    """The expectations of one case against its report."""

    def __init__(self, case: Case, report: "CheckReport", rubric_file: str, rubric_ir):
        self.case = case
        self.report = report
        self.file = rubric_file
        self.ir = rubric_ir
        self.results = {r.prop.name: r for r in report.properties}

    def failures(self) -> list[Failure]:
        expect = self.case.expect
        checks: list[Callable[[], list[Failure]]] = [
            self._verdict, self._aggregate, self._missing, self._properties, self._admitted, self._excluded,
            self._not_offered, self._chain, self._gates]
        return [failure for check in checks for failure in check()] if expect else []

    def _property_lines(self) -> tuple[str, ...]:
        return tuple(f"property {r.prop.name}: {r.verdict}" for r in self.report.properties)

    def _verdict(self) -> list[Failure]:
        wanted = self.case.expect.get("verdict")
        if wanted is None or wanted == self.report.verdict:
            return []
        evidence = self._chain_lines() if self.report.chain is not None else self._property_lines()
        return [Failure("expect.verdict", wanted, self.report.verdict, evidence)]

    def _aggregate(self) -> list[Failure]:
        wanted = self.case.expect.get("aggregate")
        if wanted is None or wanted == self.report.aggregate:
            return []
        return [Failure("expect.aggregate", wanted, self.report.aggregate, self._property_lines())]

    def _missing(self) -> list[Failure]:
        wanted = self.case.expect.get("missing_evidence_count")
        if wanted is None or wanted == self.report.missing_evidence_count:
            return []
        return [Failure("expect.missing_evidence_count", str(wanted), str(self.report.missing_evidence_count),
                        self._property_lines())]

    def _deciding_clause(self, result: "PropertyResult") -> str:
        prop = next(p for p in self.ir.properties if p.name == result.prop.name)
        if result.admitted:
            kind = result.admitted[0]["kind"]
            ref = next(r for r in prop.admit if r.value == kind)
            return f"ADMIT {kind} at {_where(self.file, ref.span.line, ref.span.column)}"
        span = prop.default.span if prop.default.span.line > 0 else prop.span
        return f"DEFAULT {prop.default.value} at {_where(self.file, span.line, span.column)}"

    def _properties(self) -> list[Failure]:
        out = []
        for name, wanted in self.case.expect.get("properties", {}).items():
            result = self.results[name]
            if result.verdict != wanted:
                out.append(Failure(f"expect.properties.{name}", wanted, result.verdict,
                                   _property_evidence(result, self.file), self._deciding_clause(result)))
        return out

    def _admitted(self) -> list[Failure]:
        return self._items("admitted", lambda want, result: any(
            _admitted_matches(want, item) for item in result.admitted), "no admitted item matches")

    def _excluded(self) -> list[Failure]:
        return self._items("excluded", lambda want, result: any(
            _exclusion_matches(want, item, exclusion, self.report.evidence) for item, exclusion in result.excluded),
            "no excluded item matches")

    def _items(self, key: str, holds: Callable[[dict, "PropertyResult"], bool], got: str) -> list[Failure]:
        """A failure for each entry of ``expect.KEY`` that no item of its property matches."""
        out = []
        for i, want in enumerate(self.case.expect.get(key, [])):
            result = self.results[want["property"]]
            if not holds(want, result):
                out.append(Failure(f"expect.{key}[{i}]", _described(want), got,
                                   _property_evidence(result, self.file), self._deciding_clause(result)))
        return out

    def _not_offered(self) -> list[Failure]:
        wanted = self.case.expect.get("not_offered", [])
        if not wanted:
            return []
        entries = (self.report.trace or {}).get("not_offered", [])
        out = []
        for i, want in enumerate(wanted):
            if not any(_entry_matches(want, entry) for entry in entries):
                shown = tuple(_not_offered_words(e) for e in entries) or ("every step was offered as evidence",)
                got = "no step matches" if self.report.trace is not None else "the case checks a bundle, not a trace"
                out.append(Failure(f"expect.not_offered[{i}]", _described(want), got, shown))
        return out

    def _chain_lines(self) -> tuple[str, ...]:
        from admiss.report.text import chain_lines

        return tuple(chain_lines(self.report.chain)) if self.report.chain is not None else ("the rubric ran no CHAIN",)

    def _chain(self) -> list[Failure]:
        wanted = self.case.expect.get("chain", {})
        chain = self.report.chain
        served = chain.served if chain is not None else None
        out = []
        if "served" in wanted and wanted["served"] != served:
            out.append(Failure("expect.chain.served", str(wanted["served"]), served or "none (exhausted)",
                               self._chain_lines()))
        if "exhausted" in wanted and bool(wanted["exhausted"]) != (chain is not None and served is None):
            out.append(Failure("expect.chain.exhausted", str(wanted["exhausted"]).lower(),
                               "true" if chain is not None and served is None else f"false (served by {served})",
                               self._chain_lines()))
        return out

    def _gates(self) -> list[Failure]:
        out = []
        for i, want in enumerate(self.case.expect.get("gates", [])):
            found = self._gate_record(want["rung"], want["gate"])
            if found is None:
                out.append(Failure(f"expect.gates[{i}]", _described(want), "no such gate ran on that rung",
                                   self._chain_lines()))
                continue
            record, clause = found
            wrong = [k for k in ("verdict", "effective") if k in want and getattr(record, k) != want[k]]
            if "reason" in want and want["reason"] not in record.reason:
                wrong.append("reason")
            if wrong:
                got = ", ".join(f"{k} {getattr(record, k)!r}" for k in ("verdict", "effective", "reason"))
                out.append(Failure(f"expect.gates[{i}]", _described(want), got, self._chain_lines(), clause))
        return out

    def _gate_record(self, rung_name: str, kind: str):
        """The first record of a ``kind`` gate on rung ``rung_name``, and its GATE line."""
        chain = self.report.chain
        if chain is None:
            return None
        chain_ir = next(c for c in self.ir.chains if c.name == chain.name)
        for rung, rung_ir in zip(chain.rungs, chain_ir.rungs):
            if rung.rung != rung_name:
                continue
            for record, gate in zip(rung.gates, rung_ir.gates):
                if gate.kind == kind:
                    return record, f"GATE {kind} at {_where(self.file, gate.span.line, gate.span.column)}"
        return None


def _described(want: dict) -> str:
    return ", ".join(f"{k} {v!r}" for k, v in want.items())


# The fields an expect.admitted entry may name, and the item field each is compared with.
_ADMITTED_FIELDS = {"kind": "kind", "label": "source_label", "detail": "detail"}


def _admitted_matches(want: dict, item: dict) -> bool:
    return all(item.get(_ADMITTED_FIELDS[k]) == v for k, v in want.items() if k != "property")


def _exclusion_matches(want: dict, item: dict, exclusion: "Exclusion", evidence: Sequence[dict]) -> bool:
    if "reason" in want and want["reason"] != exclusion.reason:
        return False
    if "clause" in want and want["clause"] != exclusion.clause["keyword"]:
        return False
    if "value" in want and want["value"] != exclusion.clause["value"]:
        return False
    if "detail" in want and want["detail"] != item["detail"]:
        return False
    return "index" not in want or any(e is item for e in evidence[want["index"]:want["index"] + 1])


def _entry_matches(want: dict, entry: dict) -> bool:
    for key, value in want.items():
        if key == "step":
            step = entry.get("step", {})
            if not isinstance(value, dict) or any(step.get(k) != v for k, v in value.items()):
                return False
        elif key == "reason":
            if value not in str(entry.get("reason", "")):
                return False
        elif entry.get(key) != value:
            return False
    return True


def _not_offered_words(entry: dict) -> str:
    tool = f" {entry['tool']}" if "tool" in entry else ""
    return f"not offered: {entry.get('type')}{tool} at {entry.get('step')}: {entry.get('reason')}"


# ---------------------------------------------------------------- running


def _run_case(compiled, case: Case, test_file: str, rubric_file: str, coverage: Coverage | None) -> CaseResult:
    started = time.perf_counter()
    runtime = _ReplayRuntime(compiled, case.replies) if case.replies else Runtime(compiled, offline=True)
    try:
        if case.input_kind == "trace":
            report = check_trace(compiled, case.value, case.label, runtime, case.chain)
        else:
            report = check_bundle(compiled, case.value, case.label, runtime, case.chain)
    except AdmissError as error:
        return CaseResult(test_file, case.name, case.line, ERRORED, error=error.render(),
                          time_s=time.perf_counter() - started)
    finally:
        runtime.close()
    if coverage is not None:
        coverage.record_report(report)
        if case.input_kind == "trace":
            coverage.record_mapping(*compiled.mapping.split(case.value, explain=True))
    failures = tuple(_Checker(case, report, rubric_file, compiled.ir).failures())
    return CaseResult(test_file, case.name, case.line, FAILED if failures else PASSED, failures,
                      time_s=time.perf_counter() - started)


def run_file(path: str | Path, coverage: dict[str, Coverage] | None = None) -> FileResult:
    """Run every case of the test file at ``path`` (offline) and return their results; a
    file that cannot be read, or whose rubric does not compile, gives a FileResult whose
    ``error`` says why. With ``coverage`` (a dict by rubric file, shared across calls), each
    case's exercised clauses are added to its rubric's Coverage."""
    try:
        test_file, compiled = load_test_file(path)
    except AdmissError as error:
        return FileResult(str(path), None, error=error)
    rubric_file = str(test_file.rubric_path)
    cov = None
    if coverage is not None:
        key = str(test_file.rubric_path.resolve())
        cov = coverage.setdefault(key, Coverage(compiled.ir, rubric_file))
    results = tuple(_run_case(compiled, case, str(path), rubric_file, cov) for case in test_file.cases)
    return FileResult(str(path), rubric_file, results)


# ---------------------------------------------------------------- admiss test


EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_LCOV = "admiss-coverage.lcov"


@attrs.frozen
class TestOptions:
    fmt: str = "text"  # "text", "json" or "junit"
    coverage: bool = False
    lcov: Path | None = None
    threshold: float | None = None


def run_tests(paths: Sequence[Path], options: TestOptions, out, err) -> int:
    """``admiss test``: run the test files found under ``paths``, write the results to
    ``out`` (bytes) and notes to ``err`` (text); the exit code."""
    import json

    from admiss.coverage import coverage_dict, coverage_text, lcov, total_percent
    from admiss.files import refuse_overwriting_inputs, write_atomically
    from admiss.report.cases import results_dict, results_suites, results_text
    from admiss.report.junit import junit_xml

    files = find_test_files(paths)
    if not files:
        err.write(f"{', '.join(map(str, paths))}: E193 no test files found (named *{TEST_GLOB[1:]})\n"
                  f"  hint: {WRITE_ONE_HINT}\n")
        return EXIT_BAD_INPUT
    measure = options.coverage or options.threshold is not None
    coverage: dict[str, Coverage] | None = {} if measure else None
    results = [run_file(path, coverage) for path in files]
    coverages = sorted((coverage or {}).values(), key=lambda c: c.file)
    if options.fmt == "json":
        data = results_dict(results)
        if measure:
            data["coverage"] = coverage_dict(coverages)
        out.write(json.dumps(data, indent=2, ensure_ascii=False).encode("utf-8", "backslashreplace") + b"\n")
    elif options.fmt == "junit":
        out.write(junit_xml(results_suites(results)))
    else:
        out.write(results_text(results).encode("utf-8", "backslashreplace"))
    if measure:
        text = coverage_text(coverages)
        if options.fmt == "text":
            out.write(b"\n" + text.encode("utf-8"))
        elif options.coverage:
            err.write(text)
    if options.coverage:
        target = options.lcov or Path(DEFAULT_LCOV)
        try:
            refuse_overwriting_inputs([target], [*files, *(Path(c.file) for c in coverages)])
            write_atomically(target, lcov(coverages))
        except AdmissError as error:
            err.write(error.render() + "\n")
            return EXIT_BAD_INPUT
        except OSError as error:
            err.write(f"{target}: E001 cannot write: {error.strerror}\n")
            return EXIT_BAD_INPUT
    code = EXIT_PASS
    if any(r.error is not None or any(c.outcome == ERRORED for c in r.cases) for r in results):
        code = EXIT_BAD_INPUT
    elif any(not r.passed for r in results):
        code = EXIT_FAIL
    if options.threshold is not None and total_percent(coverages) < options.threshold:
        err.write(f"coverage {total_percent(coverages):.1f}% is below --threshold {options.threshold:g}%\n")
        code = max(code, EXIT_FAIL)
    return code


# ---------------------------------------------------------------- one case at a time (the pytest plugin)

# The fnmatch patterns of test file names, for collectors (admiss/integrations/pytest_plugin.py).
TEST_FILES = (TEST_GLOB,)


@attrs.frozen
class LoadedCase:
    """A case of a loaded test file, with what running it alone needs."""

    name: str
    line: int
    case: Case
    compiled: Any
    test_file: str
    rubric_file: str


@attrs.frozen
class CaseOutcome:
    result: CaseResult

    @property
    def passed(self) -> bool:
        return self.result.outcome == PASSED

    @property
    def message(self) -> str:
        """The case's evidence-first report ("" when it passed)."""
        from admiss.report.cases import case_text

        return "" if self.passed else case_text(self.result)


def load_cases(path: str | Path) -> list[LoadedCase]:
    """The cases of the test file at ``path``; AdmissError when it or its rubric is bad."""
    test_file, compiled = load_test_file(path)
    return [LoadedCase(c.name, c.line, c, compiled, str(path), str(test_file.rubric_path)) for c in test_file.cases]


def run_case(loaded: LoadedCase) -> CaseOutcome:
    """Run one case as ``admiss test`` does (offline, a fresh run state)."""
    return CaseOutcome(_run_case(loaded.compiled, loaded.case, loaded.test_file, loaded.rubric_file, None))
