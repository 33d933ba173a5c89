"""JUnit XML: the one writer behind ``admiss check --format junit`` and ``admiss test --format junit``.

The document follows the Apache Ant JUnit schema as published by Windy Road (the
``testsuites`` aggregate that Jenkins, GitLab, GitHub Actions reporters and most CI services
read): every ``testsuite`` carries ``package``, ``id``, ``name``, ``timestamp``,
``hostname``, ``tests``, ``failures``, ``errors``, ``skipped`` and ``time``, and its
``properties``, ``system-out`` and ``system-err`` children, which that schema requires.

Bundles, traces and gate replies are untrusted: XML 1.0 cannot carry every character they
may hold (controls, lone surrogates), so each such character is written as its escape
rather than making the whole document unreadable to the CI service.
"""

from __future__ import annotations

import datetime as _dt
import re
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Iterable

import attrs

from admiss.terminal import one_line

if TYPE_CHECKING:
    from admiss.errors import AdmissError
    from admiss.report.model import ReportData

PASSED, FAILED, ERRORED, SKIPPED = "passed", "failed", "error", "skipped"

# Characters XML 1.0 has no way to write (its Char production), plus the C1 controls and
# the bidirectional overrides that would make a CI page show text in another order.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]")


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def xml_safe(text: str) -> str:
    """``text`` with each character XML 1.0 cannot hold written as its Python escape."""
    return text if _NOT_XML.search(text) is None else _NOT_XML.sub(_escaped, text)


@attrs.frozen
class Case:
    """One ``testcase``: ``outcome`` is PASSED, FAILED, ERRORED or SKIPPED; ``message`` is
    the one-line reason, ``text`` the report that explains it."""

    name: str
    classname: str
    outcome: str = PASSED
    message: str = ""
    text: str = ""
    # The failure's or error's type attribute (a stable code where there is one).
    kind: str = ""
    time_s: float = 0.0


@attrs.frozen
class Suite:
    name: str
    cases: tuple[Case, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    time_s: float = 0.0


def _count(cases: Iterable[Case], outcome: str) -> int:
    return sum(1 for case in cases if case.outcome == outcome)


def _token(text: str, fallback: str) -> str:
    # The schema's names are xs:token of at least one character: one line, never empty.
    text = xml_safe(one_line(text)).strip()
    return text or fallback


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def _case_element(parent: ET.Element, case: Case) -> None:
    element = ET.SubElement(parent, "testcase", name=_token(case.name, "unnamed"),
                            classname=_token(case.classname, "admiss"), time=_seconds(case.time_s))
    if case.outcome == PASSED:
        return
    tag = {FAILED: "failure", ERRORED: "error", SKIPPED: "skipped"}[case.outcome]
    child = ET.SubElement(element, tag, message=xml_safe(one_line(case.message)))
    if case.outcome != SKIPPED:
        child.set("type", _token(case.kind, tag))
    child.text = xml_safe(case.text)


def _suite_element(parent: ET.Element, suite: Suite, index: int, timestamp: str, hostname: str) -> None:
    cases = suite.cases
    element = ET.SubElement(parent, "testsuite", package=_token(suite.name, "admiss"), id=str(index),
                            name=_token(suite.name, "admiss"), timestamp=timestamp, hostname=hostname,
                            tests=str(len(cases)), failures=str(_count(cases, FAILED)),
                            errors=str(_count(cases, ERRORED)), skipped=str(_count(cases, SKIPPED)),
                            time=_seconds(suite.time_s or sum(c.time_s for c in cases)))
    properties = ET.SubElement(element, "properties")
    for name, value in suite.properties:
        ET.SubElement(properties, "property", name=_token(name, "property"), value=xml_safe(one_line(value)))
    for case in cases:
        _case_element(element, case)
    ET.SubElement(element, "system-out")
    ET.SubElement(element, "system-err")


def junit_xml(suites: Iterable[Suite], when: _dt.datetime | None = None, hostname: str = "localhost") -> bytes:
    """The JUnit XML document of ``suites``, as UTF-8 bytes ending in a newline."""
    # The schema's timestamp is local-looking ISO 8601 without a zone; admiss writes UTC.
    moment = (when or _dt.datetime.now(_dt.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%S")
    root = ET.Element("testsuites")
    for index, suite in enumerate(suites):
        _suite_element(root, suite, index, moment, hostname)
    ET.indent(root, space="  ")
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


# ---------------------------------------------------------------- admiss check


def report_suite(report: "ReportData") -> Suite:
    """One bundle's suite: a case per property (failed when its verdict is no, carrying the
    property's report), and one for the chain when the rubric has one."""
    from admiss.report.text import chain_lines, property_block

    classname = f"{report.rubric.name}.{report.bundle_name or '<bundle>'}"
    cases = [Case(result.prop.name, classname, PASSED if result.verdict == "yes" else FAILED,
                  result.rationale, property_block(result), "verdict-no") for result in report.properties]
    if report.chain is not None:
        served = report.chain.served
        cases.append(Case(f"chain {report.chain.name}", classname, PASSED if served is not None else FAILED,
                          f"served by rung {served}" if served is not None else "exhausted: no rung served",
                          "\n".join(chain_lines(report.chain)), "exhausted"))
    properties = [("rubric", report.rubric.name), ("verdict", report.verdict), ("aggregate", report.aggregate)]
    if report.chain is not None and report.chain.offline:
        properties.append(("offline", "true"))
    return Suite(report.bundle_name or "<bundle>", tuple(cases), tuple(properties))


def error_suite(name: str, error: "AdmissError") -> Suite:
    """The suite of an input that could not be checked: one errored case with the diagnostics."""
    code = error.diagnostics[0].code if error.diagnostics else "error"
    first = error.diagnostics[0].message if error.diagnostics else "cannot be checked"
    return Suite(name, (Case("check", name, ERRORED, first, error.render(), code),))
